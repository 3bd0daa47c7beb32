/** What the relayed contents phase compares and measures: its sides, plans, rounds, checks and figures. */
import type { ICpu, IHttpEndpoint, IHttpPlan, ILoadRound, ILoadServer } from '../load';
import { ContentsSaver, type IPacedPlan, type IPacedSave, SaveClient } from '../saves';

/** The servers compared, side by side. */
export type ContentsSide = 'plain' | 'relay' | 'relayMinio' | 'relayOff' | 'node';

export const SIDE_ORDER: readonly ContentsSide[] = [
  'plain',
  'relay',
  'relayMinio',
  'relayOff',
  'node'
];

export const SIDES: Record<ContentsSide, { readonly tag: string; readonly label: string }> = {
  plain: { tag: '(a)', label: 'plain `jupyter lab`' },
  relay: { tag: '(b)', label: 'gateway, `jupyter` backend, archiving (embedded store)' },
  relayMinio: { tag: '(b′)', label: 'gateway, `jupyter` backend, archiving to MinIO' },
  relayOff: { tag: '(b0)', label: 'gateway, `jupyter` backend, archiving off (proxy only)' },
  node: { tag: '(c)', label: 'gateway, `node` backend, archiving (embedded store)' }
};

/** The sides of the GET load (the archive does not touch a GET). */
export const GET_SIDES: readonly ContentsSide[] = ['plain', 'relay', 'node'];

/** The sides whose figures are checked against the target. */
export const TARGET_SIDES: readonly ContentsSide[] = ['relay', 'relayMinio'];

/** The gateways that `--profile` runs under the V8 CPU profiler. */
export const PROFILED_SIDES: readonly ContentsSide[] = ['relay', 'node'];

/** The gateway with the `jupyter` backend adds at most 10 % to plain Jupyter's figures. */
export const TARGET_RATIO = 1.1;

/** The saved notebook's size on disk (about). */
export const SAVE_NOTEBOOK_BYTES = 100 * 1024;

/** The notebooks of the GET load. */
export const GET_SIZES = [
  { id: '100KB', label: '100 KB', bytes: 100 * 1024 },
  { id: '1MB', label: '1 MB', bytes: 1024 * 1024 }
] as const;

/** Keep-alive connections of a save client (a browser opens up to six per host). */
export const SAVE_SOCKETS = 6;

/**
 * Quiet time after the last answer of a save round (and the journal's drain), inside the
 * round's CPU window: the watcher and the event bus look at a file 200 ms after its last write.
 */
export const SETTLE_MS = 500;

/**
 * Before each round, wait (at most {@link QUIET_WAIT_MS}) until other processes use at most this
 * many cores over {@link QUIET_SAMPLE_MS}: this machine is shared, and a round that starts during
 * someone else's burst of work measures that burst.
 */
export const QUIET_CORES = 0.3;
export const QUIET_SAMPLE_MS = 500;
export const QUIET_WAIT_MS = 30_000;

/** Where the saves go, in every root. */
export const SAVE_DIR = 'sl';
export const MINIO_BUCKET = 'bench-relay';

/** How much of everything. */
interface IContentsPlan {
  /** `rounds`: per side other than plain Jupyter, which runs one round before and after each. */
  readonly saves: IPacedPlan;
  /** The same for `rounds`. */
  readonly gets: IHttpPlan;
  /** Paced repetitions of each piece of a relayed save (measurement 3). */
  readonly pieces: number;
}

export function contentsPlan(quick: boolean): IContentsPlan {
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
export interface IContentsServer {
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
export interface ISaveRound {
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
export interface IGetRound extends ILoadRound {
  readonly seq: number;
}

/** What a side showed about itself (checked, and reported). */
export interface ISideCheck {
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

/** Timings a gateway took of its own work, from the preload of {@link writeTimingPreload}. */
export interface IGatewayTimings {
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
