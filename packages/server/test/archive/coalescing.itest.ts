/**
 * `archive_min_interval_seconds`, end to end: the real gateway (`jupyter-store lab`) archiving to
 * a real MinIO while papermill runs a notebook of quick cells (it writes the output notebook
 * after every cell), with coalescing on and off, and a gateway killed while the newest state of
 * a burst waits for the end of its interval.
 */
import { GetObjectCommand, ListObjectVersionsCommand } from '@aws-sdk/client-s3';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ArchiveJournal } from '../../src/archive/journal';
import { startArchivingGateway, useObjectServer } from '../support/archivingLab';
import { ecosystemBin } from '../support/ecosystem';
import { killUpstreamGroup, type IGatewayProcess } from '../support/gateway';
import { createVersionedBucket } from '../support/objectServers';
import { pythonNotebookFile } from '../support/notebookSaves';

jest.setTimeout(240_000);

const run = promisify(execFile);

const gateways: IGatewayProcess[] = [];
const scratch: string[] = [];

// Declared before MinIO's teardown, so that the gateways stop while it still runs.
afterAll(async () => {
  for (const gateway of gateways.splice(0)) await gateway.stop('SIGTERM', 15_000);
  for (const dir of scratch.splice(0)) await rm(dir, { recursive: true, force: true });
});

const shared = useObjectServer();

/** Cells in the papermill notebook: each sleeps longer than the watcher's settling time. */
const CELLS = 15;

/** A notebook of `CELLS` quick code cells, as nbformat writes it. */
function quickCells(): string {
  const cells = Array.from({ length: CELLS }, (_, i) => ({
    cell_type: 'code',
    execution_count: null,
    id: `cell-${i}`,
    metadata: {},
    outputs: [],
    source: `import time\ntime.sleep(0.5)\nprint(${i})`
  }));
  return pythonNotebookFile(cells);
}

async function scratchDir(name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `coalescing-${name}-`));
  scratch.push(dir);
  return dir;
}

/** A gateway archiving `rootDir` to `bucket` of the shared MinIO, with `interval` seconds. */
async function startArchiving(
  rootDir: string,
  bucket: string,
  interval: number,
  options: { journalDir: string; tmp?: string }
): Promise<IGatewayProcess> {
  const gateway = await startArchivingGateway(shared.server, bucket, {
    rootDir,
    ...(options.tmp ? { env: { TMPDIR: options.tmp } } : {}),
    args: [
      `--StoreSettings.journal_dir=${options.journalDir}`,
      `--StoreSettings.archive_min_interval_seconds=${interval}`,
      '--StoreSettings.archive_retry_max_seconds=2'
    ]
  });
  gateways.push(gateway);
  await eventually('the watcher and the first scan', async () => {
    const { watcher, scan } = (await storeInfo(gateway)).archive.observation;
    return watcher.mode === 'inotify' && scan.last_completed_at ? true : undefined;
  });
  return gateway;
}

/** The store API's status, with the token. */
async function storeInfo(gateway: IGatewayProcess): Promise<{
  archive: {
    pending: number;
    archived: number;
    coalesced?: number;
    observation: {
      watcher: { mode: string };
      scan: { last_completed_at: string | null };
    };
  };
}> {
  const response = await fetch(gateway.url('api/store'), {
    headers: { Authorization: `token ${gateway.token}` }
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Awaited<ReturnType<typeof storeInfo>>;
}

/** Poll until `check` returns a value other than undefined. */
async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 30_000
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await sleep(100);
  }
  throw new Error(`${what} did not happen in ${timeoutMs} ms${last ? `: ${String(last)}` : ''}`);
}

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms));

/** The versions of a key, oldest first: their bytes and when the bucket took them. */
async function versions(bucket: string, key: string): Promise<{ at: number; body: Buffer }[]> {
  const listed = await shared.s3.send(
    new ListObjectVersionsCommand({ Bucket: bucket, Prefix: key })
  );
  const found = (listed.Versions ?? []).filter(version => version.Key === key);
  // Listed newest first.
  const result: { at: number; body: Buffer }[] = [];
  for (const version of found.reverse()) {
    const object = await shared.s3.send(
      new GetObjectCommand({ Bucket: bucket, Key: key, VersionId: version.VersionId })
    );
    result.push({
      at: version.LastModified!.getTime(),
      body: Buffer.from(await object.Body!.transformToByteArray())
    });
  }
  return result;
}

/** Wait until the newest version of `path` holds exactly `expected`; returns the versions. */
function newestIs(bucket: string, path: string, expected: Buffer, timeoutMs?: number) {
  return eventually(
    `the newest version of ${path} to be what is on disk`,
    async () => {
      const found = await versions(bucket, `workspace/${path}`);
      return found.at(-1)?.body.equals(expected) ? found : undefined;
    },
    timeoutMs
  );
}

/** Run papermill on a notebook of quick cells in `root`; returns the output's final bytes. */
async function runPapermill(gateway: IGatewayProcess, root: string): Promise<Buffer> {
  await writeFile(join(root, 'input.ipynb'), quickCells());
  await run(
    ecosystemBin('papermill'),
    ['input.ipynb', 'output.ipynb', '--kernel', 'python3', '--log-level', 'WARNING'],
    {
      cwd: root,
      env: {
        ...process.env,
        HOME: gateway.state.home,
        JUPYTER_CONFIG_DIR: gateway.state.config,
        JUPYTER_DATA_DIR: gateway.state.data,
        JUPYTER_RUNTIME_DIR: gateway.state.runtime
      },
      timeout: 120_000
    }
  );
  const onDisk = await readFile(join(root, 'output.ipynb'));
  expect(onDisk.toString('utf8')).toContain('"papermill"');
  return onDisk;
}

describe('archive_min_interval_seconds with papermill', () => {
  /** Versions of the output per interval, printed once for the report. */
  const counts: Record<string, number> = {};
  afterAll(() => {
    console.log(`papermill versions by archive_min_interval_seconds: ${JSON.stringify(counts)}`);
  });

  test.each([0, 2])(
    'interval %i s: the final file is the newest version, byte for byte',
    async interval => {
      const root = await scratchDir('root');
      const bucket = `coalescing-${randomUUID().slice(0, 8)}`;
      await createVersionedBucket(shared.server, bucket);
      const gateway = await startArchiving(root, bucket, interval, {
        journalDir: await scratchDir('journal')
      });
      const onDisk = await runPapermill(gateway, root);
      const found = await newestIs(bucket, 'output.ipynb', onDisk);
      // Nothing more arrives after the final state.
      await sleep(interval * 1000 + 1500);
      const settled = await versions(bucket, 'workspace/output.ipynb');
      expect(settled).toHaveLength(found.length);
      expect(settled.at(-1)!.body.equals(onDisk)).toBe(true);
      for (let i = 1; i < settled.length; i++) {
        expect(settled[i].body.equals(settled[i - 1].body)).toBe(false);
      }
      counts[interval] = settled.length;
      const status = (await storeInfo(gateway)).archive;
      if (interval === 0) {
        expect(status.coalesced).toBe(0);
        // Every cell's state is archived: each cell sleeps longer than the watcher settles.
        expect(settled.length).toBeGreaterThanOrEqual(CELLS);
      } else {
        // At most one version per interval (the bucket's clock, to a second), the newest state.
        expect(settled.length).toBeLessThan(CELLS);
        expect(settled.length).toBeLessThan(counts[0]);
        // The states in between were journalled and skipped, not lost on the way.
        expect(status.coalesced).toBeGreaterThan(0);
        expect(status.pending).toBe(0);
        for (let i = 1; i < settled.length; i++) {
          expect(settled[i].at - settled[i - 1].at).toBeGreaterThanOrEqual(interval * 1000 - 1000);
        }
      }
    }
  );
});

describe('archive_min_interval_seconds and a crash', () => {
  test('SIGKILL while the newest state waits for its interval: the restart archives it', async () => {
    const work = await scratchDir('kill');
    const root = join(work, 'root');
    const journalDir = join(work, 'journal');
    // After a SIGKILL nobody removes the gateway's temporary files: keep them here.
    const tmp = join(work, 'tmp');
    for (const dir of [root, tmp]) await mkdir(dir, { recursive: true });
    const bucket = `coalescing-${randomUUID().slice(0, 8)}`;
    await createVersionedBucket(shared.server, bucket);
    const first = await startArchiving(root, bucket, 600, { journalDir, tmp });

    const states = [0, 1, 2].map(i => Buffer.from(`{"cells": [], "state": ${i}}\n`));
    await writeFile(join(root, 'burst.ipynb'), states[0]);
    await newestIs(bucket, 'burst.ipynb', states[0]);
    await writeFile(join(root, 'burst.ipynb'), states[1]);
    await eventually('the second state to be journalled', async () =>
      (await ArchiveJournal.pendingCount(journalDir)) === 1 ? true : undefined
    );
    await writeFile(join(root, 'burst.ipynb'), states[2]);
    await eventually('the third state to be journalled', async () =>
      (await ArchiveJournal.pendingCount(journalDir)) === 2 ? true : undefined
    );
    // One save waits (the newest); the one it superseded stays journalled with it.
    expect((await storeInfo(first)).archive.pending).toBe(1);
    await sleep(500);
    expect(await versions(bucket, 'workspace/burst.ipynb')).toHaveLength(1);

    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    killUpstreamGroup(first);
    gateways.splice(gateways.indexOf(first), 1);
    expect(await ArchiveJournal.pendingCount(journalDir)).toBe(2);

    await startArchiving(root, bucket, 600, { journalDir, tmp });
    const found = await newestIs(bucket, 'burst.ipynb', states[2]);
    expect(found.map(version => version.body.toString('utf8'))).toEqual([
      states[0].toString('utf8'),
      states[2].toString('utf8')
    ]);
    await eventually('the journal to be empty', async () =>
      (await ArchiveJournal.pendingCount(journalDir)) === 0 ? true : undefined
    );
  });
});

describe('archive_min_interval_seconds and saves through the contents API', () => {
  test('a burst of saves: the first and the last are archived, and the journal empties', async () => {
    const root = await scratchDir('root');
    const journalDir = await scratchDir('journal');
    const bucket = `coalescing-${randomUUID().slice(0, 8)}`;
    await createVersionedBucket(shared.server, bucket);
    const gateway = await startArchiving(root, bucket, 2, { journalDir });
    const saves = 10;
    for (let i = 0; i < saves; i++) {
      const response = await fetch(gateway.url('api/contents/saved.ipynb'), {
        method: 'PUT',
        headers: { Authorization: `token ${gateway.token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({
          type: 'notebook',
          format: 'json',
          content: {
            cells: [],
            metadata: { save: i },
            nbformat: 4,
            nbformat_minor: 5
          }
        })
      });
      // Created, then saved over.
      expect(response.status).toBe(i === 0 ? 201 : 200);
    }
    const onDisk = await readFile(join(root, 'saved.ipynb'));
    expect(JSON.parse(onDisk.toString('utf8')).metadata.save).toBe(saves - 1);
    const found = await newestIs(bucket, 'saved.ipynb', onDisk);
    await eventually('the journal to be empty', async () =>
      (await ArchiveJournal.pendingCount(journalDir)) === 0 ? true : undefined
    );
    const settled = await versions(bucket, 'workspace/saved.ipynb');
    expect(settled).toHaveLength(found.length);
    expect(settled.length).toBeLessThan(saves);
    expect(JSON.parse(settled[0].body.toString('utf8')).metadata.save).toBe(0);
  });
});
