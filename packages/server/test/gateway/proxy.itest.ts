/**
 * The gateway in-process against real sockets: a fake Jupyter Server (test/support/fakeUpstream)
 * behind it on a loopback port or a unix socket, node:http and `ws` clients in front. Covers
 * what the proxy must leave unchanged, streaming, websockets, an absent or dying upstream,
 * socket leaks, which paths the gateway owns, the authentication of its own routes, graceful
 * shutdown and the secrecy of tokens in logs. Every wait is bounded.
 */
import * as http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { Gateway } from '../../src/gateway/gateway';
import { createLogger, type LogLevel } from '../../src/gateway/logger';
import type { UpstreamAddress } from '../../src/gateway/upstream';
import { FakeUpstream, patternBytes, sha256, type IEcho } from '../support/fakeUpstream';

type Kind = 'tcp' | 'unix';

// Each test waits on its own, shorter bounds; this is the backstop.
jest.setTimeout(30_000);

/** The subprotocol Jupyter's kernel websocket offers first. */
const KERNEL_PROTOCOL = 'v1.kernel.websocket.jupyter.org';

// ---------------------------------------------------------------------------------------------
// Bounded waiting
// ---------------------------------------------------------------------------------------------

/** `promise`, or a rejection naming `what` after `ms`. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Poll `check` every 10 ms until it holds; fails naming `what` (and the last value) after `ms`. */
async function waitUntil(
  check: () => boolean | Promise<boolean>,
  ms: number,
  what: string | (() => string)
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${ms} ms: ${typeof what === 'string' ? what : what()}`);
    }
    await new Promise(resolve => setTimeout(resolve, 10));
  }
}

function connectionCount(server: http.Server): Promise<number> {
  return new Promise((resolve, reject) =>
    server.getConnections((error, count) => (error ? reject(error) : resolve(count)))
  );
}

// ---------------------------------------------------------------------------------------------
// Set-up and tear-down
// ---------------------------------------------------------------------------------------------

let scratch: string;
let counter = 0;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'gateway-proxy-'));
});

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** A fresh directory below the scratch directory. */
async function freshDir(prefix: string): Promise<string> {
  return mkdtemp(join(scratch, `${prefix}-${++counter}-`));
}

async function startBackend(kind: Kind, baseUrl = '/'): Promise<FakeUpstream> {
  const backend = new FakeUpstream({ baseUrl });
  cleanups.push(() => backend.close());
  if (kind === 'unix') {
    await backend.listen({ socketPath: join(await freshDir('sock'), 'upstream.sock') });
  } else {
    await backend.listen({ port: 0 });
  }
  return backend;
}

interface IGatewayHandle {
  readonly gateway: Gateway;
  readonly port: number;
  /** Every line the gateway logged (only when `logLevel` was given). */
  readonly logs: string[];
  /** A keep-alive agent for this gateway's clients, destroyed after the test. */
  readonly agent: http.Agent;
}

async function startGateway(
  upstream: UpstreamAddress,
  options: { baseUrl?: string; logLevel?: LogLevel } = {}
): Promise<IGatewayHandle> {
  const logs: string[] = [];
  const log = options.logLevel
    ? createLogger({ level: options.logLevel, destination: { write: line => logs.push(line) } })
    : createLogger({ level: 'silent' });
  const dir = await freshDir('gateway');
  const gateway = new Gateway({
    rootDir: await mkdtemp(join(dir, 'root-')),
    jupyterDataDir: await mkdtemp(join(dir, 'data-')),
    baseUrl: options.baseUrl,
    upstream,
    log
  });
  const agent = new http.Agent({ keepAlive: true });
  cleanups.push(async () => {
    agent.destroy();
    await gateway.close({ drainTimeoutMs: 100 });
    await gateway.manager.close();
  });
  const { port } = await gateway.listen(0, '127.0.0.1');
  return { gateway, port, logs, agent };
}

async function setUp(
  kind: Kind,
  options: { baseUrl?: string; logLevel?: LogLevel } = {}
): Promise<IGatewayHandle & { backend: FakeUpstream }> {
  const backend = await startBackend(kind, options.baseUrl);
  if (!backend.address) throw new Error('the backend is not listening');
  const handle = await startGateway(backend.address, options);
  return { ...handle, backend };
}

// ---------------------------------------------------------------------------------------------
// Clients
// ---------------------------------------------------------------------------------------------

interface IReply {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
  json<T = Record<string, unknown>>(): T;
}

interface IRequest {
  method?: string;
  path: string;
  headers?: http.OutgoingHttpHeaders;
  /** Sent whole; an array is sent as separate writes (chunked, no Content-Length). */
  body?: Buffer | string | Buffer[];
  agent?: http.Agent | false;
}

function send(port: number, options: IRequest): Promise<IReply> {
  return new Promise((resolve, reject) => {
    const headers = { ...options.headers };
    if (options.body !== undefined && !Array.isArray(options.body)) {
      headers['content-length'] = Buffer.byteLength(options.body);
    }
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'GET',
        path: options.path,
        headers,
        agent: options.agent ?? false
      },
      response => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('aborted', () => reject(new Error('response aborted')));
        response.on('end', () => {
          const body = Buffer.concat(chunks);
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body,
            json: <T>() => JSON.parse(body.toString('utf8')) as T
          });
        });
      }
    );
    request.on('error', reject);
    if (Array.isArray(options.body)) {
      for (const part of options.body) request.write(part);
      request.end();
    } else {
      request.end(options.body);
    }
  });
}

/** The backend's echo of a proxied request. */
async function echoOf(port: number, options: IRequest): Promise<IEcho> {
  const reply = await send(port, options);
  expect({ path: options.path, status: reply.status, backend: reply.headers['x-backend'] }).toEqual(
    { path: options.path, status: 200, backend: 'fake' }
  );
  return reply.json<IEcho>();
}

function openWebSocket(
  port: number,
  path: string,
  options: { protocols?: string[]; headers?: http.OutgoingHttpHeaders } = {}
): Promise<WebSocket> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`, options.protocols ?? [], {
    headers: options.headers as Record<string, string>
  });
  cleanups.push(async () => ws.terminate());
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
    ws.once('unexpected-response', (_request, response) =>
      reject(new Error(`upgrade refused with ${response.statusCode}`))
    );
  });
}

/**
 * Attempt an upgrade that the gateway should refuse: resolves with the status it sent and a
 * promise that settles when the gateway has closed the connection (without the client closing
 * it).
 */
function refusedWebSocket(
  port: number,
  path: string
): Promise<{ status: number; closedByServer: Promise<void> }> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`);
  cleanups.push(async () => ws.terminate());
  return new Promise((resolve, reject) => {
    ws.once('open', () => reject(new Error('the upgrade unexpectedly succeeded')));
    ws.once('error', reject);
    ws.once('unexpected-response', (request, response) => {
      const socket = request.socket ?? response.socket;
      const closedByServer = new Promise<void>(done => {
        if (socket.destroyed) done();
        else socket.once('close', () => done());
      });
      response.resume();
      resolve({ status: response.statusCode ?? 0, closedByServer });
    });
  });
}

function nextMessage(ws: WebSocket): Promise<{ data: Buffer; isBinary: boolean }> {
  return within(
    new Promise(resolve =>
      ws.once('message', (data, isBinary) => resolve({ data: data as Buffer, isBinary }))
    ),
    5000,
    'a websocket message'
  );
}

function wsClosed(ws: WebSocket): Promise<{ code: number; reason: string }> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.resolve({ code: 0, reason: '' });
  return new Promise(resolve =>
    ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() }))
  );
}

/** Start a GET and report its progress, for the streaming and failure tests. */
function startGet(
  port: number,
  path: string,
  agent: http.Agent | false = false
): {
  response: Promise<http.IncomingMessage>;
  /** 'complete' when the body ended normally, 'aborted' when the connection was cut. */
  outcome: Promise<'complete' | 'aborted'>;
  /** The body received so far. */
  received: () => Buffer;
} {
  const chunks: Buffer[] = [];
  let settle!: (outcome: 'complete' | 'aborted') => void;
  const outcome = new Promise<'complete' | 'aborted'>(resolve => (settle = resolve));
  const response = new Promise<http.IncomingMessage>((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path, agent }, res => {
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => settle('complete'));
      res.on('close', () => settle(res.complete ? 'complete' : 'aborted'));
      res.on('error', () => settle('aborted'));
      resolve(res);
    });
    cleanups.push(async () => void request.destroy());
    request.on('error', error => {
      settle('aborted');
      reject(error);
    });
  });
  response.catch(() => undefined);
  return { response, outcome, received: () => Buffer.concat(chunks) };
}

// ---------------------------------------------------------------------------------------------
// Proxied traffic, over TCP and over a unix socket
// ---------------------------------------------------------------------------------------------

describe.each<Kind>(['tcp', 'unix'])('proxied traffic, upstream over %s', kind => {
  test('HTTP requests reach the backend unchanged: method, raw path, query, headers, Host and Origin, plus X-Forwarded-*', async () => {
    const { port } = await setUp(kind);
    const host = `localhost:${port}`;
    const origin = `http://localhost:${port}`;
    const paths = [
      '/files/a%2Fb/c',
      '/files/with%20space/and%20more.txt',
      '/files/%C3%A9t%C3%A9/%E2%9C%93%F0%9F%93%93.ipynb',
      '/files/a;b=c/d,e/~f!$&()*+@:x',
      '/lab/tree/x?a=1&b=%2F&c=%20x&d=&e=%E2%9C%93&a=2&f=a+b',
      '/api/kernels/%7Bid%7D?x=%25'
    ];
    for (const method of ['GET', 'DELETE', 'PATCH', 'OPTIONS', 'PROPFIND']) {
      for (const path of paths) {
        const echo = await echoOf(port, {
          method,
          path,
          headers: {
            host,
            origin,
            'x-custom': 'Value With  Spaces',
            authorization: 'token not-for-the-gateway',
            cookie: 'a=1; b=2'
          }
        });
        expect(echo).toMatchObject({ method, url: path });
        expect(echo.headers).toMatchObject({
          host,
          origin,
          'x-custom': 'Value With  Spaces',
          authorization: 'token not-for-the-gateway',
          cookie: 'a=1; b=2',
          'x-forwarded-for': expect.stringMatching(/^(::ffff:)?127\.0\.0\.1$/),
          'x-forwarded-proto': 'http',
          'x-forwarded-port': String(port)
        });
      }
    }
  });

  test('a request body reaches the backend byte for byte and is never parsed', async () => {
    const { port } = await setUp(kind);
    // 5 MB of binary labelled as JSON: no body parser (nor its size limit) may touch it.
    const binary = patternBytes(5 * 1024 * 1024, 'upload');
    const echo = await echoOf(port, {
      method: 'POST',
      path: '/api/upload',
      headers: { 'content-type': 'application/json' },
      body: binary
    });
    expect(echo).toMatchObject({ bodyLength: binary.length, bodySha256: sha256(binary) });

    // Chunked, without Content-Length.
    const parts = [binary.subarray(0, 1000), binary.subarray(1000, 70_000), Buffer.from([0, 255])];
    const chunked = await echoOf(port, { method: 'PUT', path: '/api/upload', body: parts });
    expect(chunked.headers['transfer-encoding']).toBe('chunked');
    expect(chunked.bodySha256).toBe(sha256(Buffer.concat(parts)));

    for (const malformed of ['{"a": 1,', '', 'null', '\u00e9\u00e9', '{"__proto__": {"x": 1}}']) {
      const json = await echoOf(port, {
        method: 'PATCH',
        path: '/api/sessions/s1',
        headers: { 'content-type': 'application/json; charset=utf-8' },
        body: malformed
      });
      expect(Buffer.from(json.body ?? '', 'base64').toString('utf8')).toBe(malformed);
      expect(json.headers['content-type']).toBe('application/json; charset=utf-8');
    }
  });

  test('a large response comes back unchanged', async () => {
    const { port } = await setUp(kind);
    const reply = await send(port, { path: '/test/large?size=5242880&chunk=65536' });
    expect(reply.status).toBe(200);
    expect(reply.body.length).toBe(5 * 1024 * 1024);
    expect(sha256(reply.body)).toBe(reply.headers['x-body-sha256']);
  });

  test('responses are streamed: the first chunk reaches the client while the backend still waits', async () => {
    const { port, backend } = await setUp(kind);
    const key = `stream-${kind}`;
    const { response, outcome, received } = startGet(port, `/test/stream?key=${key}`);
    expect((await within(response, 5000, 'response headers')).statusCode).toBe(200);
    // The backend writes chunk-2 only once released, and we release it only after chunk-1
    // arrived: a buffering proxy would deadlock here and time out.
    await waitUntil(() => received().includes('chunk-1'), 5000, 'chunk-1 before the end');
    expect(received().toString()).toBe('chunk-1\n');
    backend.release(key);
    expect(await within(outcome, 5000, 'the end of the stream')).toBe('complete');
    expect(received().toString()).toBe('chunk-1\nchunk-2\n');
  });

  test('websockets echo text and binary frames and negotiate the subprotocol end to end', async () => {
    const { port, backend } = await setUp(kind);
    const host = `localhost:${port}`;
    const origin = `http://localhost:${port}`;
    const ws = await openWebSocket(port, '/api/kernels/k%201/channels?session_id=s', {
      protocols: [KERNEL_PROTOCOL, 'other'],
      headers: { host, origin }
    });
    expect(ws.protocol).toBe(KERNEL_PROTOCOL);
    const upgrade = backend.requests.find(r => r.upgrade);
    expect(upgrade).toMatchObject({ url: '/api/kernels/k%201/channels?session_id=s' });
    expect(upgrade?.headers).toMatchObject({
      host,
      origin,
      // ws sends the list joined by ',' without a space; it arrives as sent.
      'sec-websocket-protocol': `${KERNEL_PROTOCOL},other`
    });

    ws.send('hello ✓');
    expect(await nextMessage(ws)).toEqual({ data: Buffer.from('hello ✓'), isBinary: false });
    const binary = patternBytes(200_000, 'ws');
    ws.send(binary);
    const echoed = await nextMessage(ws);
    expect(echoed.isBinary).toBe(true);
    expect(sha256(echoed.data)).toBe(sha256(binary));

    // Without a subprotocol, none is negotiated.
    const plain = await openWebSocket(port, '/terminals/websocket/1');
    expect(plain.protocol).toBe('');
    plain.close();
    ws.close();
  });

  test('closing a websocket on either side closes the other side', async () => {
    const { port, backend, gateway } = await setUp(kind);
    const fromClient = await openWebSocket(port, '/ws/a');
    await waitUntil(() => backend.wss.clients.size === 1, 2000, 'the backend websocket');
    const [backendWs] = [...backend.wss.clients];
    const backendClosed = wsClosed(backendWs);
    fromClient.close(1000, 'done');
    expect(await within(backendClosed, 3000, 'the backend side to close')).toEqual({
      code: 1000,
      reason: 'done'
    });

    const fromBackend = await openWebSocket(port, '/ws/b');
    const clientClosed = wsClosed(fromBackend);
    fromBackend.send('close-from-backend');
    expect(await within(clientClosed, 3000, 'the client side to close')).toEqual({
      code: 4001,
      reason: 'bye'
    });

    await waitUntil(
      async () => (await connectionCount(gateway.server)) === 0 && backend.openSockets() === 0,
      3000,
      'both sides of both websockets to be gone'
    );
  });

  test('with the upstream down, HTTP gets 503 JSON, upgrades a 503 status, and the gateway’s own routes 503', async () => {
    const { port, backend } = await setUp(kind);
    await backend.stop();

    for (const method of ['GET', 'POST']) {
      const reply = await send(port, {
        method,
        path: '/lab?x=1',
        body: method === 'POST' ? '{}' : undefined
      });
      expect(reply.status).toBe(503);
      expect(reply.headers['content-type']).toBe('application/json');
      expect(reply.json()).toEqual({ message: expect.any(String), reason: 'upstream unavailable' });
    }

    const refused = await refusedWebSocket(port, '/api/kernels/k/channels');
    expect(refused.status).toBe(503);
    await within(refused.closedByServer, 3000, 'the gateway to close the refused websocket');

    // Our own route cannot ask the upstream who the caller is.
    const own = await send(port, {
      path: '/api/contents',
      headers: { authorization: 'token good' }
    });
    expect(own.status).toBe(503);
    expect(own.headers['content-type']).toMatch(/^application\/json/);
    expect(own.json()).toEqual({ message: expect.any(String), reason: 'upstream unavailable' });

    // ... and the failure was not cached: once the upstream is back, the same request works.
    await backend.restart();
    const back = await send(port, {
      path: '/api/contents',
      headers: { authorization: 'token good' }
    });
    expect(back.status).toBe(200);
  });

  test('an upstream that was never there (closed port, missing socket) gets 503 too', async () => {
    const upstream: UpstreamAddress =
      kind === 'unix'
        ? { kind: 'unix', socketPath: join(await freshDir('nosock'), 'missing.sock') }
        : { kind: 'tcp', host: '127.0.0.1', port: await closedPort() };
    const { port } = await startGateway(upstream);
    const reply = await send(port, { path: '/tree' });
    expect(reply.status).toBe(503);
    expect(reply.json()).toMatchObject({ reason: 'upstream unavailable' });
    expect((await refusedWebSocket(port, '/ws')).status).toBe(503);
  });

  test('when the upstream dies mid-response, the client response is aborted and no socket remains', async () => {
    const { port, backend, gateway } = await setUp(kind);
    const { response, outcome, received } = startGet(port, '/test/die?after=65536');
    const res = await within(response, 5000, 'response headers');
    expect(res.statusCode).toBe(200);
    expect(await within(outcome, 3000, 'the client response to be cut, not hang')).toBe('aborted');
    expect(received().length).toBeLessThan(1024 * 1024);
    await waitUntil(
      async () =>
        (await connectionCount(gateway.server)) === 0 &&
        gateway.proxy.upstreamSocketCount() === 0 &&
        backend.openSockets() === 0,
      3000,
      'every socket of the cut exchange to close'
    );
  });

  test('no sockets leak across 20 failures, 50 websocket cycles and 200 requests', async () => {
    const { port, backend, gateway, agent } = await setUp(kind);

    await backend.stop();
    for (let i = 0; i < 10; i++) {
      expect((await send(port, { path: `/down/${i}`, agent })).status).toBe(503);
      expect((await refusedWebSocket(port, `/down/ws/${i}`)).status).toBe(503);
    }
    await backend.restart();

    for (let i = 0; i < 50; i++) {
      const ws = await openWebSocket(port, `/ws/${i}`);
      ws.send(`m${i}`);
      expect((await nextMessage(ws)).data.toString()).toBe(`m${i}`);
      const closed = wsClosed(ws);
      if (i % 2) ws.close();
      else ws.send('close-from-backend');
      await within(closed, 3000, `websocket ${i} to close`);
    }

    // Last, so that the upstream pool is not empty when the gateway closes.
    for (let batch = 0; batch < 10; batch++) {
      const replies = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          send(port, {
            method: i % 2 ? 'POST' : 'GET',
            path: `/echo/${batch}/${i}`,
            body: i % 2 ? `body ${i}` : undefined,
            agent
          })
        )
      );
      expect(replies.map(r => r.status)).toEqual(new Array(20).fill(200));
    }

    agent.destroy();
    const snapshot = async () => ({
      gatewayConnections: await connectionCount(gateway.server),
      backendSockets: backend.openSockets(),
      backendBusy: backend.busySockets(),
      backendWebsockets: backend.wss.clients.size,
      pooled: gateway.proxy.upstreamSocketCount()
    });
    let last = await snapshot();
    await waitUntil(
      async () => {
        last = await snapshot();
        return (
          last.gatewayConnections === 0 &&
          last.backendBusy === 0 &&
          last.backendWebsockets === 0 &&
          last.backendSockets === last.pooled
        );
      },
      5000,
      () => `connections to settle; last state ${JSON.stringify(last)}`
    );
    // What is left upstream is the idle pool, no larger than the client's concurrency.
    expect(last.pooled).toBeGreaterThan(0);
    expect(last.pooled).toBeLessThanOrEqual(20);

    await gateway.close();
    await waitUntil(
      () => gateway.proxy.upstreamSocketCount() === 0 && backend.openSockets() === 0,
      1000,
      'the upstream pool to be closed on both sides'
    );
  });
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>(resolve => server.close(() => resolve()));
  return port;
}

// ---------------------------------------------------------------------------------------------
// What the gateway owns
// ---------------------------------------------------------------------------------------------

describe('ownership of paths', () => {
  test('{base}api/contents and below are answered by the gateway; look-alikes reach the backend unchanged', async () => {
    const { port, backend } = await setUp('tcp');
    const auth = { authorization: 'token good' };
    for (const path of ['/api/contents', '/api/contents/', '/api/contents?content=0']) {
      const reply = await send(port, { path, headers: auth });
      expect({ path, status: reply.status }).toEqual({ path, status: 200 });
      expect(reply.json()).toMatchObject({ type: 'directory', path: '' });
    }
    const missing = await send(port, { path: '/api/contents/x', headers: auth });
    expect(missing.status).toBe(404);
    expect(missing.json()).toMatchObject({ message: expect.stringContaining('x') });
    const unauthenticated = await send(port, { method: 'DELETE', path: '/api/contents/x' });
    expect(unauthenticated.status).toBe(403);
    expect(backend.requests).toEqual([]);

    for (const path of ['/api/contentsX', '/API/contents', '/api%2Fcontents', '//api/contents']) {
      const echo = await echoOf(port, { path, headers: auth });
      expect(echo.url).toBe(path);
    }
  });

  test('a path that normalises to {base}api/contents is either ours or reaches the backend verbatim', async () => {
    // Jupyter (tornado) routes on the raw path, so it would answer none of these with its
    // contents API; if the proxy resolved them on the way, writes would reach Jupyter's own
    // contents manager behind the gateway's back.
    const { port, backend } = await setUp('tcp');
    const paths = [
      '/x/../api/contents/a.txt',
      '/x/%2e%2e/api/contents/a.txt',
      '/./api/contents/a.txt',
      '/%2e/api/contents/a.txt',
      '/api\\contents/a.txt'
    ];
    const rewritten: string[] = [];
    for (const path of paths) {
      backend.requests.length = 0;
      const reply = await send(port, { method: 'PUT', path, body: '{"type":"file"}' });
      const seen = backend.requests.map(r => r.url);
      if (reply.headers['x-backend'] === 'fake' && seen.join() !== path) {
        rewritten.push(`${path} -> ${seen.join()}`);
      }
    }
    expect(rewritten).toEqual([]);
  });

  test('a websocket upgrade on an owned path is refused with 400', async () => {
    const { port, backend } = await setUp('tcp');
    for (const path of ['/api/contents', '/api/contents/x?token=good']) {
      const refused = await refusedWebSocket(port, path);
      expect(refused.status).toBe(400);
      await within(refused.closedByServer, 3000, 'the refused upgrade to be closed');
    }
    expect(backend.requests).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Authentication of the gateway's own routes
// ---------------------------------------------------------------------------------------------

describe('authentication of the gateway’s own routes', () => {
  const file = (name: string) => `/api/contents/${name}`;
  const saveBody = JSON.stringify({ type: 'file', format: 'text', content: 'hello' });

  test('no credentials or a wrong token get 403 JSON; a good token in the header or the query gets 200', async () => {
    const { port } = await setUp('tcp');
    const cases: Array<[string, http.OutgoingHttpHeaders, number]> = [
      ['/api/contents', {}, 403],
      ['/api/contents', { authorization: 'token good' }, 200],
      ['/api/contents', { authorization: 'Bearer good' }, 200],
      ['/api/contents?token=good', {}, 200],
      ['/api/contents', { authorization: 'token bad' }, 403],
      ['/api/contents?token=bad', {}, 403],
      ['/api/contents', { cookie: 'login=no' }, 403]
    ];
    for (const [path, headers, status] of cases) {
      const reply = await send(port, { path, headers });
      expect({ path, headers, status: reply.status }).toEqual({ path, headers, status });
      expect(reply.headers['content-type']).toMatch(/^application\/json/);
      if (status === 403) {
        expect(reply.json()).toEqual({ message: expect.any(String), reason: 'not authenticated' });
      }
    }
  });

  test('a login cookie authenticates GET; a cookie PUT needs the _xsrf cookie and a matching X-XSRFToken', async () => {
    const { port } = await setUp('tcp');
    expect(
      (await send(port, { path: '/api/contents', headers: { cookie: 'login=ok' } })).status
    ).toBe(200);

    const missing = await send(port, {
      method: 'PUT',
      path: file('a.txt'),
      headers: { cookie: 'login=ok', 'content-type': 'application/json' },
      body: saveBody
    });
    expect(missing.status).toBe(403);
    expect(missing.json()).toMatchObject({ message: "'_xsrf' argument missing from POST" });

    const mismatch = await send(port, {
      method: 'PUT',
      path: file('a.txt'),
      headers: { cookie: 'login=ok; _xsrf=abc123', 'x-xsrftoken': 'abc124' },
      body: saveBody
    });
    expect(mismatch.status).toBe(403);
    expect(mismatch.json()).toMatchObject({ message: 'XSRF cookie does not match POST argument' });

    const saved = await send(port, {
      method: 'PUT',
      path: file('a.txt'),
      headers: { cookie: 'login=ok; _xsrf=abc123', 'x-xsrftoken': 'abc123' },
      body: saveBody
    });
    expect(saved.status).toBe(201);
    expect(saved.json()).toMatchObject({ name: 'a.txt', type: 'file' });

    // The same, from the same origin as the browser's Host.
    const sameOrigin = await send(port, {
      method: 'PUT',
      path: file('b.txt'),
      headers: {
        cookie: 'login=ok; _xsrf=abc123',
        'x-xsrftoken': 'abc123',
        origin: `http://127.0.0.1:${port}`
      },
      body: saveBody
    });
    expect(sameOrigin.status).toBe(201);
  });

  test('a foreign Origin is refused with 404 for a cookie PUT but allowed for a token PUT', async () => {
    const { port } = await setUp('tcp');
    const foreign = await send(port, {
      method: 'PUT',
      path: file('c.txt'),
      headers: {
        cookie: 'login=ok; _xsrf=abc123',
        'x-xsrftoken': 'abc123',
        origin: 'http://evil.example'
      },
      body: saveBody
    });
    expect(foreign.status).toBe(404);
    expect(foreign.headers['content-type']).toMatch(/^application\/json/);

    const token = await send(port, {
      method: 'PUT',
      path: file('c.txt'),
      headers: { authorization: 'token good', origin: 'http://evil.example' },
      body: saveBody
    });
    expect(token.status).toBe(201);
  });

  test('a Host that is not local is refused with 403', async () => {
    const { port, backend } = await setUp('tcp');
    for (const host of ['evil.example', `evil.example:${port}`, '10.0.0.1']) {
      const reply = await send(port, {
        path: '/api/contents',
        headers: { host, authorization: 'token good' }
      });
      expect({ host, status: reply.status }).toEqual({ host, status: 403 });
    }
    expect(backend.meHits).toBe(0);
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) {
      const reply = await send(port, {
        path: '/api/contents',
        headers: { host, authorization: 'token good' }
      });
      expect({ host, status: reply.status }).toEqual({ host, status: 200 });
    }
  });

  test('api/me answers are cached; a failing upstream is asked again', async () => {
    const { port, backend } = await setUp('tcp');
    const ask = (headers: http.OutgoingHttpHeaders) =>
      send(port, { path: '/api/contents', headers });

    for (let i = 0; i < 10; i++)
      expect((await ask({ authorization: 'token good' })).status).toBe(200);
    // The token's question, and the anonymous one showing that the upstream requires a token.
    expect(backend.meHits).toBe(2);
    const concurrent = await Promise.all(
      Array.from({ length: 10 }, () => ask({ cookie: 'login=ok' }))
    );
    expect(concurrent.map(r => r.status)).toEqual(new Array(10).fill(200));
    expect(backend.meHits).toBe(3);
    // Refusals are cached as well.
    for (let i = 0; i < 3; i++)
      expect((await ask({ authorization: 'token bad' })).status).toBe(403);
    // The wrong token (asked once), then the empty cookie: the anonymous question, cached.
    expect(backend.meHits).toBe(4);

    backend.meStatus = 500;
    const credential = { cookie: 'login=ok; other=1' };
    for (let i = 0; i < 3; i++) {
      const reply = await ask(credential);
      expect(reply.status).toBe(503);
      expect(reply.json()).toMatchObject({ reason: 'upstream unavailable' });
    }
    expect(backend.meHits).toBe(7);
    backend.meStatus = undefined;
    expect((await ask(credential)).status).toBe(200);
    expect((await ask(credential)).status).toBe(200);
    expect(backend.meHits).toBe(8);
  });
});

// ---------------------------------------------------------------------------------------------
// Graceful shutdown
// ---------------------------------------------------------------------------------------------

describe('graceful close', () => {
  /** Resolves with the outcome of a fresh TCP connection attempt. */
  function tryConnect(port: number): Promise<string> {
    return new Promise(resolve => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve('connected');
      });
      socket.once('error', error => resolve((error as NodeJS.ErrnoException).code ?? 'error'));
    });
  }

  test('close() refuses new connections at once, lets the in-flight request finish, closes websockets, then runs the hooks in order', async () => {
    const { port, backend, gateway } = await setUp('tcp');
    const events: string[] = [];
    gateway.server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) =>
      response.once('finish', () => events.push(`sent ${request.url}`))
    );
    gateway.onShutdown(async () => {
      events.push(`hook 1 start, ${await connectionCount(gateway.server)} connections`);
      await new Promise(resolve => setTimeout(resolve, 20));
      events.push('hook 1 end');
    });
    gateway.onShutdown(async () => {
      events.push('hook 2');
    });

    const ws = await openWebSocket(port, '/api/kernels/k/channels');
    const wsGone = wsClosed(ws);
    // A client that does not keep its connection (see the keep-alive test below).
    const inFlight = send(port, { path: '/test/hold?key=close', agent: false });
    await within(backend.arrived('close'), 3000, 'the slow request to reach the backend');

    const closing = gateway.close().then(() => events.push('closed'));
    expect(await tryConnect(port)).toBe('ECONNREFUSED');
    await within(wsGone, 3000, 'open websockets to be closed');
    await waitUntil(() => backend.wss.clients.size === 0, 3000, 'the backend websocket to close');
    expect(events).toEqual([]);

    backend.release('close');
    const reply = await within(inFlight, 3000, 'the in-flight request to finish');
    expect(reply.status).toBe(200);
    expect(reply.json()).toEqual({ held: 'close' });
    await within(closing, 1000, 'close() to resolve once the request finished');
    expect(events).toEqual([
      'sent /test/hold?key=close',
      'hook 1 start, 0 connections',
      'hook 1 end',
      'hook 2',
      'closed'
    ]);
  });

  test('close() does not wait for a keep-alive connection to time out once its request is done', async () => {
    const { port, backend, gateway, agent } = await setUp('tcp');
    const inFlight = send(port, { path: '/test/hold?key=keepalive', agent });
    await within(backend.arrived('keepalive'), 3000, 'the slow request to reach the backend');
    const closing = gateway.close();
    backend.release('keepalive');
    const reply = await within(inFlight, 3000, 'the in-flight request to finish');
    expect(reply.status).toBe(200);
    // A browser keeps its connection open: the drain is over when the request is, not when
    // the server's keep-alive timeout (5 s) finally closes the idle connection.
    await within(closing, 1000, 'close() to resolve once the request finished');
  });

  test('once close() has resolved, no upstream connection is left', async () => {
    const { port, backend, gateway, agent } = await setUp('tcp');
    const replies = await Promise.all(
      Array.from({ length: 5 }, (_, i) => send(port, { path: `/echo/${i}`, agent }))
    );
    expect(replies.map(r => r.status)).toEqual([200, 200, 200, 200, 200]);
    agent.destroy();
    await waitUntil(
      async () => (await connectionCount(gateway.server)) === 0,
      3000,
      'the client connections to close'
    );
    expect(gateway.proxy.upstreamSocketCount()).toBeGreaterThan(0);
    await gateway.close();
    expect(gateway.proxy.upstreamSocketCount()).toBe(0);
    await waitUntil(() => backend.openSockets() === 0, 1000, 'the backend to see the pool closed');
  });

  test('close() with a short drainTimeoutMs cuts a never-ending request and still resolves', async () => {
    const { port, backend, gateway } = await setUp('tcp');
    let hookRan = false;
    gateway.onShutdown(async () => {
      hookRan = true;
    });
    const { response, outcome } = startGet(port, '/test/hang');
    expect((await within(response, 3000, 'response headers')).statusCode).toBe(200);
    const started = Date.now();
    await within(gateway.close({ drainTimeoutMs: 200 }), 3000, 'close() to resolve');
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    expect(await within(outcome, 3000, 'the hanging response to be cut')).toBe('aborted');
    expect(hookRan).toBe(true);
    await waitUntil(() => backend.openSockets() === 0, 3000, 'the upstream side to be closed');
  });
});

// ---------------------------------------------------------------------------------------------
// Logs
// ---------------------------------------------------------------------------------------------

describe('logs', () => {
  test('log lines never contain the token, from the query or the Authorization header', async () => {
    const { port, backend, logs } = await setUp('tcp', { logLevel: 'debug' });
    const requests: IRequest[] = [
      { path: '/lab?token=good' },
      { path: '/lab/tree?a=1&token=good&token=good' },
      { path: '/lab?TOKEN=good' },
      { path: '/lab', headers: { authorization: 'token good' } },
      { path: '/api/contents?token=good' },
      { path: '/api/contents?_xsrf=good&token=good' },
      { path: '/api/contents', headers: { authorization: 'token good' } },
      { path: '/api/contents/missing?token=good' },
      { path: '/api/contents', headers: { cookie: 'login=ok; token=good' } }
    ];
    for (const request of requests) await send(port, request);
    await backend.stop();
    await send(port, { path: '/lab?token=good', headers: { authorization: 'token good' } });
    await send(port, { path: '/api/contents?token=good' });
    await refusedWebSocket(port, '/api/kernels/k/channels?token=good');

    expect(logs.length).toBeGreaterThanOrEqual(requests.length);
    expect(logs.filter(line => line.includes('token=<redacted>')).length).toBeGreaterThan(0);
    expect(logs.filter(line => /good/.test(line))).toEqual([]);
  });
  test('the access log names every request by its full path, with secrets scrubbed', async () => {
    const { port, logs } = await setUp('tcp', { baseUrl: '/user/alice/', logLevel: 'debug' });
    const paths = [
      '/user/alice/api/contents?token=good',
      '/user/alice/api/contents/missing?token=good',
      '/user/alice/api/contents/x?_xsrf=good',
      '/user/alice/lab?token=good'
    ];
    for (const path of paths) await send(port, { path });
    const access = logs
      .map(line => JSON.parse(line) as { url?: string; by?: string })
      .filter(entry => entry.by !== undefined)
      .map(entry => `${entry.by} ${entry.url}`);
    expect(access).toEqual([
      'gateway /user/alice/api/contents?token=<redacted>',
      'gateway /user/alice/api/contents/missing?token=<redacted>',
      'gateway /user/alice/api/contents/x?_xsrf=<redacted>',
      'upstream /user/alice/lab?token=<redacted>'
    ]);
  });
});

// ---------------------------------------------------------------------------------------------
// base_url
// ---------------------------------------------------------------------------------------------

describe('base_url /user/alice/', () => {
  test('the owned route and proxied routes, HTTP and websocket, work below the base URL', async () => {
    const { port, backend } = await setUp('tcp', { baseUrl: '/user/alice/' });
    const auth = { authorization: 'token good' };

    const listing = await send(port, { path: '/user/alice/api/contents', headers: auth });
    expect(listing.status).toBe(200);
    expect(listing.json()).toMatchObject({ type: 'directory' });
    // The token's question and the anonymous one.
    expect(backend.meHits).toBe(2);
    const saved = await send(port, {
      method: 'PUT',
      path: '/user/alice/api/contents/n.txt',
      headers: auth,
      body: JSON.stringify({ type: 'file', format: 'text', content: 'x' })
    });
    expect(saved.status).toBe(201);
    expect(backend.requests).toEqual([]);

    for (const path of ['/user/alice/lab?reset', '/user/alice/api/kernels', '/api/contents']) {
      expect((await echoOf(port, { path, headers: auth })).url).toBe(path);
    }
    const ws = await openWebSocket(port, '/user/alice/api/kernels/k/channels', {
      protocols: [KERNEL_PROTOCOL]
    });
    expect(ws.protocol).toBe(KERNEL_PROTOCOL);
    ws.send('ping');
    expect((await nextMessage(ws)).data.toString()).toBe('ping');
    ws.close();
    expect((await refusedWebSocket(port, '/user/alice/api/contents')).status).toBe(400);
  });
});
