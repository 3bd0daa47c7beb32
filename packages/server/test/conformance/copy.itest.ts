/**
 * Differential conformance: copies (upstream test_api.py's copy tests), `-Copy` naming,
 * directory copies, copies to an exact path, refusals.
 */
import {
  checkCreated,
  conformanceSuite,
  contentsPath,
  get,
  post,
  put,
  type Req
} from '../support/compare';

const env = conformanceSuite();

const copy = (to: string, from: string): Req => post(to, { copy_from: from });

/**
 * Copy `from` into the directory `dir` on both servers: both must create `dir/name`, of `type`
 * (see {@link checkCreated}).
 */
async function copyInto(dir: string, from: string, name: string, type?: string): Promise<void> {
  checkCreated(env, await env.both(copy(dir, from)), dir, name, type);
}

describe('copy (test_api.py)', () => {
  test('test_copy', async () => {
    await copyInto('å b', 'å b/ç d.ipynb', 'ç d-Copy1.ipynb');
    await copyInto('å b', 'å b/ç d.ipynb', 'ç d-Copy2.ipynb');
    await copyInto('å b', 'å b/ç d-Copy2.ipynb', 'ç d-Copy3.ipynb');
  });

  test('test_copy_dir', async () => {
    await copyInto('parent', 'foo', 'foo', 'directory');
    await copyInto('parent', 'foo', 'foo-Copy1', 'directory');
    await env.both(get('parent'));
    await env.both(get('parent/foo/bar'));
  });

  test('test_copy_path', async () => {
    await copyInto('å b', 'foo/a.ipynb', 'a.ipynb');
    await copyInto('å b', 'foo/a.ipynb', 'a-Copy1.ipynb');
  });

  test('test_copy_put_400', async () => {
    expect(
      (await env.both(put('å b/cøpy.ipynb', { copy_from: 'å b/ç d.ipynb' }))).jupyter.status
    ).toBe(400);
  });

  test('test_copy_put_400_hidden', async () => {
    expect((await env.both(put('.hidden/old.txt', { copy_from: 'new.txt' }))).jupyter.status).toBe(
      400
    );
    expect((await env.both(put('old.txt', { copy_from: '.hidden/new.txt' }))).jupyter.status).toBe(
      400
    );
    expect((await env.both(put('.hidden.txt', { copy_from: 'new.txt' }))).jupyter.status).toBe(400);
    expect((await env.both(put('old.txt', { copy_from: '.hidden.txt' }))).jupyter.status).toBe(400);
  });

  test('test_copy_400_hidden', async () => {
    await env.writeBoth('.hidden/new.txt', 'visible text file in hidden dir');
    // Upstream writes "<name>.txt" for each name (so new.txt.txt and .hidden.txt.txt).
    for (const name of ['new.txt', '.hidden.txt'])
      await env.writeBoth(`${name}.txt`, `${name} text file`);
    expect((await env.both(copy('.hidden/old.txt', 'new.txt'))).jupyter.status).toBe(400);
    expect((await env.both(copy('old.txt', '.hidden/new.txt'))).jupyter.status).toBe(400);
    expect((await env.both(copy('.hidden.txt', 'new.txt'))).jupyter.status).toBe(400);
    expect((await env.both(copy('old.txt', '.hidden.txt'))).jupyter.status).toBe(400);
  });
});

describe('copy naming', () => {
  test('-Copy counters for files, compound extensions, names without extension', async () => {
    await copyInto('foo', 'foo/a.txt', 'a-Copy1.txt', 'file');
    await copyInto('foo', 'foo/a.txt', 'a-Copy2.txt', 'file');
    await copyInto('foo', 'foo/a-Copy1.txt', 'a-Copy3.txt', 'file');
    await env.writeBoth('arch/a.tar.gz', Buffer.from([0x1f, 0x8b, 0x08, 0x00]));
    await env.writeBoth('arch/README', 'no extension');
    await env.writeBoth(
      'arch/v1.2.ipynb',
      '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
    );
    await copyInto('arch', 'arch/a.tar.gz', 'a-Copy1.tar.gz', 'file');
    await copyInto('arch', 'arch/a.tar.gz', 'a-Copy2.tar.gz', 'file');
    await copyInto('arch', 'arch/README', 'README-Copy1', 'file');
    await copyInto('arch', 'arch/v1.2.ipynb', 'v1.2-Copy1.ipynb');
    await copyInto('arch', 'arch/v1.2-Copy1.ipynb', 'v1.2-Copy2.ipynb');
    // The name is kept in another directory where it is free.
    await copyInto('', 'arch/a.tar.gz', 'a.tar.gz', 'file');
    await copyInto('', 'arch/a-Copy2.tar.gz', 'a-Copy1.tar.gz', 'file');
    await env.both(get('arch'));
    await env.both(get(''));
  });

  test('copy to an exact new path, onto an existing file, from a missing source', async () => {
    checkCreated(
      env,
      await env.both(copy('foo/exact copy.ipynb', 'foo/a.ipynb')),
      'foo',
      'exact copy.ipynb'
    );
    await env.both(copy('foo/b.txt', 'foo/a.txt'));
    await env.both(copy('foo', 'foo/missing.txt'));
    await env.both(copy('nope/x.txt', 'foo/a.txt'));
    await env.both(copy('nope', 'foo/a.txt'));
    await env.both(copy('', 'foo/a.txt'));
    await env.both(copy('', 'nope'));
  });

  test('copies of unicode, special and binary files', async () => {
    await copyInto(
      'special ünï cødé',
      "special ünï cødé/quote !'()*.txt",
      "quote !'()*-Copy1.txt",
      'file'
    );
    await copyInto(
      'special ünï cødé',
      'special ünï cødé/cafe\u0301 nfd.txt',
      'cafe\u0301 nfd-Copy1.txt',
      'file'
    );
    await copyInto('', 'large.bin', 'large-Copy1.bin', 'file');
    await copyInto('unicodé', 'unicodé/innonascii.blob', 'innonascii-Copy1.blob', 'file');
  });

  test('a directory copy keeps its tree but not its checkpoints', async () => {
    await env.writeBoth(
      'withcp/nb.ipynb',
      '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
    );
    const cp = await env.both({
      method: 'POST',
      path: contentsPath('withcp/nb.ipynb', 'checkpoints')
    });
    expect(cp.jupyter.status).toBe(201);
    await env.writeBoth('withcp/sub/deep.txt', 'deep');
    await copyInto('', 'withcp', 'withcp-Copy1', 'directory');
    await env.both(get('withcp-Copy1'));
    await env.both(get('withcp-Copy1/sub/deep.txt'));
  });

  test('a copied notebook keeps its bytes', async () => {
    const notebook =
      '{\n "cells": [\n  {\n   "cell_type": "markdown",\n   "id": "abc",\n   "metadata": {},\n   "source": [\n    "# Hi\\n",\n    "there"\n   ]\n  }\n ],\n "metadata": {},\n "nbformat": 4,\n "nbformat_minor": 5\n}\n';
    await env.writeBoth('bytes/nb.ipynb', notebook);
    await copyInto('bytes', 'bytes/nb.ipynb', 'nb-Copy1.ipynb');
    await env.both(get('bytes/nb-Copy1.ipynb', 'hash=1'));
  });
});
