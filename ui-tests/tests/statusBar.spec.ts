import { expect, test } from '@jupyterlab/galata';
import { uiTestEnvironment } from '../support/environment';
import { consoleErrors, recordConsole, screenshot } from '../support/helpers';

test.describe('Archive status in the status bar', () => {
  test('Pending count, last archive time, and a warning while archiving fails', async ({
    page
  }) => {
    recordConsole(page);
    const item = page.locator('.jp-store-StatusItem');
    await expect(item).toBeVisible();
    await page.notebook.createNew('status.ipynb');
    await page.notebook.setCell(0, 'code', 'status = "archived"');
    await page.notebook.save();
    await expect(item).toHaveText(/^Archived \d/);
    await expect(item).not.toHaveClass(/jp-mod-warning/);

    // MinIO stops answering: the next save waits in the journal and the item warns.
    const { objectServerPid } = uiTestEnvironment();
    process.kill(objectServerPid, 'SIGSTOP');
    try {
      await page.notebook.setCell(0, 'code', 'status = "pending"');
      await page.notebook.save();
      await expect(item).toHaveText(/Archiving: 1 pending|Archive failing: 1 pending/);
      await expect(item).toHaveText('⚠ Archive failing: 1 pending', { timeout: 60_000 });
      await expect(item).toHaveClass(/jp-mod-warning/);
      await expect(item).toHaveAttribute('title', /Archiving failed/);
      await screenshot(page.locator('#jp-main-statusbar'), 'status-bar-warning');
    } finally {
      process.kill(objectServerPid, 'SIGCONT');
    }
    // Back: the save is archived, and the warning goes.
    await expect(item).toHaveText(/^Archived \d/, { timeout: 60_000 });
    await expect(item).not.toHaveClass(/jp-mod-warning/);

    // Enter opens the details.
    await item.focus();
    await page.keyboard.press('Enter');
    const dialog = page.locator('.jp-Dialog').last();
    await expect(dialog.locator('.jp-Dialog-header')).toHaveText('Archive status');
    await expect(dialog).toContainText('Archiving of saves');
    await dialog.getByRole('button', { name: 'Close' }).click();
  });
});

test.describe('Archiving not configured', () => {
  test.use({ baseURL: uiTestEnvironment().unconfiguredGatewayUrl.replace(/\/$/, '') });

  test('The status bar warns with the reason, and only valid features get commands', async ({
    page
  }) => {
    const console = recordConsole(page);
    const item = page.locator('.jp-store-StatusItem');
    await expect(item).toHaveText('⚠ Archive off');
    await expect(item).toHaveClass(/jp-mod-warning/);
    await expect(item).toHaveAttribute('title', /Saves are not archived: .*no-such-bucket/);
    await item.click();
    const dialog = page.locator('.jp-Dialog').last();
    await expect(dialog.locator('.jp-Dialog-header')).toHaveText('Archive status');
    await expect(dialog.locator('dd.jp-store-Off')).toHaveCount(5);
    await dialog.getByRole('button', { name: 'Close' }).click();
    // No valid feature but the status itself: no store command in the File menu.
    await page.menu.open('File');
    const labels = await page.locator('.lm-Menu:visible .lm-Menu-itemLabel').allInnerTexts();
    await page.menu.closeAll();
    for (const label of [
      'Publish…',
      'Show Archived Versions',
      'Clone from object storage…',
      'Clone from file system…'
    ]) {
      expect(labels).not.toContain(label);
    }
    expect(consoleErrors(console)).toEqual([]);
  });
});
