import { expect, test } from '@jupyterlab/galata';
import type { APIRequestContext } from '@playwright/test';
import { uiTestEnvironment } from '../support/environment';
import {
  consoleErrors,
  readContents,
  recordConsole,
  screenshot,
  topDialog
} from '../support/helpers';
import { cellSources, notebook } from '../support/notebooks';

/** Publish a notebook through the store API; returns the new version id. */
async function publish(
  request: APIRequestContext,
  path: string,
  sources: string[]
): Promise<string> {
  const response = await request.put(`${uiTestEnvironment().gatewayUrl}api/store/publish/${path}`, {
    data: { type: 'notebook', format: 'json', content: notebook(sources) }
  });
  expect(response.status()).toBe(200);
  return (await response.json()).object_version_id;
}

test.describe('Clone dialogs', () => {
  test('Clone from object storage: pick an older version; the file appears and opens', async ({
    page,
    request,
    tmpPath
  }) => {
    const console = recordConsole(page);
    const source = `${tmpPath}-library/analysis.ipynb`;
    const first = await publish(request, source, ['print("first edition")']);
    await publish(request, source, ['print("second edition")']);

    await page
      .locator('.jp-FileBrowser-toolbar [data-command="jupyter-store:clone-from-object-storage"]')
      .click();
    const dialog = topDialog(page);
    await expect(dialog.locator('.jp-Dialog-header')).toHaveText('Clone from object storage');
    await expect(dialog.locator('input[name="bucket"]')).toHaveValue('notebooks');
    await expect(dialog.locator('input[name="target"]')).toHaveValue(tmpPath);
    await dialog.locator('input[name="key"]').fill(`published/${source}`);
    // The key is one of ours: the version picker lists its two published versions.
    const picker = dialog.locator('select[name="version-choice"]');
    await expect(picker).toBeVisible();
    await expect(picker.locator('option')).toHaveCount(3);
    await picker.selectOption(first);
    await screenshot(dialog.locator('.jp-Dialog-content'), 'clone-object-dialog');
    await dialog.getByRole('button', { name: 'Clone' }).click();

    await expect(page.locator('.jp-DirListing-item[title*="analysis.ipynb"]')).toBeVisible();
    await expect(page.getByRole('tab', { name: 'analysis.ipynb' })).toBeVisible();
    const cloned = await readContents(request, `${tmpPath}/analysis.ipynb`);
    expect(cellSources(cloned.content)).toEqual(['print("first edition")']);
    expect(consoleErrors(console)).toEqual([]);
  });

  test('Clone from file system from the context menu; a name clash gets a new name', async ({
    page,
    request,
    tmpPath
  }) => {
    const console = recordConsole(page);
    for (const expected of ['template.ipynb', 'template-1.ipynb']) {
      await page
        .locator('.jp-DirListing-content')
        .click({ button: 'right', position: { x: 40, y: 200 } });
      await page.getByRole('menuitem', { name: 'Clone from file system…' }).click();
      const dialog = topDialog(page);
      await expect(dialog.locator('.jp-Dialog-header')).toHaveText('Clone from file system');
      await expect(dialog.locator('input[name="target"]')).toHaveValue(tmpPath);
      await dialog.locator('input[name="relpath"]').fill('shared/template.ipynb');
      if (expected === 'template.ipynb') {
        await screenshot(dialog.locator('.jp-Dialog-content'), 'clone-file-system-dialog');
      }
      await dialog.getByRole('button', { name: 'Clone' }).click();
      await expect(page.getByRole('tab', { name: expected })).toBeVisible();
      await expect(page.locator(`.jp-DirListing-item[title*="${expected}"]`)).toBeVisible();
      const cloned = await readContents(request, `${tmpPath}/${expected}`);
      expect(cellSources(cloned.content)).toEqual([
        '# Team template',
        'print("from the shared directory")'
      ]);
    }
    expect(consoleErrors(console)).toEqual([]);
  });

  test('Clone into a folder from its context menu', async ({ page, request, tmpPath }) => {
    await request.put(`${uiTestEnvironment().gatewayUrl}api/contents/${tmpPath}/inbox`, {
      data: { type: 'directory' }
    });
    await page.filebrowser.refresh();
    await page.locator('.jp-DirListing-item[title*="inbox"]').click({ button: 'right' });
    await page.getByRole('menuitem', { name: 'Clone from file system…' }).click();
    const dialog = topDialog(page);
    await expect(dialog.locator('input[name="target"]')).toHaveValue(`${tmpPath}/inbox`);
    await dialog.locator('input[name="relpath"]').fill('shared/template.ipynb');
    await dialog.getByRole('button', { name: 'Clone' }).click();
    await expect(page.getByRole('tab', { name: 'template.ipynb' })).toBeVisible();
    const cloned = await readContents(request, `${tmpPath}/inbox/template.ipynb`);
    expect(cloned.type).toBe('notebook');
  });

  test('A clone that fails says what went wrong', async ({ page }) => {
    const console = recordConsole(page);
    await page
      .locator('.jp-FileBrowser-toolbar [data-command="jupyter-store:clone-from-object-storage"]')
      .click();
    const dialog = topDialog(page);
    await dialog.locator('input[name="key"]').fill('library/no-such-notebook.ipynb');
    await dialog.getByRole('button', { name: 'Clone' }).click();
    const error = topDialog(page);
    await expect(error.locator('.jp-Dialog-header')).toHaveText('Cannot clone');
    await expect(error.locator('.jp-store-Error-summary')).toContainText('no-such-notebook.ipynb');
    await expect(error.locator('.jp-store-Error-status')).toContainText('HTTP 404');
    await error.getByRole('button', { name: 'Close' }).click();
    expect(consoleErrors(console, ['api/store/clone'])).toEqual([]);
  });
});
