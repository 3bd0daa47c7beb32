import { expect, test, type IJupyterLabPageFixture } from '@jupyterlab/galata';
import { uiTestEnvironment } from '../support/environment';
import { consoleErrors, recordConsole, runStoreCli } from '../support/helpers';

/** The labels of the File menu's items. */
async function fileMenuLabels(page: IJupyterLabPageFixture): Promise<string[]> {
  await page.menu.open('File');
  const labels = await page.locator('.lm-Menu:visible .lm-Menu-itemLabel').allInnerTexts();
  await page.menu.closeAll();
  return labels.map(label => label.trim()).filter(label => label !== '');
}

test.describe('Feature detection', () => {
  test('Commands of valid features appear in the File menu, the palette and the status bar', async ({
    page
  }) => {
    const console = recordConsole(page);
    const labels = await fileMenuLabels(page);
    for (const label of [
      'Publish…',
      'Show Archived Versions',
      'Save Version…',
      'Clone from object storage…',
      'Clone from file system…',
      'Compare Two Versions…',
      'Compare Unsaved Changes with Version…',
      'Preview Version…'
    ]) {
      expect(labels).toContain(label);
    }
    await page.keyboard.press('Control+Shift+C');
    const palette = page.locator('#command-palette');
    await expect(palette).toBeVisible();
    await palette.locator('input').fill('clone from');
    await expect(palette.locator('.lm-CommandPalette-item')).toHaveCount(2);
    await page.keyboard.press('Escape');
    await expect(page.locator('.jp-store-StatusItem')).toBeVisible();
    expect(consoleErrors(console)).toEqual([]);
  });

  test('With publishing disabled, the Publish item is absent', async ({ page }) => {
    runStoreCli(['disable', '--user']);
    try {
      await page.reload();
      await page.waitForSelector('.jp-store-StatusItem');
      const labels = await fileMenuLabels(page);
      expect(labels).not.toContain('Publish…');
      expect(labels).toContain('Show Archived Versions');
      await page.notebook.createNew('unpublishable.ipynb');
      await expect(
        page.locator('.jp-NotebookPanel-toolbar [data-command="jupyter-store:publish"]')
      ).toHaveCount(0);
    } finally {
      runStoreCli(['enable', '--user']);
    }
  });
});

test.describe('Without a store API', () => {
  test.use({ baseURL: uiTestEnvironment().plainLabUrl.replace(/\/$/, '') });

  test('The extension shows nothing and logs no error', async ({ page }) => {
    const console = recordConsole(page);
    // Loaded again with the console recorded from the start.
    await page.reload();
    await page.waitForSelector('#jp-main-statusbar');
    await expect
      .poll(() => console.filter(entry => entry.text.startsWith('jupyter-store:')).length)
      .toBe(1);
    const line = console.find(entry => entry.text.startsWith('jupyter-store:'))!;
    expect(line.type).toBe('warning');
    expect(line.text).toContain('no store API');
    const labels = await fileMenuLabels(page);
    for (const label of [
      'Publish…',
      'Show Archived Versions',
      'Save Version…',
      'Clone from object storage…'
    ]) {
      expect(labels).not.toContain(label);
    }
    await expect(page.locator('.jp-store-StatusItem')).toHaveCount(0);
    await expect(
      page.locator('.jp-FileBrowser-toolbar [data-command^="jupyter-store:"]:visible')
    ).toHaveCount(0);
    // The probe's 404 is reported by the browser itself; nothing else is an error.
    expect(consoleErrors(console, ['/api/store'])).toEqual([]);
  });
});
