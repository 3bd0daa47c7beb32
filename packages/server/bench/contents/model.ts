/** What the contents benchmark compares, measures and reports: its sides, sizes, targets and figures. */
import { ContentsClient } from '../client';
import type { IFirstSaveResult } from './firstSave';

/** Which server a measurement belongs to. */
export type Side = 'jupyter' | 'ours';

export const SIDES: readonly Side[] = ['jupyter', 'ours'];

export const SERVER_NAMES: Record<Side, string> = {
  jupyter: 'Jupyter Server',
  ours: 'jupyter-store'
};

/** The targets. */
export const TARGET_THROUGHPUT_RATIO = 2;
export const TARGET_P99_RATIO = 0.5;
export const TARGET_RSS_GROWTH_RATIO = 4;

/** Notebook sizes of the GET and PUT workload. */
export const NOTEBOOK_SIZES = [
  { id: '100KB', label: '100 KB', bytes: 100 * 1024 },
  { id: '1MB', label: '1 MB', bytes: 1024 * 1024 },
  { id: '10MB', label: '10 MB', bytes: 10 * 1024 * 1024 },
  { id: '50MB', label: '50 MB', bytes: 50 * 1024 * 1024 }
] as const;

export type SizeId = (typeof NOTEBOOK_SIZES)[number]['id'];

/** Entries of the listed directory. */
export const LISTING_ENTRIES = 10_000;

/** How many times an operation runs. */
export interface IPlan {
  /** Unrecorded iterations per server before the rounds. */
  readonly warmup: number;
  /** Rounds; the first server alternates between them. */
  readonly rounds: number;
  /** Recorded iterations per server per round. */
  readonly perRound: number;
}

/** One server under test. */
export interface ITarget {
  readonly side: Side;
  readonly client: ContentsClient;
  readonly pid: number;
}

/** One timed request of an iteration: the row it belongs to and its latency. */
type Timing = readonly [row: string, ms: number];

/** A benchmarked operation; one iteration may time several requests (the untitled cycle). */
export interface IOperation {
  readonly id: string;
  /** The table rows this operation fills, in order. */
  readonly rows: readonly string[];
  readonly plan: IPlan;
  /** Run one iteration against one server; `iteration` counts per server from 0. */
  run(target: ITarget, iteration: number): Promise<Timing[]>;
  /** Called around each iteration, outside the timed requests (memory probes). */
  before?(target: ITarget): Promise<void>;
  after?(target: ITarget): Promise<void>;
}

/** Latency statistics of one row and server. */
export interface IStats {
  readonly n: number;
  readonly opsPerSecond: number;
  readonly p50: number;
  readonly p99: number;
}

/** Memory figures of one server, in bytes. */
export interface IMemory {
  /** RSS after start-up and the tree being in place, before any request of the workload. */
  idleRss: number;
  /** Highest VmHWM seen over the run (the peak is reset around the 50 MB saves; we fold it). */
  peak: number;
  /** RSS growth of each 50 MB save: its peak minus the RSS just before it. */
  saveGrowth: number[];
  /** How the peak of a save was read: `clear_refs` (exact) or `polling` (every 5 ms). */
  method: 'clear_refs' | 'polling';
}

/** What the run produced, for the report. */
export interface IRunResult {
  readonly rows: ReadonlyArray<{ readonly row: string; readonly stats: Record<Side, IStats> }>;
  readonly memory: Record<Side, IMemory>;
  readonly notebooks: ReadonlyArray<{
    readonly label: string;
    readonly bytes: number;
    readonly cells: number;
  }>;
  readonly plans: ReadonlyArray<{ readonly rows: readonly string[]; readonly plan: IPlan }>;
  /** The first save after start-up, when measured. */
  readonly firstSaves?: readonly IFirstSaveResult[];
  readonly seconds: number;
}
