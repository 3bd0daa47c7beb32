import type { WorkspaceUsage } from '@jupyter-store/contract';
import type { Archiving } from '../archive/archiving';
import type { ArchiveQueue } from '../archive/queue';
import type { Logger } from '../gateway/logger';
import { objectKey } from '../storage/keys';
import type { IObjectStore } from '../storage/objectStore';

/**
 * What the workspace prefix holds (`usage` of `GET api/store`): counted once from its version
 * listing, then kept up to date from the archive's own writes, because the status bar polls
 * feature detection and a listing costs one ListObjectVersions request per 1000 entries.
 *
 * #### Notes
 * - The first request starts a count and waits for it, at most
 *   {@link WorkspaceUsageMeter.IOptions.waitMs} (2 s); it answers null when the count is not
 *   done by then: the next request has it.
 * - Every write the archive queue confirms ({@link WorkspaceUsageMeter.IOptions.writes}: a new
 *   version, or a delete marker) is added to the figure at once, with no request to the store:
 *   the meter keeps the size and id of each key's newest version, so a new version replaces the
 *   current bytes of its key, a delete marker removes them, and a version the store already held
 *   (a replayed save) adds nothing. Writes confirmed while a count runs are applied once it ends,
 *   unless the count already saw them.
 * - What the archive does not write (other writers of the bucket, a lifecycle rule expiring old
 *   versions) is found by counting again: a request that finds the count older than
 *   {@link WorkspaceUsageMeter.IOptions.maxAgeMs} (an hour) gets the figure all the same and
 *   starts a new count in the background. A failed count keeps the figure before it and is
 *   tried again after {@link WorkspaceUsageMeter.IOptions.retryMs} (a minute).
 *
 * So an open JupyterLab costs one listing of the workspace an hour, however often it polls and
 * saves. `measured_at` is when the figure was last brought up to date: the count's start, or the
 * newest write applied since.
 */
export class WorkspaceUsageMeter {
  constructor(options: WorkspaceUsageMeter.IOptions) {
    this._source = options.source;
    this._maxAgeMs = options.maxAgeMs ?? 60 * 60_000;
    this._retryMs = options.retryMs ?? 60_000;
    this._waitMs = options.waitMs ?? 2_000;
    this._now = options.now ?? Date.now;
    this._log = options.log ?? (() => undefined);
    options.writes?.(write => this._write(write));
  }

  /**
   * The figure, or null while there is none; starts a count when there is none yet or it is old,
   * and waits for it (briefly) when there is no figure.
   */
  async current(): Promise<WorkspaceUsage | null> {
    const source = this._source();
    if (!source) return null;
    if (this._now() >= this._countDueAt && !this._running) {
      this._running = this._count(source).finally(() => {
        this._running = undefined;
      });
    }
    if (this._figure === null && this._running) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this._running,
        new Promise<void>(resolve => {
          timer = setTimeout(resolve, this._waitMs);
        })
      ]);
      clearTimeout(timer);
    }
    return this._figure === null ? null : Private.answer(this._figure);
  }

  /** One count; failures are logged, never thrown (the figure before it stays). */
  private async _count(source: WorkspaceUsageMeter.ISource): Promise<void> {
    const startedAt = this._now();
    this._during = [];
    try {
      this._figure = await Private.count(source, startedAt);
      this._countDueAt = startedAt + this._maxAgeMs;
    } catch (error) {
      this._log(`could not measure the workspace: ${(error as Error).message}`);
      this._countDueAt = startedAt + this._retryMs;
    }
    const during = this._during;
    this._during = undefined;
    // Writes the listing may or may not have seen: applied unless the count holds them.
    for (const write of during) this._apply(write, true);
    this._figure?.seen.clear();
  }

  private _write(write: WorkspaceUsageMeter.IWrite): void {
    if (this._during) this._during.push(write);
    else this._apply(write, false);
  }

  /** Add one archive write to the figure (see the class notes). */
  private _apply(write: WorkspaceUsageMeter.IWrite, maybeCounted: boolean): void {
    const figure = this._figure;
    if (figure === null) return;
    // Up to date as of this write, whether or not it changes the figure.
    if (write.at > figure.updatedAt) figure.updatedAt = write.at;
    const key = objectKey(figure.prefix, write.path);
    const known = figure.latest.get(key);
    if (write.action === 'delete') {
      if (known === undefined) return;
      figure.objects--;
      figure.currentBytes -= known.size;
      figure.latest.delete(key);
    } else {
      if (write.versionId !== null && known?.versionId === write.versionId) return;
      if (maybeCounted && write.versionId !== null && figure.seen.has(write.versionId)) return;
      figure.versions++;
      figure.bytes += write.bytes;
      figure.currentBytes += write.bytes - (known?.size ?? 0);
      if (known === undefined) figure.objects++;
      figure.latest.set(key, { versionId: write.versionId, size: write.bytes });
    }
  }

  private readonly _source: () => WorkspaceUsageMeter.ISource | undefined;
  private readonly _maxAgeMs: number;
  private readonly _retryMs: number;
  private readonly _waitMs: number;
  private readonly _now: () => number;
  private readonly _log: (message: string) => void;
  private _figure: Private.IFigure | null = null;
  /** When the next count is due (0: at the first request). */
  private _countDueAt = 0;
  /** The writes confirmed while a count runs; undefined when none runs. */
  private _during: WorkspaceUsageMeter.IWrite[] | undefined;
  private _running: Promise<void> | undefined;
}

export namespace WorkspaceUsageMeter {
  /** Where the workspace is. */
  export interface ISource {
    readonly store: IObjectStore;
    readonly bucket: string;
    readonly workspacePrefix: string;
  }

  /** A write of the archive, as the queue reports it (`ArchiveQueue.IWrite`). */
  export type IWrite = ArchiveQueue.IWrite;

  export interface IOptions {
    /** The workspace to measure, or undefined while there is none usable (answers null). */
    readonly source: () => ISource | undefined;
    /** Subscribes the meter to the archive's confirmed writes (the queue's `onWrite`). */
    readonly writes?: (listener: (write: IWrite) => void) => void;
    /** How long a count is used, updated by the archive's writes, before counting again; 1 h. */
    readonly maxAgeMs?: number;
    /** How long after a failed count the next one starts; 1 min. */
    readonly retryMs?: number;
    /** How long the first request waits for the first count; default 2 s. */
    readonly waitMs?: number;
    readonly now?: () => number;
    readonly log?: (message: string) => void;
  }
}

/** The usage of the workspace, counted from one listing of every version below it. */
export async function measureWorkspace(
  source: WorkspaceUsageMeter.ISource
): Promise<WorkspaceUsage> {
  return Private.answer(await Private.count(source, Date.now()));
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
    writes: listener => archiving.queue?.onWrite(listener),
    log: message => log?.warn(message)
  });
}

namespace Private {
  /** A count, and what keeps it up to date. */
  export interface IFigure {
    /** The workspace prefix the count listed. */
    readonly prefix: string;
    objects: number;
    versions: number;
    bytes: number;
    currentBytes: number;
    /** ISO time of the count's start, or of the newest write applied since. */
    updatedAt: string;
    /** The newest version of each key whose newest entry is a version. */
    readonly latest: Map<string, { versionId: string | null; size: number }>;
    /** The ids of the versions the count listed, to tell the writes during it that it saw. */
    readonly seen: Set<string>;
  }

  /** Count every version below `<workspace_prefix>/` (delete markers left out). */
  export async function count(
    source: WorkspaceUsageMeter.ISource,
    startedAt: number
  ): Promise<IFigure> {
    const figure: IFigure = {
      prefix: source.workspacePrefix,
      objects: 0,
      versions: 0,
      bytes: 0,
      currentBytes: 0,
      updatedAt: new Date(startedAt).toISOString(),
      latest: new Map(),
      seen: new Set()
    };
    const prefix = `${objectKey(source.workspacePrefix)}/`;
    for await (const entry of source.store.listAllVersions(source.bucket, prefix)) {
      if (entry.deleteMarker) continue;
      figure.versions++;
      figure.bytes += entry.size;
      figure.seen.add(entry.versionId);
      if (entry.isLatest) {
        figure.objects++;
        figure.currentBytes += entry.size;
        figure.latest.set(entry.key, { versionId: entry.versionId, size: entry.size });
      }
    }
    return figure;
  }

  export function answer(figure: IFigure): WorkspaceUsage {
    return {
      objects: figure.objects,
      versions: figure.versions,
      bytes: figure.bytes,
      current_bytes: figure.currentBytes,
      measured_at: figure.updatedAt
    };
  }
}
