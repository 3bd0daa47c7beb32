/**
 * Reading notebooks written in nbformat 1, 2 and 3, and converting them to version 4, as
 * `nbformat.reads(text, as_version=4)` does: the major version's own reader (`to_notebook_json`),
 * then one upgrade step per major version.
 *
 * Old notebooks are rare, so this aims at doing exactly what nbformat does, including where it
 * fails, rather than at speed. Nodes are mutated in place and shared the way nbformat shares them.
 */
import {
  pyAttr,
  pyContains,
  pyGet,
  pyItem,
  pyJoin,
  pyPop,
  pySet,
  pySetDefault,
  pySetItem,
  pythonInt,
  pythonIterable,
  requireHashable,
  requireStr
} from './dict';
import { PythonException, unicodeEncodeError } from './exception';
import { parsePythonJson } from './json';
import { pythonFloatRepr, pythonKind, pythonTruthy, pythonTypeName } from './pynumber';
import { pythonSplitLines, pythonStr, pythonStrRepr } from './repr';
import {
  type CellIdGenerator,
  firstValidationError,
  isPythonInt,
  validateNotebookInPlace
} from './validate';

type JsonObject = Record<string, unknown>;

/** The major versions older than 4 that nbformat still reads. */
export type LegacyMajorVersion = 1 | 2 | 3;

/** Output keys that nbformat 2 and 3 store as lists of lines. */
const MULTILINE_OUTPUT_KEYS = ['text', 'html', 'svg', 'latex', 'javascript', 'json'];

/**
 * Run a version's reader (`to_notebook_json`) as nbformat's `reader.reads` does: an
 * `AttributeError` becomes a `ValidationError` about a missing key.
 */
export function asReaderError<T>(action: () => T): T {
  return asMissingKey(
    action,
    message => `The notebook is invalid and is missing an expected key: ${message}`
  );
}

/**
 * Read a parsed notebook of major version 1, 2 or 3 and convert it to version 4, as
 * `nbformat.reads(text, as_version=4)` does up to (not including) the final validation.
 *
 * #### Notes
 * The result is the same object, mutated, or a new one for version 1. The converted notebook
 * carries `metadata.orig_nbformat` (and `orig_nbformat_minor`), as nbformat leaves them. Throws a
 * {@link PythonException} wherever nbformat raises; an `AttributeError` is reported as nbformat
 * reports it, as a `ValidationError` about a missing key.
 */
export function upgradeLegacyNotebook(
  notebook: JsonObject,
  major: LegacyMajorVersion,
  generateCellId: CellIdGenerator
): JsonObject {
  asReaderError(() => {
    if (major === 2) {
      rejoinLinesV2(notebook);
      checkAsciiImages(notebook);
    } else if (major === 3) {
      rejoinLinesV3(notebook);
    }
  });
  let current = notebook;
  let version: number = major;
  while (version < 4) {
    const step = version + 1;
    const [from, to] = stepLabels(current);
    current = asMissingKey(
      () => UPGRADES[step](current, generateCellId),
      message =>
        `Notebook could not be converted from version ${from} to version ${to} because it's missing a key: ${message}`
    );
    version = step;
  }
  return current;
}

/**
 * How nbformat names a conversion step: the `nbformat` value as it is (`True`, `2.0`) and that
 * value plus one, in Python arithmetic.
 */
function stepLabels(notebook: JsonObject): [string, string] {
  const value = Object.prototype.hasOwnProperty.call(notebook, 'nbformat') ? notebook.nbformat : 1;
  const next = Number(value) + 1;
  return [pythonStr(value), pythonKind(value) === 'float' ? pythonFloatRepr(next) : String(next)];
}

/** nbformat turns an `AttributeError` at these points into a `ValidationError`. */
function asMissingKey<T>(action: () => T, describe: (message: string) => string): T {
  try {
    return action();
  } catch (error) {
    if (error instanceof PythonException && error.pythonType === 'AttributeError') {
      const message = describe(error.message);
      throw new PythonException(
        'ValidationError',
        message,
        `<ValidationError: ${pythonStrRepr(message)}>`
      );
    }
    throw error;
  }
}

const UPGRADES: Record<
  number,
  (notebook: JsonObject, generateCellId: CellIdGenerator) => JsonObject
> = {
  2: upgradeV1ToV2,
  3: upgradeV2ToV3,
  4: upgradeV3ToV4
};

// ---------------------------------------------------------------------------------------------
// Version 2 and 3 readers
// ---------------------------------------------------------------------------------------------

/** Call `visit` for every cell of every worksheet, reached the way nbformat 2/3 reach them. */
function forEachCell(notebook: JsonObject, visit: (cell: unknown) => void): void {
  for (const worksheet of pythonIterable(pyAttr(notebook, 'worksheets'))) {
    for (const cell of pythonIterable(pyAttr(worksheet, 'cells'))) {
      visit(cell);
    }
  }
}

/** nbformat 3's `_join_lines`: lines that kept their ends are concatenated, others joined by `\n`. */
function joinLinesV3(lines: unknown[]): string {
  if (lines.length > 0) {
    const first = requireStr(lines[0], 'endswith');
    if (first.endsWith('\n') || first.endsWith('\r')) {
      return pyJoin('', lines);
    }
  }
  return pyJoin('\n', lines);
}

function rejoinLinesV3(notebook: JsonObject): void {
  rejoinLegacy(notebook, joinLinesV3);
}

function rejoinLinesV2(notebook: JsonObject): void {
  rejoinLegacy(notebook, lines => pyJoin('\n', lines));
}

function rejoinLegacy(notebook: JsonObject, join: (lines: unknown[]) => string): void {
  forEachCell(notebook, cell => {
    if (pyAttr(cell, 'cell_type') === 'code') {
      const record = cell as JsonObject;
      if (pyContains(record, 'input') && Array.isArray(pyAttr(record, 'input'))) {
        record.input = join(record.input as unknown[]);
      }
      for (const output of pythonIterable(pyAttr(record, 'outputs'))) {
        for (const key of MULTILINE_OUTPUT_KEYS) {
          const item = pyGet(output, key, null);
          if (Array.isArray(item)) {
            (output as JsonObject)[key] = join(item);
          }
        }
      }
    } else {
      for (const key of ['source', 'rendered']) {
        const item = pyGet(cell, key, null);
        if (Array.isArray(item)) {
          (cell as JsonObject)[key] = join(item);
        }
      }
    }
  });
}

/**
 * nbformat 2 encodes `png` and `jpeg` outputs to ASCII bytes on read (and version 3 decodes them
 * again): only the failures remain visible.
 */
function checkAsciiImages(notebook: JsonObject): void {
  forEachCell(notebook, cell => {
    if (pyAttr(cell, 'cell_type') !== 'code') {
      return;
    }
    for (const output of pythonIterable(pyAttr(cell, 'outputs'))) {
      for (const key of ['png', 'jpeg']) {
        if (pyContains(output, key)) {
          const data = requireStr(pyAttr(output, key), 'encode');
          if (/[\u0080-\uffff]/.test(data)) {
            throw unicodeEncodeError('ascii', data);
          }
        }
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Upgrades
// ---------------------------------------------------------------------------------------------

/** nbformat 2's `upgrade` from version 1: a new notebook with one worksheet. */
function upgradeV1ToV2(notebook: JsonObject): JsonObject {
  const cells: unknown[] = [];
  let previous: JsonObject | undefined;
  for (const cell of pythonIterable(pyAttr(notebook, 'cells'))) {
    const cellType = pyAttr(cell, 'cell_type');
    if (cellType === 'code') {
      previous = newCodeCellV2(pyGet(cell, 'code', null), pyGet(cell, 'prompt_number', null));
    } else if (cellType === 'text') {
      previous = {
        ...optional('source', pyGet(cell, 'text', null), pythonStr),
        cell_type: 'markdown'
      };
    }
    if (previous === undefined) {
      // nbformat appends a variable it never assigned.
      throw new PythonException(
        'UnboundLocalError',
        "cannot access local variable 'newcell' where it is not associated with a value"
      );
    }
    // Otherwise an unknown cell type appends the previous cell again: the same object twice.
    cells.push(previous);
  }
  return { nbformat: 2, worksheets: [{ cells }], metadata: {} };
}

function newCodeCellV2(input: unknown, promptNumber: unknown): JsonObject {
  return {
    cell_type: 'code',
    language: 'python',
    ...optional('input', input, pythonStr),
    ...optional('prompt_number', promptNumber, pythonInt),
    outputs: [],
    collapsed: false
  };
}

/** `{key: convert(value)}` unless the value is None, as nbformat's constructors do. */
function optional(key: string, value: unknown, convert: (value: unknown) => unknown): JsonObject {
  return value === null || value === undefined ? {} : { [key]: convert(value) };
}

/** nbformat 3's `upgrade` from version 2. */
function upgradeV2ToV3(notebook: JsonObject): JsonObject {
  pySet(notebook, 'nbformat', 3);
  pySet(notebook, 'nbformat_minor', 0);
  pySet(notebook, 'orig_nbformat', 2);
  for (const worksheet of pythonIterable(pyItem(notebook, 'worksheets'))) {
    for (const cell of pythonIterable(pyItem(worksheet, 'cells'))) {
      pySetDefault(cell, 'metadata', {});
    }
  }
  return notebook;
}

/** nbformat 4's `upgrade` from version 3. */
function upgradeV3ToV4(notebook: JsonObject, generateCellId: CellIdGenerator): JsonObject {
  const fromVersion = pyItem(notebook, 'nbformat');
  checkV3Validation(notebook, fromVersion);
  const originalMajor = pyPop(notebook, 'orig_nbformat', null);
  const originalMinor = pyPop(notebook, 'orig_nbformat_minor', null);
  const metadata = pyAttr(notebook, 'metadata');
  pySet(metadata, 'orig_nbformat', pythonTruthy(originalMajor) ? originalMajor : 3);
  pySet(metadata, 'orig_nbformat_minor', pythonTruthy(originalMinor) ? originalMinor : 0);
  notebook.nbformat = 4;
  notebook.nbformat_minor = 5;
  const cells: unknown[] = [];
  notebook.cells = cells;
  for (const worksheet of pythonIterable(pyPop(notebook, 'worksheets', []))) {
    for (const cell of pythonIterable(pyItem(worksheet, 'cells'))) {
      cells.push(upgradeCellV3(cell, generateCellId));
    }
  }
  pyPop(metadata, 'name', '');
  pyPop(metadata, 'signature', '');
  // nbformat validates the result too (logging only), which normalises ids and can fail.
  validateNotebookInPlace(notebook, generateCellId);
  return notebook;
}

/**
 * nbformat validates a v3 notebook before converting it and only logs the result, but the
 * validation itself can fail (a minor version above 0, a malformed cell): that fails the read.
 */
function checkV3Validation(notebook: JsonObject, version: unknown): void {
  const minor = Object.prototype.hasOwnProperty.call(notebook, 'nbformat_minor')
    ? notebook.nbformat_minor
    : 0;
  if (!isPythonInt(version) || !isPythonInt(minor)) {
    throw new PythonException('AssertionError', '');
  }
  firstValidationError(notebook, version, minor);
}

/** nbformat 4's `upgrade_cell`, in place. */
function upgradeCellV3(cell: unknown, generateCellId: CellIdGenerator): unknown {
  pySetDefault(cell, 'metadata', {});
  const record = cell as JsonObject;
  record.id = generateCellId();
  const cellType = pyAttr(record, 'cell_type');
  if (cellType === 'code') {
    pyPop(record, 'language', '');
    if (pyContains(record, 'collapsed')) {
      pySetItem(record.metadata, 'collapsed', pyPop(record, 'collapsed', null));
    }
    record.source = pyPop(record, 'input', '');
    record.execution_count = pyPop(record, 'prompt_number', null);
    record.outputs = pythonIterable(pyAttr(record, 'outputs')).map(upgradeOutputV3);
  } else if (cellType === 'heading') {
    record.cell_type = 'markdown';
    const level = pyPop(record, 'level', 1);
    const hashes = '#'.repeat(repeatCount(level));
    const source = requireStr(pyGet(record, 'source', ''), 'splitlines');
    record.source = `${hashes} ${pythonSplitLines(source, false).join(' ')}`;
  } else if (cellType === 'html') {
    record.cell_type = 'markdown';
  }
  return cell;
}

const MAX_HEADING_LEVEL = 1 << 24;

/** The count for Python's `"#" * level`. */
function repeatCount(level: unknown): number {
  const kind = pythonKind(level);
  if (kind === 'bool') {
    return level ? 1 : 0;
  }
  if (kind !== 'int') {
    throw new PythonException(
      'TypeError',
      `can't multiply sequence by non-int of type '${pythonTypeName(level)}'`
    );
  }
  const count = Number(level);
  if (count > MAX_HEADING_LEVEL) {
    // Python would try to build the string and run out of memory.
    throw new PythonException('MemoryError', '');
  }
  return Math.max(0, count);
}

/** nbformat 3's short output keys and the MIME types version 4 uses. */
const MIME_MAP: [string, string][] = [
  ['text', 'text/plain'],
  ['html', 'text/html'],
  ['svg', 'image/svg+xml'],
  ['png', 'image/png'],
  ['jpeg', 'image/jpeg'],
  ['latex', 'text/latex'],
  ['json', 'application/json'],
  ['javascript', 'application/javascript']
];

function toMimeKeys(container: unknown): void {
  for (const [alias, mime] of MIME_MAP) {
    if (pyContains(container, alias)) {
      pySetItem(container, mime, pyPop(container, alias, null));
    }
  }
}

/** nbformat 4's `upgrade_output`, in place. */
function upgradeOutputV3(output: unknown): unknown {
  const outputType = pyItem(output, 'output_type');
  requireHashable(outputType);
  const record = output as JsonObject;
  if (outputType === 'pyout' || outputType === 'display_data') {
    pySetDefault(record, 'metadata', {});
    if (outputType === 'pyout') {
      record.output_type = 'execute_result';
      record.execution_count = pyPop(record, 'prompt_number', null);
    }
    const data: JsonObject = {};
    for (const key of Object.keys(record)) {
      if (key !== 'output_type' && key !== 'execution_count' && key !== 'metadata') {
        data[key] = pyPop(record, key, null);
      }
    }
    toMimeKeys(data);
    record.data = data;
    toMimeKeys(record.metadata);
    if (Object.prototype.hasOwnProperty.call(data, 'application/json')) {
      data['application/json'] = parseEmbeddedJson(data['application/json']);
    }
  } else if (outputType === 'pyerr') {
    record.output_type = 'error';
  } else if (outputType === 'stream') {
    record.name = pyPop(record, 'stream', 'stdout');
  }
  return output;
}

/** `json.loads` of a v3 JSON output, which nbformat 3 stored as text. */
function parseEmbeddedJson(value: unknown): unknown {
  if (typeof value !== 'string') {
    throw new PythonException(
      'TypeError',
      `the JSON object must be str, bytes or bytearray, not ${pythonKind(value)}`
    );
  }
  try {
    return parsePythonJson(value);
  } catch (error) {
    if (error instanceof SyntaxError) {
      throw new PythonException('JSONDecodeError', error.message);
    }
    throw error;
  }
}
