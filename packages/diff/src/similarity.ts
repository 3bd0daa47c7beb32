/**
 * nbdime's approximate string comparison (`compare_strings_approximate`), with what one diff
 * learns about each string kept for the next comparison of it.
 */
import {
  codePointLength,
  codePoints,
  indexSymbols,
  SequenceMatcher,
  type SymbolIndex
} from './text';

/**
 * Compares strings by difflib's similarity ratio, remembering results and per-string work.
 *
 * #### Notes
 * Aligning sequences compares every item of one with every item of the other, so each string is
 * compared many times: its length, code points, symbol counts and symbol positions are computed
 * once, and each pair's answer is kept. One instance serves one diff; it holds on to the strings.
 */
export class StringSimilarity {
  /**
   * Whether two strings are similar, as nbdime's `compare_strings_approximate` decides.
   *
   * @param x - one string.
   * @param y - the other string.
   * @param threshold - the similarity ratio (`2 * matches / total length`) to exceed.
   * @param maxLength - when both strings are longer than this and not equal, they are deemed
   *   different without computing the full ratio.
   *
   * #### Notes
   * The cheap bounds come first, as in difflib: the ratio of lengths, then the ratio of common
   * symbol counts, before the matching blocks themselves.
   */
  similar(x: string, y: string, threshold = 0.7, maxLength?: number): boolean {
    if ((x.length === 0) !== (y.length === 0)) return false;
    if (x === y) return true;
    const a = this._info(x);
    const b = this._info(y);
    const total = a.length + b.length;
    if ((2 * Math.min(a.length, b.length)) / total < threshold) return false;
    // Predicates at several levels ask about the same pair with other thresholds: the ratios
    // are kept per ordered pair (difflib's ratio is not symmetric), the thresholds applied here.
    let bySecond = this._ratios.get(x);
    if (bySecond === undefined) this._ratios.set(x, (bySecond = new Map()));
    let ratios = bySecond.get(y);
    if (ratios === undefined) {
      ratios = { quick: (2 * commonSymbols(this._counts(a), this._counts(b))) / total };
      bySecond.set(y, ratios);
    }
    if (ratios.quick < threshold) return false;
    if (maxLength !== undefined && a.length > maxLength && b.length > maxLength) return false;
    if (ratios.full === undefined) {
      const matcher = new SequenceMatcher(this._points(a), this._points(b), this._index(b));
      ratios.full = (2 * matcher.matches()) / total;
    }
    return ratios.full > threshold;
  }

  /** The length of a string in code points. */
  length(text: string): number {
    return this._info(text).length;
  }

  private _info(text: string): Private.ITextInfo {
    let info = this._infos.get(text);
    if (info === undefined) {
      info = { text, length: codePointLength(text) };
      this._infos.set(text, info);
    }
    return info;
  }

  private _points(info: Private.ITextInfo): Uint32Array {
    return (info.points ??= codePoints(info.text));
  }

  private _counts(info: Private.ITextInfo): Private.ISymbolCounts {
    if (info.counts === undefined) {
      const sorted = this._points(info).slice().sort();
      const symbols: number[] = [];
      const counts: number[] = [];
      for (let i = 0; i < sorted.length; i++) {
        if (i > 0 && sorted[i] === sorted[i - 1]) counts[counts.length - 1]++;
        else {
          symbols.push(sorted[i]);
          counts.push(1);
        }
      }
      info.counts = { symbols, counts };
    }
    return info.counts;
  }

  private _index(info: Private.ITextInfo): SymbolIndex {
    return (info.index ??= indexSymbols(this._points(info)));
  }

  private readonly _infos = new Map<string, Private.ITextInfo>();
  private readonly _ratios = new Map<string, Map<string, Private.IRatios>>();
}

/** The number of symbols two multisets share (difflib's `quick_ratio` numerator, halved). */
function commonSymbols(a: Private.ISymbolCounts, b: Private.ISymbolCounts): number {
  let shared = 0;
  let i = 0;
  let j = 0;
  while (i < a.symbols.length && j < b.symbols.length) {
    if (a.symbols[i] < b.symbols[j]) i++;
    else if (a.symbols[i] > b.symbols[j]) j++;
    else shared += Math.min(a.counts[i++], b.counts[j++]);
  }
  return shared;
}

namespace Private {
  /** difflib's ratios of an ordered pair of strings: `quick_ratio()`, and `ratio()` once known. */
  export interface IRatios {
    readonly quick: number;
    full?: number;
  }

  /** Symbols in increasing order, and how often each occurs. */
  export interface ISymbolCounts {
    readonly symbols: number[];
    readonly counts: number[];
  }

  /** What has been computed about one string. */
  export interface ITextInfo {
    readonly text: string;
    readonly length: number;
    points?: Uint32Array;
    counts?: ISymbolCounts;
    index?: SymbolIndex;
  }
}
