/**
 * `npm run bench:gateway`: what the gateway costs in front of JupyterLab. In one run, side by
 * side, the same traffic goes through the gateway and straight to the Jupyter Server behind it
 * (the upstream address of the gateway's runtime record): kernel execute round trips over the
 * kernel websocket, and proxied HTTP throughput for a static Lab asset and `api/kernelspecs`.
 *
 * #### Notes
 * - `jupyter-store lab` is started from the built CLI, once per upstream transport (`unix`, the
 *   default, then `tcp`). "Direct" requests use the upstream address of the record: the unix
 *   socket (`socketPath`) or the loopback port. Both paths send the same Host and Authorization
 *   headers, so Jupyter sees the same requests.
 * - Kernel round trips: one kernel (POST `api/kernels` through the gateway); only one websocket
 *   is connected to it at a time, since Jupyter copies every iopub message to every connection
 *   of a kernel, which would make each path pay for the other. Blocks of iterations alternate
 *   between the paths (the one that goes first alternates too); each block opens its socket and
 *   runs a few unrecorded executes first. A round trip is the time from sending
 *   `execute_request` to receiving its `execute_result`; the next request is sent only after the
 *   kernel reported `idle` and the `execute_reply` arrived.
 * - HTTP throughput: a fixed number of workers (keep-alive `node:http` agent, one connection per
 *   worker, each request sent when the previous answer was read to its last byte) for a fixed
 *   time per round; rounds alternate between the paths. Every round opens its connections with
 *   one unrecorded request per worker before the clock starts. The throughput target is checked
 *   against the median of the gateway/direct ratios of adjacent rounds, which a burst of load
 *   from another process moves less than the ratio of the totals (also printed).
 * - CPU time of the gateway, of Jupyter and of this load generator is read around every round
 *   (`/proc/<pid>/stat`, `process.cpuUsage`), and the busy time of the whole machine
 *   (`/proc/stat`), so that the report shows where the cores went and how much of them other
 *   processes took: on a small shared machine that is the main source of noise.
 * - A measurement, not a test: it exits 0 whether the targets are met or not, and non-zero only
 *   when something failed (a server did not start, a request got an unexpected answer).
 *
 * The same command also runs the phase `contents` of relay.bench.ts (the contents API with the
 * `jupyter` backend, relayed to Python's contents manager, against plain JupyterLab), after
 * these; it writes its own section of docs/benchmarks.md.
 *
 * Options: `--quick` (smoke run), `--only proxy|contents` (one phase: `proxy` is the kernel round
 * trips and HTTP throughput above; default both), `--transport unix|tcp|both` (default both; for
 * `proxy`), `--skip-minio` (`contents` without its MinIO side), `--profile` (the gateway profiled
 * through the V8 inspector, as `node --cpu-prof` would, with a summary of where its time went),
 * `--skip-build`, `--no-docs` (do not update docs/benchmarks.md; implied by --quick and
 * --profile, and for `proxy` by a single transport, for `contents` by --skip-minio). The phase
 * `proxy` takes about two and a half minutes, `contents` about six.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { labDefaults, startGatewayProcess, type IGatewayProcess } from '../test/support/gateway';
import { REPO_ROOT, findVenvPython } from '../test/support/jupyterServer';
import { decodeV1, encodeV1, openKernelSocket, type IKernelSocket } from '../test/support/kernel';
import { formatProfileSummary, summariseProfile, writeProfilerPreload } from './profile';
import { formatMs, formatRate, formatRatio, latency, median } from './format';
import {
  DOCS_FILE,
  build,
  machineDescription,
  reportText,
  writeGeneratedSection,
  type ITargetCheck
} from './harness';
import { cleanUp, cleaningUp, cleanups, log } from './cleanup';
import {
  REQUEST_TIMEOUT_MS,
  cpuNow,
  cpuSince,
  formatMBps,
  httpGet,
  loadRound,
  otherLoad,
  throughput,
  type IHttpEndpoint,
  type IHttpPlan,
  type IHttpTarget,
  type ILoadRound,
  type ILoadServer
} from './load';
import {
  CONTENTS_SECTION,
  contentsChecks,
  contentsInvalid,
  contentsReport,
  runContents
} from './relay.bench';

/** The way a request takes to Jupyter. */
type Route = 'direct' | 'gateway';

const ROUTES: readonly Route[] = ['direct', 'gateway'];

/** How the gateway reaches Jupyter (`--upstream-transport`). */
type Transport = 'unix' | 'tcp';

const TRANSPORT_LABELS: Record<Transport, string> = {
  unix: 'unix socket',
  tcp: 'loopback TCP'
};

/** The targets. */
const TARGET_OVERHEAD_RATIO = 0.1;
const TARGET_OVERHEAD_MS = 1;
const TARGET_THROUGHPUT_RATIO = 0.9;

/** The code every execute request runs. */
const EXPRESSION = '1+1';

/** The whole run is aborted (servers stopped) after this long (per phase). */
const RUN_DEADLINE_MS = { proxy: 8 * 60_000, contents: 15 * 60_000 };

/** The phases `--only` can select. */
type Phase = 'proxy' | 'contents';
const PHASES: readonly Phase[] = ['proxy', 'contents'];

const BEGIN_MARKER =
  '<!-- Generated by `npm run bench:gateway`: everything from here to the end marker is rewritten by each run. -->';
const END_MARKER = '<!-- End of the part generated by `npm run bench:gateway`. -->';
/** Where the contents benchmark's generated part starts: the gateway section must stay above. */
const CONTENTS_MARKER = '<!-- Generated by `npm run bench:contents`';
const DEFAULT_SECTION = `# Gateway benchmark

\`npm run bench:gateway\` starts \`jupyter-store lab\` and sends the same traffic through the gateway
and straight to the Jupyter Server behind it (the upstream address of the runtime record), in one
run, and rewrites the part of this section between the markers. It is a benchmark, not a test:
compare the ratios, and rerun before drawing conclusions from a small difference.
`;

/** How many kernel round trips, per route. */
interface IKernelPlan {
  /** Unrecorded executes per route before the blocks. */
  readonly warmup: number;
  /** Blocks per route; the route that goes first alternates. */
  readonly blocks: number;
  /** Recorded executes per block. */
  readonly perBlock: number;
  /** Unrecorded executes after each block's socket opened. */
  readonly blockWarmup: number;
}

/** One way to Jupyter: where to connect, for HTTP and for websockets. */
interface IEndpoint extends IHttpEndpoint {
  readonly route: Route;
  /** The websocket URL of a path below the base URL (`ws://…` or `ws+unix:…`). */
  wsUrl(relative: string): string;
}

/** What one transport configuration measured. */
interface IConfigResult {
  readonly transport: Transport;
  readonly upstreamUrl: string;
  /** The gateway's process id (its CPU profile is `<pid>.cpuprofile`). */
  readonly gatewayPid: number;
  /** Cores used by other processes just before the gateway started (2 s sample). */
  readonly otherCoresBefore: number;
  /** Cores used by other processes while the kernel round trips were measured. */
  readonly otherCoresKernel: number;
  readonly kernel: Record<Route, { result: number[]; idle: number[] }>;
  readonly http: ReadonlyArray<{
    readonly target: IHttpTarget;
    readonly rounds: Record<Route, ILoadRound[]>;
  }>;
}

// ---------------------------------------------------------------------------------------------
// Options and clean-up

const { values: options } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    transport: { type: 'string', default: 'both' },
    only: { type: 'string' },
    'skip-minio': { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    'skip-build': { type: 'boolean', default: false },
    'no-docs': { type: 'boolean', default: false }
  },
  strict: true,
  allowPositionals: false
});

const transports: Transport[] =
  options.transport === 'both'
    ? ['unix', 'tcp']
    : options.transport === 'unix' || options.transport === 'tcp'
      ? [options.transport]
      : [];
if (transports.length === 0) {
  process.stderr.write(`--transport: '${options.transport}' is not unix, tcp or both\n`);
  process.exit(2);
}

const phases: Phase[] =
  options.only === undefined
    ? [...PHASES]
    : options.only.split(',').map(name => name.trim() as Phase);
if (phases.length === 0 || phases.some(phase => !PHASES.includes(phase))) {
  process.stderr.write(`--only: '${options.only}' is not a list of ${PHASES.join(', ')}\n`);
  process.exit(2);
}

/** A section of docs/benchmarks.md is rewritten only by a full run of its phase. */
const writeDocs = {
  proxy: !options.quick && !options.profile && transports.length === 2 && !options['no-docs'],
  contents: !options.quick && !options.profile && !options['skip-minio'] && !options['no-docs']
};

function plans(quick: boolean): { kernel: IKernelPlan; http: IHttpPlan } {
  return quick
    ? {
        kernel: { warmup: 3, blocks: 2, perBlock: 5, blockWarmup: 1 },
        http: { concurrency: 8, rounds: 1, roundMs: 500, warmupMs: 200 }
      }
    : {
        kernel: { warmup: 30, blocks: 12, perBlock: 25, blockWarmup: 3 },
        http: { concurrency: 8, rounds: 10, roundMs: 1_000, warmupMs: 1_000 }
      };
}

// ---------------------------------------------------------------------------------------------
// Endpoints

/** The gateway itself, and the upstream from its runtime record. */
function endpoints(gateway: IGatewayProcess): Record<Route, IEndpoint> {
  const { record, baseUrl } = gateway;
  const upstream = record.upstream_url;
  let direct: IEndpoint;
  if (upstream.startsWith('unix:')) {
    const socketPath = upstream.slice('unix:'.length);
    direct = {
      route: 'direct',
      connect: { socketPath },
      wsUrl: relative => `ws+unix:${socketPath}:${baseUrl}${relative}`
    };
  } else {
    const url = new URL(upstream);
    if (url.protocol !== 'http:') throw new Error(`unexpected upstream_url ${upstream}`);
    direct = {
      route: 'direct',
      connect: { host: url.hostname, port: Number(url.port) },
      wsUrl: relative => `ws://${url.host}${baseUrl}${relative}`
    };
  }
  return {
    direct,
    gateway: {
      route: 'gateway',
      connect: { host: '127.0.0.1', port: record.port },
      wsUrl: relative => `ws://127.0.0.1:${record.port}${baseUrl}${relative}`
    }
  };
}

/** Headers of every request, on both routes: the gateway keeps Host, so Jupyter sees the same. */
function commonHeaders(gateway: IGatewayProcess): Record<string, string> {
  return {
    Host: `127.0.0.1:${gateway.record.port}`,
    Authorization: `token ${gateway.token}`
  };
}

// ---------------------------------------------------------------------------------------------
// HTTP

/** Find the JavaScript entry point the `/lab` page loads (a real static asset of Lab). */
async function findLabAsset(
  gateway: IGatewayProcess,
  direct: IEndpoint
): Promise<{ path: string; bytes: number }> {
  const page = await httpGet(
    direct,
    `${gateway.baseUrl}lab`,
    commonHeaders(gateway),
    undefined,
    true
  );
  if (page.status !== 200) throw new Error(`GET ${gateway.baseUrl}lab answered ${page.status}`);
  const html = page.body?.toString('utf8') ?? '';
  const scripts = [...html.matchAll(/<script[^>]*\ssrc="([^"]+\.js(?:\?[^"]*)?)"/g)].map(match =>
    match[1].replace(/&amp;/g, '&')
  );
  const asset = scripts.find(src => src.startsWith(`${gateway.baseUrl}static/lab/`)) ?? scripts[0];
  if (asset === undefined)
    throw new Error(`no <script src> in the /lab page:\n${html.slice(0, 2000)}`);
  const answer = await httpGet(direct, asset, commonHeaders(gateway), undefined, false);
  if (answer.status !== 200) throw new Error(`GET ${asset} answered ${answer.status}`);
  return { path: asset, bytes: answer.bodyBytes };
}

async function measureHttp(
  gateway: IGatewayProcess,
  points: Record<Route, IEndpoint>,
  target: IHttpTarget,
  plan: IHttpPlan
): Promise<Record<Route, ILoadRound[]>> {
  const rounds: Record<Route, ILoadRound[]> = { direct: [], gateway: [] };
  const server: ILoadServer = {
    headers: commonHeaders(gateway),
    pids: { gateway: gateway.record.pid, jupyter: gateway.record.upstream_pid }
  };
  for (const route of ROUTES) await loadRound(server, points[route], target, plan, plan.warmupMs);
  for (let round = 0; round < plan.rounds; round++) {
    const order = round % 2 === 0 ? ROUTES : [...ROUTES].reverse();
    for (const route of order) {
      rounds[route].push(await loadRound(server, points[route], target, plan, plan.roundMs));
    }
  }
  return rounds;
}

// ---------------------------------------------------------------------------------------------
// Kernel round trips

/** Start a kernel through the gateway; returns its id. */
async function startKernel(
  gateway: IGatewayProcess,
  points: Record<Route, IEndpoint>
): Promise<string> {
  const answer = await httpGet(
    points.gateway,
    `${gateway.baseUrl}api/kernels`,
    { ...commonHeaders(gateway), 'Content-Type': 'application/json' },
    undefined,
    true,
    'POST',
    Buffer.from(JSON.stringify({ name: 'python3' }))
  );
  if (answer.status !== 201) {
    throw new Error(`POST api/kernels answered ${answer.status}: ${answer.body?.toString('utf8')}`);
  }
  const id = (JSON.parse(answer.body?.toString('utf8') ?? '{}') as { id?: unknown }).id;
  if (typeof id !== 'string') throw new Error('POST api/kernels gave no kernel id');
  return id;
}

/** The times of one execute: to its `execute_result`, and to the kernel's `idle` status. */
interface IRoundTrip {
  readonly resultMs: number;
  readonly idleMs: number;
}

/**
 * Send one `execute_request` and time it; resolves once the result, the idle status and the
 * reply have all arrived, so that no work of this request overlaps the next.
 */
function executeOnce(kernel: IKernelSocket, session: string): Promise<IRoundTrip> {
  const { socket } = kernel;
  const msgId = randomUUID();
  const frame = encodeV1('shell', [
    {
      msg_id: msgId,
      msg_type: 'execute_request',
      username: 'bench',
      session,
      date: new Date().toISOString(),
      version: '5.3'
    },
    {},
    {},
    {
      code: EXPRESSION,
      silent: false,
      store_history: false,
      user_expressions: {},
      allow_stdin: false,
      stop_on_error: true
    }
  ]);
  return new Promise((resolve, reject) => {
    let resultMs: number | undefined;
    let idleMs: number | undefined;
    let replied = false;
    const finish = (error?: Error): void => {
      clearTimeout(timer);
      socket.off('message', onMessage);
      socket.off('close', onClose);
      if (error !== undefined) reject(error);
      else resolve({ resultMs: resultMs ?? NaN, idleMs: idleMs ?? NaN });
    };
    const onClose = (): void => finish(new Error('the kernel websocket closed during an execute'));
    const onMessage = (data: Buffer, isBinary: boolean): void => {
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      if (!isBinary) return;
      const { channel, parts } = decodeV1(data);
      if ((parts[1] as { msg_id?: string }).msg_id !== msgId) return;
      const type = (parts[0] as { msg_type: string }).msg_type;
      const content = parts[3] as Record<string, unknown>;
      if (channel === 'iopub') {
        if (type === 'execute_result') {
          const text = (content.data as Record<string, string> | undefined)?.['text/plain'];
          if (text !== '2') return finish(new Error(`${EXPRESSION} gave ${String(text)}`));
          resultMs = ms;
        } else if (type === 'error') {
          return finish(new Error(`the kernel raised ${String(content.ename)}`));
        } else if (type === 'status' && content.execution_state === 'idle') {
          idleMs = ms;
        }
      } else if (channel === 'shell' && type === 'execute_reply') {
        if (content.status !== 'ok') {
          return finish(new Error(`execute_reply status ${String(content.status)}`));
        }
        replied = true;
      }
      if (idleMs !== undefined && replied) {
        finish(
          resultMs === undefined ? new Error(`no execute_result for ${EXPRESSION}`) : undefined
        );
      }
    };
    const timer = setTimeout(
      () => finish(new Error(`an execute took more than ${REQUEST_TIMEOUT_MS} ms`)),
      REQUEST_TIMEOUT_MS
    );
    socket.on('message', onMessage);
    socket.once('close', onClose);
    const start = process.hrtime.bigint();
    socket.send(frame);
  });
}

/** Open a kernel websocket on one route, run `warmup` unrecorded executes, then `count`. */
async function kernelBlock(
  gateway: IGatewayProcess,
  endpoint: IEndpoint,
  kernelId: string,
  warmup: number,
  count: number
): Promise<IRoundTrip[]> {
  const kernel = await openKernelSocket(
    endpoint.wsUrl(`api/kernels/${kernelId}/channels`),
    commonHeaders(gateway)
  );
  try {
    const session = randomUUID();
    for (let i = 0; i < warmup; i++) await executeOnce(kernel, session);
    const trips: IRoundTrip[] = [];
    for (let i = 0; i < count; i++) trips.push(await executeOnce(kernel, session));
    return trips;
  } finally {
    await kernel.close();
  }
}

async function measureKernel(
  gateway: IGatewayProcess,
  points: Record<Route, IEndpoint>,
  kernelId: string,
  plan: IKernelPlan
): Promise<Record<Route, { result: number[]; idle: number[] }>> {
  const samples: Record<Route, { result: number[]; idle: number[] }> = {
    direct: { result: [], idle: [] },
    gateway: { result: [], idle: [] }
  };
  // The first execute on a new kernel waits for it to be ready: allow it time, unrecorded.
  const first = await openKernelSocket(
    points.gateway.wsUrl(`api/kernels/${kernelId}/channels`),
    commonHeaders(gateway)
  );
  try {
    const answer = await first.execute(EXPRESSION, 60_000);
    if (answer !== '2') throw new Error(`${EXPRESSION} gave ${answer}`);
  } finally {
    await first.close();
  }
  for (const route of ROUTES) await kernelBlock(gateway, points[route], kernelId, plan.warmup, 0);
  for (let block = 0; block < plan.blocks; block++) {
    const order = block % 2 === 0 ? ROUTES : [...ROUTES].reverse();
    for (const route of order) {
      const trips = await kernelBlock(
        gateway,
        points[route],
        kernelId,
        plan.blockWarmup,
        plan.perBlock
      );
      for (const trip of trips) {
        samples[route].result.push(trip.resultMs);
        samples[route].idle.push(trip.idleMs);
      }
    }
  }
  return samples;
}

// ---------------------------------------------------------------------------------------------
// Profiling

// ---------------------------------------------------------------------------------------------
// One configuration

async function runConfiguration(
  transport: Transport,
  profileDir: string | undefined
): Promise<IConfigResult> {
  const plan = plans(options.quick);
  const otherCoresBefore = await otherLoad(2_000);
  log(`other processes used ${otherCoresBefore.toFixed(2)} cores over the last 2 s`);
  log(`starting jupyter-store lab --upstream-transport ${transport}`);
  let nodeOptions = '';
  if (profileDir !== undefined) {
    const dir = join(profileDir, transport);
    await mkdir(dir, { recursive: true });
    nodeOptions = `--require ${await writeProfilerPreload(dir)}`;
  }
  const gateway = await startGatewayProcess({
    args: [...labDefaults(), '--upstream-transport', transport, '--log-level', 'warn'],
    env: { NODE_OPTIONS: nodeOptions }
  });
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    const code = await gateway.stop('SIGTERM', 60_000);
    if (code !== 0) log(`the gateway exited with ${code}; its stderr:\n${gateway.stderr()}`);
  };
  cleanups.push(stop);
  try {
    log(`gateway on port ${gateway.record.port}, upstream ${gateway.record.upstream_url}`);
    const expectedPrefix = transport === 'unix' ? 'unix:' : 'http://';
    if (!gateway.record.upstream_url.startsWith(expectedPrefix)) {
      throw new Error(
        `--upstream-transport ${transport} gave upstream ${gateway.record.upstream_url}`
      );
    }
    const points = endpoints(gateway);

    const asset = await findLabAsset(gateway, points.direct);
    const targets: IHttpTarget[] = [
      {
        id: 'asset',
        label: `static asset ${asset.path.split('?')[0].replace(gateway.baseUrl, '')}`,
        path: asset.path,
        bytes: asset.bytes
      },
      {
        id: 'kernelspecs',
        label: 'api/kernelspecs',
        path: `${gateway.baseUrl}api/kernelspecs`,
        bytes: 0
      }
    ];

    log('starting a kernel (POST api/kernels through the gateway)');
    const kernelId = await startKernel(gateway, points);
    let started = Date.now();
    log('measuring kernel execute round trips');
    const pids = { gateway: gateway.record.pid, jupyter: gateway.record.upstream_pid };
    const cpuStart = cpuNow(pids);
    const kernel = await measureKernel(gateway, points, kernelId, plan.kernel);
    const otherCoresKernel = cpuSince(pids, cpuStart).others / (Date.now() - started);
    log(`kernel round trips: ${((Date.now() - started) / 1000).toFixed(1)} s`);

    const http: Array<{ target: IHttpTarget; rounds: Record<Route, ILoadRound[]> }> = [];
    for (const target of targets) {
      if (target.bytes === 0) {
        const probe = await httpGet(
          points.direct,
          target.path,
          commonHeaders(gateway),
          undefined,
          false
        );
        if (probe.status !== 200) throw new Error(`GET ${target.path} answered ${probe.status}`);
        target.bytes = probe.bodyBytes;
      }
      started = Date.now();
      log(
        `measuring HTTP throughput: ${target.label} (${target.bytes.toLocaleString('en-US')} bytes)`
      );
      http.push({ target, rounds: await measureHttp(gateway, points, target, plan.http) });
      log(`${target.label}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
    return {
      transport,
      upstreamUrl: gateway.record.upstream_url,
      gatewayPid: gateway.record.pid,
      otherCoresBefore,
      otherCoresKernel,
      kernel,
      http
    };
  } finally {
    await stop();
  }
}

// ---------------------------------------------------------------------------------------------
// Statistics and report

function formatSignedMs(ms: number): string {
  if (!Number.isFinite(ms)) return 'n/a';
  return `${ms >= 0 ? '+' : '−'}${Math.abs(ms).toFixed(3)} ms`;
}

function formatPercent(ratio: number): string {
  if (!Number.isFinite(ratio)) return 'n/a';
  return `${ratio >= 0 ? '+' : '−'}${Math.abs(ratio * 100).toFixed(1)} %`;
}

/** The gateway/direct figures of one request: pooled, and per pair of adjacent rounds. */
function compare(rounds: Record<Route, ILoadRound[]>): {
  direct: ReturnType<typeof throughput>;
  gateway: ReturnType<typeof throughput>;
  /** Total gateway req/s over total direct req/s. */
  pooled: number;
  /** gateway/direct req/s of each pair of rounds (run back to back). */
  pairs: number[];
  /** The median of `pairs`: what the target is checked against. */
  ratio: number;
} {
  const direct = throughput(rounds.direct);
  const gateway = throughput(rounds.gateway);
  const pairs = rounds.gateway.map((round, i) => {
    const other = rounds.direct[i];
    return round.requests / round.seconds / (other.requests / other.seconds);
  });
  return { direct, gateway, pooled: gateway.rps / direct.rps, pairs, ratio: median(pairs) };
}

function kernelChecks(config: IConfigResult): ITargetCheck[] {
  const direct = latency(config.kernel.direct.result);
  const gateway = latency(config.kernel.gateway.result);
  const overhead = gateway.p50 - direct.p50;
  const relative = overhead / direct.p50;
  const where = `${TRANSPORT_LABELS[config.transport]}, kernel round trip p50 overhead`;
  return [
    {
      text: `${where} ≤ ${TARGET_OVERHEAD_MS} ms: ${formatSignedMs(overhead)}`,
      met: overhead <= TARGET_OVERHEAD_MS
    },
    {
      text: `${where} ≤ ${TARGET_OVERHEAD_RATIO * 100} %: ${formatPercent(relative)}`,
      met: relative <= TARGET_OVERHEAD_RATIO
    }
  ];
}

function requestLabel(target: IHttpTarget): string {
  return target.id === 'asset' ? 'static asset' : `\`${target.label}\``;
}

function httpChecks(config: IConfigResult): ITargetCheck[] {
  return config.http.map(({ target, rounds }) => {
    const { ratio, pooled } = compare(rounds);
    return {
      text:
        `${TRANSPORT_LABELS[config.transport]}, ${requestLabel(target)} throughput ≥ ${TARGET_THROUGHPUT_RATIO * 100} % of direct: ` +
        `${(ratio * 100).toFixed(1)} % (median of the round pairs; pooled ${(pooled * 100).toFixed(1)} %)`,
      met: ratio >= TARGET_THROUGHPUT_RATIO
    };
  });
}

function kernelTable(results: readonly IConfigResult[]): string {
  const lines = results.map(config => {
    const direct = latency(config.kernel.direct.result);
    const gateway = latency(config.kernel.gateway.result);
    const directIdle = latency(config.kernel.direct.idle);
    const gatewayIdle = latency(config.kernel.gateway.idle);
    const overhead = gateway.p50 - direct.p50;
    return [
      TRANSPORT_LABELS[config.transport],
      String(Math.min(direct.n, gateway.n)),
      formatMs(direct.p50),
      formatMs(direct.p90),
      formatMs(direct.p99),
      formatMs(gateway.p50),
      formatMs(gateway.p90),
      formatMs(gateway.p99),
      `**${formatSignedMs(overhead)}**`,
      `**${formatPercent(overhead / direct.p50)}**`,
      `${formatMs(directIdle.p50)} / ${formatMs(gatewayIdle.p50)}`,
      config.otherCoresKernel.toFixed(2)
    ].join(' | ');
  });
  return [
    '| Upstream | n per route | direct p50 | direct p90 | direct p99 | gateway p50 | gateway p90 | gateway p99 | p50 overhead | p50 overhead % | p50 to `idle`, direct / gateway | other processes (cores) |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...lines.map(line => `| ${line} |`)
  ].join('\n');
}

function httpTable(results: readonly IConfigResult[]): string {
  const lines: string[] = [];
  for (const config of results) {
    for (const { target, rounds } of config.http) {
      const { direct, gateway, pooled, pairs, ratio } = compare(rounds);
      const bandwidth = target.id === 'asset';
      lines.push(
        [
          TRANSPORT_LABELS[config.transport],
          target.id === 'asset'
            ? `static asset (${(target.bytes / 1024).toFixed(0)} KiB)`
            : `\`${target.label}\` (${target.bytes.toLocaleString('en-US')} B)`,
          `${formatRate(direct.rps)}${bandwidth ? ` (${formatMBps(direct.bytesPerSecond)})` : ''}`,
          `${formatRate(gateway.rps)}${bandwidth ? ` (${formatMBps(gateway.bytesPerSecond)})` : ''}`,
          `**${formatRatio(ratio)}**`,
          formatRatio(pooled),
          `${formatRatio(Math.min(...pairs))} – ${formatRatio(Math.max(...pairs))}`,
          `${formatMs(direct.latency.p50)} / ${formatMs(direct.latency.p99)}`,
          `${formatMs(gateway.latency.p50)} / ${formatMs(gateway.latency.p99)}`
        ].join(' | ')
      );
    }
  }
  return [
    '| Upstream | Request | direct req/s | gateway req/s | gateway/direct (median of pairs) | pooled | pair range | direct p50 / p99 | gateway p50 / p99 |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|',
    ...lines.map(line => `| ${line} |`)
  ].join('\n');
}

function cpuTable(results: readonly IConfigResult[]): string {
  const us = (ms: number): string => `${Math.round(ms).toLocaleString('en-US')} µs`;
  const cores = (share: number): string => share.toFixed(2);
  const lines: string[] = [];
  for (const config of results) {
    for (const { target, rounds } of config.http) {
      for (const route of ROUTES) {
        const { cpuPerRequest: per, cpuShare: share } = throughput(rounds[route]);
        const viaGateway = route === 'gateway';
        lines.push(
          [
            TRANSPORT_LABELS[config.transport],
            requestLabel(target),
            route,
            us(per.jupyter),
            viaGateway ? us(per.gateway) : '–',
            us(per.client),
            cores(share.jupyter),
            viaGateway ? cores(share.gateway) : '–',
            cores(share.client),
            cores(share.others),
            cores(share.jupyter + (viaGateway ? share.gateway : 0) + share.client + share.others)
          ].join(' | ')
        );
      }
    }
  }
  return [
    '| Upstream | Request | route | Jupyter CPU / req | gateway CPU / req | load generator CPU / req | cores: Jupyter | gateway | load generator | other processes | total |',
    '|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...lines.map(line => `| ${line} |`)
  ].join('\n');
}

function machineLine(): string {
  let python = 'unknown';
  try {
    python = execFileSync(
      findVenvPython(),
      [
        '-c',
        'import sys, jupyter_server, jupyterlab, ipykernel; print(sys.version.split()[0], "/ jupyter_server", jupyter_server.__version__, "/ jupyterlab", jupyterlab.__version__, "/ ipykernel", ipykernel.__version__)'
      ],
      { encoding: 'utf8', timeout: 30_000 }
    ).trim();
  } catch {
    // reported as unknown
  }
  return machineDescription(`, Python ${python}`);
}

function report(
  results: readonly IConfigResult[],
  machine: string,
  command: string,
  seconds: number
): { text: string; allMet: boolean } {
  const plan = plans(options.quick);
  const sections = [
    `### Kernel execute round trip (websocket, \`${EXPRESSION}\` → \`execute_result\`)`,
    '',
    kernelTable(results),
    '',
    `${plan.kernel.warmup} warm-up executes per route, then ${plan.kernel.blocks} blocks × ${plan.kernel.perBlock} per route, alternating ` +
      `(each block opens its own websocket and runs ${plan.kernel.blockWarmup} unrecorded executes first). Nearest-rank percentiles.`,
    '',
    `### Proxied HTTP throughput (keep-alive, ${plan.http.concurrency} concurrent requests)`,
    '',
    httpTable(results),
    '',
    `${plan.http.rounds} rounds of ${plan.http.roundMs / 1000} s per route and request, the route that goes first alternating, after a ` +
      `${plan.http.warmupMs / 1000} s warm-up round each. A pair is a gateway round and the direct round next to it; the target is checked ` +
      "against the median of the pairs' ratios, which a burst of load from elsewhere moves less than the pooled ratio (total over total). " +
      'Latency is per request, under that load.',
    '',
    '### CPU time during the HTTP rounds',
    '',
    cpuTable(results),
    '',
    `CPU time from \`/proc/<pid>/stat\` (user + system) around each round; "other processes" is the busy time of all ` +
      `${availableParallelism()} cores (\`/proc/stat\`) minus the processes named. The load generator runs on the same machine.`,
    ''
  ];
  return reportText({
    title: 'Gateway results',
    command,
    machine,
    seconds,
    head: [
      `Upstreams: ${results.map(config => `\`${config.upstreamUrl}\``).join(', ')}`,
      `Other processes on the machine just before each configuration: ${results
        .map(config => `${config.otherCoresBefore.toFixed(2)} cores (${config.transport})`)
        .join(', ')}`
    ],
    sections,
    checks: results.flatMap(config => [...kernelChecks(config), ...httpChecks(config)])
  });
}

function writeDocsFile(body: string): void {
  const block = `${BEGIN_MARKER}\n\n${body}\n${END_MARKER}\n`;
  const current = existsSync(DOCS_FILE) ? readFileSync(DOCS_FILE, 'utf8') : '';
  const begin = current.indexOf(BEGIN_MARKER);
  const end = current.indexOf(END_MARKER);
  let next: string;
  if (begin >= 0 && end > begin) {
    next = current.slice(0, begin) + block + current.slice(end + END_MARKER.length + 1);
  } else {
    // The section goes first: `bench:contents` rewrites everything below its own marker.
    next = `${DEFAULT_SECTION}\n${block}\n${current}`;
  }
  const contents = next.indexOf(CONTENTS_MARKER);
  if (contents >= 0 && contents < next.indexOf(END_MARKER)) {
    throw new Error(`${DOCS_FILE}: the gateway section must stay above the contents marker`);
  }
  writeFileSync(DOCS_FILE, next);
}

// ---------------------------------------------------------------------------------------------
// Main

/** The phase `contents` (relay.bench.ts): the contents API relayed to Jupyter, against plain Jupyter. */
async function runContentsPhase(command: string): Promise<boolean> {
  const started = Date.now();
  const result = await runContents({
    quick: options.quick,
    minio: !options['skip-minio'],
    profile: options.profile
  });
  const { head, sections } = contentsReport(result);
  const { text, allMet } = reportText({
    title: 'Contents API relayed to Jupyter: results',
    command,
    machine: machineLine(),
    seconds: (Date.now() - started) / 1000,
    head,
    sections,
    checks: contentsChecks(result)
  });
  process.stdout.write(`\n${text}\n`);
  const invalid = contentsInvalid(result);
  if (invalid !== undefined) throw new Error(`${invalid}: the figures above are not written`);
  if (writeDocs.contents) {
    writeGeneratedSection(CONTENTS_SECTION, text);
    log(`wrote ${DOCS_FILE}`);
  }
  if (result.profile !== undefined) {
    process.stdout.write(`\n${result.profile}\n`);
  }
  return allMet;
}

/** The phase `proxy`: kernel round trips and proxied HTTP, through the gateway and direct. */
async function runProxyPhase(command: string): Promise<boolean> {
  const started = Date.now();
  const profileDir = options.profile
    ? join(tmpdir(), 'jupyter-store-bench-profiles', `gateway-${Date.now()}`)
    : undefined;
  const results: IConfigResult[] = [];
  for (const transport of transports) results.push(await runConfiguration(transport, profileDir));

  const { text, allMet } = report(results, machineLine(), command, (Date.now() - started) / 1000);
  process.stdout.write(`\n${text}\n`);
  if (writeDocs.proxy) {
    writeDocsFile(text);
    log(`wrote ${DOCS_FILE}`);
  }

  if (profileDir !== undefined) {
    // Jupyter runs Node tools at start-up (the build check) that load the preload too: only the
    // gateway's own profile is summarised.
    for (const config of results) {
      const dir = join(profileDir, config.transport);
      const file = join(dir, `${config.gatewayPid}.cpuprofile`);
      if (!(await readdir(dir)).includes(`${config.gatewayPid}.cpuprofile`)) {
        log(`no ${file}: did the gateway exit cleanly?`);
        continue;
      }
      const summary = await summariseProfile(file, REPO_ROOT);
      process.stdout.write(
        `\n### CPU profile of the gateway (${config.transport}; ${file})\n\n${formatProfileSummary(summary)}\n`
      );
    }
  }
  return allMet;
}

async function run(): Promise<void> {
  if (!options['skip-build']) build();
  const argv = process.argv.slice(2);
  const command = `npm run bench:gateway${argv.length > 0 ? ` -- ${argv.join(' ')}` : ''}`;
  let allMet = true;
  if (phases.includes('proxy')) allMet = (await runProxyPhase(command)) && allMet;
  if (phases.includes('contents')) allMet = (await runContentsPhase(command)) && allMet;
  if (!allMet) log('some targets were missed (a measurement: the exit status stays 0)');
}

async function main(): Promise<void> {
  const deadlineMs = phases.reduce((sum, phase) => sum + RUN_DEADLINE_MS[phase], 0);
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
