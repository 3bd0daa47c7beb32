/**
 * What the gateway adds to the contents API when Python's contents manager answers it
 * (`contents_backend = jupyter`): the phase `contents` of `npm run bench:gateway`. In one run,
 * side by side, the same client sends the same schedule to:
 *
 * - (a) plain JupyterLab from the project venv (`.venv/bin/jupyter lab` on a loopback port, no
 *   gateway), started as the gateway starts its own Jupyter (isolated Jupyter directories, the
 *   token in the environment, the default log level);
 * - (b) `jupyter-store lab --StoreSettings.contents_backend=jupyter`, archiving to the embedded
 *   store: every save is proxied to Jupyter, and once Jupyter answered 2xx the gateway reads the
 *   written file and journals it durably (fsync) before it relays the answer;
 * - (b′) the same archiving to MinIO (the pinned build; skipped with `--skip-minio`);
 * - (b0) the same with archiving off (`workspace_prefix` empty): the proxy alone, which tells the
 *   proxy's share of (b)'s overhead from the relayed-save hook's;
 * - (c) for reference, `jupyter-store lab --StoreSettings.contents_backend=node` (the gateway's
 *   own contents manager), archiving to the embedded store.
 *
 * Two measurements, and a breakdown:
 *
 * 1. Save latency: PUTs of a ~100 KB notebook (as JupyterLab sends a save, a unique id in its
 *    metadata so that every save is new content), paced at 20/s over 20 paths (open loop; one
 *    save per path at a time), in rounds: a plain round before and after every round of another
 *    side, which is compared with the mean of those two (close in time, so that load from
 *    elsewhere that drifts hits both alike), the other sides rotating. An archiving side's
 *    round lasts until its journal is empty, and every round is followed by a quiet time for
 *    the watcher's and the event bus's looks at the last saves, inside the round's CPU window.
 * 2. GET throughput: `GET api/contents/<path>?type=notebook&content=1` of a 100 KB and a 1 MB
 *    notebook with a fixed number of keep-alive workers, in rounds of fixed time scheduled as
 *    the saves', for (a), (b) and (c) (the archive does not touch a GET, so (b′) and (b0) would
 *    repeat (b)).
 * 3. Where a relayed save's time goes: the gateways with the `jupyter` backend time their own
 *    work during the rounds (a preload wraps the built classes' methods: Jupyter's part as the
 *    proxy sees it, the relayed-save hook, its read and its journal append, the answer after
 *    it); and the hook's pieces alone, in this process with the product's own code on the same
 *    file system, paced as the saves are: the read (`lstat`, `readFile`, SHA-256), the journal
 *    append (`ArchiveJournal.append`, durable), and the same record written without its fsyncs
 *    (`writeFileAtomic` with `durable: false`).
 *
 * #### Notes
 * - That a side is what it says is checked, not assumed: each gateway's `GET api/store` must
 *   report the backend asked for (`contents_backend.backend`) and archiving on or off; the answer
 *   of a probe save must come from Jupyter (Tornado's `Server` header) on (a) and (b*), and not
 *   on (c). After the rounds, every save to an archiving gateway must be a version: for each
 *   path, `GET api/store/versions/<path>` lists as many versions as saves were sent, and the
 *   latest holds the id of the last save; the journal is empty and `sources.gateway.seen`
 *   counted every save.
 * - CPU time of the gateway, of its Jupyter, of MinIO and of this process around every round
 *   (`/proc`), and the busy time of the machine, whose remainder is "other processes".
 * - The machine is shared: a round starts once other processes are quiet, and is run again when
 *   they took more than a little of the machine during it (see {@link undisturbed}).
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { lstat, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  StoreInfoSchema,
  VersionContentSchema,
  VersionListingSchema
} from '@jupyter-store/contract';
import { ArchiveJournal } from '../src/archive/journal';
import { writeFileAtomic } from '../src/contents/fileio';
import { labDefaults, startGatewayProcess } from '../test/support/gateway';
import { REPO_ROOT, VENV_DIR, freePort, isolatedEnv } from '../test/support/jupyterServer';
import {
  createVersionedBucket,
  pinnedObjectServers,
  startMinio,
  type IObjectServer
} from '../test/support/objectServers';
import { cleanupStep, log } from './cleanup';
import {
  formatMs,
  formatRate,
  formatRatio,
  formatSignedMs,
  latency,
  median,
  type ILatency
} from './format';
import {
  ARCHIVING_ON_MESSAGE,
  sleep,
  waitForLogLine,
  type IGeneratedSection,
  type ITargetCheck
} from './harness';
import {
  cpuNow,
  cpuSince,
  formatMBps,
  httpGet,
  loadRound,
  otherLoad,
  throughput,
  type ICpu,
  type IHttpEndpoint,
  type IHttpPlan,
  type IHttpTarget,
  type ILoadRound,
  type ILoadServer
} from './load';
import { generateNotebook } from './notebook';
import { formatProfileSummary, summariseProfile, writeProfilerPreload } from './profile';
import {
  ContentsSaver,
  SaveClient,
  Workload,
  nextId,
  pacedStream,
  type IPacedPlan,
  type IPacedSave
} from './saves';

/** The servers compared, side by side. */
export type ContentsSide = 'plain' | 'relay' | 'relayMinio' | 'relayOff' | 'node';

const SIDE_ORDER: readonly ContentsSide[] = ['plain', 'relay', 'relayMinio', 'relayOff', 'node'];

const SIDES: Record<ContentsSide, { readonly tag: string; readonly label: string }> = {
  plain: { tag: '(a)', label: 'plain `jupyter lab`' },
  relay: { tag: '(b)', label: 'gateway, `jupyter` backend, archiving (embedded store)' },
  relayMinio: { tag: '(b′)', label: 'gateway, `jupyter` backend, archiving to MinIO' },
  relayOff: { tag: '(b0)', label: 'gateway, `jupyter` backend, archiving off (proxy only)' },
  node: { tag: '(c)', label: 'gateway, `node` backend, archiving (embedded store)' }
};

/** The sides of the GET load (the archive does not touch a GET). */
const GET_SIDES: readonly ContentsSide[] = ['plain', 'relay', 'node'];

/** The sides whose figures are checked against the target. */
const TARGET_SIDES: readonly ContentsSide[] = ['relay', 'relayMinio'];

/** The gateways that `--profile` runs under the V8 CPU profiler. */
const PROFILED_SIDES: readonly ContentsSide[] = ['relay', 'node'];

/** The gateway with the `jupyter` backend adds at most 10 % to plain Jupyter's figures. */
const TARGET_RATIO = 1.1;

/** The saved notebook's size on disk (about). */
const SAVE_NOTEBOOK_BYTES = 100 * 1024;

/** The notebooks of the GET load. */
const GET_SIZES = [
  { id: '100KB', label: '100 KB', bytes: 100 * 1024 },
  { id: '1MB', label: '1 MB', bytes: 1024 * 1024 }
] as const;

/** Keep-alive connections of a save client (a browser opens up to six per host). */
const SAVE_SOCKETS = 6;

/**
 * Quiet time after the last answer of a save round (and the journal's drain), inside the
 * round's CPU window: the watcher and the event bus look at a file 200 ms after its last write.
 */
const SETTLE_MS = 500;

/**
 * Before each round, wait (at most {@link QUIET_WAIT_MS}) until other processes use at most this
 * many cores over {@link QUIET_SAMPLE_MS}: this machine is shared, and a round that starts during
 * someone else's burst of work measures that burst.
 */
const QUIET_CORES = 0.3;
const QUIET_SAMPLE_MS = 500;
const QUIET_WAIT_MS = 30_000;

/** Where the saves go, in every root. */
const SAVE_DIR = 'sl';
const MINIO_BUCKET = 'bench-relay';

const INTRO = `# Contents API relayed to Jupyter

\`npm run bench:gateway -- --only contents\` (also part of a plain \`npm run bench:gateway\`) measures
what the gateway adds to the contents API when Python's contents manager answers it
(\`contents_backend = jupyter\`), against plain JupyterLab, side by side in one run, and
rewrites the part of this section between the markers. It is a benchmark, not a test: compare the
ratios, and rerun before drawing conclusions from a small difference.
`;

export const CONTENTS_SECTION: IGeneratedSection = {
  begin:
    '<!-- Generated by `npm run bench:gateway -- --only contents`: everything from here to the end marker is rewritten by each run. -->',
  end: '<!-- End of the part generated by `npm run bench:gateway -- --only contents`. -->',
  intro: INTRO
};

/** How much of everything. */
interface IContentsPlan {
  /** `rounds`: per side other than plain Jupyter, which runs one round before and after each. */
  readonly saves: IPacedPlan;
  /** The same for `rounds`. */
  readonly gets: IHttpPlan;
  /** Paced repetitions of each piece of a relayed save (measurement 3). */
  readonly pieces: number;
}

function contentsPlan(quick: boolean): IContentsPlan {
  return quick
    ? {
        saves: { rate: 20, paths: 20, saves: 40, rounds: 1, warmup: 20 },
        gets: { concurrency: 8, rounds: 1, roundMs: 500, warmupMs: 200 },
        pieces: 20
      }
    : {
        saves: { rate: 20, paths: 20, saves: 100, rounds: 4, warmup: 40 },
        gets: { concurrency: 8, rounds: 6, roundMs: 1_000, warmupMs: 1_000 },
        pieces: 200
      };
}

/** One server under test. */
interface IContentsServer {
  readonly side: ContentsSide;
  readonly rootDir: string;
  readonly baseUrl: string;
  readonly saver: ContentsSaver;
  /** The gateway's client (which also watches its journal); undefined for plain Jupyter. */
  readonly gateway: SaveClient | undefined;
  /** Saves are archived: a round lasts until the journal is empty. */
  readonly archiving: boolean;
  readonly endpoint: IHttpEndpoint;
  readonly load: ILoadServer;
  /** Where Jupyter listens (the gateway's upstream). */
  readonly upstream: string;
  /** Stop it now (it is stopped at the end anyway). */
  stop(): Promise<void>;
}

/** One paced round of saves on one side. */
interface ISaveRound {
  readonly side: ContentsSide;
  /** The round's place in the schedule (see {@link sandwichSchedule}). */
  readonly seq: number;
  readonly saves: IPacedSave[];
  /** From the first PUT to the end of the quiet time, in seconds: the CPU window. */
  readonly seconds: number;
  readonly cpu: ICpu;
  /** From the last answer until the journal was seen empty, in ms (0 without archiving). */
  readonly drainMs: number;
  /** When the round started and its last save was answered (ms since the epoch). */
  readonly wall: { readonly start: number; readonly end: number };
}

/** One timed round of GET load, and its place in the schedule. */
interface IGetRound extends ILoadRound {
  readonly seq: number;
}

/** What a side showed about itself (checked, and reported). */
interface ISideCheck {
  readonly side: ContentsSide;
  /** `contents_backend` of `GET api/store` (`backend (reason)`), or `–` for plain Jupyter. */
  readonly backend: string;
  /** The `Server` header of a save's answer. */
  readonly server: string;
  /** Bytes of a save's answer (what the gateway buffers on (b)). */
  readonly answerBytes: number;
  /** After the rounds: saves sent to the measured paths, and the versions they became. */
  readonly archive?: {
    readonly saves: number;
    readonly versions: number;
    readonly latestMatching: number;
    readonly paths: number;
    readonly gatewaySeen: number;
    readonly pending: number;
  };
}

/** What the phase measured. */
export interface IContentsResult {
  readonly plan: IContentsPlan;
  readonly sides: readonly ContentsSide[];
  readonly putBytes: number;
  readonly diskBytes: number;
  readonly saveRounds: readonly ISaveRound[];
  readonly gets: ReadonlyArray<{
    readonly label: string;
    readonly diskBytes: number;
    readonly rounds: Partial<Record<ContentsSide, IGetRound[]>>;
    readonly answerBytes: Partial<Record<ContentsSide, number>>;
  }>;
  readonly pieces: { read: number[]; append: number[]; unsynced: number[] };
  readonly checks: readonly ISideCheck[];
  readonly upstreams: Partial<Record<ContentsSide, string>>;
  readonly minioVersion: string | undefined;
  readonly otherCoresBefore: number;
  /** The CPU profile summaries of the (b) and (c) gateways, with `--profile`. */
  readonly profile: string | undefined;
  /** What the gateways with the `jupyter` backend timed of their own work. */
  readonly timings: Partial<Record<ContentsSide, IGatewayTimings>>;
  /** How the rounds waited for the rest of the machine to be quiet. */
  readonly waits: {
    readonly rounds: number;
    readonly late: number;
    readonly ms: number;
    readonly redone: number;
  };
}

// ---------------------------------------------------------------------------------------------
// Timings inside the gateway

/** Timings a gateway took of its own work, from the preload of {@link writeTimingPreload}. */
interface IGatewayTimings {
  /** One per PUT it proxied: when (ms since the epoch) and how long each part took (ms). */
  readonly puts: Array<{
    readonly at: number;
    /** From the proxy taking the request to Jupyter's answer read whole (webThen), or to the
     * answer sent (web, no hook). */
    readonly upstreamMs: number;
    /** The relayed-save hook (webThen only): `ArchiveIntake.relayedSave`. */
    readonly hookMs?: number;
    /** From the hook's end to the answer handed to the socket. */
    readonly answerMs?: number;
  }>;
  /** `relayedSave` and the `saved` inside it, and each durable journal append. */
  readonly relayed: Array<{ readonly at: number; readonly ms: number; readonly savedMs: number }>;
  readonly appends: Array<{ readonly at: number; readonly ms: number }>;
}

/**
 * Write a preload that times, inside a gateway, the parts of every proxied PUT (Jupyter's part,
 * the relayed-save hook, the answer) and every durable journal append, by wrapping the built
 * classes' methods (`UpstreamProxy.web`/`webThen`, `ArchiveIntake.relayedSave`/`saved`,
 * `ArchiveJournal.append`), and writes them to `<pid>.timings.json` in `dir` at exit. It costs
 * a closure and two clock reads per request; other Node processes that load it (Jupyter's
 * build check) are left alone.
 */
async function writeTimingPreload(dir: string): Promise<string> {
  const lib = join(REPO_ROOT, 'packages', 'server', 'lib');
  const file = join(dir, 'timing-preload.cjs');
  const script = `'use strict';
if (/lib[\\/]cli[\\/]main\\.js$/.test(process.argv[1] || '')) {
  const fs = require('node:fs');
  const path = require('node:path');
  const lib = ${JSON.stringify(lib)};
  const { UpstreamProxy } = require(path.join(lib, 'gateway', 'proxy.js'));
  const { ArchiveIntake } = require(path.join(lib, 'archive', 'intake.js'));
  const { ArchiveJournal } = require(path.join(lib, 'archive', 'journal.js'));
  const timings = { puts: [], relayed: [], appends: [] };
  const now = () => Number(process.hrtime.bigint()) / 1e6;
  const web = UpstreamProxy.prototype.web;
  UpstreamProxy.prototype.web = function (request, response) {
    if (request.method === 'PUT') {
      const at = Date.now();
      const t0 = now();
      response.once('finish', () => timings.puts.push({ at, upstreamMs: now() - t0 }));
    }
    return web.call(this, request, response);
  };
  const webThen = UpstreamProxy.prototype.webThen;
  UpstreamProxy.prototype.webThen = function (request, response, after) {
    const at = Date.now();
    const t0 = now();
    let t1 = NaN;
    let t2 = NaN;
    response.once('finish', () =>
      timings.puts.push({ at, upstreamMs: t1 - t0, hookMs: t2 - t1, answerMs: now() - t2 })
    );
    return webThen.call(this, request, response, async status => {
      t1 = now();
      try {
        return await after(status);
      } finally {
        t2 = now();
      }
    });
  };
  // Which relayed save a \`saved\` belongs to (saves of different paths overlap).
  const current = new (require('node:async_hooks').AsyncLocalStorage)();
  const saved = ArchiveIntake.prototype.saved;
  ArchiveIntake.prototype.saved = async function (...args) {
    const record = current.getStore();
    const t0 = now();
    try {
      return await saved.apply(this, args);
    } finally {
      if (record) record.savedMs = now() - t0;
    }
  };
  const relayedSave = ArchiveIntake.prototype.relayedSave;
  ArchiveIntake.prototype.relayedSave = async function (...args) {
    const record = { at: Date.now(), ms: NaN, savedMs: NaN };
    const t0 = now();
    try {
      return await current.run(record, () => relayedSave.apply(this, args));
    } finally {
      record.ms = now() - t0;
      timings.relayed.push(record);
    }
  };
  const append = ArchiveJournal.prototype.append;
  ArchiveJournal.prototype.append = async function (apiPath, content, options) {
    if (!options || options.durable === false) return append.call(this, apiPath, content, options);
    const at = Date.now();
    const t0 = now();
    try {
      return await append.call(this, apiPath, content, options);
    } finally {
      timings.appends.push({ at, ms: now() - t0 });
    }
  };
  process.on('exit', () => {
    fs.writeFileSync(path.join(${JSON.stringify(dir)}, process.pid + '.timings.json'), JSON.stringify(timings));
  });
}
`;
  await writeFile(file, script);
  return file;
}

// ---------------------------------------------------------------------------------------------
// Servers

/**
 * Plain JupyterLab from the project venv, as a user starts it (`jupyter lab`, default log level)
 * and as the gateway starts its own (with isolated Jupyter directories and the token in the
 * environment), but on a loopback port and with no gateway in front.
 */
async function startPlain(): Promise<IContentsServer> {
  const stateDir = await mkdtemp(join(tmpdir(), 'bench-plain-'));
  cleanupStep(() => rm(stateDir, { recursive: true, force: true }));
  const state = {
    home: join(stateDir, 'home'),
    config: join(stateDir, 'config'),
    data: join(stateDir, 'data'),
    runtime: join(stateDir, 'runtime')
  };
  const rootDir = join(stateDir, 'root');
  for (const dir of [...Object.values(state), rootDir]) await mkdir(dir, { recursive: true });
  const port = await freePort();
  const token = randomBytes(24).toString('hex');
  const args = [
    'lab',
    '--no-browser',
    '--ServerApp.ip=127.0.0.1',
    `--ServerApp.port=${port}`,
    '--ServerApp.port_retries=0',
    `--ServerApp.root_dir=${rootDir}`
  ];
  if (process.getuid?.() === 0) args.push('--allow-root');
  const child = spawn(join(VENV_DIR, 'bin', 'jupyter'), args, {
    cwd: rootDir,
    env: { ...isolatedEnv(state), JUPYTER_TOKEN: token },
    stdio: ['ignore', 'pipe', 'pipe']
  });
  let output = '';
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-20_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let exited = false;
  const exit = new Promise<void>(resolve =>
    child.once('exit', () => {
      exited = true;
      resolve();
    })
  );
  const stop = cleanupStep(async () => {
    if (exited) return;
    child.kill('SIGTERM');
    if ((await Promise.race([exit.then(() => 'exited'), sleep(20_000)])) !== 'exited') {
      child.kill('SIGKILL');
      await exit;
    }
  });
  const endpoint: IHttpEndpoint = {
    route: SIDES.plain.label,
    connect: { host: '127.0.0.1', port }
  };
  const headers = { Authorization: `token ${token}` };
  const deadline = Date.now() + 120_000;
  for (;;) {
    const answer = await httpGet(endpoint, '/api', headers, undefined, false).catch(() => null);
    if (answer?.status === 200) break;
    if (exited || Date.now() > deadline) {
      await stop();
      throw new Error(
        `jupyter lab did not answer GET /api${exited ? ' (it exited)' : ''}:\n${output}`
      );
    }
    await sleep(100);
  }
  return {
    side: 'plain',
    rootDir,
    baseUrl: '/',
    saver: new ContentsSaver({ port, baseUrl: '/', token }, SIDES.plain.label, SAVE_SOCKETS),
    gateway: undefined,
    archiving: false,
    endpoint,
    load: { headers, pids: { gateway: -1, jupyter: child.pid ?? -1 } },
    upstream: `http://127.0.0.1:${port}`,
    stop
  };
}

async function startGateway(
  side: Exclude<ContentsSide, 'plain'>,
  minio: IObjectServer | undefined,
  dirs: { readonly timings: string; readonly profile: string | undefined }
): Promise<IContentsServer> {
  const args = [
    ...labDefaults(),
    `--StoreSettings.contents_backend=${side === 'node' ? 'node' : 'jupyter'}`
  ];
  const env: NodeJS.ProcessEnv = { NODE_OPTIONS: '' };
  if (side === 'relayOff') args.push('--StoreSettings.workspace_prefix=');
  if (side === 'relayMinio') {
    if (minio === undefined) throw new Error('no MinIO');
    args.push(
      `--StoreSettings.object_endpoint_url=${minio.endpoint}`,
      `--StoreSettings.object_bucket=${MINIO_BUCKET}`
    );
    env.STORE_OBJECT_ACCESS_KEY_ID = minio.accessKeyId;
    env.STORE_OBJECT_SECRET_ACCESS_KEY = minio.secretAccessKey;
    env.STORE_OBJECT_REGION_NAME = minio.region;
  }
  const preloads: string[] = [];
  if (side !== 'node') preloads.push(await writeTimingPreload(dirs.timings));
  if (PROFILED_SIDES.includes(side) && dirs.profile !== undefined) {
    await mkdir(dirs.profile, { recursive: true });
    preloads.push(await writeProfilerPreload(dirs.profile));
  }
  env.NODE_OPTIONS = preloads.map(file => `--require ${file}`).join(' ');
  const gateway = await startGatewayProcess({ args, env });
  const stop = cleanupStep(async () => {
    const code = await gateway.stop('SIGTERM', 60_000);
    if (code !== 0) log(`${SIDES[side].tag} exited with ${code}; its stderr:\n${gateway.stderr()}`);
  });
  const archiving = side !== 'relayOff';
  await waitForLogLine(gateway, archiving ? ARCHIVING_ON_MESSAGE : 'archiving is off');
  const { record } = gateway;
  const saver = new SaveClient(gateway, SIDES[side].label, SAVE_SOCKETS);
  return {
    side,
    rootDir: gateway.rootDir,
    baseUrl: gateway.baseUrl,
    saver,
    gateway: saver,
    archiving,
    endpoint: { route: SIDES[side].label, connect: { host: '127.0.0.1', port: record.port } },
    load: {
      headers: { Authorization: `token ${gateway.token}` },
      pids: {
        gateway: record.pid,
        jupyter: record.upstream_pid,
        store: side === 'relayMinio' ? minio?.pid : undefined
      }
    },
    upstream: record.upstream_url,
    stop
  };
}

/** `GET {base}api/store` of a gateway. */
async function storeInfo(
  server: IContentsServer
): Promise<ReturnType<typeof StoreInfoSchema.parse>> {
  const answer = await httpGet(
    server.endpoint,
    `${server.baseUrl}api/store`,
    server.load.headers,
    undefined,
    true
  );
  if (answer.status !== 200)
    throw new Error(`${server.side}: GET api/store answered ${answer.status}`);
  return StoreInfoSchema.parse(JSON.parse(answer.body?.toString('utf8') ?? ''));
}

/** GET a JSON answer of a gateway's store API, parsed. */
async function storeGet(server: IContentsServer, relative: string): Promise<unknown> {
  const answer = await httpGet(
    server.endpoint,
    `${server.baseUrl}${relative}`,
    server.load.headers,
    undefined,
    true
  );
  if (answer.status !== 200) {
    throw new Error(
      `${server.side}: GET ${relative} answered ${answer.status}: ${answer.body?.toString('utf8').slice(0, 300)}`
    );
  }
  return JSON.parse(answer.body?.toString('utf8') ?? '') as unknown;
}

/**
 * Check that a side is what it says: the backend and archiving its `GET api/store` reports, and
 * who answered a probe save (Jupyter's Tornado, or the gateway itself).
 */
async function checkSide(server: IContentsServer, workload: Workload): Promise<ISideCheck> {
  const { side } = server;
  let backend = '–';
  if (server.gateway !== undefined) {
    const info = await storeInfo(server);
    const expected = side === 'node' ? 'node' : 'jupyter';
    if (info.contents_backend?.backend !== expected) {
      throw new Error(
        `${SIDES[side].tag}: GET api/store says contents_backend ${JSON.stringify(info.contents_backend)}, not ${expected}`
      );
    }
    if ((info.archive !== null) !== server.archiving) {
      throw new Error(
        `${SIDES[side].tag}: archiving is ${info.archive === null ? 'off' : 'on'}, expected the contrary`
      );
    }
    backend = `${info.contents_backend.backend} (${info.contents_backend.reason})`;
  }
  const probe = await httpGet(
    server.endpoint,
    `${server.baseUrl}api/contents/probe/nb.ipynb`,
    { ...server.load.headers, 'Content-Type': 'application/json' },
    undefined,
    true,
    'PUT',
    workload.putBody(nextId('pr'))
  );
  if (probe.status !== 201) {
    throw new Error(
      `${SIDES[side].tag}: the probe save answered ${probe.status}: ${probe.body?.toString('utf8').slice(0, 300)}`
    );
  }
  const serverHeader = String(probe.headers.server ?? '(none)');
  const byJupyter = serverHeader.startsWith('TornadoServer');
  if (byJupyter !== (side !== 'node')) {
    throw new Error(`${SIDES[side].tag}: a save was answered by Server: ${serverHeader}`);
  }
  return { side, backend, server: serverHeader, answerBytes: probe.bodyBytes };
}

/**
 * After the rounds: every save to an archiving gateway became a version (per path, as many
 * versions as saves, the latest holding the last save's id), nothing is pending, and the
 * gateway counted every save as its own.
 */
async function checkArchive(
  server: IContentsServer,
  saves: readonly IPacedSave[],
  probes: number
): Promise<NonNullable<ISideCheck['archive']>> {
  const perPath = new Map<string, { count: number; lastId: string }>();
  for (const save of saves) {
    perPath.set(save.path, { count: (perPath.get(save.path)?.count ?? 0) + 1, lastId: save.id });
  }
  await server.gateway?.drained();
  let versions = 0;
  let latestMatching = 0;
  for (const [path, { count, lastId }] of perPath) {
    const listing = VersionListingSchema.parse(
      await storeGet(server, `api/store/versions/${path}`)
    );
    const found = listing.workspace.versions;
    versions += found.length;
    if (found.length !== count) {
      log(
        `${SIDES[server.side].tag}: ${path} has ${found.length} versions, ${count} saves were sent`
      );
    }
    const latest = found[0]?.object_version_id;
    if (latest === undefined) continue;
    const content = VersionContentSchema.parse(
      await storeGet(
        server,
        `api/store/versions/${path}?object_version_id=${encodeURIComponent(latest)}`
      )
    ).content as { metadata?: { jupyter_store_bench?: { save_id?: string } } };
    if (content.metadata?.jupyter_store_bench?.save_id === lastId) latestMatching++;
  }
  const info = await storeInfo(server);
  const gatewaySeen = (info.archive?.sources?.gateway.seen ?? 0) - probes;
  return {
    saves: saves.length,
    versions,
    latestMatching,
    paths: perPath.size,
    gatewaySeen,
    pending: info.archive?.pending ?? NaN
  };
}

// ---------------------------------------------------------------------------------------------
// Measurements

/**
 * The order of the rounds: a plain round before and after every round of another side (which is
 * compared with the mean of those two, close in time, so that load from elsewhere that drifts
 * hits both alike), the other sides rotating by one every rotation and reversed every other.
 */
function sandwichSchedule<T>(plain: T, others: readonly T[], rotations: number): T[] {
  const order: T[] = [plain];
  for (let rotation = 0; rotation < rotations; rotation++) {
    const rotated = others.map((_, i) => others[(i + rotation) % others.length]);
    for (const other of rotation % 2 === 0 ? rotated : rotated.reverse()) order.push(other, plain);
  }
  return order;
}

/**
 * How the rounds waited for quiet: rounds, those that started without it, time spent waiting,
 * and rounds run again because other processes took more than {@link QUIET_CORES} during them.
 */
const waits = { rounds: 0, late: 0, ms: 0, redone: 0 };

/** Attempts of a round at most (see {@link undisturbed}). */
const MAX_ATTEMPTS = 4;

/**
 * Run a round once the machine is quiet, and again (at most {@link MAX_ATTEMPTS} times in all)
 * when other processes took more than {@link QUIET_CORES} cores during it: the last attempt is
 * kept.
 */
async function undisturbed<T extends { readonly cpu: ICpu; readonly seconds: number }>(
  label: string,
  run: () => Promise<T>
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    await quiet();
    const result = await run();
    const cores = result.cpu.others / (result.seconds * 1000);
    if (cores <= QUIET_CORES || attempt >= MAX_ATTEMPTS) return result;
    waits.redone++;
    log(`${label}: other processes took ${cores.toFixed(2)} cores during it: once more`);
  }
}

/** Wait until the rest of the machine is quiet (see {@link QUIET_CORES}). */
async function quiet(): Promise<void> {
  const start = Date.now();
  waits.rounds++;
  for (;;) {
    const cores = await otherLoad(QUIET_SAMPLE_MS);
    if (cores <= QUIET_CORES) break;
    if (Date.now() - start > QUIET_WAIT_MS) {
      log(`other processes still use ${cores.toFixed(2)} cores: measuring anyway`);
      waits.late++;
      break;
    }
  }
  waits.ms += Date.now() - start - QUIET_SAMPLE_MS;
}

/** The plain server first, and the others. */
function splitPlain(servers: readonly IContentsServer[]): {
  plain: IContentsServer;
  others: IContentsServer[];
} {
  const plain = servers.find(server => server.side === 'plain');
  if (plain === undefined) throw new Error('no plain Jupyter');
  return { plain, others: servers.filter(server => server !== plain) };
}

/**
 * Each round of a side against the plain rounds just before and after it: the ratio of a value
 * to their mean, and the difference.
 */
function againstPlain<R extends { readonly seq: number }>(
  mine: readonly R[],
  plain: readonly R[],
  value: (round: R) => number
): { ratios: number[]; diffs: number[] } {
  const ratios: number[] = [];
  const diffs: number[] = [];
  for (const round of mine) {
    const around = plain.filter(other => Math.abs(other.seq - round.seq) === 1).map(value);
    const reference = around.reduce((sum, x) => sum + x, 0) / around.length;
    ratios.push(value(round) / reference);
    diffs.push(value(round) - reference);
  }
  return { ratios, diffs };
}

/** Measurement 1: paced saves, in the rounds of {@link sandwichSchedule}. */
async function measureSaves(
  servers: readonly IContentsServer[],
  workload: Workload,
  plan: IPacedPlan
): Promise<{ rounds: ISaveRound[]; sent: Map<ContentsSide, IPacedSave[]> }> {
  const sent = new Map<ContentsSide, IPacedSave[]>(servers.map(server => [server.side, []]));
  log(`saves: warm-up, ${plan.warmup} per side`);
  for (const server of servers) {
    sent
      .get(server.side)
      ?.push(...(await pacedStream(server.saver, workload, SAVE_DIR, plan, plan.warmup)));
    if (server.archiving) await server.gateway?.drained();
  }
  await sleep(SETTLE_MS);
  const rounds: ISaveRound[] = [];
  const { plain, others } = splitPlain(servers);
  const schedule = sandwichSchedule(plain, others, plan.rounds);
  for (const [seq, server] of schedule.entries()) {
    const label = `saves round ${seq + 1}/${schedule.length} ${SIDES[server.side].tag}`;
    const round = await undisturbed(label, async (): Promise<ISaveRound> => {
      const cpuStart = cpuNow(server.load.pids);
      const start = performance.now();
      const wallStart = Date.now();
      const saves = await pacedStream(server.saver, workload, SAVE_DIR, plan, plan.saves);
      const answered = performance.now();
      const wall = { start: wallStart, end: Date.now() };
      sent.get(server.side)?.push(...saves);
      const drained = server.archiving
        ? ((await server.gateway?.drained(2)) ?? answered)
        : answered;
      await sleep(SETTLE_MS);
      const cpu = cpuSince(server.load.pids, cpuStart);
      const seconds = (performance.now() - start) / 1000;
      const lat = latency(saves.map(save => save.putMs));
      log(
        `${label}: p50 ${formatMs(lat.p50)}, p99 ${formatMs(lat.p99)}` +
          ` (other processes ${(cpu.others / (seconds * 1000)).toFixed(2)} cores)`
      );
      return { side: server.side, seq, saves, seconds, cpu, drainMs: drained - answered, wall };
    });
    rounds.push(round);
  }
  return { rounds, sent };
}

/** Measurement 2: GET load of one notebook, in the rounds of {@link sandwichSchedule}. */
async function measureGets(
  servers: readonly IContentsServer[],
  file: string,
  plan: IHttpPlan
): Promise<{
  rounds: Partial<Record<ContentsSide, IGetRound[]>>;
  answerBytes: Partial<Record<ContentsSide, number>>;
}> {
  const targets = new Map<ContentsSide, IHttpTarget>();
  const answerBytes: Partial<Record<ContentsSide, number>> = {};
  for (const server of servers) {
    const path = `${server.baseUrl}api/contents/${file}?type=notebook&content=1`;
    const probe = await httpGet(server.endpoint, path, server.load.headers, undefined, false);
    if (probe.status !== 200)
      throw new Error(`${server.side}: GET ${path} answered ${probe.status}`);
    targets.set(server.side, { id: 'notebook', label: file, path, bytes: probe.bodyBytes });
    answerBytes[server.side] = probe.bodyBytes;
  }
  const target = (server: IContentsServer): IHttpTarget => {
    const found = targets.get(server.side);
    if (found === undefined) throw new Error(`no target for ${server.side}`);
    return found;
  };
  const rounds: Partial<Record<ContentsSide, IGetRound[]>> = {};
  for (const server of servers) {
    await loadRound(server.load, server.endpoint, target(server), plan, plan.warmupMs);
    rounds[server.side] = [];
  }
  const { plain, others } = splitPlain(servers);
  for (const [seq, server] of sandwichSchedule(plain, others, plan.rounds).entries()) {
    const result = await undisturbed(`GET ${file} round ${seq + 1} ${SIDES[server.side].tag}`, () =>
      loadRound(server.load, server.endpoint, target(server), plan, plan.roundMs)
    );
    rounds[server.side]?.push({ ...result, seq });
  }
  return { rounds, answerBytes };
}

/**
 * Measurement 3: the pieces of a relayed save, in this process with the product's code, paced
 * as the saves: the read of the saved file (`lstat`, `readFile`, SHA-256, as
 * `ArchiveIntake.relayedSave` and `saved` do), its durable journal record
 * (`ArchiveJournal.append`), and the same bytes written atomically without fsyncs.
 */
async function measurePieces(
  file: string,
  count: number,
  rate: number
): Promise<IContentsResult['pieces']> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-relay-journal-'));
  const journal = new ArchiveJournal(join(dir, 'journal'));
  await journal.open();
  const pieces: IContentsResult['pieces'] = { read: [], append: [], unsynced: [] };
  try {
    const start = performance.now();
    for (let i = 0; i < count; i++) {
      await sleep(start + (i * 1000) / rate - performance.now());
      let t = performance.now();
      await lstat(file);
      const bytes = await readFile(file);
      createHash('sha256').update(bytes).digest('hex');
      pieces.read.push(performance.now() - t);
      t = performance.now();
      const record = await journal.append(`${SAVE_DIR}/nb-00.ipynb`, bytes, {
        durable: true,
        source: 'gateway'
      });
      pieces.append.push(performance.now() - t);
      await journal.remove(record.seq);
      t = performance.now();
      await writeFileAtomic(join(dir, 'unsynced.rec'), bytes, { durable: false });
      pieces.unsynced.push(performance.now() - t);
    }
  } finally {
    await journal.close();
    await rm(dir, { recursive: true, force: true });
  }
  return pieces;
}

// ---------------------------------------------------------------------------------------------
// The phase

/** Start the servers, measure, check every side, stop them. */
export async function runContents(options: {
  readonly quick: boolean;
  readonly minio: boolean;
  readonly profile: boolean;
}): Promise<IContentsResult> {
  const plan = contentsPlan(options.quick);
  const sides = SIDE_ORDER.filter(side => side !== 'relayMinio' || options.minio);
  const otherCoresBefore = await otherLoad(2_000);
  log(`other processes used ${otherCoresBefore.toFixed(2)} cores over the last 2 s`);
  let minio: IObjectServer | undefined;
  if (sides.includes('relayMinio')) {
    log('starting MinIO');
    const started = await startMinio();
    minio = started;
    cleanupStep(() => started.dispose());
    await createVersionedBucket(started, MINIO_BUCKET);
  }
  const profileDir = options.profile
    ? join(tmpdir(), 'jupyter-store-bench-profiles', `contents-${Date.now()}`)
    : undefined;
  const timingsDir = await mkdtemp(join(tmpdir(), 'bench-relay-timings-'));
  cleanupStep(() => rm(timingsDir, { recursive: true, force: true }));
  log(`starting ${sides.map(side => SIDES[side].tag).join(', ')}`);
  const servers = await Promise.all(
    sides.map(side =>
      side === 'plain'
        ? startPlain()
        : startGateway(side, minio, { timings: timingsDir, profile: profileDir })
    )
  );
  for (const server of servers) {
    cleanupStep(async () => server.saver.close());
    log(`${SIDES[server.side].tag} ${SIDES[server.side].label}: Jupyter at ${server.upstream}`);
  }

  const workload = new Workload(SAVE_NOTEBOOK_BYTES);
  const notebooks = GET_SIZES.map(size => ({
    ...size,
    file: `get/nb-${size.id}.ipynb`,
    disk: generateNotebook(size.bytes).diskBytes
  }));
  for (const server of servers) {
    for (const dir of [SAVE_DIR, 'get', 'probe']) {
      await mkdir(join(server.rootDir, dir), { recursive: true });
    }
    for (const notebook of notebooks) {
      await writeFile(join(server.rootDir, notebook.file), notebook.disk);
    }
  }
  const checks: ISideCheck[] = [];
  for (const server of servers) checks.push(await checkSide(server, workload));
  for (const server of servers) if (server.archiving) await server.gateway?.drained();

  let t = Date.now();
  const { rounds: saveRounds, sent } = await measureSaves(servers, workload, plan.saves);
  log(`saves: ${((Date.now() - t) / 1000).toFixed(1)} s`);

  t = Date.now();
  const getServers = servers.filter(server => GET_SIDES.includes(server.side));
  const gets: Array<IContentsResult['gets'][number]> = [];
  for (const notebook of notebooks) {
    log(`GET ${notebook.label}: ${plan.gets.concurrency} concurrent requests`);
    const measured = await measureGets(getServers, notebook.file, plan.gets);
    gets.push({ label: notebook.label, diskBytes: notebook.disk.length, ...measured });
  }
  log(`GETs: ${((Date.now() - t) / 1000).toFixed(1)} s`);

  for (const server of servers) {
    if (!server.archiving) continue;
    const check = checks.find(found => found.side === server.side);
    const archive = await checkArchive(server, sent.get(server.side) ?? [], 1);
    if (check !== undefined) checks[checks.indexOf(check)] = { ...check, archive };
    log(
      `${SIDES[server.side].tag}: ${archive.versions} versions for ${archive.saves} saves, ` +
        `the latest of ${archive.latestMatching} of ${archive.paths} paths is the last save`
    );
  }

  log(`pieces of a relayed save: ${plan.pieces} of each, at ${plan.saves.rate}/s`);
  const savedFile = join(servers[0].rootDir, SAVE_DIR, 'nb-00.ipynb');
  const pieces = await measurePieces(savedFile, plan.pieces, plan.saves.rate);
  const diskBytes = (await readFile(savedFile)).length;

  const profile: string[] = [];
  for (const server of servers) {
    if (profileDir === undefined || !PROFILED_SIDES.includes(server.side)) continue;
    if (server.gateway === undefined) continue;
    await server.stop();
    const name = `${server.gateway.gateway.record.pid}.cpuprofile`;
    profile.push(
      `### CPU profile of the ${SIDES[server.side].tag} gateway (${join(profileDir, name)})`,
      '',
      (await readdir(profileDir)).includes(name)
        ? formatProfileSummary(await summariseProfile(join(profileDir, name), REPO_ROOT))
        : 'no profile: did the gateway exit cleanly?',
      ''
    );
  }
  for (const server of servers) await server.stop();
  const timings: Partial<Record<ContentsSide, IGatewayTimings>> = {};
  for (const server of servers) {
    const pid = server.gateway?.gateway.record.pid;
    if (pid === undefined || server.side === 'node') continue;
    try {
      timings[server.side] = JSON.parse(
        await readFile(join(timingsDir, `${pid}.timings.json`), 'utf8')
      ) as IGatewayTimings;
    } catch (error) {
      log(`${SIDES[server.side].tag}: no timings (${(error as Error).message})`);
    }
  }

  const upstreams: Partial<Record<ContentsSide, string>> = {};
  for (const server of servers) upstreams[server.side] = server.upstream;
  return {
    plan,
    sides,
    putBytes: workload.putBytes,
    diskBytes,
    saveRounds,
    gets,
    pieces,
    checks,
    upstreams,
    minioVersion:
      minio === undefined ? undefined : (pinnedObjectServers().MINIO_VERSION ?? 'unknown'),
    otherCoresBefore,
    profile: profileDir === undefined ? undefined : profile.join('\n'),
    timings,
    waits: { ...waits }
  };
}

// ---------------------------------------------------------------------------------------------
// Report

function us(ms: number): string {
  return Number.isFinite(ms) ? `${Math.round(ms * 1000).toLocaleString('en-US')} µs` : 'n/a';
}

function roundsOf(result: IContentsResult, side: ContentsSide): ISaveRound[] {
  return result.saveRounds.filter(round => round.side === side);
}

function putLatency(rounds: readonly ISaveRound[]): ILatency {
  return latency(rounds.flatMap(round => round.saves.map(save => save.putMs)));
}

/** A side's save figures against plain Jupyter's. */
function saveComparison(
  result: IContentsResult,
  side: ContentsSide
): { p50: number; p99: number; perRound: number[]; p50Pooled: number; deltaMs: number } {
  const mine = roundsOf(result, side);
  const plain = roundsOf(result, 'plain');
  const perRound = againstPlain(mine, plain, roundP50).ratios;
  const a = putLatency(plain);
  const b = putLatency(mine);
  return {
    p50: median(perRound),
    p99: b.p99 / a.p99,
    perRound,
    p50Pooled: b.p50 / a.p50,
    deltaMs: b.p50 - a.p50
  };
}

function roundP50(round: ISaveRound): number {
  return latency(round.saves.map(save => save.putMs)).p50;
}

function roundRate(round: IGetRound): number {
  return round.requests / round.seconds;
}

function cpuPerSave(rounds: readonly ISaveRound[], key: keyof ICpu): number {
  const saves = rounds.reduce((sum, round) => sum + round.saves.length, 0);
  return rounds.reduce((sum, round) => sum + round.cpu[key], 0) / saves;
}

function coresOf(rounds: readonly ISaveRound[], key: keyof ICpu): number {
  const seconds = rounds.reduce((sum, round) => sum + round.seconds, 0);
  return rounds.reduce((sum, round) => sum + round.cpu[key], 0) / (seconds * 1000);
}

function saveSection(result: IContentsResult): string[] {
  const { saves: plan } = result.plan;
  const rows = result.sides.map(side => {
    const rounds = roundsOf(result, side);
    const lat = putLatency(rounds);
    const vs = side === 'plain' ? undefined : saveComparison(result, side);
    const viaGateway = side !== 'plain';
    return [
      `${SIDES[side].tag} ${SIDES[side].label}`,
      String(lat.n),
      formatMs(lat.p50),
      formatMs(lat.p90),
      formatMs(lat.p99),
      formatMs(lat.max),
      rounds.map(round => formatMs(roundP50(round))).join(', '),
      vs === undefined ? '–' : `**${formatRatio(vs.p50)}** (${formatSignedMs(vs.deltaMs)})`,
      vs === undefined ? '–' : `**${formatRatio(vs.p99)}**`,
      viaGateway ? us(cpuPerSave(rounds, 'gateway')) : '–',
      us(cpuPerSave(rounds, 'jupyter')),
      side === 'relayMinio' ? us(cpuPerSave(rounds, 'store')) : '–',
      coresOf(rounds, 'others').toFixed(2)
    ].join(' | ');
  });
  const drains = result.saveRounds.filter(round => round.drainMs > 0).map(round => round.drainMs);
  return [
    `### 1. Save latency (PUT of a ${(result.diskBytes / 1000).toFixed(0)} KB notebook, ${plan.rate}/s over ${plan.paths} paths)`,
    '',
    '| Side | n | PUT p50 | p90 | p99 | max | p50 per round | p50 / (a): median of the rounds (difference of the pooled p50s) | p99 / (a), pooled | gateway CPU / save | Jupyter CPU / save | MinIO CPU / save | other processes (cores) |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...rows.map(row => `| ${row} |`),
    '',
    `${plan.rounds} rounds of ${plan.saves} saves per side, and a plain round before and after each of them ` +
      `(${roundsOf(result, 'plain').length} plain rounds), after ${plan.warmup} warm-up saves each; the other sides rotate by one ` +
      'every rotation, reversed every other. A save is a `PUT api/contents/<path>` of ' +
      `the notebook as JupyterLab sends it (${result.putBytes.toLocaleString('en-US')} bytes of JSON, a unique id in its metadata), ` +
      `over an existing file; ${result.diskBytes.toLocaleString('en-US')} bytes on disk. Open loop: each save is sent at its time ` +
      `(one save per path at a time, ${SAVE_SOCKETS} keep-alive connections), and its latency runs from the first byte sent to the ` +
      "last byte of the answer. The p50 ratio is the median, over a side's rounds, of the round's p50 over the mean p50 of " +
      'the two plain rounds around it; p99 is pooled over all rounds of a side (a round of 100 saves has no p99 of its own), ' +
      "so a burst of load from elsewhere during one round moves it. An archiving side's round lasts until " +
      `its journal is empty (${formatMs(median(drains))} p50 after the last answer), then every round waits ${SETTLE_MS} ms ` +
      '(the watcher and the event bus look at a file 200 ms after its last write); the CPU columns cover that whole window. ' +
      '"Jupyter CPU" is the Python server\'s (the gateway\'s own Jupyter behind a gateway).',
    ''
  ];
}

function getSection(result: IContentsResult): string[] {
  const { gets: plan } = result.plan;
  const lines: string[] = [];
  for (const get of result.gets) {
    const plain = get.rounds.plain ?? [];
    for (const side of GET_SIDES) {
      const rounds = get.rounds[side];
      if (rounds === undefined) continue;
      const totals = throughput(rounds);
      const pairs = side === 'plain' ? [] : againstPlain(rounds, plain, roundRate).ratios;
      const pooled = totals.rps / throughput(plain).rps;
      const viaGateway = side !== 'plain';
      lines.push(
        [
          `${get.label} (answer ${((get.answerBytes[side] ?? NaN) / 1000).toFixed(0)} KB)`,
          `${SIDES[side].tag} ${SIDES[side].label}`,
          `${formatRate(totals.rps)} (${formatMBps(totals.bytesPerSecond)})`,
          side === 'plain' ? '–' : `**${formatRatio(median(pairs))}**`,
          side === 'plain' ? '–' : formatRatio(pooled),
          side === 'plain'
            ? '–'
            : `${formatRatio(Math.min(...pairs))} – ${formatRatio(Math.max(...pairs))}`,
          `${formatMs(totals.latency.p50)} / ${formatMs(totals.latency.p99)}`,
          us(totals.cpuPerRequest.jupyter / 1000),
          viaGateway ? us(totals.cpuPerRequest.gateway / 1000) : '–',
          us(totals.cpuPerRequest.client / 1000),
          totals.cpuShare.jupyter.toFixed(2),
          viaGateway ? totals.cpuShare.gateway.toFixed(2) : '–',
          totals.cpuShare.client.toFixed(2),
          totals.cpuShare.others.toFixed(2)
        ].join(' | ')
      );
    }
  }
  return [
    `### 2. GET throughput (\`?type=notebook&content=1\`, ${plan.concurrency} concurrent requests)`,
    '',
    '| Notebook | Side | req/s | / (a): median of pairs | pooled | pair range | p50 / p99 | Jupyter CPU / req | gateway CPU / req | load generator CPU / req | cores: Jupyter | gateway | load generator | other processes |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...lines.map(line => `| ${line} |`),
    '',
    `${plan.rounds} rounds of ${plan.roundMs / 1000} s per side and notebook, and a plain round before and after each of them, ` +
      `after a ${plan.warmupMs / 1000} s warm-up round each, the order as for the saves; ${plan.concurrency} keep-alive workers, ` +
      'each sending its next request when the previous answer was read to its last byte. A pair is a round of a side and the ' +
      "mean of the plain rounds around it; the target is checked against the median of the pairs' ratios. The notebooks are " +
      'written as nbformat writes them ' +
      `(${result.gets.map(get => `${get.label}: ${get.diskBytes.toLocaleString('en-US')} bytes`).join(', ')}); ` +
      'the archive does not touch a GET, so (b′) and (b0) are not loaded.',
    ''
  ];
}

function piecesSection(result: IContentsResult): string[] {
  const plain = putLatency(roundsOf(result, 'plain'));
  const row = (label: string, samples: readonly number[]): string => {
    const lat = latency(samples);
    return `| ${label} | ${lat.n} | ${formatMs(lat.p50)} | ${formatMs(lat.p90)} | ${formatMs(lat.p99)} | ${formatMs(lat.max)} |`;
  };
  const derived = (side: ContentsSide, base: ContentsSide): string => {
    const mine = roundsOf(result, side);
    const other = roundsOf(result, base);
    if (mine.length === 0 || other.length === 0) return 'n/a';
    const plain = roundsOf(result, 'plain');
    const difference =
      median(againstPlain(mine, plain, roundP50).diffs) -
      (base === 'plain' ? 0 : median(againstPlain(other, plain, roundP50).diffs));
    return formatSignedMs(difference);
  };
  const cpuDelta = (side: ContentsSide, base: ContentsSide): string => {
    const mine = roundsOf(result, side);
    const other = roundsOf(result, base);
    if (mine.length === 0 || other.length === 0) return 'n/a';
    return formatSignedMs(cpuPerSave(mine, 'gateway') - cpuPerSave(other, 'gateway'));
  };
  const answers = result.checks
    .map(check => `${SIDES[check.side].tag} ${check.answerBytes.toLocaleString('en-US')} B`)
    .join(', ');
  return [
    "### 3. Where a relayed save's time goes",
    '',
    "Measured in this process with the product's code, on the file system of the gateways' roots and journals, paced as the saves:",
    '',
    '| Piece | n | p50 | p90 | p99 | max |',
    '|---|--:|--:|--:|--:|--:|',
    row(
      'read of the saved file: `lstat`, `readFile`, SHA-256 (`ArchiveIntake.relayedSave`)',
      result.pieces.read
    ),
    row(
      'durable journal record: `ArchiveJournal.append` (a log append and its fdatasync; SHA-256 again)',
      result.pieces.append
    ),
    row(
      'the same bytes written atomically without the fsyncs (`writeFileAtomic`, `durable: false`)',
      result.pieces.unsynced
    ),
    '',
    "From the rounds above (medians, over a side's rounds, of the round's p50 minus the mean p50 of the plain rounds around it):",
    '',
    `- the proxy alone, (b0) − (a): ${derived('relayOff', 'plain')}`,
    `- the relayed-save hook and archiving's background work, (b) − (b0): ${derived('relay', 'relayOff')}` +
      `; gateway CPU per save ${cpuDelta('relay', 'relayOff')}`,
    ...(result.sides.includes('relayMinio')
      ? [
          `- archiving to MinIO instead of the embedded store, (b′) − (b): ${derived('relayMinio', 'relay')}`
        ]
      : []),
    `- plain Jupyter's own save: p50 ${formatMs(plain.p50)}`,
    '',
    `Answers of a save (what the gateway holds back on (b) until the journal has the record): ${answers}.`,
    ''
  ];
}

/** The gateways' own timings of the saves of the recorded rounds: a table. */
function insideSection(result: IContentsResult): string[] {
  const pair = (samples: readonly number[]): string => {
    const lat = latency(samples);
    return lat.n === 0 ? '–' : `${formatMs(lat.p50)} / ${formatMs(lat.p99)}`;
  };
  const rows: string[] = [];
  for (const side of ['relay', 'relayMinio', 'relayOff'] as const) {
    const timings = result.timings[side];
    if (timings === undefined) continue;
    const windows = roundsOf(result, side).map(round => round.wall);
    const inRounds = (at: number): boolean =>
      windows.some(window => at >= window.start - 5 && at <= window.end + 5);
    const puts = timings.puts.filter(put => inRounds(put.at));
    const relayed = timings.relayed.filter(save => inRounds(save.at));
    const appends = timings.appends.filter(append => inRounds(append.at));
    const client = putLatency(roundsOf(result, side));
    rows.push(
      [
        `${SIDES[side].tag} ${SIDES[side].label}`,
        String(puts.length),
        pair(client.n === 0 ? [] : roundsOf(result, side).flatMap(r => r.saves.map(x => x.putMs))),
        pair(puts.map(put => put.upstreamMs)),
        pair(puts.flatMap(put => (put.hookMs === undefined ? [] : [put.hookMs]))),
        pair(relayed.map(save => save.ms - save.savedMs)),
        pair(relayed.map(save => save.savedMs)),
        pair(appends.map(append => append.ms)),
        pair(puts.flatMap(put => (put.answerMs === undefined ? [] : [put.answerMs])))
      ].join(' | ')
    );
  }
  const plain = putLatency(roundsOf(result, 'plain'));
  return [
    'Inside the gateways, during the recorded rounds (each gateway timed its own work with a preload that wraps the built ' +
      "classes' methods; p50 / p99):",
    '',
    "| Side | PUTs | at the client | proxy: request taken → Jupyter's answer read (→ answer sent, without the hook) | relayed-save hook | of which the read (`lstat`, `readFile`) | of which `saved` (SHA-256, `lstat`, journal append) | durable journal append | hook end → answer handed to the socket |",
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...rows.map(row => `| ${row} |`),
    '',
    `For comparison, plain Jupyter's save at the client: ${formatMs(plain.p50)} / ${formatMs(plain.p99)}.`,
    ''
  ];
}

function checksSection(result: IContentsResult): string[] {
  const lines = result.checks.map(check => {
    const archive = check.archive;
    const archived =
      archive === undefined
        ? 'not archiving'
        : `${archive.versions} versions for ${archive.saves} saves over ${archive.paths} paths, the latest of ` +
          `${archive.latestMatching} of ${archive.paths} paths the last save; ${archive.gatewaySeen} saves counted by ` +
          `\`sources.gateway\`; ${archive.pending} pending`;
    return `- ${SIDES[check.side].tag}: backend ${check.backend}; a save answered by \`${check.server}\`; ${archived}.`;
  });
  return ['### What each side was (checked during the run)', '', ...lines, ''];
}

/**
 * What makes the run's figures unusable: a save to an archiving gateway that did not become its
 * version, or the gateway's counts disagreeing; undefined when every check passed.
 */
export function contentsInvalid(result: IContentsResult): string | undefined {
  const wrong = result.checks.filter(
    ({ archive }) =>
      archive !== undefined &&
      (archive.versions !== archive.saves ||
        archive.latestMatching !== archive.paths ||
        archive.gatewaySeen !== archive.saves ||
        archive.pending !== 0)
  );
  return wrong.length === 0
    ? undefined
    : `not every save was archived as sent on ${wrong.map(check => SIDES[check.side].tag).join(', ')} (see "What each side was")`;
}

/** The checks against the target. */
export function contentsChecks(result: IContentsResult): ITargetCheck[] {
  const checks: ITargetCheck[] = [];
  for (const side of TARGET_SIDES) {
    if (!result.sides.includes(side)) continue;
    const vs = saveComparison(result, side);
    const a = putLatency(roundsOf(result, 'plain'));
    const b = putLatency(roundsOf(result, side));
    checks.push(
      {
        text:
          `${SIDES[side].tag} save latency p50 ≤ ${TARGET_RATIO.toFixed(2)}x plain Jupyter's: ${formatRatio(vs.p50)} ` +
          `(median of the rounds' ratios; pooled ${formatMs(b.p50)} vs ${formatMs(a.p50)}, ${formatRatio(vs.p50Pooled)})`,
        met: vs.p50 <= TARGET_RATIO
      },
      {
        text:
          `${SIDES[side].tag} save latency p99 ≤ ${TARGET_RATIO.toFixed(2)}x plain Jupyter's: ${formatRatio(vs.p99)} ` +
          `(${formatMs(b.p99)} vs ${formatMs(a.p99)})`,
        met: vs.p99 <= TARGET_RATIO
      }
    );
  }
  for (const get of result.gets) {
    const plain = get.rounds.plain ?? [];
    const relay = get.rounds.relay ?? [];
    const ratio = median(againstPlain(relay, plain, roundRate).ratios);
    checks.push({
      text:
        `${SIDES.relay.tag} GET ${get.label} throughput ≥ 1/${TARGET_RATIO.toFixed(2)} (${(100 / TARGET_RATIO).toFixed(1)} %) of plain Jupyter's: ` +
        `${(ratio * 100).toFixed(1)} % (median of the round pairs; time per GET ${formatRatio(1 / ratio)})`,
      met: ratio >= 1 / TARGET_RATIO
    });
  }
  return checks;
}

/** The sections of the report, and the lines of its head. */
export function contentsReport(result: IContentsResult): { head: string[]; sections: string[] } {
  const head = [
    `Sides: ${result.sides.map(side => `${SIDES[side].tag} ${SIDES[side].label}`).join('; ')}`,
    `Jupyter of each side: ${result.sides.map(side => `${SIDES[side].tag} ${describeTransport(result.upstreams[side])}`).join(', ')}` +
      (result.minioVersion === undefined
        ? ''
        : `; MinIO ${result.minioVersion} (single drive, versioned bucket \`${MINIO_BUCKET}\`)`),
    `Other processes on the machine just before the run: ${result.otherCoresBefore.toFixed(2)} cores (2 s sample); per side in the tables. ` +
      `Each round started once other processes had used at most ${QUIET_CORES} cores over ${QUIET_SAMPLE_MS} ms ` +
      `(${result.waits.rounds} attempts; ${result.waits.late} started after waiting ${QUIET_WAIT_MS / 1000} s in vain; ` +
      `${(result.waits.ms / 1000).toFixed(1)} s of waiting in all), and was run again, at most ${MAX_ATTEMPTS} times in all, ` +
      `when they took more during it (${result.waits.redone} times)`
  ];
  const sections = [
    ...saveSection(result),
    ...getSection(result),
    ...piecesSection(result),
    ...insideSection(result),
    ...checksSection(result),
    `CPU time from \`/proc/<pid>/stat\` (user + system) around each round; "other processes" is the busy time of all ` +
      `${availableParallelism()} cores (\`/proc/stat\`) minus the processes named (so it includes the kernel's own threads, where ` +
      'part of the fsync work lands). The load generator runs on the same machine.',
    ''
  ];
  return { head, sections };
}

/** How a side reaches its Jupyter, without the temporary paths and ports of one run. */
function describeTransport(upstream: string | undefined): string {
  if (upstream === undefined) return '?';
  return upstream.startsWith('unix:') ? 'a private unix socket' : 'a loopback port';
}
