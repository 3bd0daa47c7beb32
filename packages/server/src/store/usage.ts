import type { WorkspaceUsage } from '@jupyter-store/contract';
import type { Archiving } from '../archive/archiving';
import type { Logger } from '../gateway/logger';
import { objectKey } from '../storage/keys';
import type { IObjectStore } from '../storage/objectStore';

/**
 * What the workspace prefix holds (`usage` of `GET api/store`), measured with one pass over its
 * version listing and cached, because the versions panel polls feature detection.
 *
 * #### Notes
 * A measurement lists every version and delete marker below `<workspace_prefix>/`: one
 * ListObjectVersions request per 1000 entries. So at most one runs at a time, and a figure is
 * re-measured only when it may be wrong:
 *
 * - The archive wrote something since the figure's measurement began (an upload or a delete
 *   marker: {@link WorkspaceUsageMeter.IOptions.changes} moved): the next request re-measures
 *   and waits for the new figure, at most {@link WorkspaceUsageMeter.IOptions.waitMs} (2 s), so
 *   that the panel shows a save, delete or restore on its next poll. Under a stream of saves at
 *   most once per {@link WorkspaceUsageMeter.IOptions.minIntervalMs} (5 s): until then the
 *   figure before is served.
 * - Otherwise after {@link WorkspaceUsageMeter.IOptions.maxAgeMs} (60 s by default), for what
 *   other writers of the bucket did: a request that finds the figure that old gets it all the
 *   same and starts a new measurement in the background.
 *
 * The very first request waits for a figure too, as long, and answers null when it is not done
 * by then: the next request has it. A failed measurement keeps the figure before it (or null),
 * and is tried again as a stale figure would be.
 */
export class WorkspaceUsageMeter {
  constructor(options: WorkspaceUsageMeter.IOptions) {
    this._source = options.source;
    this._changes = options.changes ?? (() => 0);
    this._maxAgeMs = options.maxAgeMs ?? 60_000;
    this._minIntervalMs = options.minIntervalMs ?? 5_000;
    this._waitMs = options.waitMs ?? 2_000;
    this._now = options.now ?? Date.now;
    this._log = options.log ?? (() => undefined);
  }

  /**
   * The latest figure, or null while none is done; starts a measurement when there is none yet
   * or the figure is stale, and waits for it (briefly) when there is no figure or the archive
   * changed since the figure.
   */
  async current(): Promise<WorkspaceUsage | null> {
    const source = this._source();
    if (!source) return null;
    const changes = this._changes();
    const age = this._measuredAt === undefined ? Infinity : this._now() - this._measuredAt;
    const changed = changes !== this._changesMeasured && age >= this._minIntervalMs;
    let wait = this._usage === null;
    if ((changed || age >= this._maxAgeMs) && !this._running) {
      // Counted before the listing: a write during it moves the count again, and is measured next.
      this._changesMeasured = changes;
      this._running = this._measure(source).finally(() => {
        this._running = undefined;
      });
      wait ||= changed;
    }
    if (wait && this._running) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this._running,
        new Promise<void>(resolve => {
          timer = setTimeout(resolve, this._waitMs);
        })
      ]);
      clearTimeout(timer);
    }
    return this._usage;
  }

  /** One measurement; failures are logged, never thrown (the figure before it stays). */
  private async _measure(source: WorkspaceUsageMeter.ISource): Promise<void> {
    const started = this._now();
    try {
      this._usage = await measureWorkspace(source);
    } catch (error) {
      this._log(`could not measure the workspace: ${(error as Error).message}`);
    }
    // Stale again after the age (or a change), also after a failure: not retried on every request.
    this._measuredAt = started;
  }

  private readonly _source: () => WorkspaceUsageMeter.ISource | undefined;
  private readonly _changes: () => number;
  private readonly _maxAgeMs: number;
  private readonly _minIntervalMs: number;
  private readonly _waitMs: number;
  private readonly _now: () => number;
  private readonly _log: (message: string) => void;
  private _usage: WorkspaceUsage | null = null;
  private _measuredAt: number | undefined;
  /** What {@link WorkspaceUsageMeter.IOptions.changes} said when the last measurement began. */
  private _changesMeasured: number | undefined;
  private _running: Promise<void> | undefined;
}

export namespace WorkspaceUsageMeter {
  /** Where the workspace is. */
  export interface ISource {
    readonly store: IObjectStore;
    readonly bucket: string;
    readonly workspacePrefix: string;
  }

  export interface IOptions {
    /** The workspace to measure, or undefined while there is none usable (answers null). */
    readonly source: () => ISource | undefined;
    /**
     * A count of what the archive wrote to the workspace (uploads and delete markers), which
     * moves with every write: the archive queue's `archived`. Default: never moves.
     */
    readonly changes?: () => number;
    /** How long a figure is served, when nothing changed, before it is measured again; 60 s. */
    readonly maxAgeMs?: number;
    /** The least time between the starts of two measurements the archive's writes cause; 5 s. */
    readonly minIntervalMs?: number;
    /**
     * How long a request waits for the measurement it starts when there is no figure yet or the
     * archive changed since the figure; default 2 s.
     */
    readonly waitMs?: number;
    readonly now?: () => number;
    readonly log?: (message: string) => void;
  }
}

/**
 * The usage of the workspace, counted from one listing of every version and delete marker below
 * `<workspace_prefix>/`.
 */
export async function measureWorkspace(
  source: WorkspaceUsageMeter.ISource
): Promise<WorkspaceUsage> {
  const measuredAt = new Date();
  const usage = { objects: 0, versions: 0, bytes: 0, current_bytes: 0 };
  const prefix = `${objectKey(source.workspacePrefix)}/`;
  for await (const entry of source.store.listAllVersions(source.bucket, prefix)) {
    if (entry.deleteMarker) continue;
    usage.versions++;
    usage.bytes += entry.size;
    if (entry.isLatest) {
      usage.objects++;
      usage.current_bytes += entry.size;
    }
  }
  return { ...usage, measured_at: measuredAt.toISOString() };
}

/**
 * The meter of the gateway's workspace: measures while object storage is usable (feature
 * detection's `store_valid`) and archiving is on, else answers null.
 */
export function workspaceUsageMeter(
  archiving: Pick<Archiving, 'settings' | 'store' | 'bucket' | 'features' | 'queue'>,
  log?: Logger
): WorkspaceUsageMeter {
  return new WorkspaceUsageMeter({
    source: () =>
      archiving.queue && archiving.features().features.store_valid
        ? {
            store: archiving.store,
            bucket: archiving.bucket,
            workspacePrefix: archiving.settings.workspace_prefix
          }
        : undefined,
    changes: () => archiving.queue?.status().archived ?? 0,
    log: message => log?.warn(message)
  });
}
