import { FsCloneRequestSchema, ObjectCloneRequestSchema } from '@jupyter-store/contract';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import {
  Router,
  type ErrorRequestHandler,
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response
} from 'express';
import type { Archiving } from '../archive/archiving';
import { HttpError } from '../errors';
import {
  requirePermission,
  UpstreamAuthUnavailable,
  type Authenticator,
  type IRequestChecks
} from '../gateway/auth';
import type { Logger } from '../gateway/logger';
import {
  checkHost,
  decodeXsrfToken,
  newXsrfCookieValue,
  xsrfCookieValue
} from '../gateway/security';
import { displayable, isValidBucketName } from '../storage/keys';
import {
  checkCloneBucket,
  checkFsCloneEnabled,
  checkFsSourceIsFile,
  checkObjectCloneEnabled,
  cloneTarget,
  resolveFsSource,
  validate
} from './clone';

/** What the landing pages need from the gateway. */
export interface ILandingOptions {
  archiving: Pick<Archiving, 'settings' | 'store' | 'bucket' | 'features'>;
  authenticator: Authenticator;
  checks: IRequestChecks;
  /** Jupyter's base_url, normalised (starts and ends with `/`). */
  baseUrl: string;
  log?: Logger;
}

/** The page's script and stylesheet, shipped with the package and read once. */
const STATIC_DIR = path.resolve(__dirname, '..', '..', 'static');
const STATIC_FILES: Readonly<Record<string, string>> = {
  'landing.js': 'text/javascript; charset=utf-8',
  'landing.css': 'text/css; charset=utf-8'
};

/**
 * Pages are self-contained: script and style only from our own static files, requests only to
 * our own origin, no framing by other sites, no form posts anywhere.
 */
const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'self'"
].join('; ');

/**
 * The clone landing pages under `{base}store`: `GET clone?object_bucket&object_key[&object_version_id]`
 * and `GET fs-clone?relpath`.
 *
 * #### Notes
 * A page only describes what would be cloned and asks for confirmation: nothing happens on GET.
 * Its Clone button posts to `{base}api/store/clone` (or `fs-clone`) with the XSRF header taken
 * from the `_xsrf` cookie (set here when the browser has none yet), shows the API's message on
 * failure, and on success goes to `{base}lab/tree/<path>`, where JupyterLab opens the file. Every
 * URL in a page is relative, and every string from the request is HTML-escaped.
 *
 * The parameters are checked on GET with the API's own rules, so a bad link fails before the
 * user is asked anything: 400 for a missing, empty or malformed parameter; 403 when the feature
 * is off, when Jupyter's `Authorizer` does not allow the caller `contents: write` (the clone
 * would be refused), when `clone_buckets` does not list the bucket, or when the fs-clone source
 * has more than one hard link; 404 when `relpath` is outside `fs_cloning_basedir` or missing; 503 when
 * object storage is unusable. Errors are HTML pages with the status. A caller who is not logged
 * in is sent to Jupyter's login page, which brings them back here.
 */
export function createLandingRouter(options: ILandingOptions): Router {
  const router = Router({ caseSensitive: true, strict: true });
  const staticBodies = new Map<string, Buffer>(
    Object.keys(STATIC_FILES).map(name => [name, readFileSync(path.join(STATIC_DIR, name))])
  );

  router.get('/static/:file', (request: Request, response: Response, next: NextFunction) => {
    const file = request.params.file as string;
    const body = Object.hasOwn(STATIC_FILES, file) ? staticBodies.get(file) : undefined;
    if (!body) {
      next();
      return;
    }
    response.setHeader('Content-Type', STATIC_FILES[file]);
    response.setHeader('X-Content-Type-Options', 'nosniff');
    response.setHeader('Cache-Control', 'no-cache');
    response.end(request.method === 'HEAD' ? undefined : body);
  });

  // `clone/` would break the page's relative URLs: send it to `clone`, query kept.
  router.get(['/clone/', '/fs-clone/'], (request: Request, response: Response) => {
    const name = request.path.replace(/\/+$/, '').slice(1);
    const query = request.originalUrl.includes('?')
      ? request.originalUrl.slice(request.originalUrl.indexOf('?'))
      : '';
    response.redirect(302, `../${name}${query}`);
  });

  // A page only leads to a clone, which needs `contents: write`: refuse it before asking.
  const auth = [requirePageAuth(options), requirePermission('contents', 'write')];

  router.get('/clone', ...auth, (request: Request, response: Response) => {
    checkObjectCloneEnabled(options.archiving);
    const query = queryArguments(request, ['object_bucket', 'object_key', 'object_version_id']);
    const clone = validate(ObjectCloneRequestSchema, query);
    if (!isValidBucketName(clone.object_bucket)) {
      throw new HttpError(
        400,
        `object_bucket "${displayable(clone.object_bucket)}" is not a valid bucket name`,
        'bad request'
      );
    }
    checkCloneBucket(options.archiving, clone.object_bucket);
    const version = clone.object_version_id ?? null;
    sendPage(response, 200, {
      title: 'Clone from object storage',
      body: clonePage({
        api: '../api/store/clone',
        source: [
          ['Bucket', clone.object_bucket],
          ['Key', clone.object_key],
          ['Version', version ?? 'latest']
        ],
        fields: {
          object_bucket: clone.object_bucket,
          object_key: clone.object_key,
          ...(version === null ? {} : { object_version_id: version })
        },
        target: defaultTarget(clone.object_key, 'object_key')
      })
    });
  });

  router.get('/fs-clone', ...auth, async (request: Request, response: Response) => {
    checkFsCloneEnabled(options.archiving);
    const { relpath } = validate(FsCloneRequestSchema, queryArguments(request, ['relpath']));
    const source = await resolveFsSource(options.archiving.settings.fs_cloning_basedir, relpath);
    await checkFsSourceIsFile(source, relpath);
    sendPage(response, 200, {
      title: 'Clone from the file system',
      body: clonePage({
        api: '../api/store/fs-clone',
        source: [['Path', relpath]],
        fields: { relpath },
        target: defaultTarget(relpath, 'relpath')
      })
    });
  });

  router.use(pageErrorHandler(options.log));
  return router;
}

// ---------------------------------------------------------------------------------------------
// Authentication
// ---------------------------------------------------------------------------------------------

/**
 * Guard a page as Jupyter guards its own pages: Host check (403), then authentication, sending
 * whoever is not logged in to `{base}login?next=<this page>`. The page's own POST is checked by
 * the API (XSRF and Origin), so GET needs no more. Sets an `_xsrf` cookie when there is none,
 * and `request.jupyterAuth` for the permission checks that follow.
 */
function requirePageAuth(options: ILandingOptions): RequestHandler {
  const { authenticator, checks, baseUrl } = options;
  return (request: Request, response: Response, next: NextFunction) => {
    if (!checkHost(request.headers.host, checks)) {
      next(new HttpError(403, 'This Host is not allowed', 'host not allowed'));
      return;
    }
    authenticator.authenticate(request).then(
      authentication => {
        if (!authentication) {
          response.redirect(302, loginUrl(request, baseUrl));
          return;
        }
        request.jupyterAuth = authentication;
        const cookie = xsrfCookieValue(request.headers.cookie);
        if (cookie === undefined || !decodeXsrfToken(cookie)?.length) {
          // Path as Jupyter sets it, so that Jupyter's pages reuse this cookie, never add another.
          response.setHeader(
            'Set-Cookie',
            `_xsrf=${newXsrfCookieValue()}; Path=${baseUrl}; SameSite=Lax`
          );
        }
        next();
      },
      (error: unknown) =>
        next(
          error instanceof UpstreamAuthUnavailable
            ? new HttpError(503, error.message, 'upstream unavailable')
            : error
        )
    );
  };
}

/**
 * `{base}login?next=…` for this page. The query is re-encoded (a raw `:` in it would make
 * Jupyter's redirect check read it as a scheme) and a refused `token` is left out.
 */
function loginUrl(request: Request, baseUrl: string): string {
  const query = new URLSearchParams(
    new URL(request.originalUrl, 'http://gateway.invalid').searchParams
  );
  query.delete('token');
  const page = `${request.originalUrl.split('?', 1)[0]}${query.size ? `?${query}` : ''}`;
  return `${baseUrl}login?next=${encodeURIComponent(page)}`;
}

// ---------------------------------------------------------------------------------------------
// Pages
// ---------------------------------------------------------------------------------------------

/**
 * The named query arguments, as tornado's `get_argument` reads them (the last of repeated
 * values). An empty `object_version_id` means "latest", as a link built with an empty version
 * means; every other empty value stays empty and is refused by the schema.
 */
function queryArguments(request: Request, names: readonly string[]): Record<string, string> {
  const query = new URL(request.originalUrl, 'http://gateway.invalid').searchParams;
  const values: Record<string, string> = {};
  for (const name of names) {
    const value = query.getAll(name).at(-1);
    if (value === undefined || (name === 'object_version_id' && value === '')) continue;
    values[name] = value;
  }
  return values;
}

/** The target a clone gets by default, or empty when the source names no file. */
function defaultTarget(source: string, field: 'object_key' | 'relpath'): string {
  try {
    return cloneTarget(undefined, source, field);
  } catch {
    return '';
  }
}

interface IClonePage {
  /** The API route, relative to the page. */
  api: string;
  /** What is shown about the source: label and value. */
  source: [string, string][];
  /** The request fields posted as they are. */
  fields: Record<string, string>;
  /** The proposed target path (editable). */
  target: string;
}

function clonePage(page: IClonePage): string {
  const rows = page.source
    .map(
      ([label, value]) => `<dt>${escapeHtml(label)}</dt><dd><code>${escapeHtml(value)}</code></dd>`
    )
    .join('');
  const hidden = Object.entries(page.fields)
    .map(
      ([name, value]) =>
        `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`
    )
    .join('');
  return `<h1>Clone a file into your server</h1>
<p>This copies the following file into your Jupyter server. Nothing is overwritten: if the name is taken, the copy gets a number.</p>
<dl class="source">${rows}</dl>
<form id="clone-form" data-api="${escapeHtml(page.api)}" data-lab="../lab/tree/">
${hidden}
<label for="target_path">Save as (path in your server)</label>
<input id="target_path" name="target_path" type="text" value="${escapeHtml(page.target)}" autocomplete="off" spellcheck="false">
<p class="warning">Only clone files from sources you recognise and trust: a notebook runs code when you run its cells.</p>
<div class="actions"><button id="clone-button" type="submit">Clone</button> <a href="../lab">Cancel</a></div>
</form>
<p id="clone-status" role="status" aria-live="polite"></p>
<p id="clone-error" class="error" role="alert" hidden></p>
<noscript><p class="error">This page needs JavaScript to clone.</p></noscript>
<script src="static/landing.js" defer></script>`;
}

function sendPage(response: Response, status: number, page: { title: string; body: string }): void {
  response.status(status);
  response.setHeader('Content-Type', 'text/html; charset=utf-8');
  response.setHeader('Content-Security-Policy', PAGE_CSP);
  response.setHeader('X-Content-Type-Options', 'nosniff');
  // The page's own POST must carry an Origin, which `no-referrer` would blank for same-origin.
  response.setHeader('Referrer-Policy', 'same-origin');
  response.setHeader('Cache-Control', 'no-store');
  response.end(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(page.title)} · jupyter-store</title>
<link rel="stylesheet" href="static/landing.css">
</head>
<body>
<main>
${page.body}
</main>
</body>
</html>
`);
}

/** Errors become an HTML page with the status and the message, never a stack trace. */
function pageErrorHandler(log: Logger | undefined): ErrorRequestHandler {
  return (error: unknown, _request: Request, response: Response, _next: NextFunction) => {
    let status = 500;
    let message = 'Something went wrong on the server; the clone was not attempted.';
    if (error instanceof HttpError) {
      status = error.status;
      message = error.message;
    } else {
      log?.error({ err: error }, 'landing page failed');
    }
    if (response.headersSent) {
      response.destroy();
      return;
    }
    sendPage(response, status, {
      title: 'Cannot clone',
      body: `<h1>Cannot clone</h1>
<p class="error" role="alert">${escapeHtml(message)}</p>
<p class="status-code">HTTP ${status}</p>
<p><a href="../lab">Open JupyterLab</a></p>`
    });
  };
}

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;'
};

/** Escape text for HTML element content and double- or single-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, char => HTML_ESCAPES[char]);
}
