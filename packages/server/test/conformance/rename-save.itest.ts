/**
 * Differential conformance: PATCH rename (upstream test_api.py's rename tests) and PUT save,
 * including byte-exact notebook writing (nbformat's indent, key order, line splitting, number
 * formatting) and JupyterLab's save flow.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  conformanceSuite,
  contentsPath,
  expectedLocation,
  get,
  patch,
  put,
  type Req
} from '../support/compare';

const env = conformanceSuite();

const rename = (from: string, to: string): Req => patch(from, { path: to });

type Model = Record<string, unknown>;
type Notebook = { cells: Array<Record<string, unknown>>; [key: string]: unknown };

/**
 * A notebook model as raw JSON text, so that the request carries number spellings JSON.stringify
 * cannot produce (1.0, 1E+21, -0.0, big integers) and strings with every line separator that
 * Python's splitlines() knows.
 */
const RICH_NOTEBOOK_BODY = String.raw`{"type": "notebook", "format": "json", "content": {
 "nbformat": 4, "nbformat_minor": 5,
 "metadata": {
  "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
  "language_info": {"name": "python", "version": "3.11.4", "codemirror_mode": {"name": "ipython", "version": 3}},
  "floats": [1.0, 0.5, 1e-7, 1E+21, 1e21, 0.30000000000000004, -0.0, 1.5e300, 2.5e-320, 123456789.123456789,
             100.0, 1e16, 1e15, 12345678901234567890, -7, 0, 3.0e2, 0.000001, 0.0000001],
  "strings": "é😀\u2028\u0000\u001f\u007f\t/\\\"<>&'",
  "keys": {"b": 1, "a": 2, "\uff01": 3, "😀": 4, "A": 5, "_": 6, "é": 7, "": 8, "aa": 9, "a b": 10},
  "nested": {"z": [true, false, null, {"y": "x", "x": []}], "m": {}}
 },
 "cells": [
  {"cell_type": "markdown", "id": "md-1", "metadata": {"tags": ["b", "a"]},
   "source": "# Title\nline 2\r\nline 3\rline 4\u2028line 5\u000bline6\u000cline7\u001cline8\u0085line9\u2029end\n",
   "attachments": {"img.png": {"image/png": "iVBORw0KGgo="}}},
  {"cell_type": "code", "id": "code-1", "execution_count": 3, "metadata": {"collapsed": false, "scrolled": true},
   "source": "print('hi')\nx = 1\n\n", "outputs": [
    {"output_type": "stream", "name": "stdout", "text": "hi\nthere\n"},
    {"output_type": "stream", "name": "stderr", "text": ["already\n", "a list"]},
    {"output_type": "execute_result", "execution_count": 3, "metadata": {},
     "data": {"text/plain": "1\n2", "text/html": "<b>x</b>\n<i>y</i>", "image/png": "iVBORw0KGgo=\n",
              "application/json": {"b": [1, 2.0], "a": "x\ny"}, "image/svg+xml": "<svg>\n</svg>",
              "application/javascript": "alert(1);\nalert(2);", "text/latex": "$x$\n$y$",
              "application/vnd.custom+json": {"k": "v\nw"}, "text/markdown": "*a*\n*b*"}},
    {"output_type": "display_data", "metadata": {"image/png": {"width": 10}}, "data": {"text/plain": ["already\n", "split"]}},
    {"output_type": "error", "ename": "ValueError", "evalue": "bad\nvalue", "traceback": ["line1\n", "line2"]}
   ]},
  {"cell_type": "raw", "id": "raw-1", "metadata": {"format": "text/plain"}, "source": ""},
  {"cell_type": "code", "id": "code-2", "execution_count": null, "metadata": {}, "source": "", "outputs": []}
 ]
}}`;

/**
 * nbformat.v4.new_markdown_cell(source) with a fixed id (nbformat gives a cell without one a
 * random id, which two servers cannot agree on).
 */
const markdownCell = (source: string, id: string): Record<string, unknown> => ({
  cell_type: 'markdown',
  id,
  metadata: {},
  source
});

describe('rename and save (test_api.py)', () => {
  test('test_rename', async () => {
    const r = await env.both(rename('foo/a.ipynb', 'foo/z.ipynb'));
    expect(r.jupyter.status).toBe(200);
    expect(r.jupyter.headers.location).toBe(expectedLocation(env.jupyter.baseUrl, 'foo/z.ipynb'));
    expect(r.jupyter.json).toMatchObject({ name: 'z.ipynb', path: 'foo/z.ipynb' });
    const listing = await env.both(get('foo'));
    const names = ((listing.jupyter.json as Model).content as Model[]).map(m => m.name);
    expect(names).toContain('z.ipynb');
    expect(names).not.toContain('a.ipynb');
  });

  test('test_rename_400_hidden', async () => {
    expect((await env.both(rename('.hidden/old.txt', 'new.txt'))).jupyter.status).toBe(400);
    expect((await env.both(rename('old.txt', '.hidden/new.txt'))).jupyter.status).toBe(400);
    expect((await env.both(rename('.hidden.txt', 'new.txt'))).jupyter.status).toBe(400);
    expect((await env.both(rename('old.txt', '.hidden.txt'))).jupyter.status).toBe(400);
  });

  test('test_rename_existing', async () => {
    expect((await env.both(rename('foo/a.ipynb', 'foo/b.ipynb'))).jupyter.status).toBe(409);
  });

  test('test_save', async () => {
    const first = await env.both(get('foo/a.ipynb'));
    const nb = (first.jupyter.json as Model).content as Notebook;
    nb.cells.push(markdownCell('Created by test ³', 'created-by-test'));
    expect(
      (await env.both(put('foo/a.ipynb', { content: nb, type: 'notebook' }))).jupyter.status
    ).toBe(200);
    const again = await env.both(get('foo/a.ipynb'));
    expect(((again.jupyter.json as Model).content as Notebook).cells[0].source).toBe(
      'Created by test ³'
    );
  });
});

describe('rename', () => {
  test('missing source, missing body, empty body, same name', async () => {
    expect((await env.both(rename('foo/nope.txt', 'foo/other.txt'))).jupyter.status).toBe(404);
    expect((await env.both(patch('foo/a.txt'))).jupyter.status).toBe(400);
    expect((await env.both(patch('foo/a.txt', {}))).jupyter.status).toBe(200);
    await env.both(rename('foo/a.txt', 'foo/a.txt'));
    await env.both(rename('foo/a.txt', '/foo/a2.txt'));
  });

  test('directories, other directories, missing parents, existing targets', async () => {
    expect((await env.both(rename('foo/bar', 'foo/bar2'))).jupyter.status).toBe(200);
    expect((await env.both(get('foo/bar2'))).jupyter.status).toBe(200);
    expect((await env.both(rename('foo/b.txt', 'ordering/moved.txt'))).jupyter.status).toBe(200);
    await env.both(rename('foo/b.blob', 'nope/moved.blob'));
    expect((await env.both(rename('foo/b.ipynb', 'ordering'))).jupyter.status).toBe(409);
    expect((await env.both(rename('ordering', 'foo'))).jupyter.status).toBe(409);
    expect((await env.both(rename('foo/a.txt', 'foo/A.txt'))).jupyter.status).toBe(200);
    await env.both(get('foo'));
  });

  test('unicode and special names, exact Location', async () => {
    for (const [from, to] of [
      ['unicodé/innonascii.txt', 'unicodé/ñew nåme 😀.txt'],
      ["special ünï cødé/quote !'()*.txt", "special ünï cødé/quote !'()* 2.txt"],
      ['special ünï cødé/cafe\u0301 nfd.txt', 'special ünï cødé/café nfc.txt'],
      ['å b', 'å b ç']
    ]) {
      const r = await env.both(rename(from, to));
      expect(r.jupyter.status).toBe(200);
      expect(r.jupyter.headers.location).toBe(expectedLocation(env.jupyter.baseUrl, to));
    }
  });

  test('checkpoints follow a renamed notebook and file', async () => {
    for (const p of ['foo/a.ipynb', 'foo/a.txt']) {
      expect(
        (await env.both({ method: 'POST', path: contentsPath(p, 'checkpoints') })).jupyter.status
      ).toBe(201);
    }
    expect((await env.both(rename('foo/a.ipynb', 'foo/renamed.ipynb'))).jupyter.status).toBe(200);
    expect((await env.both(rename('foo/a.txt', 'ordering/renamed.txt'))).jupyter.status).toBe(200);
    await env.compareDisk('after renames');
    await env.both({ method: 'GET', path: contentsPath('foo/renamed.ipynb', 'checkpoints') });
    await env.both({ method: 'GET', path: contentsPath('ordering/renamed.txt', 'checkpoints') });
  });
});

describe('save', () => {
  test('a rich notebook is written byte for byte as nbformat writes it', async () => {
    const r = await env.both({
      method: 'PUT',
      path: contentsPath('rich.ipynb'),
      body: RICH_NOTEBOOK_BODY,
      headers: { 'Content-Type': 'application/json' }
    });
    expect(r.jupyter.status).toBe(201);
    await env.compareDisk('after the first save');
    // Saving what we read back gives the same bytes again.
    const read = await env.both(get('rich.ipynb'));
    const model = read.jupyter.json as Model;
    await env.both(put('rich.ipynb', { type: 'notebook', format: 'json', content: model.content }));
    await env.both(get('rich.ipynb', 'content=0&hash=1'));
  });

  test('older minor versions, notebooks without ids, unsorted keys', async () => {
    const nb44 = {
      nbformat_minor: 4,
      nbformat: 4,
      metadata: { z: 1, a: { d: 1, c: 2 } },
      cells: [{ source: ['a\n', 'b'], metadata: {}, cell_type: 'markdown' }]
    };
    expect(
      (await env.both(put('old.ipynb', { type: 'notebook', content: nb44 }))).jupyter.status
    ).toBe(201);
    await env.both(get('old.ipynb'));
  });

  test('an invalid notebook is saved with a validation message', async () => {
    const invalid = {
      nbformat: 4,
      nbformat_minor: 5,
      metadata: {},
      cells: [{ cell_type: 'wrong', id: 'bad-1', metadata: {} }]
    };
    const r = await env.both(put('invalid.ipynb', { type: 'notebook', content: invalid }));
    expect(r.jupyter.status).toBe(201);
    await env.both(get('invalid.ipynb'));
  });

  test('text and base64 saves keep bytes; line endings untouched', async () => {
    for (const content of [
      'a\r\nb\rc\n',
      '',
      'ünïcødé ✓\n',
      '\u0000\u0001 control',
      'x'.repeat(100_000)
    ]) {
      expect(
        (await env.both(put('foo/a.txt', { type: 'file', format: 'text', content }))).jupyter.status
      ).toBe(200);
      await env.both(get('foo/a.txt', 'hash=1'));
    }
    const bytes = Buffer.from([0, 1, 2, 0xfe, 0xff, 0x0a, 0x0d]);
    await env.both(
      put('foo/a.blob', { type: 'file', format: 'base64', content: bytes.toString('base64') })
    );
    await env.both(get('foo/a.blob', 'hash=1'));
    // A text file saved as base64 and read back as text.
    await env.both(
      put('foo/b.txt', {
        type: 'file',
        format: 'base64',
        content: Buffer.from('via b64').toString('base64')
      })
    );
    await env.both(get('foo/b.txt'));
  });

  test("JupyterLab's save flow: GET content=0&hash=1, PUT, GET content=0&hash=1, POST checkpoint", async () => {
    const before = await env.both(get('foo/a.ipynb', 'content=0&hash=1&1700000000000'));
    expect((before.jupyter.json as Model).hash).toBe(
      createHash('sha256')
        .update(await readFile(join(env.root('jupyter'), 'foo/a.ipynb')))
        .digest('hex')
    );
    const full = await env.both(get('foo/a.ipynb', 'type=notebook&content=1&hash=0&1700000000001'));
    const nb = (full.jupyter.json as Model).content as Notebook;
    nb.cells.push({
      cell_type: 'code',
      id: 'lab-cell',
      execution_count: 1,
      metadata: { trusted: true },
      source: 'print("from lab")',
      outputs: [{ output_type: 'stream', name: 'stdout', text: 'from lab\n' }]
    });
    const saved = await env.both(
      put('foo/a.ipynb', { type: 'notebook', format: 'json', content: nb })
    );
    expect(saved.jupyter.status).toBe(200);
    const after = await env.both(get('foo/a.ipynb', 'content=0&hash=1&1700000000002'));
    expect((after.jupyter.json as Model).hash).toBe(
      createHash('sha256')
        .update(await readFile(join(env.root('jupyter'), 'foo/a.ipynb')))
        .digest('hex')
    );
    expect((after.jupyter.json as Model).hash).not.toBe((before.jupyter.json as Model).hash);
    expect(
      (await env.both({ method: 'POST', path: contentsPath('foo/a.ipynb', 'checkpoints') })).jupyter
        .status
    ).toBe(201);
    await env.both({ method: 'GET', path: contentsPath('foo/a.ipynb', 'checkpoints') });
  });
});
