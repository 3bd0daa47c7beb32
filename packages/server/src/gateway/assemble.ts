import {
  Router,
  type ErrorRequestHandler,
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response
} from 'express';
import { rawBody } from '../http/body';
import { httpErrors } from '../http/errorCatalogue';
import { errorHandler } from '../http/errors';
import { decodeUrlPath } from '../http/quote';
import { requirePermission, type JupyterAction, type JupyterResource } from './auth';
import type { Logger } from './logger';

/**
 * One route of a surface: `[method, path, handler, permission, options?]`.
 *
 * - `method`: the HTTP method; a `GET` route answers `HEAD` too.
 * - `path`: a pattern (see {@link Route.IPattern}) below the surface's mount point.
 * - `handler`: answers the request; it may throw or reject, the surface's error handler answers.
 * - `permission`: what Jupyter's `Authorizer` must allow the caller (`contents:read`,
 *   `contents:write`), or `none` for a route anyone may call.
 * - `options`: a feature the route needs and the largest body it reads.
 */
export type Route = readonly [
  method: Route.Method,
  path: string,
  handler: Route.Handler,
  permission: Route.Permission,
  options?: Route.IOptions
];

export namespace Route {
  /** The methods a route can serve (HEAD follows GET). */
  export type Method = 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE';

  /** A permission of Jupyter's `Authorizer`, as `resource:action`, or none at all. */
  export type Permission = `${JupyterResource}:${JupyterAction}` | 'none';

  /** The path parameters, decoded: `*name` and `**name` as paths, `:name` as it is. */
  export type Params = Readonly<Record<string, string>>;

  /** Answers one request; errors, thrown or rejected, go to the surface's error handler. */
  export type Handler = (
    request: Request,
    response: Response,
    params: Params
  ) => void | Promise<void>;

  /** What a route needs besides its permission. */
  export interface IOptions {
    /**
     * A feature the route needs (see `requireFeature` in `store/features.ts`): throws while it
     * is off. Checked after the permission and before the body is read, so that a refused
     * request is not read for nothing.
     */
    readonly requires?: () => void;
    /**
     * Read the body, of any content type, up to this many bytes (413 beyond; see
     * `http/body.ts`), into `request.body` as a Buffer. Without it the body is not read.
     */
    readonly bodyLimit?: number;
  }

  /**
   * The pattern syntax of {@link Route} paths. A pattern is matched whole, case-sensitively,
   * against the raw request path below the mount point, still percent-encoded, as tornado
   * routes. The mount point itself (`{prefix}` or `{prefix}/`) is the pattern `/`.
   *
   * | token | matches |
   * |---|---|
   * | `text` | itself |
   * | `{…}` | what is inside, or nothing |
   * | `:name` | a Jupyter id: one or more letters, digits, `_` or `-` (a checkpoint id) |
   * | `*name` | a Jupyter path: zero or more segments, each `/` and one or more characters other than `/` (tornado's `path_regex`) |
   * | `**name` | anything, possibly nothing, slashes included (a store path, checked after decoding) |
   *
   * `*name` and `**name` are decoded in one place, {@link assemble}: as tornado decodes path
   * arguments (bytes, then strict UTF-8; `invalid path` 400 otherwise), then checked by the
   * surface's `checkPath`, before the handler runs and after the body is read.
   *
   * Routes with the same pattern are one resource: the first pattern that matches a request
   * decides, and a method none of its routes serves is a 405 whose `Allow` header lists the
   * methods they serve.
   */
  export interface IPattern {
    readonly regex: RegExp;
    /** The names of the captured parameters, in order, and whether each is a path. */
    readonly params: readonly { name: string; path: boolean }[];
  }
}

/** A set of routes served under one mount point: the contents API, the store API, the pages. */
export interface ISurface {
  /** Where the routes are mounted, below Jupyter's base_url: `api/contents`, `store`. */
  readonly prefix: string;
  /**
   * `api`: every request is authenticated first, as Jupyter's API handlers do, even one that
   * ends in a 404 or a 405. `pages`: only routes with a permission are, so that a page can send
   * who is not logged in to the login page, and its static files need no login.
   */
  readonly kind: 'api' | 'pages';
  /** The routes, in the order they are matched (see {@link Route.IPattern}). */
  readonly routes: readonly Route[];
  /**
   * Check a path parameter once decoded (a contents path, a store path): returns the path the
   * handlers get, or throws the surface's 400.
   */
  readonly checkPath: (decoded: string) => string;
  /** Answers requests whose path no route matches; without it they go on (the gateway's 404). */
  readonly fallback?: Route.Handler;
  /** Answers errors; default Jupyter's JSON `{"message", "reason"}` (see `http/errors.ts`). */
  readonly errorHandler?: ErrorRequestHandler;
}

/**
 * Build the express router of a surface: for each request, the first resource whose pattern
 * matches; its route for the method (else 405 with `Allow`); the route's permission, feature and
 * body; its path parameters decoded; the handler; and the surface's error handler for whatever
 * fails. The gateway mounts the result at `{base}{surface.prefix}` (see `Gateway.serve`), the
 * bare contents application at its own prefix.
 */
export function assemble(surface: ISurface, options: assemble.IOptions = {}): Router {
  const router = Router({ caseSensitive: true, strict: true });
  const resources = Private.resources(surface.routes);
  const authenticate = options.authenticate;
  if (authenticate && surface.kind === 'api') router.use(authenticate);
  router.use((request: Request, response: Response, next: NextFunction) => {
    const path = request.path === '/' ? '' : request.path;
    for (const resource of resources) {
      const match = resource.pattern.regex.exec(path);
      if (!match) continue;
      const route = resource.routes.get(request.method === 'HEAD' ? 'GET' : request.method);
      if (!route) {
        response.setHeader('Allow', resource.allow);
        next(httpErrors.methodNotAllowed(`${request.method} is not allowed here`));
        return;
      }
      Private.run(route, resource.pattern, match, surface, authenticate, request, response, next);
      return;
    }
    if (surface.fallback) Private.call(surface.fallback, request, response, {}, next);
    else next();
  });
  router.use(surface.errorHandler ?? errorHandler(Private.logUnexpected(options.log)));
  return router;
}

export namespace assemble {
  export interface IOptions {
    /**
     * Authenticates a request and sets `request.jupyterAuth` (see `requireJupyterAuth`), or
     * answers it. Without it, nothing is authenticated and no permission is checked: for the
     * bare contents application on loopback (tests, benchmarks).
     */
    readonly authenticate?: RequestHandler;
    /** Where unexpected errors (500s) are logged; default stderr. */
    readonly log?: Logger;
  }
}

namespace Private {
  /** The routes that share a pattern. */
  export interface IResource {
    readonly pattern: Route.IPattern;
    readonly routes: ReadonlyMap<string, Route>;
    /** The `Allow` header of a 405: the methods served, HEAD after GET. */
    readonly allow: string;
  }

  /** Group routes by pattern, in the order each pattern first appears. */
  export function resources(routes: readonly Route[]): IResource[] {
    const byPath = new Map<string, Map<string, Route>>();
    for (const route of routes) {
      const [method, path] = route;
      const methods = byPath.get(path) ?? new Map<string, Route>();
      if (methods.has(method)) throw new Error(`Two routes for ${method} ${path}`);
      methods.set(method, route);
      byPath.set(path, methods);
    }
    return [...byPath].map(([path, methods]) => {
      const allowed = [...methods.keys()];
      if (methods.has('GET')) allowed.push('HEAD');
      return { pattern: compile(path), routes: methods, allow: allowed.join(', ') };
    });
  }

  /** Compile a pattern (see {@link Route.IPattern}) to an anchored regular expression. */
  export function compile(pattern: string): Route.IPattern {
    const params: { name: string; path: boolean }[] = [];
    let source = '';
    let depth = 0;
    let consumed = 0;
    const tokens = /(\{)|(\})|\*\*(\w+)|\*(\w+)|:(\w+)|([^{}*:]+)/g;
    for (const [token, open, close, any, path, id, text] of pattern === '/'
      ? []
      : pattern.matchAll(tokens)) {
      consumed += token.length;
      if (open) {
        source += '(?:';
        depth++;
      } else if (close) {
        source += ')?';
        depth--;
      } else if (any) {
        source += '(.*)';
        params.push({ name: any, path: true });
      } else if (path) {
        source += '((?:/[^/]+)*)';
        params.push({ name: path, path: true });
      } else if (id) {
        source += '([\\w-]+)';
        params.push({ name: id, path: false });
      } else {
        source += text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      }
      if (depth < 0) break;
    }
    if (depth !== 0 || (pattern !== '/' && consumed !== pattern.length)) {
      throw new Error(`Malformed route pattern ${JSON.stringify(pattern)}`);
    }
    return { regex: new RegExp(`^${source}$`), params };
  }

  /**
   * One route, in order: authentication (pages), permission, feature, body, path parameters,
   * handler.
   */
  export function run(
    route: Route,
    pattern: Route.IPattern,
    match: RegExpExecArray,
    surface: ISurface,
    authenticate: RequestHandler | undefined,
    request: Request,
    response: Response,
    next: NextFunction
  ): void {
    const [, , handler, permission, options = {}] = route;
    const steps: RequestHandler[] = [];
    if (authenticate && permission !== 'none') {
      if (surface.kind === 'pages') steps.push(authenticate);
      const [resource, action] = permission.split(':') as [JupyterResource, JupyterAction];
      steps.push(requirePermission(resource, action));
    }
    if (options.requires) {
      const requires = options.requires;
      steps.push((_request, _response, proceed) => {
        try {
          requires();
        } catch (error) {
          proceed(error);
          return;
        }
        proceed();
      });
    }
    if (options.bodyLimit !== undefined) steps.push(rawBody(options.bodyLimit));
    steps.push((request, response, proceed) => {
      let params: Route.Params;
      try {
        params = decodeParams(pattern, match, surface);
      } catch (error) {
        proceed(error);
        return;
      }
      call(handler, request, response, params, proceed);
    });
    const step = (index: number) => (error?: unknown) => {
      if (error !== undefined) next(error);
      else steps[index](request, response, step(index + 1));
    };
    step(0)();
  }

  /** The path parameters of a match: paths decoded as tornado does, then checked. */
  function decodeParams(
    pattern: Route.IPattern,
    match: RegExpExecArray,
    surface: ISurface
  ): Route.Params {
    const params: Record<string, string> = {};
    pattern.params.forEach(({ name, path }, index) => {
      const raw = match[index + 1] ?? '';
      if (!path) {
        params[name] = raw;
        return;
      }
      const decoded = decodeUrlPath(raw);
      if (decoded === undefined) throw httpErrors.invalidPath('The path is not valid UTF-8');
      params[name] = surface.checkPath(decoded);
    });
    return params;
  }

  /** Run a handler; what it throws or rejects with goes to `next`. */
  export function call(
    handler: Route.Handler,
    request: Request,
    response: Response,
    params: Route.Params,
    next: NextFunction
  ): void {
    let result: void | Promise<void>;
    try {
      result = handler(request, response, params);
    } catch (error) {
      next(error);
      return;
    }
    if (result instanceof Promise) result.catch(next);
  }

  export function logUnexpected(
    log: Logger | undefined
  ): ((message: string, error: unknown) => void) | undefined {
    return log && ((message, error) => log.error({ err: error }, message));
  }
}

/**
 * The query of a request, from its original URL (express shortens `url` below a mount point).
 * Read a repeated parameter by its last value (`getAll(name).at(-1)`), as tornado's
 * `get_argument` does.
 */
export function requestQuery(request: Request): URLSearchParams {
  return new URL(request.originalUrl, 'http://gateway.invalid').searchParams;
}
