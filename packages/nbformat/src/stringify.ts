/**
 * JSON written by V8's native `JSON.stringify`, which is several times faster than any serialiser
 * in JavaScript, with Python's spelling of numbers: the bytes of nbformat 4's
 * `json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False)` for notebook files, and the
 * JSON of HTTP answers, where Jupyter spells numbers as Python does.
 *
 * `JSON.stringify(value, null, 1)` already lays JSON out as Python's `indent=1` with
 * `separators=(',', ': ')` does, writes `[]` and `{}` for empty containers, and escapes a
 * well-formed string exactly as `ensure_ascii=False` does. What it does differently is handled
 * here:
 * - Key order: a prepared copy of the value holds every object's keys in code point order, as
 *   `sort_keys` sorts them. A JavaScript object always enumerates integer-like keys (`"9"`,
 *   `"10"`) first, in numeric order; in an object whose sorted keys cannot be enumerated in that
 *   order, every key is replaced by a marker (see below) made in that order.
 * - Numbers that JavaScript spells differently from Python (`1.0` and big integers held as
 *   {@link PyNumber}, `1e-07`, integral floats beyond 2^53, `NaN`, `Infinity`) and `bigint`s are
 *   replaced, in the copy, by marker strings made of a per-process random nonce and a sequence
 *   number, and the markers (whole JSON strings, quotes included) by Python's spelling in the
 *   output.
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

import { isPlainObject } from './json';
import { PyNumber, formatNumber, stringifiesAsPython } from './pynumber';
import { compareCodePoints } from './repr';

/** ASCII only, so that the text of a notebook without other non-Latin-1 characters stays one-byte. */
const NONCE = freshNonce();

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Thrown inside this module when the fast path cannot vouch for its output. */
const GIVE_UP = new Error('The notebook needs the exact serialiser');

/**
 * A long string, written by encoding it straight into the output when it needs no escapes, which
 * takes a third of the time `JSON.stringify` takes to scan and copy it.
 */
class LongString {
  constructor(readonly text: string) {}
}

/** Strings from this length on are {@link LongString}s (base64 images, long lines). */
const LONG_STRING = 1024;

/** The state of one serialisation: what each marker made so far stands for. */
interface Markers {
  nonce: string;
  texts: (string | LongString)[];
}

/**
 * `json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False)` followed by `trailer`, as
 * UTF-8 bytes; or undefined when only `dumpsPythonChecked` can write the value exactly (lone
 * surrogates, values that are not JSON, nesting deeper than the native stack allows, or a marker
 * clash).
 *
 * #### Notes
 * The members of a top-level dict, and the items of its lists (a notebook's cells), are
 * stringified one by one and encoded straight away: no string of the whole file is ever built.
 *
 * @param nonce - the marker prefix; tests pass their own to provoke clashes.
 */
export function dumpsNotebookJson(
  value: unknown,
  trailer: string,
  nonce: string = NONCE
): Buffer | undefined {
  const markers: Markers = { nonce, texts: [] };
  try {
    const prepared = prepare(value, markers);
    const output = new Output(markers);
    if (isPlainObject(prepared)) {
      writeTopLevelDict(prepared, output);
    } else {
      output.json(JSON.stringify(prepared, null, 1), 0, 0);
    }
    return output.finish(trailer);
  } catch (error) {
    if (error === GIVE_UP || error instanceof RangeError) {
      return undefined;
    }
    throw error;
  }
}

/** The marker prefix of this process, for tests. */
export function markerNonce(): string {
  return NONCE;
}

const OPEN_DICT = Buffer.from('{\n ', 'latin1');
const NEXT_KEY = Buffer.from(',\n ', 'latin1');
const KEY_SEPARATOR = Buffer.from(': ', 'latin1');
const CLOSE_DICT = Buffer.from('\n}', 'latin1');
const OPEN_LIST = Buffer.from('[\n  ', 'latin1');
const NEXT_ITEM = Buffer.from(',\n  ', 'latin1');
const CLOSE_LIST = Buffer.from('\n ]', 'latin1');

/** `{"key": value, ...}` at depth 0, each value (or each item of a list) on its own. */
function writeTopLevelDict(record: Record<string, unknown>, output: Output): void {
  // JSON.stringify's order, which `prepare` made Python's (or marked the keys).
  const keys = Object.keys(record).filter(key => record[key] !== undefined);
  if (keys.length === 0) {
    output.bytes(Buffer.from('{}', 'latin1'));
    return;
  }
  for (let k = 0; k < keys.length; k++) {
    output.bytes(k === 0 ? OPEN_DICT : NEXT_KEY);
    output.json(JSON.stringify(keys[k]), 0, 0);
    output.bytes(KEY_SEPARATOR);
    const item = record[keys[k]];
    if (Array.isArray(item) && item.length > 0) {
      for (let i = 0; i < item.length; i++) {
        output.bytes(i === 0 ? OPEN_LIST : NEXT_ITEM);
        // In two lists, the item is laid out at depth 2; the lists' text is cut off.
        output.json(JSON.stringify([[item[i]]], null, 1), 7, 5);
      }
      output.bytes(CLOSE_LIST);
    } else {
      output.json(JSON.stringify([item], null, 1), 3, 2);
    }
  }
  output.bytes(CLOSE_DICT);
}

/**
 * `JSON.stringify(value)`, as UTF-8 bytes, except that the numbers it spells differently from
 * Python's `json.dumps` are written as Python writes them: {@link PyNumber}s (`1.0`, big
 * integers), floats such as `1e-07` and integral floats beyond 2^53. Jupyter answers with Python's
 * spelling, so a Python client reads back exactly the notebook on disk.
 *
 * #### Notes
 * Unlike a file, an answer is read by browsers, whose `JSON.parse` knows no `NaN`: the non-finite
 * numbers stay `null`, as `JSON.stringify` writes them. Any value `JSON.stringify` takes is
 * taken (`toJSON`, lone surrogates escaped).
 *
 * A value made of plain objects, arrays and JSON scalars (every contents model) is prepared as a
 * notebook file is (see {@link prepareAnswer}) and written by `JSON.stringify` without a replacer:
 * a replacer function is called from native code for every key and value, which cost more than
 * the serialisation itself (a notebook answer was written at half the speed). Anything else (a
 * `Date`, a class instance, a cycle) takes the replacer, which handles every value
 * `JSON.stringify` takes.
 *
 * @param nonce - the marker prefix; tests pass their own to provoke clashes, which are resolved
 *   by writing again with a new random prefix.
 */
export function stringifyPythonNumbers(value: unknown, nonce: string = NONCE): Buffer {
  const markers: Markers = { nonce, texts: [] };
  let text: string | undefined;
  try {
    text = JSON.stringify(prepareAnswer(value, markers));
  } catch (error) {
    if (error !== GIVE_UP && !(error instanceof RangeError)) {
      throw error;
    }
  }
  if (text === undefined) {
    return stringifyWithReplacer(value, nonce);
  }
  const output = new Output(markers, true);
  try {
    output.json(text, 0, 0);
    return output.finish('');
  } catch (error) {
    if (error === GIVE_UP) {
      return stringifyPythonNumbers(value, freshNonce());
    }
    throw error;
  }
}

/**
 * {@link stringifyPythonNumbers} for any value: `JSON.stringify` with a replacer (exported for
 * the tests, which hold the faster path to its output).
 */
export function stringifyWithReplacer(value: unknown, nonce: string = NONCE): Buffer {
  const markers: Markers = { nonce, texts: [] };
  const text = JSON.stringify(value, function (this: unknown, key: string, item: unknown) {
    // `item` has been through `toJSON` already; a PyNumber's is a plain number.
    const original = (this as Record<string, unknown>)[key];
    if (original instanceof PyNumber) {
      return marker(markers, original.text);
    }
    if (typeof item === 'number' && Number.isFinite(item) && !stringifiesAsPython(item)) {
      return marker(markers, formatNumber(item));
    }
    return item;
  });
  const output = new Output(markers, true);
  try {
    output.json(text, 0, 0);
    return output.finish('');
  } catch (error) {
    if (error === GIVE_UP) {
      return stringifyWithReplacer(value, freshNonce());
    }
    throw error;
  }
}

/** A new marker prefix, unknown to anyone. */
function freshNonce(): string {
  return `nbformat-${randomBytes(12).toString('hex')}-`;
}

/** The text's bytes, piece by piece, with markers replaced. */
class Output {
  private readonly pieces: Buffer[] = [];
  private length = 0;
  /** The number of markers replaced so far. */
  private replaced = 0;
  private readonly quotedNonce: string;

  /**
   * @param allowLoneSurrogates - keep `JSON.stringify`'s `\udXXX` escapes, which Python would not
   *   write (a file), rather than giving up.
   */
  constructor(
    private readonly markers: Markers,
    private readonly allowLoneSurrogates = false
  ) {
    this.quotedNonce = '"' + markers.nonce;
  }

  bytes(piece: Buffer): void {
    this.pieces.push(piece);
    this.length += piece.length;
  }

  /**
   * Add `JSON.stringify` output, less `head` leading and `tail` trailing characters (ASCII, and
   * never part of a marker), with its markers replaced.
   */
  json(stringified: string, head: number, tail: number): void {
    const text =
      head === 0 && tail === 0 ? stringified : stringified.slice(head, stringified.length - tail);
    if (!this.allowLoneSurrogates && hasEscapedLoneSurrogate(text)) {
      throw GIVE_UP;
    }
    if (this.markers.texts.length === 0) {
      this.bytes(Buffer.from(text, 'utf8'));
      return;
    }
    // Each marker is a whole JSON string `"<nonce><n>"`, and they must come in the order they
    // were made, the order in which `JSON.stringify` visits the values.
    const quotedNonce = this.quotedNonce;
    const texts = this.markers.texts;
    let pending = '';
    let from = 0;
    let at = text.indexOf(quotedNonce);
    while (at >= 0) {
      if (text.charCodeAt(at - 1) === BACKSLASH) {
        // An escaped quote: the nonce is inside some string of the notebook.
        at = text.indexOf(quotedNonce, at + 1);
        continue;
      }
      const index = this.replaced;
      const digits = String(index);
      const end = at + quotedNonce.length + digits.length;
      if (
        index >= texts.length ||
        !text.startsWith(digits, at + quotedNonce.length) ||
        text.charCodeAt(end) !== QUOTE
      ) {
        throw GIVE_UP;
      }
      const replacement = texts[index];
      if (replacement instanceof LongString) {
        this.bytes(Buffer.from(pending + text.slice(from, at), 'utf8'));
        this.bytes(encodeString(replacement.text));
        pending = '';
      } else {
        pending += text.slice(from, at) + replacement;
      }
      this.replaced++;
      from = end + 1;
      at = text.indexOf(quotedNonce, from);
    }
    this.bytes(Buffer.from(from === 0 ? text : pending + text.slice(from), 'utf8'));
  }

  finish(trailer: string): Buffer {
    if (this.replaced !== this.markers.texts.length) {
      throw GIVE_UP;
    }
    if (trailer !== '') {
      this.bytes(Buffer.from(trailer, 'utf8'));
    }
    // One piece (an answer without markers) is the result as it is, not copied again.
    return this.pieces.length === 1 ? this.pieces[0] : Buffer.concat(this.pieces, this.length);
  }
}

/** A well-formed string as JSON, as `JSON.stringify` writes it. */
function encodeString(text: string): Buffer {
  const length = Buffer.byteLength(text, 'utf8');
  const bytes = Buffer.allocUnsafe(length + 2);
  bytes[0] = QUOTE;
  // Only ASCII is as long in UTF-8 as in UTF-16 units, and Latin-1 writes it faster.
  bytes.write(text, 1, length, length === text.length ? 'latin1' : 'utf8');
  bytes[length + 1] = QUOTE;
  return needsEscapes(bytes, 1, length + 1) ? Buffer.from(JSON.stringify(text), 'utf8') : bytes;
}

/** Does this UTF-8 text hold a byte that JSON escapes: `"`, `\\` or a control character? */
function needsEscapes(bytes: Buffer, start: number, end: number): boolean {
  let i = start;
  for (; i < end && ((bytes.byteOffset + i) & 3) !== 0; i++) {
    if (isEscaped(bytes[i])) {
      return true;
    }
  }
  const words = (end - i) >>> 2;
  if (words > 0) {
    // Four bytes at a time: `(x - 0x01010101 * n) & ~x & 0x80808080` is non-zero exactly when
    // some byte of x is below n (n <= 128); XOR turns "equal to c" into "below 1".
    const view = new Int32Array(bytes.buffer, bytes.byteOffset + i, words);
    for (let w = 0; w < words; w++) {
      const x = view[w];
      const quote = x ^ 0x22222222;
      const backslash = x ^ 0x5c5c5c5c;
      if (
        ((((x - 0x20202020) | 0) & ~x) |
          (((quote - 0x01010101) | 0) & ~quote) |
          (((backslash - 0x01010101) | 0) & ~backslash)) &
        0x80808080
      ) {
        return true;
      }
    }
    i += words * 4;
  }
  for (; i < end; i++) {
    if (isEscaped(bytes[i])) {
      return true;
    }
  }
  return false;
}

function isEscaped(byte: number): boolean {
  return byte < 0x20 || byte === QUOTE || byte === BACKSLASH;
}

function marker(markers: Markers, text: string | LongString): string {
  const name = markers.nonce + markers.texts.length;
  markers.texts.push(text);
  return name;
}

/**
 * The value to hand to `JSON.stringify`: the same value when it needs no change (shared, not
 * copied), else a copy with sorted keys and markers.
 */
function prepare(value: unknown, markers: Markers): unknown {
  switch (typeof value) {
    case 'string':
      // A lone surrogate is left to JSON.stringify, to be found in its output.
      return value.length >= LONG_STRING && value.isWellFormed()
        ? marker(markers, new LongString(value))
        : value;
    case 'boolean':
    case 'undefined':
      return value;
    case 'number':
      return stringifiesAsPython(value) ? value : marker(markers, formatNumber(value));
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
    return prepareArray(value, markers);
  }
  if (value instanceof PyNumber) {
    return marker(markers, value.text);
  }
  if (!isPlainObject(value)) {
    throw GIVE_UP;
  }
  return prepareObject(value, markers);
}

function prepareArray(array: unknown[], markers: Markers): unknown[] {
  let copy: unknown[] | undefined;
  for (let i = 0; i < array.length; i++) {
    const item = array[i];
    if (typeof item === 'string' && item.length < LONG_STRING) {
      // The bulk of a notebook: lines of text.
      if (copy !== undefined) {
        copy.push(item);
      }
      continue;
    }
    const prepared = prepare(item, markers);
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
      const prepared = isShortString(item) ? item : prepare(item, markers);
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
    // Integer-like keys would come first, in numeric order: write every key as a marker instead.
    return prepareWithMarkedKeys(record, keys, markers);
  }
  for (const key of keys) {
    const item = copy[key];
    if (!isShortString(item)) {
      setOwn(copy, key, prepare(item, markers));
    }
  }
  return copy;
}

/**
 * A copy of a dict whose keys are markers, made in `keys`' order, so that `JSON.stringify`
 * enumerates them in that order; each marker stands for the quoted key.
 */
function prepareWithMarkedKeys(
  record: Record<string, unknown>,
  keys: string[],
  markers: Markers
): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const key of keys) {
    const item = record[key];
    if (item === undefined) {
      continue;
    }
    if (!key.isWellFormed()) {
      // Python writes a lone surrogate as it is; JSON.stringify would escape it.
      throw GIVE_UP;
    }
    // Made before the value's own markers, which follow it in the text.
    const name = marker(markers, JSON.stringify(key));
    copy[name] = isShortString(item) ? item : prepare(item, markers);
  }
  return copy;
}

/**
 * The value to hand to `JSON.stringify` for an answer, as {@link prepare} for a file but with the
 * keys in their own order: the same value where nothing needs a marker (shared, not copied), else
 * a copy with markers for the numbers Python spells differently. Gives up on anything that is
 * not a plain object, an array or a JSON scalar, whose `JSON.stringify` output (`toJSON`,
 * omitted functions) only the replacer reproduces.
 */
function prepareAnswer(value: unknown, markers: Markers): unknown {
  switch (typeof value) {
    case 'string':
      // Long strings too are left to JSON.stringify: writing them apart (as a file does) costs
      // more than it saves once the pieces are joined into one answer.
      return value;
    case 'number':
      // Non-finite numbers stay as they are: JSON.stringify writes null, as an answer must.
      return !Number.isFinite(value) || stringifiesAsPython(value)
        ? value
        : marker(markers, formatNumber(value));
    case 'boolean':
    case 'undefined':
      return value;
    case 'object':
      break;
    default:
      throw GIVE_UP;
  }
  if (value === null) {
    return value;
  }
  if (Array.isArray(value)) {
    return prepareAnswerArray(value, markers);
  }
  if (value instanceof PyNumber) {
    return marker(markers, value.text);
  }
  if (!isPlainObject(value) || typeof value.toJSON === 'function') {
    throw GIVE_UP;
  }
  const keys = Object.keys(value);
  let copy: Record<string, unknown> | undefined;
  for (let i = 0; i < keys.length; i++) {
    const item = value[keys[i]];
    const prepared = typeof item === 'string' ? item : prepareAnswer(item, markers);
    if (copy === undefined && prepared !== item) {
      // Made in the original's order, which a copy enumerates in too (integer-like keys first).
      copy = {};
      for (let k = 0; k < i; k++) {
        setOwn(copy, keys[k], value[keys[k]]);
      }
    }
    if (copy !== undefined) {
      setOwn(copy, keys[i], prepared);
    }
  }
  return copy ?? value;
}

function prepareAnswerArray(array: unknown[], markers: Markers): unknown[] {
  let copy: unknown[] | undefined;
  for (let i = 0; i < array.length; i++) {
    const item = array[i];
    const prepared = typeof item === 'string' ? item : prepareAnswer(item, markers);
    if (copy === undefined && prepared !== item) {
      copy = array.slice(0, i);
    }
    if (copy !== undefined) {
      copy.push(prepared);
    }
  }
  return copy ?? array;
}

function isShortString(value: unknown): boolean {
  return typeof value === 'string' && value.length < LONG_STRING;
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
