/**
 * Strings as nbdime sees them: Python strings, indexed by code point, split into lines by
 * `str.splitlines(True)`, and compared with `difflib.SequenceMatcher`.
 *
 * #### Notes
 * nbdime's diffs hold character offsets and lengths counted in code points, and its alignment
 * decisions rest on `SequenceMatcher` ratios compared with fixed thresholds. To give the same
 * diffs, the matcher here finds the same matching blocks as difflib's (same longest-match search
 * and tie-breaking, no junk heuristics, as nbdime asks with `autojunk=False`).
 */

const SURROGATE = /[\uD800-\uDFFF]/;

/** Whether a string holds characters outside the Basic Multilingual Plane (UTF-16 pairs). */
export function hasSurrogates(text: string): boolean {
  return SURROGATE.test(text);
}

/** The code points of a string, in order. */
export function codePoints(text: string): Uint32Array {
  if (!hasSurrogates(text)) {
    const out = new Uint32Array(text.length);
    for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
    return out;
  }
  const out: number[] = [];
  for (const character of text) out.push(character.codePointAt(0)!);
  return Uint32Array.from(out);
}

/** The string without the characters that end lines (Python's `''.join(s.splitlines())`). */
export function withoutLineBreaks(text: string): string {
  let out = '';
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (!isLineBreak(text.charCodeAt(i))) continue;
    out += text.slice(start, i);
    start = i + 1;
  }
  return start === 0 ? text : out + text.slice(start);
}

/** The length of a string in code points (Python's `len`). */
export function codePointLength(text: string): number {
  if (!hasSurrogates(text)) return text.length;
  let length = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    // A low surrogate after a high one completes a pair that counts once.
    if (unit >= 0xdc00 && unit <= 0xdfff && i > 0) {
      const before = text.charCodeAt(i - 1);
      if (before >= 0xd800 && before <= 0xdbff) continue;
    }
    length++;
  }
  return length;
}

/** `text[start:end]` in code points, as Python slices it. */
export function sliceCodePoints(text: string, start: number, end: number): string {
  if (!hasSurrogates(text)) return text.slice(start, end);
  return Array.from(text).slice(start, end).join('');
}

/** The characters that end a line for Python's `str.splitlines` (besides `\r\n`). */
function isLineBreak(unit: number): boolean {
  return (
    unit === 0x0a ||
    unit === 0x0d ||
    unit === 0x0b ||
    unit === 0x0c ||
    (unit >= 0x1c && unit <= 0x1e) ||
    unit === 0x85 ||
    unit === 0x2028 ||
    unit === 0x2029
  );
}

/** Python's `text.splitlines(True)`: the lines with their line endings; no lines for `''`. */
export function splitLines(text: string): string[] {
  const lines: string[] = [];
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (!isLineBreak(unit)) continue;
    if (unit === 0x0d && text.charCodeAt(i + 1) === 0x0a) i++;
    lines.push(text.slice(start, i + 1));
    start = i + 1;
  }
  if (start < text.length) lines.push(text.slice(start));
  return lines;
}

/** A matching block: `a[i:i+size] == b[j:j+size]`. */
export type MatchingBlock = readonly [i: number, j: number, size: number];

/** A difflib opcode: how to turn `a[i1:i2]` into `b[j1:j2]`. */
export type Opcode = readonly [
  tag: 'replace' | 'delete' | 'insert' | 'equal',
  i1: number,
  i2: number,
  j1: number,
  j2: number
];

/** Where each symbol occurs in a sequence, in increasing order (difflib's `b2j`). */
export type SymbolIndex = Map<number, number[]>;

/** The positions of each symbol of `b`. */
export function indexSymbols(b: ArrayLike<number>): SymbolIndex {
  const index: SymbolIndex = new Map();
  for (let j = 0; j < b.length; j++) {
    const positions = index.get(b[j]);
    if (positions === undefined) index.set(b[j], [j]);
    else positions.push(j);
  }
  return index;
}

/**
 * difflib's `SequenceMatcher(None, a, b, autojunk=False)` over sequences of integers.
 */
export class SequenceMatcher {
  /**
   * @param a - the first sequence.
   * @param b - the second sequence.
   * @param bIndex - `indexSymbols(b)`, when the caller keeps it for several comparisons.
   */
  constructor(a: ArrayLike<number>, b: ArrayLike<number>, bIndex?: SymbolIndex) {
    this._a = a;
    this._b = b;
    this._bIndex = bIndex ?? indexSymbols(b);
  }

  /**
   * The matching blocks, ordered, adjacent ones merged, and difflib's `(len(a), len(b), 0)`
   * sentinel last.
   */
  matchingBlocks(): MatchingBlock[] {
    if (this._blocks !== undefined) return this._blocks;
    const found: MatchingBlock[] = [];
    // difflib works through a stack; the blocks found do not depend on the order.
    const queue: Array<[number, number, number, number]> = [[0, this._a.length, 0, this._b.length]];
    while (queue.length > 0) {
      const [alo, ahi, blo, bhi] = queue.pop()!;
      const block = this._longestMatch(alo, ahi, blo, bhi);
      const [i, j, k] = block;
      if (k === 0) continue;
      found.push(block);
      if (alo < i && blo < j) queue.push([alo, i, blo, j]);
      if (i + k < ahi && j + k < bhi) queue.push([i + k, ahi, j + k, bhi]);
    }
    found.sort((x, y) => x[0] - y[0] || x[1] - y[1] || x[2] - y[2]);
    const blocks: MatchingBlock[] = [];
    let [i1, j1, k1] = [0, 0, 0];
    for (const [i2, j2, k2] of found) {
      if (i1 + k1 === i2 && j1 + k1 === j2) {
        k1 += k2;
      } else {
        if (k1 > 0) blocks.push([i1, j1, k1]);
        [i1, j1, k1] = [i2, j2, k2];
      }
    }
    if (k1 > 0) blocks.push([i1, j1, k1]);
    blocks.push([this._a.length, this._b.length, 0]);
    this._blocks = blocks;
    return blocks;
  }

  /** The number of matched symbols (the numerator of difflib's `ratio()`, halved). */
  matches(): number {
    let total = 0;
    for (const block of this.matchingBlocks()) total += block[2];
    return total;
  }

  /** difflib's `get_opcodes()`. */
  opcodes(): Opcode[] {
    const out: Opcode[] = [];
    let i = 0;
    let j = 0;
    for (const [ai, bj, size] of this.matchingBlocks()) {
      if (i < ai && j < bj) out.push(['replace', i, ai, j, bj]);
      else if (i < ai) out.push(['delete', i, ai, j, bj]);
      else if (j < bj) out.push(['insert', i, ai, j, bj]);
      i = ai + size;
      j = bj + size;
      if (size > 0) out.push(['equal', ai, i, bj, j]);
    }
    return out;
  }

  /**
   * The longest block of `a[alo:ahi]` equal to a block of `b[blo:bhi]`: the earliest in `a`,
   * then in `b`, among the longest (difflib's `find_longest_match` without junk).
   */
  private _longestMatch(alo: number, ahi: number, blo: number, bhi: number): MatchingBlock {
    const a = this._a;
    let besti = alo;
    let bestj = blo;
    let bestSize = 0;
    // lengths[j + 1]: the length of the match ending at a[i - 1] and b[j] (row i - 1).
    let lengths = (this._lengths ??= new Int32Array(this._b.length + 1));
    let nextLengths = (this._nextLengths ??= new Int32Array(this._b.length + 1));
    let touched: number[] = [];
    let nextTouched: number[] = [];
    for (let i = alo; i < ahi; i++) {
      const positions = this._bIndex.get(a[i]);
      if (positions !== undefined) {
        for (let p = firstAtLeast(positions, blo); p < positions.length; p++) {
          const j = positions[p];
          if (j >= bhi) break;
          const k = lengths[j] + 1;
          nextLengths[j + 1] = k;
          nextTouched.push(j + 1);
          if (k > bestSize) {
            besti = i - k + 1;
            bestj = j - k + 1;
            bestSize = k;
          }
        }
      }
      for (const t of touched) lengths[t] = 0;
      [lengths, nextLengths] = [nextLengths, lengths];
      [touched, nextTouched] = [nextTouched, touched];
      nextTouched.length = 0;
    }
    for (const t of touched) lengths[t] = 0;
    return [besti, bestj, bestSize];
  }

  private readonly _a: ArrayLike<number>;
  private readonly _b: ArrayLike<number>;
  private readonly _bIndex: SymbolIndex;
  private _blocks: MatchingBlock[] | undefined;
  private _lengths: Int32Array | undefined;
  private _nextLengths: Int32Array | undefined;
}

/** The first index of an increasing list whose value is at least `value`. */
function firstAtLeast(sorted: readonly number[], value: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (sorted[middle] < value) low = middle + 1;
    else high = middle;
  }
  return low;
}
