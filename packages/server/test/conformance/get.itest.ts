/**
 * Differential conformance: GET of directories, notebooks and files (upstream test_api.py's GET
 * tests), query parameters, hide_globs, symlinks inside the root, unicode and URL-special names,
 * binary and large files. Base URL `/` here (the other specs use a deeper one).
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { conformanceSuite, contentsPath, get, join2 } from '../support/compare';
import {
  SPECIAL_NAMES,
  TEST_API_DIRS,
  TEST_API_FOLDERS,
  TEMPLATE_LARGE_FILE_SIZE
} from '../support/tree';

const env = conformanceSuite({ baseUrl: '/' });

type Model = Record<string, unknown> & { content: unknown };
const models = (content: unknown): Model[] => content as Model[];

describe('GET (test_api.py)', () => {
  test('test_list_notebooks', async () => {
    for (const [dir, name] of TEST_API_DIRS) {
      const { jupyter } = await env.both(get(dir));
      expect(jupyter.status).toBe(200);
      const nbs = models((jupyter.json as Model).content).filter(m => m.type === 'notebook');
      expect(nbs.map(m => String(m.name).normalize('NFC'))).toContain(`${name}.ipynb`);
      expect(nbs.map(m => String(m.path).normalize('NFC'))).toContain(join2(dir, `${name}.ipynb`));
    }
  });

  test('test_get_dir_no_contents', async () => {
    for (const dir of TEST_API_FOLDERS) {
      const { jupyter } = await env.both(get(dir, 'content=0'));
      expect(jupyter.json).toMatchObject({
        path: dir,
        type: 'directory',
        content: null,
        format: null,
        size: null
      });
    }
  });

  test('test_list_nonexistant_dir', async () => {
    const { jupyter } = await env.both(get('nonexistent'));
    expect(jupyter.status).toBe(404);
  });

  test('test_get_nb_contents', async () => {
    for (const [dir, name] of TEST_API_DIRS) {
      const { jupyter } = await env.both(get(join2(dir, `${name}.ipynb`), 'content=1'));
      const model = jupyter.json as Model;
      expect(model).toMatchObject({
        name: `${name}.ipynb`,
        path: join2(dir, `${name}.ipynb`),
        type: 'notebook'
      });
      expect(model.format).toBe('json');
      expect(typeof (model.content as Model).metadata).toBe('object');
    }
  });

  test('test_get_nb_hash', async () => {
    for (const [dir, name] of TEST_API_DIRS) {
      const apiPath = join2(dir, `${name}.ipynb`);
      const { jupyter } = await env.both(get(apiPath, 'hash=1'));
      const model = jupyter.json as Model;
      const bytes = await readFile(join(env.root('jupyter'), apiPath));
      expect(model.hash).toBe(createHash('sha256').update(bytes).digest('hex'));
      expect(model.hash_algorithm).toBe('sha256');
    }
  });

  test('test_get_nb_no_contents', async () => {
    for (const [dir, name] of TEST_API_DIRS) {
      const { jupyter } = await env.both(get(join2(dir, `${name}.ipynb`), 'content=0'));
      expect(jupyter.json).toMatchObject({
        type: 'notebook',
        content: null,
        format: null,
        mimetype: null
      });
    }
  });

  test('test_get_nb_invalid', async () => {
    // json.dumps() of upstream's invalid notebook, byte for byte.
    const invalid =
      '{"nbformat": 4, "metadata": {}, "cells": [{"cell_type": "wrong", "metadata": {}}]}';
    await env.writeBoth('å b/Validate tést.ipynb', invalid);
    const { jupyter } = await env.both(get('å b/Validate tést.ipynb'));
    const model = jupyter.json as Model;
    expect(model.path).toBe('å b/Validate tést.ipynb');
    expect(model.type).toBe('notebook');
    expect(String(model.message).toLowerCase()).toContain('validation failed');
  });

  test('test_get_contents_no_such_file', async () => {
    const { jupyter } = await env.both(get('foo/q.ipynb'));
    expect(jupyter.status).toBe(404);
  });

  test('test_get_text_file_contents', async () => {
    for (const [dir, name] of TEST_API_DIRS) {
      const { jupyter } = await env.both(get(join2(dir, `${name}.txt`), 'content=1'));
      expect(jupyter.json).toMatchObject({
        format: 'text',
        type: 'file',
        content: `${name} text file`
      });
    }
    expect((await env.both(get('foo/q.txt'))).jupyter.status).toBe(404);
    expect((await env.both(get('foo/bar/baz.blob', 'type=file&format=text'))).jupyter.status).toBe(
      400
    );
  });

  test('test_get_text_file_hash', async () => {
    for (const [dir, name] of TEST_API_DIRS) {
      const { jupyter } = await env.both(get(join2(dir, `${name}.txt`), 'hash=1'));
      expect(jupyter.json).toMatchObject({
        format: 'text',
        type: 'file',
        hash_algorithm: 'sha256'
      });
    }
  });

  test('test_get_404_hidden', async () => {
    expect((await env.both(get('.hidden/visible.txt'))).jupyter.status).toBe(404);
    expect((await env.both(get('.hidden.txt'))).jupyter.status).toBe(404);
    expect((await env.both(get('.hidden'))).jupyter.status).toBe(404);
  });

  test('test_get_binary_file_contents', async () => {
    for (const [dir, name] of TEST_API_DIRS) {
      const { jupyter } = await env.both(get(join2(dir, `${name}.blob`), 'content=1'));
      const model = jupyter.json as Model;
      expect(model.format).toBe('base64');
      expect(Buffer.from(String(model.content), 'base64')).toEqual(
        Buffer.concat([Buffer.from(name, 'utf8'), Buffer.from([0xff])])
      );
    }
    expect((await env.both(get('foo/q.txt'))).jupyter.status).toBe(404);
  });

  test('test_get_bad_type', async () => {
    const a = await env.both(get('unicodé', 'type=file'), { compareMessage: true });
    expect(a.jupyter.status).toBe(400);
    expect(a.jupyter.json).toMatchObject({ message: 'unicodé is a directory, not a file' });
    const b = await env.both(get('unicodé/innonascii.ipynb', 'type=directory'), {
      compareMessage: true
    });
    expect(b.jupyter.status).toBe(400);
    expect(b.jupyter.json).toMatchObject({
      message: 'unicodé/innonascii.ipynb is not a directory'
    });
  });
});

describe('GET query parameters', () => {
  test('type, format, content and hash, valid and invalid', async () => {
    const cases: Array<[string, string, number]> = [
      ['foo/a.ipynb', 'type=notebook', 200],
      ['foo/a.ipynb', 'type=file', 200],
      ['foo/a.ipynb', 'type=file&format=text', 200],
      ['foo/a.ipynb', 'type=file&format=base64', 200],
      ['foo/a.ipynb', 'type=directory', 400],
      ['foo/a.txt', 'type=notebook', 400],
      ['foo/a.txt', 'type=file&format=base64', 200],
      ['foo/a.txt', 'type=bogus', 200],
      ['foo', 'type=bogus', 400],
      ['foo', 'type=directory&content=0', 200],
      ['foo', 'format=base64', 200],
      ['foo/a.txt', 'format=bogus', 400],
      ['foo/a.txt', 'content=2', 400],
      ['foo/a.txt', 'content=', 400],
      ['foo/a.txt', 'hash=yes', 400],
      ['foo/a.txt', 'hash=0&content=0', 200],
      ['foo/a.txt', 'hash=1&content=0', 200],
      // Jupyter fails its own model validation here ("Keys unexpectedly None"): we answer a 4xx.
      ['foo', 'hash=1', 500],
      ['foo', 'hash=1&content=0', 500],
      ['latin1.txt', '', 200],
      ['latin1.txt', 'format=text', 400],
      ['latin1.txt', 'type=file&format=text', 400],
      ['allbytes.bin', 'hash=1', 200],
      ['empty.txt', 'hash=1', 200],
      ['globs/kept.py', '', 200],
      // Lab's request: content, hash, then a bare cache-buster.
      ['foo/a.ipynb', 'content=0&hash=1&1700000000000', 200],
      ['foo/a.txt', 'type=file&format=text&content=1&hash=0&1700000000000', 200]
    ];
    const seen: Array<[string, string, number]> = [];
    for (const [apiPath, query] of cases) {
      const { jupyter } = await env.both(get(apiPath, query === '' ? undefined : query));
      seen.push([apiPath, query, jupyter.status]);
    }
    expect(seen).toEqual(cases);
  });

  test('root listing, with and without the trailing slash', async () => {
    const a = await env.both({ method: 'GET', path: 'api/contents' });
    expect(a.jupyter.status).toBe(200);
    const names = models((a.jupyter.json as Model).content).map(m => m.name);
    expect(names).not.toContain('.hidden');
    expect(names).not.toContain('.hidden.txt');
    expect((await env.both({ method: 'GET', path: 'api/contents/' })).jupyter.status).toBe(200);
    expect(
      (await env.both({ method: 'GET', path: 'api/contents', query: 'content=0' })).jupyter.status
    ).toBe(200);
  });

  test('a trailing slash on a directory path redirects', async () => {
    const { jupyter } = await env.both({ method: 'GET', path: `${contentsPath('foo')}/` });
    expect(jupyter.status).toBe(302);
    expect(jupyter.headers.location).toBe('/api/contents/foo');
  });
});

describe('GET of special entries', () => {
  test('hide_globs are not listed', async () => {
    const { jupyter } = await env.both(get('globs'));
    const names = models((jupyter.json as Model).content).map(m => m.name);
    expect(names).toEqual(['kept.py']);
  });

  test('symlinks inside the root: listing, a good link, a broken link', async () => {
    await env.both(get('links'));
    const inside = await env.both(get('links/inside.txt'));
    expect(inside.jupyter.json).toMatchObject({ content: 'a text file', type: 'file' });
    await env.both(get('links/inside.txt', 'content=0&hash=1'));
    const broken = await env.both(get('links/broken.txt'));
    expect(broken.jupyter.status).toBe(400);
    await env.both(get('links/broken.txt', 'content=0'));
  });

  test('unicode, NFD and URL-special names', async () => {
    const dir = 'special ünï cødé';
    const { jupyter } = await env.both(get(dir));
    expect(
      models((jupyter.json as Model).content)
        .map(m => m.name)
        .sort()
    ).toEqual([...SPECIAL_NAMES, 'ünï.ipynb'].sort());
    for (const name of SPECIAL_NAMES) {
      const r = await env.both(get(`${dir}/${name}`, 'hash=1'));
      expect(r.jupyter.json).toMatchObject({ name, content: `${name} text` });
    }
    await env.both(get(`${dir}/ünï.ipynb`, 'hash=1'));
    // The NFC spelling of the NFD name is another name: not found.
    expect((await env.both(get(`${dir}/café nfd.txt`))).jupyter.status).toBe(404);
  });

  test('a large binary file as base64 and its hash', async () => {
    const { jupyter } = await env.both(get('large.bin', 'hash=1'));
    const model = jupyter.json as Model;
    expect(model.size).toBe(TEMPLATE_LARGE_FILE_SIZE);
    expect(model.format).toBe('base64');
    expect(model.mimetype).toBe('application/octet-stream');
    await env.both(get('large.bin', 'content=0'));
    await env.both(get('large.bin', 'type=file&format=base64&content=1&hash=1'));
  });

  test('a 20 MB binary file', async () => {
    await env.writeBoth('big/twenty.bin', Buffer.alloc(20 * 1024 * 1024, 0xa5));
    const { jupyter } = await env.both(get('big/twenty.bin', 'hash=1'));
    expect((jupyter.json as Model).size).toBe(20 * 1024 * 1024);
    await env.both(get('big'));
  });
});
