/**
 * How the archive keeps up with writers other than the gateway's contents API, three
 * measurements beside a reference, in one run. Part of `npm run bench:archive` (the phases
 * `bulk`, `rescan` and `observed`; `--only observation` runs these three alone):
 *
 * 1. Bulk first start: a root of N generated notebooks (10,000 of about 20 KB, varied sizes, in
 *    500 folders). Reference: `mc mirror` (the pinned MinIO client) copying the tree to a fresh
 *    versioned bucket. Product: `jupyter-store lab` started on that root with a fresh journal
 *    and index, archiving to another fresh bucket of the same MinIO, timed from its spawn until
 *    `GET api/store` says every notebook was archived (then checked with a listing), with the
 *    gateway's RSS sampled every 250 ms. Each side runs twice, the order alternating.
 * 2. Unchanged re-scan: a root of 100,000 files (the 10,000 notebooks and 90,000 small
 *    `.py`/`.csv`/`.txt` files in the same folders), committed to git. Reference: a warm
 *    `git status --porcelain`. Product: the reconciliation scan in this process
 *    (`Archiving.start` with the embedded store, `archive_watch` false), `scanNow()` once the
 *    first scan has archived everything and built the index. Runs alternate.
 * 3. Observed write → version listed: a real kernel, started through the gateway's REST API
 *    and driven over its websocket, rewrites notebooks (100 writes to 10 paths, every 250 ms);
 *    from the kernel's `time.time()` just after the file is closed until a `ListObjectVersions`
 *    of the key (every 20 ms) lists the version that holds that write's id.
 *
 * #### Notes
 * - The trees are generated deterministically (fixed seeds): the same run writes the same bytes.
 *   The notebooks are generated once per run; the re-scan root gets a copy.
 * - Everything is on 127.0.0.1; one MinIO (the pinned build) serves phases 1 and 3.
 * - Every loop is bounded in count and in time; servers, kernels and temporary trees are removed
 *   at the end of their phase, and on a signal (cleanup.ts).
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { spawn, spawnSync } from 'node:child_process';
import { Session } from 'node:inspector';
import { cpSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Archiving } from '../src/archive/archiving';
import { ArchiveJournal } from '../src/archive/journal';
import { ContentsManager } from '../src/contents/manager';
import { createLogger } from '../src/gateway/logger';
import { StoreSettingsSchema } from '../src/settings';
import { labDefaults, startGatewayProcess, type IGatewayProcess } from '../test/support/gateway';
import { REPO_ROOT } from '../test/support/jupyterServer';
import { openKernelSocket } from '../test/support/kernel';
import {
  createVersionedBucket,
  mcBinary,
  pinnedObjectServers,
  s3ClientFor,
  startMinio,
  type IObjectServer
} from '../test/support/objectServers';
import { cleanupStep, log } from './cleanup';
import { machineBusyMs, processCpuMs, readMemory } from './cpu';
import { formatMs, formatRate, formatRatio, latency, median, type ILatency } from './format';
import {
  ARCHIVING_ON_MESSAGE,
  logLines,
  machineLine,
  reportText,
  sleep,
  type IGeneratedSection,
  type ITargetCheck
} from './harness';
import { CODE_LINES, Random, WORDS, generateNotebook } from './notebook';
import { listKeys, listVersions, objectKeyOf, readObject, VersionPoller } from './objects';
import { formatProfileSummary, summariseProfile, writeProfilerPreload } from './profile';

/** The measurements of this module. */
export type ObservationPhase = 'bulk' | 'rescan' | 'observed';
export const OBSERVATION_PHASES: readonly ObservationPhase[] = ['bulk', 'rescan', 'observed'];

/** The targets. */
const TARGET_BULK_RATIO = 1.0;
const TARGET_BULK_RSS_BYTES = 300 * 1024 * 1024;
const TARGET_RESCAN_RATIO = 2;
const TARGET_OBSERVED_P99_MS = 2000;

/** The gateways' `workspace_prefix` (the default). */
const WORKSPACE_PREFIX = 'workspace';
/** How often the gateway's RSS is sampled. */
const RSS_INTERVAL_MS = 250;
/**
 * How often the bulk gateway's journal is looked at; when it holds no record, `GET api/store`
 * is asked whether every notebook was archived.
 */
const STATUS_INTERVAL_MS = 100;
/** The longest one bulk copy (either side) may take before the run fails. */
const BULK_TIMEOUT_MS = 10 * 60_000;
/** The longest the re-scan root's first scan (archiving everything) may take. */
const INDEX_TIMEOUT_MS = 10 * 60_000;
/** A kernel write not listed after this long counts as lost. */
const OBSERVED_TIMEOUT_MS = 30_000;

/** Placeholder of a write id in the kernel's notebook; every id has exactly this length. */
const ID_LENGTH = 16;
const ID_PLACEHOLDER = 'X'.repeat(ID_LENGTH);

export const OBSERVATION_SECTION: IGeneratedSection = {
  begin:
    '<!-- Generated by `npm run bench:archive -- --only observation`: everything from here to the end marker is rewritten by each run. -->',
  end: '<!-- End of the part generated by `npm run bench:archive -- --only observation`. -->',
  intro: `# Observation benchmark

\`npm run bench:archive -- --only observation\` (also part of a plain \`npm run bench:archive\`)
measures how the archive keeps up with writers other than the gateway's contents API, each beside
a reference, in one run, and rewrites the part of this section between the markers. It is a
benchmark, not a test: compare the ratios, and rerun before drawing conclusions from a small
difference. Everything is on 127.0.0.1; one MinIO (the pinned build, a single drive in a
temporary directory) serves the first and third measurement.

- Bulk first start: a generated root of 10,000 nbformat-4 notebooks (about 20 KB each, sizes
  varied, about 200 MB in 500 folders; fixed seeds). \`mc mirror\` (the pinned MinIO client, an
  alias given by \`MC_HOST_<alias>\`, a temporary \`--config-dir\`) copies it to a fresh versioned
  bucket; \`jupyter-store lab\` is started on the same root with a fresh journal and index and
  archives it to another fresh bucket, timed from its spawn until \`GET api/store\` says every
  notebook was archived and nothing is pending (asked only when the gateway's journal, looked at
  every 100 ms, holds no record: at 10,000 paths that request costs the gateway about 10 ms of
  CPU), then checked with a listing (exactly the 10,000 notebooks; the same check for mc's
  bucket). The gateway's RSS is sampled
  every 250 ms (\`/proc/<pid>/status\`), and its peak (\`VmHWM\`) read at the end. Each side runs
  twice, the order alternating; the target is checked against the medians.
- Unchanged re-scan: a root of 100,000 files (the same 10,000 notebooks, and 90,000 small
  \`.py\`, \`.csv\` and \`.txt\` files in the same folders), committed to git. A warm
  \`git status --porcelain\` against the product's reconciliation scan of the same unchanged
  root, run in the benchmark process (\`Archiving.start\` with the embedded store,
  \`archive_watch\` false, \`scanNow()\`) after its first scan has archived every notebook and
  built the index. Runs alternate; the target is checked against the medians.
- Observed write → version listed: \`jupyter-store lab\` archiving to MinIO; a Python kernel,
  started with \`POST api/kernels\` and driven over its websocket through the gateway, rewrites
  notebooks (100 writes over 10 paths, one every 250 ms; each write carries a unique id). From
  the kernel's \`time.time()\` right after the file is closed until a \`ListObjectVersions\` of
  the key (every 20 ms while the key has writes outstanding) lists the version that holds that
  write's id (every new version is read back).

Targets: bulk first start ≤ 1.0x \`mc mirror\`'s time, gateway RSS < 300 MB; unchanged re-scan
≤ 2x \`git status\`; observed write → version listed p99 ≤ 2 s. Options (of \`bench:archive\`):
\`--quick\` (a smaller tree, fewer runs), \`--only bulk,rescan,observed\` (or a subset),
\`--profile\` (the bulk gateways under the V8 CPU profiler, and this process during the timed
re-scans: prints where their time goes), \`--skip-build\`, \`--no-docs\`. Only a run of all three
rewrites this section; it takes about five minutes.
`
};

// ---------------------------------------------------------------------------------------------
// Plans

interface ITreePlan {
  readonly notebooks: number;
  /** Leaf folders; the notebooks (and small files) are spread evenly over them. */
  readonly folders: number;
}

interface IPlans {
  readonly tree: ITreePlan;
  readonly bulk: { readonly runs: number };
  readonly rescan: {
    /** All files of the re-scan root, notebooks included. */
    readonly files: number;
    readonly warmup: number;
    readonly runs: number;
  };
  readonly observed: {
    readonly writes: number;
    readonly paths: number;
    readonly intervalMs: number;
    readonly pollMs: number;
  };
}

function plans(quick: boolean): IPlans {
  return quick
    ? {
        tree: { notebooks: 500, folders: 25 },
        bulk: { runs: 1 },
        rescan: { files: 5_000, warmup: 1, runs: 3 },
        observed: { writes: 20, paths: 5, intervalMs: 250, pollMs: 20 }
      }
    : {
        tree: { notebooks: 10_000, folders: 500 },
        bulk: { runs: 2 },
        rescan: { files: 100_000, warmup: 2, runs: 9 },
        observed: { writes: 100, paths: 10, intervalMs: 250, pollMs: 20 }
      };
}

// ---------------------------------------------------------------------------------------------
// Results

interface IProcessSamples {
  /** Highest VmRSS sampled, bytes. */
  readonly maxRss: number;
  /** Highest VmHWM read (the kernel's peak RSS up to that read), bytes. */
  readonly hwm: number;
  readonly samples: number;
  /** CPU time at the last sample, ms (exact for a process still running). */
  readonly cpuMs: number;
}

interface IBulkRun {
  readonly side: 'mc' | 'gateway';
  readonly round: number;
  /** 1 or 2: which of the round's two copies it was. */
  readonly position: number;
  /** From spawn to every key present (mc: its exit), seconds. */
  readonly seconds: number;
  readonly process: IProcessSamples;
  /** MinIO's CPU time over the run, ms. */
  readonly minioCpuMs: number;
  /** The machine's busy time over the run, ms. */
  readonly machineMs: number;
  /** This process's CPU time over the run, ms. */
  readonly clientCpuMs: number;
  /** The copier's process id. */
  readonly pid: number;
  /** Gateway: spawn → its `archiving every change…` line, seconds. */
  readonly archivingAt?: number;
  /** Gateway: spawn → the first time its journal held a record, seconds. */
  readonly firstJournalledAt?: number;
  /** Gateway: `GET api/store` calls while waiting. */
  readonly statusCalls?: number;
  /** Gateway: what `GET api/store` costs once every notebook is archived. */
  readonly storeInfoCost?: IStoreInfoCost;
  /** Gateway: Jupyter's CPU time over the run, ms. */
  readonly jupyterCpuMs?: number;
  /** Gateway: what `GET api/store` said at the end, per source. */
  readonly sources?: Record<string, { seen: number; archived: number }>;
}

interface IBulkResult {
  readonly notebooks: number;
  readonly folders: number;
  readonly bytes: number;
  readonly runs: IBulkRun[];
  readonly profile?: string;
}

interface IRescanResult {
  readonly files: number;
  readonly notebooks: number;
  readonly bytes: number;
  readonly gitAddSeconds: number;
  readonly gitCommitSeconds: number;
  /** Start → first scan done and every notebook archived (the index built), seconds. */
  readonly indexSeconds: number;
  readonly warmup: number;
  /** Per run, ms. */
  readonly git: number[];
  readonly gitOneThread: number[];
  readonly scan: number[];
  /** This process's CPU time per scan, ms. */
  readonly scanCpu: number[];
  /** What the scan's own log said (files seen, files looked at) on its last run. */
  readonly scanFiles: number;
  readonly scanChanged: number;
  readonly scanLoggedMs: number[];
  readonly profile?: string;
}

interface IObservedWrite {
  readonly index: number;
  readonly path: string;
  readonly id: string;
  /** The kernel's clock (epoch ms) right after the file was closed. */
  writtenAt: number;
  /** Epoch ms of the first listing that showed its version. */
  seenAt?: number;
  versionId?: string;
  /** From the gateway's `archived` debug line (epoch ms of the line, queuedMs, uploadMs). */
  archivedAt?: number;
  queuedMs?: number;
  uploadMs?: number;
}

interface IObservedResult {
  readonly plan: IPlans['observed'];
  readonly notebookBytes: number;
  readonly writes: IObservedWrite[];
  /** Writes whose id is in no version (a later write overwrote it before it was read). */
  readonly unobserved: number;
  /** Writes whose version came later than the timeout. */
  readonly timedOut: number;
  readonly pollRtts: number[];
  /** Kernel execute round trips of the writes, ms. */
  readonly executeMs: number[];
  readonly sources: Record<string, { seen: number; archived: number }>;
  readonly watcher: string;
  /** What `GET api/store` costs this gateway (few paths archived), for comparison. */
  readonly storeInfoCost: IStoreInfoCost;
}

export interface IObservationResult {
  readonly minioVersion: string;
  readonly mcVersion: string;
  readonly otherCoresBefore: number;
  readonly bulk?: IBulkResult;
  readonly rescan?: IRescanResult;
  readonly observed?: IObservedResult;
}

// ---------------------------------------------------------------------------------------------
// Trees

/** `proj-07/exp-12`: the i-th of the leaf folders. */
function folderName(index: number): string {
  return `proj-${String(Math.floor(index / 20)).padStart(2, '0')}/exp-${String(index % 20).padStart(2, '0')}`;
}

/**
 * A notebook size from a log-normal distribution: median 18 KB, mean about 20 KB, from 9 KB
 * (generateNotebook is slow to hit a smaller target) to 120 KB.
 */
function notebookSize(random: Random): number {
  const u = Math.max(random.float(), 1e-9);
  const v = random.float();
  const normal = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  return Math.round(Math.min(120_000, Math.max(9_000, 18_000 * Math.exp(0.5 * normal))));
}

/** The generated notebooks of a run: written once, copied where another root needs them. */
class NotebookTree {
  constructor(readonly plan: ITreePlan) {}

  /** The API paths of the notebooks. */
  paths: string[] = [];
  /** Their total size on disk. */
  bytes = 0;

  /** The directory holding the tree (generated on the first call). */
  async dir(): Promise<string> {
    if (this._dir !== undefined) return this._dir;
    const parent = await mkdtemp(join(tmpdir(), 'bench-notebooks-'));
    this.remove = cleanupStep(() => rm(parent, { recursive: true, force: true }));
    const dir = join(parent, 'root');
    const started = performance.now();
    const random = new Random(0x0b5e);
    const perFolder = Math.ceil(this.plan.notebooks / this.plan.folders);
    for (let i = 0; i < this.plan.notebooks; i++) {
      const folder = folderName(Math.floor(i / perFolder));
      if (i % perFolder === 0) mkdirSync(join(dir, folder), { recursive: true });
      const path = `${folder}/analysis-${String(i % perFolder).padStart(3, '0')}.ipynb`;
      const bytes = generateNotebook(notebookSize(random), i + 1).diskBytes;
      writeFileSync(join(dir, path), bytes);
      this.paths.push(path);
      this.bytes += bytes.length;
    }
    log(
      `generated ${this.plan.notebooks.toLocaleString('en-US')} notebooks ` +
        `(${(this.bytes / 1e6).toFixed(1)} MB) in ${((performance.now() - started) / 1000).toFixed(1)} s`
    );
    this._dir = dir;
    return dir;
  }

  /** Remove the tree (if it was generated). */
  remove: () => Promise<void> = async () => undefined;

  private _dir: string | undefined;
}

/** Every file below `root` (hidden ones too), as relative paths. */
function filesUnder(root: string): string[] {
  const found: string[] = [];
  const walk = (relative: string): void => {
    for (const entry of readdirSync(join(root, relative), { withFileTypes: true })) {
      const path = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else found.push(path);
    }
  };
  walk('');
  return found;
}

/** Throw unless `actual` holds exactly the paths of `expected`. */
function checkSameFiles(
  actual: readonly string[],
  expected: readonly string[],
  what: string
): void {
  const want = new Set(expected);
  const have = new Set(actual);
  const extra = actual.filter(path => !want.has(path));
  const missing = expected.filter(path => !have.has(path));
  if (extra.length > 0 || missing.length > 0 || actual.length !== expected.length) {
    throw new Error(
      `${what}: ${actual.length} files instead of ${expected.length}; ` +
        `extra ${extra.slice(0, 5).join(', ') || 'none'}; missing ${missing.slice(0, 5).join(', ') || 'none'}`
    );
  }
}

/** A small text file of one of three kinds, 200 B to about 4 KB. */
function smallFile(random: Random, kind: number): { ext: string; text: string } {
  const target = 200 + (random.next() % 3800);
  const lines: string[] = [];
  let size = 0;
  const push = (line: string): void => {
    lines.push(line);
    size += line.length + 1;
  };
  if (kind === 0) {
    while (size < target) push(random.pick(CODE_LINES));
    return { ext: 'py', text: lines.join('\n') + '\n' };
  }
  if (kind === 1) {
    push('timestamp,sensor,value,flag');
    for (let row = 0; size < target; row++) {
      push(
        `2026-01-${String(1 + (row % 28)).padStart(2, '0')}T${String(row % 24).padStart(2, '0')}:00:00,s${random.int(1, 40)},${(random.float() * 100).toFixed(4)},${random.int(0, 1)}`
      );
    }
    return { ext: 'csv', text: lines.join('\n') + '\n' };
  }
  while (size < target) {
    push(Array.from({ length: random.int(6, 14) }, () => random.pick(WORDS)).join(' ') + '.');
  }
  return { ext: 'txt', text: lines.join('\n') + '\n' };
}

// ---------------------------------------------------------------------------------------------
// Process sampling

/** This process's CPU time (user + system) since `start`, ms. */
function cpuMsSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

/** Samples a process's RSS, peak and CPU every `intervalMs` until stopped (or gone). */
class ProcessSampler {
  constructor(
    private readonly _pid: number,
    intervalMs: number
  ) {
    this._sample();
    this._timer = setInterval(() => this._sample(), intervalMs);
  }

  stop(): IProcessSamples {
    clearInterval(this._timer);
    this._sample();
    return { maxRss: this._maxRss, hwm: this._hwm, samples: this._samples, cpuMs: this._cpuMs };
  }

  private _sample(): void {
    try {
      const { rss, hwm } = readMemory(this._pid);
      const cpuMs = processCpuMs(this._pid);
      this._maxRss = Math.max(this._maxRss, rss);
      this._hwm = Math.max(this._hwm, hwm);
      if (cpuMs > 0) this._cpuMs = cpuMs;
      this._samples++;
    } catch {
      // gone
    }
  }

  private readonly _timer: NodeJS.Timeout;
  private _maxRss = 0;
  private _hwm = 0;
  private _samples = 0;
  private _cpuMs = 0;
}

// ---------------------------------------------------------------------------------------------
// The gateway

/** Start `jupyter-store lab` archiving to a bucket of MinIO; stopped at the end in any case. */
async function startArchivingGateway(
  minio: IObjectServer,
  bucket: string,
  options: { rootDir?: string; logLevel: 'info' | 'debug'; nodeOptions?: string }
): Promise<{ gateway: IGatewayProcess; stop: () => Promise<void> }> {
  const gateway = await startGatewayProcess({
    rootDir: options.rootDir,
    args: [
      ...labDefaults(),
      '--log-level',
      options.logLevel,
      `--StoreSettings.object_endpoint_url=${minio.endpoint}`,
      `--StoreSettings.object_bucket=${bucket}`
    ],
    env: {
      NODE_OPTIONS: options.nodeOptions ?? '',
      STORE_OBJECT_ACCESS_KEY_ID: minio.accessKeyId,
      STORE_OBJECT_SECRET_ACCESS_KEY: minio.secretAccessKey,
      STORE_OBJECT_REGION_NAME: minio.region
    }
  });
  const stop = cleanupStep(async () => {
    const code = await gateway.stop('SIGTERM', 60_000);
    if (code !== 0)
      log(`a gateway exited with ${code}; its stderr:\n${gateway.stderr().slice(-3000)}`);
  });
  return { gateway, stop };
}

/** The archive part of `GET {base}api/store`. */
interface IStoreStatus {
  readonly pending: number;
  readonly archived: number;
  readonly sources: Record<string, { seen: number; archived: number }>;
  readonly observation: { watcher: { mode: string; reason: string | null } };
}

async function storeStatus(gateway: IGatewayProcess): Promise<IStoreStatus> {
  const response = await fetch(gateway.url('api/store'), {
    headers: { Authorization: `token ${gateway.token}` },
    signal: AbortSignal.timeout(30_000)
  });
  const body = (await response.json()) as { archive: IStoreStatus | null };
  if (response.status !== 200 || body.archive === null) {
    throw new Error(`GET api/store answered ${response.status}: ${JSON.stringify(body)}`);
  }
  return body.archive;
}

/** What one `GET {base}api/store` costs: its latency and the gateway's CPU time. */
interface IStoreInfoCost {
  readonly requests: number;
  readonly latency: ILatency;
  /** The gateway's CPU time per request, ms (from `/proc`, 10 ms ticks, over all requests). */
  readonly cpuMs: number;
  /** The paths archived since the gateway started (what the status keeps per path). */
  readonly archived: number;
}

/** Send `requests` `GET api/store` one after the other, idle gateway. */
async function measureStoreInfo(gateway: IGatewayProcess, requests = 40): Promise<IStoreInfoCost> {
  const times: number[] = [];
  let archived = 0;
  await storeStatus(gateway);
  const cpuStart = processCpuMs(gateway.record.pid);
  for (let i = 0; i < requests; i++) {
    const sent = performance.now();
    archived = (await storeStatus(gateway)).archived;
    times.push(performance.now() - sent);
  }
  const cpuMs = (processCpuMs(gateway.record.pid) - cpuStart) / requests;
  return { requests, latency: latency(times), cpuMs, archived };
}

/** Epoch ms of the first log line with this message, or NaN. */
function loggedAt(gateway: IGatewayProcess, msg: string): number {
  const time = logLines(gateway, msg)[0]?.time;
  return typeof time === 'string' ? Date.parse(time) : NaN;
}

// ---------------------------------------------------------------------------------------------
// Measurement 1: bulk first start

/** `mc mirror` of the tree into a fresh bucket, timed from spawn to exit, then checked. */
async function mcMirrorRun(
  minio: IObjectServer,
  s3: S3Client,
  root: string,
  expected: readonly string[],
  bucket: string
): Promise<Omit<IBulkRun, 'round' | 'position'>> {
  await createVersionedBucket(minio, bucket);
  // Only the notebooks: nothing else (Jupyter's checkpoints, say) may have appeared in the root.
  checkSameFiles(filesUnder(root), expected, `the root before mc mirror`);
  const configDir = await mkdtemp(join(tmpdir(), 'bench-mc-'));
  try {
    const endpoint = new URL(minio.endpoint);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      MC_HOST_bench: `http://${minio.accessKeyId}:${minio.secretAccessKey}@${endpoint.host}`
    };
    const minioStart = processCpuMs(minio.pid);
    const machineStart = machineBusyMs();
    const clientStart = process.cpuUsage();
    const start = performance.now();
    const child = spawn(
      mcBinary(),
      ['--config-dir', configDir, 'mirror', '--quiet', '--no-color', `${root}/`, `bench/${bucket}`],
      { env, stdio: ['ignore', 'pipe', 'pipe'] }
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const sampler = new ProcessSampler(child.pid ?? -1, 50);
    const timer = setTimeout(() => child.kill('SIGKILL'), BULK_TIMEOUT_MS);
    const killChild = cleanupStep(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    const code = await new Promise<number | string>(resolve => {
      child.once('error', error => resolve(error.message));
      child.once('exit', (status, signal) => resolve(status ?? signal ?? -1));
    });
    const seconds = (performance.now() - start) / 1000;
    clearTimeout(timer);
    await killChild();
    const samples = sampler.stop();
    const minioCpuMs = processCpuMs(minio.pid) - minioStart;
    const machineMs = machineBusyMs() - machineStart;
    const clientCpuMs = cpuMsSince(clientStart);
    if (code !== 0) throw new Error(`mc mirror exited with ${code}: ${output.slice(-2000)}`);
    checkSameFiles(await listKeys(s3, bucket), expected, `mc mirror's bucket ${bucket}`);
    return {
      side: 'mc',
      pid: child.pid ?? -1,
      seconds,
      process: samples,
      minioCpuMs,
      machineMs,
      clientCpuMs
    };
  } finally {
    await rm(configDir, { recursive: true, force: true });
  }
}

/**
 * `jupyter-store lab` on the tree with a fresh journal and index, archiving to a fresh bucket:
 * timed from its spawn until every notebook is archived, then checked.
 */
async function gatewayFirstStartRun(
  minio: IObjectServer,
  s3: S3Client,
  root: string,
  expected: readonly string[],
  bucket: string,
  profileDir: string | undefined
): Promise<Omit<IBulkRun, 'round' | 'position'>> {
  await createVersionedBucket(minio, bucket);
  const nodeOptions =
    profileDir === undefined ? '' : `--require ${await writeProfilerPreload(profileDir)}`;
  const minioStart = processCpuMs(minio.pid);
  const machineStart = machineBusyMs();
  const clientStart = process.cpuUsage();
  const startEpoch = Date.now();
  const start = performance.now();
  const { gateway, stop } = await startArchivingGateway(minio, bucket, {
    rootDir: root,
    logLevel: 'info',
    nodeOptions
  });
  const sampler = new ProcessSampler(gateway.record.pid, RSS_INTERVAL_MS);
  // `GET api/store` costs the gateway more the more paths it archived (see the report), so it
  // is asked only when its journal holds no record: at the end, or when the scan lags.
  const journalDir = join(gateway.state.data, 'jupyter-store', 'journal');
  const journalled = (): Promise<number> => ArchiveJournal.pendingCount(journalDir);
  let firstJournalled = NaN;
  let done = NaN;
  let status: IStoreStatus | undefined;
  let statusCalls = 0;
  let samples: IProcessSamples;
  try {
    const deadline = start + BULK_TIMEOUT_MS;
    while (performance.now() < deadline) {
      const records = await journalled();
      if (records > 0 && Number.isNaN(firstJournalled)) firstJournalled = performance.now();
      if (records === 0) {
        status = await storeStatus(gateway);
        statusCalls++;
        if (status.archived >= expected.length && status.pending === 0) {
          done = performance.now();
          break;
        }
      }
      await sleep(STATUS_INTERVAL_MS);
    }
  } finally {
    // The samples end when the copy is done (or failed), before the gateway is stopped.
    samples = sampler.stop();
  }
  const minioCpuMs = processCpuMs(minio.pid) - minioStart;
  const machineMs = machineBusyMs() - machineStart;
  const clientCpuMs = cpuMsSince(clientStart);
  const jupyterCpuMs = processCpuMs(gateway.record.upstream_pid);
  const archivingEpoch = loggedAt(gateway, ARCHIVING_ON_MESSAGE);
  const storeInfoCost = Number.isNaN(done) ? undefined : await measureStoreInfo(gateway);
  await stop();
  if (Number.isNaN(done)) {
    throw new Error(
      `the gateway archived ${status?.archived ?? 0} of ${expected.length} notebooks in ` +
        `${BULK_TIMEOUT_MS / 1000} s; its log:\n${gateway.stderr().slice(-3000)}`
    );
  }
  const keys = (await listKeys(s3, bucket, `${WORKSPACE_PREFIX}/`)).map(key =>
    key.slice(WORKSPACE_PREFIX.length + 1)
  );
  checkSameFiles(keys, expected, `the gateway's bucket ${bucket}`);
  return {
    side: 'gateway',
    pid: gateway.record.pid,
    seconds: (done - start) / 1000,
    process: samples,
    minioCpuMs,
    machineMs,
    clientCpuMs,
    archivingAt: (archivingEpoch - startEpoch) / 1000,
    firstJournalledAt: (firstJournalled - start) / 1000,
    jupyterCpuMs,
    sources: status?.sources,
    statusCalls,
    storeInfoCost
  };
}

async function measureBulk(
  minio: IObjectServer,
  s3: S3Client,
  tree: NotebookTree,
  runs: number,
  profile: boolean
): Promise<IBulkResult> {
  const root = await tree.dir();
  // Kept, as bench:archive keeps the "on" gateway's, for a closer look.
  const profileDir = profile
    ? join(tmpdir(), 'jupyter-store-bench-profiles', `observe-${Date.now()}`)
    : undefined;
  if (profileDir !== undefined) mkdirSync(profileDir, { recursive: true });
  const results: IBulkRun[] = [];
  for (let round = 1; round <= runs; round++) {
    const order: Array<'mc' | 'gateway'> = round % 2 === 1 ? ['mc', 'gateway'] : ['gateway', 'mc'];
    for (const [i, side] of order.entries()) {
      const bucket = `bulk-${side}-${round}`;
      const run =
        side === 'mc'
          ? await mcMirrorRun(minio, s3, root, tree.paths, bucket)
          : await gatewayFirstStartRun(minio, s3, root, tree.paths, bucket, profileDir);
      results.push({ ...run, round, position: i + 1 });
      log(
        `bulk round ${round} ${side}: ${run.seconds.toFixed(1)} s, peak RSS ` +
          `${(Math.max(run.process.maxRss, run.process.hwm) / 2 ** 20).toFixed(0)} MiB`
      );
    }
  }
  let summary: string | undefined;
  const last = results.filter(run => run.side === 'gateway').at(-1);
  if (profileDir !== undefined && last !== undefined) {
    // Only the gateway's own profile: Jupyter's children inherit NODE_OPTIONS too.
    const file = join(profileDir, `${last.pid}.cpuprofile`);
    if (existsSync(file)) {
      summary = `${file}\n\n${formatProfileSummary(await summariseProfile(file, REPO_ROOT))}`;
    } else log(`no ${file}: did the gateway exit cleanly?`);
  }
  return {
    notebooks: tree.paths.length,
    folders: tree.plan.folders,
    bytes: tree.bytes,
    runs: results,
    profile: summary
  };
}

// ---------------------------------------------------------------------------------------------
// Measurement 2: unchanged re-scan

/** Run git in `cwd` with an isolated configuration; throws on failure. */
function git(cwd: string, home: string, args: string[]): { ms: number; stdout: string } {
  const start = performance.now();
  const result = spawnSync('git', args, {
    cwd,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    timeout: 10 * 60_000,
    env: {
      ...process.env,
      HOME: home,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: join(home, '.gitconfig'),
      GIT_AUTHOR_NAME: 'bench',
      GIT_AUTHOR_EMAIL: 'bench@example.invalid',
      GIT_COMMITTER_NAME: 'bench',
      GIT_COMMITTER_EMAIL: 'bench@example.invalid'
    }
  });
  const ms = performance.now() - start;
  if (result.status !== 0) {
    throw new Error(`git ${args.join(' ')} failed (${result.status}): ${result.stderr}`);
  }
  return { ms, stdout: result.stdout };
}

/** Profile this process (V8's sampling profiler) while `work` runs; returns the summary. */
async function profileInProcess(work: () => Promise<void>): Promise<string> {
  const session = new Session();
  session.connect();
  const post = (method: string): Promise<unknown> =>
    new Promise((resolve, reject) =>
      session.post(method, (error, result) => (error ? reject(error) : resolve(result)))
    );
  let profile: unknown;
  try {
    await post('Profiler.enable');
    await post('Profiler.start');
    try {
      await work();
    } finally {
      profile = ((await post('Profiler.stop')) as { profile: unknown }).profile;
    }
  } finally {
    session.disconnect();
  }
  const dir = await mkdtemp(join(tmpdir(), 'bench-rescan-profile-'));
  try {
    const file = join(dir, 'rescan.cpuprofile');
    await writeFile(file, JSON.stringify(profile));
    return formatProfileSummary(await summariseProfile(file, REPO_ROOT));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function measureRescan(
  tree: NotebookTree,
  plan: IPlans['rescan'],
  profile: boolean
): Promise<IRescanResult> {
  const notebooksDir = await tree.dir();
  const dir = await mkdtemp(join(tmpdir(), 'bench-rescan-'));
  const removeDir = cleanupStep(() => rm(dir, { recursive: true, force: true }));
  try {
    const root = join(dir, 'root');
    const home = join(dir, 'home');
    mkdirSync(home);
    cpSync(notebooksDir, root, { recursive: true });
    const notebooks = tree.paths.length;
    const perFolder = Math.ceil((plan.files - notebooks) / tree.plan.folders);
    const random = new Random(0x5ca7);
    let written = notebooks;
    let bytes = tree.bytes;
    for (let folder = 0; folder < tree.plan.folders && written < plan.files; folder++) {
      for (let i = 0; i < perFolder && written < plan.files; i++, written++) {
        const { ext, text } = smallFile(random, i % 3);
        writeFileSync(
          join(root, folderName(folder), `file-${String(i).padStart(3, '0')}.${ext}`),
          text
        );
        bytes += Buffer.byteLength(text);
      }
    }
    const files = filesUnder(root).length;
    if (files !== plan.files)
      throw new Error(`the re-scan root has ${files} files, not ${plan.files}`);
    log(`re-scan root: ${files.toLocaleString('en-US')} files, ${(bytes / 1e6).toFixed(1)} MB`);

    git(root, home, ['init', '-q']);
    const add = git(root, home, ['add', '-A']);
    const commit = git(root, home, ['commit', '-q', '-m', 'the tree']);
    log(`git add ${formatMs(add.ms)}, commit ${formatMs(commit.ms)}`);

    // The product: in this process, embedded store, no watcher, no periodic scan.
    const scanLines: Array<{ files: number; changed: number; gone: number; ms: number }> = [];
    const logger = createLogger({
      level: 'debug',
      destination: {
        write(line: string): void {
          if (line.includes('"scan complete"')) {
            scanLines.push(JSON.parse(line) as (typeof scanLines)[number]);
          }
        }
      }
    });
    const settings = StoreSettingsSchema.parse({
      local_store_dir: join(dir, 'objects'),
      journal_dir: join(dir, 'journal'),
      archive_watch: false,
      archive_scan_interval_seconds: 86_400
    });
    const indexStart = performance.now();
    const archiving = await Archiving.start(
      settings,
      new ContentsManager({ rootDir: root }),
      logger
    );
    const closeArchiving = cleanupStep(() => archiving.close(10_000));
    try {
      await archiving.firstScan();
      const deadline = indexStart + INDEX_TIMEOUT_MS;
      for (;;) {
        const status = archiving.queue?.status();
        if (status !== undefined && status.pending === 0 && status.archived >= notebooks) break;
        if (performance.now() > deadline) {
          throw new Error(
            `the first scan archived ${status?.archived ?? 0} of ${notebooks} notebooks`
          );
        }
        await sleep(50);
      }
      if (!(await archiving.settled(60_000))) throw new Error('the intake did not settle');
      const indexSeconds = (performance.now() - indexStart) / 1000;
      log(`re-scan: first scan archived ${notebooks} notebooks in ${indexSeconds.toFixed(1)} s`);

      const gitStatus = (oneThread: boolean): number => {
        const args = oneThread
          ? ['-c', 'core.preloadIndex=false', 'status', '--porcelain']
          : ['status', '--porcelain'];
        const { ms, stdout } = git(root, home, args);
        if (stdout !== '') throw new Error(`git status is not clean:\n${stdout.slice(0, 500)}`);
        return ms;
      };
      const scanOnce = async (): Promise<{ ms: number; cpuMs: number }> => {
        const cpu = process.cpuUsage();
        const start = performance.now();
        await archiving.scanNow('bench');
        const ms = performance.now() - start;
        const used = process.cpuUsage(cpu);
        const line = scanLines.at(-1);
        if (
          line === undefined ||
          line.changed !== 0 ||
          line.gone !== 0 ||
          line.files !== notebooks
        ) {
          throw new Error(
            `the re-scan of an unchanged root found changes: ${JSON.stringify(line)}`
          );
        }
        return { ms, cpuMs: (used.user + used.system) / 1000 };
      };
      for (let i = 0; i < plan.warmup; i++) {
        gitStatus(false);
        gitStatus(true);
        await scanOnce();
      }
      const result = {
        git: [] as number[],
        gitOneThread: [] as number[],
        scan: [] as number[],
        scanCpu: [] as number[]
      };
      const timed = async (): Promise<void> => {
        for (let i = 0; i < plan.runs; i++) {
          // Which goes first alternates.
          const scanFirst = i % 2 === 1;
          if (scanFirst) {
            const { ms, cpuMs } = await scanOnce();
            result.scan.push(ms);
            result.scanCpu.push(cpuMs);
          }
          result.git.push(gitStatus(false));
          result.gitOneThread.push(gitStatus(true));
          if (!scanFirst) {
            const { ms, cpuMs } = await scanOnce();
            result.scan.push(ms);
            result.scanCpu.push(cpuMs);
          }
        }
      };
      const loggedBefore = scanLines.length;
      const summary = profile ? await profileInProcess(timed) : (await timed(), undefined);
      const last = scanLines.at(-1)!;
      return {
        files,
        notebooks,
        bytes,
        gitAddSeconds: add.ms / 1000,
        gitCommitSeconds: commit.ms / 1000,
        indexSeconds,
        warmup: plan.warmup,
        ...result,
        scanFiles: last.files,
        scanChanged: last.changed,
        scanLoggedMs: scanLines.slice(loggedBefore).map(line => line.ms),
        profile: summary
      };
    } finally {
      await closeArchiving();
    }
  } finally {
    await removeDir();
  }
}

// ---------------------------------------------------------------------------------------------
// Measurement 3: observed write → version listed

/** The Python that defines the kernel's writer: the notebook template and `_bench_write`. */
function kernelSetupCode(template: string): string {
  return [
    'import base64, time',
    `_bench_template = base64.b64decode(${JSON.stringify(Buffer.from(template).toString('base64'))}).decode('utf-8')`,
    'def _bench_write(path, write_id):',
    `    data = _bench_template.replace(${JSON.stringify(ID_PLACEHOLDER)}, write_id)`,
    "    with open(path, 'w', encoding='utf-8') as f:",
    '        f.write(data)',
    '    return time.time()',
    "'ready'"
  ].join('\n');
}

async function measureObserved(
  minio: IObjectServer,
  s3: S3Client,
  plan: IPlans['observed']
): Promise<IObservedResult> {
  const bucket = 'observed';
  await createVersionedBucket(minio, bucket);
  const { gateway, stop } = await startArchivingGateway(minio, bucket, { logLevel: 'debug' });
  try {
    const dir = 'kw';
    mkdirSync(join(gateway.rootDir, dir));
    const headers = { Authorization: `token ${gateway.token}` };
    const started = await fetch(gateway.url('api/kernels'), {
      method: 'POST',
      headers: { ...headers, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'python3' }),
      signal: AbortSignal.timeout(60_000)
    });
    const { id: kernelId } = (await started.json()) as { id?: string };
    if (started.status !== 201 || typeof kernelId !== 'string') {
      throw new Error(`POST api/kernels answered ${started.status}`);
    }
    const kernel = await openKernelSocket(
      gateway.url(`api/kernels/${kernelId}/channels`).replace(/^http/, 'ws'),
      headers
    );
    try {
      const notebook = JSON.parse(
        generateNotebook(20 * 1024, 0x0b5).diskBytes.toString('utf8')
      ) as {
        metadata: Record<string, unknown>;
      };
      notebook.metadata.jupyter_store_bench = { write_id: ID_PLACEHOLDER };
      const template = JSON.stringify(notebook, null, 1) + '\n';
      if ((await kernel.execute(kernelSetupCode(template), 60_000)) !== "'ready'") {
        throw new Error('the kernel did not define the writer');
      }
      const poller = new VersionPoller(s3, bucket, plan.pollMs, OBSERVED_TIMEOUT_MS, Date.now);
      let counter = 0;
      const nextWriteId = (): string => `kw${String(++counter).padStart(ID_LENGTH - 2, '0')}`;
      const pathOf = (i: number): string => `${dir}/nb-${i % plan.paths}.ipynb`;
      const write = async (path: string, writeId: string): Promise<{ at: number; ms: number }> => {
        const sent = performance.now();
        const result = await kernel.execute(
          `_bench_write(${JSON.stringify(join(gateway.rootDir, path))}, ${JSON.stringify(writeId)})`
        );
        const at = Number(result) * 1000;
        if (!Number.isFinite(at)) throw new Error(`the kernel's write answered ${result}`);
        return { at, ms: performance.now() - sent };
      };
      poller.start();
      const expected = new Map<string, number>();
      const waits: Array<Promise<void>> = [];
      let timedOut = 0;
      const expect = (path: string): void => {
        const key = objectKeyOf(WORKSPACE_PREFIX, path);
        const count = (expected.get(key) ?? 0) + 1;
        expected.set(key, count);
        waits.push(
          poller.expect(key, count).then(
            () => undefined,
            () => void timedOut++
          )
        );
      };
      // Warm-up: one write per path (creates the files and their first versions).
      log(`observed writes: warm-up, ${plan.paths} writes`);
      for (let i = 0; i < plan.paths; i++) {
        await write(pathOf(i), nextWriteId());
        expect(pathOf(i));
      }
      await Promise.all(waits.splice(0));
      const warmupTimedOut = timedOut;
      timedOut = 0;
      if (warmupTimedOut > 0)
        throw new Error(`${warmupTimedOut} warm-up writes were never archived`);
      await sleep(1000);

      log(
        `observed writes: ${plan.writes} kernel writes over ${plan.paths} paths, one every ` +
          `${plan.intervalMs} ms, polling every ${plan.pollMs} ms`
      );
      const writes: IObservedWrite[] = [];
      const executeMs: number[] = [];
      const start = performance.now();
      try {
        for (let i = 0; i < plan.writes; i++) {
          await sleep(start + i * plan.intervalMs - performance.now());
          const entry: IObservedWrite = {
            index: i,
            path: pathOf(i),
            id: nextWriteId(),
            writtenAt: NaN
          };
          const { at, ms } = await write(entry.path, entry.id);
          entry.writtenAt = at;
          executeMs.push(ms);
          writes.push(entry);
          expect(entry.path);
        }
        await Promise.all(waits);
      } finally {
        await poller.stop();
      }

      // Which version holds which write: read every version back.
      const byId = new Map(writes.map(entry => [entry.id, entry]));
      const versions = await listVersions(s3, bucket, `${WORKSPACE_PREFIX}/${dir}/`);
      await Promise.all(
        versions.map(async version => {
          if (version.Key === undefined || version.VersionId === undefined) return;
          const body = (await readObject(s3, bucket, version.Key, version.VersionId)).toString(
            'utf8'
          );
          const match = /"write_id": "([^"]{16})"/.exec(body);
          const entry = match ? byId.get(match[1]) : undefined;
          if (entry === undefined) return;
          entry.versionId = version.VersionId;
          entry.seenAt = poller.firstSeen.get(version.VersionId);
        })
      );
      const byVersion = new Map(writes.map(entry => [entry.versionId, entry]));
      for (const line of logLines(gateway, 'archived')) {
        const entry = byVersion.get(line.versionId as string);
        if (entry === undefined || typeof line.time !== 'string') continue;
        entry.archivedAt = Date.parse(line.time);
        entry.queuedMs = Number(line.queuedMs);
        entry.uploadMs = Number(line.uploadMs);
      }
      const status = await storeStatus(gateway);
      const storeInfoCost = await measureStoreInfo(gateway);
      await fetch(gateway.url(`api/kernels/${kernelId}`), {
        method: 'DELETE',
        headers,
        signal: AbortSignal.timeout(30_000)
      }).then(response => response.arrayBuffer());
      return {
        plan,
        notebookBytes: Buffer.byteLength(template),
        writes,
        unobserved: writes.filter(entry => entry.versionId === undefined).length,
        timedOut,
        pollRtts: poller.rtts,
        executeMs,
        sources: status.sources,
        watcher: status.observation.watcher.mode,
        storeInfoCost
      };
    } finally {
      await kernel.close();
    }
  } finally {
    await stop();
  }
}

// ---------------------------------------------------------------------------------------------
// Report

const MiB = 2 ** 20;

function seconds(value: number | undefined): string {
  return value === undefined || !Number.isFinite(value) ? 'n/a' : `${value.toFixed(1)} s`;
}

function mib(bytes: number): string {
  return `${(bytes / MiB).toFixed(0)} MiB`;
}

function bulkStats(result: IBulkResult): {
  mc: IBulkRun[];
  gateway: IBulkRun[];
  mcSeconds: number;
  gatewaySeconds: number;
  afterJupyterSeconds: number;
  ratio: number;
  ratioAfterJupyter: number;
  peakRss: number;
} {
  const mc = result.runs.filter(run => run.side === 'mc');
  const gateway = result.runs.filter(run => run.side === 'gateway');
  const mcSeconds = median(mc.map(run => run.seconds));
  const gatewaySeconds = median(gateway.map(run => run.seconds));
  const afterJupyterSeconds = median(gateway.map(run => run.seconds - (run.archivingAt ?? NaN)));
  return {
    mc,
    gateway,
    mcSeconds,
    gatewaySeconds,
    afterJupyterSeconds,
    ratio: gatewaySeconds / mcSeconds,
    ratioAfterJupyter: afterJupyterSeconds / mcSeconds,
    peakRss: Math.max(...gateway.map(run => Math.max(run.process.maxRss, run.process.hwm)))
  };
}

function bulkSection(result: IBulkResult): string[] {
  const stats = bulkStats(result);
  const cores = (ms: number, run: IBulkRun): string => (ms / (run.seconds * 1000)).toFixed(2);
  const others = (run: IBulkRun): number =>
    Math.max(
      0,
      run.machineMs - run.process.cpuMs - (run.jupyterCpuMs ?? 0) - run.minioCpuMs - run.clientCpuMs
    );
  const row = (run: IBulkRun): string => {
    const gateway = run.side === 'gateway';
    return `| ${[
      `${run.round} (${run.position === 1 ? 'first' : 'second'})`,
      gateway ? '`jupyter-store lab`' : '`mc mirror`',
      `**${seconds(run.seconds)}**`,
      gateway ? seconds(run.archivingAt) : '–',
      gateway ? seconds(run.seconds - (run.archivingAt ?? NaN)) : seconds(run.seconds),
      gateway ? seconds(run.seconds - (run.firstJournalledAt ?? NaN)) : '–',
      formatRate(result.notebooks / run.seconds),
      `${mib(run.process.maxRss)} / ${mib(run.process.hwm)}`,
      seconds(run.process.cpuMs / 1000),
      gateway ? seconds((run.jupyterCpuMs ?? NaN) / 1000) : '–',
      seconds(run.minioCpuMs / 1000),
      cores(run.machineMs, run),
      cores(others(run), run)
    ].join(' | ')} |`;
  };
  const sources = stats.gateway.at(-1)?.sources;
  const perNotebook = (runs: IBulkRun[], ms: (run: IBulkRun) => number): number =>
    median(runs.map(run => ms(run) / result.notebooks));
  const gatewayCpu = perNotebook(stats.gateway, run => run.process.cpuMs);
  const mcCpu = perNotebook(stats.mc, run => run.process.cpuMs);
  const minioGateway = perNotebook(stats.gateway, run => run.minioCpuMs);
  const minioMc = perNotebook(stats.mc, run => run.minioCpuMs);
  const jupyter = perNotebook(stats.gateway, run => run.jupyterCpuMs ?? NaN);
  const info = stats.gateway.map(run => run.storeInfoCost).filter(cost => cost !== undefined);
  return [
    `### 1. Bulk first start: ${result.notebooks.toLocaleString('en-US')} notebooks (${(result.bytes / 1e6).toFixed(1)} MB in ${result.folders} folders)`,
    '',
    '| Round | copy | spawn → every key present | spawn → `archiving every change…` (Jupyter start-up) | that line → every key present | first record journalled → every key present | notebooks/s (whole) | RSS: max sampled / peak (VmHWM) | CPU of the copier | Jupyter CPU | MinIO CPU | machine busy (cores) | other processes (cores) |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...result.runs.map(row),
    `| median | \`mc mirror\` | **${seconds(stats.mcSeconds)}** | | ${seconds(stats.mcSeconds)} | | ${formatRate(result.notebooks / stats.mcSeconds)} | | | | | | |`,
    `| median | \`jupyter-store lab\` | **${seconds(stats.gatewaySeconds)}** | | ${seconds(stats.afterJupyterSeconds)} | | ${formatRate(result.notebooks / stats.gatewaySeconds)} | max ${mib(stats.peakRss)} | | | | | |`,
    '',
    `Gateway/mc, medians: **${formatRatio(stats.ratio)}** from spawn (the target); ` +
      `${formatRatio(stats.ratioAfterJupyter)} from the gateway's \`archiving every change…\` line, i.e. without ` +
      "Jupyter's start-up (the gateway starts archiving once Jupyter answers). Gateway peak RSS " +
      `**${mib(stats.peakRss)}** (the higher of the 250 ms samples and \`VmHWM\`; Jupyter's own memory not included). ` +
      "mc's CPU and RSS are sampled every 50 ms (its CPU to the last sample before it exits). " +
      'Machine busy is all cores (`/proc/stat`) over the copy; other processes is that minus the copier, Jupyter, ' +
      'MinIO and the benchmark process (kernel threads, and other jobs on this shared machine). ' +
      `The gateway's status counts per source at the end of its last run: ${JSON.stringify(sources ?? {})}; ` +
      `\`GET api/store\` was asked ${stats.gateway.map(run => run.statusCalls ?? 0).join(' and ')} times (only while ` +
      'the journal held no record).',
    '',
    `CPU per notebook (medians): the gateway ${formatMs(gatewayCpu)} (its whole life, start-up included) and ` +
      `Jupyter ${formatMs(jupyter)}, MinIO ${formatMs(minioGateway)} while the gateway archived; ` +
      `\`mc\` ${formatMs(mcCpu)}, MinIO ${formatMs(minioMc)} while mc copied: ` +
      `${formatRatio((gatewayCpu + jupyter + minioGateway) / (mcCpu + minioMc))} the CPU per notebook, on a machine ` +
      'whose cores both copies keep busy.',
    '',
    ...(info.length > 0
      ? [
          `\`GET api/store\` on the idle gateway after its copy (${info.map(cost => cost.archived.toLocaleString('en-US')).join(' and ')} paths archived ` +
            `since its start; ${info[0].requests} requests one after the other): p50 ${info.map(cost => formatMs(cost.latency.p50)).join(' and ')}, ` +
            `gateway CPU ${info.map(cost => formatMs(cost.cpuMs)).join(' and ')} per request.`,
          ''
        ]
      : [])
  ];
}

function rescanSection(result: IRescanResult): string[] {
  const git = median(result.git);
  const gitOne = median(result.gitOneThread);
  const scan = median(result.scan);
  const cpu = median(result.scanCpu);
  const row = (i: number): string =>
    `| ${i + 1} (${i % 2 === 1 ? 'scan first' : 'git first'}) | ${formatMs(result.git[i])} | ${formatMs(result.gitOneThread[i])} | ${formatMs(result.scan[i])} | ${formatMs(result.scanCpu[i])} | ${formatRatio(result.scan[i] / result.git[i])} |`;
  return [
    `### 2. Unchanged re-scan: ${result.files.toLocaleString('en-US')} files (${result.notebooks.toLocaleString('en-US')} notebooks), ${(result.bytes / 1e6).toFixed(1)} MB`,
    '',
    '| Run | `git status --porcelain` | the same, `core.preloadIndex=false` (one thread) | reconciliation scan (`scanNow()`) | scan CPU (this process) | scan/git |',
    '|---|--:|--:|--:|--:|--:|',
    ...result.scan.map((_, i) => row(i)),
    `| median | ${formatMs(git)} | ${formatMs(gitOne)} | ${formatMs(scan)} | ${formatMs(cpu)} | **${formatRatio(scan / git)}** |`,
    '',
    `Scan/git, medians: **${formatRatio(scan / git)}** (against one-threaded git: ${formatRatio(scan / gitOne)}). ` +
      `Each scan walked the root and reported ${result.scanFiles.toLocaleString('en-US')} notebooks and ` +
      `${result.scanChanged} changed (its own \`scan complete\` log line: ${formatMs(median(result.scanLoggedMs))} median); ` +
      `\`git status\` printed nothing. Set-up, not measured against a target: \`git add -A\` ${seconds(result.gitAddSeconds)}, ` +
      `\`git commit\` ${seconds(result.gitCommitSeconds)}; the product's first scan (which read, hashed and archived every ` +
      `notebook into the embedded store, building the index) ${seconds(result.indexSeconds)}. ` +
      `${result.warmup} unrecorded runs of each first; git with its configuration isolated (no system or user config).`,
    ''
  ];
}

function observedSection(result: IObservedResult): string[] {
  const { plan, writes } = result;
  const toListed = latency(writes.map(w => (w.seenAt ?? NaN) - w.writtenAt));
  const toUploadStart = latency(
    writes.map(w => (w.archivedAt ?? NaN) - (w.uploadMs ?? NaN) - w.writtenAt)
  );
  const queued = latency(writes.map(w => w.queuedMs ?? NaN));
  const upload = latency(writes.map(w => w.uploadMs ?? NaN));
  const listed = latency(writes.map(w => (w.seenAt ?? NaN) - (w.archivedAt ?? NaN)));
  const rtt = latency(result.pollRtts);
  const execute = latency(result.executeMs);
  const row = (label: string, l: ILatency): string =>
    `| ${label} | ${l.n} | ${formatMs(l.p50)} | ${formatMs(l.p90)} | ${formatMs(l.p99)} | ${formatMs(l.max)} |`;
  return [
    `### 3. Observed write → version listed (${plan.writes} kernel writes over ${plan.paths} paths, one every ${plan.intervalMs} ms)`,
    '',
    '| Interval | n | p50 | p90 | p99 | max |',
    '|---|--:|--:|--:|--:|--:|',
    row("**kernel's `time.time()` after close → version listed by MinIO**", toListed),
    row('write → upload start (gateway log: `archived` time − `uploadMs`)', toUploadStart),
    row('gateway log: `queuedMs` (journal append start → upload start)', queued),
    row('gateway log: `uploadMs` (PutObject)', upload),
    row('`archived` logged → version listed (poll lag; log times are whole ms)', listed),
    row('listing round trip', rtt),
    row('kernel execute round trip of a write (through the gateway)', execute),
    '',
    `Each write is an \`execute_request\` that rewrites one notebook of ${result.notebookBytes.toLocaleString('en-US')} bytes ` +
      "(`open(path, 'w')`, write, close) with a unique id in its metadata and returns `time.time()`; the same clock as " +
      `the benchmark's \`Date.now()\`. ${plan.paths} unrecorded writes first (one per path). ${writes.length - result.unobserved} of ${writes.length} ` +
      `writes became versions (${result.unobserved} overwritten before they were read, ${result.timedOut} not listed within ${OBSERVED_TIMEOUT_MS / 1000} s). ` +
      `Watcher mode: ${result.watcher}; status counts per source at the end: ${JSON.stringify(result.sources)}. ` +
      'The gateway ran with `--log-level debug` for the breakdown. ' +
      `\`GET api/store\` on this gateway afterwards (${result.storeInfoCost.archived} paths archived since its start, ` +
      `${result.storeInfoCost.requests} requests): p50 ${formatMs(result.storeInfoCost.latency.p50)}, gateway CPU ` +
      `${formatMs(result.storeInfoCost.cpuMs)} per request.`,
    ''
  ];
}

function checks(result: IObservationResult): ITargetCheck[] {
  const list: ITargetCheck[] = [];
  if (result.bulk) {
    const stats = bulkStats(result.bulk);
    list.push({
      text:
        `bulk first start ≤ ${TARGET_BULK_RATIO.toFixed(1)}x \`mc mirror\`: ${formatRatio(stats.ratio)} ` +
        `(medians ${seconds(stats.gatewaySeconds)} vs ${seconds(stats.mcSeconds)}; without Jupyter's start-up ` +
        `${seconds(stats.afterJupyterSeconds)}, ${formatRatio(stats.ratioAfterJupyter)})`,
      met: stats.ratio <= TARGET_BULK_RATIO
    });
    list.push({
      text: `bulk first start, gateway RSS < ${mib(TARGET_BULK_RSS_BYTES)}: ${mib(stats.peakRss)} at the peak`,
      met: stats.peakRss < TARGET_BULK_RSS_BYTES
    });
  }
  if (result.rescan) {
    const ratio = median(result.rescan.scan) / median(result.rescan.git);
    list.push({
      text:
        `unchanged re-scan ≤ ${TARGET_RESCAN_RATIO}x \`git status\`: ${formatRatio(ratio)} ` +
        `(medians ${formatMs(median(result.rescan.scan))} vs ${formatMs(median(result.rescan.git))})`,
      met: ratio <= TARGET_RESCAN_RATIO
    });
  }
  if (result.observed) {
    const lat = latency(result.observed.writes.map(w => (w.seenAt ?? NaN) - w.writtenAt));
    const lost = result.observed.unobserved + result.observed.timedOut;
    list.push({
      text:
        `observed write → version listed p99 ≤ ${formatMs(TARGET_OBSERVED_P99_MS)}: ${formatMs(lat.p99)} ` +
        `(p50 ${formatMs(lat.p50)}; ${lost} of ${result.observed.writes.length} writes not listed)`,
      met: lat.p99 <= TARGET_OBSERVED_P99_MS && lost === 0
    });
  }
  return list;
}

/** The report of a run: the generated part of the section. */
export function observationReport(
  result: IObservationResult,
  command: string,
  runSeconds: number
): { text: string; allMet: boolean } {
  return reportText({
    title: 'Observation results',
    command,
    machine: machineLine("MinIO's drive, the roots, the journals, the git repository"),
    seconds: runSeconds,
    head: [
      `Object store: MinIO ${result.minioVersion} (single drive, versioned buckets); mc ${result.mcVersion}; ` +
        'the gateways with default settings (`max_threads` 16, `archive_watch` on, scan every 60 s)',
      `Other processes on the machine just before the run: ${result.otherCoresBefore.toFixed(2)} cores (2 s sample)`
    ],
    sections: [
      ...(result.bulk ? bulkSection(result.bulk) : []),
      ...(result.rescan ? rescanSection(result.rescan) : []),
      ...(result.observed ? observedSection(result.observed) : [])
    ],
    checks: checks(result)
  });
}

/** The CPU profiles a `--profile` run collected, as text. */
export function observationProfiles(result: IObservationResult): string {
  return [
    result.bulk?.profile
      ? `### CPU profile of the last bulk gateway\n\n${result.bulk.profile}\n`
      : '',
    result.rescan?.profile
      ? `### CPU profile of the timed re-scans (this process; git runs meanwhile)\n\n${result.rescan.profile}\n`
      : ''
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// The run

/** Run the selected measurements; every server and tree is gone when this settles. */
export async function runObservation(options: {
  phases: readonly ObservationPhase[];
  quick: boolean;
  profile: boolean;
}): Promise<IObservationResult> {
  const plan = plans(options.quick);
  const busyBefore = machineBusyMs();
  await sleep(2_000);
  const otherCoresBefore = (machineBusyMs() - busyBefore) / 2_000;
  log(`other processes used ${otherCoresBefore.toFixed(2)} cores over the last 2 s`);
  const tree = new NotebookTree(plan.tree);
  const pins = pinnedObjectServers();
  let minio: IObjectServer | undefined;
  let s3: S3Client | undefined;
  let disposeMinio: (() => Promise<void>) | undefined;
  const objectStore = async (): Promise<{ minio: IObjectServer; s3: S3Client }> => {
    if (minio === undefined || s3 === undefined) {
      log('starting MinIO');
      const started = await startMinio();
      const client = s3ClientFor(started);
      disposeMinio = cleanupStep(async () => {
        client.destroy();
        await started.dispose();
      });
      [minio, s3] = [started, client];
    }
    return { minio, s3 };
  };
  try {
    let bulk: IBulkResult | undefined;
    let rescan: IRescanResult | undefined;
    let observed: IObservedResult | undefined;
    if (options.phases.includes('bulk')) {
      const t = Date.now();
      const store = await objectStore();
      bulk = await measureBulk(store.minio, store.s3, tree, plan.bulk.runs, options.profile);
      log(`bulk first start: ${((Date.now() - t) / 1000).toFixed(1)} s`);
    }
    if (options.phases.includes('rescan')) {
      const t = Date.now();
      rescan = await measureRescan(tree, plan.rescan, options.profile);
      log(`unchanged re-scan: ${((Date.now() - t) / 1000).toFixed(1)} s`);
    }
    if (options.phases.includes('observed')) {
      const t = Date.now();
      const store = await objectStore();
      observed = await measureObserved(store.minio, store.s3, plan.observed);
      log(`observed writes: ${((Date.now() - t) / 1000).toFixed(1)} s`);
    }
    return {
      minioVersion: pins.MINIO_VERSION ?? 'unknown',
      mcVersion: pins.MC_VERSION ?? 'unknown',
      otherCoresBefore,
      bulk,
      rescan,
      observed
    };
  } finally {
    await disposeMinio?.();
    await tree.remove();
  }
}
