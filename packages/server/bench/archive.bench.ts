/**
 * `npm run bench:archive`: what archiving every notebook save costs, against one local MinIO, in
 * one run. Three measurements:
 *
 * 1. Sustained archive throughput: N saves of a ~20 KB notebook over P paths, C at a time,
 *    through `jupyter-store lab`'s contents API, timed from the first PUT until the gateway has
 *    confirmed the last version (its journal holds no record); beside it, the same
 *    object bodies written with the AWS SDK's `PutObject` straight from this process to MinIO,
 *    with the same concurrency and key pattern, and (to tell archiving's share from the contents
 *    API's) the same saves through a gateway with archiving off, and (the reference) the same
 *    saves to plain Jupyter Server, no gateway and no archiving. Rounds alternate.
 * 2. Save-to-archived latency of a paced stream of saves (well below saturation): from sending
 *    the PUT until the version is listed by MinIO (`ListObjectVersions` on the keys with saves
 *    outstanding, every few milliseconds), with the gateway's own breakdown from its debug log
 *    (`archived` lines: `queuedMs`, `uploadMs`).
 * 3. Save latency (the contents PUT) with archiving on and off: the same paced saves through a
 *    gateway that archives to MinIO and through one with archiving off (`workspace_prefix` empty,
 *    everything else equal), and to plain Jupyter Server (the reference row: the venv's
 *    `jupyter_server` with its default contents manager, same client and schedule), in rotating
 *    rounds.
 *
 * #### Notes
 * - Every save embeds a unique id (`metadata.jupyter_store_bench.save_id`, fixed width) in the
 *   notebook, so every archived version differs, and versions can be matched to saves: the
 *   gateway keeps save order per path, and the client sends the saves of one path one at a time,
 *   so the k-th version of a key is the k-th save to its path (checked by reading the versions
 *   back). The raw `PutObject` bodies are the bytes the gateway wrote to disk for a save, with
 *   another id in the same place: byte for byte the size of an archived version, with the same
 *   content type and user metadata (`save-id`, `sha256`).
 * - Three gateways run, each with its own Jupyter, root and journal, all archiving to one
 *   versioned bucket: "on" (default settings, `--log-level info`; measurements 1 and 3), "off"
 *   (`--StoreSettings.workspace_prefix=`, checked by its `archiving is off` log line;
 *   measurements 1 and 3) and "debug" (like "on" with `--log-level debug`; measurement 2), so that the
 *   debug log's cost (a line per request and per archive, written synchronously to a pipe) is in
 *   none of the compared figures. Credentials reach the gateways through `STORE_OBJECT_*`.
 * - CPU time of the gateway under test, of MinIO and of this process is read around every round
 *   (`/proc/<pid>/stat`, `process.cpuUsage`), and the busy time of the whole machine
 *   (`/proc/stat`), and of the kernel threads (fsync work lands there): "other processes" is the
 *   rest, i.e. other jobs on the machine, the main source of noise on a small shared machine.
 * - A measurement, not a test: it exits 0 whether the targets are met or not, and non-zero only
 *   when something failed (a server did not start, a save got an unexpected answer, a version is
 *   missing or out of order).
 *
 * The same command also runs the measurements of observe.bench.ts (how the archive keeps up with
 * writers other than the contents API: a bulk first start against `mc mirror`, an unchanged
 * re-scan against `git status`, a kernel's writes until their versions are listed), after these
 * three; they write their own section of docs/benchmarks.md.
 *
 * Options: `--quick` (smoke run), `--only PHASES` (a comma-separated subset of `throughput`,
 * `latency`, `onoff`, `bulk`, `rescan`, `observed`, or the groups `saves` for the first three and
 * `observation` for the last three), `--profile` (the "on" gateway, and the bulk gateways of
 * observe.bench.ts, under the V8 CPU profiler, with a summary of where their time went),
 * `--spans` (the "on" and "off" gateways with the stage timers of spans.ts: wall and CPU time
 * of each stage of a save, printed at the end),
 * `--skip-build`, `--no-docs` (do not update docs/benchmarks.md; implied by --quick and
 * --profile). A section of docs/benchmarks.md is rewritten only by a run of all its measurements
 * (`--only saves`, about two and a half minutes; `--only observation`, about five minutes; or
 * everything, the default).
 */
import { PutObjectCommand, S3Client, type ObjectVersion } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { labDefaults, startGatewayProcess, type IGatewayProcess } from '../test/support/gateway';
import {
  REPO_ROOT,
  startJupyterServer,
  type JupyterServerHandle
} from '../test/support/jupyterServer';
import {
  createVersionedBucket,
  pinnedObjectServers,
  s3ClientFor,
  startMinio,
  type IObjectServer
} from '../test/support/objectServers';
import { formatProfileSummary, summariseProfile, writeProfilerPreload } from './profile';
import { formatSpans, readSpans, writeSpanPreload } from './spans';
import {
  formatMs,
  formatRate,
  formatRatio,
  formatSignedMs,
  latency,
  median,
  type ILatency
} from './format';
import { cleanUp, cleaningUp, cleanups, log } from './cleanup';
import { machineBusyMs, parseProcStat, processCpuMs } from './cpu';
import {
  ARCHIVING_ON_MESSAGE,
  build,
  logLines,
  machineLine,
  reportText,
  runConcurrent,
  sleep,
  waitForLogLine,
  writeGeneratedSection,
  DOCS_FILE,
  type IGeneratedSection,
  type ITargetCheck
} from './harness';
import { listVersions, objectKeyOf, readObject, versionCounts, VersionPoller } from './objects';
import {
  ARCHIVE_TIMEOUT_MS,
  ContentsSaver,
  PathLocks,
  SaveClient,
  Workload,
  nextId,
  pacedStream,
  pathName,
  type IPacedPlan,
  type IPacedSave
} from './saves';
import {
  OBSERVATION_PHASES,
  OBSERVATION_SECTION,
  observationProfiles,
  observationReport,
  runObservation,
  type ObservationPhase
} from './observe.bench';

/** The targets. */
const TARGET_THROUGHPUT_RATIO = 0.9;
const TARGET_SAVE_LATENCY_RATIO = 1.1;
/** The targets against plain Jupyter Server (the reference row). */
const TARGET_JUPYTER_P50_RATIO = 1.0;
const TARGET_JUPYTER_P99_RATIO = 1.2;
const TARGET_JUPYTER_BURST_RATIO = 1.5;
/** Every burst save archived within this long of the last answer. */
const TARGET_BURST_DRAIN_SECONDS = 1;
/** Gateway CPU that archiving adds to a save, against a raw PutObject's CPU in its caller. */
const TARGET_ARCHIVE_CPU_RATIO = 1.2;

/** The size of the saved notebook on disk (about). */
const NOTEBOOK_BYTES = 20 * 1024;

/** The bucket every gateway archives to, and the prefix of the raw SDK writes. */
const BUCKET = 'bench-archive';
const RAW_PREFIX = 'raw';
/** The gateways' `workspace_prefix` (the default). */
const WORKSPACE_PREFIX = 'workspace';

/** The whole run is aborted (servers stopped) after this long (the saves, the observation). */
const RUN_DEADLINE_MS = { saves: 8 * 60_000, observation: 30 * 60_000 };
/** A request that takes longer fails the run. */
const REQUEST_TIMEOUT_MS = 30_000;

const DEFAULT_SECTION = `# Archive benchmark

\`npm run bench:archive\` starts one MinIO (the pinned build of \`scripts/object-servers.env\`, a
single drive in a temporary directory, one versioned bucket) and \`jupyter-store lab\` archiving to
it, measures how fast and how soon notebook saves become versions in the bucket and what archiving
adds to a save, in one run, and rewrites the part of this section between the markers. It is a
benchmark, not a test: compare the ratios, and rerun before drawing conclusions from a small
difference.

How it measures: every save is a \`PUT api/contents/<path>\` of a generated ~20 KB notebook (as
JupyterLab sends it) that carries a unique, fixed-width id in its metadata, so that every save is a
new version and every version can be matched to its save (the gateway keeps save order per path,
and the client sends one save per path at a time). Three gateways run, each with its own Jupyter,
root and journal: "on" (default settings, log level info), "off" (the same with
\`--StoreSettings.workspace_prefix=\`, which turns archiving off; its log says so) and "debug" (like
"on", with \`--log-level debug\`, only for the latency breakdown). Everything is on 127.0.0.1.

- Sustained throughput: rounds of 1,000 saves over 50 paths, 16 at a time, timed from the first
  PUT until the gateway's journal (\`<JUPYTER_DATA_DIR>/jupyter-store/journal\`) has no record left,
  then checked with \`ListObjectVersions\` (every key gained its versions) and \`GetObject\` (the
  latest version of every key is its last save). Beside it, the same bytes written with the AWS
  SDK's \`PutObject\` from the benchmark process (16 at a time, same key pattern, content type and
  metadata), the same saves through the "off" gateway, and the same saves to plain Jupyter Server
  (the reference: no gateway, no archiving, its own root; timed to the last answer). Kinds
  alternate; the target is checked against the median of the rounds' archived/raw ratios.
- Save-to-archived latency: 200 saves at 20/s over 20 paths, from sending the PUT until a
  \`ListObjectVersions\` of the key (every 10 ms while the key has saves outstanding) shows the
  version; then every version is read back and matched by id, and the gateway's \`archived\` debug
  lines give \`queuedMs\` and \`uploadMs\` per version.
- Save latency on/off: 6 rounds of 100 saves at 20/s over 20 paths per side, rotating between
  "on", "off" and plain Jupyter Server (the reference row, same client and schedule); an "on"
  round lasts until its journal is empty. The target is checked against the median of the
  rounds' on/off p50 ratios.
- CPU: user + system time of the gateway under test, MinIO and the benchmark process around every
  round (\`/proc/<pid>/stat\`), of the kernel threads, and the busy time of the machine
  (\`/proc/stat\`), whose remainder is "other processes": other jobs on this shared machine.

Targets: archive throughput ≥ 90 % of the raw SDK's; save latency p50 with archiving on ≤ 1.1x
off (p99 shown, no target); against plain Jupyter Server: paced p50 ≤ 1.0x, p99 ≤ 1.2x, and
burst saves archived/s ≥ 1.5x the saves/s plain Jupyter answers, with every save archived within
1 s of the last answer; the gateway CPU that archiving adds to a save ≤ 1.2x the CPU a raw SDK
\`PutObject\` of the same bytes costs its caller. Options: \`--quick\` (smoke
run), \`--only throughput,latency,onoff\` (a subset; \`--only saves\` is the three),
\`--profile\` (the "on" gateway under the V8 CPU profiler, prints where its time goes),
\`--spans\` (the "on" and "off" gateways with the stage timers of \`bench/spans.ts\`, prints the
wall and CPU time of each stage of a save), \`--skip-build\`, \`--no-docs\`. A run of all three
rewrites this section; they take about three minutes. Without \`--only\`, \`npm run bench:archive\`
also runs the observation benchmark below (about five minutes more).
`;

const SAVES_SECTION: IGeneratedSection = {
  begin:
    '<!-- Generated by `npm run bench:archive`: everything from here to the end marker is rewritten by each run. -->',
  end: '<!-- End of the part generated by `npm run bench:archive`. -->',
  intro: DEFAULT_SECTION
};

/** Measurements that `--only` can select: these, and those of observe.bench.ts. */
type SavePhase = 'throughput' | 'latency' | 'onoff';
const SAVE_PHASES: readonly SavePhase[] = ['throughput', 'latency', 'onoff'];
type Phase = SavePhase | ObservationPhase;
const PHASES: readonly Phase[] = [...SAVE_PHASES, ...OBSERVATION_PHASES];
/** Names of groups of measurements for `--only`. */
const PHASE_GROUPS: Readonly<Record<string, readonly Phase[]>> = {
  saves: SAVE_PHASES,
  observation: OBSERVATION_PHASES
};

/** Sustained throughput: concurrent saves, rounds alternating with raw SDK writes. */
interface IThroughputPlan {
  readonly saves: number;
  readonly paths: number;
  readonly concurrency: number;
  readonly rounds: number;
  /** Unrecorded saves (and raw writes) before the rounds; they also create the files. */
  readonly warmup: number;
}

interface IPlans {
  readonly throughput: IThroughputPlan;
  readonly latency: IPacedPlan & { readonly pollMs: number };
  readonly onoff: IPacedPlan;
}

/** CPU time (user + system) over an interval, in milliseconds. */
interface ICpu {
  /** The gateway under test. */
  readonly gateway: number;
  readonly minio: number;
  /** This process (the load generator, and the SDK writer of the raw rounds). */
  readonly client: number;
  /**
   * Kernel threads (children of kthreadd: block-device and file-system workers, softirq
   * threads): partly the I/O of the processes above (fsync), partly other jobs'.
   */
  readonly kernel: number;
  /** Every other process on the machine (busy time of all cores minus the four above). */
  readonly others: number;
}

/**
 * Saves through the archiving gateway, raw PutObject, saves through the gateway with archiving
 * off, and the same saves to plain Jupyter Server (no gateway, no archiving): the reference.
 */
type ThroughputKind = 'archive' | 'raw' | 'off' | 'jupyter';

/** One timed round of measurement 1. */
interface IThroughputRound {
  readonly kind: ThroughputKind;
  readonly count: number;
  /** From the first request to the last version confirmed, in seconds. */
  readonly seconds: number;
  /** From the first request to the last request answered, in seconds. */
  readonly requestSeconds: number;
  /** Per request (PUT through the gateway, or PutObject). */
  readonly latencies: number[];
  readonly cpu: ICpu;
}

/** One paced round of measurement 3. */
type PacedSide = 'on' | 'off' | 'jupyter';

/** Plain Jupyter Server (no gateway, no archiving) and a client of its contents API. */
interface IPlainJupyter {
  readonly server: JupyterServerHandle;
  readonly saver: ContentsSaver;
}

interface IPacedRound {
  readonly side: PacedSide;
  readonly saves: IPacedSave[];
  readonly seconds: number;
  readonly cpu: ICpu;
  /** For "on": from the last PUT answered until the journal was empty, in ms. */
  readonly drainMs: number;
}

interface IThroughputResult {
  readonly plan: IThroughputPlan;
  readonly rounds: IThroughputRound[];
}

interface ILatencyResult {
  readonly plan: IPlans['latency'];
  readonly saves: IPacedSave[];
  /** Round-trip times of the polling listings, ms. */
  readonly pollRtts: number[];
  /** The gateway's debug log, per save matched by version id. */
  readonly queuedMs: number[];
  readonly uploadMs: number[];
  readonly logMatched: number;
  readonly cpu: ICpu;
  readonly seconds: number;
}

interface IOnOffResult {
  readonly plan: IPacedPlan;
  readonly rounds: IPacedRound[];
}

interface IRunResult {
  readonly notebookBytes: number;
  readonly putBodyBytes: number;
  readonly minioVersion: string;
  readonly endpoint: string;
  readonly otherCoresBefore: number;
  readonly throughput?: IThroughputResult;
  readonly latency?: ILatencyResult;
  readonly onoff?: IOnOffResult;
}

// ---------------------------------------------------------------------------------------------
// Options

const { values: options } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    profile: { type: 'boolean', default: false },
    spans: { type: 'boolean', default: false },
    'skip-build': { type: 'boolean', default: false },
    'no-docs': { type: 'boolean', default: false }
  },
  strict: true,
  allowPositionals: false
});

const phases: Phase[] =
  options.only === undefined
    ? [...PHASES]
    : options.only
        .split(',')
        .map(name => name.trim())
        .flatMap(name => PHASE_GROUPS[name] ?? [name as Phase]);
if (phases.length === 0 || phases.some(phase => !PHASES.includes(phase))) {
  process.stderr.write(
    `--only: '${options.only}' is not a list of ${PHASES.join(', ')} ` +
      `(or ${Object.keys(PHASE_GROUPS).join(', ')})\n`
  );
  process.exit(2);
}
const savePhases = SAVE_PHASES.filter(phase => phases.includes(phase));
const observationPhases = OBSERVATION_PHASES.filter(phase => phases.includes(phase));

/** A section of docs/benchmarks.md is rewritten by a full run of all of its measurements. */
const writeDocs = (group: readonly Phase[]): boolean =>
  !options.quick &&
  !options.profile &&
  !options.spans &&
  !options['no-docs'] &&
  group.every(phase => phases.includes(phase));

function plans(quick: boolean): IPlans {
  return quick
    ? {
        throughput: { saves: 200, paths: 50, concurrency: 16, rounds: 1, warmup: 100 },
        latency: { rate: 20, paths: 20, saves: 40, rounds: 1, warmup: 20, pollMs: 10 },
        onoff: { rate: 20, paths: 20, saves: 40, rounds: 1, warmup: 20 }
      }
    : {
        throughput: { saves: 1_000, paths: 50, concurrency: 16, rounds: 3, warmup: 200 },
        latency: { rate: 20, paths: 20, saves: 200, rounds: 1, warmup: 40, pollMs: 10 },
        onoff: { rate: 20, paths: 20, saves: 100, rounds: 6, warmup: 40 }
      };
}

// ---------------------------------------------------------------------------------------------
// CPU accounting

/** CPU time of every kernel thread (parent pid 2), by pid, in milliseconds. */
function kernelThreadsCpuMs(): Map<number, number> {
  const times = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const { ppid, cpuMs } = parseProcStat(readFileSync(`/proc/${entry}/stat`, 'utf8'));
      if (ppid === 2) times.set(Number(entry), cpuMs);
    } catch {
      // gone meanwhile
    }
  }
  return times;
}

/** The processes whose CPU time is counted. */
interface IPids {
  readonly gateway: number | undefined;
  readonly minio: number | undefined;
}

/** A snapshot of the counters. */
interface ICpuSnapshot {
  readonly gateway: number;
  readonly minio: number;
  readonly client: number;
  readonly kernel: Map<number, number>;
  /** The machine's total busy time. */
  readonly machine: number;
}

function cpuNow(pids: IPids): ICpuSnapshot {
  const own = process.cpuUsage();
  return {
    gateway: processCpuMs(pids.gateway),
    minio: processCpuMs(pids.minio),
    client: (own.user + own.system) / 1000,
    kernel: kernelThreadsCpuMs(),
    machine: machineBusyMs()
  };
}

function cpuSince(pids: IPids, start: ICpuSnapshot): ICpu {
  const now = cpuNow(pids);
  const gateway = now.gateway - start.gateway;
  const minio = now.minio - start.minio;
  const client = now.client - start.client;
  let kernel = 0;
  // Kernel workers come and go: count the ones alive at the end (new ones from zero).
  for (const [pid, ms] of now.kernel) kernel += Math.max(0, ms - (start.kernel.get(pid) ?? 0));
  const machine = now.machine - start.machine;
  return {
    gateway,
    minio,
    client,
    kernel,
    others: Math.max(0, machine - gateway - minio - client - kernel)
  };
}

function addCpu(a: ICpu, b: ICpu): ICpu {
  return {
    gateway: a.gateway + b.gateway,
    minio: a.minio + b.minio,
    client: a.client + b.client,
    kernel: a.kernel + b.kernel,
    others: a.others + b.others
  };
}

const NO_CPU: ICpu = { gateway: 0, minio: 0, client: 0, kernel: 0, others: 0 };

/** How busy the rest of the machine is, in cores, over `ms`. */
async function otherLoad(ms: number, pids: IPids): Promise<number> {
  const start = cpuNow(pids);
  await sleep(ms);
  return cpuSince(pids, start).others / ms;
}

// ---------------------------------------------------------------------------------------------
// Object store

/**
 * Check that each key gained exactly the expected number of versions, and that its latest
 * version is the last save sent to it.
 */
async function checkVersions(
  client: S3Client,
  prefix: string,
  before: ReadonlyMap<string, number>,
  added: ReadonlyMap<string, number>,
  lastIds: ReadonlyMap<string, string>,
  what: string
): Promise<Map<string, number>> {
  const after = await versionCounts(client, BUCKET, prefix);
  for (const [key, count] of added) {
    const expected = (before.get(key) ?? 0) + count;
    if (after.get(key) !== expected) {
      throw new Error(`${what}: ${key} has ${after.get(key) ?? 0} versions, expected ${expected}`);
    }
  }
  await runConcurrent(lastIds.size, 8, async index => {
    const [key, id] = [...lastIds.entries()][index];
    const body = await readObject(client, BUCKET, key);
    if (!body.includes(id)) {
      throw new Error(`${what}: the latest version of ${key} is not the last save (${id})`);
    }
  });
  return after;
}

// ---------------------------------------------------------------------------------------------
// Measurement 1: sustained throughput

/**
 * One burst of saves through a gateway: with archiving on, timed until its journal is empty and
 * checked in MinIO; with archiving off, timed until the last save is answered.
 */
async function saveRound(
  saver: ContentsSaver,
  kind: 'archive' | 'off' | 'jupyter',
  workload: Workload,
  s3: S3Client,
  plan: IThroughputPlan,
  count: number,
  pids: IPids
): Promise<IThroughputRound> {
  const archiving = kind === 'archive';
  const prefix = objectKeyOf(WORKSPACE_PREFIX, 'tp/');
  const before = archiving ? await versionCounts(s3, BUCKET, prefix) : new Map<string, number>();
  const ids = Array.from({ length: count }, () => nextId('tp'));
  const bodies = ids.map(id => workload.putBody(id));
  const added = new Map<string, number>();
  const lastIds = new Map<string, string>();
  for (let i = 0; i < count; i++) {
    const key = objectKeyOf(WORKSPACE_PREFIX, pathName('tp', i, plan.paths));
    added.set(key, (added.get(key) ?? 0) + 1);
    lastIds.set(key, ids[i]);
  }
  const locks = new PathLocks();
  const latencies: number[] = [];
  const cpuStart = cpuNow(pids);
  const start = performance.now();
  await runConcurrent(count, plan.concurrency, async i => {
    const path = pathName('tp', i, plan.paths);
    const { value } = await locks.run(path, () => saver.save(path, bodies[i]));
    latencies.push(value);
  });
  const answered = performance.now();
  const drained = archiving ? await (saver as SaveClient).drained(2) : answered;
  const cpu = cpuSince(pids, cpuStart);
  if (archiving) await checkVersions(s3, prefix, before, added, lastIds, 'archive round');
  return {
    kind,
    count,
    seconds: (drained - start) / 1000,
    requestSeconds: (answered - start) / 1000,
    latencies,
    cpu
  };
}

/** The same bodies written with PutObject from this process. */
async function rawRound(
  writer: S3Client,
  s3: S3Client,
  workload: Workload,
  plan: IThroughputPlan,
  count: number,
  pids: IPids
): Promise<IThroughputRound> {
  const prefix = `${RAW_PREFIX}/tp/`;
  const before = await versionCounts(s3, BUCKET, prefix);
  const puts = Array.from({ length: count }, (_, i) => {
    const id = nextId('rw');
    const body = workload.diskBody(id);
    return {
      id,
      key: objectKeyOf(RAW_PREFIX, pathName('tp', i, plan.paths)),
      body,
      sha256: createHash('sha256').update(body).digest('hex')
    };
  });
  const added = new Map<string, number>();
  const lastIds = new Map<string, string>();
  for (const put of puts) {
    added.set(put.key, (added.get(put.key) ?? 0) + 1);
    lastIds.set(put.key, put.id);
  }
  const locks = new PathLocks();
  const latencies: number[] = [];
  const cpuStart = cpuNow(pids);
  const start = performance.now();
  await runConcurrent(count, plan.concurrency, async i => {
    const put = puts[i];
    await locks.run(put.key, async () => {
      const sent = performance.now();
      const output = await writer.send(
        new PutObjectCommand({
          Bucket: BUCKET,
          Key: put.key,
          Body: put.body,
          ContentType: 'application/x-ipynb+json',
          Metadata: { 'save-id': put.id, sha256: put.sha256 }
        }),
        { abortSignal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }
      );
      latencies.push(performance.now() - sent);
      if (output.VersionId === undefined) throw new Error(`PutObject ${put.key}: no version id`);
    });
  });
  const done = performance.now();
  const cpu = cpuSince(pids, cpuStart);
  await checkVersions(s3, prefix, before, added, lastIds, 'raw round');
  return {
    kind: 'raw',
    count,
    seconds: (done - start) / 1000,
    requestSeconds: (done - start) / 1000,
    latencies,
    cpu
  };
}

async function measureThroughput(
  savers: { on: SaveClient; off: SaveClient | undefined; jupyter: IPlainJupyter | undefined },
  workload: Workload,
  s3: S3Client,
  writer: S3Client,
  minio: IObjectServer,
  plan: IThroughputPlan
): Promise<IThroughputResult> {
  const kinds: ThroughputKind[] = ['archive', 'raw'];
  if (savers.off !== undefined) kinds.push('off');
  if (savers.jupyter !== undefined) kinds.push('jupyter');
  const once = (kind: ThroughputKind, count: number): Promise<IThroughputRound> => {
    if (kind === 'raw') {
      return rawRound(writer, s3, workload, plan, count, { gateway: undefined, minio: minio.pid });
    }
    if (kind === 'jupyter') {
      const jupyter = savers.jupyter;
      if (jupyter === undefined) throw new Error('no plain Jupyter Server');
      const pids: IPids = { gateway: jupyter.server.pid, minio: minio.pid };
      return saveRound(jupyter.saver, kind, workload, s3, plan, count, pids);
    }
    const saver = kind === 'off' ? savers.off : savers.on;
    if (saver === undefined) throw new Error('no gateway with archiving off');
    const pids: IPids = { gateway: saver.gateway.record.pid, minio: minio.pid };
    return saveRound(saver, kind, workload, s3, plan, count, pids);
  };
  log(`throughput: warm-up, ${plan.warmup} of each (${kinds.join(', ')})`);
  for (const kind of kinds) await once(kind, plan.warmup);
  const rounds: IThroughputRound[] = [];
  for (let round = 0; round < plan.rounds; round++) {
    // Each kind goes first in turn.
    const order = kinds.map((_, i) => kinds[(i + round) % kinds.length]);
    for (const kind of order) {
      const result = await once(kind, plan.saves);
      rounds.push(result);
      log(
        `throughput round ${round + 1} ${kind}: ${formatRate(result.count / result.seconds)}/s ` +
          `(${result.seconds.toFixed(2)} s; other processes ${(result.cpu.others / (result.seconds * 1000)).toFixed(2)} cores)`
      );
    }
  }
  return { plan, rounds };
}

/** Measurement 2: save-to-archived latency, on the debug gateway. */
async function measureLatency(
  saver: SaveClient,
  workload: Workload,
  s3: S3Client,
  minio: IObjectServer,
  plan: IPlans['latency']
): Promise<ILatencyResult> {
  const pids: IPids = { gateway: saver.gateway.record.pid, minio: minio.pid };
  const dir = 'lat';
  log(`latency: warm-up, ${plan.warmup} saves`);
  await pacedStream(saver, workload, dir, plan, plan.warmup);
  await saver.drained();
  const prefix = objectKeyOf(WORKSPACE_PREFIX, `${dir}/`);
  const before = await versionCounts(s3, BUCKET, prefix);
  const sentPerKey = new Map<string, number>();
  const poller = new VersionPoller(s3, BUCKET, plan.pollMs, ARCHIVE_TIMEOUT_MS);
  const seen: Array<Promise<void>> = [];
  log(
    `latency: ${plan.saves} saves at ${plan.rate}/s over ${plan.paths} paths, polling every ${plan.pollMs} ms`
  );
  poller.start();
  const cpuStart = cpuNow(pids);
  const start = performance.now();
  let saves: IPacedSave[];
  try {
    saves = await pacedStream(saver, workload, dir, plan, plan.saves, save => {
      const key = objectKeyOf(WORKSPACE_PREFIX, save.path);
      const nth = (sentPerKey.get(key) ?? 0) + 1;
      sentPerKey.set(key, nth);
      seen.push(
        poller.expect(key, (before.get(key) ?? 0) + nth).then(at => {
          save.seenAt = at;
        })
      );
    });
    await Promise.all(seen);
  } finally {
    await poller.stop();
  }
  const seconds = (performance.now() - start) / 1000;
  const cpu = cpuSince(pids, cpuStart);
  await saver.drained();

  // Match versions to saves (the k-th new version of a key is the k-th save to it) and check.
  const versions = await listVersions(s3, BUCKET, prefix);
  const byKey = new Map<string, ObjectVersion[]>();
  for (const version of versions) {
    if (version.Key === undefined) continue;
    byKey.set(version.Key, [...(byKey.get(version.Key) ?? []), version]);
  }
  const savesByKey = new Map<string, IPacedSave[]>();
  for (const save of saves) {
    const key = objectKeyOf(WORKSPACE_PREFIX, save.path);
    savesByKey.set(key, [...(savesByKey.get(key) ?? []), save]);
  }
  const checks: Array<{ key: string; save: IPacedSave; versionId: string }> = [];
  for (const [key, list] of savesByKey) {
    const all = byKey.get(key) ?? [];
    if (all.length !== (before.get(key) ?? 0) + list.length) {
      throw new Error(`latency: ${key} has ${all.length} versions, expected more`);
    }
    // Newest first: the newest list.length versions, oldest of them first.
    const newest = all.slice(0, list.length).reverse();
    list.forEach((save, k) => {
      const versionId = newest[k].VersionId;
      if (versionId === undefined) throw new Error(`latency: a version of ${key} has no id`);
      save.versionId = versionId;
      checks.push({ key, save, versionId });
    });
  }
  await runConcurrent(checks.length, 8, async index => {
    const { key, save, versionId } = checks[index];
    if (!(await readObject(s3, BUCKET, key, versionId)).includes(save.id)) {
      throw new Error(`latency: version ${versionId} of ${key} is not save ${save.id}`);
    }
  });

  // The gateway's own account of each archive (debug log).
  const byVersion = new Map(saves.map(save => [save.versionId, save]));
  const queuedMs: number[] = [];
  const uploadMs: number[] = [];
  let logMatched = 0;
  for (const entry of logLines(saver.gateway, 'archived')) {
    if (typeof entry.versionId !== 'string' || !byVersion.has(entry.versionId)) continue;
    logMatched++;
    queuedMs.push(Number(entry.queuedMs));
    uploadMs.push(Number(entry.uploadMs));
  }
  return {
    plan,
    saves,
    pollRtts: poller.rtts,
    queuedMs,
    uploadMs,
    logMatched,
    cpu,
    seconds
  };
}

/** Measurement 3: PUT latency with archiving on and off, alternating rounds. */
async function measureOnOff(
  savers: { on: SaveClient; off: SaveClient; jupyter: IPlainJupyter | undefined },
  workload: Workload,
  minio: IObjectServer,
  plan: IPacedPlan
): Promise<IOnOffResult> {
  const dir = 'onoff';
  const sides: PacedSide[] =
    savers.jupyter === undefined ? ['on', 'off'] : ['on', 'off', 'jupyter'];
  const target = (side: PacedSide): { saver: ContentsSaver; pid: number } => {
    if (side === 'jupyter') {
      if (savers.jupyter === undefined) throw new Error('no plain Jupyter Server');
      return { saver: savers.jupyter.saver, pid: savers.jupyter.server.pid };
    }
    return { saver: savers[side], pid: savers[side].gateway.record.pid };
  };
  log(`save latency on/off: warm-up, ${plan.warmup} saves each (${sides.join(', ')})`);
  for (const side of sides) {
    await pacedStream(target(side).saver, workload, dir, plan, plan.warmup);
    if (side === 'on') await savers.on.drained();
  }
  const rounds: IPacedRound[] = [];
  for (let round = 0; round < plan.rounds; round++) {
    // Each side goes first in turn.
    const order = sides.map((_, i) => sides[(i + round) % sides.length]);
    for (const side of order) {
      const { saver, pid } = target(side);
      const pids: IPids = { gateway: pid, minio: minio.pid };
      const cpuStart = cpuNow(pids);
      const start = performance.now();
      const saves = await pacedStream(saver, workload, dir, plan, plan.saves);
      const answered = performance.now();
      // Archiving's background work belongs to its round: wait until it is done.
      const drained = side === 'on' ? await savers.on.drained(2) : answered;
      const cpu = cpuSince(pids, cpuStart);
      rounds.push({
        side,
        saves,
        seconds: (drained - start) / 1000,
        cpu,
        drainMs: drained - answered
      });
      const lat = latency(saves.map(save => save.putMs));
      log(
        `save latency round ${round + 1} ${side}: p50 ${formatMs(lat.p50)}, p99 ${formatMs(lat.p99)}`
      );
      await sleep(200);
    }
  }
  return { plan, rounds };
}

// ---------------------------------------------------------------------------------------------
// Profiling

// ---------------------------------------------------------------------------------------------
// Statistics and report

function us(ms: number): string {
  return Number.isFinite(ms) ? `${Math.round(ms * 1000).toLocaleString('en-US')} µs` : 'n/a';
}

function cores(cpuMs: number, seconds: number): string {
  return (cpuMs / (seconds * 1000)).toFixed(2);
}

/** The rounds of measurement 1 by kind, and the archive/raw ratios of rounds of the same index. */
function throughputPairs(result: IThroughputResult): {
  archive: IThroughputRound[];
  raw: IThroughputRound[];
  off: IThroughputRound[];
  jupyter: IThroughputRound[];
  ratios: number[];
  median: number;
  pooled: number;
} {
  const of = (kind: ThroughputKind): IThroughputRound[] =>
    result.rounds.filter(round => round.kind === kind);
  const [archive, raw, off, jupyter] = [of('archive'), of('raw'), of('off'), of('jupyter')];
  const ratios = archive.map((round, i) => rateOf([round]) / rateOf([raw[i]]));
  return {
    archive,
    raw,
    off,
    jupyter,
    ratios,
    median: median(ratios),
    pooled: rateOf(archive) / rateOf(raw)
  };
}

/** Saves (or writes) per second over rounds, total over total. */
function rateOf(rounds: readonly IThroughputRound[]): number {
  return (
    rounds.reduce((sum, round) => sum + round.count, 0) /
    rounds.reduce((sum, round) => sum + round.seconds, 0)
  );
}

/** The same over the time until the last request was answered. */
function requestRateOf(rounds: readonly IThroughputRound[]): number {
  return (
    rounds.reduce((sum, round) => sum + round.count, 0) /
    rounds.reduce((sum, round) => sum + round.requestSeconds, 0)
  );
}

/** CPU time per item (save or raw write) of the processes involved, and the kernel's. */
function cpuPerItem(rounds: readonly IThroughputRound[], viaGateway: boolean): number {
  const n = rounds.reduce((sum, round) => sum + round.count, 0);
  return (
    rounds.reduce(
      (sum, round) =>
        sum +
        (viaGateway ? round.cpu.gateway : 0) +
        round.cpu.minio +
        round.cpu.client +
        round.cpu.kernel,
      0
    ) / n
  );
}

/** The CPU table's row of some rounds. */
function cpuRow(label: string, rounds: readonly IThroughputRound[], viaGateway: boolean): string {
  const total = (key: keyof ICpu): number => rounds.reduce((sum, round) => sum + round.cpu[key], 0);
  const n = rounds.reduce((sum, round) => sum + round.count, 0);
  const s = rounds.reduce((sum, round) => sum + round.seconds, 0);
  const ours = (viaGateway ? total('gateway') : 0) + total('minio') + total('client');
  return `| ${[
    label,
    viaGateway ? us(total('gateway') / n) : '–',
    us(total('minio') / n),
    us(total('client') / n),
    us(total('kernel') / n),
    us((ours + total('kernel')) / n),
    viaGateway ? cores(total('gateway'), s) : '–',
    cores(total('minio'), s),
    cores(total('client'), s),
    cores(total('kernel'), s),
    cores(total('others'), s),
    cores(ours + total('kernel') + total('others'), s)
  ].join(' | ')} |`;
}

const CPU_HEADER = [
  '| Path | gateway CPU / save | MinIO CPU / save | this process CPU / save | kernel threads CPU / save | total / save | cores: gateway | MinIO | this process | kernel threads | other processes | total |',
  '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|'
];

function throughputSection(result: IThroughputResult, run: IRunResult): string[] {
  const { plan } = result;
  const { archive, raw, off, jupyter, ratios, median: ratio, pooled } = throughputPairs(result);
  const withOff = off.length === archive.length;
  const withJupyter = jupyter.length === archive.length;
  const rows = archive.map((round, i) => {
    const other = raw[i];
    const all = [round, other, ...(withOff ? [off[i]] : []), ...(withJupyter ? [jupyter[i]] : [])];
    const seconds = all.reduce((sum, r) => sum + r.seconds, 0);
    const others = all.reduce((sum, r) => sum + r.cpu.others, 0);
    const archiveLatency = latency(round.latencies);
    const rawLatency = latency(other.latencies);
    return [
      String(i + 1),
      `${formatRate(rateOf([round]))} (${round.seconds.toFixed(2)} s)`,
      `${formatRate(rateOf([other]))} (${other.seconds.toFixed(2)} s)`,
      `**${formatRatio(ratios[i])}**`,
      formatRate(requestRateOf([round])),
      formatMs((round.seconds - round.requestSeconds) * 1000),
      ...(withOff
        ? [formatRate(requestRateOf([off[i]])), formatRatio(rateOf([round]) / rateOf([off[i]]))]
        : []),
      ...(withJupyter
        ? [
            formatRate(requestRateOf([jupyter[i]])),
            `**${formatRatio(rateOf([round]) / rateOf([jupyter[i]]))}**`
          ]
        : []),
      `${formatMs(archiveLatency.p50)} / ${formatMs(archiveLatency.p99)}`,
      `${formatMs(rawLatency.p50)} / ${formatMs(rawLatency.p99)}`,
      cores(others, seconds)
    ].join(' | ');
  });
  const header = [
    'Round',
    'archived saves/s (first PUT → last version confirmed)',
    'raw PutObject/s',
    'archived/raw',
    'PUTs answered/s (archiving on)',
    'last PUT answered → journal empty',
    ...(withOff ? ['saves/s with archiving off', 'archived/off'] : []),
    ...(withJupyter ? ['plain Jupyter saves/s', 'archived/Jupyter'] : []),
    'gateway PUT p50 / p99 (on)',
    'raw PutObject p50 / p99',
    'other processes (cores)'
  ];
  const offLatency = latency(off.flatMap(round => round.latencies));
  const jupyterLatency = latency(jupyter.flatMap(round => round.latencies));
  return [
    `### 1. Sustained archive throughput (${plan.saves.toLocaleString('en-US')} saves over ${plan.paths} paths, ${plan.concurrency} at a time)`,
    '',
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '--:').join('|')}|`,
    ...rows.map(row => `| ${row} |`),
    `| all | ${formatRate(rateOf(archive))} | ${formatRate(rateOf(raw))} | median **${formatRatio(ratio)}**, pooled ${formatRatio(pooled)} | ${formatRate(requestRateOf(archive))} | | ${
      withOff
        ? `${formatRate(requestRateOf(off))} | ${formatRatio(rateOf(archive) / rateOf(off))} | `
        : ''
    }${
      withJupyter
        ? `${formatRate(requestRateOf(jupyter))} | **${formatRatio(rateOf(archive) / rateOf(jupyter))}** | `
        : ''
    }${formatMs(latency(archive.flatMap(r => r.latencies)).p50)} / ${formatMs(latency(archive.flatMap(r => r.latencies)).p99)} | ${formatMs(latency(raw.flatMap(r => r.latencies)).p50)} / ${formatMs(latency(raw.flatMap(r => r.latencies)).p99)} | |`,
    '',
    `The target is checked against the median of the rounds' archived/raw ratios: **${formatRatio(ratio)}** (pooled, total over total: ${formatRatio(pooled)}). ` +
      `Each round sends ${plan.saves.toLocaleString('en-US')} saves of the ${run.notebookBytes.toLocaleString('en-US')}-byte notebook ` +
      `(PUT body ${run.putBodyBytes.toLocaleString('en-US')} bytes) to paths \`tp/nb-00.ipynb\` … \`tp/nb-${String(plan.paths - 1).padStart(2, '0')}.ipynb\` in turn, ` +
      `${plan.concurrency} at a time (one at a time per path), and is timed until the gateway's journal has no pending record; ` +
      'the version counts and the latest version of every key are then checked in MinIO. The raw round writes the same bytes ' +
      `to \`${RAW_PREFIX}/tp/…\` with \`PutObject\` (AWS SDK, ${plan.concurrency} at a time, keep-alive), timed to the last answer. ` +
      (withOff
        ? `For comparison, the same saves also go through the gateway with archiving off, timed to the last answer (PUT p50 / p99 ${formatMs(offLatency.p50)} / ${formatMs(offLatency.p99)}): ` +
          'what the contents API alone sustains on this machine. '
        : '') +
      (withJupyter
        ? `The reference: the same saves, same client and schedule, to plain Jupyter Server (no gateway, no archiving; its own root), ` +
          `timed to the last answer (PUT p50 / p99 ${formatMs(jupyterLatency.p50)} / ${formatMs(jupyterLatency.p99)}); ` +
          'archived/Jupyter compares saves archived per second with the saves per second plain Jupyter answers. '
        : '') +
      `Each kind goes first in turn, after a warm-up of ${plan.warmup} of each.`,
    '',
    'CPU per save (or per raw write) and cores used, over these rounds:',
    '',
    ...CPU_HEADER,
    cpuRow('saves, archiving on', archive, true),
    cpuRow('raw PutObject', raw, false),
    ...(withOff ? [cpuRow('saves, archiving off', off, true)] : []),
    ...(withJupyter
      ? [cpuRow('saves, plain Jupyter Server (its CPU in the gateway columns)', jupyter, true)]
      : []),
    '',
    `Raw total CPU per write ÷ archived total CPU per save: ${formatRatio(cpuPerItem(raw, false) / cpuPerItem(archive, true))}; ` +
      "when the cores are the limit (a total near the machine's cores), that is about the throughput ratio to expect. " +
      "Kernel threads and other processes are everything outside the three processes named, so part of the kernel threads' " +
      'time is the fsyncs of the gateway and of MinIO, and part of "other processes" may be too (it includes processes too ' +
      'short-lived to be seen at both ends of a round).',
    ''
  ];
}

function latencySection(result: ILatencyResult): string[] {
  const { plan, saves } = result;
  const toArchived = latency(saves.map(save => (save.seenAt ?? NaN) - save.sentAt));
  const afterAnswer = latency(saves.map(save => (save.seenAt ?? NaN) - save.sentAt - save.putMs));
  const put = latency(saves.map(save => save.putMs));
  const queued = latency(result.queuedMs);
  const upload = latency(result.uploadMs);
  const rtt = latency(result.pollRtts);
  const late = latency(saves.map(save => save.lateMs));
  const row = (label: string, l: ILatency): string =>
    `| ${label} | ${l.n} | ${formatMs(l.p50)} | ${formatMs(l.p90)} | ${formatMs(l.p99)} | ${formatMs(l.max)} |`;
  return [
    `### 2. Save-to-archived latency (${plan.saves} saves at ${plan.rate}/s over ${plan.paths} paths)`,
    '',
    '| Interval | n | p50 | p90 | p99 | max |',
    '|---|--:|--:|--:|--:|--:|',
    row('**PUT sent → version listed by MinIO**', toArchived),
    row('PUT answered → version listed', afterAnswer),
    row('PUT (save answered)', put),
    row('gateway log: `queuedMs` (journal append start → upload start)', queued),
    row('gateway log: `uploadMs` (PutObject)', upload),
    row('listing round trip (poll resolution, plus the poll interval)', rtt),
    '',
    `Measured from outside: each save carries a unique id; while a key has saves outstanding, ` +
      `\`ListObjectVersions\` on that key runs every ${plan.pollMs} ms, and a save counts as archived when the ` +
      'answer of the first listing that shows its version arrives (an upper bound: late by at most the poll interval ' +
      `plus a listing's round trip). Afterwards every version was read back and matched to its save by id. ` +
      `The log figures come from the gateway's \`archived\` debug lines (${result.logMatched} of ${saves.length} matched by version id). ` +
      `This stream ran on a separate gateway started with \`--log-level debug\`, after ${plan.warmup} warm-up saves; ` +
      `sends were late on their schedule by ${formatMs(late.p50)} p50, ${formatMs(late.max)} at most; ` +
      `other processes used ${cores(result.cpu.others, result.seconds)} cores meanwhile.`,
    ''
  ];
}

function onOffStats(result: IOnOffResult): Record<'on' | 'off', ILatency> & {
  /** Plain Jupyter Server, when it ran. */
  jupyter: ILatency | undefined;
  cpu: Record<
    PacedSide,
    { gateway: number; minio: number; kernel: number; others: number; saves: number }
  >;
  /** on/off p50 of each round (the two sides' rounds of the same index ran back to back). */
  ratios: number[];
  /** Their median: what the target is checked against. */
  ratio: number;
  /** on − off p50 of each round, ms. */
  differences: number[];
} {
  const get = (side: PacedSide) => result.rounds.filter(round => round.side === side);
  const p50s = (side: 'on' | 'off'): number[] =>
    get(side).map(round => latency(round.saves.map(save => save.putMs)).p50);
  const [onP50, offP50] = [p50s('on'), p50s('off')];
  const ratios = onP50.map((p50, i) => p50 / offP50[i]);
  const differences = onP50.map((p50, i) => p50 - offP50[i]);
  const stats = (side: PacedSide): ILatency =>
    latency(get(side).flatMap(round => round.saves.map(save => save.putMs)));
  const cpu = (side: PacedSide) => {
    const rounds = get(side);
    const sum = rounds.reduce((acc, round) => addCpu(acc, round.cpu), NO_CPU);
    const seconds = rounds.reduce((acc, round) => acc + round.seconds, 0);
    const saves = rounds.reduce((acc, round) => acc + round.saves.length, 0);
    return {
      gateway: sum.gateway / saves,
      minio: sum.minio / saves,
      kernel: sum.kernel / saves,
      others: sum.others / (seconds * 1000),
      saves
    };
  };
  return {
    on: stats('on'),
    off: stats('off'),
    jupyter: get('jupyter').length > 0 ? stats('jupyter') : undefined,
    cpu: { on: cpu('on'), off: cpu('off'), jupyter: cpu('jupyter') },
    ratios,
    ratio: median(ratios),
    differences
  };
}

function onOffSection(result: IOnOffResult): string[] {
  const { plan } = result;
  const { on, off, jupyter, cpu, ratios, ratio, differences } = onOffStats(result);
  const perRound = (side: PacedSide): string =>
    result.rounds
      .filter(round => round.side === side)
      .map(round => formatMs(latency(round.saves.map(save => save.putMs)).p50))
      .join(', ');
  const row = (label: string, l: ILatency, side: PacedSide): string =>
    `| ${label} | ${l.n} | ${formatMs(l.p50)} | ${formatMs(l.p90)} | ${formatMs(l.p99)} | ${formatMs(l.max)} | ${perRound(side)} | ${us(cpu[side].gateway)} | ${us(cpu[side].minio)} | ${us(cpu[side].kernel)} | ${cpu[side].others.toFixed(2)} |`;
  const drain = latency(result.rounds.filter(r => r.side === 'on').map(r => r.drainMs));
  return [
    `### 3. Save latency with archiving on and off (${plan.rounds} rounds × ${plan.saves} saves per side at ${plan.rate}/s over ${plan.paths} paths)`,
    '',
    '| Gateway | n | PUT p50 | p90 | p99 | max | p50 per round | gateway CPU / save | MinIO CPU / save | kernel threads CPU / save | other processes (cores) |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    row('archiving on (MinIO)', on, 'on'),
    row('archiving off (`workspace_prefix` empty)', off, 'off'),
    ...(jupyter !== undefined
      ? [
          row(
            '**plain Jupyter Server** (no gateway; its CPU in the gateway column)',
            jupyter,
            'jupyter'
          ),
          `| on/Jupyter, pooled (on − Jupyter) | | **${formatRatio(on.p50 / jupyter.p50)}** (${formatSignedMs(on.p50 - jupyter.p50)}) | ${formatRatio(on.p90 / jupyter.p90)} | **${formatRatio(on.p99 / jupyter.p99)}** | ${formatRatio(on.max / jupyter.max)} | | ${formatRatio(cpu.on.gateway / cpu.jupyter.gateway)} | | | |`
        ]
      : []),
    `| on/off, pooled (on − off) | | ${formatRatio(on.p50 / off.p50)} (${formatSignedMs(on.p50 - off.p50)}) | ${formatRatio(on.p90 / off.p90)} | ${formatRatio(on.p99 / off.p99)} | ${formatRatio(on.max / off.max)} | ${ratios.map(formatRatio).join(', ')} | ${formatRatio(cpu.on.gateway / cpu.off.gateway)} | | ${formatRatio(cpu.on.kernel / cpu.off.kernel)} | |`,
    '',
    `The target is checked against the median of the rounds' on/off p50 ratios: **${formatRatio(ratio)}** ` +
      `(per round ${ratios.map(formatRatio).join(', ')}; on − off ${differences.map(formatSignedMs).join(', ')}). ` +
      'The load of other jobs moves the p50 of whole rounds by more than archiving does, so the ratio of the pooled ' +
      'percentiles (the last row) blurs the difference the rounds show side by side.',
    '',
    'PUT latency is from the first byte sent to the last byte of the answer, one keep-alive client, the saves sent on a ' +
      `fixed schedule whether or not the previous one was answered. Rounds alternate between the ${
        jupyter !== undefined
          ? 'gateways and plain Jupyter Server (the reference, same client and schedule)'
          : 'gateways'
      } (the one that goes first rotates too), after ${plan.warmup} warm-up saves each; an "on" round lasts until its journal is empty ` +
      `(${formatMs(drain.p50)} p50 after its last answer), so its CPU columns include the uploads.`,
    ''
  ];
}

function checks(run: IRunResult): ITargetCheck[] {
  const list: ITargetCheck[] = [];
  if (run.throughput) {
    const { median: ratio, pooled } = throughputPairs(run.throughput);
    list.push({
      text:
        `archive throughput ≥ ${TARGET_THROUGHPUT_RATIO * 100} % of raw PutObject: ${(ratio * 100).toFixed(1)} % ` +
        `(median of the round pairs; pooled ${(pooled * 100).toFixed(1)} %)`,
      met: ratio >= TARGET_THROUGHPUT_RATIO
    });
  }
  if (run.onoff) {
    const { on, off, jupyter, ratio, differences } = onOffStats(run.onoff);
    list.push({
      text:
        `save latency p50 with archiving on ≤ ${TARGET_SAVE_LATENCY_RATIO}x off: ${formatRatio(ratio)} ` +
        `(median of the rounds' p50 ratios, on − off ${formatSignedMs(median(differences))}; pooled ` +
        `${formatMs(on.p50)} vs ${formatMs(off.p50)}, ${formatRatio(on.p50 / off.p50)}; ` +
        `p99 ${formatMs(on.p99)} vs ${formatMs(off.p99)}, ${formatRatio(on.p99 / off.p99)})`,
      met: ratio <= TARGET_SAVE_LATENCY_RATIO
    });
    if (jupyter !== undefined) {
      list.push(
        {
          text: `paced save p50 archiving on ≤ ${TARGET_JUPYTER_P50_RATIO.toFixed(1)}x plain Jupyter: ${formatRatio(on.p50 / jupyter.p50)} (${formatMs(on.p50)} vs ${formatMs(jupyter.p50)}, pooled)`,
          met: on.p50 / jupyter.p50 <= TARGET_JUPYTER_P50_RATIO
        },
        {
          text: `paced save p99 archiving on ≤ ${TARGET_JUPYTER_P99_RATIO.toFixed(1)}x plain Jupyter: ${formatRatio(on.p99 / jupyter.p99)} (${formatMs(on.p99)} vs ${formatMs(jupyter.p99)}, pooled)`,
          met: on.p99 / jupyter.p99 <= TARGET_JUPYTER_P99_RATIO
        }
      );
    }
  }
  if (run.throughput) {
    const { archive, jupyter } = throughputPairs(run.throughput);
    if (jupyter.length > 0) {
      const burst = rateOf(archive) / rateOf(jupyter);
      list.push({
        text: `burst saves archived/s ≥ ${TARGET_JUPYTER_BURST_RATIO.toFixed(1)}x plain Jupyter's saves/s: ${formatRatio(burst)} (${formatRate(rateOf(archive))} vs ${formatRate(rateOf(jupyter))}, pooled)`,
        met: burst >= TARGET_JUPYTER_BURST_RATIO
      });
    }
    const drains = archive.map(round => round.seconds - round.requestSeconds);
    list.push({
      text: `every burst save archived within ${TARGET_BURST_DRAIN_SECONDS} s of the last answer: at most ${formatMs(Math.max(...drains) * 1000)} (per round ${drains.map(d => formatMs(d * 1000)).join(', ')})`,
      met: Math.max(...drains) <= TARGET_BURST_DRAIN_SECONDS
    });
    const { off, raw } = throughputPairs(run.throughput);
    if (off.length > 0) {
      const perSave = (rounds: readonly IThroughputRound[], key: keyof ICpu): number =>
        rounds.reduce((sum, round) => sum + round.cpu[key], 0) /
        rounds.reduce((sum, round) => sum + round.count, 0);
      const added = perSave(archive, 'gateway') - perSave(off, 'gateway');
      const rawCpu = perSave(raw, 'client');
      list.push({
        text:
          `gateway CPU added by archiving a save ≤ ${TARGET_ARCHIVE_CPU_RATIO}x a raw PutObject's CPU: ` +
          `${formatRatio(added / rawCpu)} (${formatMs(added)} on − off, against ${formatMs(rawCpu)} ` +
          'in the raw writer, pooled over the rounds)',
        met: added / rawCpu <= TARGET_ARCHIVE_CPU_RATIO
      });
    }
  }
  return list;
}

function report(
  run: IRunResult,
  command: string,
  seconds: number
): { text: string; allMet: boolean } {
  return reportText({
    title: 'Archive results',
    command,
    machine: machineLine("MinIO's drive, the gateways' roots and journals"),
    seconds,
    head: [
      `Object store: MinIO ${run.minioVersion} (single drive, versioned bucket \`${BUCKET}\`) at \`${run.endpoint}\`; ` +
        `the gateways with default settings (\`max_threads\` 16, \`object_checksums\` when_supported)`,
      `Notebook: ${run.notebookBytes.toLocaleString('en-US')} bytes on disk (an archived version), ` +
        `PUT body ${run.putBodyBytes.toLocaleString('en-US')} bytes`,
      `Other processes on the machine just before the run: ${run.otherCoresBefore.toFixed(2)} cores (2 s sample); ` +
        'per measurement in the tables'
    ],
    sections: [
      ...(run.throughput ? throughputSection(run.throughput, run) : []),
      ...(run.latency ? latencySection(run.latency) : []),
      ...(run.onoff ? onOffSection(run.onoff) : [])
    ],
    checks: checks(run)
  });
}

// ---------------------------------------------------------------------------------------------
// Main

type GatewayRole = 'on' | 'off' | 'debug';

/** Start one gateway archiving to MinIO (or not, for "off"), and check what its log says. */
async function startGateway(
  role: GatewayRole,
  minio: IObjectServer,
  profileDir: string | undefined,
  spansDir: string | undefined
): Promise<IGatewayProcess> {
  const args = [
    ...labDefaults(),
    '--log-level',
    role === 'debug' ? 'debug' : 'info',
    `--StoreSettings.object_endpoint_url=${minio.endpoint}`,
    `--StoreSettings.object_bucket=${BUCKET}`
  ];
  if (role === 'off') args.push('--StoreSettings.workspace_prefix=');
  const preloads: string[] = [];
  if (profileDir !== undefined && role === 'on') {
    await mkdir(profileDir, { recursive: true });
    preloads.push(`--require ${await writeProfilerPreload(profileDir)}`);
  }
  if (spansDir !== undefined && role !== 'debug') {
    await mkdir(spansDir, { recursive: true });
    preloads.push(
      `--require ${await writeSpanPreload(spansDir, join(REPO_ROOT, 'packages', 'server', 'lib'))}`
    );
  }
  const nodeOptions = preloads.join(' ');
  const gateway = await startGatewayProcess({
    args,
    env: {
      NODE_OPTIONS: nodeOptions,
      STORE_OBJECT_ACCESS_KEY_ID: minio.accessKeyId,
      STORE_OBJECT_SECRET_ACCESS_KEY: minio.secretAccessKey,
      STORE_OBJECT_REGION_NAME: minio.region
    }
  });
  let stopped = false;
  cleanups.push(async () => {
    if (stopped) return;
    stopped = true;
    const code = await gateway.stop('SIGTERM', 60_000);
    if (code !== 0)
      log(`the ${role} gateway exited with ${code}; its stderr:\n${gateway.stderr()}`);
  });
  const expected = role === 'off' ? 'archiving is off' : ARCHIVING_ON_MESSAGE;
  const line = await waitForLogLine(gateway, expected);
  if (role === 'off') log(`off gateway: archiving is off (${String(line.reason)})`);
  log(`${role} gateway on port ${gateway.record.port} (pid ${gateway.record.pid})`);
  return gateway;
}

/**
 * Start plain Jupyter Server (the venv's, default contents manager, no gateway, no archiving)
 * on its own root with the benchmark's directories: the reference the saves are compared with.
 */
async function startPlainJupyter(sockets: number): Promise<IPlainJupyter> {
  const base = await mkdtemp(join(tmpdir(), 'jupyter-store-bench-plain-'));
  cleanups.push(() => rm(base, { recursive: true, force: true }));
  const rootDir = join(base, 'root');
  for (const dir of ['tp', 'onoff']) await mkdir(join(rootDir, dir), { recursive: true });
  const server = await startJupyterServer({ rootDir, stateDir: join(base, 'state') });
  const saver = new ContentsSaver(
    { port: server.port, baseUrl: server.baseUrl, token: server.token },
    'plain Jupyter Server',
    sockets
  );
  // Cleanups run last-in first-out: the client, then the server, then its directory.
  cleanups.push(() => server.stop());
  cleanups.push(async () => saver.close());
  return { server, saver };
}

/** The measurements of this file; resolves with whether their targets were met. */
async function runSaves(command: string): Promise<boolean> {
  const started = Date.now();
  const plan = plans(options.quick);
  const otherCoresBefore = await otherLoad(2_000, { gateway: undefined, minio: undefined });
  log(`other processes used ${otherCoresBefore.toFixed(2)} cores over the last 2 s`);

  log('starting MinIO');
  const minio = await startMinio();
  cleanups.push(() => minio.dispose());
  await createVersionedBucket(minio, BUCKET);
  const s3 = s3ClientFor(minio);
  cleanups.push(async () => s3.destroy());
  // The raw writer is configured as the gateway's store is: keep-alive, as many sockets as the
  // concurrency (max_threads), the SDK's default checksums and retries.
  const writer = new S3Client({
    endpoint: minio.endpoint,
    region: minio.region,
    forcePathStyle: true,
    credentials: { accessKeyId: minio.accessKeyId, secretAccessKey: minio.secretAccessKey },
    maxAttempts: 3,
    requestHandler: new NodeHttpHandler({
      httpAgent: { keepAlive: true, maxSockets: plan.throughput.concurrency },
      connectionTimeout: 5_000,
      requestTimeout: REQUEST_TIMEOUT_MS
    })
  });
  cleanups.push(async () => writer.destroy());

  const profileDir = options.profile
    ? join(tmpdir(), 'jupyter-store-bench-profiles', `archive-${Date.now()}`)
    : undefined;
  const spansDir = options.spans
    ? join(tmpdir(), 'jupyter-store-bench-spans', `archive-${Date.now()}`)
    : undefined;
  const roles: GatewayRole[] = [];
  if (phases.includes('throughput') || phases.includes('onoff')) roles.push('on', 'off');
  if (phases.includes('latency')) roles.push('debug');
  log(`starting jupyter-store lab: ${roles.join(', ')}`);
  const gateways = new Map<GatewayRole, IGatewayProcess>();
  await Promise.all(
    roles.map(async role =>
      gateways.set(role, await startGateway(role, minio, profileDir, spansDir))
    )
  );
  const savers = new Map<GatewayRole, SaveClient>();
  for (const [role, gateway] of gateways) {
    const saver = new SaveClient(gateway, `${role} gateway`, plan.throughput.concurrency);
    savers.set(role, saver);
    cleanups.push(async () => saver.close());
  }
  let jupyter: IPlainJupyter | undefined;
  if (phases.includes('throughput') || phases.includes('onoff')) {
    jupyter = await startPlainJupyter(plan.throughput.concurrency);
    log(`plain Jupyter Server on port ${jupyter.server.port} (pid ${jupyter.server.pid})`);
  }
  const saver = (role: GatewayRole): SaveClient => {
    const found = savers.get(role);
    if (found === undefined) throw new Error(`no ${role} gateway`);
    return found;
  };

  // One save to learn the bytes a save writes (the raw bodies), and that the journal is where
  // the benchmark looks for it.
  const workload = new Workload(NOTEBOOK_BYTES);
  {
    const probe = saver(roles[0]);
    const id = nextId('pr');
    await mkdir(join(probe.gateway.rootDir, 'probe'), { recursive: true });
    await probe.save('probe/nb.ipynb', workload.putBody(id));
    await workload.learnDiskBytes(join(probe.gateway.rootDir, 'probe', 'nb.ipynb'), id);
    if (!existsSync(probe.journalDir)) throw new Error(`no journal at ${probe.journalDir}`);
    await probe.drained();
  }
  for (const gateway of gateways.values()) {
    for (const dir of ['tp', 'lat', 'onoff']) {
      await mkdir(join(gateway.rootDir, dir), { recursive: true });
    }
  }

  let throughput: IThroughputResult | undefined;
  let latencyResult: ILatencyResult | undefined;
  let onoff: IOnOffResult | undefined;
  if (phases.includes('throughput')) {
    const t = Date.now();
    throughput = await measureThroughput(
      { on: saver('on'), off: savers.get('off'), jupyter },
      workload,
      s3,
      writer,
      minio,
      plan.throughput
    );
    log(`throughput: ${((Date.now() - t) / 1000).toFixed(1)} s`);
  }
  if (phases.includes('onoff')) {
    const t = Date.now();
    onoff = await measureOnOff(
      { on: saver('on'), off: saver('off'), jupyter },
      workload,
      minio,
      plan.onoff
    );
    log(`save latency on/off: ${((Date.now() - t) / 1000).toFixed(1)} s`);
  }
  if (phases.includes('latency')) {
    const t = Date.now();
    latencyResult = await measureLatency(saver('debug'), workload, s3, minio, plan.latency);
    log(`save-to-archived latency: ${((Date.now() - t) / 1000).toFixed(1)} s`);
  }

  const result: IRunResult = {
    notebookBytes: workload.diskBytes,
    putBodyBytes: workload.putBytes,
    minioVersion: pinnedObjectServers().MINIO_VERSION ?? 'unknown',
    endpoint: minio.endpoint,
    otherCoresBefore,
    throughput,
    latency: latencyResult,
    onoff
  };
  const { text, allMet } = report(result, command, (Date.now() - started) / 1000);
  process.stdout.write(`\n${text}\n`);
  if (writeDocs(SAVE_PHASES)) {
    writeGeneratedSection(SAVES_SECTION, text);
    log(`wrote ${DOCS_FILE}`);
  }

  if (spansDir !== undefined) {
    for (const role of ['on', 'off'] as const) {
      const gateway = gateways.get(role);
      if (gateway === undefined) continue;
      await gateway.stop('SIGTERM', 60_000);
      const file = join(spansDir, `${gateway.record.pid}.spans.json`);
      if (!existsSync(file)) {
        log(`no ${file}: did the ${role} gateway exit cleanly?`);
        continue;
      }
      process.stdout.write(
        `\n${formatSpans(await readSpans(file), `### Save spans of the "${role}" gateway (${file})`)}\n`
      );
    }
  }
  if (profileDir !== undefined) {
    const on = gateways.get('on');
    if (on !== undefined) {
      await on.stop('SIGTERM', 60_000);
      const file = join(profileDir, `${on.record.pid}.cpuprofile`);
      if (!readdirSync(profileDir).includes(`${on.record.pid}.cpuprofile`)) {
        log(`no ${file}: did the gateway exit cleanly?`);
      } else {
        const summary = await summariseProfile(file, REPO_ROOT);
        process.stdout.write(
          `\n### CPU profile of the "on" gateway (${file})\n\n${formatProfileSummary(summary)}\n`
        );
      }
    }
  }
  return allMet;
}

async function run(): Promise<void> {
  if (!options['skip-build']) build();
  const argv = process.argv.slice(2);
  const command = `npm run bench:archive${argv.length > 0 ? ` -- ${argv.join(' ')}` : ''}`;
  let allMet = true;
  if (observationPhases.length > 0) {
    const started = Date.now();
    const result = await runObservation({
      phases: observationPhases,
      quick: options.quick,
      profile: options.profile
    });
    const { text, allMet: met } = observationReport(result, command, (Date.now() - started) / 1000);
    process.stdout.write(`\n${text}\n`);
    if (writeDocs(OBSERVATION_PHASES)) {
      writeGeneratedSection(OBSERVATION_SECTION, text);
      log(`wrote ${DOCS_FILE}`);
    }
    if (options.profile) process.stdout.write(`\n${observationProfiles(result)}`);
    allMet &&= met;
  }
  if (savePhases.length > 0) allMet = (await runSaves(command)) && allMet;
  if (!allMet) log('some targets were missed (a measurement: the exit status stays 0)');
}

async function main(): Promise<void> {
  const deadlineMs =
    (savePhases.length > 0 ? RUN_DEADLINE_MS.saves : 0) +
    (observationPhases.length > 0 ? RUN_DEADLINE_MS.observation : 0);
  const watchdog = setTimeout(() => {
    log(`the run took more than ${deadlineMs / 60_000} minutes: aborting`);
    void cleanUp().finally(() => process.exit(1));
  }, deadlineMs);
  watchdog.unref();
  try {
    await run();
  } catch (error) {
    // After a signal the servers are going away under the run: that is no failure to report.
    if (!cleaningUp()) log(`failed: ${(error as Error).stack ?? String(error)}`);
    process.exitCode = 1;
  } finally {
    await cleanUp();
    clearTimeout(watchdog);
  }
}

void main();
