import type { StoreInfo } from '@jupyter-store/contract';
import { expect, test } from '@jupyterlab/galata';
import type { Locator, Page } from '@playwright/test';
import { uiTestEnvironment } from '../support/environment';
import { consoleErrors, recordConsole, screenshot, topDialog } from '../support/helpers';

/** The gateway's feature detection answer, asked directly. */
async function storeInfo(page: Page): Promise<StoreInfo> {
  const response = await page.request.get(`${uiTestEnvironment().gatewayUrl}api/store`);
  expect(response.ok()).toBe(true);
  return (await response.json()) as StoreInfo;
}

/** The value (`<dd>`) of the fact labelled `label` (`<dt>`) in a facts list. */
function fact(scope: Locator, label: string): Locator {
  return scope
    .locator('dt')
    .filter({ hasText: new RegExp(`^${label}$`) })
    .locator('xpath=following-sibling::dd[1]');
}

/** A made-up blind spot: part of the root on an NFS mount, as the gateway words it. */
const NFS_SPOT = {
  path: 'shared',
  reason:
    '/shared is an NFS mount (type nfs4, from 10.0.0.5:/export): inotify does not see writes by other clients'
};

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

test.describe('How changes are observed', () => {
  test('The details show the watcher, the Jupyter event subscription and the periodic scan', async ({
    page
  }) => {
    const console = recordConsole(page);
    const item = page.locator('.jp-store-StatusItem');
    await page.notebook.createNew('observed.ipynb');
    await page.notebook.setCell(0, 'code', 'observed = True');
    await page.notebook.save();
    await expect(item).toHaveText(/^Archived \d/);
    // The gateway scans the root when it starts and subscribes to Jupyter Server's events.
    await expect
      .poll(
        async () => {
          const observation = (await storeInfo(page)).archive?.observation;
          return {
            reported: observation !== undefined,
            scanned: Boolean(observation?.scan.last_completed_at),
            connected: observation?.events.connected ?? false
          };
        },
        { timeout: 60_000 }
      )
      .toEqual({ reported: true, scanned: true, connected: true });
    // A root on a local disk: no warning.
    await expect(item).not.toHaveClass(/jp-mod-warning/);

    await item.focus();
    await page.keyboard.press('Enter');
    const dialog = topDialog(page);
    await expect(dialog.locator('.jp-Dialog-header')).toHaveText('Archive status');
    const section = dialog.getByRole('region', { name: 'How changes are seen' });
    await expect(fact(section, 'File watcher')).toHaveText('inotify');
    await expect(fact(section, 'Jupyter events')).toHaveText('connected');
    await expect(fact(section, 'Periodic scan')).toHaveText(
      /^every 60 seconds; last completed .+ in \d+(\.\d)? (ms|s)( \(\d+ notebooks?\))?(; scanning now)?$/
    );
    await expect(fact(section, 'Changes seen / archived')).toHaveText(
      /^gateway [1-9]\d* \/ \d+, events \d+ \/ \d+, watcher \d+ \/ \d+, scan \d+ \/ \d+$/
    );
    await expect(section.locator('dt').filter({ hasText: /^Blind spots?$/ })).toHaveCount(0);
    await dialog.getByRole('button', { name: 'Close' }).click();
    await expect(dialog).toBeHidden();
    expect(consoleErrors(console)).toEqual([]);
  });

  test('A blind spot of the file watcher turns the item into a warning that names it', async ({
    page
  }) => {
    const console = recordConsole(page);
    const item = page.locator('.jp-store-StatusItem');
    await expect(item).toBeVisible();
    await expect(item).not.toHaveClass(/jp-mod-warning/);
    expect(
      (await storeInfo(page)).archive?.observation,
      'the gateway reports how it observes changes'
    ).toBeDefined();

    // The real gateway cannot be put on an NFS mount here: its real answer is changed on the
    // way. (JupyterLab adds a cache-busting query to the URL, hence a predicate, not a glob.)
    let change: (archive: NonNullable<StoreInfo['archive']>) => void = archive => {
      archive.observation!.blind_spots = [NFS_SPOT];
      archive.observation!.watcher.mode = 'inotify';
    };
    const storeApi = (url: URL) => url.pathname.endsWith('/api/store');
    await page.route(storeApi, async route => {
      const response = await route.fetch();
      const info = (await response.json()) as StoreInfo;
      if (info.archive?.observation) change(info.archive);
      await route.fulfill({ response, json: info });
    });

    await test.step('the status bar warns', async () => {
      await expect(item).toHaveText('⚠ Archive: blind spot', { timeout: 30_000 });
      await expect(item).toHaveClass(/jp-mod-warning/);
      await expect(item).toHaveAttribute(
        'title',
        /^The file watcher cannot see changes in shared: they are found only by the periodic scan, every 60 seconds\. /
      );
    });

    await test.step('the details name the place and the reason', async () => {
      await item.click();
      const dialog = topDialog(page);
      await expect(dialog.locator('.jp-Dialog-header')).toHaveText('Archive status');
      await expect(dialog.locator('p.jp-store-Warning')).toContainText(
        'The file watcher cannot see changes in shared'
      );
      const section = dialog.getByRole('region', { name: 'How changes are seen' });
      const spots = fact(section, 'Blind spot');
      await expect(spots).toHaveClass(/jp-store-Off/);
      await expect(spots.getByRole('listitem')).toHaveText([`shared: ${NFS_SPOT.reason}`]);
      await expect(spots.locator('code')).toHaveText('shared');
      await expect(spots).toContainText(
        'Changes there are found by the periodic scan, every 60 seconds.'
      );
      await expect(fact(section, 'File watcher')).toHaveText('inotify');
      await screenshot(dialog.locator('.jp-Dialog-content'), 'status-bar-blind-spot');
      await dialog.getByRole('button', { name: 'Close' }).click();
      await expect(dialog).toBeHidden();
    });

    await test.step('the whole root', async () => {
      change = archive => {
        archive.observation!.blind_spots = [
          {
            path: '',
            reason: 'the root is on an NFS mount: inotify does not see writes by other clients'
          }
        ];
      };
      // Opening the details asks the gateway again.
      await item.focus();
      await page.keyboard.press('Enter');
      const dialog = topDialog(page);
      const spots = fact(
        dialog.getByRole('region', { name: 'How changes are seen' }),
        'Blind spot'
      );
      await expect(spots.getByRole('listitem')).toHaveText([
        'the whole root: the root is on an NFS mount: inotify does not see writes by other clients'
      ]);
      await expect(item).toHaveText('⚠ Archive: blind spot');
      await expect(item).toHaveAttribute('title', /cannot see changes in the whole root:/);
      await page.keyboard.press('Escape');
      await expect(dialog).toBeHidden();
    });

    await test.step('a polling watcher: only the scan finds changes', async () => {
      change = archive => {
        archive.observation!.blind_spots = [];
        archive.observation!.watcher = {
          mode: 'polling',
          reason: 'the inotify watch limit is reached (fs.inotify.max_user_watches)'
        };
      };
      await expect(item).toHaveText('⚠ Archive: scan only', { timeout: 30_000 });
      await expect(item).toHaveClass(/jp-mod-warning/);
      await expect(item).toHaveAttribute(
        'title',
        /found only by the periodic scan, every 60 seconds\. Why: the inotify watch limit/
      );
    });

    await test.step('a failing archive comes first', async () => {
      change = archive => {
        archive.observation!.blind_spots = [NFS_SPOT];
        archive.last_error = { message: 'connect ECONNREFUSED', at: new Date().toISOString() };
      };
      await expect(item).toHaveText('⚠ Archive failing: 0 pending', { timeout: 30_000 });
      await expect(item).toHaveAttribute('title', /^Archiving failed .*connect ECONNREFUSED/);
    });

    await test.step('an older gateway, which does not report observation', async () => {
      change = archive => {
        delete archive.observation;
        delete archive.sources;
      };
      await expect(item).not.toHaveClass(/jp-mod-warning/, { timeout: 30_000 });
      await expect(item).toHaveText(/^(Archived \d|Archive ready$)/);
      await item.click();
      const dialog = topDialog(page);
      await expect(dialog.locator('.jp-Dialog-header')).toHaveText('Archive status');
      await expect(dialog).toContainText('Archiving of saves');
      await expect(dialog.locator('.jp-store-Observation')).toHaveCount(0);
      await dialog.getByRole('button', { name: 'Close' }).click();
    });

    await page.unroute(storeApi);
    expect(consoleErrors(console)).toEqual([]);
  });
});

test.describe('Background polling', () => {
  test('Status polls are not user activity, and stop while the page is hidden', async ({
    page
  }) => {
    await expect(page.locator('.jp-store-StatusItem')).toBeVisible();
    /** Set (a number) or reset (null) the refresh interval, as the Settings Editor does. */
    const setRefreshSeconds = (seconds: number | null) =>
      page.evaluate(async value => {
        const galata = (
          window as unknown as { galata: { getPlugin(id: string): Promise<unknown> } }
        ).galata;
        const registry = (await galata.getPlugin('@jupyterlab/apputils-extension:settings')) as {
          set(plugin: string, key: string, value: number): Promise<void>;
          remove(plugin: string, key: string): Promise<void>;
        };
        const plugin = '@jupyter-store/labextension:plugin';
        const key = 'archiveStatusRefreshSeconds';
        await (value === null ? registry.remove(plugin, key) : registry.set(plugin, key, value));
      }, seconds);
    // Poll every second, as a user may set it; the default again for the tests that follow.
    await setRefreshSeconds(1);
    try {
      const polls: string[] = [];
      page.on('request', request => {
        const url = new URL(request.url());
        if (request.method() === 'GET' && /\/api\/store\/?$/.test(url.pathname))
          polls.push(url.search);
      });
      await expect.poll(() => polls.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
      expect(polls.every(search => new URLSearchParams(search).has('no_track_activity'))).toBe(
        true
      );

      /** Tell the page it is hidden (another tab) or shown again, as the browser does. */
      const setVisibility = (state: 'hidden' | 'visible') =>
        page.evaluate(visibility => {
          Object.defineProperty(document, 'visibilityState', {
            configurable: true,
            get: () => visibility
          });
          document.dispatchEvent(new Event('visibilitychange'));
        }, state);
      await setVisibility('hidden');
      // A poll already on its way may still arrive; then nothing for several intervals.
      await page.waitForTimeout(1_500);
      const whileHidden = polls.length;
      await page.waitForTimeout(4_000);
      expect(polls.length).toBe(whileHidden);
      // Shown again: asked at once, then polled again.
      await setVisibility('visible');
      await expect.poll(() => polls.length, { timeout: 2_000 }).toBeGreaterThan(whileHidden);
      await expect.poll(() => polls.length, { timeout: 5_000 }).toBeGreaterThan(whileHidden + 1);
    } finally {
      await setRefreshSeconds(null);
    }
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
      'Clone from file system…',
      'Compare Two Versions…',
      'Compare Unsaved Changes with Version…',
      'Preview Version…'
    ]) {
      expect(labels).not.toContain(label);
    }
    expect(consoleErrors(console)).toEqual([]);
  });
});
