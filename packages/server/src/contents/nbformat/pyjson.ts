/**
 * JSON as Python's `json` module reads and writes it, and the few Python string and value
 * semantics that notebook files depend on (`str.splitlines`, `repr`, `==`).
 *
 * Jupyter writes every notebook with `json.dumps(indent=1, sort_keys=True, ensure_ascii=False)`.
 * To save byte-identical files we must keep what JavaScript loses on `JSON.parse`: whether a
 * number was a float (`1.0`) and the digits of integers beyond 2^53. Those come back as
 * {@link PyNumber}; every other value is a plain JavaScript value.
 */
import { PyNumber, pythonFloatRepr } from './pynumber';

/**
 * An exception that Python would raise at this point (`AttributeError`, `TypeError`, ...). The
 * notebook reader and writer throw it where nbformat would fail, so that callers can turn it into
 * the same HTTP error Jupyter answers with.
 */
export class PythonException extends Error {
  /**
   * @param pythonType - the Python exception class name, e.g. `AttributeError`.
   * @param message - the exception's message, as Python words it where we know it.
   * @param pythonRepr - `repr()` of the exception; derived from the class and message if omitted.
   */
  constructor(
    readonly pythonType: string,
    message: string,
    pythonRepr?: string
  ) {
    super(message);
    this.name = 'PythonException';
    this.pythonRepr =
      pythonRepr ?? `${pythonType}(${message === '' ? '' : pythonStrRepr(message)})`;
  }

  /** What `repr(exception)` prints in Python (Jupyter puts it in "Unreadable Notebook" errors). */
  readonly pythonRepr: string;
}

// ---------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------

/** A number lexeme (or NaN/Infinity token) whose JavaScript value would lose Python's meaning. */
interface SpecialLexeme {
  start: number;
  end: number;
  value: unknown;
}

/** CPython refuses to convert integers with more digits than this (`sys.int_info`). */
const PYTHON_MAX_INT_DIGITS = 4300;

/**
 * Parse JSON text as Python's `json.loads` does.
 *
 * #### Notes
 * - Semantics are `JSON.parse`'s (a `SyntaxError` for invalid JSON, last duplicate key wins),
 *   except that a number lexeme Python reads as a float with an integral value (`1.0`, `2e3`,
 *   `-0.0`) becomes `new PyNumber('float', repr)` and an integer beyond
 *   `Number.MAX_SAFE_INTEGER` becomes `new PyNumber('int', digits)`.
 * - Python's extension tokens `NaN`, `Infinity` and `-Infinity` are accepted, as `json.loads`
 *   accepts them, and become the JavaScript numbers `NaN`, `Infinity` and `-Infinity`: a
 *   notebook Jupyter can open must open here too, and {@link dumpsPython} writes them back the
 *   way Python does. (A browser cannot parse them; that is the HTTP layer's concern, as it is
 *   for Jupyter, which sends them as they are.)
 * - Integers with more than 4300 digits are refused, as CPython refuses them.
 * - A `Buffer` is decoded as UTF-8 (invalid sequences become U+FFFD, so check with
 *   `buffer.isUtf8` first where that matters); a string is encoded to scan it, so pass the
 *   bytes when you have them.
 * - One pass over the bytes finds the lexemes that need care, outside strings; without any, this
 *   is a plain `JSON.parse`. Otherwise each such lexeme is replaced, in the bytes, by a marker
 *   string that cannot occur in the input, and `JSON.parse`'s result gets the values back.
 */
export function parsePythonJson(input: string | Buffer): unknown {
  const bytes = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  const specials = findSpecialLexemes(bytes);
  if (specials === null) {
    return JSON.parse(typeof input === 'string' ? input : input.toString('utf8'));
  }
  return parseWithSpecials(bytes, specials);
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;

/** The lexemes that `JSON.parse` cannot represent faithfully, or null when there are none. */
function findSpecialLexemes(bytes: Buffer): SpecialLexeme[] | null {
  let found: SpecialLexeme[] | null = null;
  const add = (start: number, end: number, value: unknown): void => {
    (found ??= []).push({ start, end, value });
  };
  const length = bytes.length;
  let i = 0;
  while (i < length) {
    const code = bytes[i];
    if (code === QUOTE) {
      i = endOfString(bytes, i);
      continue;
    }
    if ((code >= 0x30 && code <= 0x39) || code === MINUS) {
      if (code === MINUS && startsWithAscii(bytes, i, '-Infinity')) {
        add(i, i + 9, -Infinity);
        i += 9;
        continue;
      }
      let end = i + 1;
      let dot = -1;
      let exponent = -1;
      while (end < length) {
        const c = bytes[end];
        if (c >= 0x30 && c <= 0x39) {
          end++;
        } else if (c === 0x2e /* . */) {
          dot = end++;
        } else if (c === 0x65 || c === 0x45 /* e E */) {
          exponent = end++;
        } else if (c === 0x2b || c === MINUS) {
          end++;
        } else {
          break;
        }
      }
      const value = classifyNumber(bytes, i, end, dot, exponent);
      if (value !== undefined) {
        add(i, end, value);
      }
      i = end;
      continue;
    }
    if (code === 0x4e /* N */ && startsWithAscii(bytes, i, 'NaN')) {
      add(i, i + 3, NaN);
      i += 3;
      continue;
    }
    if (code === 0x49 /* I */ && startsWithAscii(bytes, i, 'Infinity')) {
      add(i, i + 8, Infinity);
      i += 8;
      continue;
    }
    i++;
  }
  return found;
}

function startsWithAscii(bytes: Uint8Array, at: number, word: string): boolean {
  for (let k = 0; k < word.length; k++) {
    if (bytes[at + k] !== word.charCodeAt(k)) {
      return false;
    }
  }
  return true;
}

function asciiSlice(bytes: Buffer, start: number, end: number): string {
  return bytes.toString('latin1', start, end);
}

const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?$/;

/**
 * The value to substitute for a number lexeme, or undefined when `JSON.parse` gets it right (or
 * when it is not a valid number, so that `JSON.parse` reports the error).
 */
function classifyNumber(
  bytes: Buffer,
  start: number,
  end: number,
  dot: number,
  exponent: number
): unknown {
  const sign = bytes[start] === MINUS ? 1 : 0;
  if (dot < 0 && exponent < 0) {
    const digits = end - start - sign;
    if (digits < 16) {
      return undefined;
    }
    const lexeme = asciiSlice(bytes, start, end);
    if (!JSON_NUMBER.test(lexeme) || Number.isSafeInteger(Number(lexeme))) {
      return undefined;
    }
    if (digits > PYTHON_MAX_INT_DIGITS) {
      throw new SyntaxError(
        `Exceeds the limit (${PYTHON_MAX_INT_DIGITS} digits) for integer string conversion`
      );
    }
    return new PyNumber('int', lexeme);
  }
  if (exponent < 0) {
    // Without an exponent the value is integral exactly when the fraction is all zeros, which
    // is cheaper to check than converting the lexeme.
    for (let k = dot + 1; k < end; k++) {
      if (bytes[k] !== 0x30) {
        return undefined;
      }
    }
    const lexeme = asciiSlice(bytes, start, end);
    if (!JSON_NUMBER.test(lexeme)) {
      return undefined;
    }
    if (dot - start - sign <= 15) {
      // Below 10^15 the integer part is exact and already as Python's repr writes it.
      return new PyNumber('float', lexeme.slice(0, dot - start) + '.0');
    }
    return new PyNumber('float', floatRepr(Number(lexeme)));
  }
  const lexeme = asciiSlice(bytes, start, end);
  if (!JSON_NUMBER.test(lexeme)) {
    return undefined;
  }
  const value = Number(lexeme);
  return Number.isInteger(value) ? new PyNumber('float', floatRepr(value)) : undefined;
}

/** The index just after the string that opens at `start` (or the end of the input). */
function endOfString(bytes: Uint8Array, start: number): number {
  let from = start + 1;
  while (true) {
    const quote = bytes.indexOf(QUOTE, from);
    if (quote < 0) {
      return bytes.length;
    }
    let backslashes = 0;
    for (let k = quote - 1; k > start && bytes[k] === BACKSLASH; k--) {
      backslashes++;
    }
    if ((backslashes & 1) === 0) {
      return quote + 1;
    }
    from = quote + 1;
  }
}

function parseWithSpecials(bytes: Buffer, specials: SpecialLexeme[]): unknown {
  const marker = chooseMarker(bytes);
  const markerBytes = Buffer.from(`"${marker.escaped}`, 'utf8');
  let length = bytes.length;
  for (let index = 0; index < specials.length; index++) {
    const special = specials[index];
    length += markerBytes.length + String(index).length + 1 - (special.end - special.start);
  }
  // One buffer for the substituted text. Segments between lexemes are short and many, so small
  // ones are copied by hand: a call into Buffer.copy costs more than the bytes.
  const target = Buffer.allocUnsafe(length);
  let position = 0;
  let last = 0;
  for (let index = 0; index < specials.length; index++) {
    const special = specials[index];
    if (special.start - last > 512) {
      position += bytes.copy(target, position, last, special.start);
    } else {
      for (let k = last; k < special.start; k++) {
        target[position++] = bytes[k];
      }
    }
    for (let k = 0; k < markerBytes.length; k++) {
      target[position++] = markerBytes[k];
    }
    const digits = String(index);
    for (let k = 0; k < digits.length; k++) {
      target[position++] = digits.charCodeAt(k);
    }
    target[position++] = QUOTE;
    last = special.end;
  }
  bytes.copy(target, position, last);
  const parsed = JSON.parse(target.toString('utf8'));
  const values = specials.map(special => special.value);
  return restoreSpecials(parsed, marker.prefix, values);
}

/**
 * A prefix that no string of the input can contain, to mark the substituted lexemes.
 *
 * #### Notes
 * A private-use character that the input holds neither raw nor escaped keeps `JSON.parse` on
 * its fast path. Failing that, k NUL characters in a row: a parsed string has them only if the
 * input has k `\u0000` escapes in a row, since raw NULs are invalid JSON.
 */
function chooseMarker(bytes: Buffer): { prefix: string; escaped: string } {
  for (let code = 0xe000; code <= 0xe009; code++) {
    const hex = code.toString(16);
    const char = String.fromCharCode(code);
    if (
      !bytes.includes(char) &&
      !bytes.includes('\\u' + hex) &&
      !bytes.includes('\\u' + hex.toUpperCase())
    ) {
      return { prefix: char, escaped: char };
    }
  }
  let count = 1;
  while (bytes.includes('\\u0000'.repeat(count))) {
    count++;
  }
  return { prefix: '\u0000'.repeat(count), escaped: '\\u0000'.repeat(count) };
}

function restoreSpecials(value: unknown, prefix: string, values: unknown[]): unknown {
  if (typeof value === 'string') {
    return value.startsWith(prefix) ? values[Number(value.slice(prefix.length))] : value;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item = value[i];
      if (typeof item === 'object' || typeof item === 'string') {
        value[i] = restoreSpecials(item, prefix, values);
      }
    }
    return value;
  }
  if (value !== null && typeof value === 'object') {
    const object = value as Record<string, unknown>;
    for (const key of Object.keys(object)) {
      if (key.startsWith(prefix)) {
        // A number where a key belongs: the original text was not valid JSON.
        throw new SyntaxError('Expecting property name enclosed in double quotes');
      }
      const item = object[key];
      if (typeof item === 'object' || typeof item === 'string') {
        object[key] = restoreSpecials(item, prefix, values);
      }
    }
  }
  return value;
}

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

/** Options of {@link dumpsPython}, named after `json.dumps`'s arguments. */
export interface DumpOptions {
  /** `indent`: spaces per level; omitted means one line, as Python's `indent=None`. */
  indent?: number;
  /** `sort_keys`: sort object keys by Unicode code point, as Python sorts `str`. */
  sortKeys?: boolean;
  /** `ensure_ascii` (default false here): escape every character outside printable ASCII. */
  ensureAscii?: boolean;
  /** `separators`; defaults to Python's: `(',', ': ')` with an indent, `(', ', ': ')` without. */
  separators?: readonly [string, string];
  /**
   * Without `ensureAscii`, write a lone surrogate as the character itself, as Python does
   * (the text then cannot be encoded as UTF-8), rather than as `\udXXX`.
   */
  rawLoneSurrogates?: boolean;
}

/**
 * Serialise a JSON value as Python's `json.dumps` does.
 *
 * #### Notes
 * With `{indent: 1, sortKeys: true}` the result equals `json.dumps(value, indent=1,
 * sort_keys=True, ensure_ascii=False, separators=(',', ': '))`: integers as digits, floats as
 * `repr(float)` (`1e-07`, `1e+16`, `0.1`), `NaN`/`Infinity`/`-Infinity` as Python writes them,
 * {@link PyNumber} by its text, strings escaped as Python escapes them (which is what
 * `JSON.stringify` does for well-formed strings), and keys in code point order.
 *
 * A JavaScript number that is an integer of at most 2^53 in magnitude is written as a Python
 * int; any other number as a Python float (see {@link pythonStr}). `bigint` is written as an
 * int. Properties whose value is `undefined` are skipped and `undefined` array items become
 * `null`, as `JSON.stringify` does. Any other non-JSON value throws a `TypeError`, as Python
 * does, and so does a cycle.
 *
 * With `ensureAscii` false, a lone surrogate is written as `\udXXX` (as `JSON.stringify` does)
 * unless `rawLoneSurrogates` asks for Python's output, the bare character.
 */
export function dumpsPython(value: unknown, options: DumpOptions = {}): string {
  return dumpsPythonChecked(value, options).text;
}

/**
 * {@link dumpsPython}, also telling whether the text holds a lone surrogate (only possible with
 * `rawLoneSurrogates`), which Python could not encode as UTF-8.
 */
export function dumpsPythonChecked(
  value: unknown,
  options: DumpOptions = {}
): { text: string; hasLoneSurrogate: boolean } {
  const indent = options.indent;
  const [itemSeparator, keySeparator] =
    options.separators ?? (indent === undefined ? [', ', ': '] : [',', ': ']);
  let hasLoneSurrogate = false;
  const quoteRaw = (text: string): string => {
    if (isWellFormed(text)) {
      return JSON.stringify(text);
    }
    hasLoneSurrogate = true;
    return quoteUnicodeRaw(text);
  };
  const quote = options.ensureAscii
    ? quoteAscii
    : options.rawLoneSurrogates
      ? quoteRaw
      : quoteUnicode;
  const sortKeys = options.sortKeys ?? false;
  const newlines: string[] = [];
  const newline = (depth: number): string =>
    (newlines[depth] ??= '\n' + ' '.repeat((indent ?? 0) * depth));
  const out: string[] = [];
  const ancestors = new Set<object>();

  const write = (item: unknown, depth: number): void => {
    switch (typeof item) {
      case 'string':
        out.push(quote(item));
        return;
      case 'number':
        out.push(formatNumber(item));
        return;
      case 'boolean':
        out.push(item ? 'true' : 'false');
        return;
      case 'bigint':
        out.push(item.toString());
        return;
      case 'undefined':
        out.push('null');
        return;
      case 'object':
        break;
      default:
        throw new TypeError(`Object of type ${typeof item} is not JSON serializable`);
    }
    if (item === null) {
      out.push('null');
      return;
    }
    if (item instanceof PyNumber) {
      out.push(item.text);
      return;
    }
    if (ancestors.has(item)) {
      throw new TypeError('Circular reference detected');
    }
    if (Array.isArray(item)) {
      if (item.length === 0) {
        out.push('[]');
        return;
      }
      ancestors.add(item);
      const inner = indent === undefined ? '' : newline(depth + 1);
      out.push('[', inner);
      for (let i = 0; i < item.length; i++) {
        if (i > 0) {
          out.push(itemSeparator, inner);
        }
        write(item[i], depth + 1);
      }
      out.push(indent === undefined ? '' : newline(depth), ']');
      ancestors.delete(item);
      return;
    }
    if (!isPlainObject(item)) {
      throw new TypeError(`Object of type ${item.constructor?.name} is not JSON serializable`);
    }
    const record = item as Record<string, unknown>;
    let keys = Object.keys(record).filter(key => record[key] !== undefined);
    if (keys.length === 0) {
      out.push('{}');
      return;
    }
    if (sortKeys) {
      keys = keys.sort(compareCodePoints);
    }
    ancestors.add(item);
    const inner = indent === undefined ? '' : newline(depth + 1);
    out.push('{', inner);
    for (let i = 0; i < keys.length; i++) {
      if (i > 0) {
        out.push(itemSeparator, inner);
      }
      out.push(quote(keys[i]), keySeparator);
      write(record[keys[i]], depth + 1);
    }
    out.push(indent === undefined ? '' : newline(depth), '}');
    ancestors.delete(item);
  };

  write(value, 0);
  return { text: out.join(''), hasLoneSurrogate };
}

/** Is this a JSON object (a plain object, not a class instance)? */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return false;
  }
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** A number as `json.dumps` writes it: see {@link dumpsPython}. */
export function formatNumber(value: number): string {
  if (Number.isInteger(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER) {
    return String(value);
  }
  if (Number.isNaN(value)) {
    return 'NaN';
  }
  if (!Number.isFinite(value)) {
    return value > 0 ? 'Infinity' : '-Infinity';
  }
  return floatRepr(value);
}

/**
 * Python's `repr(float)`, quickly: between 10^-4 and 10^16 both languages print the same shortest
 * round-trip digits positionally, and only an integral value needs Python's `.0`.
 */
function floatRepr(value: number): string {
  const magnitude = Math.abs(value);
  if (magnitude >= 1e-4 && magnitude < 1e16) {
    const text = String(value);
    return Number.isInteger(value) ? text + '.0' : text;
  }
  return pythonFloatRepr(value);
}

/** `JSON.stringify` escapes exactly what `ensure_ascii=False` escapes, with the same spelling. */
function quoteUnicode(text: string): string {
  return JSON.stringify(text);
}

/** `String.prototype.isWellFormed` (ES2024): no lone surrogates. */
function isWellFormed(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}

/** An escaped lone surrogate in `JSON.stringify` output, after its run of backslashes. */
const ESCAPED_SURROGATE = /(\\+)u(d[89a-f][0-9a-f]{2})/g;

/** Python's quoting of an ill-formed string: lone surrogates stay as they are. */
function quoteUnicodeRaw(text: string): string {
  const quoted = JSON.stringify(text);
  // An odd run of backslashes ends with the escape's own backslash.
  return quoted.replace(ESCAPED_SURROGATE, (match, slashes: string, hex: string) =>
    slashes.length % 2 === 1 ? slashes.slice(1) + String.fromCharCode(parseInt(hex, 16)) : match
  );
}

const NON_ASCII = /[\u007f-\uffff]/g;

function quoteAscii(text: string): string {
  const quoted = JSON.stringify(text);
  return NON_ASCII.test(quoted)
    ? quoted.replace(NON_ASCII, c => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))
    : quoted;
}

/**
 * Order two strings by Unicode code point, as Python orders `str` (and so `sort_keys`).
 * JavaScript's default order compares UTF-16 units, which puts astral characters (surrogate
 * pairs, from U+D800) before U+E000..U+FFFF.
 */
export function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) {
      if (x >= 0xd800 && y >= 0xd800) {
        return shiftSurrogates(x) - shiftSurrogates(y);
      }
      return x - y;
    }
  }
  return a.length - b.length;
}

/** Move surrogate units above U+E000..U+FFFF (for units from U+D800 upwards). */
function shiftSurrogates(unit: number): number {
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

// ---------------------------------------------------------------------------------------------
// Python string semantics
// ---------------------------------------------------------------------------------------------

/** The line boundaries of Python's `str.splitlines`. */
// eslint-disable-next-line no-control-regex -- the separators are control characters
const LINE_BOUNDARY = /\r\n|[\n\v\f\r\x1c-\x1e\x85\u2028\u2029]/g;

/**
 * Python's `text.splitlines(keepEnds)`: splits at `\n`, `\r`, `\r\n`, `\v`, `\f`, `\x1c`,
 * `\x1d`, `\x1e`, `\x85`, `\u2028` and `\u2029`; an empty string gives an empty list.
 */
export function pythonSplitLines(text: string, keepEnds: boolean): string[] {
  const lines: string[] = [];
  let start = 0;
  LINE_BOUNDARY.lastIndex = 0;
  for (let match = LINE_BOUNDARY.exec(text); match; match = LINE_BOUNDARY.exec(text)) {
    const end = match.index + match[0].length;
    lines.push(text.slice(start, keepEnds ? end : match.index));
    start = end;
  }
  if (start < text.length) {
    lines.push(text.slice(start));
  }
  return lines;
}

const SURROGATE = /[\ud800-\udfff]/;

/** Python's `len(text)`: the number of code points (a lone surrogate counts as one). */
export function codePointLength(text: string): number {
  if (!SURROGATE.test(text)) {
    return text.length;
  }
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
      }
    }
    count++;
  }
  return count;
}

/** Python's `text[:count]`: the first `count` code points. */
export function codePointPrefix(text: string, count: number): string {
  if (!SURROGATE.test(text)) {
    return text.slice(0, count);
  }
  let taken = 0;
  let i = 0;
  while (i < text.length && taken < count) {
    const unit = text.charCodeAt(i);
    const next = text.charCodeAt(i + 1);
    i += unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff ? 2 : 1;
    taken++;
  }
  return text.slice(0, i);
}

/** Characters `str.isprintable()` rejects: categories Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs. */
const NOT_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;
const PLAIN_ASCII = /^[\x20-\x7e]*$/;

/**
 * Python's `repr(text)` for a `str`.
 *
 * #### Notes
 * Printability comes from the Unicode tables of this JavaScript engine, which may be a newer
 * Unicode version than the Python's: a character assigned in between is escaped by Python only.
 */
export function pythonStrRepr(text: string): string {
  return pythonStrReprQuoted(text, text.includes("'") && !text.includes('"') ? '"' : "'");
}

/** {@link pythonStrRepr} with the quote given (as Python chose it for a longer text). */
export function pythonStrReprQuoted(text: string, quote: '"' | "'"): string {
  if (PLAIN_ASCII.test(text)) {
    return quote + text.replace(quote === "'" ? /[\\']/g : /\\/g, '\\$&') + quote;
  }
  let out = quote;
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    if (char === quote || char === '\\') {
      out += '\\' + char;
    } else if (code === 0x09) {
      out += '\\t';
    } else if (code === 0x0a) {
      out += '\\n';
    } else if (code === 0x0d) {
      out += '\\r';
    } else if (code < 0x20 || code === 0x7f) {
      out += '\\x' + code.toString(16).padStart(2, '0');
    } else if (code < 0x7f || !NOT_PRINTABLE.test(char)) {
      out += char;
    } else if (code <= 0xff) {
      out += '\\x' + code.toString(16).padStart(2, '0');
    } else if (code <= 0xffff) {
      out += '\\u' + code.toString(16).padStart(4, '0');
    } else {
      out += '\\U' + code.toString(16).padStart(8, '0');
    }
  }
  return out + quote;
}

/** Options of {@link pythonRepr}. */
export interface ReprOptions {
  /** Sort dict keys, as `pprint` does; `repr` keeps insertion order. */
  sortDicts?: boolean;
}

/**
 * Python's `repr()` of a JSON value as nbformat holds it: `None`, `True`, `1`, `1.0`, `'text'`,
 * `[1, 2]`, `{'a': 1}`.
 */
export function pythonRepr(value: unknown, options: ReprOptions = {}): string {
  switch (typeof value) {
    case 'string':
      return pythonStrRepr(value);
    case 'number':
      return Number.isInteger(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER
        ? String(value)
        : floatRepr(value);
    case 'boolean':
      return value ? 'True' : 'False';
    case 'bigint':
      return value.toString();
    case 'undefined':
      return 'None';
    default:
      break;
  }
  if (value === null) {
    return 'None';
  }
  if (value instanceof PyNumber) {
    return value.text;
  }
  if (Array.isArray(value)) {
    return '[' + value.map(item => pythonRepr(item, options)).join(', ') + ']';
  }
  if (typeof value === 'object') {
    const record = value as Record<string, unknown>;
    let keys = Object.keys(record);
    if (options.sortDicts) {
      keys = keys.sort(compareCodePoints);
    }
    return (
      '{' +
      keys.map(key => pythonStrRepr(key) + ': ' + pythonRepr(record[key], options)).join(', ') +
      '}'
    );
  }
  return String(value);
}

/**
 * Python's `str()` of a JSON value: like {@link pythonRepr} except that a string is itself.
 * (For scalars this agrees with `pythonStr` in `pynumber.ts`.)
 */
export function pythonToStr(value: unknown): string {
  return typeof value === 'string' ? value : pythonRepr(value);
}

// ---------------------------------------------------------------------------------------------
// Python value semantics
// ---------------------------------------------------------------------------------------------

/** The Python type of a JSON value as nbformat holds it. */
export type PythonKind = 'dict' | 'list' | 'str' | 'int' | 'float' | 'bool' | 'NoneType';

/**
 * The Python type of a value: an integral JS number up to 2^53 is an `int`, any other number a
 * `float`, and a {@link PyNumber} says which it is. Anything that is not JSON counts as a dict.
 */
export function pythonKind(value: unknown): PythonKind {
  switch (typeof value) {
    case 'string':
      return 'str';
    case 'boolean':
      return 'bool';
    case 'number':
      return Number.isInteger(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER
        ? 'int'
        : 'float';
    case 'bigint':
      return 'int';
    case 'undefined':
      return 'NoneType';
    default:
      break;
  }
  if (value === null) {
    return 'NoneType';
  }
  if (value instanceof PyNumber) {
    return value.kind;
  }
  return Array.isArray(value) ? 'list' : 'dict';
}

/**
 * `type(value).__name__` as nbformat holds the value: dicts are nbformat's `NotebookNode`, which
 * is what Python's error messages name.
 */
export function pythonTypeName(value: unknown): string {
  const kind = pythonKind(value);
  return kind === 'dict' ? 'NotebookNode' : kind;
}

/** Is this a Python number (`int`, `float`, or `bool`, which is an `int` in Python)? */
function numericValue(value: unknown): number | undefined {
  if (typeof value === 'number') {
    return value;
  }
  if (typeof value === 'boolean') {
    return value ? 1 : 0;
  }
  if (value instanceof PyNumber) {
    return Number(value.text);
  }
  if (typeof value === 'bigint') {
    return Number(value);
  }
  return undefined;
}

/**
 * Python's `a == b` for JSON values (`True == 1 == 1.0`; lists and dicts compare by content).
 *
 * #### Notes
 * Numbers compare as doubles, so two distinct integers beyond 2^53 may compare equal.
 */
export function pythonEquals(a: unknown, b: unknown): boolean {
  if (a === b) {
    return true;
  }
  if (typeof a === 'string' || typeof b === 'string') {
    return false;
  }
  const x = numericValue(a);
  const y = numericValue(b);
  if (x !== undefined || y !== undefined) {
    if (a instanceof PyNumber && b instanceof PyNumber && a.kind === 'int' && b.kind === 'int') {
      return a.text === b.text;
    }
    return x === y;
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((item, index) => pythonEquals(item, b[index]))
    );
  }
  if (isMapping(a) && isMapping(b)) {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length &&
      keys.every(
        key => Object.prototype.hasOwnProperty.call(b, key) && pythonEquals(a[key], b[key])
      )
    );
  }
  return (a === null || a === undefined) && (b === null || b === undefined);
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return pythonKind(value) === 'dict';
}

// ---------------------------------------------------------------------------------------------
// Python operations on notebook nodes, failing where Python fails
// ---------------------------------------------------------------------------------------------

function hasKey(record: unknown, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(record, key);
}

/** `node.name` on an nbformat `NotebookNode`: the key's value, or an `AttributeError`. */
export function pyAttr(node: unknown, name: string): unknown {
  if (pythonKind(node) !== 'dict') {
    throw new PythonException(
      'AttributeError',
      `'${pythonTypeName(node)}' object has no attribute '${name}'`
    );
  }
  if (!hasKey(node, name)) {
    throw new PythonException('AttributeError', name);
  }
  return (node as Record<string, unknown>)[name];
}

/** `node.name = value` (or `node[name] = value`) on a dict; an error on anything else. */
export function pySet(node: unknown, name: string, value: unknown): void {
  if (pythonKind(node) !== 'dict') {
    throw new PythonException(
      'AttributeError',
      `'${pythonTypeName(node)}' object has no attribute '${name}'`
    );
  }
  (node as Record<string, unknown>)[name] = value;
}

/** `node[key] = value`, failing as Python does on something other than a dict. */
export function pySetItem(node: unknown, key: string, value: unknown): void {
  const kind = pythonKind(node);
  if (kind === 'dict') {
    (node as Record<string, unknown>)[key] = value;
    return;
  }
  throw new PythonException(
    'TypeError',
    kind === 'list'
      ? subscriptError(node)
      : `'${pythonTypeName(node)}' object does not support item assignment`
  );
}

/** `node.get(key, fallback)`. */
export function pyGet(node: unknown, key: string, fallback: unknown): unknown {
  if (pythonKind(node) !== 'dict') {
    throw new PythonException(
      'AttributeError',
      `'${pythonTypeName(node)}' object has no attribute 'get'`
    );
  }
  return hasKey(node, key) ? (node as Record<string, unknown>)[key] : fallback;
}

/** `node.pop(key, fallback)`. */
export function pyPop(node: unknown, key: string, fallback: unknown): unknown {
  const kind = pythonKind(node);
  if (kind === 'list') {
    throw new PythonException('TypeError', 'pop expected at most 1 argument, got 2');
  }
  if (kind !== 'dict') {
    throw new PythonException(
      'AttributeError',
      `'${pythonTypeName(node)}' object has no attribute 'pop'`
    );
  }
  const record = node as Record<string, unknown>;
  if (!hasKey(record, key)) {
    return fallback;
  }
  const value = record[key];
  delete record[key];
  return value;
}

/** `node.setdefault(key, fallback)`. */
export function pySetDefault(node: unknown, key: string, fallback: unknown): unknown {
  if (pythonKind(node) !== 'dict') {
    throw new PythonException(
      'AttributeError',
      `'${pythonTypeName(node)}' object has no attribute 'setdefault'`
    );
  }
  const record = node as Record<string, unknown>;
  if (!hasKey(record, key)) {
    record[key] = fallback;
  }
  return record[key];
}

/** `node[key]` on a dict (a `KeyError` when missing); an error on anything else. */
export function pyItem(node: unknown, key: string): unknown {
  const kind = pythonKind(node);
  if (kind !== 'dict') {
    throw new PythonException('TypeError', subscriptError(node));
  }
  if (!hasKey(node, key)) {
    throw new PythonException('KeyError', pythonStrRepr(key), `KeyError(${pythonStrRepr(key)})`);
  }
  return (node as Record<string, unknown>)[key];
}

/** Python's error for `node["key"]` on something other than a dict. */
function subscriptError(node: unknown): string {
  switch (pythonKind(node)) {
    case 'str':
      return "string indices must be integers, not 'str'";
    case 'list':
      return 'list indices must be integers or slices, not str';
    default:
      return `'${pythonTypeName(node)}' object is not subscriptable`;
  }
}

/** `node.items()` / `node.values()`: the node must be a dict. */
export function pyEntries(node: unknown, method: 'items' | 'values'): [string, unknown][] {
  if (pythonKind(node) !== 'dict') {
    throw new PythonException(
      'AttributeError',
      `'${pythonTypeName(node)}' object has no attribute '${method}'`
    );
  }
  return Object.entries(node as Record<string, unknown>);
}

/** The items Python's `for x in value` visits, or a `TypeError` when it cannot iterate. */
export function pythonIterable(value: unknown): unknown[] {
  switch (pythonKind(value)) {
    case 'list':
      return value as unknown[];
    case 'dict':
      return Object.keys(value as object);
    case 'str':
      return Array.from(value as string);
    default:
      throw new PythonException('TypeError', `'${pythonTypeName(value)}' object is not iterable`);
  }
}

/** Python's `item in container`. */
export function pyContains(container: unknown, item: unknown): boolean {
  const kind = pythonKind(container);
  switch (kind) {
    case 'dict':
      requireHashable(item);
      return typeof item === 'string' && hasKey(container, item);
    case 'str':
      if (typeof item !== 'string') {
        throw new PythonException(
          'TypeError',
          `'in <string>' requires string as left operand, not ${pythonTypeName(item)}`
        );
      }
      return (container as string).includes(item);
    case 'list':
      return (container as unknown[]).some(element => pythonEquals(element, item));
    default:
      throw new PythonException(
        'TypeError',
        `argument of type '${pythonTypeName(container)}' is not iterable`
      );
  }
}

/** Python refuses lists and dicts as set members and dict keys. */
export function requireHashable(value: unknown): void {
  const kind = pythonKind(value);
  if (kind === 'list' || kind === 'dict') {
    throw new PythonException('TypeError', `unhashable type: '${pythonTypeName(value)}'`);
  }
}

/** `separator.join(items)`: every item must be a string. */
export function pyJoin(separator: string, items: unknown): string {
  const list = pythonIterable(items);
  list.forEach((item, index) => {
    if (typeof item !== 'string') {
      throw new PythonException(
        'TypeError',
        `sequence item ${index}: expected str instance, ${pythonTypeName(item)} found`
      );
    }
  });
  return (list as string[]).join(separator);
}

/** `value.method` for a `str` method: an `AttributeError` on anything but a string. */
export function requireStr(value: unknown, method: string): string {
  if (typeof value !== 'string') {
    throw new PythonException(
      'AttributeError',
      `'${pythonTypeName(value)}' object has no attribute '${method}'`
    );
  }
  return value;
}

/** Python's `int(value)` for a JSON value. */
export function pythonInt(value: unknown): number | PyNumber {
  const kind = pythonKind(value);
  let digits: string;
  if (kind === 'int') {
    return value as number | PyNumber;
  } else if (kind === 'bool') {
    return value ? 1 : 0;
  } else if (kind === 'float') {
    const number = Number(value);
    if (Number.isNaN(number)) {
      throw new PythonException('ValueError', 'cannot convert float NaN to integer');
    }
    if (!Number.isFinite(number)) {
      throw new PythonException('OverflowError', 'cannot convert float infinity to integer');
    }
    digits = BigInt(Math.trunc(number)).toString();
  } else if (kind === 'str' && /^\s*[+-]?\d+(?:_\d+)*\s*$/.test(value as string)) {
    digits = BigInt((value as string).trim().replace(/_/g, '')).toString();
  } else if (kind === 'str') {
    throw new PythonException(
      'ValueError',
      `invalid literal for int() with base 10: ${pythonStrRepr(value as string)}`
    );
  } else {
    throw new PythonException(
      'TypeError',
      `int() argument must be a string, a bytes-like object or a real number, not '${pythonTypeName(value)}'`
    );
  }
  const number = Number(digits);
  return Number.isSafeInteger(number) ? number : new PyNumber('int', digits);
}

/**
 * The `UnicodeEncodeError` Python raises when encoding `text`: it reports the first run of code
 * points the codec refuses (`ascii`: beyond U+007F; `utf-8`: lone surrogates).
 */
export function unicodeEncodeError(encoding: 'ascii' | 'utf-8', text: string): PythonException {
  const refused =
    encoding === 'ascii'
      ? (code: number) => code > 0x7f
      : (code: number) => code >= 0xd800 && code <= 0xdfff;
  const reason = encoding === 'ascii' ? 'ordinal not in range(128)' : 'surrogates not allowed';
  let position = 0;
  let start = -1;
  let end = -1;
  let first = 0;
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    if (start < 0 && refused(code)) {
      start = position;
      first = code;
    } else if (start >= 0 && !refused(code)) {
      end = position;
      break;
    }
    position++;
  }
  if (end < 0) {
    end = position;
  }
  const where =
    end === start + 1
      ? `character '${escapeCodePoint(first)}' in position ${start}`
      : `characters in position ${start}-${end - 1}`;
  return new PythonException(
    'UnicodeEncodeError',
    `'${encoding}' codec can't encode ${where}: ${reason}`,
    `UnicodeEncodeError(${pythonStrRepr(encoding)}, ${pythonStrRepr(text)}, ${start}, ${end}, ${pythonStrRepr(reason)})`
  );
}

/** How Python's codec errors show a code point: `\xe9`, `\ud800`, `\U0001f600`. */
function escapeCodePoint(code: number): string {
  if (code <= 0xff) {
    return '\\x' + code.toString(16).padStart(2, '0');
  }
  if (code <= 0xffff) {
    return '\\u' + code.toString(16).padStart(4, '0');
  }
  return '\\U' + code.toString(16).padStart(8, '0');
}
