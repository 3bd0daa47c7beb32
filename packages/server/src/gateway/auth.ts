import { createHash } from 'node:crypto';
import type * as http from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { HttpError } from '../errors';
import { httpErrors } from '../http/errorCatalogue';
import { sendError } from '../http/errors';
import type { Logger } from './logger';
import { checkHost, checkOrigin, checkXsrf, requestOrigin, submittedXsrfToken } from './security';
import { describeUpstream, requestUpstream, type UpstreamAddress } from './upstream';

/** A Jupyter resource that routes of the gateway are authorized against. */
export type JupyterResource = 'contents';

/** An action on a resource, as Jupyter's `Authorizer.is_authorized` receives it. */
export type JupyterAction = 'read' | 'write';

/**
 * The permissions asked of the upstream with every identity question, as
 * `GET {base}api/me?permissions=<this, as JSON>`: Jupyter answers with the actions its
 * `Authorizer` allows the caller. A route can only check a permission asked here.
 *
 * Which permission each route of the gateway needs:
 *
 * | Route (below `{base}`) | Method | Needs |
 * |---|---|---|
 * | `api/contents/…` (files, directories, checkpoints, trust) | GET, HEAD | `contents: read` |
 * | `api/contents/…` | PUT, POST, PATCH, DELETE | `contents: write` |
 * | `api/store` (feature detection, archive status) | GET, HEAD | `contents: read` |
 * | `api/store/versions/<path>` (the listing, or one version's content) | GET, HEAD | `contents: read` |
 * | `api/store/diff/<path>` (two versions, or a version and the file on disk) | GET, HEAD | `contents: read` |
 * | `api/store/diff` (the same, with notebooks given inline) | POST | `contents: read` |
 * | `api/store/publish/<path>` | PUT | `contents: write` |
 * | `api/store/clone`, `api/store/fs-clone` | POST | `contents: write` |
 * | `store/clone`, `store/fs-clone` (landing pages) | GET, HEAD | `contents: write` |
 * | `store/static/…`, and `store/clone/`, `store/fs-clone/` (redirects) | GET, HEAD | nothing |
 *
 * - The contents API needs what Jupyter's own contents handlers need (`@authorized`: the action
 *   of the HTTP method). With `contents_backend` `jupyter`, Jupyter answers it and decides itself.
 * - Listing or reading archived versions shows notebook content, as reading the file does.
 * - A diff shows the content of the versions it compares, and changes nothing: `read`, for its
 *   POST too (which posts only to carry notebooks the server has not seen).
 * - A clone writes a file into the server. It also reads the source, but from object storage or
 *   `fs_cloning_basedir`, not from the server's contents.
 * - Publishing is a write: it changes what the store serves to everyone who clones (a new
 *   version of the published copy), with content the caller sends rather than content read from
 *   the server. With `read` alone, a read-only user could replace any published notebook.
 * - A landing page exists only to confirm a clone, which needs `write`: refusing the page (an
 *   HTML 403) tells a read-only user before they are asked anything, as the pages already check
 *   every other reason the clone would fail.
 * - Methods a route does not serve get 405 before any permission is checked, as in Jupyter.
 */
export const ASKED_PERMISSIONS: Readonly<Record<JupyterResource, readonly JupyterAction[]>> = {
  contents: ['read', 'write']
};

/** Who the upstream says the caller is, how they proved it, and what they may do. */
export interface IAuthentication {
  /** The `identity` object of Jupyter's `GET api/me`. */
  readonly identity: Readonly<Record<string, unknown>>;
  /**
   * True when the request carries a token (query `token` or `Authorization: token|bearer`) and
   * that token is the one the upstream requires. Jupyter exempts such requests from its XSRF and
   * Origin checks, and so do we. A server that lets anonymous callers in has no token, so there
   * no request is token-authenticated, whatever token it carries.
   */
  readonly tokenAuthenticated: boolean;
  /**
   * The actions of {@link ASKED_PERMISSIONS} that the upstream's `Authorizer` allows, by
   * resource (`permissions` of `api/me`); an action missing here is refused.
   */
  readonly permissions: Readonly<Partial<Record<JupyterResource, readonly JupyterAction[]>>>;
}

/** What one `api/me` question established about one credential. */
interface IUpstreamAnswer {
  readonly identity: Readonly<Record<string, unknown>>;
  readonly permissions: IAuthentication['permissions'];
}

/** Jupyter's pattern for a token in the Authorization header (`re.match`, any case). */
const AUTHORIZATION_TOKEN = /^(?:token|bearer)\s+(.+)/i;

/**
 * Authenticates callers of the gateway's own routes by asking the Jupyter Server behind it, so
 * that every identity provider Jupyter supports (token, password, JupyterHub OAuth) works
 * unchanged, and asks its `Authorizer` in the same question what they may do.
 *
 * #### Notes
 * A token is tried alone first, then the cookie, mirroring Jupyter's `IdentityProvider` (a token
 * wins over a cookie). The rule for "token-authenticated" is Jupyter's `get_user_token`: the
 * server requires a token and the request's token is that token. The gateway may not know the
 * token (`serve`, JupyterHub), so it learns both halves from the upstream: `api/me` with the
 * token alone answers 200, and `api/me` with no credential at all (same Host) answers 401 or
 * 403. A server that answers anonymous callers has no token (`--no-auth`): there a token is
 * ignored and the request is a cookie (or anonymous) one, with the XSRF and Origin checks.
 *
 * Each answer (identity and permissions together) is cached for `ttlMs`, keyed by a SHA-256 of
 * the credential and the Host, so the cache never holds a credential in clear; the anonymous
 * question is the cookie question with an empty cookie, cached alike. Upstream failures are
 * never cached.
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
      const answer = await this._askCached('token', host, token, {
        authorization: `token ${token}`
      });
      if (answer && !(await this._letsAnonymousIn(host))) {
        return { ...answer, tokenAuthenticated: true };
      }
    }
    const cookie = request.headers.cookie ?? '';
    const answer = await this._askCached('cookie', host, cookie, cookie ? { cookie } : {});
    return answer ? { ...answer, tokenAuthenticated: false } : null;
  }

  /**
   * Ask the upstream once and forget the answer: Jupyter's first answer to `api/me` costs it far
   * more than later ones, and the connection is then open, so the first request of a user does
   * not pay for either. Never fails.
   *
   * @param token - the upstream's own token, when the caller has it: asked with it, the
   *   question is answered (and logged by Jupyter) as any other, not as a refusal.
   */
  async prepare(token?: string | null): Promise<void> {
    const host = describeUpstream(this._upstream).replace(/^http:\/\/|^unix:.*/, '') || 'localhost';
    const headers: http.OutgoingHttpHeaders = token ? { authorization: `token ${token}` } : {};
    await this._ask(host, headers).catch(() => undefined);
  }

  /** Forget every cached answer (for example after the upstream restarted). */
  clear(): void {
    this._cache.clear();
  }

  /** Does the upstream answer a caller with no credential (a server without a token)? */
  private async _letsAnonymousIn(host: string): Promise<boolean> {
    return (await this._askCached('cookie', host, '', {})) !== null;
  }

  private _askCached(
    kind: string,
    host: string,
    credential: string,
    headers: http.OutgoingHttpHeaders
  ): Promise<IUpstreamAnswer | null> {
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
  ): Promise<IUpstreamAnswer | null> {
    let response;
    try {
      response = await requestUpstream(this._upstream, {
        path: `${this._baseUrl}api/me?permissions=${encodeURIComponent(JSON.stringify(ASKED_PERMISSIONS))}`,
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
        const body = JSON.parse(response.body.toString('utf8')) as {
          identity?: unknown;
          permissions?: unknown;
        };
        if (typeof body.identity === 'object' && body.identity !== null) {
          if (typeof body.permissions !== 'object' || body.permissions === null) {
            this._log.warn('the Jupyter server answered api/me without permissions: none granted');
          }
          return {
            identity: body.identity as Record<string, unknown>,
            permissions: grantedPermissions(body.permissions)
          };
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
    { answer: Promise<IUpstreamAnswer | null>; expires: number }
  >();
}

/**
 * The asked actions that the `permissions` of an `api/me` answer grants; anything else in it
 * (other resources, `updatable_fields`, actions not asked) is ignored.
 */
function grantedPermissions(value: unknown): IAuthentication['permissions'] {
  const granted: Partial<Record<JupyterResource, readonly JupyterAction[]>> = {};
  if (typeof value !== 'object' || value === null) return granted;
  for (const resource of Object.keys(ASKED_PERMISSIONS) as JupyterResource[]) {
    const actions: unknown = Object.hasOwn(value, resource)
      ? (value as Record<string, unknown>)[resource]
      : undefined;
    if (!Array.isArray(actions)) continue;
    granted[resource] = Object.freeze(
      ASKED_PERMISSIONS[resource].filter(action => actions.includes(action))
    );
  }
  return Object.freeze(granted);
}

/** May this caller take this action on this resource, by the upstream's `Authorizer`? */
export function isAuthorized(
  authentication: IAuthentication | undefined,
  resource: JupyterResource,
  action: JupyterAction
): boolean {
  return authentication?.permissions[resource]?.includes(action) ?? false;
}

/**
 * Express middleware for a route behind {@link requireJupyterAuth} (or a page guard that sets
 * `request.jupyterAuth`): passes when the upstream's `Authorizer` allows `action` on `resource`,
 * else a 403 `{message, reason: 'not authorized'}` (an `HttpError`, so a page router renders it
 * as its error page). Without an authentication the request is refused.
 */
export function requirePermission(
  resource: JupyterResource,
  action: JupyterAction
): RequestHandler {
  return (request: Request, _response: Response, next: NextFunction) => {
    if (isAuthorized(request.jupyterAuth, resource, action)) next();
    else next(notAuthorized(resource, action));
  };
}

/** Jupyter's refusal message for an unauthorized action, with our reason. */
function notAuthorized(resource: JupyterResource, action: JupyterAction): HttpError {
  return httpErrors.notAuthorized(`User is not authorized to ${action} on resource: ${resource}.`);
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
    /** Set by {@link requireJupyterAuth} on the gateway's own routes (and by the landing pages). */
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
      sendError(response, httpErrors.hostNotAllowed('Forbidden: this Host is not allowed'));
      return;
    }
    authenticator.authenticate(request).then(
      authentication => {
        if (!authentication) {
          sendError(response, httpErrors.notAuthenticated('Forbidden: authentication required'));
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
            sendError(response, httpErrors.crossOriginBlocked('Not Found'));
            return;
          }
          const query = new URL(request.originalUrl, 'http://gateway.invalid').searchParams;
          const xsrf = checkXsrf({
            cookieHeader: request.headers.cookie,
            submitted: submittedXsrfToken(query, request.headers)
          });
          if (!xsrf.ok) {
            sendError(response, httpErrors.xsrf(xsrf.message));
            return;
          }
        }
        if (!skipOriginCheck && !checkOrigin(origin)) {
          sendError(response, httpErrors.crossOriginBlocked('Not Found'));
          return;
        }
        request.jupyterAuth = authentication;
        next();
      },
      (error: unknown) => {
        if (error instanceof UpstreamAuthUnavailable) {
          sendError(response, httpErrors.upstreamUnavailable(error.message));
        } else {
          next(error);
        }
      }
    );
  };
}
