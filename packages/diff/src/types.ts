/**
 * The diff format: nbdime's `diff_format.schema.json`, as its Python library writes it and its
 * JavaScript package (`NotebookDiffModel`) reads it.
 */

/** A JSON value. */
export type JSONValue = null | boolean | number | string | JSONValue[] | IJSONObject;

/** A JSON object. */
export interface IJSONObject {
  [key: string]: JSONValue;
}

/** Add `value` under a new `key` of a mapping. */
export interface IDiffAdd {
  readonly op: 'add';
  readonly key: string;
  readonly value: JSONValue;
}

/** Remove `key` from a mapping. */
export interface IDiffRemove {
  readonly op: 'remove';
  readonly key: string;
}

/** Replace the value under `key` of a mapping with `value`. */
export interface IDiffReplace {
  readonly op: 'replace';
  readonly key: string;
  readonly value: JSONValue;
}

/**
 * Change the value under `key` (a mapping key, or an index of a sequence) by a nested diff.
 *
 * #### Notes
 * For a multiline string the nested diff is line based: its keys are line indices, and a patch of
 * a line holds a character-based diff of that line.
 */
export interface IDiffPatch {
  readonly op: 'patch';
  readonly key: string | number;
  readonly diff: DiffEntry[];
}

/**
 * Insert `valuelist` before index `key` of a sequence.
 *
 * #### Notes
 * In a character-based diff (the diff of one line), `valuelist` is the string to insert.
 */
export interface IDiffAddRange {
  readonly op: 'addrange';
  readonly key: number;
  readonly valuelist: JSONValue[] | string;
}

/** Remove `length` items of a sequence from index `key`. */
export interface IDiffRemoveRange {
  readonly op: 'removerange';
  readonly key: number;
  readonly length: number;
}

/** One entry of a diff. */
export type DiffEntry =
  IDiffAdd | IDiffRemove | IDiffReplace | IDiffPatch | IDiffAddRange | IDiffRemoveRange;

/**
 * A notebook in nbformat 4, as far as the diff engine needs to know: an object with a list of
 * cells; cells and outputs are read by their nbformat keys. JupyterLab's `INotebookContent`, or
 * the parsed JSON of a file, fits.
 */
export interface INotebookContent {
  readonly cells: readonly unknown[];
  readonly [key: string]: unknown;
}
