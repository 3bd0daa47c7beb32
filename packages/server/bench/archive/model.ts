/** What the archive benchmark's save measurements compare and measure: targets, plans, rounds, results. */
import type { JupyterServerHandle } from '../../test/support/jupyterServer';
import { ContentsSaver, type IPacedPlan, type IPacedSave } from '../saves';

/** The targets. */
export const TARGET_THROUGHPUT_RATIO = 0.9;
export const TARGET_SAVE_LATENCY_RATIO = 1.1;
/** The targets against plain Jupyter Server (the reference row). */
export const TARGET_JUPYTER_P50_RATIO = 1.0;
export const TARGET_JUPYTER_P99_RATIO = 1.2;
export const TARGET_JUPYTER_BURST_RATIO = 1.5;
/** Every burst save archived within this long of the last answer. */
export const TARGET_BURST_DRAIN_SECONDS = 1;
/** Gateway CPU that archiving adds to a save, against a raw PutObject's CPU in its caller. */
export const TARGET_ARCHIVE_CPU_RATIO = 1.2;

/** The size of the saved notebook on disk (about). */
export const NOTEBOOK_BYTES = 20 * 1024;

/** The bucket every gateway archives to, and the prefix of the raw SDK writes. */
export const BUCKET = 'bench-archive';
export const RAW_PREFIX = 'raw';
/** The gateways' `workspace_prefix` (the default). */
export const WORKSPACE_PREFIX = 'workspace';

/** A request that takes longer fails the run. */
export const REQUEST_TIMEOUT_MS = 30_000;

/** Sustained throughput: concurrent saves, rounds alternating with raw SDK writes. */
export interface IThroughputPlan {
  readonly saves: number;
  readonly paths: number;
  readonly concurrency: number;
  readonly rounds: number;
  /** Unrecorded saves (and raw writes) before the rounds; they also create the files. */
  readonly warmup: number;
}

export interface IPlans {
  readonly throughput: IThroughputPlan;
  readonly latency: IPacedPlan & { readonly pollMs: number };
  readonly onoff: IPacedPlan;
}

/** CPU time (user + system) over an interval, in milliseconds. */
export interface ICpu {
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
export type ThroughputKind = 'archive' | 'raw' | 'off' | 'jupyter';

/** One timed round of measurement 1. */
export interface IThroughputRound {
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
export type PacedSide = 'on' | 'off' | 'jupyter';

/** Plain Jupyter Server (no gateway, no archiving) and a client of its contents API. */
export interface IPlainJupyter {
  readonly server: JupyterServerHandle;
  readonly saver: ContentsSaver;
}

export interface IPacedRound {
  readonly side: PacedSide;
  readonly saves: IPacedSave[];
  readonly seconds: number;
  readonly cpu: ICpu;
  /** For "on": from the last PUT answered until the journal was empty, in ms. */
  readonly drainMs: number;
}

export interface IThroughputResult {
  readonly plan: IThroughputPlan;
  readonly rounds: IThroughputRound[];
}

export interface ILatencyResult {
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

export interface IOnOffResult {
  readonly plan: IPacedPlan;
  readonly rounds: IPacedRound[];
}

export interface IRunResult {
  readonly notebookBytes: number;
  readonly putBodyBytes: number;
  readonly minioVersion: string;
  readonly endpoint: string;
  readonly otherCoresBefore: number;
  readonly throughput?: IThroughputResult;
  readonly latency?: ILatencyResult;
  readonly onoff?: IOnOffResult;
}

export function plans(quick: boolean): IPlans {
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
