/**
 * Security findings about connections and bodies, against the gateway in-process on real
 * sockets with a fake Jupyter Server behind it (test/support/fakeUpstream): trickled headers
 * are cut, idle keep-alive connections close, websockets outlive those limits, gzip bodies are
 * never inflated, our answers carry Jupyter's nosniff and CSP headers, and an early refusal of
 * the upstream reaches the client with its own status. Every wait is bounded.
 */
import { spawnSync } from 'node:child_process';
import * as http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import WebSocket from 'ws';
import { Gateway } from '../../src/gateway/gateway';
import { createLogger } from '../../src/gateway/logger';
import type { UpstreamAddress } from '../../src/gateway/upstream';
import { FakeUpstream } from '../support/fakeUpstream';
import { CLI } from '../support/gateway';

jest.setTimeout(60_000);

let scratch: string;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'security-connections-'));
});

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

async function startBackend(): Promise<FakeUpstream> {
  const backend = new FakeUpstream();
  cleanups.push(() => backend.close());
  await backend.listen({ port: 0 });
  return backend;
}

async function startGateway(
  upstream: UpstreamAddress,
  timeouts?: Partial<Gateway.ITimeouts>
): Promise<{ gateway: Gateway; port: number }> {
  const dir = await mkdtemp(join(scratch, 'gateway-'));
  const gateway = new Gateway({
    rootDir: await mkdtemp(join(dir, 'root-')),
    jupyterDataDir: await mkdtemp(join(dir, 'data-')),
    upstream,
    log: createLogger({ level: 'silent' }),
    timeouts
  });
  cleanups.push(async () => {
    await gateway.close({ drainTimeoutMs: 100 });
  });
  const { port } = await gateway.listen(0, '127.0.0.1');
  return { gateway, port };
}

interface IReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function send(
  port: number,
  options: { method?: string; path: string; headers?: http.OutgoingHttpHeaders; body?: Buffer }
): Promise<IReply> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'GET',
        path: options.path,
        headers: options.headers,
        agent: false
      },
      response => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks)
          })
        );
      }
    );
    request.on('error', reject);
    request.end(options.body);
  });
}

/** Resolves with how long the socket stayed open, or rejects once `maxMs` passed with it open. */
function closedWithin(socket: net.Socket, maxMs: number): Promise<number> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    if (socket.destroyed) {
      resolve(0);
      return;
    }
    const timer = setTimeout(() => reject(new Error(`still open after ${maxMs} ms`)), maxMs);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(Date.now() - started);
    });
  });
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
    cleanups.push(async () => {
      socket.destroy();
    });
  });
}

describe('connection limits', () => {
  it('ships finite header, request and keep-alive limits', async () => {
    const backend = await startBackend();
    const { gateway } = await startGateway(backend.address!);
    expect(gateway.server.headersTimeout).toBeGreaterThan(0);
    expect(gateway.server.headersTimeout).toBeLessThanOrEqual(60_000);
    expect(gateway.server.requestTimeout).toBeGreaterThan(0);
    expect(gateway.server.keepAliveTimeout).toBeGreaterThan(0);
  });

  it('cuts 40 connections that trickle one header byte every second', async () => {
    const backend = await startBackend();
    const { port } = await startGateway(backend.address!, {
      headersMs: 1500,
      checkIntervalMs: 250
    });
    const sockets = await Promise.all(Array.from({ length: 40 }, () => connect(port)));
    const request = 'GET /api/kernels HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ';
    let sent = 0;
    const trickle = setInterval(() => {
      for (const socket of sockets)
        if (!socket.destroyed) socket.write(request[sent % request.length]);
      sent++;
    }, 1000);
    try {
      const lifetimes = await Promise.all(sockets.map(socket => closedWithin(socket, 8000)));
      expect(Math.max(...lifetimes)).toBeLessThan(8000);
    } finally {
      clearInterval(trickle);
    }
    expect(backend.requests.filter(r => r.url === '/api/kernels')).toHaveLength(0);
  });

  it('closes an idle keep-alive connection', async () => {
    const backend = await startBackend();
    const { port } = await startGateway(backend.address!, { keepAliveMs: 500 });
    const socket = await connect(port);
    socket.write('GET /api/echo HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await new Promise(resolve => socket.once('data', resolve));
    await closedWithin(socket, 5000);
  });

  it('leaves an open websocket alone after every limit has passed', async () => {
    const backend = await startBackend();
    const { port } = await startGateway(backend.address!, {
      headersMs: 500,
      requestMs: 700,
      keepAliveMs: 300,
      checkIntervalMs: 100
    });
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/kernels/k/channels`);
    cleanups.push(async () => ws.terminate());
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    await new Promise(resolve => setTimeout(resolve, 2500));
    expect(ws.readyState).toBe(WebSocket.OPEN);
    const echoed = new Promise<string>(resolve =>
      ws.once('message', data => resolve(String(data)))
    );
    ws.send('still here');
    expect(await echoed).toBe('still here');
  });
});

describe('request bodies', () => {
  it('refuses a gzip body with 415 instead of inflating it', async () => {
    const backend = await startBackend();
    const { port } = await startGateway(backend.address!);
    // 200 MiB of zeros compress to about 200 KiB.
    const bomb = gzipSync(Buffer.alloc(200 * 1024 * 1024), { level: 9 });
    expect(bomb.length).toBeLessThan(256 * 1024);
    const before = process.memoryUsage().arrayBuffers;
    const reply = await send(port, {
      method: 'PUT',
      path: '/api/contents/bomb.txt',
      headers: {
        authorization: 'token good',
        'content-type': 'application/json',
        'content-encoding': 'gzip',
        'content-length': bomb.length
      },
      body: bomb
    });
    expect(reply.status).toBe(415);
    expect(JSON.parse(reply.body.toString('utf8'))).toEqual({
      message: 'Unsupported request body encoding',
      reason: 'encoding.unsupported'
    });
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 * 1024 * 1024);
  });
});

describe('answer headers', () => {
  it("sends Jupyter's nosniff and API CSP on answers of ours, errors included", async () => {
    const backend = await startBackend();
    const { port } = await startGateway(backend.address!);
    for (const path of ['/api/contents', '/api/contents/missing.ipynb']) {
      const reply = await send(port, { path, headers: { authorization: 'token good' } });
      expect(reply.headers['x-content-type-options']).toBe('nosniff');
      expect(reply.headers['content-security-policy']).toBe(
        "frame-ancestors 'self'; report-uri /api/security/csp-report; default-src 'none'"
      );
    }
  });
});

describe("the upstream's own answer", () => {
  /**
   * A Jupyter stand-in that answers `answer` (or nothing) as soon as it has the request headers,
   * then hangs up after `hangUpAfterMs` without reading the body the client is still sending.
   */
  async function refusingUpstream(answer: string | null, hangUpAfterMs: number): Promise<number> {
    const upstream = net.createServer(socket => {
      let head = '';
      socket.on('data', (chunk: Buffer) => {
        if (head.includes('\r\n\r\n')) return;
        head += chunk.toString('latin1');
        if (!head.includes('\r\n\r\n')) return;
        if (answer !== null) socket.write(answer);
        setTimeout(() => socket.destroy(), hangUpAfterMs);
      });
      socket.on('error', () => undefined);
    });
    await new Promise<void>(resolve => upstream.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise(resolve => upstream.close(() => resolve())));
    return (upstream.address() as net.AddressInfo).port;
  }

  async function upload(port: number): Promise<{ status: number; body: string }> {
    const reply = await send(port, {
      method: 'POST',
      path: '/api/kernels',
      headers: { 'content-type': 'application/octet-stream' },
      body: Buffer.alloc(32 * 1024 * 1024, 1)
    });
    return { status: reply.status, body: reply.body.toString('utf8') };
  }

  it('relays a 403 sent before the request body was read, not a 503', async () => {
    const refusal = JSON.stringify({ message: 'Forbidden', reason: null });
    const upstreamPort = await refusingUpstream(
      'HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n' +
        `Content-Length: ${refusal.length}\r\nConnection: close\r\n\r\n${refusal}`,
      50
    );
    const { port } = await startGateway({ kind: 'tcp', host: '127.0.0.1', port: upstreamPort });
    for (let attempt = 0; attempt < 5; attempt++) {
      expect({ attempt, ...(await upload(port)) }).toEqual({
        attempt,
        status: 403,
        body: refusal
      });
    }
  });

  it('says the upstream hung up (502), not that it is unreachable, when no answer came', async () => {
    const upstreamPort = await refusingUpstream(null, 0);
    const { port } = await startGateway({ kind: 'tcp', host: '127.0.0.1', port: upstreamPort });
    const reply = await upload(port);
    expect(reply.status).toBe(502);
    expect(JSON.parse(reply.body)).toEqual({
      message: 'The Jupyter server behind jupyter-store closed the connection without answering',
      reason: 'upstream closed'
    });
  });
});

describe('servers the product starts', () => {
  it('has no unauthenticated contents server any more: `jupyter-store contents` is unknown', () => {
    const result = spawnSync(process.execPath, [CLI, 'contents', '--port', '0'], {
      encoding: 'utf8',
      timeout: 20_000
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("unknown command 'contents'");
    expect(result.stdout).not.toContain('http://');
  });
});
