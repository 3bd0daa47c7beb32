import { expect, test } from '@jupyterlab/galata';
import {
  consoleErrors,
  objectVersions,
  readContents,
  readObject,
  recordConsole,
  screenshot,
  topDialog
} from '../support/helpers';
import { cellSources } from '../support/notebooks';

/**
 * The versions of the notebook's own object, newest first, once there are at least `atLeast`:
 * its checkpoints (the versions listing also shows the history of the names it had before).
 */
async function keyVersions(key: string, atLeast: number): Promise<string[]> {
  let ids: string[] = [];
  await expect
    .poll(
      async () => {
        ids = await objectVersions(key);
        return ids.length;
      },
      { timeout: 30_000 }
    )
    .toBeGreaterThanOrEqual(atLeast);
  return ids;
}

test.describe('Archived versions as checkpoints', () => {
  test('Revert to Checkpoint offers the archived versions; an older one comes back as a new version', async ({
    page,
    request,
    tmpPath
  }) => {
    const console = recordConsole(page);
    const path = `${tmpPath}/revert.ipynb`;
    const key = `workspace/${path}`;
    await page.notebook.createNew('revert.ipynb');
    let ids: string[] = [];
    for (const value of ['one', 'two', 'three']) {
      await page.notebook.setCell(0, 'code', `value = "${value}"`);
      await page.notebook.save();
      // Each save archived before the next, so that each is a version of its own.
      ids = await keyVersions(key, ids.length + 1);
    }
    // The newest version that holds the first edit: the one to go back to.
    const sources = await Promise.all(
      ids.map(async id => cellSources(JSON.parse(await readObject(key, id))))
    );
    const target = sources.findIndex(cells => cells[0] === 'value = "one"');
    expect(target).toBeGreaterThan(0);

    await page.menu.clickMenuItem('File>Revert Notebook to Checkpoint…');
    const choose = topDialog(page);
    await expect(choose.locator('.jp-Dialog-header')).toHaveText('Choose a checkpoint');
    // One entry a version, the newest first.
    const options = choose.locator('select option');
    await expect(options).toHaveCount(ids.length);
    await choose.locator('select').selectOption({ index: target });
    await screenshot(choose.locator('.jp-Dialog-content'), 'revert-to-checkpoint');
    await choose.getByRole('button', { name: 'OK' }).click();

    const confirm = topDialog(page);
    await expect(confirm.locator('.jp-Dialog-header')).toHaveText(/Revert notebook to checkpoint/i);
    await confirm.getByRole('button', { name: 'Revert' }).last().click();

    await expect.poll(() => page.notebook.getCellTextInput(0)).toBe('value = "one"');
    const onDisk = await readContents(request, path);
    expect(cellSources(onDisk.content)).toEqual(['value = "one"']);
    // The revert is archived as a new version, with the older version's content.
    const after = await keyVersions(key, ids.length + 1);
    expect(after.slice(1)).toEqual(ids);
    const newest = JSON.parse(await readObject(key, after[0]));
    expect(cellSources(newest)).toEqual(['value = "one"']);
    expect(consoleErrors(console)).toEqual([]);
  });
});
