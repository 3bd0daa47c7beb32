import { createHash } from 'node:crypto';
import type * as http from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { sendError } from '../http/errors';
import type { Logger } from './logger';
import { checkHost, checkOrigin, checkXsrf, requestOrigin, submittedXsrfToken } from './security';
import { requestUpstream, type UpstreamAddress } from './upstream';

/** Who the upstream says the caller is, and how they proved it. */
export interface IAuthentication {
  /** The `identity` object of Jupyter's `GET api/me`. */
  readonly identity: Readonly<Record<string, unknown>>;
  /**
   * True when a valid token (query `token` or `Authorization: token|bearer`) authenticated the
   * request. Jupyter exempts such requests from its XSRF and Origin checks, and so do we.
   */
  readonly tokenAuthenticated: boolean;
}

/** Jupyter's pattern for a token in the Authorization header (`re.match`, any case). */
const AUTHORIZATION_TOKEN = /^(?:token|bearer)\s+(.+)/i;

/**
 * Authenticates callers of the gateway's own routes by asking the Jupyter Server behind it, so
 * that every identity provider Jupyter supports (token, password, JupyterHub OAuth) works
 * unchanged.
 *
 * #### Notes
 * A token is tried alone first, then the cookie, mirroring Jupyter's `IdentityProvider` (a token
 * wins over a cookie, and only a valid token makes the request "token-authenticated"). Answers are
 * cached for `ttlMs`, keyed by a SHA-256 of the credential and the Host, so the cache never holds
 * a credential in clear. Upstream failures are never cached.
 */
export class Authenticator {
  constructor(options: Authenticator.IOptions) {
    this._upstream = options.upstream;
    this._baseUrl = options.baseUrl;
    this._ttlMs = options.ttlMs ?? 5000;
    this._maxEntries = options.maxEntries ?? 1000;
    this._log = options.log;
    this._agent = options.agent;
  }

  /**
   * Authenticate a request.
   *
   * @returns the authentication, or null when the upstream refuses every credential offered.
   * @throws UpstreamAuthUnavailable when the upstream cannot be asked.
   */
  async authenticate(request: http.IncomingMessage): Promise<IAuthentication | null> {
    const host = request.headers.host ?? '';
    const token = requestToken(request);
    if (token !== undefined) {
      const identity = await this._askCached('token', host, token, {
        authorization: `token ${token}`
      });
      if (identity) return { identity, tokenAuthenticated: true };
    }
    const cookie = request.headers.cookie ?? '';
    const identity = await this._askCached('cookie', host, cookie, cookie ? { cookie } : {});
    return identity ? { identity, tokenAuthenticated: false } : null;
  }

  /** Forget every cached answer (for example after the upstream restarted). */
  clear(): void {
    this._cache.clear();
  }

  private _askCached(
    kind: string,
    host: string,
    credential: string,
    headers: http.OutgoingHttpHeaders
  ): Promise<Readonly<Record<string, unknown>> | null> {
    const key = createHash('sha256').update(`${kind}\0${host}\0${credential}`).digest('base64url');
    const now = Date.now();
    const cached = this._cache.get(key);
    if (cached && cached.expires > now) return cached.answer;
    const answer = this._ask(host, headers);
    this._cache.set(key, { answer, expires: now + this._ttlMs });
    // A failed question is forgotten at once, so the next request asks again.
    answer.catch(() => this._cache.delete(key));
    if (this._cache.size > this._maxEntries) this._evictExpired(now);
    return answer;
  }

  private async _ask(
    host: string,
    headers: http.OutgoingHttpHeaders
  ): Promise<Readonly<Record<string, unknown>> | null> {
    let response;
    try {
      response = await requestUpstream(this._upstream, {
        path: `${this._baseUrl}api/me`,
        headers: { ...headers, host, accept: 'application/json' },
        agent: this._agent,
        timeoutMs: 10_000
      });
    } catch (error) {
      this._log.warn({ err: (error as Error).message }, 'cannot reach the Jupyter server for auth');
      throw new UpstreamAuthUnavailable();
    }
    if (response.status === 200) {
      try {
        const body = JSON.parse(response.body.toString('utf8')) as { identity?: unknown };
        if (typeof body.identity === 'object' && body.identity !== null) {
          return body.identity as Record<string, unknown>;
        }
      } catch {
        // fall through: an unreadable answer is not an identity
      }
      this._log.warn('the Jupyter server answered api/me without an identity');
      throw new UpstreamAuthUnavailable();
    }
    if (response.status === 401 || response.status === 403) return null;
    this._log.warn({ status: response.status }, 'unexpected api/me status from the Jupyter server');
    throw new UpstreamAuthUnavailable();
  }

  private _evictExpired(now: number): void {
    for (const [key, entry] of this._cache) {
      if (entry.expires <= now || this._cache.size > this._maxEntries) this._cache.delete(key);
    }
  }

  private readonly _upstream: UpstreamAddress;
  private readonly _baseUrl: string;
  private readonly _ttlMs: number;
  private readonly _maxEntries: number;
  private readonly _log: Logger;
  private readonly _agent: http.Agent | undefined;
  private readonly _cache = new Map<
    string,
    { answer: Promise<Readonly<Record<string, unknown>> | null>; expires: number }
  >();
}

export namespace Authenticator {
  export interface IOptions {
    upstream: UpstreamAddress;
    /** Jupyter's base_url, normalised (starts and ends with `/`). */
    baseUrl: string;
    /** How long an answer is reused; default 5 s. */
    ttlMs?: number;
    /** Cache bound; default 1000 entries. */
    maxEntries?: number;
    /** Connection pool for the questions (the proxy's, so that closing it closes them too). */
    agent?: http.Agent;
    log: Logger;
  }
}

/** The upstream could not be asked who the caller is: the answer is 503, not 403. */
export class UpstreamAuthUnavailable extends Error {
  constructor() {
    super('The Jupyter server could not be asked to authenticate this request');
    this.name = 'UpstreamAuthUnavailable';
  }
}

/** The token a request carries, as Jupyter reads it: `?token=` first, then Authorization. */
export function requestToken(request: http.IncomingMessage): string | undefined {
  const query = new URL(request.url ?? '/', 'http://gateway.invalid').searchParams;
  // tornado's get_argument returns the last value of a repeated argument.
  const fromQuery = query.getAll('token').at(-1);
  if (fromQuery) return fromQuery;
  const match = AUTHORIZATION_TOKEN.exec(request.headers.authorization ?? '');
  return match ? match[1] : undefined;
}

/** Settings of the checks Jupyter makes around authentication. */
export interface IRequestChecks {
  /** `ServerApp.allow_remote_access`: when false, Host must be loopback or a local hostname. */
  allowRemoteAccess: boolean;
  /** `ServerApp.local_hostnames`; default `['localhost']`. */
  localHostnames: readonly string[];
  /** `ServerApp.allow_origin`. */
  allowOrigin: string;
  /** `ServerApp.allow_origin_pat`. */
  allowOriginPat: RegExp | null;
  /** `ServerApp.disable_check_xsrf`: only for servers that have no auth at all (UI tests). */
  disableCheckXsrf: boolean;
}

/** Checks as a Jupyter Server ships them. */
export const DEFAULT_REQUEST_CHECKS: IRequestChecks = {
  allowRemoteAccess: false,
  localHostnames: ['localhost'],
  allowOrigin: '',
  allowOriginPat: null,
  disableCheckXsrf: false
};

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by {@link requireJupyterAuth} on the gateway's own routes. */
    jupyterAuth?: IAuthentication;
  }
}

/**
 * Express middleware that guards a route of the gateway the way Jupyter guards an `APIHandler`:
 * Host check (403), authentication (403), for cookie-authenticated unsafe methods the Origin (404)
 * and XSRF (403) checks, then the API Origin check (404).
 */
export function requireJupyterAuth(
  authenticator: Authenticator,
  checks: IRequestChecks
): RequestHandler {
  return (request: Request, response: Response, next: NextFunction) => {
    if (!checkHost(request.headers.host, checks)) {
      sendError(response, 403, 'Forbidden: this Host is not allowed', 'host not allowed');
      return;
    }
    authenticator.authenticate(request).then(
      authentication => {
        if (!authentication) {
          sendError(response, 403, 'Forbidden: authentication required', 'not authenticated');
          return;
        }
        const skipOriginCheck =
          authentication.tokenAuthenticated ||
          request.method === 'OPTIONS' ||
          checks.allowOrigin === '*';
        const origin = {
          origin: requestOrigin(request.headers),
          host: request.headers.host,
          allowOrigin: checks.allowOrigin,
          allowOriginPat: checks.allowOriginPat
        };
        const unsafe = !['GET', 'HEAD', 'OPTIONS'].includes(request.method);
        if (unsafe && !authentication.tokenAuthenticated && !checks.disableCheckXsrf) {
          if (!skipOriginCheck && !checkOrigin(origin)) {
            sendError(response, 404, 'Not Found', 'cross-origin request blocked');
            return;
          }
          const query = new URL(request.originalUrl, 'http://gateway.invalid').searchParams;
          const xsrf = checkXsrf({
            cookieHeader: request.headers.cookie,
            submitted: submittedXsrfToken(query, request.headers)
          });
          if (!xsrf.ok) {
            sendError(response, 403, xsrf.message, 'xsrf');
            return;
          }
        }
        if (!skipOriginCheck && !checkOrigin(origin)) {
          sendError(response, 404, 'Not Found', 'cross-origin request blocked');
          return;
        }
        request.jupyterAuth = authentication;
        next();
      },
      (error: unknown) => {
        if (error instanceof UpstreamAuthUnavailable) {
          sendError(response, 503, error.message, 'upstream unavailable');
        } else {
          next(error);
        }
      }
    );
  };
}
