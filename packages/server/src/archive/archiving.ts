import type { ContentsManager } from '../contents/manager';
import { VersionCheckpoints } from '../contents/versionCheckpoints';
import type { Logger } from '../gateway/logger';
import {
  EMBEDDED_BUCKET,
  redactSettings,
  storageMode,
  validateStoreSettings,
  type IFeatureValidation,
  type StoreSettings
} from '../settings';
import { LocalObjectStore } from '../storage/localStore';
import type { IObjectStore } from '../storage/objectStore';
import { hubCredentialsFromSettings } from '../storage/hubCredentials';
import { S3ObjectStore } from '../storage/s3Store';
import type { ArchiveObservation } from '@jupyter-store/contract';
import type { UpstreamAddress } from '../gateway/upstream';
import { objectKey } from '../storage/keys';
import { ArchiveIndex } from './archiveIndex';
import { ArchiveFilter } from './filter';
import { ArchiveIntake, type SourceCounts } from './intake';
import { ArchiveJournal } from './journal';
import { ArchiveQueue } from './queue';
import { ReconciliationScan } from './scan';
import { JupyterEventSource } from './sources/jupyterEvents';
import { FileSystemWatcher } from './sources/watcher';

/** The object store the settings select, and the bucket to use in it. */
export function createObjectStore(settings: StoreSettings): {
  store: IObjectStore;
  bucket: string;
} {
  if (storageMode(settings) === 'embedded') {
    return {
      store: new LocalObjectStore({
        root: settings.local_store_dir,
        defaultBucket: EMBEDDED_BUCKET
      }),
      bucket: EMBEDDED_BUCKET
    };
  }
  // On JupyterHub: short-lived credentials of this user's prefixes, from our service.
  const hubCredentials = hubCredentialsFromSettings(settings);
  return {
    store: new S3ObjectStore({
      endpoint: settings.object_endpoint_url,
      region: settings.object_region_name,
      accessKeyId: settings.object_access_key_id,
      secretAccessKey: settings.object_secret_access_key,
      credentials: hubCredentials,
      headBucket: hubCredentials === undefined,
      maxSockets: settings.max_threads,
      requestTimeoutMs: settings.object_timeout_seconds * 1000,
      checksums: settings.object_checksums
    }),
    bucket: settings.object_bucket
  };
}

/**
 * Let the save of one path just made reach the bucket: its intake settles and queues it, then
 * the queue archives it. At most 5 s in all: with object storage out of reach the caller goes
 * on with what the bucket holds (JupyterLab asks for a checkpoint right after a save; a named
 * version names the newest archived one).
 */
function pathSettled(intake: ArchiveIntake, queue: ArchiveQueue, apiPath: string): Promise<void> {
  const deadline = Date.now() + 5000;
  return intake
    .idle(5000, apiPath)
    .then(() => queue.flushPath(apiPath, Math.max(0, deadline - Date.now())))
    .then(() => undefined);
}

/**
 * Everything archiving needs, wired to a contents manager and its root: the store, the journal,
 * the queue, the index, the intake, and the sources of changes (the manager's own saves, renames
 * and deletes; Jupyter's event bus; a file-system watcher; the reconciliation scan).
 */
export class Archiving {
  private constructor(
    readonly settings: StoreSettings,
    readonly store: IObjectStore,
    readonly bucket: string,
    readonly queue: ArchiveQueue | null,
    private readonly _log: Logger,
    private readonly _observers: Archiving.IObservers | null
  ) {}

  /**
   * Build the store and, when archiving is configured, start the queue (replaying its journal),
   * subscribe the intake to the manager's saves (each save waits until its record is journalled),
   * renames and deletes, start the watcher and the event subscription, and begin the first scan
   * (in the background: the gateway does not wait for it).
   */
  static async start(
    settings: StoreSettings,
    manager: ContentsManager,
    log: Logger,
    options: Archiving.IStartOptions = {}
  ): Promise<Archiving> {
    const { store, bucket } = createObjectStore(settings);
    const configured = validateStoreSettings(settings);
    log.info(
      { settings: redactSettings(settings), store: store.description, bucket },
      'object storage'
    );
    if (!configured.features.archive_valid) {
      log.warn({ reason: configured.reasons.archive_valid }, 'archiving is off');
      return new Archiving(settings, store, bucket, null, log, null);
    }
    const archiveLog = log.child({ component: 'archive' });
    const rootDir = manager.rootDir;
    const index = await ArchiveIndex.open({
      dir: settings.journal_dir,
      identity: { rootDir, store: store.description, bucket, prefix: settings.workspace_prefix }
    });
    const filter = new ArchiveFilter({
      include: settings.archive_include,
      exclude: settings.archive_exclude
    });
    // The queue reports to the intake, which needs the queue: the holder closes the loop.
    const wired: { intake?: ArchiveIntake } = {};
    const queue = new ArchiveQueue({
      store,
      bucket,
      prefix: settings.workspace_prefix,
      journal: new ArchiveJournal(settings.journal_dir, {
        beforeForget: entries => manager.settleJournalled(entries)
      }),
      maxThreads: settings.max_threads,
      log: archiveLog,
      backoff: { capMs: settings.archive_retry_max_seconds * 1000, ...options.backoff },
      minIntervalMs: settings.archive_min_interval_seconds * 1000,
      onArchived: (entry, versionId, attachment) =>
        wired.intake?.archived(entry, versionId, attachment)
    });
    const intake = (wired.intake = new ArchiveIntake({
      rootDir,
      filter,
      queue,
      index,
      log: archiveLog,
      ...options.intake
    }));
    const replayed = await queue.start();
    await manager.recoverJournalled(replayed);
    intake.replayed(replayed);
    const scan = new ReconciliationScan({
      rootDir,
      filter,
      intake,
      log: archiveLog,
      intervalSeconds: settings.archive_scan_interval_seconds,
      concurrency: settings.max_threads
    });
    intake.subtreeScanner = (apiPath, source) => scan.runSubtree(apiPath, source);
    intake.rescanner = reason => void scan.run(reason);

    options.relayedSaves?.(apiPath => intake.relayedSave(apiPath));
    manager.addWriteGate(apiPath => intake.holdObservation(apiPath));
    manager.addSaveHook(
      event =>
        intake.saved(event.path, event.bytes, 'gateway', {
          written: event.written,
          signature: event.signature
        }),
      { journals: true }
    );
    // The gateway tells Jupyter's event bus of its own changes (ContentsEventEmitter), and the
    // bus's echo of a save needs no look (see ArchiveIntake.expectEcho).
    const echoed = options.upstream !== undefined;
    manager.onChanged(change => {
      // Saves and copies reach the intake through the save hook, with their bytes.
      if (change.action === 'rename') intake.renamed(change.from, change.to, 'gateway');
      else if (change.action === 'delete') intake.removed(change.path, 'gateway');
      else if (change.action === 'save' && echoed) intake.expectEcho(change.path);
    });
    manager.useVersionCheckpoints(
      settings.versions_as_checkpoints
        ? new VersionCheckpoints({
            store,
            bucket,
            prefix: settings.workspace_prefix,
            covers: apiPath => filter.covers(apiPath),
            max: settings.versions_as_checkpoints_max,
            log: message => archiveLog.warn(message),
            // JupyterLab asks for a checkpoint right after a save: let that save reach the bucket.
            // At most 5 s in all: with object storage out of reach, the answer is Jupyter's copy.
            settled: apiPath => pathSettled(intake, queue, apiPath)
          })
        : undefined
    );

    // Watch before the first scan, so that nothing written meanwhile falls between the two.
    const watcher = new FileSystemWatcher({
      rootDir,
      enabled: settings.archive_watch,
      sink: intake,
      log: archiveLog
    });
    await watcher.start();
    const events = options.upstream
      ? new JupyterEventSource({
          upstream: options.upstream.address,
          baseUrl: options.upstream.baseUrl,
          token: options.upstream.token,
          sink: intake,
          log: archiveLog
        })
      : null;
    events?.start();

    const observers: Archiving.IObservers = { index, intake, scan, watcher, events };
    const archiving = new Archiving(settings, store, bucket, queue, log, observers);
    archiving._firstScan = archiving._startScanning(index, intake, scan);
    log.info(
      {
        to: `${bucket}/${settings.workspace_prefix}`,
        store: store.description,
        watcher: watcher.status().mode,
        scanIntervalSeconds: settings.archive_scan_interval_seconds
      },
      'archiving every change to the notebooks under the root'
    );
    return archiving;
  }

  /** Feature validation with what only the running queue knows (the bucket check). */
  features(context: { publishEnabled?: boolean } = {}): IFeatureValidation {
    return validateStoreSettings(this.settings, {
      ...context,
      storageCheck: this.queue?.storageCheck() ?? undefined
    });
  }

  /** Per source counts and how other writers are observed; null when archiving is off. */
  observation(): { sources: SourceCounts; observation: ArchiveObservation } | null {
    if (!this._observers) return null;
    const { intake, scan, watcher, events } = this._observers;
    const watched = watcher.status();
    const scanned = scan.status();
    const subscription = events?.status();
    return {
      sources: intake.counts(),
      observation: {
        watcher: { mode: watched.mode, reason: watched.reason },
        blind_spots: watched.blindSpots.map(spot => ({ path: spot.path, reason: spot.reason })),
        events: subscription
          ? { connected: subscription.connected, reason: subscription.reason }
          : { connected: false, reason: 'no upstream Jupyter Server to subscribe to' },
        scan: {
          interval_seconds: scanned.intervalSeconds,
          running: scanned.running,
          last_completed_at: scanned.lastCompletedAt,
          last_duration_seconds: scanned.lastDurationSeconds,
          last_file_count: scanned.lastFileCount
        }
      }
    };
  }

  /** The first scan's completion (for tests and benchmarks); resolved when archiving is off. */
  firstScan(): Promise<void> {
    return this._firstScan;
  }

  /** Run a full scan now; resolves when its differences are queued. */
  scanNow(reason = 'asked for'): Promise<void> {
    return this._observers?.scan.run(reason) ?? Promise.resolve();
  }

  /**
   * Wait (at most 5 s) until the changes of one path seen so far are archived: what a caller
   * that names "the newest version" right after a save needs (see {@link pathSettled}).
   */
  async pathSettled(apiPath: string): Promise<void> {
    if (this._observers && this.queue) {
      await pathSettled(this._observers.intake, this.queue, apiPath);
    }
  }

  /** Wait until every change seen so far is queued (not yet archived). */
  async settled(timeoutMs = 30_000): Promise<boolean> {
    return (await this._observers?.intake.idle(timeoutMs)) ?? true;
  }

  /**
   * Stop the sources, let in-flight archives finish for at most `timeoutMs`, then close;
   * whatever is still pending stays in the journal for the next start.
   */
  async close(timeoutMs = 5000): Promise<void> {
    if (this._observers) {
      const { watcher, events, scan, intake, index } = this._observers;
      await Promise.all([watcher.close(), events?.close(), scan.close()]);
      await intake.idle(Math.min(timeoutMs, 2000));
      intake.close();
      if (this.queue) {
        const left = await this.queue.flush(timeoutMs);
        if (left > 0)
          this._log.warn({ pending: left }, 'archives left in the journal for the next start');
        await this.queue.close();
      }
      await index.close().catch((error: unknown) => {
        this._log.warn({ err: (error as Error).message }, 'the archive index could not be saved');
      });
    }
    await this.store.close();
  }

  /**
   * Rebuild a lost index from a listing of the bucket, then scan the root once and every
   * interval after.
   */
  private async _startScanning(
    index: ArchiveIndex,
    intake: ArchiveIntake,
    scan: ReconciliationScan
  ): Promise<void> {
    if (!index.found) {
      try {
        const prefix = objectKey(this.settings.workspace_prefix) + '/';
        const latest = new Map<string, { etag?: string; size: number }>();
        for await (const object of this.store.listLatest(this.bucket, prefix)) {
          latest.set(object.key.slice(prefix.length), { etag: object.etag, size: object.size });
        }
        intake.useRemoteListing(latest);
        if (latest.size > 0) {
          this._log.info({ objects: latest.size }, 'rebuilding the archive index from the bucket');
        }
      } catch (error) {
        this._log.warn(
          { err: (error as Error).message },
          'the bucket could not be listed to rebuild the archive index; uploads compare with the latest object instead'
        );
      }
    }
    try {
      await scan.run('start-up');
    } catch (error) {
      this._log.error({ err: (error as Error).message }, 'the start-up scan failed');
    }
    scan.startTimer();
  }

  private _firstScan: Promise<void> = Promise.resolve();
}

export namespace Archiving {
  export interface IStartOptions {
    /** Retry delays of the queue (tests shorten them). */
    backoff?: { baseMs?: number; capMs?: number };
    /** The upstream Jupyter Server whose `contents_service` events to follow. */
    upstream?: { address: UpstreamAddress; baseUrl: string; token: string | null };
    /**
     * With the `jupyter` contents backend: where to register the hook that journals each save
     * Jupyter answered (`Gateway.addRelayedSaveHook`).
     */
    relayedSaves?: (hook: (apiPath: string) => Promise<void>) => void;
    /** Intake timings (tests shorten them). */
    intake?: Partial<Pick<ArchiveIntake.IOptions, 'settleMs' | 'maxSettleMs' | 'renameWindowMs'>>;
  }

  /** The parts that observe writers other than the gateway. */
  export interface IObservers {
    index: ArchiveIndex;
    intake: ArchiveIntake;
    scan: ReconciliationScan;
    watcher: FileSystemWatcher;
    events: JupyterEventSource | null;
  }
}
