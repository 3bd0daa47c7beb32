/**
 * Diffs of any JSON values: mappings key by key, sequences by alignment, strings line by line,
 * with the differ and the predicates for each place chosen by its path.
 *
 * #### Notes
 * The structure (a differ per path pattern such as `/cells/*\/outputs`, predicates per sequence
 * path, the order in which entries are emitted) mirrors nbdime's generic differ: its output
 * depends on these choices, and byte-for-byte compatible diffs require the same ones.
 */
import { multilevelSnakes, longestCommonSnakes, type Predicate, type Snake } from './alignment';
import { StringSimilarity } from './similarity';
import { SequenceMatcher, codePoints, sliceCodePoints, splitLines } from './text';
import type { DiffEntry, IJSONObject, JSONValue } from './types';

/** Computes the diff of two values found at `path`. */
export type Differ = (a: JSONValue, b: JSONValue, path: string, config: DiffConfig) => DiffEntry[];

/**
 * Which differ and which predicates apply where, plus the caches one diff shares.
 */
export class DiffConfig {
  constructor(options: DiffConfig.IOptions = {}) {
    this.similarity = options.similarity ?? new StringSimilarity();
    this._differs = options.differs ?? {};
    this._predicates = options.predicates ?? {};
    this._atomicPaths = new Set(options.atomicPaths ?? []);
  }

  /** Approximate string comparison with its caches. */
  readonly similarity: StringSimilarity;

  /** The differ for values at `path` (the generic {@link diff} unless configured). */
  differ(path: string): Differ {
    return this._differs[path] ?? diff;
  }

  /** The predicates aligning the items of a sequence at `path`, loosest first. */
  predicates(path: string): readonly Predicate<JSONValue>[] {
    return this._predicates[path || '/'] ?? this._equality;
  }

  /** Whether a value is replaced as a whole rather than diffed (anything but str, list, dict). */
  isAtomic(value: JSONValue, path: string): boolean {
    if (this._atomicPaths.has(path)) return true;
    return value === null || typeof value !== 'object' ? typeof value !== 'string' : false;
  }

  /** A configuration with the same caches and the default differs and predicates. */
  plain(): DiffConfig {
    return (this._plain ??= new DiffConfig({ similarity: this.similarity }));
  }

  private readonly _differs: Readonly<Record<string, Differ>>;
  private readonly _predicates: Readonly<Record<string, readonly Predicate<JSONValue>[]>>;
  private readonly _atomicPaths: ReadonlySet<string>;
  private readonly _equality: readonly Predicate<JSONValue>[] = [jsonEqual];
  private _plain: DiffConfig | undefined;
}

/** The {@link DiffConfig} namespace. */
export namespace DiffConfig {
  /** Options of a {@link DiffConfig}. */
  export interface IOptions {
    /** Differs by path pattern (`/cells/*` for any item of `cells`). */
    readonly differs?: Readonly<Record<string, Differ>>;
    /** Predicates by sequence path (`/` for the root), loosest first. */
    readonly predicates?: Readonly<Record<string, readonly Predicate<JSONValue>[]>>;
    /** Paths whose values are always replaced whole, whatever their type. */
    readonly atomicPaths?: readonly string[];
    /** Caches to share with another configuration. */
    readonly similarity?: StringSimilarity;
  }
}

/** Whether a value is a JSON object (not an array, not null). */
export function isObject(value: JSONValue | undefined): value is IJSONObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Deep equality of JSON values, as Python's `==` on the parsed values (key order ignored). */
export function jsonEqual(a: JSONValue, b: JSONValue): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) {
    if (!Object.hasOwn(b, key) || !jsonEqual(a[key], b[key])) return false;
  }
  return true;
}

/**
 * Builds the entries of a sequence diff in nbdime's order: by key, an `addrange` before any other
 * entry at the same key.
 */
export class SequenceDiffBuilder {
  /** Add an entry at its place. */
  append(entry: DiffEntry): void {
    const entries = this._entries;
    let position = entries.length;
    const key = entry.key as number;
    if (entry.op === 'addrange') {
      while (position > 0 && (entries[position - 1].key as number) >= key) position--;
    } else {
      while (position > 0 && (entries[position - 1].key as number) > key) position--;
    }
    entries.splice(position, 0, entry);
  }

  /** Patch the item at `key`, unless `diff` is empty. */
  patch(key: number, diff: DiffEntry[]): void {
    if (diff.length > 0) this.append({ op: 'patch', key, diff });
  }

  /** Insert `valuelist` before `key`, unless it is empty. */
  addRange(key: number, valuelist: JSONValue[] | string): void {
    if (valuelist.length > 0) this.append({ op: 'addrange', key, valuelist });
  }

  /** Remove `length` items from `key`, unless `length` is 0. */
  removeRange(key: number, length: number): void {
    if (length > 0) this.append({ op: 'removerange', key, length });
  }

  /** The entries. */
  entries(): DiffEntry[] {
    return this._entries;
  }

  private readonly _entries: DiffEntry[] = [];
}

/** Builds the entries of a mapping diff, which nbdime sorts by key. */
export class MappingDiffBuilder {
  /** Add an entry. */
  append(entry: DiffEntry): void {
    this._entries.push(entry);
  }

  /** Patch the value at `key`, unless `diff` is empty. */
  patch(key: string, diff: DiffEntry[]): void {
    if (diff.length > 0) this._entries.push({ op: 'patch', key, diff });
  }

  /** The entries, sorted by key. */
  entries(): DiffEntry[] {
    return this._entries.sort((x, y) => comparePython(x.key as string, y.key as string));
  }

  private readonly _entries: DiffEntry[] = [];
}

/** Python's ordering of strings (by code point), for sorted keys. */
export function comparePython(x: string, y: string): number {
  if (x === y) return 0;
  const length = Math.min(x.length, y.length);
  for (let i = 0; i < length; i++) {
    const a = x.codePointAt(i)!;
    const b = y.codePointAt(i)!;
    if (a !== b) return a < b ? -1 : 1;
  }
  return x.length < y.length ? -1 : 1;
}

/** Keys of an object in Python's sorted order. */
export function sortedKeys(keys: Iterable<string>): string[] {
  return [...keys].sort(comparePython);
}

/**
 * The diff of two JSON values: mappings and sequences recursively, strings by lines.
 *
 * @throws when the two values are not both lists, both objects or both strings.
 */
export function diff(a: JSONValue, b: JSONValue, path = '', config?: DiffConfig): DiffEntry[] {
  const actual = config ?? new DiffConfig();
  if (Array.isArray(a) && Array.isArray(b)) return diffLists(a, b, path, actual);
  if (isObject(a) && isObject(b)) return diffObjects(a, b, path, actual);
  if (typeof a === 'string' && typeof b === 'string') return diffStringsByLine(a, b, actual);
  throw new TypeError('can only diff two lists, two objects or two strings');
}

/**
 * The type of a JSON value, for nbdime's `type(a) is type(b)` test.
 *
 * #### Notes
 * Python tells integers from floats, but numbers are replaced whole either way, so one type
 * serves for both.
 */
function jsonType(value: JSONValue): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'array' : typeof value;
}

/**
 * The diff of two objects: removed keys, then changed ones (patched when both values are of one
 * diffable type, replaced otherwise), then added ones, sorted by key.
 */
export function diffObjects(
  a: IJSONObject,
  b: IJSONObject,
  path: string,
  config: DiffConfig
): DiffEntry[] {
  const builder = new MappingDiffBuilder();
  for (const key of Object.keys(a)) {
    if (!Object.hasOwn(b, key)) {
      builder.append({ op: 'remove', key });
      continue;
    }
    const x = a[key];
    const y = b[key];
    const subpath = `${path}/${key}`;
    if (jsonType(x) === jsonType(y) && !config.isAtomic(x, subpath)) {
      builder.patch(key, config.differ(subpath)(x, y, subpath, config));
    } else if (!jsonEqual(x, y)) {
      builder.append({ op: 'replace', key, value: y });
    }
  }
  for (const key of Object.keys(b)) {
    if (!Object.hasOwn(a, key)) builder.append({ op: 'add', key, value: b[key] });
  }
  return builder.entries();
}

/**
 * The diff of two lists: aligned by the path's predicates (several: the multilevel algorithm;
 * one: a plain longest common subsequence), aligned items diffed in turn.
 */
export function diffLists(
  a: JSONValue[],
  b: JSONValue[],
  path: string,
  config: DiffConfig
): DiffEntry[] {
  const predicates = config.predicates(path);
  if (predicates.length > 1) {
    return diffFromSnakes(a, b, multilevelSnakes(a, b, predicates), path, config, false);
  }
  return diffFromSnakes(a, b, longestCommonSnakes(a, b, predicates[0]), path, config, true);
}

/**
 * Ranges outside the snakes become `addrange`/`removerange`, items on them are diffed.
 *
 * @param skipAtomic - leave atomic items alone (nbdime's single-predicate path does; the
 *   multilevel one diffs every aligned pair with the item differ).
 */
function diffFromSnakes(
  a: JSONValue[],
  b: JSONValue[],
  snakes: readonly Snake[],
  path: string,
  config: DiffConfig,
  skipAtomic: boolean
): DiffEntry[] {
  const subpath = `${path}/*`;
  const differ = config.differ(subpath);
  return entriesFromSnakes(a, b, snakes, (x, y) =>
    skipAtomic && config.isAtomic(x, subpath) ? [] : differ(x, y, subpath, config)
  );
}

/**
 * A sequence diff from an alignment: the ranges between snakes removed and added, the items on
 * them patched by `diffItems` (no entry when it gives an empty diff).
 */
function entriesFromSnakes<T extends JSONValue>(
  a: readonly T[],
  b: readonly T[],
  snakes: readonly Snake[],
  diffItems: (x: T, y: T) => DiffEntry[]
): DiffEntry[] {
  const builder = new SequenceDiffBuilder();
  let i0 = 0;
  let j0 = 0;
  for (const [i, j, n] of [...snakes, [a.length, b.length, 0] as const]) {
    builder.removeRange(i0, i - i0);
    builder.addRange(i0, b.slice(j0, j));
    for (let k = 0; k < n; k++) builder.patch(i + k, diffItems(a[i + k], b[j + k]));
    i0 = i + n;
    j0 = j + n;
  }
  return builder.entries();
}

/**
 * The line-based diff of two strings: lines aligned by equality, then by similarity between equal
 * runs; a similar pair of lines gets a character-based patch.
 */
export function diffStringsByLine(a: string, b: string, config: DiffConfig): DiffEntry[] {
  if (a === b) return [];
  const linesA = splitLines(a);
  const linesB = splitLines(b);
  const similarity = config.similarity;
  const predicates: Predicate<string>[] = [(x, y) => similarity.similar(x, y), (x, y) => x === y];
  const snakes = multilevelSnakes(linesA, linesB, predicates);
  return entriesFromSnakes(linesA, linesB, snakes, diffStringsByCharacter);
}

/** The character-based diff of two strings (difflib's opcodes; offsets in code points). */
export function diffStringsByCharacter(a: string, b: string): DiffEntry[] {
  if (a === b) return [];
  const matcher = new SequenceMatcher(codePoints(a), codePoints(b));
  const builder = new SequenceDiffBuilder();
  for (const [tag, i1, i2, j1, j2] of matcher.opcodes()) {
    if (tag === 'replace' || tag === 'delete') builder.removeRange(i1, i2 - i1);
    if (tag === 'replace' || tag === 'insert') builder.addRange(i1, sliceCodePoints(b, j1, j2));
  }
  return builder.entries();
}
