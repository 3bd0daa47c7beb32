/**
 * `POST {base}api/store/clone` and `POST {base}api/store/fs-clone` through an in-process gateway
 * (a fake Jupyter Server answers `api/me`), against the embedded store and against MinIO: every
 * status, a table of bad inputs (each a 4xx, never a 500), exact versions, binary bytes, name
 * clashes, and archiving of cloned notebooks.
 */
import {
  CreateBucketCommand,
  PutObjectCommand,
  type PutObjectCommandOutput,
  type S3Client
} from '@aws-sdk/client-s3';
import {
  ErrorBodySchema,
  FsCloneResponseSchema,
  ObjectCloneResponseSchema
} from '@jupyter-store/contract';
import { execFileSync } from 'node:child_process';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Archiving } from '../../src/archive/archiving';
import { Gateway } from '../../src/gateway/gateway';
import { createLogger } from '../../src/gateway/logger';
import { mountStoreApi } from '../../src/gateway/start';
import { EMBEDDED_BUCKET, StoreSettingsSchema } from '../../src/settings';
import { FakeUpstream } from '../support/fakeUpstream';
import {
  createVersionedBucket,
  s3ClientFor,
  startMinio,
  type IObjectServer
} from '../support/objectServers';

jest.setTimeout(120_000);

// ---------------------------------------------------------------------------------------------
// Set-up
// ---------------------------------------------------------------------------------------------

interface IReply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
  text: string;
}

interface IEnv {
  gateway: Gateway;
  archiving: Archiving;
  port: number;
  /** The contents root. */
  root: string;
  /** A temporary directory holding root, base, outside, store and journal. */
  dir: string;
  /** The real base directory of fs-clone (reached through the symlink `base-link`). */
  base: string;
  /** A directory outside both the root and the base, holding `secret.txt`. */
  outside: string;
  post(route: string, body: unknown, headers?: Record<string, string>): Promise<IReply>;
}

const cleanups: Array<() => Promise<void>> = [];
const log = createLogger({ level: 'silent' });
let backend: FakeUpstream;

beforeAll(async () => {
  backend = new FakeUpstream();
  await backend.listen({ port: 0 });
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await backend?.close();
});

/** A raw body, sent as is instead of as JSON. */
class Raw {
  constructor(readonly bytes: string | Buffer) {}
}

/**
 * A gateway with the store API (the clone routes among them) at `api/store`, archiving through
 * `Archiving.start` with these settings (store and journal in a fresh directory unless given).
 * `fs_cloning_basedir` is the symlink `<dir>/base-link` to `<dir>/base` unless given.
 */
async function startEnv(
  settings: Record<string, unknown> = {},
  options: { maxCloneBytes?: number } = {}
): Promise<IEnv> {
  const dir = await mkdtemp(join(tmpdir(), 'clone-itest-'));
  const root = join(dir, 'root');
  const base = join(dir, 'base');
  const outside = join(dir, 'outside');
  for (const directory of [root, base, outside, join(dir, 'data')]) await mkdir(directory);
  await symlink(base, join(dir, 'base-link'));
  await writeFile(join(outside, 'secret.txt'), 'outside secret\n');
  const gateway = new Gateway({
    rootDir: root,
    jupyterDataDir: join(dir, 'data'),
    upstream: backend.address!,
    log
  });
  const archiving = await Archiving.start(
    StoreSettingsSchema.parse({
      local_store_dir: join(dir, 'objects'),
      journal_dir: join(dir, 'journal'),
      fs_cloning_basedir: join(dir, 'base-link'),
      ...settings
    }),
    gateway.manager,
    log,
    { backoff: { baseMs: 50, capMs: 500 } }
  );
  mountStoreApi(gateway, { archiving, log, publishEnabled: () => false, ...options });
  const { port } = await gateway.listen(0, '127.0.0.1');
  cleanups.push(async () => {
    await gateway.close({ drainTimeoutMs: 100 });
    await archiving.close(2000);
    await rm(dir, { recursive: true, force: true });
  });
  const post = async (
    route: string,
    body: unknown,
    headers: Record<string, string> = {}
  ): Promise<IReply> => {
    const response = await fetch(`http://127.0.0.1:${port}/api/store/${route}`, {
      method: 'POST',
      headers: { Authorization: 'token good', 'Content-Type': 'application/json', ...headers },
      body: body instanceof Raw ? body.bytes : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000)
    });
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: response.status, json, text };
  };
  return { gateway, archiving, port, root, dir, base, outside, post };
}

/** A small valid notebook, as a file holds it. */
function notebookBytes(text: string, extraCell: Record<string, unknown> = {}): Buffer {
  const notebook = {
    cells: [{ cell_type: 'markdown', id: 'c1', metadata: {}, source: text, ...extraCell }],
    metadata: {},
    nbformat: 4,
    nbformat_minor: 5
  };
  return Buffer.from(JSON.stringify(notebook, null, 1) + '\n');
}

/** An error reply: the status, Jupyter's body, and never a stack trace. */
function expectError(reply: IReply, status: number, reason?: string | RegExp): void {
  expect({ status: reply.status, body: reply.json }).toMatchObject({ status });
  const body = ErrorBodySchema.parse(reply.json);
  expect(body.message).not.toMatch(/\n\s+at /);
  if (reason instanceof RegExp) expect(body.reason).toMatch(reason);
  else if (reason !== undefined) expect(body.reason).toBe(reason);
}

/** Wait (bounded) until the archive queue is empty. */
async function flushed(archiving: Archiving): Promise<void> {
  expect(await archiving.settled(20_000)).toBe(true);
  expect(await archiving.queue!.flush(20_000)).toBe(0);
}

function listRoot(env: IEnv, sub = ''): string[] {
  return readdirSync(join(env.root, sub)).sort();
}

/**
 * Bad `target_path`s, each with the status and reason it must get. `file.txt` is a file and
 * `outlink` a symlink to a directory outside the root (both made by {@link prepareRoot}).
 */
const BAD_TARGETS: Array<[unknown, number, string | RegExp]> = [
  ['../x.txt', 400, 'invalid path'],
  ['a/../../x.txt', 400, 'invalid path'],
  ['sub/../x.txt', 400, 'invalid path'],
  ['./x.txt', 400, 'invalid path'],
  ['a//x.txt', 400, 'invalid path'],
  ['x\0y.txt', 400, 'invalid path'],
  ['..%2Fx.txt', 400, 'hidden path'],
  ['%2e%2e/x.txt', 409, 'missing parent directory'],
  ['/etc/x.txt', 400, 'absolute path'],
  ['/', 400, 'empty path'],
  ['C:\\x.txt', 400, 'absolute path'],
  ['.hidden.txt', 400, 'hidden path'],
  ['sub/.ipynb_checkpoints/x.txt', 400, 'hidden path'],
  ['.git/config', 400, 'hidden path'],
  ['missing/x.txt', 409, 'missing parent directory'],
  ['missing/deeper/x.txt', 409, 'missing parent directory'],
  ['file.txt/x.txt', 409, 'missing parent directory'],
  ['outlink/x.txt', 400, 'target outside root'],
  ['outlink/inner/x.txt', 400, 'target outside root'],
  ['', 400, 'bad request'],
  [5, 400, 'bad request'],
  [true, 400, 'bad request'],
  [['x.txt'], 400, 'bad request'],
  [{ path: 'x.txt' }, 400, 'bad request']
];

async function prepareRoot(env: IEnv): Promise<void> {
  await mkdir(join(env.root, 'sub'));
  await writeFile(join(env.root, 'file.txt'), 'a file');
  await mkdir(join(env.outside, 'inner'));
  await symlink(env.outside, join(env.root, 'outlink'));
}

/** Nothing new appeared outside the root (the target table must not write there). */
function expectOutsideUntouched(env: IEnv): void {
  expect(readdirSync(env.outside).sort()).toEqual(['inner', 'secret.txt']);
  expect(readdirSync(join(env.outside, 'inner'))).toEqual([]);
  expect(existsSync(join(env.dir, 'x.txt'))).toBe(false);
}

// ---------------------------------------------------------------------------------------------
// Embedded store
// ---------------------------------------------------------------------------------------------

describe('clone with the embedded store', () => {
  let env: IEnv;
  const bucket = EMBEDDED_BUCKET;
  const put = (key: string, body: Buffer) => env.archiving.store.put(bucket, key, body);

  beforeAll(async () => {
    env = await startEnv();
    await prepareRoot(env);
  });

  test('a notebook object is cloned as a notebook, answered with its model, and archived', async () => {
    const bytes = notebookBytes('from the store');
    const { versionId } = await put('team/nb.ipynb', bytes);
    const reply = await env.post('clone', { object_bucket: bucket, object_key: 'team/nb.ipynb' });
    expect(reply.status).toBe(200);
    const model = ObjectCloneResponseSchema.parse(reply.json);
    expect(model).toMatchObject({
      name: 'nb.ipynb',
      path: 'nb.ipynb',
      type: 'notebook',
      content: null,
      format: null,
      object_bucket: bucket,
      object_key: 'team/nb.ipynb',
      object_version_id: versionId,
      object_path: `s3://${bucket}/team/nb.ipynb`
    });
    const onDisk = readFileSync(join(env.root, 'nb.ipynb'));
    expect(JSON.parse(onDisk.toString()).cells[0].source).toEqual(['from the store']);
    // It was a save like any other: archived, with exactly the bytes on disk.
    await flushed(env.archiving);
    const versions = await env.archiving.store.listVersions(bucket, 'workspace/nb.ipynb');
    expect(versions).toHaveLength(1);
    const archived = await env.archiving.store.get(bucket, 'workspace/nb.ipynb');
    expect(archived.body.equals(onDisk)).toBe(true);
  });

  test('clashes become a-1.ipynb, a-2.ipynb; nothing is overwritten', async () => {
    await put('src/a.ipynb', notebookBytes('one'));
    const paths: string[] = [];
    for (let i = 0; i < 3; i++) {
      const reply = await env.post('clone', { object_bucket: bucket, object_key: 'src/a.ipynb' });
      expect(reply.status).toBe(200);
      paths.push(reply.json.path);
    }
    expect(paths).toEqual(['a.ipynb', 'a-1.ipynb', 'a-2.ipynb']);
    // Other names: the counter goes before the first dot, as Jupyter does.
    await put('src/data.tar.gz', Buffer.from('tar'));
    const first = await env.post('clone', { object_bucket: bucket, object_key: 'src/data.tar.gz' });
    const second = await env.post('clone', {
      object_bucket: bucket,
      object_key: 'src/data.tar.gz'
    });
    expect([first.json.path, second.json.path]).toEqual(['data.tar.gz', 'data-1.tar.gz']);
    // The existing file.txt is kept; the clone gets file-1.txt.
    await put('src/file.txt', Buffer.from('cloned'));
    const clash = await env.post('clone', { object_bucket: bucket, object_key: 'src/file.txt' });
    expect(clash.json.path).toBe('file-1.txt');
    expect(readFileSync(join(env.root, 'file.txt'), 'utf8')).toBe('a file');
  });

  test('concurrent clones to one target each get their own name', async () => {
    await put('src/race.txt', Buffer.from('race'));
    const replies = await Promise.all(
      Array.from({ length: 6 }, () =>
        env.post('clone', { object_bucket: bucket, object_key: 'src/race.txt' })
      )
    );
    expect(replies.map(reply => reply.status)).toEqual(Array(6).fill(200));
    expect(replies.map(reply => reply.json.path).sort()).toEqual([
      'race-1.txt',
      'race-2.txt',
      'race-3.txt',
      'race-4.txt',
      'race-5.txt',
      'race.txt'
    ]);
    for (const reply of replies) {
      expect(readFileSync(join(env.root, reply.json.path), 'utf8')).toBe('race');
    }
  });

  test('an exact old version is cloned with its bytes; no version means the latest', async () => {
    const bodies = [randomBytes(3000), randomBytes(3000), randomBytes(3000)];
    const ids: string[] = [];
    for (const body of bodies) ids.push((await put('hist/blob.bin', body)).versionId!);
    const old = await env.post('clone', {
      object_bucket: bucket,
      object_key: 'hist/blob.bin',
      object_version_id: ids[0],
      target_path: 'sub/old.bin'
    });
    expect(old.status).toBe(200);
    expect(old.json).toMatchObject({ path: 'sub/old.bin', object_version_id: ids[0] });
    expect(readFileSync(join(env.root, 'sub', 'old.bin')).equals(bodies[0])).toBe(true);
    const latest = await env.post('clone', {
      object_bucket: bucket,
      object_key: 'hist/blob.bin',
      object_version_id: null,
      target_path: 'sub/latest.bin'
    });
    expect(latest.status).toBe(200);
    expect(latest.json.object_version_id).toBe(ids[2]);
    expect(readFileSync(join(env.root, 'sub', 'latest.bin')).equals(bodies[2])).toBe(true);
  });

  test('any file is byte-identical: binary, text, and a .ipynb that is not a notebook', async () => {
    const cases: Array<[string, Buffer]> = [
      ['bin/all-bytes.bin', Buffer.from(Array.from({ length: 256 }, (_, i) => i))],
      ['bin/image.png', Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), randomBytes(500)])],
      ['bin/crlf.txt', Buffer.from('line 1\r\nline 2\r\n\ttabs and ünïcödé\n')],
      ['bin/empty.txt', Buffer.alloc(0)],
      ['bin/broken.ipynb', Buffer.from('{"cells": [')],
      ['bin/latin1.ipynb', Buffer.from([0x7b, 0xe9, 0x7d])]
    ];
    for (const [key, body] of cases) {
      await put(key, body);
      const reply = await env.post('clone', { object_bucket: bucket, object_key: key });
      expect(reply.status).toBe(200);
      const name = key.slice(4);
      expect(reply.json.path).toBe(name);
      expect(readFileSync(join(env.root, name)).equals(body)).toBe(true);
    }
    // A .ipynb that is not a notebook is archived too, as the bytes on disk, once.
    await flushed(env.archiving);
    for (const name of ['broken.ipynb', 'latin1.ipynb']) {
      const versions = await env.archiving.store.listVersions(bucket, `workspace/${name}`);
      expect(versions).toHaveLength(1);
      const archived = await env.archiving.store.get(bucket, `workspace/${name}`);
      expect(archived.body.equals(readFileSync(join(env.root, name)))).toBe(true);
    }
    // Other files are not.
    await expect(env.archiving.store.listVersions(bucket, 'workspace/crlf.txt')).resolves.toEqual(
      []
    );
  });

  test('a cloned notebook never arrives trusted', async () => {
    const bytes = notebookBytes('', {
      cell_type: 'code',
      execution_count: 1,
      metadata: { trusted: true },
      outputs: [
        {
          output_type: 'display_data',
          data: { 'text/html': '<script>alert(1)</script>' },
          metadata: {}
        }
      ],
      source: 'x'
    });
    await put('src/evil.ipynb', bytes);
    const reply = await env.post('clone', { object_bucket: bucket, object_key: 'src/evil.ipynb' });
    expect(reply.status).toBe(200);
    const model = await env.gateway.manager.get('evil.ipynb');
    const cells = (model.content as { cells: Array<{ metadata: { trusted?: boolean } }> }).cells;
    expect(cells[0].metadata.trusted).toBe(false);
  });

  test('a version id of JSON null, a trailing slash on the route: as without', async () => {
    await put('src/slash.txt', Buffer.from('s'));
    const reply = await env.post('clone/', {
      object_bucket: bucket,
      object_key: 'src/slash.txt',
      object_version_id: null,
      target_path: null,
      unknown_field: 'ignored'
    });
    expect(reply.status).toBe(200);
    expect(reply.json.path).toBe('slash.txt');
  });

  test.each<[string, unknown, number, string | RegExp, RegExp?]>([
    ['no body', new Raw(''), 400, 'bad request', /JSON object/],
    ['malformed JSON', new Raw('{"object_bucket": '), 400, 'bad request', /Invalid JSON/],
    ['a JSON array', new Raw('[]'), 400, 'bad request', /JSON object/],
    ['JSON null', new Raw('null'), 400, 'bad request', /JSON object/],
    ['a JSON string', new Raw('"x"'), 400, 'bad request', /JSON object/],
    ['a byte-order mark', new Raw('\ufeff{}'), 400, 'bad request', /byte-order mark/],
    ['invalid UTF-8', new Raw(Buffer.from([0x7b, 0xff, 0x7d])), 400, 'bad request', /UTF-8/],
    ['an empty object', {}, 400, 'bad request', /^object_bucket is required/],
    ['no key', { object_bucket: 'b-x' }, 400, 'bad request', /^object_key is required/],
    ['no bucket', { object_key: 'k' }, 400, 'bad request', /^object_bucket is required/],
    [
      'an empty bucket',
      { object_bucket: '', object_key: 'k' },
      400,
      'bad request',
      /^object_bucket must not be empty/
    ],
    [
      'an empty key',
      { object_bucket: bucket, object_key: '' },
      400,
      'bad request',
      /^object_key must not be empty/
    ],
    [
      'a numeric bucket',
      { object_bucket: 5, object_key: 'k' },
      400,
      'bad request',
      /^object_bucket must be a string/
    ],
    [
      'a null bucket',
      { object_bucket: null, object_key: 'k' },
      400,
      'bad request',
      /^object_bucket must be a string/
    ],
    [
      'an array key',
      { object_bucket: bucket, object_key: ['k'] },
      400,
      'bad request',
      /^object_key must be a string/
    ],
    [
      'an object key that is an object',
      { object_bucket: bucket, object_key: { a: 1 } },
      400,
      'bad request',
      /^object_key must be a string/
    ],
    [
      'a numeric version',
      { object_bucket: bucket, object_key: 'k', object_version_id: 1 },
      400,
      'bad request',
      /^object_version_id must be a string/
    ],
    [
      'an empty version',
      { object_bucket: bucket, object_key: 'k', object_version_id: '' },
      400,
      'bad request',
      /^object_version_id must not be empty/
    ],
    [
      'a boolean target',
      { object_bucket: bucket, object_key: 'k', target_path: false },
      400,
      'bad request',
      /^target_path must be a string/
    ],
    [
      'an invalid bucket name',
      { object_bucket: 'Not_A_Bucket', object_key: 'k' },
      400,
      'bad request',
      /object_bucket/
    ],
    [
      'a key too long',
      { object_bucket: bucket, object_key: 'k'.repeat(1025) },
      400,
      'bad request',
      /^object_key must be at most/
    ],
    [
      'a key with a lone surrogate',
      { object_bucket: bucket, object_key: 'src/\ud800.txt' },
      400,
      'InvalidKey'
    ],
    ['a missing bucket', { object_bucket: 'no-such-bucket', object_key: 'k' }, 404, 'NoSuchBucket'],
    ['a missing key', { object_bucket: bucket, object_key: 'no/such.ipynb' }, 404, 'NoSuchKey'],
    [
      'a missing version',
      { object_bucket: bucket, object_key: 'src/a.ipynb', object_version_id: 'null' },
      404,
      'NoSuchVersion'
    ],
    [
      'a malformed version id',
      { object_bucket: bucket, object_key: 'src/a.ipynb', object_version_id: '../../etc' },
      400,
      'InvalidArgument'
    ],
    [
      'a key whose name is hidden',
      { object_bucket: bucket, object_key: 'src/.env' },
      400,
      'hidden path'
    ],
    ['a key ending in /', { object_bucket: bucket, object_key: 'src/' }, 400, 'bad request'],
    ['a key ending in ..', { object_bucket: bucket, object_key: 'src/..' }, 400, 'invalid path']
    // A default value keeps the function's length at 4: jest would take a fifth parameter for
    // a `done` callback on the rows without a message.
  ])('clone with %s is refused', async (_what, body, status, reason, message = undefined) => {
    const reply = await env.post('clone', body);
    expectError(reply, status, reason);
    if (message) expect(reply.json.message).toMatch(message);
  });

  test('a missing existing version of a real key is 404', async () => {
    const { versionId } = await put('src/gone.txt', Buffer.from('x'));
    const other = versionId!.replace(/[0-9a-f]{16}$/, '0000000000000000');
    const reply = await env.post('clone', {
      object_bucket: bucket,
      object_key: 'src/gone.txt',
      object_version_id: other
    });
    expectError(reply, 404, 'NoSuchVersion');
  });

  test('a body over the limit is 413', async () => {
    const reply = await env.post('clone', {
      object_bucket: bucket,
      object_key: 'k',
      padding: 'x'.repeat(70 * 1024)
    });
    expectError(reply, 413);
  });

  test('without Jupyter’s auth nothing is cloned', async () => {
    const reply = await env.post(
      'clone',
      { object_bucket: bucket, object_key: 'src/a.ipynb', target_path: 'noauth.ipynb' },
      { Authorization: 'token bad' }
    );
    expect(reply.status).toBe(403);
    expect(existsSync(join(env.root, 'noauth.ipynb'))).toBe(false);
  });

  test.each(BAD_TARGETS)('clone to target_path %j is %d (%s)', async (target, status, reason) => {
    await put('src/t.txt', Buffer.from('t'));
    const reply = await env.post('clone', {
      object_bucket: bucket,
      object_key: 'src/t.txt',
      target_path: target
    });
    expectError(reply, status, reason);
    if (typeof target !== 'string') expect(reply.json.message).toMatch(/^target_path /);
    expectOutsideUntouched(env);
  });

  test('a target name too long for the file system is 400', async () => {
    await put('src/t.txt', Buffer.from('t'));
    const reply = await env.post('clone', {
      object_bucket: bucket,
      object_key: 'src/t.txt',
      target_path: `${'n'.repeat(300)}.txt`
    });
    expectError(reply, 400, 'name too long');
  });

  test('a clone into a symlinked directory inside the root is allowed', async () => {
    await symlink(join(env.root, 'sub'), join(env.root, 'sublink'));
    await put('src/in.txt', Buffer.from('in'));
    const reply = await env.post('clone', {
      object_bucket: bucket,
      object_key: 'src/in.txt',
      target_path: 'sublink/in.txt'
    });
    expect(reply.status).toBe(200);
    expect(readFileSync(join(env.root, 'sub', 'in.txt'), 'utf8')).toBe('in');
  });

  test('a clone never writes through a symlink at the target name', async () => {
    await symlink(join(env.outside, 'secret.txt'), join(env.root, 'trap.txt'));
    await put('src/trap.txt', Buffer.from('overwrite?'));
    const reply = await env.post('clone', { object_bucket: bucket, object_key: 'src/trap.txt' });
    expect(reply.status).toBe(200);
    expect(reply.json.path).toBe('trap-1.txt');
    expect(readFileSync(join(env.outside, 'secret.txt'), 'utf8')).toBe('outside secret\n');
  });

  // -- fs-clone ---------------------------------------------------------------------------------

  describe('fs-clone', () => {
    const blob = randomBytes(4096);

    beforeAll(async () => {
      await writeFile(join(env.base, 'nb.ipynb'), notebookBytes('from the share'));
      await writeFile(join(env.base, 'notes.txt'), 'plain notes\r\n');
      await mkdir(join(env.base, 'data'));
      await writeFile(join(env.base, 'data', 'blob.bin'), blob);
      await mkdir(join(env.base, 'dir'));
      await writeFile(join(env.base, '.secret'), 'hidden');
      await mkdir(join(env.base, '.private'));
      await writeFile(join(env.base, '.private', 'p.txt'), 'private');
      await symlink(env.outside, join(env.base, 'link-out'));
      await symlink(join(env.outside, 'secret.txt'), join(env.base, 'file-out.txt'));
      await symlink('notes.txt', join(env.base, 'link-in.txt'));
      await symlink('.private/p.txt', join(env.base, 'link-hidden.txt'));
      await symlink('loop', join(env.base, 'loop'));
      execFileSync('mkfifo', [join(env.base, 'fifo')]);
    });

    test('a notebook is cloned as a notebook (through a symlinked base) and archived', async () => {
      const reply = await env.post('fs-clone', {
        relpath: 'nb.ipynb',
        target_path: 'sub/fs.ipynb'
      });
      expect(reply.status).toBe(200);
      const model = FsCloneResponseSchema.parse(reply.json);
      expect(model).toMatchObject({
        path: 'sub/fs.ipynb',
        name: 'fs.ipynb',
        type: 'notebook',
        content: null,
        relpath: 'nb.ipynb'
      });
      const onDisk = readFileSync(join(env.root, 'sub', 'fs.ipynb'));
      expect(JSON.parse(onDisk.toString()).cells[0].source).toEqual(['from the share']);
      await flushed(env.archiving);
      const archived = await env.archiving.store.get(bucket, 'workspace/sub/fs.ipynb');
      expect(archived.body.equals(onDisk)).toBe(true);
    });

    test('any file is cloned byte for byte (the original wrote a JSON tuple)', async () => {
      const binary = await env.post('fs-clone', { relpath: 'data/blob.bin' });
      expect(binary.status).toBe(200);
      expect(binary.json).toMatchObject({
        path: 'blob.bin',
        type: 'file',
        relpath: 'data/blob.bin'
      });
      expect(readFileSync(join(env.root, 'blob.bin')).equals(blob)).toBe(true);
      const text = await env.post('fs-clone', { relpath: 'notes.txt' });
      expect(text.json.path).toBe('notes.txt');
      expect(readFileSync(join(env.root, 'notes.txt'), 'utf8')).toBe('plain notes\r\n');
      const again = await env.post('fs-clone', { relpath: 'notes.txt', target_path: null });
      expect(again.json.path).toBe('notes-1.txt');
      // A symlink inside the base is followed; the copy is named after the link.
      const link = await env.post('fs-clone', { relpath: 'link-in.txt' });
      expect(link.json.path).toBe('link-in.txt');
      expect(readFileSync(join(env.root, 'link-in.txt'), 'utf8')).toBe('plain notes\r\n');
      // `..` that stays inside the base is fine.
      const inside = await env.post('fs-clone/', { relpath: 'dir/../data/blob.bin' });
      expect(inside.json.path).toBe('blob-1.bin');
    });

    test.each<[string, unknown, number, string]>([
      ['an empty object', {}, 400, 'bad request'],
      ['an empty relpath', { relpath: '' }, 400, 'bad request'],
      ['a numeric relpath', { relpath: 5 }, 400, 'bad request'],
      ['a null relpath', { relpath: null }, 400, 'bad request'],
      ['an array relpath', { relpath: ['notes.txt'] }, 400, 'bad request'],
      ['malformed JSON', new Raw('{relpath: notes.txt}'), 400, 'bad request'],
      ['a JSON array', new Raw('["notes.txt"]'), 400, 'bad request'],
      ['an absolute relpath', { relpath: '/etc/passwd' }, 400, 'absolute path'],
      ['an absolute relpath into the base', { relpath: '/notes.txt' }, 400, 'absolute path'],
      ['a NUL byte', { relpath: 'notes.txt\0.png' }, 400, 'invalid path'],
      ['a hidden file', { relpath: '.secret' }, 400, 'hidden path'],
      ['a hidden directory', { relpath: '.private/p.txt' }, 400, 'hidden path'],
      ['a link to a hidden file', { relpath: 'link-hidden.txt' }, 400, 'hidden path'],
      ['a percent-encoded ..', { relpath: '..%2Foutside%2Fsecret.txt' }, 400, 'hidden path'],
      ['a directory', { relpath: 'dir' }, 400, 'is a directory'],
      ['a directory with a slash', { relpath: 'dir/' }, 400, 'is a directory'],
      ['the base itself', { relpath: '.' }, 400, 'is a directory'],
      ['the base by ..', { relpath: 'dir/..' }, 400, 'is a directory'],
      ['a FIFO', { relpath: 'fifo' }, 400, 'not a file'],
      ['a plain ..', { relpath: '../outside/secret.txt' }, 404, 'outside base directory'],
      ['a deep ..', { relpath: 'data/../../outside/secret.txt' }, 404, 'outside base directory'],
      ['..', { relpath: '..' }, 404, 'outside base directory'],
      ['.. to a missing file', { relpath: '../nope.txt' }, 404, 'outside base directory'],
      ['a symlinked dir out', { relpath: 'link-out/secret.txt' }, 404, 'outside base directory'],
      ['the symlink out itself', { relpath: 'link-out' }, 404, 'outside base directory'],
      ['a missing file out', { relpath: 'link-out/nope.txt' }, 404, 'outside base directory'],
      ['a symlinked file out', { relpath: 'file-out.txt' }, 404, 'outside base directory'],
      ['a percent-encoded dir', { relpath: '%2e%2e/outside/secret.txt' }, 404, 'not found'],
      ['a missing file', { relpath: 'nope.txt' }, 404, 'not found'],
      ['a symlink loop', { relpath: 'loop' }, 404, 'not found']
    ])('fs-clone with %s is refused', async (_what, body, status, reason) => {
      const before = listRoot(env);
      const reply = await env.post('fs-clone', body);
      expectError(reply, status, reason);
      expect(listRoot(env)).toEqual(before);
      expect(readdirSync(env.root).some(name => name.startsWith('secret'))).toBe(false);
    });

    test.each(BAD_TARGETS)(
      'fs-clone to target_path %j is %d (%s)',
      async (target, status, reason) => {
        const reply = await env.post('fs-clone', { relpath: 'notes.txt', target_path: target });
        expectError(reply, status, reason);
        expectOutsideUntouched(env);
      }
    );

    test('a body over the limit is 413', async () => {
      const reply = await env.post('fs-clone', { relpath: 'x'.repeat(70 * 1024) });
      expectError(reply, 413);
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Features off, limits, unusable store
// ---------------------------------------------------------------------------------------------

describe('clone switched off, limited, or without a store', () => {
  test('enable_object_cloning=false: clone is 403; fs-clone unset: 403', async () => {
    const env = await startEnv({ enable_object_cloning: false, fs_cloning_basedir: '' });
    await env.archiving.store.put(EMBEDDED_BUCKET, 'a.txt', Buffer.from('a'));
    const clone = await env.post('clone', { object_bucket: EMBEDDED_BUCKET, object_key: 'a.txt' });
    expectError(clone, 403, 'object cloning disabled');
    expect(clone.json.message).toMatch(/enable_object_cloning/);
    const fsClone = await env.post('fs-clone', { relpath: 'a.txt' });
    expectError(fsClone, 403, 'fs cloning disabled');
    expect(fsClone.json.message).toMatch(/fs_cloning_basedir/);
    expect(listRoot(env)).toEqual([]);
  });

  test('fs_cloning_basedir that is not an existing directory: fs-clone is 403', async () => {
    const env = await startEnv({ fs_cloning_basedir: '/nonexistent/clone-base' });
    const reply = await env.post('fs-clone', { relpath: 'a.txt' });
    expectError(reply, 403, 'fs cloning disabled');
    expect(reply.json.message).toMatch(/not a directory/);
  });

  test('sources over the size limit are 413; at the limit they are cloned', async () => {
    const env = await startEnv({}, { maxCloneBytes: 1024 });
    await env.archiving.store.put(EMBEDDED_BUCKET, 'big.bin', randomBytes(1025));
    await env.archiving.store.put(EMBEDDED_BUCKET, 'fits.bin', randomBytes(1024));
    await writeFile(join(env.base, 'big.bin'), randomBytes(1025));
    await writeFile(join(env.base, 'fits.bin'), randomBytes(1024));
    expectError(
      await env.post('clone', { object_bucket: EMBEDDED_BUCKET, object_key: 'big.bin' }),
      413,
      'too large'
    );
    expectError(await env.post('fs-clone', { relpath: 'big.bin' }), 413, 'too large');
    const fits = await env.post('clone', {
      object_bucket: EMBEDDED_BUCKET,
      object_key: 'fits.bin'
    });
    expect(fits.status).toBe(200);
    const fsFits = await env.post('fs-clone', { relpath: 'fits.bin' });
    expect(fsFits.status).toBe(200);
    expect(listRoot(env)).toEqual(['fits-1.bin', 'fits.bin']);
  });

  test('object storage configured without a bucket: clone is 503, fs-clone works', async () => {
    const env = await startEnv({ object_endpoint_url: 'http://127.0.0.1:9', object_bucket: '' });
    const reply = await env.post('clone', { object_bucket: 'some-bucket', object_key: 'a.txt' });
    expectError(reply, 503, 'store unavailable');
    expect(reply.json.message).toMatch(/object_bucket is not set/);
    await writeFile(join(env.base, 'a.txt'), 'a');
    expect((await env.post('fs-clone', { relpath: 'a.txt' })).status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------
// MinIO
// ---------------------------------------------------------------------------------------------

/**
 * Temporary credentials from MinIO's STS `AssumeRole`, signed with the root user's keys and
 * limited by a session policy: a user with exactly the rights the policy grants.
 */
async function assumeRole(
  server: IObjectServer,
  policy: object
): Promise<{ accessKeyId: string; secretAccessKey: string; sessionToken: string }> {
  const body = new URLSearchParams({
    Action: 'AssumeRole',
    Version: '2011-06-15',
    DurationSeconds: '3600',
    Policy: JSON.stringify(policy)
  }).toString();
  const url = new URL(`${server.endpoint}/`);
  const amzDate = new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const day = amzDate.slice(0, 8);
  const sha256 = (data: string): string => createHash('sha256').update(data).digest('hex');
  const hmac = (key: string | Buffer, data: string): Buffer =>
    createHmac('sha256', key).update(data).digest();
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
    host: url.host,
    'x-amz-content-sha256': sha256(body),
    'x-amz-date': amzDate
  };
  const names = Object.keys(headers).sort();
  const canonical = [
    'POST',
    '/',
    '',
    names.map(name => `${name}:${headers[name]}\n`).join(''),
    names.join(';'),
    headers['x-amz-content-sha256']
  ].join('\n');
  const scope = `${day}/${server.region}/sts/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  let key = hmac(`AWS4${server.secretAccessKey}`, day);
  for (const part of [server.region, 'sts', 'aws4_request']) key = hmac(key, part);
  const signature = createHmac('sha256', key).update(toSign).digest('hex');
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': headers['content-type'],
      'X-Amz-Date': amzDate,
      'X-Amz-Content-Sha256': headers['x-amz-content-sha256'],
      Authorization:
        `AWS4-HMAC-SHA256 Credential=${server.accessKeyId}/${scope}, ` +
        `SignedHeaders=${names.join(';')}, Signature=${signature}`
    },
    body,
    signal: AbortSignal.timeout(15_000)
  });
  const xml = await response.text();
  const field = (name: string): string => {
    const match = new RegExp(`<${name}>([^<]+)</${name}>`).exec(xml);
    if (!match) throw new Error(`AssumeRole answered ${response.status} without ${name}: ${xml}`);
    return match[1];
  };
  return {
    accessKeyId: field('AccessKeyId'),
    secretAccessKey: field('SecretAccessKey'),
    sessionToken: field('SessionToken')
  };
}

describe('clone with MinIO', () => {
  let minio: IObjectServer;
  let s3: S3Client;
  let env: IEnv;
  const source = 'clone-src';
  const send = { abortSignal: AbortSignal.timeout(60_000) };
  const put = (bucket: string, key: string, body: Buffer): Promise<PutObjectCommandOutput> =>
    s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }), send);
  const settingsFor = (server: IObjectServer, extra: Record<string, unknown> = {}) => ({
    object_endpoint_url: server.endpoint,
    object_bucket: 'archive',
    object_access_key_id: server.accessKeyId,
    object_secret_access_key: server.secretAccessKey,
    object_timeout_seconds: 10,
    ...extra
  });

  beforeAll(async () => {
    minio = await startMinio();
    cleanups.push(() => minio.dispose());
    await createVersionedBucket(minio, 'archive');
    await createVersionedBucket(minio, source);
    await createVersionedBucket(minio, 'forbidden-src');
    s3 = s3ClientFor(minio);
    cleanups.push(async () => s3.destroy());
    await s3.send(new CreateBucketCommand({ Bucket: 'plain-src' }), send);
    env = await startEnv(settingsFor(minio));
    await prepareRoot(env);
  });

  test('a notebook is cloned from any readable bucket and archived to the configured one', async () => {
    const written = await put(source, 'team/nb.ipynb', notebookBytes('from MinIO'));
    const reply = await env.post('clone', { object_bucket: source, object_key: 'team/nb.ipynb' });
    expect(reply.status).toBe(200);
    expect(ObjectCloneResponseSchema.parse(reply.json)).toMatchObject({
      path: 'nb.ipynb',
      type: 'notebook',
      object_bucket: source,
      object_key: 'team/nb.ipynb',
      object_version_id: written.VersionId,
      object_path: `s3://${source}/team/nb.ipynb`
    });
    const onDisk = readFileSync(join(env.root, 'nb.ipynb'));
    await flushed(env.archiving);
    const archived = await env.archiving.store.get('archive', 'workspace/nb.ipynb');
    expect(archived.body.equals(onDisk)).toBe(true);
    const again = await env.post('clone', { object_bucket: source, object_key: 'team/nb.ipynb' });
    expect(again.json.path).toBe('nb-1.ipynb');
  });

  test('an exact old version is cloned with its bytes', async () => {
    const bodies = [randomBytes(5000), randomBytes(5000), randomBytes(5000)];
    const ids: string[] = [];
    for (const body of bodies) ids.push((await put(source, 'hist/v.bin', body)).VersionId!);
    for (const index of [0, 1]) {
      const reply = await env.post('clone', {
        object_bucket: source,
        object_key: 'hist/v.bin',
        object_version_id: ids[index],
        target_path: `sub/v${index}.bin`
      });
      expect(reply.status).toBe(200);
      expect(reply.json.object_version_id).toBe(ids[index]);
      expect(readFileSync(join(env.root, 'sub', `v${index}.bin`)).equals(bodies[index])).toBe(true);
    }
    const latest = await env.post('clone', { object_bucket: source, object_key: 'hist/v.bin' });
    expect(latest.json.object_version_id).toBe(ids[2]);
    expect(readFileSync(join(env.root, 'v.bin')).equals(bodies[2])).toBe(true);
  });

  test('an object of an unversioned bucket is cloned with object_version_id null', async () => {
    const body = Buffer.from([0, 1, 2, 255, 254, 0x80]);
    await put('plain-src', 'p/raw.bin', body);
    const reply = await env.post('clone', { object_bucket: 'plain-src', object_key: 'p/raw.bin' });
    expect(reply.status).toBe(200);
    expect(reply.json.object_version_id).toBeNull();
    expect(readFileSync(join(env.root, 'raw.bin')).equals(body)).toBe(true);
  });

  test.each<[string, Record<string, unknown>, number, string]>([
    ['a missing bucket', { object_bucket: 'no-such-bucket', object_key: 'k' }, 404, 'NoSuchBucket'],
    ['a missing key', { object_bucket: source, object_key: 'no/such.ipynb' }, 404, 'NoSuchKey'],
    [
      'a missing version',
      {
        object_bucket: source,
        object_key: 'hist/v.bin',
        object_version_id: '00000000-0000-4000-8000-000000000000'
      },
      404,
      'NoSuchVersion'
    ],
    [
      'a malformed version id',
      { object_bucket: source, object_key: 'hist/v.bin', object_version_id: 'not-a-version' },
      400,
      '*'
    ],
    ['an invalid bucket name', { object_bucket: 'Bad_Bucket', object_key: 'k' }, 400, '*']
  ])('clone from MinIO with %s is refused', async (_what, body, status, reason) => {
    const reply = await env.post('clone', body);
    expectError(reply, status, reason === '*' ? undefined : reason);
  });

  test.each(
    BAD_TARGETS.filter(([target]) =>
      ['../x.txt', '.hidden.txt', 'missing/x.txt', 'outlink/x.txt'].includes(target as string)
    )
  )('clone from MinIO to target_path %j is %d (%s)', async (target, status, reason) => {
    await put(source, 't.txt', Buffer.from('t'));
    const reply = await env.post('clone', {
      object_bucket: source,
      object_key: 't.txt',
      target_path: target
    });
    expectError(reply, status, reason);
  });

  test('a user without rights on the source bucket gets 403', async () => {
    await put('forbidden-src', 'f.txt', Buffer.from('forbidden'));
    await put('archive', 'allowed/ok.txt', Buffer.from('ok'));
    const credentials = await assumeRole(minio, {
      Version: '2012-10-17',
      Statement: [
        {
          Effect: 'Allow',
          Action: ['s3:*'],
          Resource: ['arn:aws:s3:::archive', 'arn:aws:s3:::archive/*']
        }
      ]
    });
    // Temporary credentials need a session token, which only the SDK's default chain reads.
    const saved = {
      AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID,
      AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY,
      AWS_SESSION_TOKEN: process.env.AWS_SESSION_TOKEN
    };
    process.env.AWS_ACCESS_KEY_ID = credentials.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = credentials.secretAccessKey;
    process.env.AWS_SESSION_TOKEN = credentials.sessionToken;
    try {
      const limited = await startEnv(
        settingsFor(minio, {
          object_access_key_id: undefined,
          object_secret_access_key: undefined
        })
      );
      const denied = await limited.post('clone', {
        object_bucket: 'forbidden-src',
        object_key: 'f.txt'
      });
      expectError(denied, 403, 'AccessDenied');
      expect(denied.json.message).not.toContain(credentials.accessKeyId);
      expect(listRoot(limited)).toEqual([]);
      // The same user may read the bucket the policy allows.
      const allowed = await limited.post('clone', {
        object_bucket: 'archive',
        object_key: 'allowed/ok.txt'
      });
      expect(allowed.status).toBe(200);
      expect(readFileSync(join(limited.root, 'ok.txt'), 'utf8')).toBe('ok');
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  test('wrong credentials make the store unusable: 503 with the reason', async () => {
    const wrong = await startEnv(settingsFor(minio, { object_secret_access_key: 'wrong-secret' }));
    const deadline = Date.now() + 30_000;
    while (wrong.archiving.features().features.store_valid && Date.now() < deadline) {
      await new Promise(resolve => setTimeout(resolve, 100));
    }
    const reply = await wrong.post('clone', { object_bucket: source, object_key: 't.txt' });
    expectError(reply, 503, 'store unavailable');
    expect(reply.json.message).toMatch(/secret access key|signature/i);
    expect(reply.json.message).not.toContain('wrong-secret');
  });

  // Last: it stops MinIO.
  test('an unreachable store is 502', async () => {
    await flushed(env.archiving);
    await minio.stop();
    const reply = await env.post('clone', { object_bucket: source, object_key: 't.txt' });
    expectError(reply, 502);
    expect(reply.json.message).not.toContain(minio.secretAccessKey);
  });
});
