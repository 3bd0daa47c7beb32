/**
 * The contents backend behind the real gateway: what `auto` picks in each environment (and why,
 * in `GET api/store`), a user's `post_save_hook` running on every save through the gateway, a
 * relayed save journalled before its answer, and the `contents_service` events our own contents
 * manager posts on Jupyter's event bus.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { ecosystemBin } from '../support/ecosystem';
import { labDefaults, startGatewayProcess, type IGatewayProcess } from '../support/gateway';
import { withKernel } from '../support/kernel';

const scratch: string[] = [];
const running: IGatewayProcess[] = [];

afterEach(async () => {
  for (const gateway of running.splice(0)) await gateway.stop('SIGTERM', 15_000);
  for (const dir of scratch.splice(0)) await rm(dir, { recursive: true, force: true });
});

function scratchDir(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `backend-${name}-`));
  scratch.push(dir);
  return dir;
}

async function start(args: string[] = [], jupyter?: string): Promise<IGatewayProcess> {
  const defaults = labDefaults();
  if (jupyter) defaults.splice(defaults.indexOf('--jupyter'), 2, '--jupyter', jupyter);
  const gateway = await startGatewayProcess({ args: [...defaults, ...args] });
  running.push(gateway);
  return gateway;
}

async function api(
  gateway: IGatewayProcess,
  method: string,
  relative: string,
  body?: unknown
): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(gateway.url(relative), {
    method,
    headers: { Authorization: `token ${gateway.token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body)
  });
  const text = await response.text();
  return {
    status: response.status,
    json: text ? (JSON.parse(text) as Record<string, unknown>) : {}
  };
}

const NOTEBOOK = {
  cells: [{ cell_type: 'markdown', id: 'm1', metadata: {}, source: 'hello' }],
  metadata: {},
  nbformat: 4,
  nbformat_minor: 5
};

async function backendOf(gateway: IGatewayProcess): Promise<{ backend: string; reason: string }> {
  const info = await api(gateway, 'GET', 'api/store');
  expect(info.status).toBe(200);
  return info.json.contents_backend as { backend: string; reason: string };
}

describe('contents_backend auto', () => {
  test('picks node for plain JupyterLab, and says why', async () => {
    const gateway = await start();
    expect(await backendOf(gateway)).toMatchObject({
      backend: 'node',
      setting: 'auto',
      reason: expect.stringMatching(/stock file contents manager/)
    });
  });

  test('picks jupyter with jupytext and collaboration installed, and names them', async () => {
    const gateway = await start([], ecosystemBin('jupyter'));
    const choice = await backendOf(gateway);
    expect(choice.backend).toBe('jupyter');
    expect(choice.reason).toMatch(/jupytext/);
    expect(choice.reason).toMatch(/collaboration/);
    // Kernels do not inherit the probe extension's path or config directory.
    const seen = await withKernel(gateway, kernel =>
      kernel.execute(
        "import os; os.environ.get('PYTHONPATH', '') + '|' + os.environ.get('JUPYTER_CONFIG_PATH', '')"
      )
    );
    expect(seen).not.toMatch(/python/);
  });

  test('an explicit setting wins', async () => {
    const gateway = await start(['--StoreSettings.contents_backend=jupyter']);
    expect(await backendOf(gateway)).toMatchObject({ backend: 'jupyter', setting: 'jupyter' });
  });
});

describe('a post_save_hook in the user config', () => {
  test('picks jupyter, runs on every save through the gateway, and each save is archived', async () => {
    const dir = scratchDir('hook');
    const hookLog = join(dir, 'hook.log');
    const config = join(dir, 'jupyter_server_config.py');
    await writeFile(
      config,
      [
        'def log_save(model, os_path, contents_manager, **kwargs):',
        `    with open(${JSON.stringify(hookLog)}, "a") as log:`,
        '        log.write(model["path"] + "\\n")',
        '',
        'c.FileContentsManager.post_save_hook = log_save',
        ''
      ].join('\n')
    );
    const gateway = await start(['--config', config]);
    const choice = await backendOf(gateway);
    expect(choice.backend).toBe('jupyter');
    expect(choice.reason).toMatch(/post_save_hook/);

    for (let i = 1; i <= 3; i++) {
      const notebook = { ...NOTEBOOK, cells: [{ ...NOTEBOOK.cells[0], source: `save ${i}` }] };
      const saved = await api(gateway, 'PUT', 'api/contents/hooked.ipynb', {
        type: 'notebook',
        content: notebook
      });
      expect(saved.status).toBe(i === 1 ? 201 : 200);
      // Journalled before the answer: the status already counts it.
      const info = await api(gateway, 'GET', 'api/store');
      const archive = info.json.archive as {
        sources: { gateway: { seen: number } };
        pending: number;
        archived: number;
      };
      expect(archive.sources.gateway.seen).toBeGreaterThanOrEqual(i);
    }
    const lines = (await readFile(hookLog, 'utf8')).trim().split('\n');
    expect(lines).toEqual(['hooked.ipynb', 'hooked.ipynb', 'hooked.ipynb']);

    const deadline = Date.now() + 20_000;
    let versions: unknown[] = [];
    while (Date.now() < deadline) {
      const listing = await api(gateway, 'GET', 'api/store/versions/hooked.ipynb');
      versions = (listing.json.workspace as { versions: unknown[] }).versions;
      if (versions.length === 3) break;
      await new Promise(resolve => setTimeout(resolve, 200));
    }
    expect(versions).toHaveLength(3);
    const newest = await api(gateway, 'GET', 'api/contents/hooked.ipynb');
    expect(JSON.stringify(newest.json.content)).toContain('save 3');
  });
});

describe('contents_backend node', () => {
  test("posts every change as a contents_service event on Jupyter's bus", async () => {
    const gateway = await start(['--StoreSettings.contents_backend=node']);
    expect(await backendOf(gateway)).toMatchObject({ backend: 'node' });
    const socket = new WebSocket(gateway.url('api/events/subscribe').replace(/^http/, 'ws'), {
      headers: { Authorization: `token ${gateway.token}` }
    });
    const events: Array<Record<string, unknown>> = [];
    socket.on('message', data => {
      const event = JSON.parse(String(data)) as Record<string, unknown>;
      if (String(event.schema_id).endsWith('/contents_service/v1') && event.action !== 'get') {
        events.push(event);
      }
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    try {
      expect(
        (await api(gateway, 'PUT', 'api/contents/a.ipynb', { type: 'notebook', content: NOTEBOOK }))
          .status
      ).toBe(201);
      expect((await api(gateway, 'POST', 'api/contents', { copy_from: 'a.ipynb' })).status).toBe(
        201
      );
      expect(
        (await api(gateway, 'PATCH', 'api/contents/a.ipynb', { path: 'b.ipynb' })).status
      ).toBe(200);
      expect((await api(gateway, 'DELETE', 'api/contents/b.ipynb')).status).toBe(204);
      const deadline = Date.now() + 10_000;
      while (events.length < 5 && Date.now() < deadline) {
        await new Promise(resolve => setTimeout(resolve, 50));
      }
      expect(
        events.map(({ action, path, source_path }) => ({ action, path, source_path }))
      ).toEqual([
        { action: 'save', path: 'a.ipynb', source_path: undefined },
        { action: 'save', path: 'a-Copy1.ipynb', source_path: undefined },
        { action: 'copy', path: 'a-Copy1.ipynb', source_path: 'a.ipynb' },
        { action: 'rename', path: 'b.ipynb', source_path: 'a.ipynb' },
        { action: 'delete', path: 'b.ipynb', source_path: undefined }
      ]);
    } finally {
      socket.close();
    }
  });
});
