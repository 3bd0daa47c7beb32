/**
 * The request checks Jupyter Server 2.21.1 (on tornado 6.6) makes before an API handler runs:
 * the `_xsrf` double-submit check, the Origin / Referer cross-origin checks and the Host check
 * against DNS rebinding. The gateway answers some API routes itself, so it must refuse exactly
 * the requests Jupyter would refuse and let through exactly those it would let through; every
 * function here reproduces the Python behaviour, quirks included, and the spec pins each quirk
 * with vectors produced by the real Python code.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';

// ---------------------------------------------------------------------------------------------
// Python string helpers: tornado and Jupyter lean on str.strip, int() and urlparse, whose
// notions of whitespace, digits and URL structure differ from their JavaScript namesakes.
// ---------------------------------------------------------------------------------------------

/** Non-ASCII characters for which Python 3.11's `str.isspace()` is true. */
const PY_NON_ASCII_SPACE = '\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';

/** `str.strip()` also removes \x1c-\x1f and \x85 (JS trim does not) and keeps \ufeff. */
const PY_STRIP = new RegExp(
  `^[\\t\\n\\v\\f\\r\\x1c-\\x1f ${PY_NON_ASCII_SPACE}]+|[\\t\\n\\v\\f\\r\\x1c-\\x1f ${PY_NON_ASCII_SPACE}]+$`,
  'gu'
);

function pyStrip(value: string): string {
  return value.replace(PY_STRIP, '');
}

/**
 * What Python 3.11's `int(text)` accepts. Its leading and trailing blanks are ASCII
 * " \t\n\v\f\r" plus the non-ASCII `isspace()` characters (so \x1c-\x1f are refused although
 * `isspace()` says yes); digits are any Unicode decimal digit, with single underscores between
 * them. \p{Nd} follows Node's Unicode tables, which know more digits than Python 3.11's
 * Unicode 14; the difference only touches the timestamp field, which decides nothing.
 */
const PY_INT = new RegExp(
  `^[\\t\\n\\v\\f\\r ${PY_NON_ASCII_SPACE}]*[+-]?(\\p{Nd}(?:_?\\p{Nd})*)[\\t\\n\\v\\f\\r ${PY_NON_ASCII_SPACE}]*$`,
  'u'
);

/** Python 3.11 refuses to convert decimal strings longer than this (sys.int_info). */
const PY_INT_MAX_STR_DIGITS = 4300;

function isPyInt(text: string): boolean {
  const match = PY_INT.exec(text);
  if (match === null) return false;
  const digits = [...match[1]].filter(c => c !== '_').length;
  return digits <= PY_INT_MAX_STR_DIGITS;
}

/** `binascii.a2b_hex`: an even number of ASCII hex digits and nothing else. */
function a2bHex(text: string): Buffer | null {
  return /^(?:[0-9A-Fa-f]{2})*$/.test(text) ? Buffer.from(text, 'hex') : null;
}

/** The two parts of `urllib.parse.urlparse` that Jupyter looks at. */
interface PyUrlParts {
  scheme: string;
  netloc: string;
}

/**
 * `urllib.parse.urlparse(url)` of Python 3.11.7, reduced to scheme and netloc. `null` stands
 * for the ValueError urlparse raises (unbalanced brackets, a bracketed host that is not IPv6 or
 * IPvFuture, a netloc that NFKC-normalises into URL delimiters); Jupyter does not catch it, so
 * the request ends in a 500, which callers here treat as a refusal.
 */
function pyUrlParse(input: string): PyUrlParts | null {
  // eslint-disable-next-line no-control-regex -- urllib strips leading C0 controls and spaces
  let url = input.replace(/^[\x00-\x20]+/, '').replace(/[\t\r\n]/g, '');
  let scheme = '';
  let netloc = '';
  const colon = url.indexOf(':');
  if (colon > 0 && /^[A-Za-z][A-Za-z0-9+.-]*$/.test(url.slice(0, colon))) {
    scheme = url.slice(0, colon).toLowerCase();
    url = url.slice(colon + 1);
  }
  if (url.startsWith('//')) {
    const end = url.slice(2).search(/[/?#]/);
    netloc = end === -1 ? url.slice(2) : url.slice(2, end + 2);
    const open = netloc.includes('[');
    const close = netloc.includes(']');
    if (open !== close) return null;
    if (open && !isValidBracketedHost(netloc.slice(netloc.indexOf('[') + 1).split(']')[0])) {
      return null;
    }
  }
  if (!netlocSurvivesNfkc(netloc)) return null;
  return { scheme, netloc };
}

function isValidBracketedHost(host: string): boolean {
  if (host.startsWith('v')) return /^v[A-Fa-f0-9]+\.[\s\S]+$/.test(host);
  return pyIpAddress(host)?.version === 6;
}

/** urllib's guard against characters such as U+2100 that NFKC turns into "a/c". */
function netlocSurvivesNfkc(netloc: string): boolean {
  if (!/[\u0080-\uffff]/.test(netloc)) return true;
  const stripped = netloc.replace(/[@:#?]/g, '');
  const normalized = stripped.normalize('NFKC');
  return stripped === normalized || !/[/?#@:]/.test(normalized);
}

interface PyIpAddress {
  version: 4 | 6;
  isLoopback: boolean;
}

/**
 * `ipaddress.ip_address(text)` and its `is_loopback`, or `null` for the ValueError. Node's
 * isIP agrees with Python on the address grammar but not on IPv6 zone ids: Python accepts any
 * non-empty zone without '%', Node only a few characters, so the zone is checked here.
 */
function pyIpAddress(text: string): PyIpAddress | null {
  if (isIP(text) === 4) {
    return { version: 4, isLoopback: text.split('.')[0] === '127' };
  }
  const percent = text.indexOf('%');
  const address = percent === -1 ? text : text.slice(0, percent);
  const zone = percent === -1 ? null : text.slice(percent + 1);
  if (zone !== null && (zone === '' || zone.includes('%'))) return null;
  if (isIP(address) !== 6) return null;
  // Python 3.11's IPv6 is_loopback is true for ::1 alone, so ::ffff:127.0.0.1 is not loopback.
  const words = ipv6Words(address);
  return { version: 6, isLoopback: words.slice(0, 7).every(w => w === 0) && words[7] === 1 };
}

/** The eight 16-bit words of an IPv6 address that isIP has already accepted. */
function ipv6Words(address: string): number[] {
  const toWords = (part: string): number[] => {
    if (part === '') return [];
    return part.split(':').flatMap(piece => {
      if (!piece.includes('.')) return [parseInt(piece, 16)];
      const [a, b, c, d] = piece.split('.').map(Number);
      return [a * 256 + b, c * 256 + d];
    });
  };
  const gap = address.indexOf('::');
  if (gap === -1) return toWords(address);
  const head = toWords(address.slice(0, gap));
  const tail = toWords(address.slice(gap + 2));
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

// ---------------------------------------------------------------------------------------------
// XSRF
// ---------------------------------------------------------------------------------------------

/**
 * tornado's version test runs on the UTF-8 bytes with Python's `$`, which also matches before
 * one final "\n": so "2|..." counts as versioned only if it has no newline except possibly a
 * last one, and anything else falls through to the version-1 branch.
 */
const VERSIONED_TOKEN = /^([1-9][0-9]*)\|[^\n]*\n?$/;

/**
 * Decode an XSRF token or cookie value the way tornado 6.6's `_decode_xsrf_token` does, and
 * return the raw token bytes, or `null` wherever tornado returns `None`.
 *
 * - `2|<hex mask>|<hex masked token>|<timestamp>`: exactly four fields, a 4-byte mask, the
 *   token XORed with the mask repeated, and a timestamp Python's `int()` can read.
 * - Anything not starting with a version number and '|' is version 1: its bytes if it is
 *   even-length hex, otherwise its own UTF-8 bytes (so `abc` and `a1b` decode, to their text).
 *   Version numbers have no leading zero, so `0|x` and `02|x` are version 1 too.
 * - Any other version, such as `1|...` or `3|...`, is unknown and yields null.
 *
 * The result can be an empty buffer (`2|<mask>||<timestamp>`); tornado treats an empty
 * submitted token as malformed, which {@link checkXsrf} reproduces.
 */
export function decodeXsrfToken(value: string): Buffer | null {
  // Python's utf8() raises on lone surrogates where Buffer.from would substitute U+FFFD.
  if (!value.isWellFormed()) return null;
  const versioned = VERSIONED_TOKEN.exec(value);
  if (versioned === null) return a2bHex(value) ?? Buffer.from(value, 'utf8');
  if (versioned[1] !== '2') return null;
  const fields = value.split('|');
  if (fields.length !== 4) return null;
  const [, maskHex, maskedHex, timestamp] = fields;
  const mask = a2bHex(maskHex);
  const masked = a2bHex(maskedHex);
  if (mask === null || mask.length !== 4 || masked === null || !isPyInt(timestamp)) return null;
  const token = Buffer.alloc(masked.length);
  for (let i = 0; i < masked.length; i++) token[i] = masked[i] ^ mask[i % 4];
  return token;
}

/**
 * The value of the `_xsrf` cookie in a Cookie header as tornado reads it, or `undefined` when
 * there is none. tornado's parser differs from the `cookie` package on purpose: the last
 * `_xsrf` wins, values are not percent-decoded, and a double-quoted value has its quotes and
 * backslash escapes (including `\ooo` octal) removed as Python's http.cookies does.
 *
 * tornado joins repeated Cookie headers with ',' while Node joins them with '; '; give this the
 * header as tornado would see it if that case matters.
 */
export function xsrfCookieValue(cookieHeader: string | undefined): string | undefined {
  if (cookieHeader === undefined) return undefined;
  let found: string | undefined;
  for (const chunk of cookieHeader.split(';')) {
    const eq = chunk.indexOf('=');
    if (eq === -1) continue;
    if (pyStrip(chunk.slice(0, eq)) === '_xsrf') {
      found = unquoteCookie(pyStrip(chunk.slice(eq + 1)));
    }
  }
  return found;
}

function unquoteCookie(value: string): string {
  if (value.length < 2 || !value.startsWith('"') || !value.endsWith('"')) return value;
  return value
    .slice(1, -1)
    .replace(/\\(?:([0-3][0-7][0-7])|([^\n]))/g, (_m, octal?: string, char?: string) =>
      octal !== undefined ? String.fromCharCode(parseInt(octal, 8)) : (char ?? '')
    );
}

/** Characters tornado's get_argument turns into spaces (\t, \n, \v, \f, \r survive). */
// eslint-disable-next-line no-control-regex -- the control characters are what is replaced
const ARGUMENT_CONTROL_CHARS = /[\x00-\x08\x0e-\x1f]/g;

/**
 * The submitted XSRF token, chosen in tornado's order: the last `_xsrf` query argument (with
 * control characters blanked and Python-stripped, as get_argument does), else the
 * `X-XSRFToken` header, else `X-CSRFToken`. Empty values fall through to the next source.
 *
 * Differences left to the caller: tornado also reads `_xsrf` from form-encoded or multipart
 * POST bodies, and answers 400 to a query argument that is not valid UTF-8, where
 * URLSearchParams substitutes U+FFFD.
 */
export function submittedXsrfToken(
  query: URLSearchParams,
  headers: IncomingHttpHeaders
): string | undefined {
  const fromQuery = query.getAll('_xsrf').at(-1);
  const argument =
    fromQuery === undefined ? '' : pyStrip(fromQuery.replace(ARGUMENT_CONTROL_CHARS, ' '));
  return argument || headerValue(headers['x-xsrftoken']) || headerValue(headers['x-csrftoken']);
}

function headerValue(value: string | string[] | undefined): string | undefined {
  // tornado folds repeated headers into one value joined by ','.
  return Array.isArray(value) ? value.join(',') : value;
}

/** Outcome of {@link checkXsrf}; a refusal carries tornado's 403 message. */
export type XsrfCheck = { ok: true } | { ok: false; message: string };

/** Inputs of {@link checkXsrf}. */
export interface XsrfInput {
  /** The request's Cookie header. */
  cookieHeader?: string;
  /** The submitted token, normally from {@link submittedXsrfToken}. */
  submitted?: string;
}

/**
 * tornado's `check_xsrf_cookie`: the submitted token must decode and its raw bytes must equal
 * those of the `_xsrf` cookie, compared in constant time. The messages are tornado's, for a
 * 403. A missing or undecodable cookie always mismatches, because tornado would compare against
 * a freshly generated random token.
 *
 * Jupyter wraps this: it skips the check for token-authenticated requests and when
 * `disable_check_xsrf` is set, runs {@link checkOrigin} first (404 on failure), and for GET and
 * HEAD (only the /files handlers check XSRF on those) accepts a failure if
 * {@link checkReferer} passes. Those steps belong to the caller.
 */
export function checkXsrf(input: XsrfInput): XsrfCheck {
  if (!input.submitted) return { ok: false, message: "'_xsrf' argument missing from POST" };
  const submitted = decodeXsrfToken(input.submitted);
  if (submitted === null || submitted.length === 0) {
    return { ok: false, message: "'_xsrf' argument has invalid format" };
  }
  const cookie = xsrfCookieValue(input.cookieHeader);
  const expected = cookie ? decodeXsrfToken(cookie) : null;
  if (expected === null || !constantTimeEqual(submitted, expected)) {
    return { ok: false, message: 'XSRF cookie does not match POST argument' };
  }
  return { ok: true };
}

function constantTimeEqual(a: Buffer, b: Buffer): boolean {
  const sameLength = a.length === b.length;
  // timingSafeEqual throws on a length mismatch; comparing a with itself keeps the work the same.
  return timingSafeEqual(a, sameLength ? b : a) && sameLength;
}

// ---------------------------------------------------------------------------------------------
// Host
// ---------------------------------------------------------------------------------------------

/**
 * Whether tornado accepts this Host header at all; where it does not, tornado answers 400
 * before any handler runs. It allows only RFC 3986 host characters (with brackets and colons
 * anywhere), %XX escapes and a port, and no comma, which tornado takes for several Host
 * headers folded together. An absent header is fine: Node only lets HTTP/1.0 requests through
 * without one, and tornado then assumes 127.0.0.1.
 */
export function isAcceptableHostHeader(hostHeader: string | undefined): boolean {
  if (hostHeader === undefined) return true;
  return /^(?:[[\]:A-Za-z0-9._~!$&'()*+;=-]|%[0-9A-Fa-f]{2})*$/.test(hostHeader);
}

/** Settings of {@link checkHost}, named after Jupyter's. */
export interface HostCheckOptions {
  /** `ServerApp.allow_remote_access`: skip the check. */
  allowRemoteAccess: boolean;
  /** `ServerApp.local_hostnames`; Jupyter's default is `['localhost']`. */
  localHostnames?: readonly string[];
  /** How to test that a unix-socket path exists; defaults to fs.existsSync. */
  pathExists?: (path: string) => boolean;
}

/**
 * Whether Jupyter would let a request with this Host header through: tornado must accept the
 * header ({@link isAcceptableHostHeader}; otherwise 400) and then Jupyter's `check_host` must
 * pass (otherwise 403). With remote access disallowed, `check_host` drops a `:<digits>` port and
 * IPv6 brackets, then allows an existing unix-socket path (after turning `%2F` into '/'), a
 * loopback IP address as Python 3.11 defines it (127.0.0.0/8 and `::1`, with or without a zone,
 * but not `::ffff:127.0.0.1`), or a name in `localHostnames`, compared case-sensitively.
 *
 * Quirks kept: a bare `::1` loses ":1" as if it were a port and is refused; `localhost:` keeps
 * its colon and is refused.
 */
export function checkHost(hostHeader: string | undefined, options: HostCheckOptions): boolean {
  if (!isAcceptableHostHeader(hostHeader)) return false;
  if (options.allowRemoteAccess) return true;
  let host = /^(.*?)(?::[0-9]+)?$/.exec(hostHeader ?? '127.0.0.1')?.[1] ?? '';
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  const socketPath = host.replaceAll('%2F', '/');
  if (socketPath.startsWith('/') && (options.pathExists ?? existsSync)(socketPath)) return true;
  const address = pyIpAddress(host);
  if (address !== null) return address.isLoopback;
  return (options.localHostnames ?? ['localhost']).includes(host);
}

// ---------------------------------------------------------------------------------------------
// Origin and Referer
// ---------------------------------------------------------------------------------------------

/** Jupyter's CORS settings, as used by {@link checkOrigin} and {@link checkReferer}. */
export interface CorsSettings {
  /** `ServerApp.allow_origin`; '' when unset, '*' to allow every origin. */
  allowOrigin: string;
  /**
   * `ServerApp.allow_origin_pat`, translated to a JavaScript RegExp, or null when unset. It
   * must match the whole origin (Jupyter 2.21.1 uses re.fullmatch); flags other than g and y
   * are honoured. An empty pattern counts as unset, as an empty string does in Jupyter.
   */
  allowOriginPat?: RegExp | null;
}

/** Inputs of {@link checkOrigin}. */
export interface OriginInput extends CorsSettings {
  /** The Origin header (see {@link requestOrigin} for websockets). */
  origin?: string;
  /** The Host header. */
  host?: string;
}

/** Inputs of {@link checkReferer}. */
export interface RefererInput extends CorsSettings {
  /** The Referer header. */
  referer?: string;
  /** The Host header. */
  host?: string;
}

/**
 * The origin Jupyter's `get_origin` reports: the Origin header if present (even empty), else
 * the `Sec-WebSocket-Origin` header of old websocket drafts. Jupyter's websocket handlers check
 * this value; its HTTP API handlers check the Origin header alone.
 */
export function requestOrigin(headers: IncomingHttpHeaders): string | undefined {
  if (headers.origin !== undefined) return headers.origin;
  return headerValue(headers['sec-websocket-origin']);
}

/**
 * Jupyter's `check_origin` for API requests, minus its token-authenticated exemption, which
 * the caller applies. True when allowOrigin is '*', when Origin or Host is absent (scripts,
 * some same-origin requests), or when the netloc of the lowercased origin equals the Host
 * header exactly, port included and without lowercasing Host. Otherwise a set allowOrigin must
 * equal the lowercased origin, or else allowOriginPat must match all of it. An origin
 * Python's urlparse rejects yields false (Jupyter fails with a 500).
 */
export function checkOrigin(input: OriginInput): boolean {
  if (input.allowOrigin === '*') return true;
  if (input.origin === undefined || input.host === undefined) return true;
  const origin = input.origin.toLowerCase();
  const parsed = pyUrlParse(origin);
  if (parsed === null) return false;
  if (parsed.netloc === input.host) return true;
  return corsAllows(origin, input);
}

/**
 * Jupyter's `check_referer`, which guards GET requests that failed the XSRF check: true when
 * allowOrigin is '*'; false without a Host or Referer (empty counts as absent); true when the
 * referer's netloc equals Host exactly (no lowercasing on either side); otherwise
 * `<scheme>://<netloc>` of the referer, with only the scheme lowercased, goes through the same
 * allowOrigin / allowOriginPat test as {@link checkOrigin}. A referer Python's urlparse rejects
 * yields false (Jupyter fails with a 500).
 */
export function checkReferer(input: RefererInput): boolean {
  if (input.allowOrigin === '*') return true;
  if (!input.host || !input.referer) return false;
  const parsed = pyUrlParse(input.referer);
  if (parsed === null) return false;
  if (parsed.netloc === input.host) return true;
  return corsAllows(`${parsed.scheme}://${parsed.netloc}`, input);
}

function corsAllows(origin: string, settings: CorsSettings): boolean {
  if (settings.allowOrigin) return settings.allowOrigin === origin;
  const pattern = settings.allowOriginPat;
  if (!pattern || pattern.source === '(?:)') return false;
  // Sticky matching from 0 plus an end-of-input lookahead is re.fullmatch whatever the flags;
  // a plain exec would stop at the first alternative instead of backtracking to a full match.
  const full = new RegExp(
    `(?:${pattern.source})(?![\\s\\S])`,
    pattern.flags.replace(/[gy]/g, '') + 'y'
  );
  return full.test(origin);
}

/**
 * A fresh `_xsrf` cookie value in tornado's version-2 format (`2|mask|masked token|timestamp`),
 * for pages of ours that a browser may open before any page of Jupyter's has set one. tornado,
 * Jupyter and {@link checkXsrf} all accept it, and Jupyter keeps using it once it exists.
 */
export function newXsrfCookieValue(now: number = Date.now()): string {
  const token = randomBytes(16);
  const mask = randomBytes(4);
  const masked = Buffer.alloc(token.length);
  for (let i = 0; i < token.length; i++) masked[i] = token[i] ^ mask[i % 4];
  return `2|${mask.toString('hex')}|${masked.toString('hex')}|${Math.floor(now / 1000)}`;
}
