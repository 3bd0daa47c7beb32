/**
 * Notebook diffs: nbdime's rules for nbformat 4 (how cells and outputs are aligned, how outputs,
 * MIME bundles and attachments are diffed) on top of the generic differ.
 */
import { multilevelSnakes, type Predicate } from './alignment';
import {
  DiffConfig,
  MappingDiffBuilder,
  diff,
  diffObjects,
  isObject,
  jsonEqual,
  type Differ
} from './generic';
import type { StringSimilarity } from './similarity';
import { withoutLineBreaks } from './text';
import type { DiffEntry, IJSONObject, INotebookContent, JSONValue } from './types';

/**
 * The diff of two nbformat 4 notebooks, in nbdime's format, as nbdime's `diff_notebooks` computes
 * it.
 *
 * @param base - the notebook to diff from.
 * @param remote - the notebook to diff to.
 * @returns a diff that turns `joinMultilineStrings(base)` into `joinMultilineStrings(remote)`.
 *
 * #### Notes
 * Multiline strings may be given as lists of lines (as nbformat writes files) or as strings (as
 * JupyterLab holds them): they are joined first, as nbformat does when it reads a file, so the
 * diff's keys refer to the joined notebook (see {@link joinMultilineStrings}).
 *
 * Cells are aligned by their ids, then by source and outputs (nearly equal), then source and
 * outputs (similar), then source alone (similar); sources and text outputs are diffed by lines.
 */
export function diffNotebooks(base: INotebookContent, remote: INotebookContent): DiffEntry[] {
  const a = joinMultilineStrings(base) as IJSONObject;
  const b = joinMultilineStrings(remote) as IJSONObject;
  return diffObjects(a, b, '', Private.notebookConfig());
}

/**
 * A copy of a notebook with its multiline strings joined: cell sources, stream texts, and the
 * text values of MIME bundles (outputs and attachments) given as lists of lines.
 *
 * #### Notes
 * This is what nbformat does when it reads a file (`rejoin_lines`), so that nbdime diffs this
 * form. JSON MIME types (`application/json`, `application/*+json`) are left alone. The input is
 * not changed; unchanged parts are shared with it.
 */
export function joinMultilineStrings<T extends INotebookContent>(notebook: T): T {
  const cells = notebook.cells.map(cell => {
    if (!isObject(cell as JSONValue)) return cell;
    const copy: IJSONObject = { ...(cell as IJSONObject) };
    if (copy.source !== undefined) copy.source = Private.joinLines(copy.source);
    if (isObject(copy.attachments)) {
      const attachments: IJSONObject = {};
      for (const [name, bundle] of Object.entries(copy.attachments)) {
        attachments[name] = Private.joinBundle(bundle);
      }
      copy.attachments = attachments;
    }
    if (copy.cell_type === 'code' && Array.isArray(copy.outputs)) {
      copy.outputs = copy.outputs.map(output => {
        if (!isObject(output)) return output;
        const type = output.output_type;
        if (type === 'execute_result' || type === 'display_data') {
          return isObject(output.data)
            ? { ...output, data: Private.joinBundle(output.data) }
            : output;
        }
        if (type && Array.isArray(output.text)) {
          return { ...output, text: Private.joinLines(output.text) };
        }
        return output;
      });
    }
    return copy;
  });
  return { ...notebook, cells } as T;
}

namespace Private {
  /** Text longer than this in a MIME bundle is only aligned when its cheap bounds pass. */
  const MIME_TEXT_MAX_COMPARE_LENGTH = 10_000;

  /** Stream text longer than this is only aligned when its cheap bounds pass. */
  const STREAM_MAX_COMPARE_LENGTH = 1_000;

  /** Texts both shorter than this align whatever their content (a number, a short word). */
  const SHORT_TEXT_LENGTH = 10;

  /** MIME types whose values are diffed (by lines, or as JSON), not replaced. */
  const DIFFABLE_MIME_PREFIXES = [
    'text/',
    'image/svg+xml',
    'application/javascript',
    'application/json'
  ];

  /** A memory address in a repr, such as `<object at 0x7f3a2c1d9e80>`. */
  const POINTER = /0x[a-f0-9]{8,16}/i;

  /** Characters of base64 data. */
  const BASE64_CHARACTER = /^[a-z0-9+/]*$/i;

  /** A list of strings joined, other values as they are. */
  export function joinLines(value: JSONValue): JSONValue {
    if (Array.isArray(value) && value.every(line => typeof line === 'string')) {
      return value.join('');
    }
    return value;
  }

  /** A MIME bundle with its non-JSON values joined. */
  export function joinBundle(bundle: JSONValue): JSONValue {
    if (!isObject(bundle)) return bundle;
    const out: IJSONObject = {};
    for (const [mime, value] of Object.entries(bundle)) {
      const json =
        mime === 'application/json' || (mime.startsWith('application/') && mime.endsWith('+json'));
      out[mime] = json ? value : joinLines(value);
    }
    return out;
  }

  /** Python's truth value of a JSON value (empty strings, lists and objects are false). */
  function truthy(value: JSONValue | undefined): boolean {
    if (value === undefined || value === null) return false;
    if (typeof value === 'string' || Array.isArray(value)) return value.length > 0;
    if (typeof value === 'object') return Object.keys(value).length > 0;
    return Boolean(value);
  }

  /** A text value as one string. */
  function text(value: JSONValue | undefined): string {
    if (typeof value === 'string') return value;
    if (Array.isArray(value)) return value.map(String).join('');
    return JSON.stringify(value ?? null);
  }

  /** Whether two objects have the same keys. */
  function sameKeys(x: IJSONObject, y: IJSONObject): boolean {
    const keys = Object.keys(x);
    if (keys.length !== Object.keys(y).length) return false;
    return keys.every(key => Object.hasOwn(y, key));
  }

  /** Whether a value is base64 data (possibly broken into lines), nbdime's way. */
  function isBase64(value: string): boolean {
    if (value.length < 64) return false;
    const joined = withoutLineBreaks(value);
    if (joined.length % 4 !== 0) return false;
    let padding = 0;
    while (padding < 2 && joined.charCodeAt(joined.length - 1 - padding) === 0x3d) padding++;
    return BASE64_CHARACTER.test(padding ? joined.slice(0, -padding) : joined);
  }

  /** The comparisons of text, loose or strict, with their length cut-off. */
  type CompareText = (x: JSONValue, y: JSONValue) => boolean;

  function approximateText(similarity: StringSimilarity, maxLength?: number): CompareText {
    return (x, y) => {
      if (truthy(x) !== truthy(y)) return false;
      const a = text(x);
      const b = text(y);
      if (similarity.length(a) < SHORT_TEXT_LENGTH && similarity.length(b) < SHORT_TEXT_LENGTH) {
        return true;
      }
      return similarity.similar(a, b, 0.7, maxLength);
    };
  }

  function strictText(similarity: StringSimilarity, maxLength?: number): CompareText {
    return (x, y) => {
      const a = text(x);
      const b = text(y);
      return a === b || similarity.similar(a, b, 0.95, maxLength);
    };
  }

  /** One value of two MIME bundles: text by similarity, base64 data by equality. */
  function compareMimeData(
    mimetype: string,
    x: JSONValue,
    y: JSONValue,
    compareText: CompareText
  ): boolean {
    const mime = mimetype.toLowerCase();
    if (mime === 'text/plain' && typeof x === 'string' && typeof y === 'string') {
      // One-line reprs that differ only in the addresses they print are the same output.
      if (!x.includes('\n') && !y.includes('\n')) {
        const xs = x.split(POINTER);
        const ys = y.split(POINTER);
        if (xs.length === ys.length && xs.every((part, i) => part === ys[i])) return true;
      }
    }
    if (mime.startsWith('text/')) return compareText(x, y);
    if (typeof x === 'string' && typeof y === 'string') {
      return isBase64(x) ? x === y : compareText(x, y);
    }
    return jsonEqual(x, y);
  }

  function compareMimeBundles(
    x: JSONValue | undefined,
    y: JSONValue | undefined,
    compareText: CompareText
  ): boolean {
    if (x === undefined || x === null || y === undefined || y === null) {
      return (x === undefined || x === null) && (y === undefined || y === null);
    }
    if (!isObject(x) || !isObject(y) || !sameKeys(x, y)) return false;
    return Object.keys(x).every(key => compareMimeData(key, x[key], y[key], compareText));
  }

  /** The predicates of one diff, sharing its caches. */
  function predicates(similarity: StringSimilarity) {
    const mimeApproximate = approximateText(similarity, MIME_TEXT_MAX_COMPARE_LENGTH);
    const mimeStrict = strictText(similarity, MIME_TEXT_MAX_COMPARE_LENGTH);
    const sourceApproximate = approximateText(similarity);
    const sourceStrict = strictText(similarity);

    /** Outputs of the same kind with similar content (metadata and execution count aside). */
    const outputApproximate: Predicate<JSONValue> = (x, y) => {
      if (!isObject(x) || !isObject(y)) return false;
      const type = x.output_type;
      if (type !== y.output_type || !sameKeys(x, y)) return false;
      const handled = new Set(['output_type', 'metadata', 'execution_count']);
      if (type === 'stream') {
        if (!jsonEqual(x.name, y.name)) return false;
        const a = text(x.text);
        const b = text(y.text);
        if (!similarity.similar(a, b, 0.7, STREAM_MAX_COMPARE_LENGTH)) return false;
        handled.add('name').add('text');
      } else if (type === 'error') {
        if (!jsonEqual(x.ename, y.ename) || !jsonEqual(x.evalue, y.evalue)) return false;
        const xt = Array.isArray(x.traceback) ? x.traceback : [];
        const yt = Array.isArray(y.traceback) ? y.traceback : [];
        if (xt.length !== yt.length) return false;
        if (!xt.every((line, i) => similarity.similar(text(line), text(yt[i])))) return false;
        handled.add('ename').add('evalue').add('traceback');
      } else if (type === 'display_data' || type === 'execute_result') {
        if (!compareMimeBundles(x.data, y.data, mimeApproximate)) return false;
        handled.add('data');
      }
      return Object.keys(x).every(key => handled.has(key) || jsonEqual(x[key], y[key]));
    };

    /** Outputs equal but for nearly equal text in their data. */
    const outputStrict: Predicate<JSONValue> = (x, y) => {
      if (!isObject(x) || !isObject(y)) return false;
      if (x.output_type !== y.output_type || !sameKeys(x, y)) return false;
      for (const key of Object.keys(x)) {
        if (key !== 'output_type' && key !== 'data' && !jsonEqual(x[key], y[key])) return false;
      }
      return compareMimeBundles(x.data, y.data, mimeStrict);
    };

    const outputPredicates = [outputApproximate, outputStrict];

    const outputsOf = (cell: IJSONObject): JSONValue[] =>
      Array.isArray(cell.outputs) ? cell.outputs : [];

    /** Cells of one type with similar sources. */
    const cellApproximate: Predicate<JSONValue> = (x, y) =>
      isObject(x) &&
      isObject(y) &&
      x.cell_type === y.cell_type &&
      sourceApproximate(x.source ?? null, y.source ?? null);

    /** ... and outputs that all align with each other. */
    const cellModerate: Predicate<JSONValue> = (x, y) => {
      if (!cellApproximate(x, y)) return false;
      const a = x as IJSONObject;
      const b = y as IJSONObject;
      if (a.cell_type !== 'code') return true;
      const xo = outputsOf(a);
      const yo = outputsOf(b);
      if (xo.length !== yo.length) return false;
      let aligned = 0;
      for (const [, , n] of multilevelSnakes(xo, yo, outputPredicates)) aligned += n;
      return aligned === xo.length;
    };

    /** Cells of one type with nearly equal sources and outputs. */
    const cellStrict: Predicate<JSONValue> = (x, y) => {
      if (!isObject(x) || !isObject(y) || x.cell_type !== y.cell_type) return false;
      if (!sourceStrict(x.source ?? null, y.source ?? null)) return false;
      if (x.cell_type !== 'code') return true;
      const xo = outputsOf(x);
      const yo = outputsOf(y);
      return xo.length === yo.length && xo.every((output, i) => outputStrict(output, yo[i]));
    };

    /** Cells with the same id. */
    const cellById: Predicate<JSONValue> = (x, y) =>
      isObject(x) &&
      isObject(y) &&
      Object.hasOwn(x, 'id') &&
      Object.hasOwn(y, 'id') &&
      jsonEqual(x.id, y.id);

    return {
      cells: [cellApproximate, cellModerate, cellStrict, cellById],
      outputs: outputPredicates
    };
  }

  /** One value of two MIME bundles: diffed when its type is text or JSON, else replaced. */
  function addMimeDiff(
    builder: MappingDiffBuilder,
    mime: string,
    a: JSONValue,
    b: JSONValue,
    config: DiffConfig
  ): void {
    if (typeof a === 'string' && a === b) return;
    const lower = mime.toLowerCase();
    const diffable =
      DIFFABLE_MIME_PREFIXES.some(prefix => lower.startsWith(prefix)) &&
      ((typeof a === 'string' && typeof b === 'string') ||
        (isObject(a) && isObject(b)) ||
        (Array.isArray(a) && Array.isArray(b)));
    if (diffable) builder.patch(mime, diff(a, b, '', config.plain()));
    else if (!jsonEqual(a, b)) builder.append({ op: 'replace', key: mime, value: b });
  }

  /** The diff of two MIME bundles, key by key. */
  function diffMimeBundle(a: IJSONObject, b: IJSONObject, config: DiffConfig): DiffEntry[] {
    const builder = new MappingDiffBuilder();
    for (const key of Object.keys(a)) {
      if (!Object.hasOwn(b, key)) builder.append({ op: 'remove', key });
      else addMimeDiff(builder, key, a[key], b[key], config);
    }
    for (const key of Object.keys(b)) {
      if (!Object.hasOwn(a, key)) builder.append({ op: 'add', key, value: b[key] });
    }
    return builder.entries();
  }

  /** Outputs with data: the data as a MIME bundle, the rest generically. */
  const diffOutput: Differ = (a, b, _path, config) => {
    if (!isObject(a) || !isObject(b)) return diff(a, b, '', config);
    const withData = a.output_type === 'execute_result' || a.output_type === 'display_data';
    if (!withData || !isObject(a.data) || !isObject(b.data)) return diff(a, b, '', config);
    const { data: dataA, ...restA } = a;
    const { data: dataB, ...restB } = b;
    const builder = new MappingDiffBuilder();
    for (const entry of diffObjects(restA, restB, '', config.plain())) builder.append(entry);
    builder.patch('data', diffMimeBundle(dataA as IJSONObject, dataB as IJSONObject, config));
    return builder.entries();
  };

  /** Attachments: removed, changed (as MIME bundles) and added, by file name. */
  const diffAttachments: Differ = (a, b, _path, config) => {
    if (!isObject(a) || !isObject(b)) throw new TypeError('attachments must be objects');
    const builder = new MappingDiffBuilder();
    for (const key of Object.keys(a)) {
      if (!Object.hasOwn(b, key)) builder.append({ op: 'remove', key });
      else {
        const x = a[key];
        const y = b[key];
        if (!isObject(x) || !isObject(y)) throw new TypeError('attachments must be MIME bundles');
        builder.patch(key, diffMimeBundle(x, y, config));
      }
    }
    for (const key of Object.keys(b)) {
      if (!Object.hasOwn(a, key)) builder.append({ op: 'add', key, value: b[key] });
    }
    return builder.entries();
  };

  /** The configuration of one notebook diff. */
  export function notebookConfig(): DiffConfig {
    const base = new DiffConfig();
    const { cells, outputs } = predicates(base.similarity);
    return new DiffConfig({
      similarity: base.similarity,
      predicates: { '/cells': cells, '/cells/*/outputs': outputs },
      differs: {
        '/cells/*/outputs/*': diffOutput,
        '/cells/*/attachments': diffAttachments
      },
      atomicPaths: ['/cells/*/id']
    });
  }
}
