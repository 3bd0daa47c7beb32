/**
 * Reading and writing notebook files as Jupyter Server 2.21.1 does with nbformat 5.11.1.
 */
import {
  type INotebookFacts,
  NotebookParseError,
  NotebookWriteError,
  dumpsPython,
  newNotebook,
  parsePythonJson,
  readNotebook,
  serializeNotebook,
  writeNotebook
} from '../src';

/** Vectors produced by nbformat 5.11.1 (`nbformat.reads` / `nbformat.write`) under CPython 3.11. */
const VECTORS = {
  writeModel:
    '{"cells": [{"cell_type": "markdown", "id": "intro", "metadata": {}, "source": "# Title\\r\\nSome *text* \\u00e9\\ud83d\\ude00\\n\\nlast line", "attachments": {"img.png": {"image/png": "iVBORw0KGgo=", "text/plain": "alt\\ntext"}}}, {"cell_type": "code", "id": "run", "metadata": {"trusted": true, "tags": ["x"]}, "execution_count": 2, "source": "x = 1.0\\nprint(x)\\u2028done", "outputs": [{"output_type": "stream", "name": "stdout", "text": "1.0\\r\\n2\\f3\\n"}, {"output_type": "display_data", "metadata": {"image/png": {"width": 1.5}}, "data": {"text/plain": "<Figure>\\n", "image/png": "AAAA\\nBBBB\\n", "image/svg+xml": "<svg>\\n</svg>", "application/javascript": "a();\\nb();", "application/json": {"k": [1.0, 0.5, "a\\nb"]}, "text/html": ["<b>\\n", "x</b>"]}}, {"output_type": "execute_result", "execution_count": 2, "metadata": {}, "data": {"text/plain": "42"}}, {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["line1\\n", "line2"]}]}, {"cell_type": "raw", "id": "raw", "metadata": {"format": "text/plain"}, "source": ""}], "metadata": {"kernelspec": {"display_name": "Python 3", "name": "python3"}, "signature": "sha256:abc", "orig_nbformat": 3, "zeta": 1e-07, "big": 18446744073709551616}, "nbformat": 4, "nbformat_minor": 5}',
  writeBytes:
    '{\n "cells": [\n  {\n   "attachments": {\n    "img.png": {\n     "image/png": "iVBORw0KGgo=",\n     "text/plain": [\n      "alt\\n",\n      "text"\n     ]\n    }\n   },\n   "cell_type": "markdown",\n   "id": "intro",\n   "metadata": {},\n   "source": [\n    "# Title\\r\\n",\n    "Some *text* é😀\\n",\n    "\\n",\n    "last line"\n   ]\n  },\n  {\n   "cell_type": "code",\n   "execution_count": 2,\n   "id": "run",\n   "metadata": {\n    "tags": [\n     "x"\n    ]\n   },\n   "outputs": [\n    {\n     "name": "stdout",\n     "output_type": "stream",\n     "text": [\n      "1.0\\r\\n",\n      "2\\f",\n      "3\\n"\n     ]\n    },\n    {\n     "data": {\n      "application/javascript": [\n       "a();\\n",\n       "b();"\n      ],\n      "application/json": {\n       "k": [\n        1.0,\n        0.5,\n        "a\\nb"\n       ]\n      },\n      "image/png": "AAAA\\nBBBB\\n",\n      "image/svg+xml": [\n       "<svg>\\n",\n       "</svg>"\n      ],\n      "text/html": [\n       "<b>\\n",\n       "x</b>"\n      ],\n      "text/plain": [\n       "<Figure>\\n"\n      ]\n     },\n     "metadata": {\n      "image/png": {\n       "width": 1.5\n      }\n     },\n     "output_type": "display_data"\n    },\n    {\n     "data": {\n      "text/plain": [\n       "42"\n      ]\n     },\n     "execution_count": 2,\n     "metadata": {},\n     "output_type": "execute_result"\n    },\n    {\n     "ename": "E",\n     "evalue": "v",\n     "output_type": "error",\n     "traceback": [\n      "line1\\n",\n      "line2"\n     ]\n    }\n   ],\n   "source": [\n    "x = 1.0\\n",\n    "print(x) ",\n    "done"\n   ]\n  },\n  {\n   "cell_type": "raw",\n   "id": "raw",\n   "metadata": {\n    "format": "text/plain"\n   },\n   "source": []\n  }\n ],\n "metadata": {\n  "big": 18446744073709551616,\n  "kernelspec": {\n   "display_name": "Python 3",\n   "name": "python3"\n  },\n  "zeta": 1e-07\n },\n "nbformat": 4,\n "nbformat_minor": 5\n}\n',
  newNotebook: '{\n "cells": [],\n "metadata": {},\n "nbformat": 4,\n "nbformat_minor": 5\n}\n',
  readV4:
    '{\n "cells": [\n  {\n   "attachments": {\n    "img.png": {\n     "image/png": "iVBORw0KGgo=",\n     "text/plain": "alt\\ntext"\n    }\n   },\n   "cell_type": "markdown",\n   "id": "intro",\n   "metadata": {},\n   "source": "# Title\\r\\nSome *text* é😀\\n\\nlast line"\n  },\n  {\n   "cell_type": "code",\n   "execution_count": 2,\n   "id": "run",\n   "metadata": {\n    "tags": [\n     "x"\n    ]\n   },\n   "outputs": [\n    {\n     "name": "stdout",\n     "output_type": "stream",\n     "text": "1.0\\r\\n2\\f3\\n"\n    },\n    {\n     "data": {\n      "application/javascript": "a();\\nb();",\n      "application/json": {\n       "k": [\n        1.0,\n        0.5,\n        "a\\nb"\n       ]\n      },\n      "image/png": "AAAA\\nBBBB\\n",\n      "image/svg+xml": "<svg>\\n</svg>",\n      "text/html": "<b>\\nx</b>",\n      "text/plain": "<Figure>\\n"\n     },\n     "metadata": {\n      "image/png": {\n       "width": 1.5\n      }\n     },\n     "output_type": "display_data"\n    },\n    {\n     "data": {\n      "text/plain": "42"\n     },\n     "execution_count": 2,\n     "metadata": {},\n     "output_type": "execute_result"\n    },\n    {\n     "ename": "E",\n     "evalue": "v",\n     "output_type": "error",\n     "traceback": [\n      "line1\\n",\n      "line2"\n     ]\n    }\n   ],\n   "source": "x = 1.0\\nprint(x) done"\n  },\n  {\n   "cell_type": "raw",\n   "id": "raw",\n   "metadata": {\n    "format": "text/plain"\n   },\n   "source": ""\n  }\n ],\n "metadata": {\n  "big": 18446744073709551616,\n  "kernelspec": {\n   "display_name": "Python 3",\n   "name": "python3"\n  },\n  "zeta": 1e-07\n },\n "nbformat": 4,\n "nbformat_minor": 5\n}',
  v3File:
    '{"metadata": {"name": "old", "signature": "sha256:1"}, "nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": [{"cell_type": "heading", "level": 2, "metadata": {}, "source": ["Heading\\n", "two"]}, {"cell_type": "code", "collapsed": true, "input": ["a = 1", "b = 2"], "language": "python", "metadata": {"trusted": true}, "outputs": [{"output_type": "pyout", "prompt_number": 1, "metadata": {}, "text": ["1\\n", "2"], "json": "{\\"v\\": 1.0}"}, {"output_type": "stream", "stream": "stderr", "text": "warn"}, {"output_type": "pyerr", "ename": "E", "evalue": "v", "traceback": []}], "prompt_number": 1}, {"cell_type": "html", "metadata": {}, "source": "<b>x</b>"}], "metadata": {}}]}',
  readV3:
    '{\n "cells": [\n  {\n   "cell_type": "markdown",\n   "id": "cid00001",\n   "metadata": {},\n   "source": "## Heading two"\n  },\n  {\n   "cell_type": "code",\n   "execution_count": 1,\n   "id": "cid00002",\n   "metadata": {\n    "collapsed": true,\n    "trusted": true\n   },\n   "outputs": [\n    {\n     "data": {\n      "application/json": {\n       "v": 1.0\n      },\n      "text/plain": "1\\n2"\n     },\n     "execution_count": 1,\n     "metadata": {},\n     "output_type": "execute_result"\n    },\n    {\n     "name": "stderr",\n     "output_type": "stream",\n     "text": "warn"\n    },\n    {\n     "ename": "E",\n     "evalue": "v",\n     "output_type": "error",\n     "traceback": []\n    }\n   ],\n   "source": "a = 1\\nb = 2"\n  },\n  {\n   "cell_type": "markdown",\n   "id": "cid00003",\n   "metadata": {},\n   "source": "<b>x</b>"\n  }\n ],\n "metadata": {\n  "orig_nbformat": 3,\n  "orig_nbformat_minor": 0\n },\n "nbformat": 4,\n "nbformat_minor": 5\n}',
  idsFile:
    '{"cells": [{"cell_type": "raw", "metadata": {}, "source": ["a\\n", "b"]}, {"id": "same", "cell_type": "raw", "metadata": {"trusted": false}, "source": ""}, {"id": "same", "cell_type": "raw", "metadata": {}, "source": ""}], "metadata": {"orig_nbformat": 4}, "nbformat": 4, "nbformat_minor": 5}',
  readIds:
    '{\n "cells": [\n  {\n   "cell_type": "raw",\n   "id": "cid00001",\n   "metadata": {},\n   "source": "a\\nb"\n  },\n  {\n   "cell_type": "raw",\n   "id": "same",\n   "metadata": {},\n   "source": ""\n  },\n  {\n   "cell_type": "raw",\n   "id": "cid00002",\n   "metadata": {},\n   "source": ""\n  }\n ],\n "metadata": {},\n "nbformat": 4,\n "nbformat_minor": 5\n}',
  writeIds:
    '{\n "cells": [\n  {\n   "cell_type": "raw",\n   "id": "cid00001",\n   "metadata": {},\n   "source": [\n    "a\\n",\n    "b"\n   ]\n  },\n  {\n   "cell_type": "raw",\n   "id": "same",\n   "metadata": {},\n   "source": []\n  },\n  {\n   "cell_type": "raw",\n   "id": "cid00002",\n   "metadata": {},\n   "source": []\n  }\n ],\n "metadata": {},\n "nbformat": 4,\n "nbformat_minor": 5\n}\n',
  v42File:
    '{"cells": [{"cell_type": "raw", "metadata": {}, "source": "x"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 2}',
  readV42:
    '{\n "cells": [\n  {\n   "cell_type": "raw",\n   "metadata": {},\n   "source": "x"\n  }\n ],\n "metadata": {},\n "nbformat": 4,\n "nbformat_minor": 2\n}'
};

/** [model, file text] as nbformat writes notebooks of older major versions. */
const LEGACY_WRITES: Record<string, [string, string]> = {
  write_v3: [
    '{"metadata": {"name": "é"}, "nbformat": 3, "nbformat_minor": 0, "orig_nbformat": 2, "worksheets": [{"cells": [{"cell_type": "code", "input": "a\\nb", "metadata": {"trusted": true}, "trusted": true, "outputs": [{"output_type": "pyout", "text": "x\\ny", "png": "AA"}]}, {"cell_type": "markdown", "source": "m\\nn", "rendered": "r"}], "metadata": {}}]}',
    '{\n "metadata": {\n  "name": "\\u00e9"\n },\n "nbformat": 3,\n "nbformat_minor": 0,\n "worksheets": [\n  {\n   "cells": [\n    {\n     "cell_type": "code",\n     "input": [\n      "a\\n",\n      "b"\n     ],\n     "metadata": {},\n     "outputs": [\n      {\n       "output_type": "pyout",\n       "png": "AA",\n       "text": [\n        "x\\n",\n        "y"\n       ]\n      }\n     ]\n    },\n    {\n     "cell_type": "markdown",\n     "rendered": [\n      "r"\n     ],\n     "source": [\n      "m\\n",\n      "n"\n     ]\n    }\n   ],\n   "metadata": {}\n  }\n ]\n}\n'
  ],
  write_v2: [
    '{"metadata": {}, "nbformat": 2, "worksheets": [{"cells": [{"cell_type": "code", "input": "a\\nb\\n", "outputs": [{"text": "x\\ny"}]}]}]}',
    '{\n "metadata": {},\n "nbformat": 2,\n "worksheets": [\n  {\n   "cells": [\n    {\n     "cell_type": "code",\n     "input": [\n      "a",\n      "b"\n     ],\n     "outputs": [\n      {\n       "text": [\n        "x",\n        "y"\n       ]\n      }\n     ]\n    }\n   ]\n  }\n ]\n}\n'
  ],
  write_v1: [
    '{"nbformat": 1, "zeta": "é", "alpha": [1, {"b": 2}]}',
    '{\n    "nbformat": 1,\n    "zeta": "\\u00e9",\n    "alpha": [\n        1,\n        {\n            "b": 2\n        }\n    ]\n}\n'
  ]
};

/** [model, str(exception)] for saves Jupyter fails with a 500. */
const WRITE_ERRORS: Record<string, [string, string]> = {
  write_no_outputs: [
    '{"cells": [{"cell_type": "code", "id": "a", "metadata": {}, "source": ""}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
    'outputs'
  ],
  write_no_metadata: ['{"cells": [], "nbformat": 4, "nbformat_minor": 5}', 'metadata'],
  write_surrogate: [
    '{"cells": [{"cell_type": "raw", "id": "a", "metadata": {}, "source": "x\\ud800\\udc00\\udc00y"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
    "'utf-8' codec can't encode character '\\udc00' in position 96: surrogates not allowed"
  ]
};

/** [file, repr(exception)] for reads Jupyter fails with "Unreadable Notebook". */
const READ_ERRORS: Record<string, [string, string]> = {
  read_not_json: [
    "{'nbformat': 4}",
    "NotJSONError('Notebook does not appear to be JSON: \"{\\'nbformat\\': 4}\"')"
  ],
  read_list: ['[]', "AttributeError(\"'list' object has no attribute 'get'\")"],
  read_version: ['{"nbformat": 5}', "NBFormatError('Unsupported nbformat version 5')"],
  read_no_cells: [
    '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}}',
    "<ValidationError: 'The notebook is invalid and is missing an expected key: cells'>"
  ],
  read_minor_str: [
    '{"nbformat": 4, "nbformat_minor": "5", "metadata": {}, "cells": []}',
    'AssertionError()'
  ]
};

/** The ids nbformat would draw, replaced by a counter so that both sides agree. */
function counterIds(): () => string {
  let count = 0;
  return () => `cid${String(++count).padStart(5, '0')}`;
}

/** The content as `json.dumps(content, indent=1, sort_keys=True, ensure_ascii=False)`. */
function dumped(notebook: unknown): string {
  return dumpsPython(notebook, { indent: 1, sortKeys: true });
}

function read(text: string) {
  return readNotebook(Buffer.from(text, 'utf8'), { generateCellId: counterIds() });
}

describe('#writeNotebook()', () => {
  it('writes the bytes nbformat writes: split lines, sorted keys, indent 1, final newline', () => {
    const model = parsePythonJson(VECTORS.writeModel) as Record<string, unknown>;
    expect(writeNotebook(model).toString('utf8')).toBe(VECTORS.writeBytes);
  });

  it('drops transient values (signature, orig_nbformat, trusted) from the file', () => {
    const text = VECTORS.writeBytes;
    expect(text).not.toContain('"signature"');
    expect(text).not.toContain('"orig_nbformat"');
    expect(text).not.toContain('"trusted"');
  });

  it('does not modify the model', () => {
    const model = parsePythonJson(VECTORS.idsFile) as Record<string, unknown>;
    const before = dumped(model);
    writeNotebook(model, { generateCellId: counterIds() });
    expect(dumped(model)).toBe(before);
  });

  it('gives cells without an id, or with a repeated one, a new id', () => {
    const model = parsePythonJson(VECTORS.idsFile) as Record<string, unknown>;
    expect(writeNotebook(model, { generateCellId: counterIds() }).toString('utf8')).toBe(
      VECTORS.writeIds
    );
  });

  it('makes random 8-hex-digit ids by default', () => {
    const bytes = writeNotebook({
      cells: [{ cell_type: 'raw', metadata: {}, source: '' }],
      metadata: {},
      nbformat: 4,
      nbformat_minor: 5
    });
    expect(JSON.parse(bytes.toString('utf8')).cells[0].id).toMatch(/^[0-9a-f]{8}$/);
  });

  it.each(Object.entries(LEGACY_WRITES))(
    'writes %s notebooks as nbformat does',
    (_name, [model, text]) => {
      expect(
        writeNotebook(parsePythonJson(model) as Record<string, unknown>).toString('utf8')
      ).toBe(text);
    }
  );

  it.each(Object.entries(WRITE_ERRORS))(
    'fails where Jupyter fails: %s',
    (_name, [model, message]) => {
      const notebook = parsePythonJson(model) as Record<string, unknown>;
      expect(() => writeNotebook(notebook)).toThrow(NotebookWriteError);
      expect(() => writeNotebook(notebook)).toThrow(message);
    }
  );

  it('reports the validation message of the saved notebook', () => {
    const notebook = newNotebook();
    notebook.cells.push({ cell_type: 'markdown', metadata: {}, source: 1 });
    const { bytes, validationMessage } = serializeNotebook(notebook, {
      generateCellId: counterIds()
    });
    expect(bytes.toString('utf8')).toContain('"source": 1');
    expect(validationMessage).toMatch(
      /^Notebook validation failed: 1 is not valid under any of the given schemas\n\nFailed validating 'oneOf' in markdown_cell\['properties'\]\['source'\]:/
    );
  });
});

describe('#newNotebook()', () => {
  it('is what nbformat.v4.new_notebook() saves', () => {
    expect(writeNotebook(newNotebook()).toString('utf8')).toBe(VECTORS.newNotebook);
  });
});

describe('#readNotebook()', () => {
  it('joins multi-line strings and strips transient values, as nbformat.reads does', () => {
    const { notebook, validationMessage } = read(VECTORS.writeBytes);
    expect(dumped(notebook)).toBe(VECTORS.readV4);
    expect(validationMessage).toBeUndefined();
  });

  it('reads what it writes back to the same bytes', () => {
    const { notebook } = read(VECTORS.writeBytes);
    expect(writeNotebook(notebook).toString('utf8')).toBe(VECTORS.writeBytes);
  });

  it('converts a v3 notebook to v4 with new cell ids, keeping orig_nbformat', () => {
    const { notebook } = read(VECTORS.v3File);
    expect(dumped(notebook)).toBe(VECTORS.readV3);
    expect(Object.keys(notebook.cells[1])).toEqual([
      'cell_type',
      'metadata',
      'outputs',
      'id',
      'source',
      'execution_count'
    ]);
  });

  it('gives a v4.5 cell without an id, or with a repeated one, a new id', () => {
    expect(dumped(read(VECTORS.idsFile).notebook)).toBe(VECTORS.readIds);
  });

  it('keeps the minor version of an older v4 notebook, without adding ids', () => {
    expect(dumped(read(VECTORS.v42File).notebook)).toBe(VECTORS.readV42);
  });

  it('learns facts about bytes, and reads the same bytes with them exactly as without', () => {
    // Only the first holds numbers that need Python's typing (1.0 and a big integer).
    const texts = [VECTORS.writeBytes, VECTORS.idsFile, VECTORS.v3File, VECTORS.v42File];
    for (const [index, text] of texts.entries()) {
      const facts: INotebookFacts = {};
      const first = readNotebook(Buffer.from(text, 'utf8'), {
        generateCellId: counterIds(),
        facts
      });
      expect(facts).toEqual(index === 0 ? { valid: true } : { valid: true, plainJson: true });
      const again = readNotebook(Buffer.from(text, 'utf8'), {
        generateCellId: counterIds(),
        facts
      });
      expect(dumped(again.notebook)).toBe(dumped(first.notebook));
      expect(again.validationMessage).toBeUndefined();
    }
    const facts: INotebookFacts = {};
    const invalid =
      '{"cells": [{"cell_type": "code", "id": "a", "metadata": {}, "source": ""}], "metadata": {"a": 1.0}, "nbformat": 4, "nbformat_minor": 5}';
    expect(read(invalid).validationMessage).toBeDefined();
    readNotebook(Buffer.from(invalid, 'utf8'), { facts });
    expect(facts).toEqual({});
  });

  it('skips only the schema check for bytes the caller knows to be valid', () => {
    const known = (text: string) =>
      readNotebook(Buffer.from(text, 'utf8'), {
        generateCellId: counterIds(),
        facts: { valid: true }
      });
    // The same notebook, ids repaired, versions upgraded.
    expect(dumped(known(VECTORS.writeBytes).notebook)).toBe(VECTORS.readV4);
    expect(dumped(known(VECTORS.idsFile).notebook)).toBe(VECTORS.readIds);
    expect(dumped(known(VECTORS.v3File).notebook)).toBe(VECTORS.readV3);
    // The caller vouches for the verdict: a notebook that is not valid gets no message.
    const invalid =
      '{"cells": [{"cell_type": "code", "id": "a", "metadata": {}, "source": ""}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}';
    expect(read(invalid).validationMessage).toBeDefined();
    expect(known(invalid).validationMessage).toBeUndefined();
    // What nbformat fails on still fails.
    expect(() => known('{"cells": [], "nbformat": 4, "nbformat_minor": 1.5}')).toThrow(
      NotebookParseError
    );
  });

  it('refuses bytes that are not UTF-8, as a bad format', () => {
    const error = catchError(() => readNotebook(Buffer.from([0x7b, 0xff, 0x7d])));
    expect(error).toBeInstanceOf(NotebookParseError);
    expect((error as NotebookParseError).reason).toBe('bad format');
  });

  it.each(Object.entries(READ_ERRORS))('fails where Jupyter fails: %s', (_name, [text, repr]) => {
    const error = catchError(() => read(text));
    expect(error).toBeInstanceOf(NotebookParseError);
    expect((error as NotebookParseError).reason).toBe('unreadable');
    expect((error as NotebookParseError).pythonRepr).toBe(repr);
  });
});

function catchError(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}
