/**
 * JSON as Python's `json` module reads and writes it.
 *
 * Jupyter writes every notebook with `json.dumps(indent=1, sort_keys=True, ensure_ascii=False)`.
 * To save byte-identical files we must keep what JavaScript loses on `JSON.parse`: whether a
 * number was a float (`1.0`) and the digits of integers beyond 2^53. Those come back as
 * {@link PyNumber}; every other value is a plain JavaScript value.
 */
import { PyNumber, formatNumber, pythonFloatRepr } from './pynumber';
import { compareCodePoints } from './repr';

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

/**
 * {@link parsePythonJson} of bytes, also telling whether a plain `JSON.parse` read them (no
 * lexeme needed care), for a caller that may read the same bytes again.
 *
 * @param plain - the caller knows that these exact bytes need no care (an earlier parse said
 *   so): the scan for such lexemes, a third of the time of a parse, is skipped.
 */
export function parsePythonJsonBytes(
  bytes: Buffer,
  plain = false
): { value: unknown; plain: boolean } {
  const specials = plain ? null : findSpecialLexemes(bytes);
  if (specials === null) {
    return { value: JSON.parse(bytes.toString('utf8')), plain: true };
  }
  return { value: parseWithSpecials(bytes, specials), plain: false };
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
    return new PyNumber('float', pythonFloatRepr(Number(lexeme)));
  }
  const lexeme = asciiSlice(bytes, start, end);
  if (!JSON_NUMBER.test(lexeme)) {
    return undefined;
  }
  const value = Number(lexeme);
  return Number.isInteger(value) ? new PyNumber('float', pythonFloatRepr(value)) : undefined;
}

/** Strings are looked at byte by byte up to this length, beyond it with `indexOf`. */
const INLINE_STRING_BYTES = 64;

/** The index just after the string that opens at `start` (or the end of the input). */
function endOfString(bytes: Uint8Array, start: number): number {
  // Most strings are short (keys, lines of text): reading their bytes here costs less than a
  // call into indexOf, which pays for the long ones (images).
  const inline = Math.min(start + INLINE_STRING_BYTES, bytes.length);
  let from = start + 1;
  while (from < inline) {
    const code = bytes[from];
    if (code === QUOTE) {
      return from + 1;
    }
    from += code === BACKSLASH ? 2 : 1;
  }
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
    if (text.isWellFormed()) {
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

/** `JSON.stringify` escapes exactly what `ensure_ascii=False` escapes, with the same spelling. */
function quoteUnicode(text: string): string {
  return JSON.stringify(text);
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
