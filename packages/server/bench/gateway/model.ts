/** What the proxy phase of the gateway benchmark compares and measures: routes, transports, plans, results. */
import type { IHttpEndpoint, IHttpPlan, IHttpTarget, ILoadRound } from '../load';

/** The way a request takes to Jupyter. */
export type Route = 'direct' | 'gateway';

export const ROUTES: readonly Route[] = ['direct', 'gateway'];

/** How the gateway reaches Jupyter (`--upstream-transport`). */
export type Transport = 'unix' | 'tcp';

export const TRANSPORT_LABELS: Record<Transport, string> = {
  unix: 'unix socket',
  tcp: 'loopback TCP'
};

/** The targets. */
export const TARGET_OVERHEAD_RATIO = 0.1;
export const TARGET_OVERHEAD_MS = 1;
export const TARGET_THROUGHPUT_RATIO = 0.9;

/** The code every execute request runs. */
export const EXPRESSION = '1+1';

/** How many kernel round trips, per route. */
export interface IKernelPlan {
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
export interface IEndpoint extends IHttpEndpoint {
  readonly route: Route;
  /** The websocket URL of a path below the base URL (`ws://…` or `ws+unix:…`). */
  wsUrl(relative: string): string;
}

/** What one transport configuration measured. */
export interface IConfigResult {
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

export function plans(quick: boolean): { kernel: IKernelPlan; http: IHttpPlan } {
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
