/**
 * Differential test: the real nbformat 5.11.1 / Jupyter Server 2.21.1 of the project venv against
 * our reader and writer, over a few hundred seeded pseudo-random notebooks (every output type,
 * multi-line strings as strings and as lists, Python's line separators, astral characters, floats
 * such as `1.0` and `1e-07`, big integers, missing and repeated cell ids, v3 notebooks, every v4
 * minor, and notebooks broken on purpose). One Python process handles all of them.
 *
 * Reads compare what Jupyter puts in the model (`content`, as sorted JSON, and `message`), or
 * the `repr()` of the exception Jupyter reports as "Unreadable Notebook". Writes compare the file
 * bytes and the message, or the text of the exception Jupyter reports as a failed save.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import {
  NotebookParseError,
  NotebookWriteError,
  PyNumber,
  dumpsPython,
  readNotebook,
  serializeNotebook
} from '../src';
/** The project venv, at the repository's root, with nbformat and Jupyter Server. */
const PYTHON = join(__dirname, '..', '..', '..', '.venv', 'bin', 'python');

/**
 * Runs every job through Jupyter's own code paths: `FileContentsManager` semantics for reads
 * (`nbformat.reads(as_version=4)` + `validate_notebook_model`) and for saves (`from_dict` +
 * `nbformat.write(version=NO_CONVERT)` to a UTF-8 text file). Cell ids come from a counter so
 * that both sides can be compared; nbformat draws them at the same points as we do.
 */
const HARNESS = String.raw`
import base64, json, logging, os, sys, tempfile, warnings
warnings.simplefilter("ignore")
logging.disable(logging.CRITICAL)
import jupyter_server
import nbformat
import nbformat.v4.convert
import nbformat.validator
from jupyter_server.services.contents.filemanager import FileContentsManager

counter = [0]
def next_id():
    counter[0] += 1
    return "cid%05d" % counter[0]
nbformat.validator.generate_corpus_id = next_id
nbformat.v4.convert.random_cell_id = next_id
manager = FileContentsManager()
target = os.path.join(tempfile.mkdtemp(), "saved.ipynb")

def read(raw):
    counter[0] = 0
    try:
        text = raw.decode("utf8")
    except UnicodeError:
        return {"error": "bad format"}
    captured = {}
    try:
        nb = nbformat.reads(text, as_version=4, capture_validation_error=captured)
    except Exception as e:
        # Jupyter answers "Unreadable Notebook: <path> <e!r>".
        return {"error": repr(e)}
    model = {"content": nb}
    manager.validate_notebook_model(model, captured)
    return {
        "content": json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=True),
        "message": model.get("message"),
    }

def write(model_json):
    counter[0] = 0
    nb = nbformat.from_dict(json.loads(model_json))
    captured = {}
    try:
        with open(target, "w", encoding="utf-8") as f:
            nbformat.write(nb, f, version=nbformat.NO_CONVERT, capture_validation_error=captured)
    except Exception as e:
        # Jupyter answers "Unexpected error while saving file: <path> <e>".
        return {"error": str(e)}
    with open(target, "rb") as f:
        data = f.read()
    model = {"content": nb}
    manager.validate_notebook_model(model, captured)
    return {"bytes": base64.b64encode(data).decode("ascii"), "message": model.get("message")}

jobs = json.load(sys.stdin)
results = [read(base64.b64decode(job["bytes"])) if job["op"] == "read" else write(job["model"]) for job in jobs]
json.dump({"versions": [nbformat.__version__, jupyter_server.__version__], "results": results}, sys.stdout, ensure_ascii=True)
`;

interface ReadJob {
  op: 'read';
  bytes: string;
}
interface WriteJob {
  op: 'write';
  model: string;
}
interface Outcome {
  content?: string;
  message?: string | null;
  bytes?: string;
  error?: string;
}

function runPython(jobs: (ReadJob | WriteJob)[]): { versions: string[]; results: Outcome[] } {
  const run = spawnSync(PYTHON, ['-c', HARNESS], {
    input: JSON.stringify(jobs),
    maxBuffer: 1 << 30,
    // jsonschema visits some sets in string-hash order; a fixed seed keeps Python's run repeatable.
    env: { ...process.env, PYTHONHASHSEED: '0', PYTHONIOENCODING: 'utf-8' }
  });
  if (run.status !== 0) {
    throw new Error(`The nbformat harness failed: ${run.stderr.toString()}`);
  }
  return JSON.parse(run.stdout.toString());
}

function counterIds(): () => string {
  let count = 0;
  return () => `cid${String(++count).padStart(5, '0')}`;
}

function readWithUs(bytes: Buffer): Outcome {
  try {
    const { notebook, validationMessage } = readNotebook(bytes, { generateCellId: counterIds() });
    return {
      content: dumpsPython(notebook, { indent: 1, sortKeys: true, ensureAscii: true }),
      message: validationMessage ?? null
    };
  } catch (error) {
    if (!(error instanceof NotebookParseError)) {
      throw error;
    }
    return { error: error.reason === 'bad format' ? 'bad format' : error.pythonRepr };
  }
}

function writeWithUs(model: unknown): Outcome {
  try {
    const { bytes, validationMessage } = serializeNotebook(model as Record<string, unknown>, {
      generateCellId: counterIds()
    });
    return { bytes: bytes.toString('base64'), message: validationMessage ?? null };
  } catch (error) {
    if (!(error instanceof NotebookWriteError)) {
      throw error;
    }
    return { error: error.message };
  }
}

// ---------------------------------------------------------------------------------------------
// Seeded generator
// ---------------------------------------------------------------------------------------------

class Random {
  constructor(private state: number) {}

  next(): number {
    // mulberry32
    this.state = (this.state + 0x6d2b79f5) | 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  int(low: number, high: number): number {
    return low + Math.floor(this.next() * (high - low + 1));
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }
}

const LINE_BREAKS = [
  '\n',
  '\n',
  '\n',
  '\r\n',
  '\r',
  '\v',
  '\f',
  '\x1c',
  '\x1d',
  '\x1e',
  '\x85',
  '\u2028',
  '\u2029'
];
const TEXT_PIECES = [
  'x = 1',
  'print("hello")',
  "it's",
  'say "hi"',
  'back\\slash',
  '  indented',
  '\ttab',
  'é',
  'ß',
  '中文',
  'Ω',
  '\u00a0',
  '\u200b',
  '\ufeff',
  '\ue000',
  '😀',
  '𝔘𝔫𝔦',
  '\u{10fffd}',
  '\x00',
  '\x01',
  '\x1f',
  '\x7f',
  '\b',
  '</script>',
  '{"json": [1, 2]}',
  '   ',
  'long '.repeat(20)
];
const KEYS = ['a', 'B', '_x', 'zeta', 'é', 'Ω', '😀', '\uff5e', 'key with space', 'a.b', 'Z', ''];
const FLOATS = [
  0.1, 1.5, -2.25, 1e-7, 1.5e-5, 123456.789, 5e-324, 1.7976931348623157e308, 1e16, 1e22
];
const FLOAT_LEXEMES = ['1.0', '0.0', '-0.0', '100.0', '1e+16', '1e+22', '123456789.0', '-3.0'];
const BIG_INTS = ['9007199254740993', '-1180591620717411303424', '123456789012345678901234567890'];

function text(random: Random, lines = random.int(0, 4)): string {
  let out = '';
  for (let i = 0; i < lines; i++) {
    const pieces = random.int(1, 3);
    for (let j = 0; j < pieces; j++) {
      out += random.pick(TEXT_PIECES);
    }
    if (i < lines - 1 || random.chance(0.5)) {
      out += random.pick(LINE_BREAKS);
    }
  }
  return out;
}

/** A multi-line value as a client sends it (string) or as a file stores it (list of lines). */
function multiline(random: Random, lines?: number): string | string[] {
  const value = text(random, lines);
  if (random.chance(0.4)) {
    return value.split(/(?<=\n)/);
  }
  return value;
}

function number(random: Random): unknown {
  switch (random.int(0, 4)) {
    case 0:
      return random.int(-1000, 1000);
    case 1:
      return random.pick(FLOATS);
    case 2:
      return new PyNumber('float', random.pick(FLOAT_LEXEMES));
    case 3:
      return new PyNumber('int', random.pick(BIG_INTS));
    default:
      return random.pick([0, -0, 2 ** 53, -(2 ** 40)]);
  }
}

function jsonValue(random: Random, depth = 0): unknown {
  const choice = random.int(0, depth > 2 ? 4 : 7);
  switch (choice) {
    case 0:
      return null;
    case 1:
      return random.chance(0.5);
    case 2:
    case 3:
      return number(random);
    case 4:
      return text(random, random.int(0, 2));
    case 5:
      return [];
    case 6:
      return Array.from({ length: random.int(0, 4) }, () => jsonValue(random, depth + 1));
    default:
      return object(random, depth + 1);
  }
}

function object(random: Random, depth: number): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  const count = random.int(0, 4);
  for (let i = 0; i < count; i++) {
    result[random.pick(KEYS)] = jsonValue(random, depth);
  }
  return result;
}

function mimeBundle(random: Random): Record<string, unknown> {
  const bundle: Record<string, unknown> = {};
  if (random.chance(0.9)) {
    bundle['text/plain'] = multiline(random);
  }
  if (random.chance(0.3)) {
    bundle['text/html'] = multiline(random);
  }
  if (random.chance(0.2)) {
    bundle['text/latex'] = multiline(random);
  }
  if (random.chance(0.3)) {
    bundle['image/png'] = random.chance(0.5) ? 'iVBORw0KGgo=\n' : 'iVBORw0KGgoAAAANSUhEUg==';
  }
  if (random.chance(0.2)) {
    bundle['image/svg+xml'] = multiline(random);
  }
  if (random.chance(0.2)) {
    bundle['application/javascript'] = multiline(random);
  }
  if (random.chance(0.3)) {
    bundle['application/json'] = jsonValue(random, 1);
  }
  if (random.chance(0.2)) {
    bundle['application/vnd.custom.v1+json'] = object(random, 1);
  }
  if (random.chance(0.1)) {
    bundle['application/x-custom'] = multiline(random);
  }
  return bundle;
}

function output(random: Random): Record<string, unknown> {
  switch (random.int(0, 3)) {
    case 0:
      return {
        output_type: 'stream',
        name: random.pick(['stdout', 'stderr']),
        text: multiline(random)
      };
    case 1:
      return {
        output_type: 'display_data',
        data: mimeBundle(random),
        metadata: random.chance(0.5) ? {} : { 'image/png': { width: number(random) } }
      };
    case 2:
      return {
        output_type: 'execute_result',
        execution_count: random.chance(0.8) ? random.int(1, 99) : null,
        data: mimeBundle(random),
        metadata: random.chance(0.7) ? {} : object(random, 1)
      };
    default:
      return {
        output_type: 'error',
        ename: 'ValueError',
        evalue: text(random, 1),
        traceback: Array.from({ length: random.int(0, 3) }, () => text(random, 1))
      };
  }
}

function cellMetadata(random: Random, cellType: string): Record<string, unknown> {
  const metadata: Record<string, unknown> = {};
  if (random.chance(0.2)) {
    metadata.tags = random.chance(0.8) ? ['a', 'b'] : [];
  }
  if (random.chance(0.2)) {
    metadata.trusted = random.chance(0.5);
  }
  if (random.chance(0.1)) {
    metadata.name = 'cell-name';
  }
  if (random.chance(0.1)) {
    metadata.jupyter = { source_hidden: true };
  }
  if (cellType === 'code' && random.chance(0.2)) {
    metadata.collapsed = random.chance(0.5);
  }
  if (cellType === 'code' && random.chance(0.1)) {
    metadata.scrolled = random.pick([true, false, 'auto']);
  }
  if (cellType === 'code' && random.chance(0.2)) {
    metadata.execution = {
      'iopub.execute_input': '2024-01-01T00:00:00.000001Z',
      'shell.execute_reply': '2024-01-01T00:00:01Z'
    };
  }
  if (random.chance(0.3)) {
    Object.assign(metadata, object(random, 1));
  }
  return metadata;
}

function cellV4(random: Random, withId: boolean, index: number): Record<string, unknown> {
  const cellType = random.pick(['code', 'code', 'markdown', 'raw']);
  const cell: Record<string, unknown> = {};
  if (withId) {
    cell.id = random.chance(0.1) ? 'repeated-id' : `cell-${index}-${random.int(0, 9999)}`;
  }
  cell.cell_type = cellType;
  cell.metadata = cellMetadata(random, cellType);
  cell.source = multiline(random);
  if (cellType === 'code') {
    cell.outputs = Array.from({ length: random.int(0, 3) }, () => output(random));
    cell.execution_count = random.chance(0.7) ? random.int(1, 50) : null;
  } else if (random.chance(0.2)) {
    cell.attachments = { 'image.png': mimeBundle(random) };
  }
  return cell;
}

function notebookMetadata(random: Random): Record<string, unknown> {
  const metadata: Record<string, unknown> = {};
  if (random.chance(0.7)) {
    metadata.kernelspec = {
      display_name: 'Python 3 (ipykernel)',
      language: 'python',
      name: 'python3'
    };
  }
  if (random.chance(0.6)) {
    metadata.language_info = {
      codemirror_mode: random.chance(0.5) ? { name: 'ipython', version: 3 } : 'python',
      file_extension: '.py',
      mimetype: 'text/x-python',
      name: 'python',
      version: '3.11.7'
    };
  }
  if (random.chance(0.1)) {
    metadata.signature = 'sha256:0123';
  }
  if (random.chance(0.1)) {
    metadata.orig_nbformat = 3;
  }
  if (random.chance(0.4)) {
    Object.assign(metadata, object(random, 0));
  }
  return metadata;
}

function notebookV4(random: Random): Record<string, unknown> {
  const minor = random.pick([0, 1, 2, 3, 4, 5, 5, 5, 5, 6]);
  const ids = minor >= 5 ? random.chance(0.85) : random.chance(0.1);
  const cells = Array.from({ length: random.int(0, 5) }, (_, index) =>
    cellV4(random, ids && random.chance(0.9), index)
  );
  return { cells, metadata: notebookMetadata(random), nbformat: 4, nbformat_minor: minor };
}

function outputV3(random: Random): Record<string, unknown> {
  switch (random.int(0, 3)) {
    case 0: {
      const result: Record<string, unknown> = {
        output_type: 'pyout',
        prompt_number: random.int(1, 9),
        metadata: {},
        text: multiline(random)
      };
      if (random.chance(0.3)) {
        result.html = multiline(random);
      }
      if (random.chance(0.3)) {
        result.json = random.pick([
          '{"a": 1.0}',
          '[1, 2.5, "x"]',
          '{"big": 123456789012345678901234}'
        ]);
      }
      return result;
    }
    case 1:
      return {
        output_type: 'display_data',
        metadata: { png: { width: 3 } },
        png: 'iVBORw0KGgo=',
        text: multiline(random)
      };
    case 2:
      return {
        output_type: 'stream',
        stream: random.pick(['stdout', 'stderr']),
        text: multiline(random)
      };
    default:
      return { output_type: 'pyerr', ename: 'E', evalue: 'v', traceback: ['t1', 't2'] };
  }
}

function notebookV3(random: Random): Record<string, unknown> {
  const cells = Array.from({ length: random.int(0, 5) }, () => {
    const metadata = random.chance(0.8) ? {} : { trusted: true, tags: ['t'] };
    switch (random.int(0, 4)) {
      case 0:
      case 1:
        return {
          cell_type: 'code',
          collapsed: random.chance(0.3),
          input: random.chance(0.3) ? text(random).split(/\n/) : multiline(random),
          language: 'python',
          metadata,
          outputs: Array.from({ length: random.int(0, 2) }, () => outputV3(random)),
          prompt_number: random.int(1, 20)
        };
      case 2:
        return {
          cell_type: 'heading',
          level: random.int(1, 6),
          metadata,
          source: multiline(random, 2)
        };
      case 3:
        return { cell_type: 'markdown', metadata, source: multiline(random) };
      default:
        return { cell_type: random.pick(['raw', 'html']), metadata, source: multiline(random) };
    }
  });
  const notebook: Record<string, unknown> = {
    metadata: { name: 'old', ...(random.chance(0.3) ? { signature: 'sha256:00' } : {}) },
    nbformat: 3,
    nbformat_minor: 0,
    worksheets: [{ cells, metadata: {} }]
  };
  if (random.chance(0.2)) {
    notebook.orig_nbformat = 2;
  }
  return notebook;
}

/** Break a notebook in one random place: replace, delete or add a value. */
function breakSomewhere(random: Random, notebook: Record<string, unknown>): void {
  let node: unknown = notebook;
  let parent: Record<string, unknown> | unknown[] = notebook;
  let key: string | number = 'cells';
  const depth = random.int(1, 6);
  for (let level = 0; level < depth; level++) {
    if (Array.isArray(node) && node.length > 0) {
      parent = node;
      key = random.int(0, node.length - 1);
      node = node[key];
    } else if (node !== null && typeof node === 'object' && !(node instanceof PyNumber)) {
      const keys = Object.keys(node);
      if (keys.length === 0) {
        break;
      }
      parent = node as Record<string, unknown>;
      key = random.pick(keys);
      node = (node as Record<string, unknown>)[key];
    } else {
      break;
    }
  }
  const action = random.int(0, 3);
  if (action === 0 && !Array.isArray(parent)) {
    delete parent[key as string];
  } else if (action === 1 && !Array.isArray(parent)) {
    parent.unexpected = random.pick([1, 'x', null, []]);
  } else {
    const replacement = random.pick<unknown>([
      5,
      -1,
      'text',
      'idea',
      '',
      null,
      true,
      [],
      {},
      new PyNumber('float', '2.0'),
      new PyNumber('int', BIG_INTS[0]),
      ['a', 1],
      ['id'],
      { cell_type: 'code' },
      { output_type: 'stream' },
      { output_type: 'execute_result', data: {} }
    ]);
    (parent as Record<string | number, unknown>)[key] = replacement;
  }
}

/** File text as different writers lay it out. */
function layout(random: Random, notebook: unknown): string {
  switch (random.int(0, 3)) {
    case 0:
      return dumpsPython(notebook, {
        indent: random.pick([2, 4]),
        ensureAscii: random.chance(0.5)
      });
    case 1:
      return dumpsPython(notebook);
    default:
      return dumpsPython(notebook, { indent: 1, sortKeys: true }) + '\n';
  }
}

// ---------------------------------------------------------------------------------------------
// Fixed cases
// ---------------------------------------------------------------------------------------------

const FIXED_FILES: string[] = [
  '',
  'not json {"',
  "it's not json",
  '[1, 2]',
  '{"nbformat": 5}',
  '{"nbformat": "4"}',
  '{"nbformat": [4]}',
  '{"nbformat": 4.0, "nbformat_minor": 5, "metadata": {}, "cells": []}',
  '{"nbformat": 4, "nbformat_minor": "5", "metadata": {}, "cells": []}',
  '{"nbformat": 4, "nbformat_minor": true, "metadata": {}, "cells": []}',
  '{"nbformat": 4, "nbformat_minor": -1, "metadata": {}, "cells": []}',
  '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}}',
  '{"nbformat": 4, "nbformat_minor": 5, "cells": []}',
  '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": ""}',
  '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": 5, "metadata": {}}]}',
  '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"id": [1], "cell_type": "raw", "metadata": {}, "source": ""}]}',
  '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"id": 1, "cell_type": "raw", "metadata": {}, "source": ""}, {"id": true, "cell_type": "raw", "metadata": {}, "source": ""}]}',
  '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"id": "abc\\n", "cell_type": "raw", "metadata": {"name": "a\\rb", "tags": ["x", "x"]}, "source": ""}]}',
  '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"id": "a", "cell_type": "code", "metadata": {"scrolled": 1}, "source": "", "outputs": [{"output_type": 5}], "execution_count": 1.0}]}',
  '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"id": "a", "cell_type": "code", "metadata": {}, "source": "", "outputs": [{"output_type": "misc/mimebundle"}], "execution_count": null}]}',
  '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"id": "a", "cell_type": "code", "metadata": {}, "source": "", "outputs": [{"output_type": "stream", "name": "stdout", "text": ["a", 1]}], "execution_count": null}]}',
  '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"id": "a", "cell_type": "code", "metadata": {}, "source": "", "outputs": [{"output_type": "display_data", "data": {"text/plain": ["a", 1]}, "metadata": {}}], "execution_count": null}]}',
  '{"nbformat": 4, "nbformat_minor": 7, "metadata": {}, "cells": [{"cell_type": "future", "metadata": {}, "x": 1}]}',
  '{"nbformat": 4, "nbformat_minor": 5, "metadata": {"x": [NaN, Infinity, -Infinity, 1E400, 1E2, 2e-3, -0, 0e0]}, "cells": []}',
  '{"nbformat": 4, "nbformat_minor": 5, "metadata": {"big": ' +
    '9'.repeat(4301) +
    '}, "cells": []}',
  '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [], "metadata": {"dup": 1}}',
  '\ufeff{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}',
  '{"nbformat": 3, "nbformat_minor": 1, "metadata": {}, "worksheets": []}',
  '{"nbformat": 3.0, "nbformat_minor": 0, "metadata": {}, "worksheets": []}',
  '{"nbformat": 3, "metadata": {}, "worksheets": [{"cells": [{"cell_type": "code", "input": ["a", "b"], "outputs": [{"output_type": "pyout", "text": ["x", "y"], "prompt_number": 3, "json": "{\\"a\\": 1.0}"}], "language": "python", "collapsed": true}]}]}',
  '{"nbformat": 3, "metadata": {}, "worksheets": [{"cells": [{"cell_type": "heading", "source": "a\\nb", "level": 2.5}]}]}',
  '{"nbformat": 2, "metadata": {}, "worksheets": [{"cells": [{"cell_type": "code", "input": ["a", "b"], "outputs": [{"output_type": "pyout", "png": "abc", "text": ["1", "2"]}]}, {"cell_type": "markdown", "source": ["x", "y"]}]}]}',
  '{"nbformat": 2, "metadata": {}, "worksheets": [{"cells": [{"cell_type": "code", "outputs": [{"output_type": "pyout", "png": "\u00e9"}]}]}]}',
  '{"nbformat": 1, "cells": [{"cell_type": "code", "code": "print(1)", "prompt_number": "7"}, {"cell_type": "text", "text": "hello"}, {"cell_type": "other"}]}',
  '{"nbformat": true, "cells": [{"cell_type": "code", "code": 5.5}]}',
  '{"cells": [{"cell_type": "other"}]}',
  '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"id": "x", "cell_type": "code", "metadata": {}, "source": "", "outputs": [], "execution_count": null, "' +
    'k'.repeat(20) +
    '": {"' +
    'long '.repeat(30) +
    '": "' +
    'word '.repeat(30) +
    '"}}]}'
];

const FIXED_MODELS: unknown[] = [
  {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {},
    cells: [{ cell_type: 'code', metadata: {}, source: 'x' }]
  },
  { nbformat: 4, nbformat_minor: 5, metadata: {}, cells: [{ cell_type: 'markdown', source: 'x' }] },
  { nbformat: 4, nbformat_minor: 5, cells: [] },
  { nbformat: 4, nbformat_minor: 5, metadata: {} },
  {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {},
    cells: [{ id: 'a', cell_type: 'raw', metadata: {}, source: 'lone \ud800 surrogate' }]
  },
  { nbformat: 4, nbformat_minor: 5, metadata: {}, cells: ['not a cell'] },
  { nbformat: 4.5, nbformat_minor: 5, metadata: {}, cells: [] },
  { nbformat: 4, nbformat_minor: new PyNumber('float', '5.0'), metadata: {}, cells: [] },
  { nbformat: 5, nbformat_minor: 0, metadata: {}, cells: [] },
  {
    nbformat: 2,
    metadata: {},
    worksheets: [{ cells: [{ cell_type: 'code', input: 'a\nb\n', outputs: [{ text: 'x\ny' }] }] }]
  },
  { nbformat: 1, cells: [{ cell_type: 'code', code: 'é' }], zeta: 1, alpha: 2 },
  { nbformat: 4, nbformat_minor: 5, metadata: JSON.parse('{"__proto__": {"x": 1.5}}'), cells: [] }
];

describe('nbformat against Python nbformat 5.11.1', () => {
  it('has the project venv with Jupyter Server 2.21.1 and nbformat 5.11.1', () => {
    if (!existsSync(PYTHON)) {
      throw new Error(
        `No Python at ${PYTHON}: create the project venv (python -m venv .venv && ` +
          '.venv/bin/pip install -r requirements.txt) to run this differential test.'
      );
    }
    expect(runPython([]).versions).toEqual(['5.11.1', '2.21.1']);
  });

  const random = new Random(20240611);
  const files: Buffer[] = FIXED_FILES.map(text => Buffer.from(text, 'utf8'));
  files.push(Buffer.from([0x7b, 0xff, 0x7d]));
  for (let i = 0; i < 260; i++) {
    const notebook = notebookV4(random);
    for (let breaks = random.chance(0.3) ? random.int(1, 3) : 0; breaks > 0; breaks--) {
      breakSomewhere(random, notebook);
    }
    files.push(Buffer.from(layout(random, notebook), 'utf8'));
  }
  for (let i = 0; i < 50; i++) {
    const notebook = notebookV3(random);
    if (random.chance(0.2)) {
      breakSomewhere(random, notebook);
    }
    files.push(Buffer.from(layout(random, notebook), 'utf8'));
  }
  const models: unknown[] = [...FIXED_MODELS];
  for (let i = 0; i < 160; i++) {
    const notebook = i % 8 === 7 ? notebookV3(random) : notebookV4(random);
    for (let breaks = random.chance(0.25) ? random.int(1, 3) : 0; breaks > 0; breaks--) {
      breakSomewhere(random, notebook);
    }
    models.push(notebook);
  }

  it('reads every file as Jupyter does, and writes every model byte for byte', () => {
    if (!existsSync(PYTHON)) {
      throw new Error(`No Python at ${PYTHON}: see the first test.`);
    }
    const jobs: (ReadJob | WriteJob)[] = [
      ...files.map(bytes => ({ op: 'read' as const, bytes: bytes.toString('base64') })),
      ...models.map(model => ({
        op: 'write' as const,
        model: dumpsPython(model, { ensureAscii: true })
      }))
    ];
    const { results } = runPython(jobs);
    const mismatches: string[] = [];
    let failures = 0;
    files.forEach((bytes, index) => {
      const expected = results[index];
      const actual = readWithUs(bytes);
      failures += expected.error === undefined ? 0 : 1;
      if (!sameOutcome(expected, actual)) {
        mismatches.push(describeMismatch('read', bytes.toString('utf8'), expected, actual));
      }
    });
    models.forEach((model, index) => {
      const expected = results[files.length + index];
      const actual = writeWithUs(model);
      failures += expected.error === undefined ? 0 : 1;
      if (!sameOutcome(expected, actual)) {
        mismatches.push(describeMismatch('write', dumpsPython(model), expected, actual));
      }
    });
    expect(mismatches).toEqual([]);
    // The corpus must exercise failures without being made of them.
    expect(failures).toBeGreaterThan(20);
    expect(failures).toBeLessThan((files.length + models.length) / 3);
  });
});

/** Both fail with the same error text, or both succeed with the same content, bytes and message. */
function sameOutcome(expected: Outcome, actual: Outcome): boolean {
  if (expected.error !== undefined || actual.error !== undefined) {
    return expected.error === actual.error;
  }
  return (
    expected.content === actual.content &&
    expected.bytes === actual.bytes &&
    (expected.message ?? null) === (actual.message ?? null)
  );
}

function describeMismatch(kind: string, input: string, expected: Outcome, actual: Outcome): string {
  const decode = (outcome: Outcome): Outcome =>
    outcome.bytes === undefined
      ? outcome
      : { ...outcome, bytes: Buffer.from(outcome.bytes, 'base64').toString('utf8') };
  return `${kind} of ${JSON.stringify(input.slice(0, 2000))}\n  python: ${JSON.stringify(decode(expected))}\n  ours:   ${JSON.stringify(decode(actual))}`;
}
