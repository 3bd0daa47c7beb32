/**
 * Fault tests of the archive, end to end: the real `jupyter-store lab` CLI in front of a real
 * JupyterLab, saving through the gateway's contents API, archiving to a real MinIO (and
 * versitygw) that the tests stop, restart, refuse credentials on, or outlive with a SIGKILL.
 *
 * What every test checks in the bucket: each save of a path arrives exactly once, in save order
 * (the order of the version listing, which S3 returns newest first; LastModified has one-second
 * resolution on some servers, so order is read from the save number embedded in each body), and
 * byte-identical to the file on disk right after that save was answered.
 */
import {
  GetObjectCommand,
  ListObjectVersionsCommand,
  type ObjectVersion,
  type S3Client
} from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import {
  link,
  mkdir,
  mkdtemp,
  readFile,
  rename,
  rm,
  stat,
  truncate,
  utimes,
  writeFile
} from 'node:fs/promises';
import { DatabaseSync } from 'node:sqlite';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ArchiveJournal } from '../../src/archive/journal';
import {
  startArchivingGateway,
  useObjectServer,
  type IArchivingGatewayOptions
} from '../support/archivingLab';
import { killUpstreamGroup, stopGatewayAndJupyter, type IGatewayProcess } from '../support/gateway';
import { createVersionedBucket, type IObjectServer } from '../support/objectServers';

jest.setTimeout(240_000);

const PREFIX = 'workspace';

/** What each save carries in its notebook metadata: which save of which path it is. */
interface ISaveLabel {
  path: string;
  /** Position in this path's save order (0, 1, …), or -1 for an unordered (concurrent) save. */
  n: number;
  /** Unique per save. */
  id: string;
}

interface ISaveResult {
  label: ISaveLabel;
  status: number;
  /** Round trip of the PUT, response body included (ms). */
  ms: number;
  /** performance.now() when the request was sent and when the response was complete. */
  sentAt: number;
  answeredAt: number;
  /** The file's bytes read right after the response (sequential saves only). */
  disk?: Buffer;
}

/** The measured figures, printed once at the end for the report. */
const figures: Record<string, unknown> = {};
afterAll(() => {
  console.log(`archive fault figures: ${JSON.stringify(figures)}`);
});

function newLabel(path: string, n: number): ISaveLabel {
  return { path, n, id: randomBytes(6).toString('hex') };
}

/** A notebook of a few KB whose content says which save it is. */
function notebookModel(label: ISaveLabel): unknown {
  return {
    type: 'notebook',
    content: {
      cells: [
        {
          cell_type: 'markdown',
          id: `m-${label.id}`,
          metadata: {},
          source: `Save ${label.n} of ${label.path} (${label.id})`
        },
        {
          cell_type: 'code',
          id: `c-${label.id}`,
          metadata: {},
          execution_count: null,
          outputs: [],
          source: `# ${'filler '.repeat(300)}\nprint(${JSON.stringify(label.id)})`
        }
      ],
      metadata: { faults: label },
      nbformat: 4,
      nbformat_minor: 5
    }
  };
}

function contentsUrl(gateway: IGatewayProcess, path: string): string {
  return gateway.url(`api/contents/${path.split('/').map(encodeURIComponent).join('/')}`);
}

/**
 * Save through the gateway; with `readDisk`, read the file right after the answer (only sound
 * when nothing else writes this path meanwhile).
 */
async function save(
  gateway: IGatewayProcess,
  label: ISaveLabel,
  readDisk: boolean
): Promise<ISaveResult> {
  const body = JSON.stringify(notebookModel(label));
  const sentAt = performance.now();
  const response = await fetch(contentsUrl(gateway, label.path), {
    method: 'PUT',
    headers: { Authorization: `token ${gateway.token}`, 'Content-Type': 'application/json' },
    body
  });
  const text = await response.text();
  const answeredAt = performance.now();
  if (response.status !== 200 && response.status !== 201) {
    throw new Error(`PUT ${label.path} (save ${label.n}) answered ${response.status}: ${text}`);
  }
  const disk = readDisk ? await readFile(join(gateway.rootDir, label.path)) : undefined;
  return { label, status: response.status, ms: answeredAt - sentAt, sentAt, answeredAt, disk };
}

/** Nearest-rank percentile. */
function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
}

const round = (ms: number): number => Math.round(ms * 10) / 10;

function latencySummary(results: readonly ISaveResult[]) {
  const ms = results.map(result => result.ms);
  return {
    count: ms.length,
    median: round(percentile(ms, 50)),
    p90: round(percentile(ms, 90)),
    max: round(Math.max(...ms))
  };
}

const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms));

async function waitUntil(condition: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return true;
    await sleep(250);
  }
  return condition();
}

/** Run `tasks` with at most `limit` at once; rejects with the first failure. */
async function runLimited<T>(limit: number, tasks: readonly (() => Promise<T>)[]): Promise<T[]> {
  const results: T[] = new Array<T>(tasks.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < tasks.length) {
      const index = next++;
      results[index] = await tasks[index]();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  return results;
}

/** Every version below `prefix`, grouped by key, each group in listing order (newest first). */
async function listVersions(
  client: S3Client,
  bucket: string,
  prefix = `${PREFIX}/`
): Promise<Map<string, ObjectVersion[]>> {
  const byKey = new Map<string, ObjectVersion[]>();
  let keyMarker: string | undefined;
  let versionIdMarker: string | undefined;
  while (true) {
    const page = await client.send(
      new ListObjectVersionsCommand({
        Bucket: bucket,
        Prefix: prefix,
        KeyMarker: keyMarker,
        VersionIdMarker: versionIdMarker
      }),
      { abortSignal: AbortSignal.timeout(15_000) }
    );
    for (const version of page.Versions ?? []) {
      const key = version.Key ?? '';
      byKey.set(key, [...(byKey.get(key) ?? []), version]);
    }
    if (!page.IsTruncated || page.NextKeyMarker === undefined) return byKey;
    keyMarker = page.NextKeyMarker;
    versionIdMarker = page.NextVersionIdMarker;
  }
}

async function getVersion(
  client: S3Client,
  bucket: string,
  key: string,
  versionId: string | undefined
): Promise<Buffer> {
  const output = await client.send(
    new GetObjectCommand({ Bucket: bucket, Key: key, VersionId: versionId }),
    { abortSignal: AbortSignal.timeout(15_000) }
  );
  return Buffer.from(await output.Body!.transformToByteArray());
}

/** The archived bodies of `key`, oldest first (the reverse of the newest-first listing). */
async function archivedBodies(
  client: S3Client,
  bucket: string,
  key: string,
  versions: readonly ObjectVersion[]
): Promise<Buffer[]> {
  const oldestFirst = [...versions].reverse();
  return runLimited(
    8,
    oldestFirst.map(version => () => getVersion(client, bucket, key, version.VersionId))
  );
}

function labelOf(body: Buffer): string {
  try {
    const notebook = JSON.parse(body.toString('utf8')) as { metadata?: { faults?: ISaveLabel } };
    const label = notebook.metadata?.faults;
    return label ? `${label.path}#${label.n}:${label.id}` : '<no label>';
  } catch {
    return '<not JSON>';
  }
}

/** Wait (bounded) until every key has at least its expected number of versions. */
async function waitForVersions(
  client: S3Client,
  bucket: string,
  expected: ReadonlyMap<string, number>,
  timeoutMs: number
): Promise<boolean> {
  return waitUntil(async () => {
    const listed = await listVersions(client, bucket).catch(() => new Map());
    return [...expected].every(([key, count]) => (listed.get(key)?.length ?? 0) >= count);
  }, timeoutMs);
}

/**
 * Check that each path's archive holds exactly its saves, oldest first, byte for byte as they
 * were on disk. Labels are compared first: a missing, duplicated or reordered save then shows
 * by name instead of as a byte diff.
 */
async function expectArchivedInOrder(
  client: S3Client,
  bucket: string,
  savesByPath: ReadonlyMap<string, readonly ISaveResult[]>
): Promise<void> {
  const listed = await listVersions(client, bucket);
  for (const [path, saves] of savesByPath) {
    const key = `${PREFIX}/${path}`;
    const bodies = await archivedBodies(client, bucket, key, listed.get(key) ?? []);
    const expected = saves.map(result => result.disk!);
    expect({ key, labels: bodies.map(labelOf) }).toEqual({ key, labels: expected.map(labelOf) });
    expect(bodies.map(body => body.toString('utf8'))).toEqual(
      expected.map(body => body.toString('utf8'))
    );
  }
}

/** Records in the journal not yet archived. */
function pendingRecords(journalDir: string): Promise<number> {
  return ArchiveJournal.pendingCount(journalDir);
}

function defaultJournalDir(gateway: IGatewayProcess): string {
  return join(gateway.state.data, 'jupyter-store', 'journal');
}

interface ILogLine {
  level?: string;
  msg?: string;
  [field: string]: unknown;
}

/** The gateway's JSON log lines (anything else on stderr is skipped). */
function logLines(gateway: IGatewayProcess): ILogLine[] {
  const lines: ILogLine[] = [];
  for (const line of gateway.stderr().split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line) as ILogLine);
    } catch {
      // a line cut short
    }
  }
  return lines;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Gateways started by the current test; stopped (and their Jupyter killed) after it. */
const gateways: IGatewayProcess[] = [];
/** Directories made by the current test; removed after it. */
const scratchDirs: string[] = [];

/**
 * A gateway archiving to `bucket` (see {@link startArchivingGateway}) that retries soon after an
 * outage; stopped after the test.
 */
async function startTestGateway(
  server: IObjectServer,
  bucket: string,
  options: IArchivingGatewayOptions = {}
): Promise<IGatewayProcess> {
  const gateway = await startArchivingGateway(server, bucket, {
    ...options,
    args: ['--StoreSettings.archive_retry_max_seconds=2', ...(options.args ?? [])]
  });
  gateways.push(gateway);
  return gateway;
}

async function cleanUpTest(): Promise<void> {
  for (const gateway of gateways.splice(0)) await stopGatewayAndJupyter(gateway, 15_000);
  for (const dir of scratchDirs.splice(0)) await rm(dir, { recursive: true, force: true });
}

async function scratchDir(name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `faults-${name}-`));
  scratchDirs.push(dir);
  return dir;
}

/**
 * Storage goes away while the user keeps saving, then comes back: saves stay as fast as before
 * (the journal is local) and every one of them arrives, in order, once.
 */
async function outageScenario(
  server: IObjectServer,
  client: S3Client,
  bucket: string,
  counts: { warmUp: number; baseline: number; outage: number; paths: number }
): Promise<Record<string, unknown>> {
  await createVersionedBucket(server, bucket);
  const gateway = await startTestGateway(server, bucket);
  const paths = Array.from({ length: counts.paths }, (_, i) => `outage-${i}.ipynb`);
  const savesByPath = new Map<string, ISaveResult[]>(paths.map(path => [path, []]));
  let index = 0;
  /** The next save, paths interleaved, one at a time. */
  const saveNext = async (): Promise<ISaveResult> => {
    const path = paths[index++ % paths.length];
    const saves = savesByPath.get(path)!;
    const result = await save(gateway, newLabel(path, saves.length), true);
    saves.push(result);
    return result;
  };
  const expectedCounts = (): Map<string, number> =>
    new Map(paths.map(path => [`${PREFIX}/${path}`, savesByPath.get(path)!.length]));

  for (let i = 0; i < counts.warmUp; i++) await saveNext();
  const baseline: ISaveResult[] = [];
  for (let i = 0; i < counts.baseline; i++) baseline.push(await saveNext());
  const journalDir = defaultJournalDir(gateway);
  // Archiving works while storage is up: everything so far arrives before the outage starts.
  expect(await waitForVersions(client, bucket, expectedCounts(), 30_000)).toBe(true);
  expect(await waitUntil(async () => (await pendingRecords(journalDir)) === 0, 10_000)).toBe(true);

  await server.stop();
  const outage: ISaveResult[] = [];
  for (let i = 0; i < counts.outage; i++) outage.push(await saveNext());
  // Nothing could be archived: every outage save waits in the journal.
  expect(await pendingRecords(journalDir)).toBe(counts.outage);

  const restartedAt = Date.now();
  await server.restart();
  const arrived = await waitForVersions(client, bucket, expectedCounts(), 60_000);
  const drainMs = Date.now() - restartedAt;
  expect(arrived).toBe(true);
  expect(await waitUntil(async () => (await pendingRecords(journalDir)) === 0, 10_000)).toBe(true);
  await expectArchivedInOrder(client, bucket, savesByPath);

  const up = latencySummary(baseline);
  const down = latencySummary(outage);
  // The save path is a local file write plus a local journal append, both fsynced; storage is
  // not on it. 3x the baseline median plus 20 ms absorbs scheduler noise on a small, shared
  // machine (and the retry timers running meanwhile) while still failing if a save waited for
  // an upload attempt (a refused connection alone is retried by the SDK with its own backoff).
  expect(down.median).toBeLessThanOrEqual(3 * up.median + 20);
  expect(outage.every(result => result.status === 200)).toBe(true);
  return {
    server: server.kind,
    baselineMs: up,
    outageMs: down,
    drainAfterRestartMs: drainMs,
    saves: index
  };
}

describe('archive faults against MinIO', () => {
  const rig = useObjectServer();
  let minio: IObjectServer;
  let client: S3Client;

  beforeAll(() => {
    ({ server: minio, s3: client } = rig);
  });

  afterEach(async () => {
    await cleanUpTest();
    // A test that failed during an outage must not leave the next one without storage.
    if (minio && !minio.running) await minio.restart();
  });

  test('storage stopped during 100 saves, then started again: saves stay fast, all arrive in order', async () => {
    const startedAt = Date.now();
    const result = await outageScenario(minio, client, 'faults-outage', {
      warmUp: 5,
      baseline: 20,
      outage: 100,
      paths: 4
    });
    figures.minioOutage = { ...result, testMs: Date.now() - startedAt };
  });

  test('SIGKILL while archives are pending: a new gateway on the same journal archives them all once', async () => {
    const startedAt = Date.now();
    const bucket = 'faults-kill';
    await createVersionedBucket(minio, bucket);
    const work = await scratchDir('kill');
    const journalDir = join(work, 'journal');
    const rootDir = join(work, 'root');
    // The gateway's own temporary directories (Jupyter's socket, the command shim) go here
    // too: after a SIGKILL nobody else removes them.
    const tmp = join(work, 'tmp');
    for (const dir of [rootDir, tmp]) await mkdir(dir, { recursive: true });
    const options: IArchivingGatewayOptions = {
      rootDir,
      env: { TMPDIR: tmp },
      args: [
        `--StoreSettings.journal_dir=${journalDir}`,
        `--StoreSettings.local_store_dir=${join(work, 'objects')}`
      ]
    };

    const first = await startTestGateway(minio, bucket, options);
    await minio.stop();
    const paths = ['kill-0.ipynb', 'kill-1.ipynb', 'kill-2.ipynb'];
    const savesByPath = new Map<string, ISaveResult[]>(paths.map(path => [path, []]));
    for (let i = 0; i < 30; i++) {
      const path = paths[i % paths.length];
      const saves = savesByPath.get(path)!;
      saves.push(await save(first, newLabel(path, saves.length), true));
    }
    expect(await pendingRecords(journalDir)).toBe(30);

    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    killUpstreamGroup(first);
    const upstreamPid = first.record.upstream_pid;
    if (upstreamPid) await waitUntil(() => Promise.resolve(!isAlive(upstreamPid)), 10_000);
    // Still journalled: the kill lost nothing.
    expect(await pendingRecords(journalDir)).toBe(30);

    await minio.restart();
    const second = await startTestGateway(minio, bucket, options);
    const expected = new Map(paths.map(path => [`${PREFIX}/${path}`, 10]));
    expect(await waitForVersions(client, bucket, expected, 60_000)).toBe(true);
    expect(await waitUntil(async () => (await pendingRecords(journalDir)) === 0, 10_000)).toBe(
      true
    );
    // Give a duplicate upload, if any were under way, the time to land before counting.
    await sleep(1000);
    await expectArchivedInOrder(client, bucket, savesByPath);
    const replay = logLines(second).find(
      line => line.msg === 'replaying archives left by an earlier run'
    );
    expect(replay?.pending).toBe(30);
    figures.sigkill = { saves: 30, testMs: Date.now() - startedAt };
    // Nothing else in the bucket either.
    expect([...(await listVersions(client, bucket)).keys()].sort()).toEqual(
      paths.map(path => `${PREFIX}/${path}`).sort()
    );
    expect(dirname(first.record.upstream_url.replace(/^unix:/, ''))).toContain(tmp);
  });

  test('a power cut that lost saves the journal holds: the next start finishes them, and leaves later changes alone', async () => {
    // With archiving on, a save writes its file without fsyncs and does not wait for its
    // signature's commit: the journal record is what is durable. A power cut can't be made
    // here, so each of its outcomes is put on disk by hand between a SIGKILL and the next start.
    const bucket = 'faults-power';
    await createVersionedBucket(minio, bucket);
    const work = await scratchDir('power');
    const rootDir = join(work, 'root');
    const dataDir = join(work, 'data');
    const tmp = join(work, 'tmp');
    for (const dir of [rootDir, dataDir, tmp]) await mkdir(dir, { recursive: true });
    const options: IArchivingGatewayOptions = {
      rootDir,
      // The same signature database and secret for both gateways.
      env: { TMPDIR: tmp, JUPYTER_DATA_DIR: dataDir },
      args: [`--StoreSettings.journal_dir=${join(work, 'journal')}`]
    };
    const journalDir = join(work, 'journal');
    const first = await startTestGateway(minio, bucket, options);
    const saved = new Map<string, ISaveResult[]>();
    const saveOf = async (gateway: IGatewayProcess, path: string): Promise<ISaveResult> => {
      const saves = saved.get(path) ?? [];
      saved.set(path, saves);
      const result = await save(gateway, newLabel(path, saves.length), true);
      saves.push(result);
      return result;
    };
    for (const path of ['renamed-back.ipynb', 'torn.ipynb', 'rewritten.ipynb']) {
      await saveOf(first, path);
    }
    expect(
      await waitForVersions(
        client,
        bucket,
        new Map([...saved.keys()].map(path => [`${PREFIX}/${path}`, 1])),
        30_000
      )
    ).toBe(true);
    expect(await waitUntil(async () => (await pendingRecords(journalDir)) === 0, 10_000)).toBe(
      true
    );
    // The file before the next save, kept alive by a second name (same inode, size and time).
    await link(join(rootDir, 'renamed-back.ipynb'), join(work, 'renamed-back.before'));

    await minio.stop();
    for (const path of ['renamed-back.ipynb', 'torn.ipynb', 'rewritten.ipynb', 'created.ipynb']) {
      await saveOf(first, path);
    }
    const tornStats = await stat(join(rootDir, 'torn.ipynb'));
    expect(await pendingRecords(journalDir)).toBe(4);
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    killUpstreamGroup(first);

    // What a power cut may leave: the rename of a save undone (the old file back in place), a
    // save's new file with its bytes cut short, a new file gone, and no signature committed.
    await rename(join(work, 'renamed-back.before'), join(rootDir, 'renamed-back.ipynb'));
    await truncate(join(rootDir, 'torn.ipynb'), 100);
    await utimes(join(rootDir, 'torn.ipynb'), tornStats.atime, tornStats.mtime);
    await rm(join(rootDir, 'created.ipynb'));
    const signatures = new DatabaseSync(join(dataDir, 'nbsignatures.db'));
    signatures.exec('DELETE FROM nbsignatures');
    signatures.close();
    // And a change made after the crashed gateway's save, in place as Jupyter writes: kept.
    const later = newLabel('rewritten.ipynb', 2);
    const laterBytes = Buffer.from(
      JSON.stringify((notebookModel(later) as { content: unknown }).content, null, 1)
    );
    await writeFile(join(rootDir, 'rewritten.ipynb'), laterBytes);

    await minio.restart();
    const second = await startTestGateway(minio, bucket, options);
    for (const path of ['renamed-back.ipynb', 'torn.ipynb', 'created.ipynb']) {
      const last = saved.get(path)!.at(-1)!.disk!;
      expect({ path, bytes: (await readFile(join(rootDir, path))).toString('utf8') }).toEqual({
        path,
        bytes: last.toString('utf8')
      });
    }
    expect((await readFile(join(rootDir, 'rewritten.ipynb'))).equals(laterBytes)).toBe(true);
    // The signatures are back: the repaired notebook opens trusted.
    const opened = await fetch(contentsUrl(second, 'renamed-back.ipynb'), {
      headers: { Authorization: `token ${second.token}` }
    });
    const model = (await opened.json()) as {
      content: { cells: { cell_type: string; metadata: { trusted?: boolean } }[] };
    };
    const code = model.content.cells.filter(cell => cell.cell_type === 'code');
    expect(code.map(cell => cell.metadata.trusted)).toEqual([true]);
    // Every save arrives once, in order, and the later change after them.
    const expected = new Map([
      [`${PREFIX}/renamed-back.ipynb`, 2],
      [`${PREFIX}/torn.ipynb`, 2],
      [`${PREFIX}/created.ipynb`, 1],
      [`${PREFIX}/rewritten.ipynb`, 3]
    ]);
    expect(await waitForVersions(client, bucket, expected, 60_000)).toBe(true);
    await sleep(1000);
    const listed = await listVersions(client, bucket);
    for (const [key, count] of expected)
      expect({ key, n: listed.get(key)?.length }).toEqual({ key, n: count });
    const rewritten = await archivedBodies(
      client,
      bucket,
      `${PREFIX}/rewritten.ipynb`,
      listed.get(`${PREFIX}/rewritten.ipynb`)!
    );
    expect(rewritten.map(labelOf)).toEqual([
      ...saved.get('rewritten.ipynb')!.map(result => labelOf(result.disk!)),
      labelOf(laterBytes)
    ]);
    await expectArchivedInOrder(
      client,
      bucket,
      new Map([...saved].filter(([path]) => path !== 'rewritten.ipynb'))
    );
  });

  test('50 concurrent saves to one path plus 500 to 50 other paths: every save archived, per-path order kept', async () => {
    const startedAt = Date.now();
    const bucket = 'faults-concurrent';
    await createVersionedBucket(minio, bucket);
    const gateway = await startTestGateway(minio, bucket);
    const hot = 'hot.ipynb';
    // The file exists (with its first checkpoint) before the concurrent saves start.
    const initial = await save(gateway, newLabel(hot, 0), true);

    const others = Array.from(
      { length: 50 },
      (_, i) => `other-${String(i).padStart(2, '0')}.ipynb`
    );
    const savesByPath = new Map<string, ISaveResult[]>(others.map(path => [path, []]));
    /** Each other path is saved 10 times in sequence; 32 paths at a time. */
    const otherChains = others.map(path => async () => {
      const saves = savesByPath.get(path)!;
      for (let n = 0; n < 10; n++) saves.push(await save(gateway, newLabel(path, n), true));
    });
    const hotLabels = Array.from({ length: 50 }, () => newLabel(hot, -1));
    const [hotSaves] = await Promise.all([
      Promise.all(hotLabels.map(label => save(gateway, label, false))),
      runLimited(32, otherChains)
    ]);
    const savesMs = Date.now() - startedAt;
    const diskAtEnd = await readFile(join(gateway.rootDir, hot));

    const expected = new Map<string, number>([[`${PREFIX}/${hot}`, 51]]);
    for (const path of others) expected.set(`${PREFIX}/${path}`, 10);
    expect(await waitForVersions(client, bucket, expected, 120_000)).toBe(true);
    const journalDir = defaultJournalDir(gateway);
    expect(await waitUntil(async () => (await pendingRecords(journalDir)) === 0, 30_000)).toBe(
      true
    );
    const drainedMs = Date.now() - startedAt;

    // Every version counted: exactly the saves, for every key.
    const listed = await listVersions(client, bucket);
    const counts = Object.fromEntries([...listed].map(([key, versions]) => [key, versions.length]));
    expect(counts).toEqual(Object.fromEntries(expected));
    await expectArchivedInOrder(client, bucket, savesByPath);

    const hotKey = `${PREFIX}/${hot}`;
    const hotBodies = await archivedBodies(client, bucket, hotKey, listed.get(hotKey)!);
    // The save before the concurrent ones comes first, as it was on disk.
    expect(hotBodies[0].toString('utf8')).toBe(initial.disk!.toString('utf8'));
    // Then exactly the 50 concurrent saves, each once, each the notebook that was sent.
    const archivedIds = hotBodies.slice(1).map(body => {
      const notebook = JSON.parse(body.toString('utf8')) as {
        metadata: { faults: ISaveLabel };
        cells: { source: string | string[] }[];
      };
      const label = notebook.metadata.faults;
      const source = notebook.cells[0].source;
      expect(Array.isArray(source) ? source.join('') : source).toBe(
        `Save -1 of ${hot} (${label.id})`
      );
      return label.id;
    });
    expect([...archivedIds].sort()).toEqual(hotLabels.map(label => label.id).sort());
    // A save answered before another was sent was journalled first, so archived first.
    const position = new Map(archivedIds.map((id, i) => [id, i]));
    const violations: string[] = [];
    for (const a of hotSaves) {
      for (const b of hotSaves) {
        if (a.answeredAt < b.sentAt && position.get(a.label.id)! > position.get(b.label.id)!) {
          violations.push(`${a.label.id} before ${b.label.id}`);
        }
      }
    }
    expect(violations).toEqual([]);
    // The newest version is what the file holds now.
    expect({ newest: labelOf(hotBodies.at(-1)!), disk: labelOf(diskAtEnd) }).toEqual({
      newest: labelOf(diskAtEnd),
      disk: labelOf(diskAtEnd)
    });
    expect(hotBodies.at(-1)!.toString('utf8')).toBe(diskAtEnd.toString('utf8'));

    const all = [...hotSaves, ...[...savesByPath.values()].flat()];
    figures.concurrent = {
      saves: all.length + 1,
      savesMs,
      archivedMs: drainedMs,
      hotMs: latencySummary(hotSaves),
      allMs: latencySummary(all)
    };
  });

  test.each([
    {
      name: 'a wrong secret access key',
      credentials: () => ({
        accessKeyId: minio.accessKeyId,
        secretAccessKey: `wrong-secret-${randomBytes(12).toString('hex')}`
      })
    },
    {
      name: 'an unknown access key id',
      credentials: () => ({
        accessKeyId: `FAULTSKEY${randomBytes(6).toString('hex').toUpperCase()}`,
        secretAccessKey: `wrong-secret-${randomBytes(12).toString('hex')}`
      })
    }
  ])(
    'with $name, saves still succeed, nothing is archived, and the log says why without the credentials',
    async ({ credentials }) => {
      const bucket = `faults-creds-${randomBytes(3).toString('hex')}`;
      await createVersionedBucket(minio, bucket);
      const { accessKeyId, secretAccessKey } = credentials();
      const gateway = await startTestGateway(minio, bucket, { accessKeyId, secretAccessKey });
      const saves: ISaveResult[] = [];
      for (let n = 0; n < 5; n++) saves.push(await save(gateway, newLabel('creds.ipynb', n), true));
      expect(saves.map(result => result.status)).toEqual([201, 200, 200, 200, 200]);
      expect(labelOf(await readFile(join(gateway.rootDir, 'creds.ipynb')))).toBe(
        labelOf(saves[4].disk!)
      );

      // Long enough for the bucket check to have been retried (the backoff cap is 2 s).
      await sleep(4000);
      expect(await listVersions(client, bucket, '')).toEqual(new Map());
      // On hold, not dropped: every save waits in the journal.
      expect(await pendingRecords(defaultJournalDir(gateway))).toBe(5);

      const onHold = logLines(gateway).filter(
        line =>
          line.level === 'error' &&
          typeof line.msg === 'string' &&
          line.msg.startsWith('archiving is on hold: ')
      );
      expect(onHold.length).toBeGreaterThan(0);
      expect(onHold[0].msg).toMatch(/credentials|access key|secret|access was denied/i);

      await gateway.stop('SIGTERM', 15_000);
      const output = gateway.stderr() + gateway.stdout();
      expect(output).not.toContain(secretAccessKey);
      expect(output).not.toContain(accessKeyId);
      expect(output).not.toContain(minio.secretAccessKey);
      figures[`credentials:${accessKeyId === minio.accessKeyId ? 'secret' : 'keyId'}`] = {
        reason: onHold[0].msg
      };
    }
  );

  test('SIGKILL while archived saves wait to be settled, then a power cut: the next start repairs them and archives nothing twice', async () => {
    // While the archive is busy (here: a newer state of another path waits for its
    // archive_min_interval_seconds), an archived save is marked done in the journal only when
    // its window of records is settled (files and folders fsynced), up to a second later. The
    // gateway is frozen in that window, then killed, and a power cut's outcome put on disk.
    const startedAt = Date.now();
    const bucket = 'faults-settling';
    await createVersionedBucket(minio, bucket);
    const work = await scratchDir('settling');
    const rootDir = join(work, 'root');
    const dataDir = join(work, 'data');
    const tmp = join(work, 'tmp');
    const journalDir = join(work, 'journal');
    for (const dir of [rootDir, dataDir, tmp]) await mkdir(dir, { recursive: true });
    const options: IArchivingGatewayOptions = {
      rootDir,
      env: { TMPDIR: tmp, JUPYTER_DATA_DIR: dataDir },
      args: [`--StoreSettings.journal_dir=${journalDir}`]
    };
    const first = await startTestGateway(minio, bucket, {
      ...options,
      args: [...options.args!, '--StoreSettings.archive_min_interval_seconds=600']
    });
    const archived = async (): Promise<number> => {
      const response = await fetch(first.url('api/store'), {
        headers: { Authorization: `token ${first.token}` }
      });
      return ((await response.json()) as { archive: { archived: number } }).archive.archived;
    };
    const saved = new Map<string, ISaveResult[]>();
    const saveOf = async (path: string): Promise<ISaveResult> => {
      const saves = saved.get(path) ?? [];
      saved.set(path, saves);
      const result = await save(first, newLabel(path, saves.length), true);
      saves.push(result);
      return result;
    };
    await saveOf('busy.ipynb');
    expect(await waitUntil(async () => (await archived()) === 1, 30_000)).toBe(true);
    expect(await waitUntil(async () => (await pendingRecords(journalDir)) === 0, 10_000)).toBe(
      true
    );
    // Waits for its interval: the archive stays busy.
    await saveOf('busy.ipynb');
    expect(await pendingRecords(journalDir)).toBe(1);

    // Each attempt saves a new path and freezes the gateway as soon as it reports the save
    // archived; should a slow machine let the window end first, the next attempt tries again.
    let held: string | undefined;
    let attempts = 0;
    for (; attempts < 5 && held === undefined; attempts++) {
      const path = `held-${attempts}.ipynb`;
      const before = await archived();
      await saveOf(path);
      const deadline = Date.now() + 30_000;
      while ((await archived()) === before && Date.now() < deadline) await sleep(2);
      first.child.kill('SIGSTOP');
      // The waiting state of busy.ipynb, and this save: archived, not yet settled.
      if ((await pendingRecords(journalDir)) === 2) held = path;
      else first.child.kill('SIGCONT');
    }
    expect(held).toBeDefined();
    const heldPath = held!;
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    killUpstreamGroup(first);
    expect(await pendingRecords(journalDir)).toBe(2);

    // What a power cut may leave of a save whose file and folder were never fsynced: the new
    // file gone, and its signature not committed.
    await rm(join(rootDir, heldPath));
    const signatures = new DatabaseSync(join(dataDir, 'nbsignatures.db'));
    signatures.exec('DELETE FROM nbsignatures');
    signatures.close();

    const second = await startTestGateway(minio, bucket, options);
    const last = saved.get(heldPath)!.at(-1)!.disk!;
    expect((await readFile(join(rootDir, heldPath))).toString('utf8')).toBe(last.toString('utf8'));
    const opened = await fetch(contentsUrl(second, heldPath), {
      headers: { Authorization: `token ${second.token}` }
    });
    const model = (await opened.json()) as {
      content: { cells: { cell_type: string; metadata: { trusted?: boolean } }[] };
    };
    const code = model.content.cells.filter(cell => cell.cell_type === 'code');
    expect(code.map(cell => cell.metadata.trusted)).toEqual([true]);
    // Every save once, in order: the replay found the held save archived already.
    const expected = new Map(
      [...saved].map(([path, saves]) => [`${PREFIX}/${path}`, saves.length])
    );
    expect(await waitForVersions(client, bucket, expected, 60_000)).toBe(true);
    expect(await waitUntil(async () => (await pendingRecords(journalDir)) === 0, 10_000)).toBe(
      true
    );
    await sleep(1000);
    const listed = await listVersions(client, bucket);
    for (const [key, count] of expected)
      expect({ key, n: listed.get(key)?.length }).toEqual({ key, n: count });
    await expectArchivedInOrder(client, bucket, saved);
    figures.settlingWindow = { attempts, testMs: Date.now() - startedAt };
  });
});

describe('archive faults against versitygw', () => {
  const rig = useObjectServer({ kind: 'versitygw' });
  let versitygw: IObjectServer;
  let client: S3Client;

  beforeAll(() => {
    ({ server: versitygw, s3: client } = rig);
  });

  afterEach(async () => {
    await cleanUpTest();
    if (versitygw && !versitygw.running) await versitygw.restart();
  });

  test('storage stopped during 30 saves, then started again: saves stay fast, all arrive in order', async () => {
    const startedAt = Date.now();
    const result = await outageScenario(versitygw, client, 'faults-outage', {
      warmUp: 3,
      baseline: 12,
      outage: 30,
      paths: 3
    });
    figures.versitygwOutage = { ...result, testMs: Date.now() - startedAt };
  });
});
