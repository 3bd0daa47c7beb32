/**
 * The native-`JSON.stringify` writer of notebook files, against the exact serialiser.
 */
import {
  NotebookWriteError,
  PyNumber,
  dumpsPython,
  parsePythonJson,
  serializeNotebook,
  writeNotebook
} from '../src';
import {
  dumpsNotebookJson,
  markerNonce,
  stringifyPythonNumbers,
  stringifyWithReplacer
} from '../src/stringify';

/** `json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False)` and a final newline. */
function exact(value: unknown): string {
  return dumpsPython(value, { indent: 1, sortKeys: true, rawLoneSurrogates: true }) + '\n';
}

function fast(value: unknown, nonce?: string): string | undefined {
  return dumpsNotebookJson(value, '\n', nonce)?.toString('utf8');
}

function notebookWith(metadata: Record<string, unknown>, cells: unknown[] = []) {
  return { cells, metadata, nbformat: 4, nbformat_minor: 5 };
}

const LONG = 'iVBORw0KGgo'.repeat(200);

describe('#dumpsNotebookJson()', () => {
  it.each([
    ['integer-like keys', { '10': 1, '9': 2, a: { '2': [], '10': {}, b: 3 }, '-1': 0, '01': 1 }],
    ['keys around 2^32', { '4294967295': 1, '4294967294': 2, '42949672950': 3, x: [] }],
    ['integer-like keys already in order', { '0': 1, '1': 2, '5': 3, a: 4 }],
    ['integer-like keys at the top of a cell list', { cells: [{ '10': 1.5, '9': [1e-7] }] }],
    [
      'numbers that JavaScript spells differently',
      {
        a: [1e-7, -1.5e-5, 5e-324, 1e-4, 0.1, 2 ** 53, 2 ** 53 + 2, 1e16, 1e21, -0, 123.456],
        b: [NaN, Infinity, -Infinity, BigInt('123456789012345678901234567890')],
        c: [new PyNumber('float', '1.0'), new PyNumber('int', '18446744073709551616')],
        d: { z: new PyNumber('float', '-0.0'), y: 1e-300 }
      }
    ],
    [
      'strings escaped as Python escapes them',
      { s: 'é😀\u2028\x00\x1f\x7f\b\f\n\r\t"\\/', '\uffff': 'x', '😀': 'y', '': '' }
    ],
    [
      'long strings, with and without escapes',
      {
        png: LONG,
        html: '<td class="x">\n'.repeat(200),
        latin: 'résumé '.repeat(300),
        astral: '😀 '.repeat(600),
        control: 'a'.repeat(2000) + '\x01',
        backslash: '\\'.repeat(1500),
        list: [LONG, LONG + '"', 1e-7, LONG]
      }
    ],
    ['__proto__ keys', JSON.parse('{"__proto__": {"x": 1e-7}, "a": {"__proto__": [1]}}')],
    ['undefined values', { a: undefined, b: [undefined, 1], c: { d: undefined } }],
    ['empty containers', { a: [], b: {}, c: [[], {}], d: { '1': {}, '0': [] } }],
    ['a top-level list', [1, { b: 1e-9, a: LONG }, 'x']],
    ['text that looks like an escaped lone surrogate', { a: '\\ud800', b: '\\\\ud800' }]
  ])('writes %s exactly as json.dumps', (_name, value) => {
    expect(fast(value)).toBe(exact(value));
  });

  it('writes the nonce inside strings as text', () => {
    const nonce = markerNonce();
    const value = {
      a: `x"${nonce}0"`,
      b: [`"${nonce}1"`, `\\"${nonce}0`, `x${nonce}2`],
      c: 1e-7
    };
    expect(fast(value)).toBe(exact(value));
  });

  it('gives up, rather than writing wrong bytes, when the notebook holds the nonce', () => {
    const nonce = 'clash-';
    for (const value of [
      { a: 'clash-0', b: 1e-7 },
      { a: 1e-7, b: 'clash-1' },
      { a: 1e-7, b: 'clash-0' },
      { a: 'clash-00', b: 1e-7 },
      { a: 'clash-0x', b: 1e-7 },
      { a: 'clash-', b: 1e-7 },
      { 'clash-0': 1, b: 1e-7 },
      { a: [1e-7, 1e-8], b: 'clash-1' },
      { '10': 1, '9': 'clash-1' }
    ]) {
      expect(fast(value, nonce)).toBeUndefined();
    }
    // Without any marker, the nonce is plain text.
    expect(fast({ a: 'clash-0' }, nonce)).toBe(exact({ a: 'clash-0' }));
  });

  it('gives up on lone surrogates, which Python cannot encode', () => {
    for (const value of [
      { a: 'x\ud800' },
      { a: 'x\udc00'.repeat(600) },
      { '\udfff': 1 },
      { '10': 1, '\ud800': 2 },
      { '10': '\ud800', '9': 1 },
      ['a\ud800\\\ud800']
    ]) {
      expect(fast(value)).toBeUndefined();
    }
    expect(fast({ a: '\ud83d\ude00'.repeat(600) })).toBe(exact({ a: '\ud83d\ude00'.repeat(600) }));
  });

  it('gives up on values that are not JSON', () => {
    expect(fast({ when: new Date(0) })).toBeUndefined();
    expect(fast({ f: () => 1 })).toBeUndefined();
  });
});

describe('#stringifyPythonNumbers()', () => {
  const text = (value: unknown, nonce?: string): string =>
    stringifyPythonNumbers(value, nonce).toString('utf8');

  it('writes JSON.stringify output with the numbers spelled as json.dumps spells them', () => {
    const value = parsePythonJson('{"a": [1.0, 2, 1e-07, 1e16, 0.5, 12345678901234567890]}');
    // CPython 3.11: json.dumps(value, separators=(',', ':'))
    expect(text({ ...(value as object), b: 'x' })).toBe(
      '{"a":[1.0,2,1e-07,1e+16,0.5,12345678901234567890],"b":"x"}'
    );
  });

  it('keeps what only JSON.stringify takes: toJSON, null for NaN, escaped lone surrogates', () => {
    const value = { when: new Date(0), nan: NaN, lone: '\ud800', small: 1e-5 };
    expect(text(value)).toBe(JSON.stringify(value).replace('0.00001', '1e-05'));
  });

  it('writes the nonce inside strings as text, and resolves a clash with a new one', () => {
    const value = { a: '"clash-0"', b: 'clash-0', c: new PyNumber('float', '1.0') };
    expect(text(value, 'clash-')).toBe('{"a":"\\"clash-0\\"","b":"clash-0","c":1.0}');
    expect(text(['clash-0', new PyNumber('float', '1.0')], 'clash-')).toBe('["clash-0",1.0]');
  });

  it('writes long strings, and the nonce in them, as JSON.stringify does', () => {
    const value = {
      png: LONG,
      quoted: LONG + '"\\\n\u0001',
      unicode: 'é€😀'.repeat(400),
      lone: LONG + '\ud800',
      clash: `clash-0${LONG}`,
      list: [LONG, 'clash-1', new PyNumber('float', '2.0'), LONG]
    };
    const expected = JSON.stringify(value).replace('"clash-1",2,', '"clash-1",2.0,');
    expect(text(value)).toBe(expected);
    expect(text(value, 'clash-')).toBe(expected);
  });

  it('writes exactly what the replacer writes, for models and for anything else', () => {
    const notebook = parsePythonJson(
      '{"cells": [{"cell_type": "code", "execution_count": 1, "id": "a", "metadata": {"10": 1.0, "9": 1e-07, "trusted": false, "__proto__": {"x": 1e16}}, "outputs": [{"output_type": "execute_result", "execution_count": 1, "metadata": {}, "data": {"application/json": {"2": 18446744073709551616, "10": [NaN, -Infinity, 0.5, -0.0]}, "text/plain": "x\\ny"}}], "source": "a\\nb"}], "metadata": {"1": {}, "a": 0.5, "b": 12345678901234567.5}, "nbformat": 4, "nbformat_minor": 5}'
    );
    const model = {
      name: 'n.ipynb',
      path: 'd/n.ipynb',
      last_modified: '2026-11-24T10:40:13.123456Z',
      content: notebook,
      format: 'json',
      mimetype: null,
      size: 1234,
      writable: true,
      hash: undefined,
      message: 'Notebook validation failed: \u0000',
      type: 'notebook'
    };
    const sparse: unknown[] = [1e-5];
    sparse[3] = LONG;
    const values: unknown[] = [
      model,
      [model, model],
      { when: new Date(0), inner: { small: 1e-9 } },
      { toJSON: () => ({ small: 1e-9 }) },
      [() => 1, Symbol('s'), undefined, 1e21, 2 ** 53 + 2],
      { f: () => 1, u: undefined, n: null, big: new PyNumber('int', '123456789012345678901') },
      sparse,
      'clash-0',
      1e-7,
      null,
      Object.assign(Object.create(null), { a: 1e-7 })
    ];
    for (const value of values) {
      expect(text(value)).toBe(stringifyWithReplacer(value).toString('utf8'));
      expect(text(value, 'clash-')).toBe(stringifyWithReplacer(value, 'clash-').toString('utf8'));
    }
  });

  it('fails on what JSON.stringify fails on', () => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = cycle;
    expect(() => stringifyPythonNumbers(cycle)).toThrow(TypeError);
    expect(() => stringifyPythonNumbers({ a: 1n })).toThrow(TypeError);
  });
});

describe('#serializeNotebook() through the native writer', () => {
  it('writes integer-like metadata keys, small floats and big integers as nbformat does', () => {
    const model = parsePythonJson(
      '{"cells": [{"cell_type": "code", "execution_count": 1, "id": "a", "metadata": {"10": 1.0, "9": 1e-07, "trusted": true}, "outputs": [{"output_type": "execute_result", "execution_count": 1, "metadata": {}, "data": {"application/json": {"2": 18446744073709551616, "10": [NaN, -Infinity]}, "text/plain": "x\\ny"}}], "source": "a\\nb"}], "metadata": {"1": {}, "a": 0.5}, "nbformat": 4, "nbformat_minor": 5}'
    ) as Record<string, unknown>;
    expect(writeNotebook(model).toString('utf8')).toBe(
      '{\n "cells": [\n  {\n   "cell_type": "code",\n   "execution_count": 1,\n   "id": "a",\n   "metadata": {\n    "10": 1.0,\n    "9": 1e-07\n   },\n   "outputs": [\n    {\n     "data": {\n      "application/json": {\n       "10": [\n        NaN,\n        -Infinity\n       ],\n       "2": 18446744073709551616\n      },\n      "text/plain": [\n       "x\\n",\n       "y"\n      ]\n     },\n     "execution_count": 1,\n     "metadata": {},\n     "output_type": "execute_result"\n    }\n   ],\n   "source": [\n    "a\\n",\n    "b"\n   ]\n  }\n ],\n "metadata": {\n  "1": {},\n  "a": 0.5\n },\n "nbformat": 4,\n "nbformat_minor": 5\n}\n'
    );
  });

  it('writes a notebook holding the marker nonce exactly', () => {
    const nonce = markerNonce();
    const model = notebookWith({ a: `${nonce}0`, b: 1e-7, [`${nonce}1`]: [`${nonce}2`] });
    expect(writeNotebook(model).toString('utf8')).toBe(exact(model));
  });

  it('fails on a lone surrogate in a long output as Jupyter fails', () => {
    const text = 'x'.repeat(2000) + '\udc00';
    const model = notebookWith({}, [
      {
        cell_type: 'code',
        execution_count: null,
        id: 'a',
        metadata: {},
        outputs: [{ output_type: 'display_data', metadata: {}, data: { 'image/png': text } }],
        source: ''
      }
    ]);
    expect(() => serializeNotebook(model)).toThrow(NotebookWriteError);
    expect(() => serializeNotebook(model)).toThrow(
      "'utf-8' codec can't encode character '\\udc00' in position 2160: surrogates not allowed"
    );
  });

  it('does not modify the model, nor share the copies it changes', () => {
    const output = {
      output_type: 'stream',
      name: 'stdout',
      text: 'a\nb'
    };
    const data = { 'text/plain': 'x\ny', 'image/png': LONG };
    const model = notebookWith({ signature: 'sha256:1', orig_nbformat: 3 }, [
      {
        cell_type: 'code',
        execution_count: 1,
        metadata: { trusted: true },
        outputs: [output, { output_type: 'display_data', metadata: {}, data }],
        source: 'a\nb'
      },
      { cell_type: 'markdown', metadata: {}, source: 'm', attachments: { 'a.png': data } }
    ]);
    const before = JSON.stringify(model);
    const bytes = writeNotebook(model, { generateCellId: () => 'cid' });
    expect(JSON.stringify(model)).toBe(before);
    expect(bytes.toString('utf8')).not.toContain('trusted');
    expect(bytes.toString('utf8')).toContain('"x\\n",\n');
  });
});
