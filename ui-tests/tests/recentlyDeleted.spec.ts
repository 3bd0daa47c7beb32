import { expect, test } from '@jupyterlab/galata';
import {
  archivedVersionIds,
  consoleErrors,
  readContents,
  readObject,
  recordConsole,
  screenshot,
  topDialog,
  writeContents
} from '../support/helpers';
import { cellSources, notebook } from '../support/notebooks';

test.describe('Recently deleted', () => {
  test('Delete a notebook in the file browser: the panel lists it, and Restore brings it back', async ({
    page,
    request,
    tmpPath
  }) => {
    const console = recordConsole(page);
    const path = `${tmpPath}/doomed.ipynb`;
    await writeContents(request, path, {
      type: 'notebook',
      format: 'json',
      content: notebook(['result = 6 * 7', 'print(result)'])
    });
    const [lastVersion] = await archivedVersionIds(request, path, 1);

    // The panel shows with a notebook open.
    await page.notebook.createNew('keeper.ipynb');
    await page.menu.clickMenuItem('File>Show Archived Versions');
    const panel = page.locator('#jp-store-versions');
    const section = panel.locator('.jp-store-RecentlyDeleted');
    await expect(section.locator('h3')).toHaveText('Recently deleted');
    const entry = section.locator(`li[data-path="${path}"]`);
    await expect(entry).toHaveCount(0);

    // Right-click › Delete in the file browser ("Move to Trash" where the server keeps a
    // trash, as this one does), confirmed.
    await page.filebrowser.refresh();
    await page.locator('.jp-DirListing-item[title*="doomed.ipynb"]').click({ button: 'right' });
    const remove = /^(Delete|Move to Trash)\b/;
    await page.getByRole('menuitem', { name: remove }).click();
    const confirm = topDialog(page);
    await expect(confirm.locator('.jp-Dialog-header')).toHaveText(/Delete|Trash/);
    await confirm.getByRole('button', { name: remove }).click();
    await expect(page.locator('.jp-DirListing-item[title*="doomed.ipynb"]')).toHaveCount(0);

    // The section lists it by itself once the delete is archived.
    await expect(entry).toHaveCount(1, { timeout: 30_000 });
    await expect(entry.locator('.jp-store-RecentlyDeleted-path')).toHaveText(path);
    await expect(entry.locator('time')).toHaveText(/^deleted /);
    // What the workspace holds, as the server measured it: measured again once the archive
    // wrote the delete, which the section asks for as soon as it lists the deleted notebook.
    const usage = section.locator('.jp-store-Usage');
    await expect(usage).toHaveText(
      /^Workspace: [1-9][\d,]* versions? of [1-9][\d,]* notebooks?, [\d.]+ (B|KB|MB)$/,
      { timeout: 10_000 }
    );
    await screenshot(section, 'recently-deleted');
    const versionsShown = async () =>
      Number(/^Workspace: ([\d,]+)/.exec((await usage.textContent()) ?? '')?.[1].replace(/,/g, ''));
    const versionsBefore = await versionsShown();

    await entry.getByRole('button', { name: 'Restore' }).click();
    // Restored in place, opened, and back in the file browser with the same content.
    await expect(page.getByRole('tab', { name: 'doomed.ipynb' })).toBeVisible();
    await expect(section.locator('.jp-store-RecentlyDeleted-message')).toHaveText(
      `Restored ${path}.`
    );
    await expect(entry).toHaveCount(0);
    await expect(page.locator('.jp-DirListing-item[title*="doomed.ipynb"]')).toBeVisible();
    const restored = await readContents(request, path);
    const original = JSON.parse(await readObject(`workspace/${path}`, lastVersion));
    expect(cellSources(restored.content)).toEqual(cellSources(original));
    expect(cellSources(restored.content)).toEqual(['result = 6 * 7', 'print(result)']);
    // The restore is archived as a new version, which the usage counts as soon as it is.
    await expect.poll(versionsShown, { timeout: 10_000 }).toBeGreaterThan(versionsBefore);
    expect(consoleErrors(console)).toEqual([]);
  });
});
