/**
 * JupyterEventSource against a stand-in event bus (node:http + `ws`) on a loopback port or a unix
 * socket: what it sends, how it reads messages, refusals, reconnects and closing. The real Jupyter
 * Server is in jupyterEvents.itest.ts. Every wait is bounded.
 */
import * as http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import WebSocket, { WebSocketServer } from 'ws';
import {
  CONTENTS_SERVICE_SCHEMA,
  interpretJupyterEvent,
  JupyterEventSource
} from '../../src/archive/sources/jupyterEvents';
import { createLogger } from '../../src/gateway/logger';
import type { UpstreamAddress } from '../../src/gateway/upstream';
import { RecordingSink } from '../support/recordingSink';

jest.setTimeout(15_000);

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

async function waitUntil(check: () => boolean, ms: number, what: () => string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms: ${what()}`);
    await new Promise(resolve => setTimeout(resolve, 5));
  }
}

const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms));

/** A stand-in for Jupyter's event websocket: records upgrades, can refuse them. */
class FakeBus {
  readonly upgrades: http.IncomingHttpHeaders[] = [];
  readonly urls: string[] = [];
  readonly sockets = new Set<WebSocket>();
  /** Answer upgrades with this status instead of accepting them. */
  refuseWith: number | null = null;

  constructor() {
    this.server.on('upgrade', (request, socket: Duplex, head) => {
      this.raw.add(socket);
      this.upgrades.push(request.headers);
      this.urls.push(request.url ?? '');
      if (this.refuseWith !== null) {
        socket.end(`HTTP/1.1 ${this.refuseWith} Refused\r\nContent-Length: 0\r\n\r\n`);
        return;
      }
      this.wss.handleUpgrade(request, socket, head, ws => {
        this.sockets.add(ws);
        ws.on('close', () => this.sockets.delete(ws));
      });
    });
  }

  async listen(where: { kind: 'tcp' } | { kind: 'unix'; socketPath: string }): Promise<void> {
    await new Promise<void>(resolve => {
      if (where.kind === 'unix') this.server.listen(where.socketPath, resolve);
      else this.server.listen(0, '127.0.0.1', resolve);
    });
    const address = this.server.address();
    this.address =
      where.kind === 'unix'
        ? { kind: 'unix', socketPath: where.socketPath }
        : {
            kind: 'tcp',
            host: '127.0.0.1',
            port: typeof address === 'object' && address !== null ? address.port : 0
          };
  }

  send(message: unknown, binary = false): void {
    const text = typeof message === 'string' ? message : JSON.stringify(message);
    for (const ws of this.sockets) ws.send(binary ? Buffer.from(text) : text, { binary });
  }

  /** Cut every subscription as a dying server would. */
  dropAll(): void {
    for (const ws of this.sockets) ws.terminate();
  }

  async close(): Promise<void> {
    this.dropAll();
    this.wss.close();
    this.server.closeAllConnections();
    for (const socket of this.raw) socket.destroy();
    await new Promise<void>(resolve => this.server.close(() => resolve()));
  }

  address!: UpstreamAddress;
  /** Every upgraded connection: the server does not end them when it closes. */
  readonly raw = new Set<Duplex>();
  readonly server = http.createServer((_request, response) => response.writeHead(404).end());
  readonly wss = new WebSocketServer({ noServer: true });
}

let scratch: string;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'jupyter-events-spec-'));
});

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

async function setUp(
  options: {
    kind?: 'tcp' | 'unix';
    token?: string | null;
    baseUrl?: string;
    listen?: boolean;
  } = {}
): Promise<{
  bus: FakeBus;
  sink: RecordingSink;
  source: JupyterEventSource;
  logs: Array<Record<string, unknown>>;
}> {
  const bus = new FakeBus();
  const kind = options.kind ?? 'tcp';
  const where =
    kind === 'unix'
      ? { kind, socketPath: join(scratch, `bus-${cleanups.length}-${Date.now()}.sock`) }
      : { kind };
  if (options.listen ?? true) await bus.listen(where);
  else if (where.kind === 'unix') bus.address = { kind: 'unix', socketPath: where.socketPath };
  const sink = new RecordingSink();
  const logs: Array<Record<string, unknown>> = [];
  const log = createLogger({
    level: 'debug',
    destination: { write: (line: string) => logs.push(JSON.parse(line)) }
  });
  const source = new JupyterEventSource({
    upstream: bus.address,
    baseUrl: options.baseUrl ?? '/',
    token: options.token === undefined ? 'secret' : options.token,
    sink,
    log,
    backoff: { baseMs: 20, capMs: 100 }
  });
  cleanups.push(async () => {
    await source.close();
    if (bus.server.listening) await bus.close();
  });
  return { bus, sink, source, logs };
}

const save = (path: string): Record<string, string> => ({
  schema_id: CONTENTS_SERVICE_SCHEMA,
  action: 'save',
  path
});

// ---------------------------------------------------------------------------------------------
// Reading messages
// ---------------------------------------------------------------------------------------------

describe('interpretJupyterEvent', () => {
  const event = (data: Record<string, unknown>): string =>
    JSON.stringify({ schema_id: CONTENTS_SERVICE_SCHEMA, ...data });

  test.each([
    ['save', event({ action: 'save', path: 'a/b.ipynb' }), { kind: 'changed', path: 'a/b.ipynb' }],
    [
      'upload',
      event({ action: 'upload', path: '/up.ipynb' }),
      { kind: 'changed', path: 'up.ipynb' }
    ],
    ['create', event({ action: 'create', path: 'dir/' }), { kind: 'changed', path: 'dir' }],
    [
      'copy (Jupyter reports a leading slash)',
      event({ action: 'copy', path: '/x-Copy1.ipynb', source_path: '/x.ipynb' }),
      { kind: 'changed', path: 'x-Copy1.ipynb' }
    ],
    [
      'delete',
      event({ action: 'delete', path: 'gone.ipynb' }),
      { kind: 'removed', path: 'gone.ipynb' }
    ],
    [
      'rename',
      event({ action: 'rename', path: 'new/n.ipynb', source_path: '//old//n.ipynb/' }),
      { kind: 'renamed', from: 'old/n.ipynb', to: 'new/n.ipynb' }
    ],
    ['the root', event({ action: 'save', path: '/' }), { kind: 'changed', path: '' }],
    [
      'fields nested in data',
      JSON.stringify({
        schema_id: CONTENTS_SERVICE_SCHEMA,
        version: 1,
        data: { action: 'delete', path: 'n.ipynb' },
        timestamp: '2024-01-01T00:00:00Z'
      }),
      { kind: 'removed', path: 'n.ipynb' }
    ]
  ])('%s', (_name, text, expected) => {
    expect(interpretJupyterEvent(text)).toEqual(expected);
  });

  test.each([
    ['get', event({ action: 'get', path: 'a.ipynb' })],
    ['an action of a newer schema', event({ action: 'touch', path: 'a.ipynb' })],
    [
      'another schema',
      JSON.stringify({
        schema_id: 'https://events.jupyter.org/jupyter_server/kernel_actions/v1',
        action: 'start',
        msg: 'Kernel started'
      })
    ],
    [
      'a later contents schema',
      JSON.stringify({
        schema_id: 'https://events.jupyter.org/jupyter_server/contents_service/v2',
        action: 'save',
        path: 'a.ipynb'
      })
    ]
  ])('ignores %s', (_name, text) => {
    expect(interpretJupyterEvent(text).kind).toBe('ignored');
  });

  test.each([
    ['not JSON', '{"schema_id": '],
    ['an array', '[1, 2]'],
    ['null', 'null'],
    ['no schema_id', JSON.stringify({ action: 'save', path: 'a.ipynb' })],
    ['a schema_id that is not a string', JSON.stringify({ schema_id: 1, action: 'save' })],
    ['no action', event({ path: 'a.ipynb' })],
    ['no path', event({ action: 'save' })],
    ['a path that is not a string', event({ action: 'save', path: 3 })],
    ['a rename without source_path', event({ action: 'rename', path: 'b.ipynb' })],
    ['a path with ..', event({ action: 'save', path: '../outside.ipynb' })],
    ['a path with .', event({ action: 'delete', path: 'a/./b.ipynb' })],
    ['a path with NUL', event({ action: 'save', path: 'a\u0000.ipynb' })]
  ])('calls %s malformed', (_name, text) => {
    expect(interpretJupyterEvent(text).kind).toBe('malformed');
  });
});

// ---------------------------------------------------------------------------------------------
// The subscription
// ---------------------------------------------------------------------------------------------

describe('JupyterEventSource', () => {
  test.each(['tcp', 'unix'] as const)(
    'subscribes over %s with the token, a local Host and no Origin, and feeds the sink',
    async kind => {
      const { bus, sink, source } = await setUp({ kind, baseUrl: 'base/x' });
      expect(source.status()).toEqual({
        connected: false,
        reason: 'not started',
        received: 0,
        malformed: 0
      });
      source.start();
      expect(source.status().reason).toBe('connecting');
      await waitUntil(
        () => source.status().connected && bus.sockets.size === 1,
        3_000,
        () => JSON.stringify(source.status())
      );
      expect(bus.urls).toEqual(['/base/x/api/events/subscribe']);
      const headers = bus.upgrades[0];
      expect(headers.authorization).toBe('token secret');
      expect(headers.origin).toBeUndefined();
      expect(headers.host).toBe(
        bus.address.kind === 'tcp' ? `127.0.0.1:${bus.address.port}` : 'localhost'
      );

      bus.send(save('/a.ipynb'));
      bus.send({ schema_id: CONTENTS_SERVICE_SCHEMA, action: 'get', path: 'a.ipynb' });
      bus.send('not json');
      bus.send(save('bin.ipynb'), true);
      bus.send({ schema_id: 'https://example.org/other', anything: true });
      bus.send({
        schema_id: CONTENTS_SERVICE_SCHEMA,
        action: 'rename',
        path: 'b',
        source_path: 'a'
      });
      bus.send({ schema_id: CONTENTS_SERVICE_SCHEMA, action: 'delete', path: 'b/' });
      await waitUntil(
        () => source.status().received === 7,
        3_000,
        () => JSON.stringify(source.status())
      );
      expect(sink.calls).toEqual([
        ['changed', 'a.ipynb', 'events'],
        ['renamed', 'a', 'b', 'events'],
        ['removed', 'b', 'events']
      ]);
      expect(source.status()).toEqual({
        connected: true,
        reason: null,
        received: 7,
        malformed: 2
      });
    }
  );

  test('sends no Authorization header without a token', async () => {
    const { bus, source } = await setUp({ token: null });
    source.start();
    await waitUntil(
      () => source.status().connected,
      3_000,
      () => JSON.stringify(source.status())
    );
    expect(bus.upgrades[0].authorization).toBeUndefined();
  });

  test('a refusal is reported, warned about once and retried slowly, without throwing', async () => {
    const { bus, sink, source, logs } = await setUp();
    bus.refuseWith = 403;
    source.start();
    await waitUntil(
      () => bus.upgrades.length >= 3,
      3_000,
      () => `${bus.upgrades.length} attempts`
    );
    expect(source.status()).toMatchObject({
      connected: false,
      reason: 'the upstream refused the subscription (403)'
    });
    const warnings = logs.filter(line => line.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(String(warnings[0].msg)).toMatch(/refused the subscription \(403\).*token/);

    // Once the upstream accepts, the source subscribes and rescans what it missed.
    bus.refuseWith = null;
    await waitUntil(
      () => source.status().connected,
      3_000,
      () => JSON.stringify(source.status())
    );
    expect(sink.calls).toEqual([['rescan', 'the event subscription was interrupted', 'events']]);
  });

  test('an upstream that starts later is subscribed to, then rescanned', async () => {
    const { bus, sink, source } = await setUp({ kind: 'unix', listen: false });
    source.start();
    await waitUntil(
      () => /cannot reach the upstream at unix:.*ENOENT/.test(source.status().reason ?? ''),
      3_000,
      () => JSON.stringify(source.status())
    );
    expect(source.status().connected).toBe(false);
    await bus.listen({
      kind: 'unix',
      socketPath: (bus.address as { socketPath: string }).socketPath
    });
    await waitUntil(
      () => source.status().connected,
      3_000,
      () => JSON.stringify(source.status())
    );
    expect(sink.calls).toEqual([['rescan', 'the event subscription was interrupted', 'events']]);
  });

  test('a first subscription that succeeds at once asks for no rescan; every reconnect does', async () => {
    const { bus, sink, source } = await setUp();
    source.start();
    await waitUntil(
      () => bus.sockets.size === 1,
      3_000,
      () => JSON.stringify(source.status())
    );
    expect(sink.calls).toEqual([]);
    for (let round = 1; round <= 2; round++) {
      bus.dropAll();
      await waitUntil(
        () => sink.calls.length === round && bus.sockets.size === 1 && source.status().connected,
        3_000,
        () => JSON.stringify({ status: source.status(), calls: sink.calls })
      );
    }
    expect(sink.calls).toEqual([
      ['rescan', 'the event subscription was interrupted', 'events'],
      ['rescan', 'the event subscription was interrupted', 'events']
    ]);
    bus.send(save('after.ipynb'));
    await waitUntil(
      () => sink.calls.length === 3,
      3_000,
      () => JSON.stringify(sink.calls)
    );
    expect(sink.calls[2]).toEqual(['changed', 'after.ipynb', 'events']);
  });

  test('close() ends the subscription for good', async () => {
    const { bus, source } = await setUp();
    source.start();
    await waitUntil(
      () => bus.sockets.size === 1,
      3_000,
      () => JSON.stringify(source.status())
    );
    const started = Date.now();
    await source.close();
    expect(Date.now() - started).toBeLessThan(1_500);
    await waitUntil(
      () => bus.sockets.size === 0,
      3_000,
      () => 'the server still holds a socket'
    );
    await sleep(300);
    expect(bus.upgrades).toHaveLength(1);
    expect(source.status()).toMatchObject({ connected: false, reason: 'closed' });
    source.start();
    await sleep(100);
    expect(bus.upgrades).toHaveLength(1);
  });

  test('close() while retrying cancels the retry', async () => {
    const { bus, source } = await setUp();
    bus.refuseWith = 401;
    source.start();
    await waitUntil(
      () => bus.upgrades.length >= 1,
      3_000,
      () => 'no attempt'
    );
    await waitUntil(
      () => source.status().reason !== 'connecting',
      3_000,
      () => 'no failure'
    );
    await source.close();
    const attempts = bus.upgrades.length;
    await sleep(300);
    expect(bus.upgrades).toHaveLength(attempts);
  });

  test('close() while connecting cuts the attempt', async () => {
    // A server that accepts TCP but never answers the upgrade.
    const { bus, source } = await setUp();
    bus.server.removeAllListeners('upgrade');
    bus.server.on('upgrade', (request, socket: Duplex) => {
      bus.raw.add(socket);
      bus.upgrades.push(request.headers);
    });
    source.start();
    await waitUntil(
      () => bus.upgrades.length === 1,
      3_000,
      () => 'no attempt'
    );
    const started = Date.now();
    await source.close();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(source.status()).toMatchObject({ connected: false, reason: 'closed' });
  });

  test('a 404 says the upstream has no event bus', async () => {
    const { bus, source } = await setUp();
    bus.refuseWith = 404;
    source.start();
    await waitUntil(
      () => source.status().reason !== 'connecting',
      3_000,
      () => 'no failure'
    );
    expect(source.status().reason).toBe(
      'the upstream has no event bus at /api/events/subscribe (404)'
    );
  });
});
