import { expect, test } from '@jupyterlab/galata';
import {
  archivedVersionIds,
  consoleErrors,
  readObject,
  recordConsole,
  screenshot,
  topDialog
} from '../support/helpers';
import { cellSources } from '../support/notebooks';

test.describe('Named versions', () => {
  test('File › Save Version… saves the edit and the panel shows its name and note', async ({
    page,
    request,
    tmpPath
  }) => {
    const console = recordConsole(page);
    const path = `${tmpPath}/named.ipynb`;
    await page.notebook.createNew('named.ipynb');
    await page.notebook.setCell(0, 'code', 'value = "first"');
    await page.notebook.save();
    const before = await archivedVersionIds(request, path, 1);

    await page.menu.clickMenuItem('File>Show Archived Versions');
    const panel = page.locator('#jp-store-versions');
    await expect(panel).toBeVisible();
    await page.notebook.activate('named.ipynb');
    // An edit not saved yet: Save Version… saves it, and names what it saved.
    await page.notebook.setCell(0, 'code', 'value = "reviewed"');
    await page.menu.clickMenuItem('File>Save Version…');
    const dialog = topDialog(page);
    await expect(dialog.locator('.jp-Dialog-header')).toHaveText('Save Version');
    const accept = dialog.getByRole('button', { name: 'Save Version' });
    // No name, no version.
    await expect(accept).toBeDisabled();
    await dialog.locator('input[name="name"]').fill('Sent to reviewers');
    await dialog.locator('textarea[name="note"]').fill('Draft 2, for the Tuesday meeting');
    await expect(accept).toBeEnabled();
    await accept.click();

    const archived = panel.locator('section[data-kind="workspace"] .jp-store-Version');
    const newest = archived.first();
    await expect(newest.locator('.jp-store-VersionLabel-name')).toHaveText('Sent to reviewers');
    await expect(newest.locator('.jp-store-VersionLabel-note')).toHaveText(
      'Draft 2, for the Tuesday meeting'
    );
    await expect(newest.locator('.jp-store-Version-badge')).toHaveText('latest');
    // The version named is the save of the edit, and the older one has no name.
    const after = await archivedVersionIds(request, path, before.length + 1);
    await expect(newest).toHaveAttribute('data-version-id', after[0]);
    expect(cellSources(JSON.parse(await readObject(`workspace/${path}`, after[0])))).toEqual([
      'value = "reviewed"'
    ]);
    await expect(archived.nth(1).locator('.jp-store-VersionLabel')).toHaveCount(0);
    // The named copy, apart from the archive, holds the same bytes.
    expect(await readObject(`named/workspace/${path}/${after[0]}`)).toBe(
      await readObject(`workspace/${path}`, after[0])
    );

    // Name the older version from its row.
    await archived.nth(1).getByRole('button', { name: 'Name…' }).click();
    const rename = topDialog(page);
    await rename.locator('input[name="name"]').fill('First draft');
    await rename.getByRole('button', { name: 'Name', exact: true }).click();
    await expect(archived.nth(1).locator('.jp-store-VersionLabel-name')).toHaveText('First draft');
    await expect(archived.nth(1).locator('.jp-store-VersionLabel-note')).toHaveCount(0);
    await screenshot(panel, 'save-version');
    expect(consoleErrors(console)).toEqual([]);
  });
});
