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

describe('copy (test_api.py)', () => {
  test('test_copy', async () => {
    checkCreated(env, await env.both(copy('å b', 'å b/ç d.ipynb')), 'å b', 'ç d-Copy1.ipynb');
    checkCreated(env, await env.both(copy('å b', 'å b/ç d.ipynb')), 'å b', 'ç d-Copy2.ipynb');
    checkCreated(env, await env.both(copy('å b', 'å b/ç d-Copy2.ipynb')), 'å b', 'ç d-Copy3.ipynb');
  });

  test('test_copy_dir', async () => {
    checkCreated(env, await env.both(copy('parent', 'foo')), 'parent', 'foo', 'directory');
    checkCreated(env, await env.both(copy('parent', 'foo')), 'parent', 'foo-Copy1', 'directory');
    await env.both(get('parent'));
    await env.both(get('parent/foo/bar'));
  });

  test('test_copy_path', async () => {
    checkCreated(env, await env.both(copy('å b', 'foo/a.ipynb')), 'å b', 'a.ipynb');
    checkCreated(env, await env.both(copy('å b', 'foo/a.ipynb')), 'å b', 'a-Copy1.ipynb');
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
    checkCreated(env, await env.both(copy('foo', 'foo/a.txt')), 'foo', 'a-Copy1.txt', 'file');
    checkCreated(env, await env.both(copy('foo', 'foo/a.txt')), 'foo', 'a-Copy2.txt', 'file');
    checkCreated(env, await env.both(copy('foo', 'foo/a-Copy1.txt')), 'foo', 'a-Copy3.txt', 'file');
    await env.writeBoth('arch/a.tar.gz', Buffer.from([0x1f, 0x8b, 0x08, 0x00]));
    await env.writeBoth('arch/README', 'no extension');
    await env.writeBoth(
      'arch/v1.2.ipynb',
      '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
    );
    checkCreated(
      env,
      await env.both(copy('arch', 'arch/a.tar.gz')),
      'arch',
      'a-Copy1.tar.gz',
      'file'
    );
    checkCreated(
      env,
      await env.both(copy('arch', 'arch/a.tar.gz')),
      'arch',
      'a-Copy2.tar.gz',
      'file'
    );
    checkCreated(env, await env.both(copy('arch', 'arch/README')), 'arch', 'README-Copy1', 'file');
    checkCreated(env, await env.both(copy('arch', 'arch/v1.2.ipynb')), 'arch', 'v1.2-Copy1.ipynb');
    checkCreated(
      env,
      await env.both(copy('arch', 'arch/v1.2-Copy1.ipynb')),
      'arch',
      'v1.2-Copy2.ipynb'
    );
    // The name is kept in another directory where it is free.
    checkCreated(env, await env.both(copy('', 'arch/a.tar.gz')), '', 'a.tar.gz', 'file');
    checkCreated(
      env,
      await env.both(copy('', 'arch/a-Copy2.tar.gz')),
      '',
      'a-Copy1.tar.gz',
      'file'
    );
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
    checkCreated(
      env,
      await env.both(copy('special ünï cødé', "special ünï cødé/quote !'()*.txt")),
      'special ünï cødé',
      "quote !'()*-Copy1.txt",
      'file'
    );
    checkCreated(
      env,
      await env.both(copy('special ünï cødé', 'special ünï cødé/cafe\u0301 nfd.txt')),
      'special ünï cødé',
      'cafe\u0301 nfd-Copy1.txt',
      'file'
    );
    checkCreated(env, await env.both(copy('', 'large.bin')), '', 'large-Copy1.bin', 'file');
    checkCreated(
      env,
      await env.both(copy('unicodé', 'unicodé/innonascii.blob')),
      'unicodé',
      'innonascii-Copy1.blob',
      'file'
    );
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
    checkCreated(env, await env.both(copy('', 'withcp')), '', 'withcp-Copy1', 'directory');
    await env.both(get('withcp-Copy1'));
    await env.both(get('withcp-Copy1/sub/deep.txt'));
  });

  test('a copied notebook keeps its bytes', async () => {
    const notebook =
      '{\n "cells": [\n  {\n   "cell_type": "markdown",\n   "id": "abc",\n   "metadata": {},\n   "source": [\n    "# Hi\\n",\n    "there"\n   ]\n  }\n ],\n "metadata": {},\n "nbformat": 4,\n "nbformat_minor": 5\n}\n';
    await env.writeBoth('bytes/nb.ipynb', notebook);
    checkCreated(env, await env.both(copy('bytes', 'bytes/nb.ipynb')), 'bytes', 'nb-Copy1.ipynb');
    await env.both(get('bytes/nb-Copy1.ipynb', 'hash=1'));
  });
});
