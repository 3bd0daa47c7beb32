import * as fs from 'node:fs/promises';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import pino from 'pino';
import { ContentsManager } from '../../src/contents/manager';
import {
  ContentsEventEmitter,
  decideContentsBackend,
  type IUpstreamDescription
} from '../../src/gateway/contentsBackend';

const STOCK: IUpstreamDescription = {
  contents_manager_class: 'jupyter_server.services.contents.largefilemanager.AsyncLargeFileManager',
  contents_manager_is_stock: true,
  pre_save_hook: false,
  post_save_hook: false,
  extensions: { jupyterlab: true, jupyter_server_terminals: true, jupyter_lsp: true }
};

describe('decideContentsBackend()', () => {
  it('keeps an explicit setting whatever the upstream loads', () => {
    expect(decideContentsBackend('node', { ...STOCK, post_save_hook: true })).toMatchObject({
      backend: 'node',
      setting: 'node'
    });
    expect(decideContentsBackend('jupyter', STOCK)).toMatchObject({ backend: 'jupyter' });
  });

  it('picks node for the stock manager with no hooks and no contents extension', () => {
    expect(decideContentsBackend('auto', STOCK)).toMatchObject({ backend: 'node' });
  });

  it.each([
    [
      {
        contents_manager_class: 'jupyterfs.metamanager.MetaManager',
        contents_manager_is_stock: false
      },
      /MetaManager/
    ],
    [{ pre_save_hook: true }, /pre_save_hook/],
    [{ post_save_hook: true }, /post_save_hook/],
    [{ extensions: { ...STOCK.extensions, jupyter_server_ydoc: true } }, /collaboration/],
    [{ extensions: { ...STOCK.extensions, jupyterlab_jupytext: true } }, /jupytext/],
    [
      { extensions: { ...STOCK.extensions, jupyter_server_documents: true } },
      /jupyter-server-documents/
    ]
  ])('picks jupyter when the upstream has %p, and says so', (change, reason) => {
    const choice = decideContentsBackend('auto', { ...STOCK, ...change });
    expect(choice.backend).toBe('jupyter');
    expect(choice.reason).toMatch(reason);
  });

  it('ignores a contents extension that is installed but disabled', () => {
    const choice = decideContentsBackend('auto', {
      ...STOCK,
      extensions: { ...STOCK.extensions, jupyter_server_ydoc: false }
    });
    expect(choice.backend).toBe('node');
  });

  it('picks jupyter when the upstream cannot say what it loads', () => {
    const choice = decideContentsBackend('auto', 'GET api/store-upstream answered 404');
    expect(choice).toMatchObject({ backend: 'jupyter', setting: 'auto' });
    expect(choice.reason).toMatch(/404/);
  });
});

describe('ContentsEventEmitter', () => {
  /** A request the fake upstream got, answered when the test says so (once). */
  interface IHeld {
    method: string;
    url: string;
    body: string;
    answer(status: number): void;
  }

  let root: string;
  let server: http.Server;
  let held: IHeld[];
  let arrived: () => void;
  let manager: ContentsManager;
  let emitter: ContentsEventEmitter;

  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'events-spec-'));
    held = [];
    arrived = () => {};
    server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', chunk => chunks.push(chunk as Buffer));
      request.on('end', () => {
        held.push({
          method: request.method ?? '',
          url: request.url ?? '',
          body: Buffer.concat(chunks).toString(),
          answer: status => {
            if (!response.headersSent) response.writeHead(status).end();
          }
        });
        arrived();
      });
    });
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    manager = new ContentsManager({ rootDir: root, deleteToTrash: false });
    emitter = new ContentsEventEmitter({
      manager,
      upstream: { kind: 'tcp', host: '127.0.0.1', port },
      baseUrl: '/base/',
      token: 'secret',
      log: pino({ level: 'silent' })
    });
  });

  afterEach(async () => {
    for (const request of held) request.answer(204);
    await emitter.close();
    server.closeAllConnections();
    await new Promise(resolve => server.close(resolve));
    await fs.rm(root, { recursive: true, force: true });
  });

  /** Wait until the fake upstream holds `count` requests. */
  async function requests(count: number): Promise<IHeld[]> {
    while (held.length < count) await new Promise<void>(resolve => (arrived = resolve));
    return held;
  }

  const exists = (name: string) =>
    fs.lstat(path.join(root, name)).then(
      () => true,
      () => false
    );

  it('keeps the old name of a renamed file until Python answered the event and one more request', async () => {
    await fs.writeFile(path.join(root, 'a.ipynb'), '{}');
    let done = false;
    const renaming = manager.rename('a.ipynb', 'b.ipynb').then(() => (done = true));

    const [post] = await requests(1);
    expect(post).toMatchObject({ method: 'POST', url: '/base/api/events' });
    expect(JSON.parse(post.body)).toMatchObject({
      schema_id: 'https://events.jupyter.org/jupyter_server/contents_service/v1',
      data: { action: 'rename', path: 'b.ipynb', source_path: 'a.ipynb' }
    });
    expect([done, await exists('a.ipynb'), await exists('b.ipynb')]).toEqual([false, true, true]);
    post.answer(204);

    // The listeners of the event run after that answer: one more round trip waits for them.
    const [, roundTrip] = await requests(2);
    expect(roundTrip).toMatchObject({ method: 'GET', url: '/base/api' });
    expect([done, await exists('a.ipynb')]).toEqual([false, true]);
    roundTrip.answer(200);

    await renaming;
    expect([await exists('a.ipynb'), await exists('b.ipynb')]).toEqual([false, true]);
    expect(emitter.counts).toEqual({ posted: 1, failed: 0 });
  });

  it('makes no round trip for an event Python refused, nor for other changes', async () => {
    await fs.writeFile(path.join(root, 'a.txt'), 'a');
    const renaming = manager.rename('a.txt', 'b.txt');
    (await requests(1))[0].answer(500);
    await renaming;
    expect(await exists('a.txt')).toBe(false);

    const deleting = manager.delete('b.txt');
    await deleting;
    (await requests(2))[1].answer(204);
    await emitter.flush();
    expect(held.map(request => `${request.method} ${request.url}`)).toEqual([
      'POST /base/api/events',
      'POST /base/api/events'
    ]);
    expect(emitter.counts).toEqual({ posted: 1, failed: 1 });
  });
});
