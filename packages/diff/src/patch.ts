/**
 * Applying a diff in nbdime's format to the value it was computed from.
 */
import { isObject } from './generic';
import { codePoints, splitLines } from './text';
import type { DiffEntry, IJSONObject, JSONValue } from './types';

/**
 * The value a diff turns `base` into: objects key by key, lists index by index, strings line by
 * line (with character-based patches of single lines).
 *
 * @param base - the value the diff was computed from (for a notebook diff, the notebook with its
 *   multiline strings joined).
 * @param diff - the diff.
 * @returns the patched value. `base` is not changed.
 * @throws `Error` when the diff does not fit the value (a key it removes is missing, an index is
 *   out of order, a patch targets a value that cannot be patched).
 *
 * #### Notes
 * Parts of `base` that the diff leaves alone are shared with the result, not copied: treat both
 * as read-only. Patched objects keep the key order of `base`, with added keys last.
 */
export function patch<T extends JSONValue>(base: T, diff: readonly DiffEntry[]): T {
  return Private.patchValue(base, diff) as T;
}

namespace Private {
  export function patchValue(base: JSONValue, diff: readonly DiffEntry[]): JSONValue {
    if (Array.isArray(base))
      return patchSequence(base, diff, items =>
        typeof items === 'string' ? Array.from(items) : items
      );
    if (isObject(base)) return patchObject(base, diff);
    if (typeof base === 'string') return patchLines(base, diff);
    throw new Error(`cannot patch a ${base === null ? 'null' : typeof base} value`);
  }

  function patchObject(base: IJSONObject, diff: readonly DiffEntry[]): IJSONObject {
    const changed = new Map<string, JSONValue>();
    const removed = new Set<string>();
    for (const entry of diff) {
      const key = entry.key;
      if (typeof key !== 'string') throw new Error(`an object key must be a string, not ${key}`);
      if (changed.has(key) || removed.has(key)) throw new Error(`two entries for key '${key}'`);
      const present = Object.hasOwn(base, key);
      switch (entry.op) {
        case 'add':
          if (present) throw new Error(`cannot add key '${key}': it exists`);
          changed.set(key, entry.value);
          break;
        case 'remove':
        case 'replace':
        case 'patch':
          if (!present) throw new Error(`cannot ${entry.op} key '${key}': it is missing`);
          if (entry.op === 'remove') removed.add(key);
          else
            changed.set(
              key,
              entry.op === 'replace' ? entry.value : patchValue(base[key], entry.diff)
            );
          break;
        default:
          throw new Error(`'${entry.op}' does not apply to an object`);
      }
    }
    const out: IJSONObject = {};
    for (const key of Object.keys(base)) {
      if (!removed.has(key)) out[key] = changed.has(key) ? changed.get(key)! : base[key];
    }
    for (const [key, value] of changed) if (!(key in out)) out[key] = value;
    return out;
  }

  /**
   * Apply a sequence diff: items up to each entry's key are taken as they are, then the entry
   * inserts, removes or patches.
   *
   * @param fromList - how an `addrange`'s values become items (a string's characters, say).
   */
  function patchSequence<T>(
    base: readonly T[],
    diff: readonly DiffEntry[],
    fromList: (values: JSONValue[] | string) => readonly T[],
    patchItem: (item: T, diff: readonly DiffEntry[]) => T = (item, itemDiff) =>
      patchValue(item as JSONValue, itemDiff) as T
  ): T[] {
    const out: T[] = [];
    let taken = 0;
    for (const entry of diff) {
      const index = entry.key;
      if (typeof index !== 'number' || !Number.isInteger(index) || index < 0) {
        throw new Error(`a sequence key must be an index, not ${String(index)}`);
      }
      if (index > base.length) throw new Error(`sequence entry at ${index} is out of range`);
      for (let i = taken; i < index; i++) out.push(base[i]);
      let skip = 0;
      switch (entry.op) {
        case 'addrange':
          out.push(...fromList(entry.valuelist));
          break;
        case 'removerange':
          skip = entry.length;
          break;
        case 'patch':
          out.push(patchItem(base[index], entry.diff));
          skip = 1;
          break;
        // nbdime's differ no longer emits single-item entries in sequences, but its patch still
        // takes them (an entry after a `remove` may name the index just removed).
        case 'add':
        case 'replace':
          out.push(...fromList([entry.value]));
          skip = entry.op === 'replace' ? 1 : 0;
          break;
        case 'remove':
          skip = 1;
          break;
      }
      if (index + skip > base.length)
        throw new Error(`sequence entry at ${index} runs past the end`);
      taken = Math.max(taken, index + skip);
    }
    for (let i = taken; i < base.length; i++) out.push(base[i]);
    return out;
  }

  /** A multiline string patched by a line-based diff. */
  function patchLines(base: string, diff: readonly DiffEntry[]): string {
    const lines = patchSequence(
      splitLines(base),
      diff,
      values => (typeof values === 'string' ? [values] : values.map(String)),
      (line, lineDiff) => patchCharacters(line, lineDiff)
    );
    return lines.join('');
  }

  /** One line patched by a character-based diff (offsets in code points). */
  function patchCharacters(line: string, diff: readonly DiffEntry[]): string {
    const characters = Array.from(codePoints(line), point => String.fromCodePoint(point));
    const patched = patchSequence(
      characters,
      diff,
      values => (typeof values === 'string' ? Array.from(values) : values.map(String)),
      () => {
        throw new Error('a character cannot be patched');
      }
    );
    return patched.join('');
  }
}
