/**
 * Differential conformance: checkpoints (upstream test_api.py's checkpoint tests): list, create,
 * restore, delete, their Location and model, and their on-disk layout
 * `<dir>/.ipynb_checkpoints/<stem>-checkpoint<ext>`, which Jupyter and we must share.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { conformanceSuite, contentsPath, get, put, type Req } from '../support/compare';

const env = conformanceSuite();

const list = (apiPath: string): Req => ({
  method: 'GET',
  path: contentsPath(apiPath, 'checkpoints')
});
const create = (apiPath: string): Req => ({
  method: 'POST',
  path: contentsPath(apiPath, 'checkpoints')
});
const restore = (apiPath: string, id: string): Req => ({
  method: 'POST',
  path: contentsPath(apiPath, `checkpoints/${id}`)
});
const remove = (apiPath: string, id: string): Req => ({
  method: 'DELETE',
  path: contentsPath(apiPath, `checkpoints/${id}`)
});

type Model = Record<string, unknown>;
type Notebook = { cells: Array<Record<string, unknown>>; [key: string]: unknown };

const markdownCell = (source: string): Record<string, unknown> => ({
  cell_type: 'markdown',
  id: 'created-by-test',
  metadata: {},
  source
});

describe('checkpoints (test_api.py)', () => {
  test('test_checkpoints_follow_file', async () => {
    const first = await env.both(get('foo/a.ipynb'));
    const cp = await env.both(create('foo/a.ipynb'));
    expect(cp.jupyter.status).toBe(201);
    const nb = (first.jupyter.json as Model).content as Notebook;
    nb.cells.push(markdownCell('Created by test'));
    await env.both(put('foo/a.ipynb', { content: nb, type: 'notebook' }));
    const cps = await env.both(list('foo/a.ipynb'));
    expect(cps.jupyter.json).toEqual([cp.jupyter.json]);
    const again = await env.both(get('foo/a.ipynb'));
    expect(((again.jupyter.json as Model).content as Notebook).cells[0].source).toBe(
      'Created by test'
    );
  });

  test('test_checkpoints', async () => {
    const first = await env.both(get('foo/a.ipynb'));
    const cp = await env.both(create('foo/a.ipynb'));
    expect(cp.jupyter.status).toBe(201);
    const cp1 = cp.jupyter.json as Model;
    expect(Object.keys(cp1).sort()).toEqual(['id', 'last_modified']);
    expect(cp.jupyter.headers.location?.split('/').pop()).toBe(cp1.id);
    const nb = (first.jupyter.json as Model).content as Notebook;
    nb.cells.push(markdownCell('Created by test'));
    await env.both(put('foo/a.ipynb', { content: nb, type: 'notebook' }));
    expect((await env.both(list('foo/a.ipynb'))).jupyter.json).toEqual([cp1]);
    const saved = await env.both(get('foo/a.ipynb'));
    expect(((saved.jupyter.json as Model).content as Notebook).cells[0].source).toBe(
      'Created by test'
    );
    expect((await env.both(restore('foo/a.ipynb', String(cp1.id)))).jupyter.status).toBe(204);
    const restored = await env.both(get('foo/a.ipynb'));
    expect(((restored.jupyter.json as Model).content as Notebook).cells).toEqual([]);
    expect((await env.both(remove('foo/a.ipynb', String(cp1.id)))).jupyter.status).toBe(204);
    expect((await env.both(list('foo/a.ipynb'))).jupyter.json).toEqual([]);
  });

  test('test_file_checkpoints', async () => {
    const first = await env.both(get('foo/a.txt'));
    const orig = String((first.jupyter.json as Model).content);
    const cp = await env.both(create('foo/a.txt'));
    expect(cp.jupyter.status).toBe(201);
    const cp1 = cp.jupyter.json as Model;
    expect(Object.keys(cp1).sort()).toEqual(['id', 'last_modified']);
    expect(cp.jupyter.headers.location?.split('/').pop()).toBe(cp1.id);
    const changed = `${orig}\nsecond line`;
    await env.both(put('foo/a.txt', { content: changed, type: 'file', format: 'text' }));
    expect((await env.both(list('foo/a.txt'))).jupyter.json).toEqual([cp1]);
    expect((await env.both(get('foo/a.txt'))).jupyter.json).toMatchObject({ content: changed });
    expect((await env.both(restore('foo/a.txt', String(cp1.id)))).jupyter.status).toBe(204);
    expect((await env.both(get('foo/a.txt'))).jupyter.json).toMatchObject({ content: orig });
    expect((await env.both(remove('foo/a.txt', String(cp1.id)))).jupyter.status).toBe(204);
    expect((await env.both(list('foo/a.txt'))).jupyter.json).toEqual([]);
  });
});

describe('checkpoint layout and edge cases', () => {
  test('on-disk names: <stem>-checkpoint<ext>, in each directory', async () => {
    await env.writeBoth('layout/a.tar.gz', Buffer.from([0x1f, 0x8b]));
    await env.writeBoth('layout/README', 'readme');
    await env.writeBoth(
      'layout/v1.2.ipynb',
      '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
    );
    const files = [
      'inroot.ipynb',
      'inroot.txt',
      'foo/bar/baz.blob',
      'unicodé/innonascii.ipynb',
      'å b/ç d.txt',
      "special ünï cødé/quote !'()*.txt",
      'special ünï cødé/cafe\u0301 nfd.txt',
      'layout/a.tar.gz',
      'layout/README',
      'layout/v1.2.ipynb',
      'large.bin'
    ];
    for (const file of files) {
      const r = await env.both(create(file));
      expect(r.jupyter.status).toBe(201);
    }
    const expected = [
      '.ipynb_checkpoints/inroot-checkpoint.ipynb',
      '.ipynb_checkpoints/inroot-checkpoint.txt',
      'foo/bar/.ipynb_checkpoints/baz-checkpoint.blob',
      'unicodé/.ipynb_checkpoints/innonascii-checkpoint.ipynb',
      'å b/.ipynb_checkpoints/ç d-checkpoint.txt',
      "special ünï cødé/.ipynb_checkpoints/quote !'()*-checkpoint.txt",
      'special ünï cødé/.ipynb_checkpoints/cafe\u0301 nfd-checkpoint.txt',
      'layout/.ipynb_checkpoints/a.tar-checkpoint.gz',
      'layout/.ipynb_checkpoints/README-checkpoint',
      'layout/.ipynb_checkpoints/v1.2-checkpoint.ipynb',
      '.ipynb_checkpoints/large-checkpoint.bin'
    ];
    for (const rel of expected) expect(existsSync(join(env.root('jupyter'), rel))).toBe(true);
    // The checkpoint directory is hidden: never listed, never served.
    const listing = await env.both(get('layout'));
    expect(((listing.jupyter.json as Model).content as Model[]).map(m => m.name)).not.toContain(
      '.ipynb_checkpoints'
    );
    expect((await env.both(get('layout/.ipynb_checkpoints'))).jupyter.status).toBe(404);
    expect(
      (await env.both(get('layout/.ipynb_checkpoints/README-checkpoint'))).jupyter.status
    ).toBe(404);
  });

  test('listing creates the checkpoint directory; lists are empty without one', async () => {
    const r = await env.both(list('ordering/A.txt'));
    expect(r.jupyter.json).toEqual([]);
    expect(existsSync(join(env.root('jupyter'), 'ordering/.ipynb_checkpoints'))).toBe(true);
  });

  test('a checkpoint written by one server is the checkpoint of the other (shared layout)', async () => {
    // A checkpoint file made by hand (as Jupyter would have left it) is listed and restored.
    await env.writeBoth('foo/.ipynb_checkpoints/a-checkpoint.txt', 'from the checkpoint');
    const cps = await env.both(list('foo/a.txt'));
    expect((cps.jupyter.json as Model[]).map(c => c.id)).toEqual(['checkpoint']);
    expect((await env.both(restore('foo/a.txt', 'checkpoint'))).jupyter.status).toBe(204);
    expect((await env.both(get('foo/a.txt'))).jupyter.json).toMatchObject({
      content: 'from the checkpoint'
    });
  });

  test('creating again clobbers the checkpoint', async () => {
    await env.both(create('foo/a.txt'));
    await env.both(put('foo/a.txt', { type: 'file', format: 'text', content: 'second' }));
    await env.both(create('foo/a.txt'));
    await env.both(put('foo/a.txt', { type: 'file', format: 'text', content: 'third' }));
    expect((await env.both(restore('foo/a.txt', 'checkpoint'))).jupyter.status).toBe(204);
    expect((await env.both(get('foo/a.txt'))).jupyter.json).toMatchObject({ content: 'second' });
  });

  test('the first save of a notebook makes a checkpoint, files do not', async () => {
    await env.both(
      put('fresh.ipynb', {
        type: 'notebook',
        content: { cells: [], metadata: {}, nbformat: 4, nbformat_minor: 5 }
      })
    );
    await env.both(put('fresh.txt', { type: 'file', format: 'text', content: 'x' }));
    expect(existsSync(join(env.root('jupyter'), '.ipynb_checkpoints/fresh-checkpoint.ipynb'))).toBe(
      true
    );
    await env.both(list('fresh.ipynb'));
    await env.both(list('fresh.txt'));
  });

  test('missing files, missing checkpoints, unknown ids, directories, hidden files', async () => {
    const seen: Array<[string, number]> = [];
    const step = async (label: string, req: Req): Promise<void> => {
      seen.push([label, (await env.both(req)).jupyter.status]);
    };
    await step('create, missing file', create('foo/nope.txt'));
    await step('list, missing file', list('foo/nope.txt'));
    await step('restore, no checkpoint', restore('foo/a.txt', 'checkpoint'));
    await step('delete, no checkpoint', remove('foo/a.txt', 'checkpoint'));
    await step('create', create('foo/a.txt'));
    await step('restore, unknown id', restore('foo/a.txt', 'other'));
    await step('delete, unknown id', remove('foo/a.txt', 'other-id'));
    // Not a checkpoint id ([\w-]+): the whole path is then a contents path.
    await step('POST, bad id', {
      method: 'POST',
      path: `${contentsPath('foo/a.txt')}/checkpoints/bad.id`
    });
    await step('GET, bad id', {
      method: 'GET',
      path: `${contentsPath('foo/a.txt')}/checkpoints/bad.id`
    });
    await step('create, directory', create('foo'));
    await step('list, directory', list('foo'));
    await step('create, hidden', create('.hidden.txt'));
    await step('list, hidden', list('.hidden/visible.txt'));
    // Jupyter's answers; where it fails with a 500, ours must answer a 4xx (checked by the harness).
    expect(seen).toEqual([
      ['create, missing file', 500],
      ['list, missing file', 200],
      ['restore, no checkpoint', 500],
      ['delete, no checkpoint', 404],
      ['create', 201],
      ['restore, unknown id', 500],
      ['delete, unknown id', 404],
      ['POST, bad id', 404],
      ['GET, bad id', 500],
      ['create, directory', 500],
      ['list, directory', 200],
      ['create, hidden', 201],
      ['list, hidden', 200]
    ]);
  });
});
