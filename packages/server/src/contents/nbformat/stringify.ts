/**
 * The bytes of nbformat 4's `json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False)`,
 * written by V8's native `JSON.stringify`, which is several times faster than any serialiser in
 * JavaScript.
 *
 * `JSON.stringify(value, null, 1)` already lays JSON out as Python's `indent=1` with
 * `separators=(',', ': ')` does, writes `[]` and `{}` for empty containers, and escapes a
 * well-formed string exactly as `ensure_ascii=False` does. What it does differently is handled
 * here:
 * - Key order: a prepared copy of the value holds every object's keys in code point order, as
 *   `sort_keys` sorts them. A JavaScript object always enumerates integer-like keys (`"9"`,
 *   `"10"`) first, in numeric order; an object whose sorted keys cannot be enumerated in that
 *   order is written by {@link dumpsPythonChecked} instead, and spliced in.
 * - Numbers that JavaScript spells differently from Python (`1.0` and big integers held as
 *   {@link PyNumber}, `1e-07`, integral floats beyond 2^53, `NaN`, `Infinity`) and `bigint`s are
 *   replaced, in the copy, by marker strings made of a per-process random nonce and a sequence
 *   number, and the markers by Python's spelling in the output.
 * - Lone surrogates, which `JSON.stringify` escapes and Python writes as they are (and then fails
 *   to encode), and anything that is not JSON, make this give up: the caller then takes the
 *   slower path, which fails exactly as Python does.
 *
 * A marker is recognised only as a whole string that `JSON.stringify` opened with a real quote,
 * and the markers must appear exactly once each and in the order they were made; a notebook that
 * happens to hold the nonce anyway (it would have to guess 96 random bits) only makes this give
 * up, never write wrong bytes.
 */
import { randomBytes } from 'node:crypto';

import { PyNumber } from './pynumber';
import { compareCodePoints, dumpsPythonChecked, formatNumber, isPlainObject } from './pyjson';

/** ASCII only, so that the text of a notebook without other non-Latin-1 characters stays one-byte. */
const NONCE = `nbformat-${randomBytes(12).toString('hex')}-`;
const QUOTED_NONCE = '"' + NONCE;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Thrown inside this module when the fast path cannot vouch for its output. */
const GIVE_UP = new Error('The notebook needs the exact serialiser');

/** The state of one serialisation: the replacement text of each marker made so far. */
interface Markers {
  nonce: string;
  texts: string[];
}

/**
 * `json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False)` followed by `trailer`, as
 * UTF-8 bytes; or undefined when only {@link dumpsPythonChecked} can write the value exactly
 * (lone surrogates, values that are not JSON, nesting deeper than the native stack allows, or a
 * marker clash).
 *
 * @param nonce - tests only: the marker prefix, to provoke clashes.
 */
export function dumpsNotebookJson(
  value: unknown,
  trailer: string,
  nonce: string = NONCE
): Buffer | undefined {
  const markers: Markers = { nonce, texts: [] };
  let text: string;
  try {
    text = JSON.stringify(prepare(value, 0, markers), null, 1);
  } catch (error) {
    if (error === GIVE_UP || error instanceof RangeError) {
      return undefined;
    }
    throw error;
  }
  if (hasEscapedLoneSurrogate(text)) {
    return undefined;
  }
  return markers.texts.length === 0
    ? encode(text, trailer)
    : encodeWithMarkers(text, trailer, '"' + nonce, markers.texts);
}

/** The test suite's view of the marker prefix, to check that clashes are detected. */
export const MARKER_NONCE_FOR_TESTS = NONCE;

/** Is this number written by `JSON.stringify` as Python writes it? */
function sameSpelling(value: number): boolean {
  if (Number.isInteger(value)) {
    // An int for Python up to 2^53; beyond, a float (`1e+16`), which JavaScript spells in full.
    return Math.abs(value) <= Number.MAX_SAFE_INTEGER;
  }
  // From 1e-4 both print the shortest round-trip digits positionally; NaN and the infinities
  // fail this test, as JSON.stringify writes them as null.
  return Math.abs(value) >= 1e-4 && Number.isFinite(value);
}

function marker(markers: Markers, text: string): string {
  const name = markers.nonce + markers.texts.length;
  markers.texts.push(text);
  return name;
}

/**
 * The value to hand to `JSON.stringify`: the same value when it needs no change (shared, not
 * copied), else a copy with sorted keys and markers.
 */
function prepare(value: unknown, depth: number, markers: Markers): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'undefined':
      return value;
    case 'number':
      return sameSpelling(value) ? value : marker(markers, formatNumber(value));
    case 'bigint':
      return marker(markers, value.toString());
    case 'object':
      break;
    default:
      throw GIVE_UP;
  }
  if (value === null) {
    return value;
  }
  if (Array.isArray(value)) {
    return prepareArray(value, depth, markers);
  }
  if (value instanceof PyNumber) {
    return marker(markers, value.text);
  }
  if (!isPlainObject(value)) {
    throw GIVE_UP;
  }
  return prepareObject(value, depth, markers);
}

function prepareArray(array: unknown[], depth: number, markers: Markers): unknown[] {
  let copy: unknown[] | undefined;
  for (let i = 0; i < array.length; i++) {
    const item = array[i];
    if (typeof item === 'string') {
      // The bulk of a notebook: lines of text.
      if (copy !== undefined) {
        copy.push(item);
      }
      continue;
    }
    const prepared = prepare(item, depth + 1, markers);
    if (copy === undefined && prepared !== item) {
      copy = array.slice(0, i);
    }
    if (copy !== undefined) {
      copy.push(prepared);
    }
  }
  return copy ?? array;
}

function prepareObject(
  record: Record<string, unknown>,
  depth: number,
  markers: Markers
): Record<string, unknown> | string {
  const keys = Object.keys(record);
  let sorted = true;
  for (let i = 1; i < keys.length; i++) {
    if (compareCodePoints(keys[i - 1], keys[i]) > 0) {
      sorted = false;
      break;
    }
  }
  if (sorted) {
    // JSON.stringify enumerates the keys in this order, and so does a copy made in it.
    let copy: Record<string, unknown> | undefined;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const item = record[key];
      const prepared = typeof item === 'string' ? item : prepare(item, depth + 1, markers);
      if (copy === undefined && prepared !== item) {
        copy = {};
        for (let k = 0; k < i; k++) {
          setOwn(copy, keys[k], record[keys[k]]);
        }
      }
      if (copy !== undefined) {
        setOwn(copy, key, prepared);
      }
    }
    return copy ?? record;
  }
  keys.sort(compareCodePoints);
  const copy: Record<string, unknown> = {};
  let integerLike = false;
  for (const key of keys) {
    setOwn(copy, key, record[key]);
    const first = key.charCodeAt(0);
    integerLike ||= first >= 0x30 && first <= 0x39;
  }
  if (integerLike && !sameKeys(Object.keys(copy), keys)) {
    // Integer-like keys come first, in numeric order: Python's order cannot be enumerated.
    return marker(markers, dumpsSubtree(record, depth));
  }
  for (const key of keys) {
    const item = copy[key];
    if (typeof item !== 'string') {
      setOwn(copy, key, prepare(item, depth + 1, markers));
    }
  }
  return copy;
}

/** `record[key] = value` as an own property, even for `__proto__`. */
function setOwn(record: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(record, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true
    });
  } else {
    record[key] = value;
  }
}

function sameKeys(a: string[], b: string[]): boolean {
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) {
      return false;
    }
  }
  return true;
}

/** A value written by the exact serialiser, indented to sit at `depth`. */
function dumpsSubtree(value: unknown, depth: number): string {
  const { text, hasLoneSurrogate } = dumpsPythonChecked(value, {
    indent: 1,
    sortKeys: true,
    rawLoneSurrogates: true
  });
  if (hasLoneSurrogate) {
    throw GIVE_UP;
  }
  // Newlines of JSON text are all layout: strings hold theirs escaped.
  return depth === 0 ? text : text.replaceAll('\n', '\n' + ' '.repeat(depth));
}

/**
 * Does `JSON.stringify`'s output hold a `\udXXX` escape, which it writes only for a lone
 * surrogate? (A string holding the six characters has its backslash escaped, so the escape's
 * backslash is preceded by an even number of backslashes only when it is real.)
 */
function hasEscapedLoneSurrogate(text: string): boolean {
  for (let at = text.indexOf('\\ud'); at >= 0; at = text.indexOf('\\ud', at + 1)) {
    const next = text.charCodeAt(at + 3);
    const isSurrogate = (next >= 0x38 && next <= 0x39) || (next >= 0x61 && next <= 0x66);
    if (!isSurrogate) {
      continue;
    }
    let backslashes = 0;
    for (let k = at - 1; k >= 0 && text.charCodeAt(k) === BACKSLASH; k--) {
      backslashes++;
    }
    if (backslashes % 2 === 0) {
      return true;
    }
  }
  return false;
}

/** `text + trailer` as UTF-8, without building the concatenated string. */
function encode(text: string, trailer: string): Buffer {
  const length = Buffer.byteLength(text, 'utf8');
  const bytes = Buffer.allocUnsafe(length + Buffer.byteLength(trailer, 'utf8'));
  bytes.write(text, 0, length, 'utf8');
  bytes.write(trailer, length, 'utf8');
  return bytes;
}

/** Text between markers shorter than this is gathered into one string before it is written. */
const BATCH = 16 * 1024;

/**
 * `text + trailer` as UTF-8 with each marker (a whole JSON string `"<nonce><n>"`) replaced by its
 * text; undefined when the markers are not exactly the ones made, in order.
 */
function encodeWithMarkers(
  text: string,
  trailer: string,
  quotedNonce: string,
  replacements: string[]
): Buffer | undefined {
  // Find the markers, and the size of the result, before writing anything.
  const starts: number[] = [];
  let length = Buffer.byteLength(text, 'utf8') + Buffer.byteLength(trailer, 'utf8');
  let at = text.indexOf(quotedNonce);
  while (at >= 0) {
    if (text.charCodeAt(at - 1) === BACKSLASH) {
      // An escaped quote: the nonce is inside some string of the notebook.
      at = text.indexOf(quotedNonce, at + 1);
      continue;
    }
    const index = starts.length;
    const digits = String(index);
    const end = at + quotedNonce.length + digits.length;
    if (
      index >= replacements.length ||
      !text.startsWith(digits, at + quotedNonce.length) ||
      text.charCodeAt(end) !== QUOTE
    ) {
      return undefined;
    }
    starts.push(at);
    // The marker is ASCII.
    length += Buffer.byteLength(replacements[index], 'utf8') - (end + 1 - at);
    at = text.indexOf(quotedNonce, end + 1);
  }
  if (starts.length !== replacements.length) {
    return undefined;
  }
  const bytes = Buffer.allocUnsafe(length);
  let position = 0;
  let pending = '';
  let from = 0;
  const flush = (): void => {
    if (pending !== '') {
      position += bytes.write(pending, position, 'utf8');
      pending = '';
    }
  };
  for (let index = 0; index <= starts.length; index++) {
    const start = index < starts.length ? starts[index] : text.length;
    if (start - from >= BATCH) {
      flush();
      position += bytes.write(text.slice(from, start), position, 'utf8');
    } else {
      pending += text.slice(from, start);
    }
    if (index < starts.length) {
      pending += replacements[index];
      if (pending.length >= BATCH) {
        flush();
      }
      from = start + quotedNonce.length + String(index).length + 1;
    }
  }
  pending += trailer;
  flush();
  return bytes;
}
