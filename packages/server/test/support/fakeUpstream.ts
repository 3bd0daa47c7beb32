/**
 * A small stand-in for the Jupyter Server behind the gateway, for the proxy's integration tests:
 * one node:http server (HTTP and websockets on the same listener, on a loopback TCP port or a
 * unix socket) whose answers make what the gateway did to a request visible.
 *
 * - `GET {base}api/me`: 200 `{"identity":{"username":"u"},"permissions":…}` for
 *   `Authorization: token good` or the cookie `login=ok` (for anyone with `anonymous`, as a
 *   Jupyter without a token), else 403; `permissions` holds the asked actions (`?permissions=`)
 *   that `authorize` allows (all by default, as Jupyter's default authorizer). Hits are counted,
 *   and `meStatus` forces another status.
 * - `{base}test/stream?key=K`: writes `chunk-1`, waits for `release(K)`, writes `chunk-2`, ends.
 * - `{base}test/hold?key=K`: answers 200 only once `release(K)` is called.
 * - `{base}test/hang`: sends headers and a first chunk, then never finishes.
 * - `{base}test/large?size=N&chunk=C&delayMs=D`: N deterministic bytes in chunks of C, D ms
 *   apart; the SHA-256 of the whole body is in `x-body-sha256`.
 * - `{base}test/die?after=N`: promises 1 MiB, sends N bytes, then destroys its socket.
 * - anything else: a JSON echo of method, url, headers and the body (length, SHA-256, and the
 *   bytes themselves in base64 when small).
 * - websockets: echo text and binary frames; the first offered subprotocol is accepted; the text
 *   message `close-from-backend` makes the backend close with code 4001.
 */
import { createHash } from 'node:crypto';
import * as http from 'node:http';
import type * as net from 'node:net';
import { WebSocketServer } from 'ws';
import type { UpstreamAddress } from '../../src/gateway/upstream';

/** A request as the backend received it. */
export interface IRecordedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly upgrade: boolean;
}

/** The JSON body of the echo route. */
export interface IEcho {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  bodyLength: number;
  bodySha256: string;
  /** The body in base64, when at most 64 KiB. */
  body?: string;
}

/** The identity the fake `api/me` returns. */
export const FAKE_IDENTITY = { username: 'u' };

/** Deterministic, incompressible-looking bytes. */
export function patternBytes(size: number, seed = 'jupyter-store'): Buffer {
  const out = Buffer.alloc(size);
  let block = createHash('sha256').update(seed).digest();
  for (let offset = 0; offset < size; offset += block.length) {
    block.copy(out, offset, 0, Math.min(block.length, size - offset));
    block = createHash('sha256').update(block).digest();
  }
  return out;
}

export function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

export class FakeUpstream {
  constructor(options: { baseUrl?: string } = {}) {
    this.baseUrl = options.baseUrl ?? '/';
    this.server = http.createServer((request, response) => this._handle(request, response));
    this.server.on('connection', (socket: net.Socket) => {
      this._sockets.add(socket);
      socket.once('close', () => this._sockets.delete(socket));
    });
    this.wss = new WebSocketServer({
      noServer: true,
      handleProtocols: protocols => protocols.values().next().value ?? false
    });
    this.wss.on('connection', ws => {
      ws.on('message', (data, isBinary) => {
        if (!isBinary && data.toString() === 'close-from-backend') ws.close(4001, 'bye');
        else ws.send(data, { binary: isBinary });
      });
    });
    this.server.on('upgrade', (request: http.IncomingMessage, socket: net.Socket, head) => {
      this.requests.push({
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        upgrade: true
      });
      this.wss.handleUpgrade(request, socket, head, ws => this.wss.emit('connection', ws, request));
    });
  }

  readonly baseUrl: string;
  readonly server: http.Server;
  readonly wss: WebSocketServer;
  /** Every request received, except `api/me`. */
  readonly requests: IRecordedRequest[] = [];
  /** How many times `api/me` was asked. */
  meHits = 0;
  /** When set, `api/me` answers this status (with an empty JSON object) whatever the caller. */
  meStatus: number | undefined;
  /** Answer `api/me` for callers without credentials too (a server with no token). */
  anonymous = false;
  /** Which asked actions `api/me` grants; every one by default. */
  authorize: (resource: string, action: string) => boolean = () => true;
  /** Where the backend listens (set by `listen`). */
  address: UpstreamAddress | undefined;

  /** Listen on a loopback port (0: any), or on a unix socket. */
  async listen(where: { port: number } | { socketPath: string }): Promise<UpstreamAddress> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      const done = (): void => {
        this.server.off('error', reject);
        resolve();
      };
      if ('socketPath' in where) this.server.listen(where.socketPath, done);
      else this.server.listen(where.port, '127.0.0.1', done);
    });
    this.address =
      'socketPath' in where
        ? { kind: 'unix', socketPath: where.socketPath }
        : { kind: 'tcp', host: '127.0.0.1', port: (this.server.address() as net.AddressInfo).port };
    return this.address;
  }

  /** Listen again where the backend listened before `stop()`. */
  restart(): Promise<UpstreamAddress> {
    const address = this.address;
    if (!address) throw new Error('the backend never listened');
    return this.listen(
      address.kind === 'unix' ? { socketPath: address.socketPath } : { port: address.port }
    );
  }

  /** Stop listening and cut every connection and websocket; the backend can `restart()`. */
  async stop(): Promise<void> {
    for (const ws of this.wss.clients) ws.terminate();
    const closed = new Promise<void>(resolve => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    for (const socket of this._sockets) socket.destroy();
    await closed;
  }

  /** Stop for good. */
  async close(): Promise<void> {
    if (this.server.listening) await this.stop();
    await new Promise<void>(resolve => this.wss.close(() => resolve()));
    for (const key of this._signals.keys()) this.release(key);
  }

  /** Open connections (HTTP, idle or busy, and websockets). */
  openSockets(): number {
    return this._sockets.size;
  }

  /** Connections with an HTTP request in progress. */
  busySockets(): number {
    return this._busy.size;
  }

  /** Let a held request (`stream`, `hold`) go on. */
  release(key: string): void {
    this._signal(key).resolve();
  }

  /** Resolves when a request for `{base}test/<route>?key=K` has arrived. */
  arrived(key: string): Promise<void> {
    return this._signal(`arrived:${key}`).promise;
  }

  private _signal(key: string): { promise: Promise<void>; resolve: () => void } {
    let signal = this._signals.get(key);
    if (!signal) {
      let resolve!: () => void;
      const promise = new Promise<void>(r => (resolve = r));
      signal = { promise, resolve };
      this._signals.set(key, signal);
    }
    return signal;
  }

  private _handle(request: http.IncomingMessage, response: http.ServerResponse): void {
    const socket = request.socket;
    this._busy.add(socket);
    response.once('close', () => this._busy.delete(socket));
    const url = new URL(request.url ?? '/', 'http://backend.invalid');
    const route = url.pathname.startsWith(this.baseUrl)
      ? url.pathname.slice(this.baseUrl.length)
      : '';
    if (request.method === 'GET' && route === 'api/me') {
      this._me(request, response);
      return;
    }
    this.requests.push({
      method: request.method ?? '',
      url: request.url ?? '',
      headers: request.headers,
      upgrade: false
    });
    const key = url.searchParams.get('key') ?? '';
    if (key) this._signal(`arrived:${key}`).resolve();
    switch (route) {
      case 'test/stream':
        response.writeHead(200, { 'Content-Type': 'text/plain' });
        response.write('chunk-1\n');
        void this._signal(key).promise.then(() => response.end('chunk-2\n'));
        return;
      case 'test/hold':
        void this._signal(key).promise.then(() => {
          response.writeHead(200, { 'Content-Type': 'application/json' });
          response.end(JSON.stringify({ held: key }));
        });
        return;
      case 'test/hang':
        response.writeHead(200, { 'Content-Type': 'text/plain' });
        response.write('started\n');
        return;
      case 'test/large':
        void this._large(url.searchParams, response);
        return;
      case 'test/die': {
        const after = Number(url.searchParams.get('after') ?? '65536');
        response.writeHead(200, {
          'Content-Type': 'application/octet-stream',
          'Content-Length': 1024 * 1024
        });
        response.write(patternBytes(after), () => setTimeout(() => socket.destroy(), 20));
        return;
      }
      default:
        this._echo(request, response);
    }
  }

  private _me(request: http.IncomingMessage, response: http.ServerResponse): void {
    this.meHits++;
    const send = (status: number, body: unknown): void => {
      response.writeHead(status, { 'Content-Type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    if (this.meStatus !== undefined) {
      send(this.meStatus, {});
      return;
    }
    const cookies = (request.headers.cookie ?? '').split(';').map(c => c.trim());
    const ok =
      this.anonymous ||
      request.headers.authorization === 'token good' ||
      cookies.includes('login=ok');
    if (!ok) {
      send(403, { message: 'Forbidden', reason: null });
      return;
    }
    const asked = new URL(request.url ?? '/', 'http://backend.invalid').searchParams.get(
      'permissions'
    );
    const permissions: Record<string, string[]> = {};
    for (const [resource, actions] of Object.entries(
      JSON.parse(asked || '{}') as Record<string, string[]>
    )) {
      permissions[resource] = actions.filter(action => this.authorize(resource, action));
    }
    send(200, { identity: FAKE_IDENTITY, permissions });
  }

  private _echo(request: http.IncomingMessage, response: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const echo: IEcho = {
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        bodyLength: body.length,
        bodySha256: sha256(body),
        body: body.length <= 64 * 1024 ? body.toString('base64') : undefined
      };
      response.writeHead(200, { 'Content-Type': 'application/json', 'X-Backend': 'fake' });
      response.end(JSON.stringify(echo));
    });
  }

  private async _large(query: URLSearchParams, response: http.ServerResponse): Promise<void> {
    const size = Number(query.get('size') ?? '1048576');
    const chunk = Number(query.get('chunk') ?? '65536');
    const delayMs = Number(query.get('delayMs') ?? '0');
    const body = patternBytes(size);
    response.writeHead(200, {
      'Content-Type': 'application/octet-stream',
      'X-Body-Sha256': sha256(body)
    });
    for (let offset = 0; offset < size && !response.destroyed; offset += chunk) {
      if (!response.write(body.subarray(offset, offset + chunk))) {
        await new Promise<void>(resolve => {
          const done = (): void => {
            response.off('drain', done);
            response.off('close', done);
            resolve();
          };
          response.on('drain', done);
          response.on('close', done);
        });
      }
      if (delayMs > 0) await new Promise(resolve => setTimeout(resolve, delayMs));
    }
    response.end();
  }

  private readonly _sockets = new Set<net.Socket>();
  private readonly _busy = new Set<net.Socket>();
  private readonly _signals = new Map<string, { promise: Promise<void>; resolve: () => void }>();
}
