/**
 * Differential comparison of a real Jupyter Server and our contents manager: send one request to
 * both, compare status, Location, Content-Type, Last-Modified, the JSON-ness of the body and every
 * field of the models, and compare the files left on disk in both roots.
 *
 * A difference fails the test unless {@link INTENTIONAL_DEVIATIONS} lists it. Independently of
 * Jupyter, our answers must never be a 5xx, and every error must be JSON `{"message", "reason"}`
 * without a stack trace; our sandbox (the parent of our root) must never change.
 */
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startJupyterServer, type JupyterServerHandle } from './jupyterServer';
import type * as OurServerModule from './ourServer';
import type { OurAppOptions, OurServerHandle } from './ourServer';
import {
  createTreePair,
  diffSnapshots,
  disposeTemplateTree,
  resetTreePair,
  snapshotDir,
  templateTree,
  writeOutside,
  type DiskEntry,
  type TreePair
} from './tree';

/** Which server answered. */
export type Side = 'jupyter' | 'ours';

/** Where to send requests. */
export interface Endpoint {
  readonly side: Side;
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** `/…/` */
  readonly baseUrl: string;
  /** Headers added to every request (Jupyter's token). */
  readonly headers: Readonly<Record<string, string>>;
}

/** HTTP methods of the contents API. */
export type Method = 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE';

/** One request, sent unchanged to both servers. */
export interface Req {
  readonly method: Method;
  /**
   * The path below the base URL exactly as it goes on the wire (already percent-encoded), e.g.
   * `api/contents/foo/a%20b.ipynb`; build it with {@link contentsPath}.
   */
  readonly path: string;
  /** The query string without `?`. */
  readonly query?: string;
  /** A JSON body (serialised with `JSON.stringify`, `Content-Type: application/json`). */
  readonly json?: unknown;
  /** A raw body, sent as is. */
  readonly body?: string | Buffer;
  /** Extra headers. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** Options of one comparison. */
export interface CompareOptions {
  /** Also compare the `message` of JSON errors (upstream tests that assert the message text). */
  readonly compareMessage?: boolean;
}

/** One answer. */
export interface Res {
  readonly status: number;
  /** Lower-cased header names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  readonly text: string;
  /** The parsed body, or `undefined` when it is empty or not JSON. */
  readonly json: unknown;
  readonly isJson: boolean;
}

/** The two answers to one request. */
export interface BothRes {
  readonly jupyter: Res;
  readonly ours: Res;
}

/** What differs. */
export type Aspect =
  | 'status'
  | 'location'
  | 'content-type'
  | 'last-modified'
  | 'json-ness'
  | 'body'
  | 'error-reason'
  | 'disk'
  | 'sandbox';

/** One difference between Jupyter's and our answer or disk state. */
export interface Difference {
  readonly aspect: Aspect;
  /** `METHOD path?query`, or `disk` for snapshot differences. */
  readonly request: string;
  readonly method?: Method;
  /** The decoded API path of the request (below `api/contents/`), when it is a contents request. */
  readonly apiPath?: string;
  /** API paths named in the request body (`path`, `copy_from`). */
  readonly bodyPaths?: readonly string[];
  readonly jupyterStatus?: number;
  readonly oursStatus?: number;
  /** For bodies: a JSON-pointer-like location (`/content[name=x]/size`); for disk: the relative path. */
  readonly field?: string;
  readonly jupyter: unknown;
  readonly ours: unknown;
}

/** A difference we keep on purpose; the README lists the same table. */
export interface IntentionalDeviation {
  readonly id: string;
  /** Which request(s) and field. */
  readonly request: string;
  readonly field: string;
  /** What Jupyter does and what we do. */
  readonly jupyter: string;
  readonly ours: string;
  readonly why: string;
  /** Does this entry cover that difference? */
  readonly matches: (d: Difference) => boolean;
}

/** API paths that lead out of the root through the symlinks of the test tree. */
const OUTSIDE_LINK = /(^|\/)links\/outside(\.txt|-dir)(\/|$)/;

/** Does a difference concern a path that leads outside the root through a symlink? */
function touchesOutsideLink(d: Difference): boolean {
  const paths = [d.apiPath ?? '', ...(d.bodyPaths ?? [])];
  if (paths.some(p => OUTSIDE_LINK.test(p))) return true;
  if (
    d.aspect === 'body' &&
    d.apiPath === 'links' &&
    // The links themselves, and what Jupyter created through them (outside-Copy1.txt, …).
    /^\/content\[name=outside[^\]]*\]/.test(d.field ?? '')
  )
    return true;
  if (
    d.aspect === 'disk' &&
    /^links\/(outside|\.ipynb_checkpoints(\/outside[^/]*)?$)/.test(d.field ?? '')
  )
    return true;
  if (d.aspect === 'sandbox' && /^outside\//.test(d.field ?? '')) return true;
  return false;
}

/**
 * The differences we keep on purpose. Each one must also be listed in the README.
 * Keep this table small: everything else must behave exactly as Jupyter Server does.
 */
export const INTENTIONAL_DEVIATIONS: readonly IntentionalDeviation[] = [
  {
    id: 'get-404-not-json',
    request:
      'GET {base}api/contents/<missing or hidden path>, and paths no Jupyter handler matches (`api/contents//x`)',
    field: 'body (JSON-ness) and Content-Type',
    jupyter:
      "404 with the bare text `file or directory '<path>' does not exist` under Content-Type application/json, " +
      "or tornado's HTML 404 page (text/html)",
    ours: '404 with JSON {"message", "reason"} (application/json)',
    why:
      'Jupyter writes text that is not JSON under a JSON content type (ContentsHandler._finish_error); ' +
      "every error of ours is JSON {message, reason}. Lab's ResponseError accepts both.",
    matches: d =>
      d.method === 'GET' &&
      d.jupyterStatus === 404 &&
      d.oursStatus === 404 &&
      ((d.aspect === 'json-ness' && d.jupyter === 'text' && d.ours === 'json') ||
        (d.aspect === 'content-type' &&
          /^text\/html/.test(String(d.jupyter)) &&
          /^application\/json/.test(String(d.ours))))
  },
  {
    id: 'symlink-outside-root',
    request:
      'any request through links/outside.txt or links/outside-dir (symlinks that lead out of the root)',
    field: 'status, body, listing entries, files written',
    jupyter: 'follows the symlink: lists it, reads, writes, copies and renames through it',
    ours: 'refuses it: not listed, 4xx on every request, nothing outside the root read or written',
    why: 'The gateway must not serve or change files outside root_dir; the issue asks to refuse symlinks leading out.',
    matches: touchesOutsideLink
  },
  {
    id: 'jupyter-5xx',
    request:
      'requests Jupyter does not validate (non-object or wrongly typed JSON fields, overlong names, hash=1 on a ' +
      'directory, checkpoint of a missing file, …)',
    field: 'status and error body',
    jupyter: '500 (an unhandled exception, or its own model validation failing)',
    ours: 'a 4xx with {"message", "reason"}',
    why: 'Bad input is the client\'s error: never a 500 for bad input (DESIGN "Errors").',
    matches: d =>
      (d.jupyterStatus ?? 0) >= 500 && (d.oursStatus ?? 0) >= 400 && (d.oursStatus ?? 0) < 500
  },
  {
    id: 'failed-rename-leftover',
    request:
      'PATCH rename out of a directory the server cannot write (test_403 sequence: ordering/A.txt → left-by-failed-rename.txt)',
    field: 'files on disk',
    jupyter:
      '403, but shutil.move falls back to copy + delete when rename(2) fails, and the copy is left behind',
    ours: '403 and nothing written',
    why: 'A refused rename must not leave a stray copy of the file.',
    matches: d =>
      d.aspect === 'disk' &&
      d.field === 'left-by-failed-rename.txt' &&
      /only in jupyter/.test(String(d.jupyter))
  },
  {
    id: 'delete-permission-403',
    request: 'DELETE of an item the server may not remove (test_403: its directory is unwritable)',
    field: 'status',
    jupyter: '400 "send2trash failed: …" (the trash move fails with an OS permission error)',
    ours: '403 "Permission denied: <path>"',
    why: 'A permission problem is a 403, as Jupyter answers for every other permission error.',
    matches: d =>
      d.method === 'DELETE' && d.aspect === 'status' && d.jupyter === 400 && d.ours === 403
  },
  {
    id: 'trust-error-html',
    request: 'POST {base}api/contents/<path>/trust that fails (missing notebook, …)',
    field: 'Content-Type and body',
    jupyter: 'an HTML error page (TrustNotebooksHandler is not an APIHandler)',
    ours: 'JSON {"message", "reason"}',
    why: 'Every API error of ours is JSON.',
    matches: d =>
      /\/trust(\?|$)/.test(d.request) &&
      (d.jupyterStatus ?? 0) >= 400 &&
      (d.aspect === 'content-type' || d.aspect === 'json-ness')
  }
];

/** ISO 8601 UTC as Jupyter renders datetimes: seconds, optional 6-digit microseconds, `Z`. */
export const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?Z$/;

/** An HTTP date (RFC 7231 IMF-fixdate), as in `Last-Modified`. */
export const HTTP_DATE_RE =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/** Model keys whose values are timestamps, compared by format only. */
const TIMESTAMP_KEYS = new Set(['created', 'last_modified']);

/**
 * Python's `urllib.parse.quote(s, safe='')` of one path segment: UTF-8, everything but
 * `A-Za-z0-9_.-~` escaped (so also `!'()*`, unlike `encodeURIComponent`).
 */
export function pyQuote(segment: string): string {
  return encodeURIComponent(segment).replace(
    /[!'()*]/g,
    c => `%${c.charCodeAt(0).toString(16).toUpperCase()}`
  );
}

/**
 * The wire path of a contents request: `api/contents/<each segment quoted>` plus an optional
 * suffix (`checkpoints`, `checkpoints/<id>`, `trust`).
 *
 * @param apiPath - the API path, e.g. `foo/a.ipynb` (empty for the root).
 * @param suffix - appended after a `/` when given.
 */
export function contentsPath(apiPath: string, suffix?: string): string {
  const encoded = apiPath
    .split('/')
    .filter(s => s !== '')
    .map(pyQuote)
    .join('/');
  let path = encoded === '' ? 'api/contents' : `api/contents/${encoded}`;
  if (suffix !== undefined) path += `/${suffix}`;
  return path;
}

/** Jupyter's Location for an API path: `{base}api/contents/` + each segment quoted. */
export function expectedLocation(baseUrl: string, apiPath: string): string {
  return `${baseUrl}${contentsPath(apiPath)}`;
}

/** Decode percent-escapes leniently (invalid UTF-8 stays escaped). */
function decodeLenient(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The decoded API path of a wire path, when it is a contents request. */
function apiPathOf(path: string): string | undefined {
  const m = /^api\/contents(\/.*)?$/.exec(path);
  if (m === null) return undefined;
  return decodeLenient(m[1] ?? '')
    .replace(/\/(checkpoints(\/[\w-]+)?|trust)$/, '')
    .replace(/^\/+/, '');
}

/** API paths named in a JSON request body. */
function bodyPathsOf(req: Req): string[] {
  const json = req.json;
  if (typeof json !== 'object' || json === null) return [];
  const out: string[] = [];
  for (const key of ['path', 'copy_from']) {
    const v = (json as Record<string, unknown>)[key];
    if (typeof v === 'string') out.push(v.replace(/^\/+/, ''));
  }
  return out;
}

/** `METHOD path?query` */
export function describeRequest(req: Req): string {
  const full = `${req.method} ${req.path}${req.query !== undefined ? `?${req.query}` : ''}`;
  return full.length > 160
    ? `${full.slice(0, 120)}…(${full.length} chars)…${full.slice(-30)}`
    : full;
}

function toRes(status: number, headers: Record<string, string>, body: Buffer): Res {
  const text = body.toString('utf8');
  let json: unknown = undefined;
  let isJson = false;
  if (body.length > 0) {
    try {
      json = JSON.parse(text);
      isJson = true;
    } catch {
      // not JSON
    }
  }
  return { status, headers, body, text, json, isJson };
}

/** Will WHATWG URL parsing (used by fetch) change this path, e.g. resolve `..` or `%2e%2e`? */
function urlWouldAlter(full: string, pathAndQuery: string): boolean {
  try {
    const u = new URL(full);
    return u.pathname + u.search !== pathAndQuery;
  } catch {
    return true;
  }
}

const REQUEST_TIMEOUT_MS = 90_000;

/**
 * Send one request to one server. Uses `fetch`, or `http.request` with the exact raw path when URL
 * parsing would alter it (dot segments, `%2e%2e`, …).
 *
 * @param endpoint - the server.
 * @param req - the request.
 */
export async function send(endpoint: Endpoint, req: Req): Promise<Res> {
  const pathAndQuery = `${endpoint.baseUrl}${req.path}${req.query !== undefined ? `?${req.query}` : ''}`;
  const headers: Record<string, string> = { ...endpoint.headers, ...(req.headers ?? {}) };
  let body: string | Buffer | undefined = req.body;
  if (req.json !== undefined) {
    body = JSON.stringify(req.json);
    headers['Content-Type'] ??= 'application/json';
  }
  const full = `${endpoint.url}${pathAndQuery}`;
  if (!urlWouldAlter(full, pathAndQuery)) {
    const res = await fetch(full, {
      method: req.method,
      headers,
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)
    });
    const out: Record<string, string> = {};
    res.headers.forEach((value, key) => {
      out[key.toLowerCase()] = value;
    });
    return toRes(res.status, out, Buffer.from(await res.arrayBuffer()));
  }
  return rawRequest(endpoint.url, req.method, pathAndQuery, headers, body);
}

/**
 * Send a request with an exact raw path (no normalisation at all) with `http.request`.
 *
 * @param origin - `http://127.0.0.1:<port>`
 * @param method - the HTTP method.
 * @param rawPath - the request target, sent byte for byte.
 * @param headers - request headers.
 * @param body - an optional body.
 */
export function rawRequest(
  origin: string,
  method: string,
  rawPath: string,
  headers: Record<string, string>,
  body?: string | Buffer
): Promise<Res> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const r = httpRequest(
      {
        host: hostname,
        port: Number(port),
        method,
        path: rawPath,
        headers:
          body === undefined
            ? headers
            : { ...headers, 'Content-Length': String(Buffer.byteLength(body)) },
        timeout: REQUEST_TIMEOUT_MS
      },
      res => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const out: Record<string, string> = {};
          for (const [k, v] of Object.entries(res.headers)) {
            if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
          }
          resolve(toRes(res.statusCode ?? 0, out, Buffer.concat(chunks)));
        });
        res.on('error', reject);
      }
    );
    r.on('timeout', () => r.destroy(new Error(`timeout: ${method} ${rawPath}`)));
    r.on('error', reject);
    if (body !== undefined) r.write(body);
    r.end();
  });
}

function short(v: unknown): unknown {
  if (typeof v === 'string' && v.length > 300) return `${v.slice(0, 300)}… (${v.length} chars)`;
  if (typeof v === 'object' && v !== null) {
    const s = JSON.stringify(v);
    if (s.length > 300) return `${s.slice(0, 300)}… (${s.length} chars)`;
  }
  return v;
}

/** A JSON number kept as it was spelled (`1.0`, `1e-07`, `-0.0` stay distinct from `1`, `1e-7`, `0`). */
export class JsonNumber {
  constructor(readonly literal: string) {}
  /** Serialise as the literal text (in difference reports). */
  toJSON(): string {
    return this.literal;
  }
}

const NUMBER_RE = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const WHITESPACE_RE = /[ \t\n\r]*/y;

/**
 * Parse JSON keeping every number's spelling as a {@link JsonNumber}; throws on invalid JSON.
 * Strings are located by scanning for their closing quote and decoded by the native
 * `JSON.parse`, so multi-megabyte base64 contents parse quickly.
 */
export function parseExact(text: string): unknown {
  let i = 0;
  const fail = (what: string): never => {
    throw new SyntaxError(`invalid JSON at ${i}: ${what}`);
  };
  const ws = (): void => {
    WHITESPACE_RE.lastIndex = i;
    WHITESPACE_RE.exec(text);
    i = WHITESPACE_RE.lastIndex;
  };
  const str = (): string => {
    const start = i;
    let j = i + 1;
    for (;;) {
      const q = text.indexOf('"', j);
      if (q < 0) fail('unterminated string');
      let backslashes = 0;
      for (let k = q - 1; k > start && text[k] === '\\'; k--) backslashes++;
      j = q + 1;
      if (backslashes % 2 === 0) break;
    }
    i = j;
    return JSON.parse(text.slice(start, j)) as string;
  };
  const value = (): unknown => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      // No prototype: a "__proto__" key is just a key.
      const obj = Object.create(null) as Record<string, unknown>;
      ws();
      if (text[i] === '}') {
        i++;
        return obj;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a key');
        const key = str();
        ws();
        if (text[i++] !== ':') fail('expected ":"');
        obj[key] = value();
        ws();
        const d = text[i++];
        if (d === '}') return obj;
        if (d !== ',') fail('expected "," or "}"');
      }
    }
    if (c === '[') {
      i++;
      const arr: unknown[] = [];
      ws();
      if (text[i] === ']') {
        i++;
        return arr;
      }
      for (;;) {
        arr.push(value());
        ws();
        const d = text[i++];
        if (d === ']') return arr;
        if (d !== ',') fail('expected "," or "]"');
      }
    }
    if (c === '"') return str();
    for (const [word, v] of [
      ['true', true],
      ['false', false],
      ['null', null]
    ] as const) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    }
    NUMBER_RE.lastIndex = i;
    const m = NUMBER_RE.exec(text);
    if (m === null) return fail('unexpected character');
    i = NUMBER_RE.lastIndex;
    return new JsonNumber(m[0]);
  };
  const out = value();
  ws();
  if (i !== text.length) fail('trailing characters');
  return out;
}

/** Is this a directory model whose content is a listing? */
function isListing(v: Record<string, unknown>): boolean {
  return v.type === 'directory' && Array.isArray(v.content);
}

/**
 * Compare two JSON values field by field. Timestamps (`created`, `last_modified`) are compared by
 * format only; directory listings (`content` of a directory model) as sets keyed by `name`;
 * numbers parsed with {@link parseExact} by their spelling; everything else exactly.
 *
 * @returns `[field, jupyter, ours]` for each difference.
 */
export function compareJson(j: unknown, o: unknown, at = ''): Array<[string, unknown, unknown]> {
  const out: Array<[string, unknown, unknown]> = [];
  const walk = (a: unknown, b: unknown, path: string, key: string | undefined): void => {
    if (key !== undefined && TIMESTAMP_KEYS.has(key)) {
      const okA = typeof a === 'string' && TIMESTAMP_RE.test(a);
      const okB = typeof b === 'string' && TIMESTAMP_RE.test(b);
      if (!okA || !okB) out.push([`${path} (timestamp format)`, a, b]);
      return;
    }
    if (a instanceof JsonNumber || b instanceof JsonNumber) {
      const la = a instanceof JsonNumber ? a.literal : a;
      const lb = b instanceof JsonNumber ? b.literal : b;
      if (!(a instanceof JsonNumber && b instanceof JsonNumber && la === lb))
        out.push([path === '' ? '/' : path, la, lb]);
      return;
    }
    if (Array.isArray(a) && Array.isArray(b)) {
      if (a.length !== b.length) out.push([`${path} (length)`, a.length, b.length]);
      for (let i = 0; i < Math.min(a.length, b.length); i++)
        walk(a[i], b[i], `${path}[${i}]`, undefined);
      return;
    }
    if (
      typeof a === 'object' &&
      a !== null &&
      typeof b === 'object' &&
      b !== null &&
      !Array.isArray(a) &&
      !Array.isArray(b)
    ) {
      const ra = a as Record<string, unknown>;
      const rb = b as Record<string, unknown>;
      const keys = [...new Set([...Object.keys(ra), ...Object.keys(rb)])].sort();
      for (const k of keys) {
        const sub = `${path}/${k}`;
        if (!(k in rb)) {
          out.push([`${sub} (missing in ours)`, short(ra[k]), undefined]);
          continue;
        }
        if (!(k in ra)) {
          out.push([`${sub} (only in ours)`, undefined, short(rb[k])]);
          continue;
        }
        if (k === 'content' && isListing(ra) && isListing(rb)) {
          const byName = (list: unknown[]): Map<string, unknown> =>
            new Map(list.map(e => [String((e as Record<string, unknown>)?.name), e]));
          const ma = byName(ra.content as unknown[]);
          const mb = byName(rb.content as unknown[]);
          for (const name of [...new Set([...ma.keys(), ...mb.keys()])].sort()) {
            const entry = `${path}/content[name=${name}]`;
            if (!mb.has(name))
              out.push([`${entry} (missing in ours)`, short(ma.get(name)), undefined]);
            else if (!ma.has(name))
              out.push([`${entry} (only in ours)`, undefined, short(mb.get(name))]);
            else walk(ma.get(name), mb.get(name), entry, undefined);
          }
          continue;
        }
        walk(ra[k], rb[k], sub, k);
      }
      return;
    }
    if (!Object.is(a, b)) out.push([path === '' ? '/' : path, short(a), short(b)]);
  };
  walk(j, o, at, undefined);
  return out;
}

/** Does this text look like a stack trace or an internal error dump? */
export function looksLikeStackTrace(text: string): boolean {
  return /\n\s+at\s|node_modules|\.ts:\d+|\.js:\d+:\d+|Traceback \(most recent call last\)|\bTypeError\b|\bReferenceError\b/.test(
    text
  );
}

/**
 * Check our answer on its own (whatever Jupyter said): never a 5xx; errors are JSON objects with a
 * string `message` and a `reason` (string or null), no stack trace.
 *
 * @returns problems, one line each (empty when fine).
 */
export function checkOurAnswer(req: Req, res: Res): string[] {
  const problems: string[] = [];
  const what = describeRequest(req);
  if (res.status >= 500)
    problems.push(`${what}: ours answered ${res.status} (never a 5xx): ${res.text.slice(0, 300)}`);
  if (res.status >= 400) {
    const body = res.json as Record<string, unknown> | undefined;
    const ok =
      res.isJson &&
      typeof body === 'object' &&
      body !== null &&
      !Array.isArray(body) &&
      typeof body.message === 'string' &&
      body.message !== '' &&
      'reason' in body &&
      (typeof body.reason === 'string' || body.reason === null);
    if (!ok)
      problems.push(
        `${what}: ours' ${res.status} error is not JSON {"message", "reason"}: ${res.text.slice(0, 300)}`
      );
    if (!/^application\/json\b/i.test(res.headers['content-type'] ?? ''))
      problems.push(
        `${what}: ours' error Content-Type is ${res.headers['content-type']}, not application/json`
      );
  }
  // Only error bodies: file contents may legitimately mention "TypeError" or "x.ts:12".
  if (res.status >= 400 && looksLikeStackTrace(res.text)) {
    problems.push(`${what}: ours' error body looks like a stack trace: ${res.text.slice(0, 300)}`);
  }
  return problems;
}

/**
 * Compare the two answers to one request.
 *
 * @returns every difference (intentional ones included; filter with {@link isIntentional}).
 */
export function compareResponses(
  req: Req,
  jupyter: Res,
  ours: Res,
  options: CompareOptions = {}
): Difference[] {
  const base = {
    request: describeRequest(req),
    method: req.method,
    apiPath: apiPathOf(req.path),
    bodyPaths: bodyPathsOf(req),
    jupyterStatus: jupyter.status,
    oursStatus: ours.status
  };
  const diffs: Difference[] = [];
  const add = (aspect: Aspect, j: unknown, o: unknown, field?: string): void => {
    diffs.push({ ...base, aspect, field, jupyter: j, ours: o });
  };
  if (jupyter.status !== ours.status) add('status', jupyter.status, ours.status);
  const jl = jupyter.headers.location;
  const ol = ours.headers.location;
  if (jl !== ol) add('location', jl, ol);
  const jct = jupyter.headers['content-type']?.toLowerCase().replace(/\s+/g, '');
  const oct = ours.headers['content-type']?.toLowerCase().replace(/\s+/g, '');
  if (jct !== oct)
    add('content-type', jupyter.headers['content-type'], ours.headers['content-type']);
  const jlm = jupyter.headers['last-modified'];
  const olm = ours.headers['last-modified'];
  if ((jlm === undefined) !== (olm === undefined) || (olm !== undefined && !HTTP_DATE_RE.test(olm)))
    add('last-modified', jlm, olm);

  const kind = (r: Res): string => (r.body.length === 0 ? 'empty' : r.isJson ? 'json' : 'text');
  if (kind(jupyter) !== kind(ours)) {
    add('json-ness', kind(jupyter), kind(ours));
    return diffs;
  }
  if (jupyter.status >= 400 || ours.status >= 400) {
    // Errors: status and JSON-ness. Messages are free text; the reason is compared where Jupyter
    // gives one ("bad type", "bad format"); where its reason is null ours may name one.
    if (jupyter.isJson && ours.isJson) {
      const jr = (jupyter.json as Record<string, unknown> | null)?.reason ?? null;
      const or = (ours.json as Record<string, unknown> | null)?.reason ?? null;
      if (jr !== null && jr !== or) add('error-reason', jr, or, '/reason');
      if (options.compareMessage) {
        const jm = (jupyter.json as Record<string, unknown> | null)?.message;
        const om = (ours.json as Record<string, unknown> | null)?.message;
        if (jm !== om) add('error-reason', jm, om, '/message');
      }
    }
    return diffs;
  }
  if (jupyter.isJson && ours.isJson) {
    // Numbers are compared as spelled: Jupyter writes Python's float repr (1.0, 1e-07, -0.0).
    for (const [field, j, o] of compareJson(parseExact(jupyter.text), parseExact(ours.text))) {
      add('body', j, o, field);
    }
  } else if (!jupyter.body.equals(ours.body)) {
    add('body', short(jupyter.text), short(ours.text));
  }
  return diffs;
}

/** Is this difference covered by {@link INTENTIONAL_DEVIATIONS}? Returns the entry's id. */
export function isIntentional(d: Difference): string | undefined {
  return INTENTIONAL_DEVIATIONS.find(dev => dev.matches(d))?.id;
}

/** Format differences for an error message. */
export function formatDifferences(diffs: readonly Difference[]): string {
  return diffs
    .map(
      d =>
        `- [${d.aspect}] ${d.request}${d.field !== undefined ? ` ${d.field}` : ''}` +
        (d.jupyterStatus !== undefined
          ? ` (status jupyter ${d.jupyterStatus}, ours ${d.oursStatus})`
          : '') +
        `\n    jupyter: ${JSON.stringify(d.jupyter)}\n    ours:    ${JSON.stringify(d.ours)}`
    )
    .join('\n');
}

/** Options of {@link conformanceSuite}. */
export interface SuiteOptions {
  /** `base_url` of both servers; default `/user/tester/` (a non-root base URL catches Location bugs). */
  baseUrl?: string;
  /** Give our server Jupyter's data directory (notary db and secret), for trust round trips. */
  shareNotary?: boolean;
  /** Extra Jupyter Server arguments (e.g. `--ContentsManager.allow_hidden=True`). */
  jupyterArgs?: string[];
  /** The same settings for our contents manager (e.g. `{ allowHidden: true }`). */
  ourContents?: OurAppOptions['contents'];
}

/** The per-spec harness returned by {@link conformanceSuite}. */
export interface Conformance {
  /** Jupyter's endpoint (after `beforeAll`). */
  readonly jupyter: Endpoint;
  /** Our endpoint (after `beforeAll`). */
  readonly ours: Endpoint;
  /** The running Jupyter Server. */
  readonly jupyterServer: JupyterServerHandle;
  /** Our running server. */
  readonly ourServer: OurServerHandle;
  /** The two trees (reset before each test). */
  readonly tree: TreePair;
  /** Our notary data directory (Jupyter's when `shareNotary`). */
  readonly ourDataDir: string;
  /** The endpoint of one side. */
  endpoint(side: Side): Endpoint;
  /** The root of one side. */
  root(side: Side): string;
  /**
   * Send the request to Jupyter, then to us; record every unintended difference (the test fails
   * at its end) and every problem with our answer.
   */
  both(req: Req, options?: CompareOptions): Promise<BothRes>;
  /** Send to one side only (no comparison). */
  one(side: Side, req: Req): Promise<Res>;
  /** Write the same bytes at the same relative path in both roots (parents created). */
  writeBoth(relPath: string, data: string | Buffer): Promise<void>;
  /** Create the same directory in both roots. */
  mkdirBoth(relPath: string): Promise<void>;
  /** Compare both roots on disk now, and check that our sandbox is untouched. */
  compareDisk(label?: string): Promise<void>;
  /** Fail now if differences were recorded (otherwise the test fails at its end). */
  flush(): void;
  /** Record a problem that fails the test at its end without stopping it. */
  problem(message: string): void;
}

/** Append differences to `$CONFORMANCE_REPORT` (JSON lines), for collecting a run's results. */
function report(test: string, diffs: readonly Difference[], problems: readonly string[]): void {
  const file = process.env.CONFORMANCE_REPORT;
  if (file === undefined || file === '') return;
  for (const d of diffs) appendFileSync(file, `${JSON.stringify({ test, ...d })}\n`);
  for (const p of problems) appendFileSync(file, `${JSON.stringify({ test, problem: p })}\n`);
}

/**
 * Register the Jest hooks of one spec file: one Jupyter Server and one of our servers for the
 * file, fresh identical trees before each test, and at each test's end a disk comparison and a
 * failure listing every unintended difference.
 *
 * @param options - base URL, notary sharing, extra Jupyter arguments.
 */
export function conformanceSuite(options: SuiteOptions = {}): Conformance {
  const baseUrl = options.baseUrl ?? '/user/tester/';
  let jupyterServer: JupyterServerHandle | undefined;
  let ourServer: OurServerHandle | undefined;
  let tree: TreePair | undefined;
  let base = '';
  let ourDataDir = '';
  let sandboxExpected: Map<string, DiskEntry> | undefined;
  let ourHeaders: Record<string, string> = {};
  let pending: Difference[] = [];
  let problems: string[] = [];
  const savedEnv: Record<string, string | undefined> = {};

  const need = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`${what} is not ready (did beforeAll fail?)`);
    return v;
  };

  beforeAll(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'jupyter-store-conformance-')));
    // Our trash (as Jupyter's send2trash) goes to $XDG_DATA_HOME/Trash: keep it inside this run.
    for (const key of ['HOME', 'XDG_DATA_HOME']) savedEnv[key] = process.env[key];
    process.env.HOME = join(base, 'our-home');
    process.env.XDG_DATA_HOME = join(base, 'our-home', '.local', 'share');
    await mkdir(process.env.XDG_DATA_HOME, { recursive: true });
    await templateTree();
    tree = await createTreePair(join(base, 'trees'));
    await resetTreePair(tree);
    jupyterServer = await startJupyterServer({
      rootDir: tree.jupyter.root,
      baseUrl,
      stateDir: join(base, 'jupyter-state'),
      extraArgs: options.jupyterArgs
    });
    ourDataDir = options.shareNotary ? jupyterServer.dataDir : join(base, 'our-data');
    await mkdir(ourDataDir, { recursive: true });
    if (process.env.CONFORMANCE_OURS === 'jupyter') {
      // Self-test of the harness: a second Jupyter Server plays "ours" (expect only our own checks to fail).
      const second = await startJupyterServer({
        rootDir: tree.ours.root,
        baseUrl,
        stateDir: options.shareNotary
          ? join(base, 'jupyter-state')
          : join(base, 'second-jupyter-state'),
        extraArgs: options.jupyterArgs
      });
      ourServer = second;
      ourHeaders = second.authHeaders;
    } else {
      // Loaded lazily, so that the self-test above runs without compiling our app.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { startOurServer } = require('./ourServer') as typeof OurServerModule;
      ourServer = await startOurServer({
        rootDir: tree.ours.root,
        baseUrl,
        jupyterDataDir: ourDataDir,
        contents: options.ourContents
      });
    }
  }, 120_000);

  afterAll(async () => {
    await ourServer?.stop();
    await jupyterServer?.stop();
    for (const [key, value] of Object.entries(savedEnv)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    if (base !== '') await rm(base, { recursive: true, force: true });
    await disposeTemplateTree();
  }, 60_000);

  beforeEach(async () => {
    pending = [];
    problems = [];
    const t = need(tree, 'the tree pair');
    await resetTreePair(t);
    if (sandboxExpected === undefined) {
      const probe = join(base, 'sandbox-probe');
      await mkdir(probe, { recursive: true });
      await writeOutside(probe);
      sandboxExpected = await snapshotDir(probe);
    }
  }, 60_000);

  const harness: Conformance = {
    get jupyter() {
      const j = need(jupyterServer, 'Jupyter Server');
      return { side: 'jupyter' as const, url: j.url, baseUrl: j.baseUrl, headers: j.authHeaders };
    },
    get ours() {
      const o = need(ourServer, 'our server');
      return { side: 'ours' as const, url: o.url, baseUrl: o.baseUrl, headers: ourHeaders };
    },
    get jupyterServer() {
      return need(jupyterServer, 'Jupyter Server');
    },
    get ourServer() {
      return need(ourServer, 'our server');
    },
    get tree() {
      return need(tree, 'the tree pair');
    },
    get ourDataDir() {
      return ourDataDir;
    },
    endpoint(side: Side) {
      return side === 'jupyter' ? harness.jupyter : harness.ours;
    },
    root(side: Side) {
      return side === 'jupyter' ? harness.tree.jupyter.root : harness.tree.ours.root;
    },
    async both(req: Req, compareOptions: CompareOptions = {}) {
      const jupyter = await send(harness.jupyter, req);
      const ours = await send(harness.ours, req);
      for (const d of compareResponses(req, jupyter, ours, compareOptions))
        if (isIntentional(d) === undefined) pending.push(d);
      problems.push(...checkOurAnswer(req, ours));
      return { jupyter, ours };
    },
    one(side: Side, req: Req) {
      return send(harness.endpoint(side), req);
    },
    async writeBoth(relPath: string, data: string | Buffer) {
      for (const side of ['jupyter', 'ours'] as const) {
        const file = join(harness.root(side), relPath);
        await mkdir(dirname(file), { recursive: true });
        await writeFile(file, data);
      }
    },
    async mkdirBoth(relPath: string) {
      for (const side of ['jupyter', 'ours'] as const)
        await mkdir(join(harness.root(side), relPath), { recursive: true });
    },
    async compareDisk(label = 'disk') {
      const t = harness.tree;
      const [j, o] = [await snapshotDir(t.jupyter.root), await snapshotDir(t.ours.root)];
      for (const { path, text } of diffSnapshots(j, o)) {
        const d: Difference = {
          aspect: 'disk',
          request: label,
          field: path,
          jupyter: text,
          ours: text
        };
        if (isIntentional(d) === undefined) pending.push(d);
      }
      const [js, os] = [
        await snapshotDir(t.jupyter.sandbox, ['root']),
        await snapshotDir(t.ours.sandbox, ['root'])
      ];
      for (const { path, text } of diffSnapshots(js, os)) {
        const d: Difference = {
          aspect: 'sandbox',
          request: label,
          field: path,
          jupyter: text,
          ours: text
        };
        if (isIntentional(d) === undefined) pending.push(d);
      }
      const expected = need(sandboxExpected, 'the sandbox snapshot');
      for (const { text } of diffSnapshots(expected, os, ['expected', 'ours'])) {
        problems.push(`${label}: the parent of our root changed: ${text}`);
      }
    },
    flush() {
      const test = expect.getState().currentTestName ?? '?';
      const diffs = pending;
      const probs = problems;
      pending = [];
      problems = [];
      report(test, diffs, probs);
      if (diffs.length > 0 || probs.length > 0) {
        throw new Error(
          [
            diffs.length > 0
              ? `${diffs.length} difference(s) from Jupyter Server:\n${formatDifferences(diffs)}`
              : '',
            probs.length > 0
              ? `${probs.length} problem(s) with our answers:\n- ${probs.join('\n- ')}`
              : ''
          ]
            .filter(s => s !== '')
            .join('\n')
        );
      }
    },
    problem(message: string) {
      problems.push(message);
    }
  };

  afterEach(async () => {
    if (tree !== undefined && jupyterServer !== undefined && ourServer !== undefined) {
      await harness.compareDisk('after the test');
    }
    harness.flush();
  }, 60_000);

  return harness;
}

/** sha256 hex of bytes or a string. */
export function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Join a directory and a name as API paths (`''` is the root). */
export const join2 = (dir: string, name: string): string => (dir === '' ? name : `${dir}/${name}`);

/** `GET {base}api/contents/<path>[?query]`. */
export const get = (apiPath: string, query?: string): Req => ({
  method: 'GET',
  path: contentsPath(apiPath),
  query
});

/** `PUT {base}api/contents/<path>` with a JSON body. */
export const put = (apiPath: string, json?: unknown): Req => ({
  method: 'PUT',
  path: contentsPath(apiPath),
  json
});

/** `POST {base}api/contents/<path>` with a JSON body. */
export const post = (apiPath: string, json?: unknown): Req => ({
  method: 'POST',
  path: contentsPath(apiPath),
  json
});

/** `PATCH {base}api/contents/<path>` with a JSON body. */
export const patch = (apiPath: string, json?: unknown): Req => ({
  method: 'PATCH',
  path: contentsPath(apiPath),
  json
});

/** `DELETE {base}api/contents/<path>`. */
export const del = (apiPath: string): Req => ({ method: 'DELETE', path: contentsPath(apiPath) });

/**
 * Upstream's `_check_created`, on Jupyter's answer (ours must equal it): 201, the exact
 * Location, the model's name, path and type, and the item on disk.
 */
export function checkCreated(
  env: Conformance,
  r: BothRes,
  dir: string,
  name: string,
  type = 'notebook'
): void {
  const apiPath = join2(dir, name);
  expect(r.jupyter.status).toBe(201);
  expect(r.jupyter.headers.location).toBe(expectedLocation(env.jupyter.baseUrl, apiPath));
  expect(r.jupyter.json).toMatchObject({ name, path: apiPath, type });
  const osPath = join(env.root('jupyter'), apiPath);
  expect(existsSync(osPath)).toBe(true);
  expect(statSync(osPath).isDirectory()).toBe(type === 'directory');
}
