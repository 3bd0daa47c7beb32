/**
 * File-system escapes, against the real `jupyter-store lab` (with its Jupyter), archiving to the
 * embedded store: one test per finding.
 *
 * - a chunked upload (chunk 2 or -1) to a symlink that leads to a missing file outside the root
 *   must create nothing outside, and answer a 4xx;
 * - saves (files, notebooks with their checkpoints, chunks, directories) and reads while another
 *   process swaps a directory of the root with a symlink to an outside directory, again and
 *   again: nothing outside is created or changed, and nothing from outside is served or
 *   archived;
 * - fs-clones while a directory of `fs_cloning_basedir` is swapped with a symlink to an outside
 *   directory, and the target directory in the root too: the outside file is never copied in,
 *   and nothing is created outside;
 * - a hard link inside `fs_cloning_basedir` to a file outside it is refused (403 `hard link`),
 *   and nothing is copied.
 *
 * Every race is bounded: a fixed number of requests, stopped after {@link RACE_MS} at most, and
 * the swapping process stops at the same deadline.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import {
  link,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rm,
  symlink,
  writeFile
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { labDefaults, startGatewayProcess, type IGatewayProcess } from '../support/gateway';

jest.setTimeout(240_000);

/** The longest any race loop runs. */
const RACE_MS = 20_000;
/** Requests in flight at once during a race. */
const CONCURRENCY = 8;
/** The marker of every file outside the root and the base: it must never show up inside. */
const SECRET = 'SECRET-outside-the-root-4f1c9a';

let gateway: IGatewayProcess;
/** Holds root/, outside/, base/, base-outside/, a hard-link source and the store. */
let work: string;
let root: string;
/** Outside the root and the base: `secret.txt`; the target of the root's swapped directory. */
let outside: string;
/** fs_cloning_basedir: `shared/data.txt`, swapped with `base-outside/`. */
let base: string;
/** Outside the base: `data.txt` holding the secret, under the same name as the inside one. */
let baseOutside: string;

beforeAll(async () => {
  work = await realpath(await mkdtemp(join(tmpdir(), 'races-itest-')));
  root = join(work, 'root');
  outside = join(work, 'outside');
  base = join(work, 'base');
  baseOutside = join(work, 'base-outside');
  const dirs = [join(root, 'target'), join(root, 'clones'), outside, join(base, 'shared')];
  for (const dir of [...dirs, baseOutside]) {
    await mkdir(dir, { recursive: true });
  }
  await writeFile(join(outside, 'secret.txt'), `${SECRET} in outside/\n`);
  await writeFile(join(base, 'shared', 'data.txt'), 'shared data inside the base\n');
  await writeFile(join(baseOutside, 'data.txt'), `${SECRET} in base-outside/\n`);
  gateway = await startGatewayProcess({
    rootDir: root,
    args: [
      ...labDefaults(),
      `--StoreSettings.fs_cloning_basedir=${base}`,
      `--StoreSettings.local_store_dir=${join(work, 'objects')}`,
      `--StoreSettings.journal_dir=${join(work, 'journal')}`
    ]
  });
});

afterAll(async () => {
  await gateway?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

interface IReply {
  status: number;
  text: string;
}

async function request(method: string, relative: string, body?: unknown): Promise<IReply> {
  const response = await fetch(gateway.url(relative), {
    method,
    headers: { Authorization: `token ${gateway.token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000)
  });
  return { status: response.status, text: await response.text() };
}

const contents = (apiPath: string): string =>
  `api/contents/${apiPath.split('/').map(encodeURIComponent).join('/')}`;

/** Every regular file below `dir` (symlinks not followed), relative path → bytes. */
async function filesBelow(dir: string): Promise<Map<string, Buffer>> {
  const found = new Map<string, Buffer>();
  const walk = async (relative: string): Promise<void> => {
    for (const entry of await readdir(join(dir, relative), { withFileTypes: true })) {
      const rel = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) await walk(rel);
      else if (entry.isFile()) {
        // The archive may be renaming its temporary files meanwhile.
        const bytes = await readFile(join(dir, rel)).catch(() => undefined);
        if (bytes) found.set(rel, bytes);
      }
    }
  };
  if (existsSync(dir)) await walk('');
  return found;
}

/** Names and bytes of a directory tree, to compare before and after. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [rel, bytes] of await filesBelow(dir)) out[rel] = bytes.toString('base64');
  return out;
}

/** The files below `dir` whose bytes contain the secret. */
async function filesWithSecret(dir: string): Promise<string[]> {
  const hits: string[] = [];
  for (const [rel, bytes] of await filesBelow(dir)) if (bytes.includes(SECRET)) hits.push(rel);
  return hits;
}

/**
 * Another process that swaps `dir` with a symlink to `linkTarget` (rename the directory away,
 * put the link in its place, remove the link, rename the directory back), the directory being
 * in place for 2 ms and the link for 1 ms each time, so that requests see both,
 * until the stop file appears, `maxSwaps` swaps are done or `RACE_MS` has passed. It leaves the
 * directory in place and prints how many swaps it made.
 */
class Swapper {
  constructor(dir: string, linkTarget: string, maxSwaps = 1_000_000) {
    this.stopFile = `${dir}.stop`;
    const script = `
      const fs = require('node:fs');
      const [dir, target, stop, max, ms] = process.argv.slice(1);
      const deadline = Date.now() + Number(ms);
      let swaps = 0;
      const pause = new Int32Array(new SharedArrayBuffer(4));
      for (; swaps < Number(max) && Date.now() < deadline && !fs.existsSync(stop); swaps++) {
        Atomics.wait(pause, 0, 0, 2);
        fs.renameSync(dir, dir + '.real');
        fs.symlinkSync(target, dir);
        Atomics.wait(pause, 0, 0, 1);
        fs.unlinkSync(dir);
        fs.renameSync(dir + '.real', dir);
      }
      process.stdout.write(String(swaps));
    `;
    this.child = spawn(
      process.execPath,
      ['-e', script, dir, linkTarget, this.stopFile, String(maxSwaps), String(RACE_MS)],
      { stdio: ['ignore', 'pipe', 'pipe'] }
    );
    let out = '';
    let err = '';
    this.child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
    this.child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()));
    this.done = new Promise((resolve, reject) =>
      this.child.once('exit', code =>
        code === 0 ? resolve(Number(out)) : reject(new Error(`swapper failed (${code}): ${err}`))
      )
    );
  }

  /** Stop swapping; resolves with the number of swaps made. */
  async stop(): Promise<number> {
    await writeFile(this.stopFile, '');
    try {
      return await this.done;
    } finally {
      await rm(this.stopFile, { force: true });
    }
  }

  private readonly stopFile: string;
  private readonly child: ChildProcess;
  private readonly done: Promise<number>;
}

/**
 * Run `count` operations, `CONCURRENCY` at a time, stopping early at the race deadline.
 * Returns how many ran.
 */
async function race(count: number, operation: (index: number) => Promise<void>): Promise<number> {
  const deadline = Date.now() + RACE_MS;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count && Date.now() < deadline) await operation(next++);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return next;
}

function tally(statuses: number[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

const notebook = (marker: string) => ({
  cells: [{ cell_type: 'markdown', id: 'c1', metadata: {}, source: marker }],
  metadata: {},
  nbformat: 4,
  nbformat_minor: 5
});

test('a chunk to a dangling symlink that leads outside creates nothing there (4xx)', async () => {
  const before = await snapshot(outside);
  await symlink(join(outside, 'created-by-chunk.bin'), join(root, 'upload.bin'));
  const answers: Array<[string, number]> = [];
  for (const chunk of [2, -1]) {
    const reply = await request('PUT', contents('upload.bin'), {
      type: 'file',
      format: 'base64',
      chunk,
      content: Buffer.from(`chunk ${chunk}`).toString('base64')
    });
    answers.push([`chunk ${chunk}`, reply.status]);
    expect(JSON.parse(reply.text)).toMatchObject({ reason: 'dangling symlink' });
  }
  expect(existsSync(join(outside, 'created-by-chunk.bin'))).toBe(false);
  expect(await snapshot(outside)).toEqual(before);
  // A whole save through a dangling link is refused the same way (it used to replace the link).
  await symlink('../outside/created-by-save.txt', join(root, 'saved.txt'));
  const save = await request('PUT', contents('saved.txt'), {
    type: 'file',
    format: 'text',
    content: 'a whole save'
  });
  answers.push(['save', save.status]);
  expect(answers).toEqual([
    ['chunk 2', 400],
    ['chunk -1', 400],
    ['save', 400]
  ]);
  expect(JSON.parse(save.text)).toMatchObject({ reason: 'dangling symlink' });
  expect(await snapshot(outside)).toEqual(before);
  expect((await lstat(join(root, 'upload.bin'))).isSymbolicLink()).toBe(true);
  expect((await lstat(join(root, 'saved.txt'))).isSymbolicLink()).toBe(true);
  await rm(join(root, 'upload.bin'));
  await rm(join(root, 'saved.txt'));
});

test('saves and reads while a directory is swapped with a link outside: nothing escapes', async () => {
  const before = await snapshot(outside);
  const statuses: number[] = [];
  const leaks: string[] = [];
  const swapper = new Swapper(join(root, 'target'), outside);
  let ran: number;
  try {
    ran = await race(1500, async index => {
      const kind = index % 6;
      let reply: IReply;
      if (kind === 0 || kind === 1) {
        reply = await request('PUT', contents(`target/file-${index}.txt`), {
          type: 'file',
          format: 'text',
          content: `saved ${index}`
        });
      } else if (kind === 2) {
        reply = await request('PUT', contents(`target/nb-${index}.ipynb`), {
          type: 'notebook',
          content: notebook(`saved ${index}`)
        });
      } else if (kind === 3) {
        for (const chunk of [1, 2, -1]) {
          reply = await request('PUT', contents(`target/chunked-${index}.bin`), {
            type: 'file',
            format: 'base64',
            chunk,
            content: Buffer.from(`part ${chunk};`).toString('base64')
          });
          statuses.push(reply.status);
        }
        reply = await request('PUT', contents(`target/dir-${index}`), { type: 'directory' });
      } else if (kind === 4) {
        reply = await request('GET', contents('target/secret.txt'));
      } else {
        reply = await request('GET', contents('target'));
        // A listing never names what is in the outside directory.
        if (reply.status === 200 && reply.text.includes('"secret.txt"')) {
          leaks.push(`${index}: listed ${reply.text.slice(0, 200)}`);
        }
      }
      statuses.push(reply.status);
      if (reply.text.includes(SECRET)) {
        leaks.push(`${index}: ${reply.status} ${reply.text.slice(0, 200)}`);
      }
    });
  } finally {
    const swaps = await swapper.stop();
    expect(swaps).toBeGreaterThan(0);
  }
  expect(ran).toBeGreaterThanOrEqual(100);
  // Nothing was created or changed outside, nothing from outside was served …
  expect(await snapshot(outside)).toEqual(before);
  expect(leaks).toEqual([]);
  // … and what was saved is inside, in the real directory.
  const counts = tally(statuses);
  expect(Object.keys(counts).filter(status => Number(status) >= 500)).toEqual([]);
  expect((counts[200] ?? 0) + (counts[201] ?? 0)).toBeGreaterThan(0);
  expect(await filesWithSecret(root)).toEqual([]);
  // The archive never read a file from outside either.
  const answer = await request('GET', contents('target/file-0.txt'));
  expect(answer.status).toBeLessThan(500);
  expect(await filesWithSecret(join(work, 'objects'))).toEqual([]);
  expect(await filesWithSecret(join(work, 'journal'))).toEqual([]);
});

test('fs-clones while the base and the root are swapped with links outside: nothing escapes', async () => {
  const before = await snapshot(outside);
  const beforeBase = await snapshot(baseOutside);
  const statuses: number[] = [];
  const inBase = new Swapper(join(base, 'shared'), baseOutside);
  const inRoot = new Swapper(join(root, 'target'), outside);
  let ran: number;
  try {
    ran = await race(800, async index => {
      const reply = await request('POST', 'api/store/fs-clone', {
        relpath: 'shared/data.txt',
        target_path: index % 2 === 0 ? `clones/copy-${index}.txt` : `target/copy-${index}.txt`
      });
      statuses.push(reply.status);
    });
  } finally {
    const swaps = [await inBase.stop(), await inRoot.stop()];
    expect(swaps.every(count => count > 0)).toBe(true);
  }
  expect(ran).toBeGreaterThanOrEqual(50);
  expect(await filesWithSecret(root)).toEqual([]);
  expect(await snapshot(outside)).toEqual(before);
  expect(await snapshot(baseOutside)).toEqual(beforeBase);
  const counts = tally(statuses);
  expect(Object.keys(counts).filter(status => Number(status) >= 500)).toEqual([]);
  expect(counts[200] ?? 0).toBeGreaterThan(0);
  for (const [, bytes] of await filesBelow(join(root, 'clones'))) {
    expect(['', 'shared data inside the base\n']).toContain(bytes.toString());
  }
  expect(await filesWithSecret(join(work, 'objects'))).toEqual([]);
}, 120_000);

test('a hard link inside fs_cloning_basedir to a file outside it is refused: 403, nothing copied', async () => {
  const source = join(work, 'hard-link-source.txt');
  await writeFile(source, `${SECRET} hard-linked\n`);
  await link(source, join(base, 'linked.txt'));
  const reply = await request('POST', 'api/store/fs-clone', {
    relpath: 'linked.txt',
    target_path: 'linked-copy.txt'
  });
  expect(reply.status).toBe(403);
  expect(JSON.parse(reply.text)).toMatchObject({ reason: 'hard link' });
  expect(existsSync(join(root, 'linked-copy.txt'))).toBe(false);
  expect(await filesWithSecret(root)).toEqual([]);
  // A file with one link is still copied.
  const single = await request('POST', 'api/store/fs-clone', {
    relpath: 'shared/data.txt',
    target_path: 'single-link.txt'
  });
  expect(single.status).toBe(200);
  expect(await readFile(join(root, 'single-link.txt'), 'utf8')).toBe(
    'shared data inside the base\n'
  );
});
