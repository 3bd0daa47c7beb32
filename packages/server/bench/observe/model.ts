/** What the observation benchmark measures: its phases, targets, plans and figures. */
import type { ILatency } from '../stats';

/** The measurements of this module. */
export type ObservationPhase = 'bulk' | 'rescan' | 'observed';
export const OBSERVATION_PHASES: readonly ObservationPhase[] = ['bulk', 'rescan', 'observed'];

/** The targets. */
export const TARGET_BULK_RATIO = 1.0;
export const TARGET_BULK_RSS_BYTES = 300 * 1024 * 1024;
export const TARGET_RESCAN_RATIO = 2;
export const TARGET_OBSERVED_P99_MS = 2000;

/** The gateways' `workspace_prefix` (the default). */
export const WORKSPACE_PREFIX = 'workspace';
/** How often the gateway's RSS is sampled. */
export const RSS_INTERVAL_MS = 250;
/**
 * How often the bulk gateway's journal is looked at; when it holds no record, `GET api/store`
 * is asked whether every notebook was archived.
 */
export const STATUS_INTERVAL_MS = 100;
/** The longest one bulk copy (either side) may take before the run fails. */
export const BULK_TIMEOUT_MS = 10 * 60_000;
/** The longest the re-scan root's first scan (archiving everything) may take. */
export const INDEX_TIMEOUT_MS = 10 * 60_000;
/** A kernel write not listed after this long counts as lost. */
export const OBSERVED_TIMEOUT_MS = 30_000;

/** Placeholder of a write id in the kernel's notebook; every id has exactly this length. */
export const ID_LENGTH = 16;
export const ID_PLACEHOLDER = 'X'.repeat(ID_LENGTH);

// Plans

export interface ITreePlan {
  readonly notebooks: number;
  /** Leaf folders; the notebooks (and small files) are spread evenly over them. */
  readonly folders: number;
}

export interface IPlans {
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

export function plans(quick: boolean): IPlans {
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

export interface IProcessSamples {
  /** Highest VmRSS sampled, bytes. */
  readonly maxRss: number;
  /** Highest VmHWM read (the kernel's peak RSS up to that read), bytes. */
  readonly hwm: number;
  readonly samples: number;
  /** CPU time at the last sample, ms (exact for a process still running). */
  readonly cpuMs: number;
}

export interface IBulkRun {
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

export interface IBulkResult {
  readonly notebooks: number;
  readonly folders: number;
  readonly bytes: number;
  readonly runs: IBulkRun[];
  readonly profile?: string;
}

export interface IRescanResult {
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

export interface IObservedWrite {
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

export interface IObservedResult {
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

/** The archive part of `GET {base}api/store`. */
export interface IStoreStatus {
  readonly pending: number;
  readonly archived: number;
  readonly sources: Record<string, { seen: number; archived: number }>;
  readonly observation: { watcher: { mode: string; reason: string | null } };
}

/** What one `GET {base}api/store` costs: its latency and the gateway's CPU time. */
export interface IStoreInfoCost {
  readonly requests: number;
  readonly latency: ILatency;
  /** The gateway's CPU time per request, ms (from `/proc`, 10 ms ticks, over all requests). */
  readonly cpuMs: number;
  /** The paths archived since the gateway started (what the status keeps per path). */
  readonly archived: number;
}
