import { expect, test } from '@jupyterlab/galata';
import type { APIRequestContext } from '@playwright/test';
import { uiTestEnvironment } from '../support/environment';
import {
  consoleErrors,
  readContents,
  recordConsole,
  screenshot,
  topDialog,
  writeObject
} from '../support/helpers';
import { cellSources } from '../support/notebooks';

/** How many archived versions the store lists for `path`, once at least `atLeast` are there. */
async function archivedVersions(
  request: APIRequestContext,
  path: string,
  atLeast: number
): Promise<number> {
  let count = -1;
  await expect
    .poll(
      async () => {
        const response = await request.get(
          `${uiTestEnvironment().gatewayUrl}api/store/versions/${path}?limit=1000`
        );
        count = (await response.json()).workspace.versions.length;
        return count;
      },
      { timeout: 30_000 }
    )
    .toBeGreaterThanOrEqual(atLeast);
  return count;
}

test.describe('Archived versions', () => {
  test('Save twice and the panel shows both; restore the older one and the content matches', async ({
    page,
    request,
    tmpPath
  }) => {
    const console = recordConsole(page);
    const path = `${tmpPath}/history.ipynb`;
    await page.notebook.createNew('history.ipynb');
    await page.notebook.setCell(0, 'code', 'value = "first"');
    await page.notebook.save();
    const afterFirst = await archivedVersions(request, path, 1);

    await page.menu.clickMenuItem('File>Show Archived Versions');
    const panel = page.locator('#jp-store-versions');
    await expect(panel).toBeVisible();
    await expect(panel.locator('.jp-store-VersionsPanel-path')).toHaveText(path);
    const archived = panel.locator('section[data-kind="workspace"] .jp-store-Version');
    await expect(archived).toHaveCount(afterFirst);

    // The panel follows the second save by itself.
    await page.notebook.activate('history.ipynb');
    await page.notebook.setCell(0, 'code', 'value = "second"');
    await page.notebook.save();
    await expect(archived).toHaveCount(afterFirst + 1);
    await expect(archived.first().locator('.jp-store-Version-badge')).toHaveText('latest');
    await expect(archived.first().locator('.jp-store-Version-size')).toHaveText(
      /\d+(\.\d)? (B|KB)/
    );
    await expect(panel.locator('section[data-kind="published"]')).toContainText('Not published.');
    await screenshot(panel, 'versions-panel');

    // Restore the older one (the first save): its content comes back, as a new version.
    await archived.nth(1).getByRole('button', { name: 'Restore', exact: true }).click();
    const confirm = topDialog(page);
    await expect(confirm.locator('.jp-Dialog-header')).toHaveText('Restore this version?');
    await confirm.getByRole('button', { name: 'Restore' }).click();
    await expect(archived).toHaveCount(afterFirst + 2);
    expect(await page.notebook.getCellTextInput(0)).toBe('value = "first"');
    const onDisk = await readContents(request, path);
    expect(cellSources(onDisk.content)).toEqual(['value = "first"']);
    // The restore wrote nothing but the notebook: no other file beside it.
    const folder = (await readContents(request, tmpPath)) as unknown as {
      content: { name: string }[];
    };
    expect(folder.content.map(entry => entry.name)).toEqual(['history.ipynb']);
    expect(consoleErrors(console)).toEqual([]);
  });

  test('Open clones a version into a new file beside the notebook', async ({
    page,
    request,
    tmpPath
  }) => {
    const console = recordConsole(page);
    await page.notebook.createNew('beside.ipynb');
    await page.notebook.setCell(0, 'code', 'answer = 42');
    await page.notebook.save();
    await archivedVersions(request, `${tmpPath}/beside.ipynb`, 1);
    await page.menu.clickMenuItem('File>Show Archived Versions');
    const newest = page
      .locator('#jp-store-versions section[data-kind="workspace"] .jp-store-Version')
      .first();
    // Keyboard: focus the button and press Enter.
    const open = newest.getByRole('button', { name: 'Open', exact: true });
    await open.focus();
    await expect(open).toBeFocused();
    await page.keyboard.press('Enter');
    const tab = page.getByRole('tab', { name: /^beside-\d{4}-\d{2}-\d{2}-\d{6}\.ipynb$/ });
    await expect(tab).toBeVisible();
    const name = (await tab.innerText()).trim();
    const copy = await readContents(request, `${tmpPath}/${name}`);
    expect(cellSources(copy.content)).toEqual(['answer = 42']);
    expect(consoleErrors(console)).toEqual([]);
  });

  test('A long history: the panel shows the newest 100, Show more versions adds the older ones', async ({
    page,
    request,
    tmpPath
  }) => {
    const console = recordConsole(page);
    const path = `${tmpPath}/long-history.ipynb`;
    await page.notebook.createNew('long-history.ipynb');
    await page.notebook.setCell(0, 'code', 'value = "newest"');
    await page.notebook.save();
    await archivedVersions(request, path, 1);
    // Older saves, written straight into the bucket: the listing's order is the store's.
    for (let index = 0; index < 104; index++) {
      await writeObject(
        `workspace/${path}`,
        JSON.stringify({ cells: [], metadata: {}, nbformat: 4, nbformat_minor: 5, index })
      );
    }
    const total = await archivedVersions(request, path, 105);

    await page.menu.clickMenuItem('File>Show Archived Versions');
    const panel = page.locator('#jp-store-versions');
    await expect(panel.locator('.jp-store-VersionsPanel-path')).toHaveText(path);
    const archived = panel.locator('section[data-kind="workspace"] .jp-store-Version');
    await expect(archived).toHaveCount(100);
    await expect(archived.first().locator('.jp-store-Version-badge')).toHaveText('latest');
    await expect(panel.locator('section[data-kind="published"]')).toContainText('Not published.');
    const more = panel.getByRole('button', { name: 'Show more versions' });
    await expect(more).toBeVisible();
    const firstPage = await archived.evaluateAll(items =>
      items.map(item => (item as HTMLElement).dataset.versionId)
    );

    await more.click();
    await expect(archived).toHaveCount(total);
    await expect(more).toHaveCount(0);
    const all = await archived.evaluateAll(items =>
      items.map(item => (item as HTMLElement).dataset.versionId)
    );
    // The first page first, unchanged, then the older versions, each once.
    expect(all.slice(0, 100)).toEqual(firstPage);
    expect(new Set(all).size).toBe(total);
    expect(consoleErrors(console)).toEqual([]);
  });
});
