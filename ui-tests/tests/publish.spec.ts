import { expect, test } from '@jupyterlab/galata';
import { uiTestEnvironment } from '../support/environment';
import {
  consoleErrors,
  objectVersions,
  readContents,
  readObject,
  recordConsole,
  screenshot,
  topDialog,
  writeContents
} from '../support/helpers';
import { cellSources, notebook } from '../support/notebooks';

test.describe('Publish', () => {
  test('Publish from the File menu puts the notebook, saved first, in the bucket', async ({
    page,
    request,
    tmpPath
  }) => {
    const console = recordConsole(page);
    const { gatewayUrl } = uiTestEnvironment();
    const path = `${tmpPath}/report.ipynb`;
    await page.notebook.createNew('report.ipynb');
    await page.notebook.setCell(0, 'code', 'print("published by the UI test")');
    // Left unsaved on purpose: publishing saves first.

    await page.menu.clickMenuItem('File>Publish…');
    const dialog = topDialog(page);
    await expect(dialog.locator('.jp-Dialog-header')).toHaveText('Publish notebook');
    await expect(dialog.locator('.jp-store-Destination-prefix')).toHaveText(
      's3://notebooks/published/'
    );
    await expect(dialog.locator('input[name="path"]')).toHaveValue(path);
    await expect(dialog).toContainText('unsaved changes');
    await screenshot(dialog.locator('.jp-Dialog-content'), 'publish-dialog');
    await dialog.getByRole('button', { name: 'Publish' }).click();

    const result = topDialog(page);
    await expect(result.locator('.jp-Dialog-header')).toHaveText('Published');
    const key = `published/${path}`;
    await expect(result.locator('[data-store-field="object-path"]')).toHaveText(
      `s3://notebooks/${key}`
    );
    const versionId = (await result.locator('[data-store-field="version-id"]').innerText()).trim();
    expect(versionId).not.toBe('');
    const link = await result.locator('input[name="clone-link"]').inputValue();
    expect(link).toBe(
      `${gatewayUrl}store/clone?object_bucket=notebooks&object_key=${encodeURIComponent(key)}`
    );
    // The link opens the clone landing page for that object.
    const landing = await request.get(link);
    expect(landing.status()).toBe(200);
    expect(await landing.text()).toContain(key);
    await result.getByRole('button', { name: 'Copy clone link' }).click();
    await expect(result.locator('.jp-store-Copied')).toHaveText('Copied');
    await screenshot(result.locator('.jp-Dialog-content'), 'publish-result');
    await result.getByRole('button', { name: 'Close' }).click();

    // The object holds the notebook's content, and it is the version the dialog named.
    const published = JSON.parse(await readObject(key));
    expect(cellSources(published)).toEqual(['print("published by the UI test")']);
    expect(await objectVersions(key)).toEqual([versionId]);
    // Saved first: the file on disk has the same content, and the notebook is clean.
    const onDisk = await readContents(request, path);
    expect(cellSources(onDisk.content)).toEqual(['print("published by the UI test")']);
    await expect(page.locator('.jp-mod-current .jp-mod-dirty')).toHaveCount(0);

    // Publishing again to the same place asks first, then adds a version.
    await page.notebook.setCell(0, 'code', 'print("second edition")');
    await page.notebook.save();
    await page.menu.clickMenuItem('File>Publish…');
    await topDialog(page).getByRole('button', { name: 'Publish' }).click();
    const ask = topDialog(page);
    await expect(ask.locator('.jp-Dialog-header')).toHaveText('Replace the published copy?');
    await expect(ask).toContainText(`s3://notebooks/${key}`);
    await ask.getByRole('button', { name: 'Replace' }).click();
    await expect(topDialog(page).locator('.jp-Dialog-header')).toHaveText('Published');
    await topDialog(page).getByRole('button', { name: 'Close' }).click();
    expect(await objectVersions(key)).toHaveLength(2);
    expect(cellSources(JSON.parse(await readObject(key)))).toEqual(['print("second edition")']);

    expect(consoleErrors(console)).toEqual([]);
  });

  test('The notebook toolbar button publishes to an edited path', async ({ page, tmpPath }) => {
    const console = recordConsole(page);
    await page.notebook.createNew('toolbar.ipynb');
    await page.notebook.setCell(0, 'markdown', '# From the toolbar');
    await page.notebook.save();
    const button = page.locator('.jp-NotebookPanel-toolbar [data-command="jupyter-store:publish"]');
    await expect(button).toBeVisible();
    await button.click();
    const dialog = topDialog(page);
    const target = `${tmpPath}/team/toolbar-copy.ipynb`;
    await dialog.locator('input[name="path"]').fill(target);
    await dialog.locator('input[name="path"]').press('Enter');
    await expect(topDialog(page).locator('.jp-Dialog-header')).toHaveText('Published');
    await topDialog(page).getByRole('button', { name: 'Close' }).click();
    expect(cellSources(JSON.parse(await readObject(`published/${target}`)))).toEqual([
      '# From the toolbar'
    ]);
    expect(consoleErrors(console)).toEqual([]);
  });

  test('An invalid notebook shows its validation error: which cell, and what is wrong', async ({
    page,
    request,
    tmpPath
  }) => {
    const console = recordConsole(page);
    // nbformat wants a cell's metadata.name to be a string; JupyterLab keeps it as it is.
    await writeContents(request, `${tmpPath}/invalid.ipynb`, {
      type: 'notebook',
      format: 'json',
      content: notebook(['x = 1', 'y = 2'], {})
    });
    const broken = (await readContents(request, `${tmpPath}/invalid.ipynb`)).content as {
      cells: { metadata: Record<string, unknown> }[];
    };
    broken.cells[1].metadata.name = 42;
    await writeContents(request, `${tmpPath}/invalid.ipynb`, {
      type: 'file',
      format: 'text',
      content: JSON.stringify(broken)
    });
    await page.filebrowser.refresh();
    await page.notebook.open('invalid.ipynb');

    await page.menu.clickMenuItem('File>Publish…');
    await topDialog(page).getByRole('button', { name: 'Publish' }).click();
    const error = topDialog(page);
    await expect(error.locator('.jp-Dialog-header')).toHaveText(
      `Cannot publish ${tmpPath}/invalid.ipynb`
    );
    const summary = error.locator('.jp-store-Error-summary');
    await expect(summary).toContainText('Cannot publish an invalid notebook');
    await expect(summary).toContainText('cell 2 of 2 (index 1');
    await expect(summary).toContainText('metadata.name');
    await expect(summary).toContainText("42 is not of type 'string'");
    await expect(error.locator('.jp-store-Error-status')).toHaveText('HTTP 422 (invalid notebook)');
    await screenshot(error.locator('.jp-Dialog-content'), 'publish-validation-error');
    await error.getByRole('button', { name: 'Close' }).click();
    expect(await objectVersions(`published/${tmpPath}/invalid.ipynb`)).toEqual([]);
    // The only error is the browser's own line about the 422 answer.
    expect(consoleErrors(console, ['api/store/publish/'])).toEqual([]);
  });
});
