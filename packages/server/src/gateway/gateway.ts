import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type * as net from 'node:net';
import express, { type Express, type RequestHandler } from 'express';
import { createNotary, normalizeBaseUrl } from '../app';
import { ContentsManager } from '../contents/manager';
import { contentsApi } from '../contents/routes';
import { jupyterDataDir } from '../contents/trust';
import { httpErrors } from '../http/errorCatalogue';
import { sendError } from '../http/errors';
import { requirePageAuth } from '../pages/pageAuth';
import { assemble, type ISurface } from './assemble';
import {
  Authenticator,
  DEFAULT_REQUEST_CHECKS,
  requireJupyterAuth,
  type IRequestChecks
} from './auth';
import { logRequest, type Logger } from './logger';
import type { ContentsBackend } from './contentsBackend';
import { UpstreamProxy } from './proxy';
import type { UpstreamAddress } from './upstream';

/**
 * The one front door: answers its surfaces itself (the contents API, and the store API and the
 * clone pages once `startGateway` adds them), behind Jupyter's own authentication, and passes
 * everything else, HTTP and websockets, to the Jupyter Server behind it.
 *
 * #### Notes
 * Requests are dispatched on the raw path before express sees them, so proxied traffic is never
 * parsed, buffered or rewritten. A path is ours when it is one of {@link Gateway.ownedPrefixes}
 * or lies below one, compared case-sensitively on the still-encoded path exactly as tornado
 * routes: whatever Jupyter would treat as its contents API, we answer.
 */
export class Gateway {
  constructor(options: Gateway.IOptions) {
    this.baseUrl = normalizeBaseUrl(options.baseUrl ?? '/');
    this.log = options.log;
    this.manager =
      options.manager ??
      new ContentsManager({
        rootDir: options.rootDir,
        notary: createNotary(options.jupyterDataDir ?? jupyterDataDir()),
        log: message => this.log.warn(message),
        ...options.contents
      });
    this.proxy = new UpstreamProxy({ upstream: options.upstream, log: this.log });
    this.authenticator = new Authenticator({
      upstream: options.upstream,
      baseUrl: this.baseUrl,
      ttlMs: options.authTtlMs,
      agent: this.proxy.agent,
      log: this.log
    });
    this.checks = { ...DEFAULT_REQUEST_CHECKS, ...options.checks };
    this.requireAuth = requireJupyterAuth(this.authenticator, this.checks);
    this._requirePageAuth = requirePageAuth({
      authenticator: this.authenticator,
      checks: this.checks,
      baseUrl: this.baseUrl
    });
    this.app = express();
    this.app.disable('x-powered-by');
    this.app.set('etag', false);
    this.app.set('case sensitive routing', true);
    this.app.set('strict routing', true);
    this.contentsBackend = options.contentsBackend ?? 'node';
    this._contentsPrefix = `${this.baseUrl}api/contents`;
    if (this.contentsBackend === 'node') {
      this.serve(contentsApi({ manager: this.manager, baseUrl: this.baseUrl }));
    }
    const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
    this._apiCsp = `frame-ancestors 'self'; report-uri ${this.baseUrl}api/security/csp-report; default-src 'none'`;
    this.server = http.createServer(
      {
        headersTimeout: timeouts.headersMs,
        requestTimeout: timeouts.requestMs,
        keepAliveTimeout: timeouts.keepAliveMs,
        connectionsCheckingInterval: timeouts.checkIntervalMs
      },
      (request, response) => this._dispatch(request, response)
    );
    this.server.on('upgrade', (request: http.IncomingMessage, socket: net.Socket, head: Buffer) =>
      this._upgrade(request, socket, head)
    );
  }

  /** Jupyter's base_url, normalised to start and end with `/`. */
  readonly baseUrl: string;
  /** The express application holding the gateway's own routes. */
  readonly app: Express;
  /** The HTTP server: own routes, proxied requests and websocket upgrades. */
  readonly server: http.Server;
  /**
   * The contents manager behind `{base}api/contents` with the `node` backend; with `jupyter` it
   * still serves the store API's own writes (clones).
   */
  readonly manager: ContentsManager;
  /** Who answers `{base}api/contents`: ours, or Python's behind the proxy. */
  readonly contentsBackend: ContentsBackend;
  /** Asks the upstream who a caller is. */
  readonly authenticator: Authenticator;
  /** Middleware guarding an API route as Jupyter guards its API handlers. */
  readonly requireAuth: RequestHandler;
  /** The Host, Origin and XSRF settings in force (public routes make their own checks with them). */
  readonly checks: IRequestChecks;
  /** Passes other requests to the upstream. */
  readonly proxy: UpstreamProxy;
  readonly log: Logger;

  /** Path prefixes (below base_url, still URL-encoded) that the gateway answers itself. */
  get ownedPrefixes(): readonly string[] {
    return this._ownedPrefixes;
  }

  /**
   * Serve a surface of ours at `{base}<surface.prefix>` (see `gateway/assemble.ts`): its routes
   * behind Jupyter's auth, an API's for every request, a page's login redirect for the pages
   * that need a permission, each route asking its own permission.
   */
  serve(surface: ISurface): void {
    const prefix = `${this.baseUrl}${surface.prefix.replace(/^\/+|\/+$/g, '')}`;
    this._ownedPrefixes.push(prefix);
    const authenticate = surface.kind === 'api' ? this.requireAuth : this._requirePageAuth;
    this.app.use(prefix, assemble(surface, { authenticate, log: this.log }));
  }

  /**
   * Register work to finish before the gateway closes (the archive queue's flush, for example).
   * Hooks run after requests have drained, in registration order.
   */
  onShutdown(hook: () => Promise<void>): void {
    this._shutdownHooks.push(hook);
  }

  /**
   * With the `jupyter` backend: run `hook` with the API path of every save Jupyter answered
   * with success (`PUT api/contents/<path>`), before the answer goes back to the client. The
   * archive journals the written file there, so a save reported as done is never lost.
   */
  addRelayedSaveHook(hook: (apiPath: string) => Promise<void>): void {
    this._relayedSaveHooks.push(hook);
  }

  /**
   * Call `listener` after each authenticated request that the gateway answered itself, as
   * Jupyter records `last_activity` for its API requests (not with `no_track_activity` in the
   * query). Requests passed to the upstream are not reported: the upstream counts those itself.
   */
  onActivity(listener: () => void): void {
    this._activityListeners.push(listener);
  }

  /** Start listening; resolves with the bound address. */
  listen(port: number, host: string): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      const onError = (error: Error): void => reject(error);
      this.server.once('error', onError);
      this.server.listen(port, host, () => {
        this.server.off('error', onError);
        resolve(this.server.address() as AddressInfo);
      });
    });
  }

  /**
   * Shut down gracefully: stop accepting, let requests in flight finish (at most `drainTimeoutMs`,
   * then cut them), close websockets, run the shutdown hooks, close upstream connections and the
   * contents manager (its signature database).
   */
  async close(options: { drainTimeoutMs?: number } = {}): Promise<void> {
    if (this._closing) return this._closing;
    this._closing = (async () => {
      const closed = new Promise<void>(resolve => this.server.close(() => resolve()));
      this.server.closeIdleConnections();
      // A keep-alive connection whose request finishes during the drain becomes idle only then.
      for (const response of this._inFlight) {
        response.shouldKeepAlive = false;
        response.once('finish', () => setImmediate(() => this.server.closeIdleConnections()));
      }
      for (const socket of this._upgradedSockets) socket.destroy();
      const drainTimeoutMs = options.drainTimeoutMs ?? 10_000;
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>(resolve => {
        timer = setTimeout(() => resolve('timeout'), drainTimeoutMs);
      });
      if ((await Promise.race([closed, timedOut])) === 'timeout') {
        this.log.warn({ drainTimeoutMs }, 'requests still running at shutdown were cut');
        this.server.closeAllConnections();
        await closed;
      }
      clearTimeout(timer);
      for (const hook of this._shutdownHooks) {
        try {
          await hook();
        } catch (error) {
          this.log.error({ err: error }, 'a shutdown task failed');
        }
      }
      await this.proxy.close();
      await this.manager.close();
    })();
    return this._closing;
  }

  /** Is this raw request path one of ours? */
  owns(rawPath: string): boolean {
    return this._ownedPrefixes.some(
      prefix => rawPath === prefix || rawPath.startsWith(`${prefix}/`)
    );
  }

  private _dispatch(request: http.IncomingMessage, response: http.ServerResponse): void {
    const startedAt = process.hrtime.bigint();
    // Taken now: express shortens request.url below a mount point.
    const url = request.url ?? '/';
    const rawPath = url.split('?', 1)[0];
    const ours = this.owns(rawPath);
    this._inFlight.add(response);
    if (this._closing) response.shouldKeepAlive = false;
    response.once('close', () => this._inFlight.delete(response));
    response.once('finish', () =>
      logRequest(
        this.log,
        request.method,
        url,
        response.statusCode,
        startedAt,
        ours ? 'gateway' : 'upstream'
      )
    );
    if (ours) {
      // Jupyter's API headers on every answer of ours; HTML pages set their own policy.
      response.setHeader('X-Content-Type-Options', 'nosniff');
      response.setHeader('Content-Security-Policy', this._apiCsp);
      if (this._activityListeners.length) {
        response.once('finish', () => this._reportActivity(request as express.Request, url));
      }
      // Reached when no route of ours answered: a JSON 404, never express's HTML page.
      this.app(request as express.Request, response as express.Response, () =>
        sendError(response as express.Response, httpErrors.noSuchRoute('Not Found'))
      );
    } else if (
      this.contentsBackend === 'jupyter' &&
      request.method === 'PUT' &&
      rawPath.startsWith(`${this._contentsPrefix}/`) &&
      this._relayedSaveHooks.length > 0
    ) {
      const apiPath = decodeApiPath(rawPath.slice(this._contentsPrefix.length + 1));
      this.proxy.webThen(request, response, async status => {
        if (status < 200 || status >= 300 || apiPath === undefined) return;
        for (const hook of this._relayedSaveHooks) await hook(apiPath);
      });
    } else this.proxy.web(request, response);
  }

  private _reportActivity(request: express.Request, url: string): void {
    if (!request.jupyterAuth) return;
    if (new URL(url, 'http://gateway.invalid').searchParams.has('no_track_activity')) return;
    for (const listener of this._activityListeners) listener();
  }

  private _upgrade(request: http.IncomingMessage, socket: net.Socket, head: Buffer): void {
    this._upgradedSockets.add(socket);
    socket.once('close', () => this._upgradedSockets.delete(socket));
    const rawPath = (request.url ?? '/').split('?', 1)[0];
    if (this.owns(rawPath) || this._closing) {
      socket.end(
        this._closing
          ? 'HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\n'
          : 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n'
      );
      return;
    }
    this.proxy.ws(request, socket, head);
  }

  private readonly _apiCsp: string;
  private readonly _ownedPrefixes: string[] = [];
  private readonly _contentsPrefix: string;
  private readonly _relayedSaveHooks: Array<(apiPath: string) => Promise<void>> = [];
  private readonly _activityListeners: Array<() => void> = [];
  private readonly _shutdownHooks: Array<() => Promise<void>> = [];
  private readonly _upgradedSockets = new Set<net.Socket>();
  private readonly _inFlight = new Set<http.ServerResponse>();
  private _closing: Promise<void> | undefined;
  private readonly _requirePageAuth: RequestHandler;
}

export namespace Gateway {
  export interface IOptions {
    /** The directory served, shared with the Jupyter Server behind. */
    rootDir: string;
    /** Jupyter's base_url, shared with the Jupyter Server behind; default `/`. */
    baseUrl?: string;
    /** Where the Jupyter Server listens. */
    upstream: UpstreamAddress;
    /** Host, Origin and XSRF settings, as the Jupyter Server behind has them. */
    checks?: Partial<IRequestChecks>;
    log: Logger;
    /** How long an authentication answer is reused; default 5 s. */
    authTtlMs?: number;
    /** The Jupyter data directory holding the notary's secret and database. */
    jupyterDataDir?: string;
    /** Further contents-manager settings. */
    contents?: Partial<Omit<ContentsManager.IOptions, 'rootDir' | 'notary'>>;
    /** A ready contents manager, instead of one built from the options. */
    manager?: ContentsManager;
    /** Who answers `{base}api/contents`; default `node` (ours). */
    contentsBackend?: ContentsBackend;
    /** Connection limits; default {@link DEFAULT_TIMEOUTS}. */
    timeouts?: Partial<ITimeouts>;
  }

  /** How long a client may take, in milliseconds (see {@link DEFAULT_TIMEOUTS}). */
  export interface ITimeouts {
    /** To send the request line and every header. */
    headersMs: number;
    /** To send the whole request, body included (the answer is not limited). */
    requestMs: number;
    /** An idle keep-alive connection stays open this long between requests. */
    keepAliveMs: number;
    /** How often the header and request limits are checked. */
    checkIntervalMs: number;
  }
}

/**
 * Connection limits. A client that trickles its headers is cut after 30 s (Node's check runs
 * every 5 s, so within 35 s); a request body must arrive within 10 minutes (a 512 MiB upload
 * at under 1 MB/s; Lab uploads large files in 1 MiB chunks, each its own request); idle
 * keep-alive connections close after 65 s, longer than the 60 s idle limit of common reverse
 * proxies so that a proxy never reuses a connection the gateway is closing. Websockets are not
 * affected: once upgraded, a connection leaves the HTTP server's accounting.
 */
export const DEFAULT_TIMEOUTS: Gateway.ITimeouts = {
  headersMs: 30_000,
  requestMs: 600_000,
  keepAliveMs: 65_000,
  checkIntervalMs: 5_000
};

/** A contents API path from the URL, as tornado decodes it; undefined when it is not UTF-8. */
function decodeApiPath(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw).replace(/^\/+|\/+$/g, '');
  } catch {
    return undefined;
  }
}
