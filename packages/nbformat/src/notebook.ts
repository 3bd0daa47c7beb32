/**
 * Reading and writing `.ipynb` files exactly as Jupyter Server 2.21 does with nbformat 5.11.1.
 *
 * - Read (`FileContentsManager._read_notebook` + `validate_notebook_model`):
 *   `nbformat.reads(text, as_version=4)`, i.e. parse, join multi-line strings, drop transient
 *   fields, convert versions 1 to 3 to version 4, give cells missing ids new ids, and validate.
 * - Write (`save` of a `notebook` model): `nbformat.from_dict`, then `nbformat.write(nb,
 *   version=NO_CONVERT)`, i.e. the same id repair, split multi-line strings into lines, drop
 *   transient fields, `json.dumps(indent=1, sort_keys=True, ensure_ascii=False)` and a final
 *   newline. Trust signing happens elsewhere.
 *
 * Where nbformat fails on a malformed notebook (a missing key, a value of the wrong type), these
 * fail too, with the exception text Jupyter would show.
 *
 * #### Known differences
 * - Python fails to read JSON nested deeper than its recursion limit (about 1000 levels, less
 *   the depth of Jupyter's own call stack); we read it, up to the JavaScript stack's limit.
 * - The model's dicts keep the file's key order, except integer-like keys (`"0"`, `"42"`), which
 *   a JavaScript object puts first. Files are written with sorted keys, so bytes never differ.
 * - See `validate.ts` for the validation message.
 */
import { randomBytes } from 'node:crypto';
import { isUtf8 } from 'node:buffer';

import {
  pyAttr,
  pyContains,
  pyEntries,
  pyGet,
  pyItem,
  pyJoin,
  pyPop,
  pythonIterable,
  requireHashable
} from './dict';
import { PythonException, unicodeEncodeError } from './exception';
import { dumpsPython, dumpsPythonChecked, isPlainObject, parsePythonJsonBytes } from './json';
import { pythonKind, pythonTruthy } from './pynumber';
import {
  codePointLength,
  codePointPrefix,
  pythonSplitLines,
  pythonStr,
  pythonStrRepr,
  pythonStrReprQuoted
} from './repr';
import { dumpsNotebookJson } from './stringify';
import { asReaderError, upgradeLegacyNotebook } from './upgrade';
import { type CellIdGenerator, type IValidationError, validateNotebookInPlace } from './validate';

/** A notebook (or any part of one) as JSON: plain objects, arrays and JSON scalars. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type NotebookNode = Record<string, any>;

type JsonObject = Record<string, unknown>;

/** Why a notebook file could not be read; Jupyter answers 400 in both cases. */
export type NotebookParseReason = 'bad format' | 'unreadable';

/**
 * A notebook file that Jupyter cannot open.
 *
 * #### Notes
 * `reason` `bad format`: the bytes are not UTF-8 (Jupyter: 400 "<path> is not UTF-8 encoded",
 * reason `bad format`). `unreadable`: anything nbformat fails on (Jupyter: 400
 * "Unreadable Notebook: <path> <pythonRepr>"). `pythonRepr` is our best rendering of the
 * `repr()` of the Python exception; it is exact for invalid JSON, unsupported versions and
 * missing keys, and describes the same failure in other cases.
 */
export class NotebookParseError extends Error {
  constructor(
    message: string,
    readonly reason: NotebookParseReason,
    readonly pythonRepr: string
  ) {
    super(message);
    this.name = 'NotebookParseError';
  }
}

/**
 * A notebook model that Jupyter would fail to save (it answers 500 "Unexpected error while saving
 * file: <path> <message>"): for example a code cell without `outputs`, or text that cannot be
 * encoded as UTF-8.
 */
export class NotebookWriteError extends Error {
  constructor(
    message: string,
    readonly pythonRepr: string
  ) {
    super(message);
    this.name = 'NotebookWriteError';
  }
}

/** Options for reading and writing notebooks. */
export interface NotebookOptions {
  /**
   * Makes the id of a cell that lacks one, or repeats one; by default 8 random hex digits, as
   * nbformat makes them. Tests pass a deterministic generator.
   */
  generateCellId?: CellIdGenerator;
}

/**
 * What {@link readNotebook} learnt about some bytes, so that reading the same bytes again skips
 * that work. A caller keeps one per content it can tell apart (a file's inode, size and times,
 * as the trust signature cache tells them) and passes it to every read of that content; the
 * read fills it in.
 */
export interface INotebookFacts {
  /**
   * The notebook passed the schema check (no `validationMessage`): the check, a walk of the whole
   * notebook, is skipped. The cell-id repair is still done, and a notebook nbformat fails on
   * still fails. The verdict does not depend on the generated cell ids.
   */
  valid?: boolean;
  /** No number or token needed Python's typing: the bytes are not scanned for them. */
  plainJson?: boolean;
}

/** Options for {@link readNotebook}. */
export interface ReadNotebookOptions extends NotebookOptions {
  /** What earlier reads of these exact bytes learnt; this read adds what it learns. */
  facts?: INotebookFacts;
}

/** The result of {@link readNotebook}. */
export interface ReadNotebookResult {
  /** The notebook as Jupyter's contents model holds it (nbformat 4; strings joined). */
  notebook: NotebookNode;
  /** Jupyter's `model["message"]` when the notebook fails validation. */
  validationMessage?: string;
}

/** The result of {@link serializeNotebook}. */
export interface SerializedNotebook {
  /** The file's bytes. */
  bytes: Buffer;
  /** Jupyter's `model["message"]` after the save, when the notebook fails validation. */
  validationMessage?: string;
}

/** A new cell id: 8 random hex digits, like nbformat's `uuid4().hex[:8]`. */
export function randomCellId(): string {
  return randomBytes(4).toString('hex');
}

/**
 * Read a notebook file as Jupyter Server's contents manager does.
 *
 * #### Notes
 * Returns what Jupyter puts in the model's `content` and `message`. Notebooks of versions 1 to 3
 * are converted to version 4 (and keep `metadata.orig_nbformat`); version 4 notebooks keep their
 * minor version. For version 4.5 and later, a cell without an id, or with an id already used, gets
 * a new random id. Numbers keep their Python types (see `parsePythonJson`). Throws
 * {@link NotebookParseError} when Jupyter would answer 400.
 */
export function readNotebook(bytes: Buffer, options: ReadNotebookOptions = {}): ReadNotebookResult {
  const generateCellId = options.generateCellId ?? randomCellId;
  if (!isUtf8(bytes)) {
    throw new NotebookParseError(
      'The notebook is not UTF-8 encoded',
      'bad format',
      "UnicodeDecodeError('utf-8')"
    );
  }
  const facts = options.facts;
  let parsed: unknown;
  try {
    const result = parsePythonJsonBytes(bytes, facts?.plainJson === true);
    parsed = result.value;
    if (facts !== undefined && result.plain) {
      facts.plainJson = true;
    }
  } catch (error) {
    if (error instanceof SyntaxError) {
      throw notJsonError(bytes.toString('utf8'));
    }
    throw error;
  }
  try {
    const notebook = toVersion4(parsed, generateCellId);
    const invalid = validateNotebookInPlace(notebook, generateCellId, facts?.valid !== true);
    if (invalid !== undefined) {
      return { notebook, validationMessage: invalid.message };
    }
    if (facts !== undefined) {
      facts.valid = true;
    }
    return { notebook };
  } catch (error) {
    if (error instanceof PythonException) {
      throw new NotebookParseError(error.message, 'unreadable', error.pythonRepr);
    }
    throw error;
  }
}

/** nbformat's `NotJSONError`, whose message quotes at most the start of the text. */
function notJsonError(text: string): NotebookParseError {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  const head = codePointPrefix(text, 100);
  let message = `Notebook does not appear to be JSON: ${pythonStrReprQuoted(head, quote)}`;
  if (head.length < text.length || codePointLength(message) > 80) {
    // Only the first 77 characters are kept, which never reach past the quoted head.
    message = codePointPrefix(message, 77) + '...';
  }
  return new NotebookParseError(message, 'unreadable', `NotJSONError(${pythonStrRepr(message)})`);
}

/** `reader.reads` (a version's `to_notebook_json`) and `convert(nb, 4)`. */
function toVersion4(parsed: unknown, generateCellId: CellIdGenerator): JsonObject {
  const kind = pythonKind(parsed);
  if (kind !== 'dict') {
    throw new PythonException('AttributeError', `'${kind}' object has no attribute 'get'`);
  }
  const notebook = parsed as JsonObject;
  const major = Object.prototype.hasOwnProperty.call(notebook, 'nbformat') ? notebook.nbformat : 1;
  const version = supportedMajorVersion(major);
  if (version === 4) {
    asReaderError(() => {
      rejoinLines(notebook);
      stripTransient(notebook);
    });
    return notebook;
  }
  return upgradeLegacyNotebook(notebook, version, generateCellId);
}

/** `major in nbformat.versions`, with Python's equality (`True == 1`, `4.0 == 4`). */
function supportedMajorVersion(major: unknown): 1 | 2 | 3 | 4 {
  const kind = pythonKind(major);
  if (kind === 'list' || kind === 'dict') {
    // The parsed JSON is not yet made of NotebookNodes here.
    throw new PythonException('TypeError', `unhashable type: '${kind}'`);
  }
  if (kind === 'int' || kind === 'float' || kind === 'bool') {
    const number = Number(major);
    if (number === 1 || number === 2 || number === 3 || number === 4) {
      return number;
    }
  }
  const message = `Unsupported nbformat version ${pythonStr(major)}`;
  throw new PythonException('NBFormatError', message);
}

const SPLIT_MIME_TYPES = new Set(['application/javascript', 'image/svg+xml']);

/** JSON MIME types keep their structured value. */
function isJsonMime(mime: string): boolean {
  return mime === 'application/json' || (mime.startsWith('application/') && mime.endsWith('+json'));
}

/** nbformat 4's `rejoin_lines`: multi-line values stored as lists become strings again. */
function rejoinLines(notebook: JsonObject): void {
  for (const cell of pythonIterable(pyAttr(notebook, 'cells'))) {
    if (pyContains(cell, 'source') && Array.isArray(pyAttr(cell, 'source'))) {
      (cell as JsonObject).source = pyJoin('', (cell as JsonObject).source);
    }
    for (const [, attachment] of pyEntries(pyGet(cell, 'attachments', {}), 'values')) {
      rejoinMimeBundle(attachment);
    }
    if (pyGet(cell, 'cell_type', null) !== 'code') {
      continue;
    }
    for (const output of pythonIterable(pyGet(cell, 'outputs', []))) {
      const outputType = pyGet(output, 'output_type', '');
      requireHashable(outputType);
      if (outputType === 'execute_result' || outputType === 'display_data') {
        rejoinMimeBundle(pyGet(output, 'data', {}));
      } else if (pythonTruthy(outputType) && Array.isArray(pyGet(output, 'text', ''))) {
        (output as JsonObject).text = pyJoin('', (output as JsonObject).text);
      }
    }
  }
}

function rejoinMimeBundle(data: unknown): void {
  for (const [key, value] of pyEntries(data, 'items')) {
    if (!isJsonMime(key) && Array.isArray(value) && value.every(line => typeof line === 'string')) {
      (data as JsonObject)[key] = value.join('');
    }
  }
}

/** nbformat 4's `split_lines`: multi-line strings become lists of lines, for line-based diffs. */
function splitLines(notebook: JsonObject): void {
  for (const cell of pythonIterable(pyAttr(notebook, 'cells'))) {
    const source = pyGet(cell, 'source', null);
    if (typeof source === 'string') {
      (cell as JsonObject).source = pythonSplitLines(source, true);
    }
    for (const [, attachment] of pyEntries(pyGet(cell, 'attachments', {}), 'values')) {
      splitMimeBundle(attachment);
    }
    if (pyAttr(cell, 'cell_type') !== 'code') {
      continue;
    }
    for (const output of pythonIterable(pyAttr(cell, 'outputs'))) {
      const outputType = pyAttr(output, 'output_type');
      requireHashable(outputType);
      if (outputType === 'execute_result' || outputType === 'display_data') {
        splitMimeBundle(pyGet(output, 'data', {}));
      } else if (outputType === 'stream') {
        const text = pyAttr(output, 'text');
        if (typeof text === 'string') {
          (output as JsonObject).text = pythonSplitLines(text, true);
        }
      }
    }
  }
}

function splitMimeBundle(data: unknown): void {
  for (const [key, value] of pyEntries(data, 'items')) {
    if (typeof value === 'string' && (key.startsWith('text/') || SPLIT_MIME_TYPES.has(key))) {
      (data as JsonObject)[key] = pythonSplitLines(value, true);
    }
  }
}

/** nbformat 4's `strip_transient`: values that must never reach the file (or the client). */
function stripTransient(notebook: JsonObject): void {
  const metadata = pyAttr(notebook, 'metadata');
  pyPop(metadata, 'orig_nbformat', null);
  pyPop(metadata, 'orig_nbformat_minor', null);
  pyPop(metadata, 'signature', null);
  for (const cell of pythonIterable(pyAttr(notebook, 'cells'))) {
    pyPop(pyAttr(cell, 'metadata'), 'trusted', null);
  }
}

/**
 * The bytes Jupyter Server writes for a notebook model's `content` (a `PUT` of type `notebook`).
 *
 * #### Notes
 * The input is not modified. For version 4.5 and later, cells without an id (or with a repeated
 * one) get a new random id, as nbformat adds them while validating. Version 4 notebooks are
 * written with `indent=1`, sorted keys, non-ASCII characters as they are and a final newline;
 * notebooks of versions 1 to 3 are written as nbformat writes those versions. Throws
 * {@link NotebookWriteError} where Jupyter's save would fail.
 */
export function writeNotebook(notebook: NotebookNode, options: NotebookOptions = {}): Buffer {
  return serializeNotebook(notebook, options).bytes;
}

/**
 * {@link writeNotebook}, together with the validation message Jupyter returns in the saved model.
 */
export function serializeNotebook(
  notebook: NotebookNode,
  options: NotebookOptions = {}
): SerializedNotebook {
  const generateCellId = options.generateCellId ?? randomCellId;
  try {
    const copy = isVersion4(notebook) ? copyForVersion4(notebook) : copyNode(notebook);
    const kind = pythonKind(copy);
    if (kind !== 'dict') {
      throw new PythonException('AttributeError', `'${kind}' object has no attribute 'get'`);
    }
    const node = copy as JsonObject;
    const invalid = validateNotebookInPlace(node, generateCellId);
    // Validation fails with an exception unless `nbformat` is an integer from 1 to 4.
    const version = Object.prototype.hasOwnProperty.call(node, 'nbformat')
      ? Number(node.nbformat)
      : 1;
    const bytes = WRITERS[version](node);
    return invalid === undefined ? { bytes } : { bytes, validationMessage: invalid.message };
  } catch (error) {
    if (error instanceof PythonException) {
      throw new NotebookWriteError(error.message, error.pythonRepr);
    }
    throw error;
  }
}

/** The file's text with its final newline, as UTF-8. */
function fileBytes(text: string): Buffer {
  return Buffer.from(text + '\n', 'utf8');
}

const WRITERS: Record<number, (notebook: JsonObject) => Buffer> = {
  1: notebook => fileBytes(dumpsPython(notebook, { indent: 4, ensureAscii: true })),
  2: notebook => {
    splitLegacyLines(notebook, false);
    return fileBytes(dumpsPython(notebook, { indent: 1, sortKeys: true, ensureAscii: true }));
  },
  3: notebook => {
    stripTransientV3(notebook);
    splitLegacyLines(notebook, true);
    return fileBytes(dumpsPython(notebook, { indent: 1, sortKeys: true, ensureAscii: true }));
  },
  4: notebook => {
    splitLines(notebook);
    stripTransient(notebook);
    const bytes = dumpsNotebookJson(notebook, '\n');
    if (bytes !== undefined) {
      return bytes;
    }
    // Lone surrogates, or values that are not JSON: the exact serialiser, which fails as Python
    // does.
    const { text, hasLoneSurrogate } = dumpsPythonChecked(notebook, {
      indent: 1,
      sortKeys: true,
      rawLoneSurrogates: true
    });
    if (hasLoneSurrogate) {
      // Python writes the file as UTF-8, which a lone surrogate cannot be.
      throw unicodeEncodeError('utf-8', text);
    }
    return fileBytes(text);
  }
};

/** Output keys that nbformat 2 and 3 store as lists of lines. */
const LEGACY_MULTILINE_OUTPUT_KEYS = ['text', 'html', 'svg', 'latex', 'javascript', 'json'];

/** nbformat 2 and 3's `split_lines` (version 2 drops the line ends). */
function splitLegacyLines(notebook: JsonObject, keepEnds: boolean): void {
  for (const worksheet of pythonIterable(pyAttr(notebook, 'worksheets'))) {
    for (const cell of pythonIterable(pyAttr(worksheet, 'cells'))) {
      const record = cell as JsonObject;
      if (pyAttr(cell, 'cell_type') === 'code') {
        if (pyContains(record, 'input') && typeof pyAttr(record, 'input') === 'string') {
          record.input = pythonSplitLines(record.input as string, keepEnds);
        }
        for (const output of pythonIterable(pyAttr(record, 'outputs'))) {
          for (const key of LEGACY_MULTILINE_OUTPUT_KEYS) {
            const item = pyGet(output, key, null);
            if (typeof item === 'string') {
              (output as JsonObject)[key] = pythonSplitLines(item, keepEnds);
            }
          }
        }
      } else {
        for (const key of ['source', 'rendered']) {
          const item = pyGet(record, key, null);
          if (typeof item === 'string') {
            record[key] = pythonSplitLines(item, keepEnds);
          }
        }
      }
    }
  }
}

/** nbformat 3's `strip_transient`. */
function stripTransientV3(notebook: JsonObject): void {
  pyPop(notebook, 'orig_nbformat', null);
  pyPop(notebook, 'orig_nbformat_minor', null);
  for (const worksheet of pythonIterable(pyItem(notebook, 'worksheets'))) {
    for (const cell of pythonIterable(pyItem(worksheet, 'cells'))) {
      pyPop(pyGet(cell, 'metadata', {}), 'trusted', null);
      pyPop(cell, 'trusted', null);
    }
  }
}

/**
 * Would validation take this for a version 4 notebook? (It fails unless `nbformat` is an integer
 * from 1 to 4, so the answer only chooses how much to copy.)
 */
function isVersion4(notebook: unknown): notebook is JsonObject {
  return isPlainObject(notebook) && notebook.nbformat === 4;
}

/**
 * {@link copyNode} for a version 4 notebook, copying only the dicts and lists that validation
 * (cell ids), `split_lines` and `strip_transient` change; everything else is shared with the
 * model, which the serialiser does not modify.
 */
function copyForVersion4(notebook: JsonObject): JsonObject {
  const copy = { ...notebook };
  copyDict(copy, 'metadata');
  if (Array.isArray(copy.cells)) {
    copy.cells = copy.cells.map(copyCellForVersion4);
  }
  return copy;
}

function copyCellForVersion4(cell: unknown): unknown {
  if (!isPlainObject(cell)) {
    return cell;
  }
  const copy = { ...cell };
  copyDict(copy, 'metadata');
  const attachments = copyDict(copy, 'attachments');
  if (attachments !== undefined) {
    for (const key of Object.keys(attachments)) {
      copyDict(attachments, key);
    }
  }
  if (Array.isArray(copy.outputs)) {
    copy.outputs = copy.outputs.map(output => {
      if (!isPlainObject(output)) {
        return output;
      }
      const outputCopy = { ...output };
      copyDict(outputCopy, 'data');
      return outputCopy;
    });
  }
  return copy;
}

/**
 * Replace `record[key]`, when it is a dict, by a copy of its own keys (spreading keeps
 * `__proto__` an own key); return the copy.
 */
function copyDict(record: JsonObject, key: string): JsonObject | undefined {
  const value = Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined;
  if (!isPlainObject(value)) {
    return undefined;
  }
  const copy = { ...value };
  Object.defineProperty(record, key, {
    value: copy,
    enumerable: true,
    writable: true,
    configurable: true
  });
  return copy;
}

/** `nbformat.from_dict`: a structural copy (strings and numbers are immutable and shared). */
function copyNode(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.map(copyNode);
  }
  if (isPlainObject(value)) {
    const copy: JsonObject = {};
    for (const key of Object.keys(value)) {
      const item = copyNode(value[key]);
      if (key === '__proto__') {
        Object.defineProperty(copy, key, {
          value: item,
          enumerable: true,
          writable: true,
          configurable: true
        });
      } else {
        copy[key] = item;
      }
    }
    return copy;
  }
  return value;
}

/**
 * A new, empty notebook: `nbformat.v4.new_notebook()`, which Jupyter saves for a new untitled
 * notebook.
 */
export function newNotebook(): NotebookNode {
  return { nbformat: 4, nbformat_minor: 5, metadata: {}, cells: [] };
}

/**
 * `nbformat.validate(notebook)` as Jupyter reports it: the error whose `message` is the model's
 * ("Notebook validation failed: ..."), with what is wrong and where, or undefined when the
 * notebook is valid.
 *
 * #### Notes
 * The notebook is not modified; as in nbformat, missing or repeated cell ids of a v4.5 notebook
 * are not errors, since nbformat repairs them before it validates. Throws a `PythonException`
 * where nbformat's `validate` raises something other than a `ValidationError` (for example when
 * `nbformat_minor` is not an integer).
 */
export function validateNotebook(notebook: NotebookNode): IValidationError | undefined {
  const copy: JsonObject = { ...notebook };
  if (Array.isArray(copy.cells)) {
    copy.cells = copy.cells.map((cell: unknown) => (isPlainObject(cell) ? { ...cell } : cell));
  }
  return validateNotebookInPlace(copy, randomCellId);
}
