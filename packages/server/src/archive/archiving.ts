import type { ContentsManager } from '../contents/manager';
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
import { S3ObjectStore } from '../storage/s3Store';
import { ArchiveJournal } from './journal';
import { ArchiveQueue } from './queue';

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
  return {
    store: new S3ObjectStore({
      endpoint: settings.object_endpoint_url,
      region: settings.object_region_name,
      accessKeyId: settings.object_access_key_id,
      secretAccessKey: settings.object_secret_access_key,
      maxSockets: settings.max_threads,
      requestTimeoutMs: settings.object_timeout_seconds * 1000,
      checksums: settings.object_checksums
    }),
    bucket: settings.object_bucket
  };
}

/**
 * Everything archiving needs, wired to a contents manager: the store, the journal and the queue,
 * subscribed to notebook saves.
 */
export class Archiving {
  private constructor(
    readonly settings: StoreSettings,
    readonly store: IObjectStore,
    readonly bucket: string,
    readonly queue: ArchiveQueue | null,
    private readonly _log: Logger
  ) {}

  /**
   * Build the store and, when archiving is configured, start the queue (replaying its journal)
   * and subscribe it to the manager's notebook saves: each save waits until its record is
   * journalled.
   */
  static async start(
    settings: StoreSettings,
    manager: ContentsManager,
    log: Logger,
    options: { backoff?: { baseMs?: number; capMs?: number } } = {}
  ): Promise<Archiving> {
    const { store, bucket } = createObjectStore(settings);
    const configured = validateStoreSettings(settings);
    log.info(
      { settings: redactSettings(settings), store: store.description, bucket },
      'object storage'
    );
    let queue: ArchiveQueue | null = null;
    if (configured.features.archive_valid) {
      queue = new ArchiveQueue({
        store,
        bucket,
        prefix: settings.workspace_prefix,
        journal: new ArchiveJournal(settings.journal_dir),
        maxThreads: settings.max_threads,
        log: log.child({ component: 'archive' }),
        backoff: { capMs: settings.archive_retry_max_seconds * 1000, ...options.backoff }
      });
      await queue.start();
      const active = queue;
      manager.addSaveHook(event =>
        event.type === 'notebook' ? active.enqueue(event.path, event.bytes) : Promise.resolve()
      );
      log.info(
        { to: `${bucket}/${settings.workspace_prefix}`, store: store.description },
        'archiving every notebook save'
      );
    } else {
      log.warn({ reason: configured.reasons.archive_valid }, 'archiving is off');
    }
    return new Archiving(settings, store, bucket, queue, log);
  }

  /** Feature validation with what only the running queue knows (the bucket check). */
  features(context: { publishEnabled?: boolean } = {}): IFeatureValidation {
    return validateStoreSettings(this.settings, {
      ...context,
      storageCheck: this.queue?.storageCheck() ?? undefined
    });
  }

  /**
   * Let in-flight archives finish for at most `timeoutMs`, then close; whatever is still
   * pending stays in the journal for the next start.
   */
  async close(timeoutMs = 5000): Promise<void> {
    if (this.queue) {
      const left = await this.queue.flush(timeoutMs);
      if (left > 0)
        this._log.warn({ pending: left }, 'archives left in the journal for the next start');
      await this.queue.close();
    }
    await this.store.close();
  }
}
