import * as http from 'node:http';
import type * as net from 'node:net';
import { createProxyServer, type ProxyServer } from 'http-proxy-3';
import { httpErrors } from '../http/errorCatalogue';
import { errorBody } from '../http/errors';
import type { Logger } from './logger';
import { describeUpstream, type UpstreamAddress } from './upstream';

/** Network errors that only mean "the Jupyter server is not there": logged quietly. */
const UPSTREAM_DOWN = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ETIMEDOUT',
  'ENOENT',
  'EPIPE',
  'ECONNABORTED'
]);

/** Headers that describe one connection, never copied from the upstream's answer to ours. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'content-length'
]);

/** The body of every "upstream down" answer. */
const UNAVAILABLE_ERROR = httpErrors.upstreamUnavailable(
  'The Jupyter server behind jupyter-store is not reachable'
);

/** The body of the answer when the upstream hung up on a request without answering it. */
const HUNG_UP_ERROR = httpErrors.upstreamClosed(
  'The Jupyter server behind jupyter-store closed the connection without answering'
);

/** Errors of a connection the upstream closed while the request body was still being sent. */
const HUNG_UP = new Set(['EPIPE', 'ECONNRESET']);

/**
 * Passes requests the gateway does not answer itself to the Jupyter Server, HTTP and websockets,
 * unchanged: streamed without buffering, with the browser's Host and Origin kept (Jupyter's own
 * Host, Origin and XSRF checks then see what the browser sent).
 *
 * #### Notes
 * Built on http-proxy-3, whose websocket pass cleans up both sockets when either side goes away.
 * Upstream connections are kept alive and pooled. When the upstream is down, HTTP requests get
 * 503 with a JSON body and websocket upgrades get a bare 503 status line, then the socket is
 * closed.
 */
export class UpstreamProxy {
  constructor(options: UpstreamProxy.IOptions) {
    this._log = options.log;
    this._agent = new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 64 });
    const target =
      options.upstream.kind === 'unix'
        ? { socketPath: options.upstream.socketPath, host: 'localhost', port: 0 }
        : { host: options.upstream.host, port: options.upstream.port, protocol: 'http:' };
    this._proxy = createProxyServer({
      target,
      agent: this._agent,
      ws: true,
      xfwd: true,
      changeOrigin: false,
      // The path must reach Jupyter exactly as the gateway routed it: a proxy that normalised
      // `/x/../api/contents` would let a request past the gateway into Jupyter's own contents API.
      toProxy: true,
      // Jupyter's redirects name the gateway's own host already, since Host is kept.
      autoRewrite: false
    });
    this._description = describeUpstream(options.upstream);
    // Without a listener http-proxy-3 would rethrow; errors are handled per call below.
    this._proxy.on('error', () => undefined);
    this._proxy.on('proxyReq', (proxyRequest, request) => {
      proxyRequest.path = request.url ?? '/';
    });
    this._proxy.on('proxyReqWs', (proxyRequest, request, socket) => {
      proxyRequest.path = request.url ?? '/';
      // Once the upgrade succeeded the socket carries websocket frames: no status line may follow.
      proxyRequest.on('upgrade', () => this._upgraded.add(socket));
    });
    // An upstream answer cut short must cut the client's answer too; piping alone would leave
    // the client waiting forever for the rest.
    this._proxy.on('proxyRes', (proxyResponse, request, response) => {
      this._answered.add(request);
      const after = this._afterAnswers.get(request);
      if (after) {
        this._afterAnswers.delete(request);
        this._relayAfter(proxyResponse, response, after);
        return;
      }
      proxyResponse.once('close', () => {
        if (!proxyResponse.complete && !response.writableEnded) response.destroy();
      });
    });
  }

  /**
   * Proxy one HTTP request whose (small) answer is held back until `after` has run with the
   * upstream's status: the gateway journals a save Jupyter made before the user hears it is
   * done. If `after` fails, the client gets its error as a JSON answer instead.
   */
  webThen(
    request: http.IncomingMessage,
    response: http.ServerResponse,
    after: (status: number) => Promise<void>
  ): void {
    this._afterAnswers.set(request, after);
    this._proxy.web(request, response, { selfHandleResponse: true }, error => {
      this._afterAnswers.delete(request);
      this._failWeb(error, request, response);
    });
  }

  /** Proxy one HTTP request. */
  web(request: http.IncomingMessage, response: http.ServerResponse): void {
    this._proxy.web(request, response, {}, error => this._failWeb(error, request, response));
  }

  /** Proxy one websocket upgrade. */
  ws(request: http.IncomingMessage, socket: net.Socket, head: Buffer): void {
    this._proxy.ws(request, socket, head, {}, error => {
      this._logFailure(error, request);
      if (!socket.destroyed && socket.writable && !this._upgraded.has(socket)) {
        socket.write('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\n');
      }
    });
  }

  /** Close pooled upstream connections; resolves once every one of them has closed. */
  async close(): Promise<void> {
    const sockets = [this._agent.sockets, this._agent.freeSockets].flatMap(lists =>
      Object.values(lists).flatMap(list => list ?? [])
    );
    const closed = sockets.map(
      socket =>
        new Promise<void>(resolve =>
          socket.destroyed ? resolve() : socket.once('close', () => resolve())
        )
    );
    this._agent.destroy();
    this._proxy.close();
    await Promise.all(closed);
  }

  /** The pooled agent, shared with the gateway's own sub-requests to the upstream. */
  get agent(): http.Agent {
    return this._agent;
  }

  /** Open upstream connections, free and busy: for leak checks. */
  upstreamSocketCount(): number {
    let count = 0;
    for (const list of Object.values(this._agent.sockets)) count += list?.length ?? 0;
    for (const list of Object.values(this._agent.freeSockets)) count += list?.length ?? 0;
    return count;
  }

  private _relayAfter(
    proxyResponse: http.IncomingMessage,
    response: http.ServerResponse,
    after: (status: number) => Promise<void>
  ): void {
    const chunks: Buffer[] = [];
    proxyResponse.on('data', (chunk: Buffer) => chunks.push(chunk));
    proxyResponse.once('error', () => response.destroy());
    proxyResponse.once('end', () => {
      const status = proxyResponse.statusCode ?? 502;
      const body = Buffer.concat(chunks);
      after(status).then(
        () => {
          const headers: http.OutgoingHttpHeaders = {};
          for (const [name, value] of Object.entries(proxyResponse.headers)) {
            if (!HOP_BY_HOP.has(name) && value !== undefined) headers[name] = value;
          }
          headers['content-length'] = body.length;
          response.writeHead(status, proxyResponse.statusMessage, headers);
          response.end(body);
        },
        (error: unknown) => {
          const failure = error as { status?: number; message?: string; reason?: string };
          const answer = JSON.stringify({
            message: failure.message ?? String(error),
            reason: failure.reason ?? 'archive unavailable'
          });
          response.writeHead(failure.status ?? 503, {
            'Content-Type': 'application/json',
            'Content-Length': Buffer.byteLength(answer)
          });
          response.end(answer);
        }
      );
    });
  }

  private _failWeb(
    error: Error,
    request: http.IncomingMessage,
    response: http.ServerResponse | net.Socket
  ): void {
    if (!(response instanceof http.ServerResponse)) {
      this._logFailure(error, request);
      return;
    }
    if (this._answered.has(request)) {
      // Jupyter answered before it had read the whole body (a refusal, typically) and hung up:
      // sending the rest of the body then fails, but its answer is already on its way to the
      // client, and it is the answer the client must see, not a 503.
      this._log.debug(
        { method: request.method, code: (error as NodeJS.ErrnoException).code },
        'the Jupyter server answered before reading the whole request'
      );
      return;
    }
    this._logFailure(error, request);
    if (response.headersSent) {
      // The answer was already streaming: cutting it is the only honest signal left.
      response.destroy();
      return;
    }
    // Node's HTTP client drops an answer the upstream sent just before hanging up when sending
    // the rest of the body fails first: say what is known (it hung up), not "not reachable".
    const hungUp = !request.complete && HUNG_UP.has((error as NodeJS.ErrnoException).code ?? '');
    const answer = hungUp ? HUNG_UP_ERROR : UNAVAILABLE_ERROR;
    const body = errorBody(answer);
    response.writeHead(answer.status, {
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(body)
    });
    response.end(body);
  }

  private _logFailure(error: Error, request: http.IncomingMessage): void {
    const code = (error as NodeJS.ErrnoException).code;
    const entry = { upstream: this._description, method: request.method, code };
    if (code !== undefined && UPSTREAM_DOWN.has(code)) {
      this._log.warn(entry, 'Jupyter server unreachable');
    } else {
      this._log.error({ ...entry, err: error.message }, 'proxy error');
    }
  }

  private readonly _log: Logger;
  private readonly _agent: http.Agent;
  private readonly _proxy: ProxyServer;
  private readonly _description: string;
  private readonly _upgraded = new WeakSet<net.Socket>();
  /** Requests whose answer has started to come back from the upstream. */
  private readonly _answered = new WeakSet<http.IncomingMessage>();
  private readonly _afterAnswers = new WeakMap<
    http.IncomingMessage,
    (status: number) => Promise<void>
  >();
}

export namespace UpstreamProxy {
  export interface IOptions {
    upstream: UpstreamAddress;
    log: Logger;
  }
}
