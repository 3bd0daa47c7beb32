/**
 * HTTP load for the benchmarks that compare servers side by side: a fixed number of keep-alive
 * workers sending one request after another for a fixed time, every answer checked and timed to
 * its last byte, and the CPU time of the processes behind the server (`/proc`) around each round.
 */
import { Agent, type OutgoingHttpHeaders, type RequestOptions } from 'node:http';
import { sendRequest, type IBenchResponse } from './client';
import { childPids, machineBusyMs, processCpuMs } from './cpu';
import { latency, type ILatency } from './stats';

/** A request that takes longer fails the run. */
export const REQUEST_TIMEOUT_MS = 30_000;

/** How long the HTTP load runs, per server (or route). */
export interface IHttpPlan {
  /** Concurrent requests (and keep-alive connections). */
  readonly concurrency: number;
  /** Rounds per server; the one that goes first alternates. */
  readonly rounds: number;
  /** Length of a round, in milliseconds. */
  readonly roundMs: number;
  /** An unrecorded round per server before the recorded ones, in milliseconds. */
  readonly warmupMs: number;
}

/** Where HTTP requests go: a name for messages, and how to connect. */
export interface IHttpEndpoint {
  readonly route: string;
  /** The `node:http` options that reach it (host and port, or socketPath). */
  readonly connect: RequestOptions;
}

/** CPU time (user + system) of the processes involved, in milliseconds. */
export interface ICpu {
  readonly gateway: number;
  readonly jupyter: number;
  readonly client: number;
  /** The kernel processes (children of Jupyter). */
  readonly kernels: number;
  /** The object store the gateway archives to (MinIO), when it is a process of its own. */
  readonly store: number;
  /** Every other process on the machine (busy time of all cores minus the five above). */
  readonly others: number;
}

/** The processes whose CPU time is counted (-1: none). */
export interface IPids {
  readonly gateway: number;
  readonly jupyter: number | null;
  readonly store?: number;
}

/** A server under HTTP load: the headers of its requests and the processes behind it. */
export interface ILoadServer {
  readonly headers: OutgoingHttpHeaders;
  readonly pids: IPids;
}

/** One timed round of HTTP load. */
export interface ILoadRound {
  readonly requests: number;
  readonly bytes: number;
  readonly seconds: number;
  readonly latencies: number[];
  readonly cpu: ICpu;
}

/** A request the HTTP load sends. */
export interface IHttpTarget {
  readonly id: string;
  readonly label: string;
  /** The path below the base URL, with its query. */
  readonly path: string;
  /** Body bytes of one answer, checked on every request when known (Content-Length). */
  bytes: number;
}

// ---------------------------------------------------------------------------------------------
// CPU accounting

/** A snapshot of the counters: the `others` field holds the machine's total busy time. */
export function cpuNow(pids: IPids): ICpu {
  const own = process.cpuUsage();
  return {
    gateway: processCpuMs(pids.gateway),
    jupyter: processCpuMs(pids.jupyter),
    client: (own.user + own.system) / 1000,
    kernels: childPids(pids.jupyter).reduce((sum, pid) => sum + processCpuMs(pid), 0),
    store: processCpuMs(pids.store),
    others: machineBusyMs()
  };
}

export function cpuSince(pids: IPids, start: ICpu): ICpu {
  const now = cpuNow(pids);
  const gateway = now.gateway - start.gateway;
  const jupyter = now.jupyter - start.jupyter;
  const client = now.client - start.client;
  const kernels = Math.max(0, now.kernels - start.kernels);
  const store = now.store - start.store;
  const machine = now.others - start.others;
  return {
    gateway,
    jupyter,
    client,
    kernels,
    store,
    others: Math.max(0, machine - gateway - jupyter - client - kernels - store)
  };
}

/** How busy the rest of the machine is, in cores, over `ms`. */
export async function otherLoad(ms: number): Promise<number> {
  const pids = { gateway: -1, jupyter: null };
  const start = cpuNow(pids);
  await new Promise(resolve => setTimeout(resolve, ms));
  return cpuSince(pids, start).others / ms;
}

// ---------------------------------------------------------------------------------------------
// Requests

/** An answer of {@link httpGet}. */
export type IHttpAnswer = IBenchResponse;

/** One request, read to its last byte. */
export function httpGet(
  endpoint: IHttpEndpoint,
  path: string,
  headers: OutgoingHttpHeaders,
  agent: Agent | undefined,
  keepBody: boolean,
  method = 'GET',
  body?: Buffer
): Promise<IHttpAnswer> {
  return sendRequest({
    connect: endpoint.connect,
    method,
    path,
    headers,
    agent,
    timeoutMs: REQUEST_TIMEOUT_MS,
    body,
    keepBody
  });
}

/** Check one answer of the load: 200 and the whole body. */
export function checkAnswer(route: string, target: IHttpTarget, answer: IHttpAnswer): void {
  if (answer.status !== 200) {
    throw new Error(`${route}: GET ${target.path} answered ${answer.status}, not 200`);
  }
  const expected = answer.contentLength ?? target.bytes;
  if (answer.bodyBytes !== expected) {
    throw new Error(
      `${route}: GET ${target.path} gave ${answer.bodyBytes} body bytes, expected ${expected}`
    );
  }
}

/**
 * Run `concurrency` workers against one endpoint for `durationMs`: each sends its next request
 * once the previous answer has been read whole.
 */
export async function loadRound(
  server: ILoadServer,
  endpoint: IHttpEndpoint,
  target: IHttpTarget,
  plan: IHttpPlan,
  durationMs: number
): Promise<ILoadRound> {
  const agent = new Agent({
    keepAlive: true,
    maxSockets: plan.concurrency,
    maxFreeSockets: plan.concurrency,
    scheduling: 'fifo'
  });
  const { headers, pids } = server;
  try {
    // Open every connection before the clock starts.
    await Promise.all(
      Array.from({ length: plan.concurrency }, async () =>
        checkAnswer(
          endpoint.route,
          target,
          await httpGet(endpoint, target.path, headers, agent, false)
        )
      )
    );
    const latencies: number[] = [];
    let requests = 0;
    let bytes = 0;
    const cpuStart = cpuNow(pids);
    const start = process.hrtime.bigint();
    const deadline = start + BigInt(durationMs) * 1_000_000n;
    const worker = async (): Promise<void> => {
      while (process.hrtime.bigint() < deadline) {
        const sent = process.hrtime.bigint();
        const answer = await httpGet(endpoint, target.path, headers, agent, false);
        latencies.push(Number(process.hrtime.bigint() - sent) / 1e6);
        checkAnswer(endpoint.route, target, answer);
        requests++;
        bytes += answer.bodyBytes;
      }
    };
    await Promise.all(Array.from({ length: plan.concurrency }, worker));
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    return { requests, bytes, seconds, latencies, cpu: cpuSince(pids, cpuStart) };
  } finally {
    agent.destroy();
  }
}

// ---------------------------------------------------------------------------------------------
// Totals

export function formatMBps(bytesPerSecond: number): string {
  return `${(bytesPerSecond / 1e6).toFixed(1)} MB/s`;
}

/** Totals over a server's (or route's) rounds. */
export function throughput(rounds: readonly ILoadRound[]): {
  rps: number;
  bytesPerSecond: number;
  latency: ILatency;
  cpuPerRequest: ICpu;
  cpuShare: ICpu;
  requests: number;
} {
  const requests = rounds.reduce((sum, round) => sum + round.requests, 0);
  const bytes = rounds.reduce((sum, round) => sum + round.bytes, 0);
  const seconds = rounds.reduce((sum, round) => sum + round.seconds, 0);
  const cpu = (key: keyof ICpu): number => rounds.reduce((sum, round) => sum + round.cpu[key], 0);
  const each = (f: (key: keyof ICpu) => number): ICpu => ({
    gateway: f('gateway'),
    jupyter: f('jupyter'),
    client: f('client'),
    kernels: f('kernels'),
    store: f('store'),
    others: f('others')
  });
  return {
    rps: requests / seconds,
    bytesPerSecond: bytes / seconds,
    latency: latency(rounds.flatMap(round => round.latencies)),
    cpuPerRequest: each(key => (cpu(key) * 1000) / requests),
    cpuShare: each(key => cpu(key) / (seconds * 1000)),
    requests
  };
}
