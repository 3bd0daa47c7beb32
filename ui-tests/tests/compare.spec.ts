import { expect, test, type IJupyterLabPageFixture } from '@jupyterlab/galata';
import type { APIRequestContext, Locator, Page } from '@playwright/test';
import {
  archivedVersionIds,
  consoleErrors,
  readContents,
  recordConsole,
  screenshot,
  topDialog,
  writeContents
} from '../support/helpers';

/** A code cell with a fixed id (so that both saves align it) and, optionally, a stream output. */
function codeCell(id: string, source: string, output?: string): object {
  return {
    cell_type: 'code',
    execution_count: output === undefined ? null : 1,
    id,
    metadata: {},
    outputs:
      output === undefined ? [] : [{ output_type: 'stream', name: 'stdout', text: `${output}\n` }],
    source
  };
}

/** A notebook of these cells. */
function notebookOf(cells: object[]): object {
  return {
    cells,
    metadata: {
      kernelspec: { display_name: 'Python 3 (ipykernel)', language: 'python', name: 'python3' },
      language_info: { name: 'python' }
    },
    nbformat: 4,
    nbformat_minor: 5
  };
}

/**
 * Save `name` (in the test's folder) twice through the contents API, as Lab saves: first with
 * `value = "first"`, then with `value = "second"` in the middle cell. The cells around it stay as
 * they are; each has an output. Opens the notebook and the versions panel.
 *
 * @returns the versions panel and the archived version ids, newest first.
 */
async function notebookSavedTwice(
  page: IJupyterLabPageFixture,
  request: APIRequestContext,
  tmpPath: string,
  name: string
): Promise<{ panel: Locator; ids: string[] }> {
  const path = `${tmpPath}/${name}`;
  const save = (middle: string, output: string) =>
    writeContents(request, path, {
      type: 'notebook',
      format: 'json',
      content: notebookOf([
        codeCell('before', 'import math', 'imported'),
        codeCell('middle', middle, output),
        codeCell('after', 'print(math.pi)', '3.141592653589793')
      ])
    });
  await save('value = "first"', 'first output');
  await archivedVersionIds(request, path, 1);
  await save('value = "second"', 'second output');
  const ids = await archivedVersionIds(request, path, 2);
  await page.filebrowser.refresh();
  await page.notebook.open(name);
  await page.notebook.activate(name);
  await page.menu.clickMenuItem('File>Show Archived Versions');
  const panel = page.locator('#jp-store-versions');
  await expect(panel.locator('.jp-store-VersionsPanel-path')).toHaveText(path);
  await expect(panel.locator('section[data-kind="workspace"] .jp-store-Version')).toHaveCount(
    ids.length
  );
  return { panel, ids };
}

/** The tab that shows a diff or a preview, once it is rendered. */
function renderedView(page: Page): Locator {
  return page.locator('.jp-MainAreaWidget.jp-store-DiffTab:visible .jp-store-mod-rendered');
}

test.describe('Compare versions', () => {
  test('Compare with previous shows the changed cell; the switches hide outputs and unchanged cells', async ({
    page,
    request,
    tmpPath
  }) => {
    const console = recordConsole(page);
    const { panel } = await notebookSavedTwice(page, request, tmpPath, 'changed.ipynb');
    const newest = panel.locator('section[data-kind="workspace"] .jp-store-Version').first();
    await newest.getByRole('button', { name: 'Compare with previous' }).click();

    await expect(
      page.getByRole('tab', { name: /^changed\.ipynb: version of .+ ↔ version of / })
    ).toBeVisible();
    const view = renderedView(page);
    await expect(view).toBeVisible();
    await expect(view.locator('.jp-store-DiffView-status')).toHaveText(
      '1 cell changed, 0 added, 0 removed'
    );
    // The changed cell shows both sources side by side, its removed and added text marked.
    const changed = view.locator('.jp-Notebook-diff > .jp-Cell-diff.jp-Diff-twoway');
    await expect(changed).toHaveCount(1);
    const source = changed.locator('.jp-Cellrow-source');
    await expect(source.locator('.cm-diff-left-editor')).toContainText('value = "first"');
    await expect(source.locator('.cm-diff-right-editor')).toContainText('value = "second"');
    await expect(source.locator('.cm-merge-r-inserted').first()).toBeVisible();
    const unchanged = view.locator('.jp-Notebook-diff > .jp-Cell-diff.jp-Diff-unchanged');
    await expect(unchanged).toHaveCount(2);
    await expect(unchanged.first()).toBeVisible();
    const outputs = changed.locator('.jp-Cellrow-outputs');
    await expect(outputs).toBeVisible();
    await expect(outputs).toContainText('second output');
    await screenshot(page.locator('.jp-MainAreaWidget.jp-store-DiffTab:visible'), 'diff-tab');

    const toolbar = page.locator('.jp-MainAreaWidget.jp-store-DiffTab:visible .jp-Toolbar');
    const hideOutputs = toolbar.getByRole('button', { name: 'Hide outputs' });
    await expect(hideOutputs).toHaveAttribute('aria-pressed', 'false');
    await hideOutputs.click();
    await expect(hideOutputs).toHaveAttribute('aria-pressed', 'true');
    await expect(outputs).toBeHidden();
    await expect(source).toBeVisible();

    const hideUnchanged = toolbar.getByRole('button', { name: 'Hide unchanged cells' });
    await hideUnchanged.click();
    await expect(unchanged.first()).toBeHidden();
    await expect(unchanged.last()).toBeHidden();
    await expect(changed).toBeVisible();
    // Where cells are hidden, a line counts them.
    await expect(changed).toHaveAttribute('data-store-hidden-before', '1 unchanged cell hidden');
    await expect(changed).toHaveAttribute('data-store-hidden-after', '1 unchanged cell hidden');

    // Switched back, everything is there again.
    await hideOutputs.click();
    await hideUnchanged.click();
    await expect(outputs).toBeVisible();
    await expect(unchanged.first()).toBeVisible();
    expect(consoleErrors(console)).toEqual([]);
  });

  test('Compare two… diffs the two versions picked in the dialog, from the keyboard alone', async ({
    page,
    request,
    tmpPath
  }) => {
    const console = recordConsole(page);
    const { panel, ids } = await notebookSavedTwice(page, request, tmpPath, 'two.ipynb');
    const [newer, older] = ids;

    const compareTwo = panel.getByRole('button', { name: 'Compare two…' });
    await compareTwo.focus();
    await page.keyboard.press('Enter');
    const dialog = topDialog(page);
    await expect(dialog.locator('.jp-Dialog-header')).toHaveText(
      `Compare two versions of ${tmpPath}/two.ipynb`
    );
    const [base, remote] = [dialog.locator('select').nth(0), dialog.locator('select').nth(1)];
    // By default the two newest versions, the older as the base.
    await expect(base).toHaveValue(older);
    await expect(remote).toHaveValue(newer);
    await expect(base).toBeFocused();
    await screenshot(dialog.locator('.jp-Dialog-content'), 'compare-two-dialog');
    // The other way round: the newer as the base. Keys only: the first list is focused.
    await page.keyboard.press('ArrowUp');
    await expect(base).toHaveValue(newer);
    await page.keyboard.press('Tab');
    await expect(remote).toBeFocused();
    await page.keyboard.press('ArrowDown');
    await expect(remote).toHaveValue(older);
    await page.keyboard.press('Enter');

    const view = renderedView(page);
    await expect(view).toBeVisible();
    const changed = view.locator('.jp-Notebook-diff > .jp-Cell-diff.jp-Diff-twoway');
    // Newer to older: "second" became "first".
    await expect(changed.locator('.cm-merge-r-inserted').first()).toBeVisible();
    await expect(changed.locator('.cm-diff-right-editor')).toContainText('value = "first"');
    // The new tab has the focus; its toolbar is one Tab stop away, its switches are buttons
    // that the arrow keys move between (as in any JupyterLab toolbar).
    await expect(page.locator('.jp-store-DiffView:visible')).toBeFocused();
    const tab = page.locator('.jp-MainAreaWidget.jp-store-DiffTab:visible');
    await page.keyboard.press('Shift+Tab');
    await expect(tab.getByRole('button', { name: 'Hide outputs' })).toBeFocused();
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    const hideUnchanged = tab.getByRole('button', { name: 'Hide unchanged cells' });
    await expect(hideUnchanged).toBeFocused();
    await page.keyboard.press('Space');
    await expect(hideUnchanged).toHaveAttribute('aria-pressed', 'true');
    await expect(view.locator('.jp-Notebook-diff > .jp-Diff-unchanged').first()).toBeHidden();
    await page.keyboard.press('ArrowLeft');
    const hideMetadata = tab.getByRole('button', { name: 'Hide metadata' });
    await expect(hideMetadata).toBeFocused();
    await page.keyboard.press('Enter');
    await expect(hideMetadata).toHaveAttribute('aria-pressed', 'true');
    expect(consoleErrors(console)).toEqual([]);
  });

  test('Unsaved edits compared with the saved version show as added, from the palette', async ({
    page,
    request,
    tmpPath
  }) => {
    const console = recordConsole(page);
    const path = `${tmpPath}/draft.ipynb`;
    await page.notebook.createNew('draft.ipynb');
    await page.notebook.setCell(0, 'code', 'saved = 1');
    await page.notebook.save();
    await archivedVersionIds(request, path, 1);
    await page.notebook.setCell(0, 'code', 'saved = 1\nnot_saved_yet = 2');
    // Not saved: the edit exists only in the browser.

    await page.keyboard.press('Control+Shift+C');
    const palette = page.locator('#command-palette');
    await palette.locator('input').fill('Compare Unsaved Changes');
    await expect(palette.locator('.lm-CommandPalette-item')).toHaveCount(1);
    await page.keyboard.press('Enter');
    const dialog = topDialog(page);
    await expect(dialog.locator('.jp-Dialog-header')).toHaveText(
      `Compare unsaved changes of ${path}`
    );
    await page.keyboard.press('Enter');

    await expect(
      page.getByRole('tab', { name: /^draft\.ipynb: version of .+ ↔ unsaved changes$/ })
    ).toBeVisible();
    const view = renderedView(page);
    await expect(view).toBeVisible();
    const changed = view.locator('.jp-Notebook-diff > .jp-Cell-diff.jp-Diff-twoway');
    await expect(changed.locator('.cm-merge-r-inserted').first()).toContainText('not_saved_yet');
    // The file on disk was not touched by the comparison.
    const onDisk = (await readContents(request, path)) as {
      content: { cells: { source: string }[] };
    };
    expect(onDisk.content.cells[0].source).toBe('saved = 1');
    expect(consoleErrors(console)).toEqual([]);
  });

  test('Preview shows a version read-only, and creates no file', async ({
    page,
    request,
    tmpPath
  }) => {
    const console = recordConsole(page);
    const { panel } = await notebookSavedTwice(page, request, tmpPath, 'looked-at.ipynb');
    const older = panel.locator('section[data-kind="workspace"] .jp-store-Version').nth(1);
    await older.getByRole('button', { name: 'Preview' }).click();

    await expect(
      page.getByRole('tab', { name: /^looked-at\.ipynb \(version of .+, read-only\)$/ })
    ).toBeVisible();
    const view = renderedView(page);
    await expect(view).toBeVisible();
    await expect(view.locator('.jp-store-DiffView-status')).toHaveText('3 cells, read-only');
    const cells = view.locator('.jp-Notebook-diff > .jp-Cell-diff');
    await expect(cells).toHaveCount(3);
    await expect(cells.nth(1)).toContainText('value = "first"');
    // Outputs show, as in a notebook.
    await expect(cells.nth(1).locator('.jp-Cellrow-outputs')).toBeVisible();
    await expect(cells.nth(1).locator('.jp-Cellrow-outputs')).toContainText('first output');
    await screenshot(
      page.locator('.jp-MainAreaWidget.jp-store-DiffTab:visible'),
      'version-preview'
    );

    // Typing into a cell changes nothing.
    const editor = cells.nth(1).locator('.cm-content');
    await editor.click();
    await page.keyboard.type('typed');
    await expect(cells.nth(1)).not.toContainText('typed');
    // No file was created: the folder holds the notebook only.
    const folder = (await readContents(request, tmpPath)) as unknown as {
      content: { name: string }[];
    };
    expect(folder.content.map(entry => entry.name)).toEqual(['looked-at.ipynb']);
    await expect(page.locator('.jp-DirListing-item')).toHaveCount(1);
    expect(consoleErrors(console)).toEqual([]);
  });
});
