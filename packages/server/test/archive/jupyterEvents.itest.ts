/**
 * JupyterEventSource against a real Jupyter Server: contents changes made through Jupyter's own
 * REST API (straight to Jupyter, not through the gateway) reach the sink as the intake expects,
 * with a token, with a base_url, without authentication, over a unix socket, across restarts of
 * the upstream, and a wrong token is a status rather than an exception. Every wait is bounded.
 */
import { spawn } from 'node:child_process';
import * as http from 'node:http';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JupyterEventSource } from '../../src/archive/sources/jupyterEvents';
import { createLogger } from '../../src/gateway/logger';
import { upstreamConnectOptions, type UpstreamAddress } from '../../src/gateway/upstream';
import {
  findVenvPython,
  freePort,
  isolatedEnv,
  normaliseBaseUrl,
  startJupyterServer,
  type JupyterServerHandle
} from '../support/jupyterServer';
import { RecordingSink, type SinkCall } from '../support/recordingSink';

jest.setTimeout(120_000);

const RESCAN: SinkCall = ['rescan', 'the event subscription was interrupted', 'events'];

// ---------------------------------------------------------------------------------------------
// A recording sink, bounded waits, requests straight to Jupyter
// ---------------------------------------------------------------------------------------------

/** Poll `check` until it holds; fail naming `what` after `ms`. */
async function eventually(
  check: () => boolean | Promise<boolean>,
  what: () => string,
  ms = 5_000
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms: ${what()}`);
    await new Promise(resolve => setTimeout(resolve, 20));
  }
}

/** Wait until `sink` has seen `expected` (exactly, in order). */
async function expectCalls(sink: RecordingSink, expected: SinkCall[], ms = 5_000): Promise<void> {
  await eventually(
    () => sink.calls.length >= expected.length,
    () => `expected ${JSON.stringify(expected)}, have ${JSON.stringify(sink.calls)}`,
    ms
  );
  expect(sink.calls).toEqual(expected);
}

interface IUpstream {
  readonly address: UpstreamAddress;
  readonly baseUrl: string;
  /** null: the server runs without authentication. */
  readonly token: string | null;
}

/** One request straight to Jupyter (over TCP or its unix socket), body as JSON. */
function call(
  upstream: IUpstream,
  method: string,
  relative: string,
  body?: unknown
): Promise<{ status: number; json: unknown }> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const headers: http.OutgoingHttpHeaders = {};
  if (upstream.token !== null) headers.Authorization = `token ${upstream.token}`;
  if (payload !== undefined) {
    headers['Content-Type'] = 'application/json';
    headers['Content-Length'] = payload.length;
  }
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        ...upstreamConnectOptions(upstream.address),
        method,
        path: `${upstream.baseUrl}${relative}`,
        headers,
        timeout: 10_000
      },
      response => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown = null;
          try {
            json = text === '' ? null : JSON.parse(text);
          } catch {
            json = text;
          }
          resolve({ status: response.statusCode ?? 0, json });
        });
        response.on('error', reject);
      }
    );
    request.on('timeout', () => request.destroy(new Error(`${method} ${relative} timed out`)));
    request.on('error', reject);
    request.end(payload);
  });
}

/** Like {@link call}, failing the test unless the status is one of `ok`. */
async function must(
  upstream: IUpstream,
  method: string,
  relative: string,
  body?: unknown,
  ok: number[] = [200, 201, 204]
): Promise<unknown> {
  const { status, json } = await call(upstream, method, relative, body);
  if (!ok.includes(status)) {
    throw new Error(`${method} ${relative} answered ${status}: ${JSON.stringify(json)}`);
  }
  return json;
}

const NOTEBOOK = {
  type: 'notebook',
  content: { cells: [], metadata: {}, nbformat: 4, nbformat_minor: 5 }
};

function tcpUpstream(server: JupyterServerHandle, token: string | null = server.token): IUpstream {
  return {
    address: { kind: 'tcp', host: '127.0.0.1', port: server.port },
    baseUrl: server.baseUrl,
    token
  };
}

// ---------------------------------------------------------------------------------------------
// Sources under test, and Jupyter on an address of our choosing
// ---------------------------------------------------------------------------------------------

const cleanups: Array<() => Promise<void>> = [];
let scratch: string;

beforeAll(async () => {
  // Short: a unix socket path must stay below ~100 bytes.
  scratch = await realpath(await mkdtemp(join(tmpdir(), 'jev-')));
});

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

function startSource(
  upstream: IUpstream,
  options: { token?: string | null } = {}
): { source: JupyterEventSource; sink: RecordingSink; logs: Array<Record<string, unknown>> } {
  const sink = new RecordingSink();
  const logs: Array<Record<string, unknown>> = [];
  const source = new JupyterEventSource({
    upstream: upstream.address,
    baseUrl: upstream.baseUrl,
    token: options.token === undefined ? upstream.token : options.token,
    sink,
    log: createLogger({
      level: 'debug',
      destination: { write: (line: string) => logs.push(JSON.parse(line)) }
    }),
    backoff: { baseMs: 50, capMs: 500 }
  });
  source.start();
  cleanups.push(() => source.close());
  return { source, sink, logs };
}

/**
 * Wait until the subscription is in place on Jupyter's side too: Jupyter registers its listener
 * just after the handshake, so a change made at the instant the client sees `open` could be
 * missed. A listing emits an (ignored) `get` event; once one arrives, the listener is there.
 */
async function subscribed(source: JupyterEventSource, upstream: IUpstream): Promise<void> {
  await eventually(
    () => source.status().connected,
    () => `not connected: ${JSON.stringify(source.status())}`
  );
  const before = source.status().received;
  await eventually(
    async () => {
      await must(upstream, 'GET', 'api/contents?content=0');
      return source.status().received > before;
    },
    () => `no event arrived: ${JSON.stringify(source.status())}`
  );
}

interface ISpawned {
  stop(): Promise<void>;
  log(): string;
}

/**
 * Start Jupyter Server on `address` (a fixed loopback port, or a unix socket), which
 * startJupyterServer cannot: the restart tests need the same address twice.
 */
async function spawnJupyter(
  upstream: IUpstream,
  rootDir: string,
  stateDir: string,
  extraArgs: string[] = []
): Promise<ISpawned> {
  const state = {
    home: join(stateDir, 'home'),
    config: join(stateDir, 'config'),
    data: join(stateDir, 'data'),
    runtime: join(stateDir, 'runtime')
  };
  for (const dir of Object.values(state)) await mkdir(dir, { recursive: true });
  const where =
    upstream.address.kind === 'unix'
      ? [`--ServerApp.sock=${upstream.address.socketPath}`]
      : [
          `--ServerApp.ip=${upstream.address.host}`,
          `--ServerApp.port=${upstream.address.port}`,
          '--ServerApp.port_retries=0'
        ];
  const child = spawn(
    findVenvPython(),
    [
      '-m',
      'jupyter_server',
      ...where,
      `--ServerApp.root_dir=${rootDir}`,
      `--ServerApp.base_url=${upstream.baseUrl}`,
      `--IdentityProvider.token=${upstream.token ?? ''}`,
      '--ServerApp.open_browser=False',
      '--ServerApp.allow_root=True',
      '--ServerApp.log_level=WARN',
      ...extraArgs
    ],
    { cwd: rootDir, env: isolatedEnv(state), stdio: ['ignore', 'pipe', 'pipe'] }
  );
  const lines: string[] = [];
  const collect = (chunk: Buffer): void => {
    lines.push(...chunk.toString('utf8').split('\n'));
    if (lines.length > 200) lines.splice(0, lines.length - 200);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  let exited = false;
  const exit = new Promise<void>(resolve =>
    child.once('exit', () => {
      exited = true;
      resolve();
    })
  );
  const within = async (ms: number): Promise<boolean> => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>(resolve => {
      timer = setTimeout(() => resolve(false), ms);
    });
    try {
      return await Promise.race([exit.then(() => true), timeout]);
    } finally {
      clearTimeout(timer);
    }
  };
  const stop = async (): Promise<void> => {
    if (exited) return;
    child.kill('SIGTERM');
    if (!(await within(10_000))) {
      child.kill('SIGKILL');
      await within(5_000);
    }
  };
  const log = (): string => lines.join('\n');
  try {
    await eventually(
      async () => {
        if (exited) throw new Error(`Jupyter Server exited:\n${log()}`);
        try {
          return (await call(upstream, 'GET', 'api/status')).status === 200;
        } catch {
          return false;
        }
      },
      () => `Jupyter Server did not start:\n${log()}`,
      60_000
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { stop, log };
}

// ---------------------------------------------------------------------------------------------
// A server with a token, on a loopback port
// ---------------------------------------------------------------------------------------------

describe('a Jupyter Server with a token, on a loopback port', () => {
  let server: JupyterServerHandle;
  let upstream: IUpstream;

  beforeAll(async () => {
    const rootDir = join(scratch, 'token-root');
    await mkdir(rootDir);
    server = await startJupyterServer({ rootDir });
    upstream = tcpUpstream(server);
  });

  afterAll(async () => {
    await server?.stop();
  });

  test('saves, copies, renames and deletes through its REST API reach the sink', async () => {
    const { source, sink } = startSource(upstream);
    await subscribed(source, upstream);
    expect(sink.calls).toEqual([]);

    await must(upstream, 'PUT', 'api/contents/x.ipynb', NOTEBOOK);
    await expectCalls(sink, [['changed', 'x.ipynb', 'events']]);

    // A read changes nothing: after it, the next event is the marker's.
    sink.calls.length = 0;
    await must(upstream, 'GET', 'api/contents/x.ipynb');
    await must(upstream, 'GET', 'api/contents');
    await must(upstream, 'PUT', 'api/contents/marker.txt', {
      type: 'file',
      format: 'text',
      content: 'm'
    });
    await expectCalls(sink, [['changed', 'marker.txt', 'events']]);

    // A copy is a save of the new file, then a copy event (whose path has a leading slash).
    sink.calls.length = 0;
    const copy = (await must(upstream, 'POST', 'api/contents', { copy_from: '/x.ipynb' })) as {
      path: string;
    };
    expect(copy.path).toBe('x-Copy1.ipynb');
    await expectCalls(sink, [
      ['changed', 'x-Copy1.ipynb', 'events'],
      ['changed', 'x-Copy1.ipynb', 'events']
    ]);

    sink.calls.length = 0;
    await must(upstream, 'PUT', 'api/contents/sub', { type: 'directory' });
    await must(upstream, 'PATCH', 'api/contents/x.ipynb', { path: 'sub/y.ipynb' });
    await expectCalls(sink, [
      ['changed', 'sub', 'events'],
      ['renamed', 'x.ipynb', 'sub/y.ipynb', 'events']
    ]);

    sink.calls.length = 0;
    await must(upstream, 'DELETE', 'api/contents/sub/y.ipynb');
    await expectCalls(sink, [['removed', 'sub/y.ipynb', 'events']]);

    expect(source.status()).toMatchObject({ connected: true, reason: null, malformed: 0 });
  });

  test('a chunked upload reports every chunk; an untitled notebook is a save', async () => {
    const { source, sink } = startSource(upstream);
    await subscribed(source, upstream);
    const chunk = (n: number, text: string): Record<string, unknown> => ({
      type: 'file',
      format: 'text',
      content: text,
      chunk: n
    });
    await must(upstream, 'PUT', 'api/contents/big.txt', chunk(1, 'a'));
    await must(upstream, 'PUT', 'api/contents/big.txt', chunk(2, 'b'));
    await must(upstream, 'PUT', 'api/contents/big.txt', chunk(-1, 'c'));
    await expectCalls(sink, [
      ['changed', 'big.txt', 'events'],
      ['changed', 'big.txt', 'events'],
      ['changed', 'big.txt', 'events']
    ]);

    sink.calls.length = 0;
    await must(upstream, 'PUT', 'api/contents/sub2', { type: 'directory' });
    const untitled = (await must(upstream, 'POST', 'api/contents/sub2', { type: 'notebook' })) as {
      path: string;
    };
    await expectCalls(sink, [
      ['changed', 'sub2', 'events'],
      ['changed', untitled.path, 'events']
    ]);
  });

  test('a wrong token is a status and one warning, never an exception', async () => {
    const { source, sink, logs } = startSource(upstream, { token: 'not-the-token' });
    await eventually(
      () => source.status().reason === 'the upstream refused the subscription (403)',
      () => JSON.stringify(source.status())
    );
    // It keeps retrying (slowly) without warning again.
    await new Promise(resolve => setTimeout(resolve, 1_200));
    expect(source.status()).toMatchObject({
      connected: false,
      reason: 'the upstream refused the subscription (403)',
      received: 0
    });
    const warnings = logs.filter(line => line.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(String(warnings[0].msg)).toMatch(/refused the subscription \(403\)/);
    expect(JSON.stringify(logs)).not.toContain('not-the-token');
    expect(
      logs.filter(line => /failed again/.test(String(line.msg))).length
    ).toBeGreaterThanOrEqual(1);
    expect(sink.calls).toEqual([]);
    await source.close();
    expect(source.status()).toMatchObject({ connected: false, reason: 'closed' });
  });
});

// ---------------------------------------------------------------------------------------------
// base_url, no authentication
// ---------------------------------------------------------------------------------------------

describe('a Jupyter Server with base_url /base/', () => {
  let server: JupyterServerHandle;

  beforeAll(async () => {
    const rootDir = join(scratch, 'base-root');
    await mkdir(rootDir);
    server = await startJupyterServer({ rootDir, baseUrl: '/base/' });
  });

  afterAll(async () => {
    await server?.stop();
  });

  test('the subscription lives below the base URL', async () => {
    const upstream = tcpUpstream(server);
    expect(upstream.baseUrl).toBe('/base/');
    const { source, sink } = startSource(upstream);
    await subscribed(source, upstream);
    await must(upstream, 'PUT', 'api/contents/b.ipynb', NOTEBOOK);
    await must(upstream, 'DELETE', 'api/contents/b.ipynb');
    await expectCalls(sink, [
      ['changed', 'b.ipynb', 'events'],
      ['removed', 'b.ipynb', 'events']
    ]);
  });

  test('a base URL given without slashes is the same', async () => {
    const upstream = tcpUpstream(server);
    const { source, sink } = startSource({ ...upstream, baseUrl: 'base' });
    await subscribed(source, upstream);
    await must(upstream, 'PUT', 'api/contents/c.ipynb', NOTEBOOK);
    await expectCalls(sink, [['changed', 'c.ipynb', 'events']]);
  });
});

describe('a Jupyter Server without authentication', () => {
  let server: ISpawned | undefined;
  let upstream: IUpstream;

  beforeAll(async () => {
    const rootDir = join(scratch, 'noauth-root');
    await mkdir(rootDir);
    // startJupyterServer always sets a token (and traitlets refuses a second value).
    upstream = {
      address: { kind: 'tcp', host: '127.0.0.1', port: await freePort() },
      baseUrl: '/',
      token: null
    };
    // Writes without a token need an XSRF cookie; these requests are no browser's.
    server = await spawnJupyter(upstream, rootDir, join(scratch, 'noauth-state'), [
      '--ServerApp.disable_check_xsrf=True'
    ]);
  });

  afterAll(async () => {
    await server?.stop();
  });

  test('subscribes with no token at all', async () => {
    // Really without authentication: a request with no credentials is answered.
    expect((await call(upstream, 'GET', 'api/contents')).status).toBe(200);
    const { source, sink, logs } = startSource(upstream);
    await subscribed(source, upstream);
    await must(upstream, 'PUT', 'api/contents/n.ipynb', NOTEBOOK);
    await expectCalls(sink, [['changed', 'n.ipynb', 'events']]);
    expect(logs.filter(line => line.level === 'warn')).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// A unix socket, and restarts on the same address
// ---------------------------------------------------------------------------------------------

describe.each(['unix', 'tcp'] as const)('Jupyter restarted on the same %s address', kind => {
  let rootDir: string;
  let upstream: IUpstream;
  let servers: ISpawned[];

  beforeAll(async () => {
    rootDir = join(scratch, `${kind}-root`);
    await mkdir(rootDir);
    upstream = {
      address:
        kind === 'unix'
          ? { kind: 'unix', socketPath: join(scratch, 'j.sock') }
          : { kind: 'tcp', host: '127.0.0.1', port: await freePort() },
      baseUrl: normaliseBaseUrl('/r/'),
      token: 'restart-token'
    };
    servers = [];
  });

  afterAll(async () => {
    for (const server of servers) await server.stop();
  });

  test('the source waits for it, reconnects after a restart, rescans, and sees new events', async () => {
    // The upstream starts later than the source.
    const { source, sink } = startSource(upstream);
    await eventually(
      () => /cannot reach the upstream/.test(source.status().reason ?? ''),
      () => JSON.stringify(source.status())
    );
    expect(source.status().connected).toBe(false);

    servers.push(await spawnJupyter(upstream, rootDir, join(scratch, `${kind}-state`)));
    await subscribed(source, upstream);
    // It had not been subscribed since start: events may have been missed.
    await expectCalls(sink, [RESCAN]);

    sink.calls.length = 0;
    await must(upstream, 'PUT', 'api/contents/before.ipynb', NOTEBOOK);
    await expectCalls(sink, [['changed', 'before.ipynb', 'events']]);

    // Stop it: the source notices and says why it is not connected.
    sink.calls.length = 0;
    await servers[0].stop();
    await eventually(
      () => !source.status().connected,
      () => JSON.stringify(source.status())
    );
    await eventually(
      () => /cannot reach the upstream/.test(source.status().reason ?? ''),
      () => JSON.stringify(source.status())
    );

    // A new server on the same address: reconnect, rescan, then new events.
    servers.push(await spawnJupyter(upstream, rootDir, join(scratch, `${kind}-state`)));
    await subscribed(source, upstream);
    await expectCalls(sink, [RESCAN]);
    await must(upstream, 'PATCH', 'api/contents/before.ipynb', { path: 'after.ipynb' });
    await expectCalls(sink, [RESCAN, ['renamed', 'before.ipynb', 'after.ipynb', 'events']]);
    expect(source.status()).toMatchObject({ connected: true, reason: null });
  });
});
