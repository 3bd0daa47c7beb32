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
 * served for {@link WorkspaceUsageMeter.IOptions.maxAgeMs} (60 s by default); a request that
 * finds it older gets it all the same and starts a new measurement in the background. Only the
 * very first request waits for a figure, at most {@link WorkspaceUsageMeter.IOptions.firstWaitMs}
 * (2 s), and answers null when it is not done by then: the next request has it. A failed
 * measurement keeps the figure before it (or null), and is tried again once that is stale.
 */
export class WorkspaceUsageMeter {
  constructor(options: WorkspaceUsageMeter.IOptions) {
    this._source = options.source;
    this._maxAgeMs = options.maxAgeMs ?? 60_000;
    this._firstWaitMs = options.firstWaitMs ?? 2_000;
    this._now = options.now ?? Date.now;
    this._log = options.log ?? (() => undefined);
  }

  /**
   * The latest figure, or null while none is done; starts a measurement when there is none yet
   * or the figure is stale, and waits for the first one (briefly) when there is no figure.
   */
  async current(): Promise<WorkspaceUsage | null> {
    const source = this._source();
    if (!source) return null;
    const stale =
      this._measuredAt === undefined || this._now() - this._measuredAt >= this._maxAgeMs;
    if (stale && !this._running) {
      this._running = this._measure(source).finally(() => {
        this._running = undefined;
      });
    }
    if (this._usage === null && this._running) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this._running,
        new Promise<void>(resolve => {
          timer = setTimeout(resolve, this._firstWaitMs);
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
    // Stale again after the age, also after a failure: not retried on every request.
    this._measuredAt = started;
  }

  private readonly _source: () => WorkspaceUsageMeter.ISource | undefined;
  private readonly _maxAgeMs: number;
  private readonly _firstWaitMs: number;
  private readonly _now: () => number;
  private readonly _log: (message: string) => void;
  private _usage: WorkspaceUsage | null = null;
  private _measuredAt: number | undefined;
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
    /** How long a figure is served before a new measurement starts; default 60 s. */
    readonly maxAgeMs?: number;
    /** How long the first request waits for the first figure; default 2 s. */
    readonly firstWaitMs?: number;
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
    log: message => log?.warn(message)
  });
}
