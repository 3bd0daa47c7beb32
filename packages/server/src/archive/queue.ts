import pLimit from 'p-limit';
import type { Logger } from '../gateway/logger';
import { objectKey } from '../storage/keys';
import { ObjectStoreError, type IObjectStore } from '../storage/objectStore';
import { ArchiveCoalescer } from './coalesce';
import {
  entryOf,
  type ArchiveJournal,
  type IAppendOptions,
  type IJournalEntry,
  type IJournalRecord
} from './journal';

/**
 * The specification's archive record: the notebook's path, the bytes to archive, and how long
 * the record waited in the queue before its upload started (ms).
 */
export interface IArchiveRecord {
  readonly filepath: string;
  readonly content: Buffer;
  readonly queued_time: number;
}

/** What the archive queue reports to feature detection and the status bar. */
export interface IArchiveStatus {
  /** Saves journalled and not yet confirmed by the object store. */
  readonly pending: number;
  /** Age of the oldest of them (ms), or null when none is pending. */
  readonly oldestPendingAgeMs: number | null;
  /** Saves archived since start-up. */
  readonly archived: number;
  /**
   * Saves skipped since start-up because a newer state of their path replaced them within
   * `archive_min_interval_seconds` (0 when coalescing is off).
   */
  readonly coalesced: number;
  /** The last failure, cleared by the next success. */
  readonly lastError: {
    readonly message: string;
    readonly at: string;
    readonly path?: string;
  } | null;
  /** The bucket check: ok, or why archiving is on hold. */
  readonly storage: { readonly ok: boolean; readonly reason?: string; readonly checkedAt?: string };
  /** The last record archived since start-up: its path, version and time; null before one. */
  readonly lastArchived: {
    readonly path: string;
    readonly versionId: string | null;
    readonly at: string;
  } | null;
}

/**
 * Archives every notebook save, in save order per path, without losing any.
 *
 * #### Notes
 * - A save is journalled on local disk before {@link enqueue} resolves (so before the contents
 *   API answers), and leaves the journal only after the object store confirmed it. A crash, a
 *   kill or an outage therefore only delays archives; {@link start} replays what is left.
 * - Per path, records form a chain (`path_locks`): the next save of a path starts only after the
 *   previous one arrived, so versions appear in save order and none is skipped. Across paths at
 *   most `maxThreads` uploads run at once (p-limit).
 * - Transient failures are retried with capped exponential backoff and full jitter, forever.
 *   Refused credentials or a missing bucket put every upload on hold and re-check the bucket with
 *   the same backoff; the reason is in {@link status}. A request the store calls malformed cannot
 *   succeed by retrying: that record is kept in the journal and reported.
 * - After an ambiguous failure (or at replay) the latest object is checked for this save's id
 *   before uploading again, so a retry does not add a duplicate version.
 * - With `minIntervalMs`, a path gets at most one version per interval: the newest state waiting
 *   replaces the ones before it ({@link ArchiveCoalescer}), which are marked done with it.
 */
export class ArchiveQueue {
  constructor(options: ArchiveQueue.IOptions) {
    this._store = options.store;
    this._bucket = options.bucket;
    this._prefix = options.prefix;
    this._journal = options.journal;
    this._log = options.log;
    this._limit = pLimit(options.maxThreads);
    this._backoff = { baseMs: 250, capMs: 30_000, ...options.backoff };
    this._onArchived = options.onArchived;
    this._coalescer = new ArchiveCoalescer({ intervalMs: options.minIntervalMs ?? 0 });
  }

  /**
   * Take the journal, check the bucket, and queue the records left by earlier runs.
   *
   * @returns those records, in journal order, so that the caller knows what is still on its way
   *   (and can finish saves the disk may not hold).
   */
  async start(): Promise<readonly IJournalRecord[]> {
    const left = await this._journal.open();
    if (left.length > 0) {
      this._log.info({ pending: left.length }, 'replaying archives left by an earlier run');
    }
    void this._checkStorage();
    // A rename's two records keep their order (see _schedule): the delete of a path that a
    // record replayed before it was renamed from waits behind that record's path.
    const renamedTo = new Map<string, string>();
    for (const record of left) {
      const behind = record.action === 'delete' ? renamedTo.get(record.path) : undefined;
      this._schedule(record, true, behind);
      if (record.renamedFrom !== undefined) renamedTo.set(record.renamedFrom, record.path);
    }
    return left;
  }

  /**
   * Journal a change and queue it; resolves once the journal holds it (durably, unless
   * `options.durable` is false).
   *
   * @param behind - another path whose records queued so far are archived first: a rename's
   *   delete marker on the old path is written only once the new path's version is (see
   *   {@link ArchiveQueue.IEnqueueOptions.behind}).
   * @throws when the journal cannot be written: the caller must not report the save as safe.
   */
  async enqueue(
    apiPath: string,
    content: Buffer,
    options: IAppendOptions = {},
    attachment?: unknown,
    behind?: string
  ): Promise<IJournalEntry> {
    if (this._closed) throw new Error('the archive queue is closed');
    const record = await this._journal.append(apiPath, content, options);
    if (attachment !== undefined) this._attachments.set(record.seq, attachment);
    this._schedule(record, false, behind);
    return entryOf(record);
  }

  /**
   * Wait until fewer than `maxPending` records are pending, so that a bulk producer (a scan of a
   * root full of new notebooks) holds a bounded number of files in memory.
   */
  async waitForRoom(maxPending: number): Promise<void> {
    while (!this._closed && this._pending.size >= maxPending) {
      await new Promise<void>(resolve => this._roomWaiters.add(resolve));
    }
  }

  /**
   * Follow what the queue writes to the workspace: `listener` is called once per record the
   * object store confirmed (a version, or a delete marker), after `onArchived`, at the `at` that
   * {@link status}'s `lastArchived` reports. It must not throw.
   *
   * @returns a function that stops the calls.
   */
  onWrite(listener: (write: ArchiveQueue.IWrite) => void): () => void {
    this._writeListeners.add(listener);
    return () => this._writeListeners.delete(listener);
  }

  /** The current state, for feature detection and the status bar. */
  status(): IArchiveStatus {
    let oldest: number | null = null;
    for (const record of this._pending.values()) {
      if (oldest === null || record.queuedAt < oldest) oldest = record.queuedAt;
    }
    return {
      pending: this._pending.size,
      oldestPendingAgeMs: oldest === null ? null : Math.max(0, Date.now() - oldest),
      archived: this._archived,
      coalesced: this._coalescer.coalesced,
      lastError: this._lastError,
      storage: { ...this._storage },
      lastArchived: this._lastArchived
    };
  }

  /** The bucket check's outcome: true, the reason it failed, or null before it finished. */
  storageCheck(): true | string | null {
    if (this._storage.checkedAt === undefined) return null;
    return this._storage.ok ? true : (this._storage.reason ?? 'the bucket check failed');
  }

  /**
   * Wait until nothing is pending or `timeoutMs` has passed; what is still pending stays in the
   * journal for the next start. Meanwhile the newest states that coalescing holds back until the
   * end of their interval go out at once.
   *
   * @returns the number of records still pending.
   */
  async flush(timeoutMs: number): Promise<number> {
    await this._hurryUntil(() => this._pending.size === 0, timeoutMs);
    return this._pending.size;
  }

  /**
   * Wait until no record of `apiPath` is pending, or `timeoutMs` has passed, sending what
   * coalescing holds back meanwhile: one path's save reaching the bucket, without waiting for a
   * backlog of other paths (a first scan, say).
   *
   * @returns whether nothing of the path is pending.
   */
  async flushPath(apiPath: string, timeoutMs: number): Promise<boolean> {
    const settled = () => ![...this._pending.values()].some(record => record.path === apiPath);
    await this._hurryUntil(settled, timeoutMs);
    return settled();
  }

  /** Poll `done` until it holds or the time is up, with coalesced states sent at once. */
  private async _hurryUntil(done: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    this._flushes++;
    this._coalescer.release(true);
    try {
      while (!done() && Date.now() < deadline) {
        await sleep(Math.min(50, Math.max(1, deadline - Date.now())));
      }
    } finally {
      this._flushes--;
      this._coalescer.release(this._flushes > 0 || this._closed);
    }
  }

  /** Stop retrying and release the journal; pending records stay journalled. */
  async close(): Promise<void> {
    this._closed = true;
    this._coalescer.release(true);
    this._wake();
    this._signalRoom();
    await this._journal.close();
  }

  /**
   * Queue a record behind the earlier records of its path and, with `behind`, behind those of
   * that other path too.
   *
   * #### Notes
   * A rename is archived as two records on two paths: the new path's version (with
   * `renamed-from`), then a delete marker on the old path. Uploads of different paths run at
   * once, so without `behind` the marker could reach the store first, or, with the version's
   * upload retried through an outage, long before it; the history of a renamed notebook is
   * told by the marker being the old key's first entry not older than the new version (see
   * `listHistory` in store/objects.ts). Replayed records are put in the same order from the
   * journal's (see {@link start}).
   */
  private _schedule(record: IJournalRecord, replayed: boolean, behind?: string): void {
    this._pending.set(record.seq, record);
    const superseded = this._coalescer.absorb(record, replayed);
    if (superseded) {
      // The newer record waits in the same slot; the older one stays journalled until it is
      // archived, and leaves the pending count now.
      this._pending.delete(superseded.seq);
      this._attachments.delete(superseded.seq);
      this._signalRoom();
      this._log.debug({ path: record.path, seq: superseded.seq }, 'superseded by a newer save');
      return;
    }
    const slot = this._coalescer.open(record, replayed);
    const own = this._pathLocks.get(record.path) ?? Promise.resolve();
    const other = behind === undefined ? undefined : this._pathLocks.get(behind);
    // Path locks never reject (see _archive).
    const previous = other === undefined ? own : Promise.all([own, other]);
    // The upload starts on the next turn of the event loop: the SDK does a millisecond of
    // synchronous work before its first await, which would otherwise come before the answer of
    // the save that queued this record.
    const done = previous
      .then(nextTurn)
      .then(() => this._coalescer.take(slot))
      .then(newest => this._archive(newest, slot.replayed, slot.superseded));
    this._pathLocks.set(record.path, done);
    void done.finally(() => {
      if (this._pathLocks.get(record.path) === done) this._pathLocks.delete(record.path);
    });
  }

  /**
   * Archive one record, retrying until it arrives or the queue closes, then mark it done with
   * the records it superseded. Never rejects.
   */
  private async _archive(
    record: IJournalRecord,
    replayed: boolean,
    superseded: readonly IJournalEntry[] = []
  ): Promise<void> {
    let mayExistAlready = replayed;
    for (let attempt = 0; !this._closed; attempt++) {
      await this._whenStorageOk();
      if (this._closed) return;
      try {
        const versionId = await this._limit(() => this._upload(record, mayExistAlready));
        if (superseded.length === 0) await this._journal.remove(record.seq);
        else await this._journal.removeTogether([...superseded, entryOf(record)]);
        this._pending.delete(record.seq);
        this._archived++;
        this._lastError = null;
        const at = new Date().toISOString();
        this._lastArchived = { path: record.path, versionId, at };
        const entry = entryOf(record);
        const attachment = this._attachments.get(record.seq);
        this._attachments.delete(record.seq);
        this._signalRoom();
        this._onArchived?.(entry, versionId, attachment);
        const write: ArchiveQueue.IWrite = {
          path: record.path,
          action: record.action === 'delete' ? 'delete' : 'put',
          bytes: record.action === 'delete' ? 0 : record.content.length,
          versionId,
          at
        };
        for (const listener of this._writeListeners) listener(write);
        return;
      } catch (error) {
        const failure = toStoreError(error);
        this._lastError = {
          message: failure.message,
          at: new Date().toISOString(),
          path: record.path
        };
        if (failure.ambiguous) mayExistAlready = true;
        if (failure.kind === 'access-denied' || failure.kind === 'not-found') {
          this._log.error(
            { path: record.path, code: failure.code },
            `archiving is on hold: ${failure.message}`
          );
          this._putOnHold(failure.message);
          continue;
        }
        if (failure.kind === 'bad-request') {
          this._log.error(
            { path: record.path, code: failure.code, seq: record.seq },
            `this save cannot be archived and stays in the journal: ${failure.message}`
          );
          this._pending.delete(record.seq);
          this._attachments.delete(record.seq);
          this._signalRoom();
          return;
        }
        const delay = this._delay(attempt);
        this._log.warn(
          { path: record.path, code: failure.code, retryInMs: Math.round(delay) },
          `archive failed, retrying: ${failure.message}`
        );
        await this._sleep(delay);
      }
    }
  }

  private async _upload(record: IJournalRecord, mayExistAlready: boolean): Promise<string | null> {
    const key = objectKey(this._prefix, record.path);
    if (mayExistAlready || record.checkLatest) {
      const existing = await this._store.head(this._bucket, key).catch((error: unknown) => {
        if (error instanceof ObjectStoreError && error.kind === 'not-found') return undefined;
        throw error;
      });
      if (record.action === 'delete') {
        // Already deleted (or never archived): another marker would add nothing.
        if (existing === undefined) return null;
      } else if (
        existing?.metadata['save-id'] === record.saveId ||
        (record.checkLatest && existing?.metadata.sha256 === record.sha256)
      ) {
        return existing.versionId;
      }
    }
    const startedAt = Date.now();
    if (record.action === 'delete') {
      const result = await this._store.deleteObject(this._bucket, key);
      this._log.debug(
        { path: record.path, versionId: result.versionId, uploadMs: Date.now() - startedAt },
        'delete marker archived'
      );
      return result.versionId;
    }
    const archiveRecord: IArchiveRecord = {
      filepath: record.path,
      content: record.content,
      queued_time: startedAt - record.queuedAt
    };
    const metadata: Record<string, string> = { 'save-id': record.saveId, sha256: record.sha256 };
    if (record.source) metadata.writer = record.source;
    // Metadata must be printable ASCII on every S3 server: the old path is percent-encoded.
    if (record.renamedFrom !== undefined) {
      metadata['renamed-from'] = encodeURIComponent(record.renamedFrom);
    }
    // The journal's hash of these bytes: the store checks the body against it rather than
    // hashing it again, and the bucket keeps it as the version's checksum.
    const result = await this._store.put(this._bucket, key, archiveRecord.content, {
      contentType: 'application/x-ipynb+json',
      metadata,
      sha256: record.sha256
    });
    this._log.debug(
      {
        path: archiveRecord.filepath,
        versionId: result.versionId,
        queuedMs: archiveRecord.queued_time,
        uploadMs: Date.now() - startedAt
      },
      'archived'
    );
    return result.versionId;
  }

  /** Check credentials, bucket and versioning; on failure keep checking with backoff. */
  private async _checkStorage(): Promise<void> {
    if (this._checking) return;
    this._checking = true;
    try {
      for (let attempt = 0; !this._closed; attempt++) {
        const reason = await this._bucketProblem();
        this._storage = {
          ok: reason === undefined,
          reason,
          checkedAt: new Date().toISOString()
        };
        if (reason === undefined) {
          if (attempt > 0) this._log.info({ bucket: this._bucket }, 'archiving resumed');
          this._wake();
          return;
        }
        this._log.error({ bucket: this._bucket }, `archiving is on hold: ${reason}`);
        await this._sleep(this._delay(attempt));
      }
    } finally {
      this._checking = false;
    }
  }

  private async _bucketProblem(): Promise<string | undefined> {
    try {
      const check = await this._store.checkBucket(this._bucket);
      if (check.versioning !== 'Enabled') {
        return `versioning is ${check.versioning.toLowerCase()} on bucket ${this._bucket}, so each save would replace the last; enable it`;
      }
      return undefined;
    } catch (error) {
      return toStoreError(error).message;
    }
  }

  private _putOnHold(reason: string): void {
    this._storage = { ok: false, reason, checkedAt: new Date().toISOString() };
    void this._checkStorage();
  }

  private async _whenStorageOk(): Promise<void> {
    while (!this._closed && !this._storage.ok) {
      await new Promise<void>(resolve => this._waiters.add(resolve));
    }
  }

  private _signalRoom(): void {
    const waiters = [...this._roomWaiters];
    this._roomWaiters.clear();
    for (const resolve of waiters) resolve();
  }

  /** Wake uploads waiting for storage, and cut short every backoff sleep. */
  private _wake(): void {
    const waiters = [...this._waiters];
    this._waiters.clear();
    for (const resolve of waiters) resolve();
  }

  /** Full jitter: a random delay up to the capped exponential bound. */
  private _delay(attempt: number): number {
    const bound = Math.min(this._backoff.capMs, this._backoff.baseMs * 2 ** Math.min(attempt, 30));
    return Math.random() * bound;
  }

  /** Sleep, unless the queue closes or storage comes back first. */
  private _sleep(ms: number): Promise<void> {
    return new Promise(resolve => {
      const timer = setTimeout(done, ms);
      timer.unref();
      this._waiters.add(done);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
    });
  }

  private readonly _store: IObjectStore;
  private readonly _bucket: string;
  private readonly _prefix: string;
  private readonly _journal: ArchiveJournal;
  private readonly _log: Logger;
  private readonly _limit: ReturnType<typeof pLimit>;
  private readonly _backoff: { baseMs: number; capMs: number };
  private readonly _onArchived: ArchiveQueue.IOptions['onArchived'];
  private readonly _writeListeners = new Set<(write: ArchiveQueue.IWrite) => void>();
  private readonly _coalescer: ArchiveCoalescer;
  /** Flushes under way: while there are any, coalescing holds nothing back. */
  private _flushes = 0;
  /** The specification's `path_locks`: the tail of each path's chain of archives. */
  private readonly _pathLocks = new Map<string, Promise<void>>();
  private readonly _pending = new Map<number, IJournalRecord>();
  private _lastArchived: IArchiveStatus['lastArchived'] = null;
  private readonly _waiters = new Set<() => void>();
  private readonly _roomWaiters = new Set<() => void>();
  /** What the producer of each pending record asked to get back with its confirmation. */
  private readonly _attachments = new Map<number, unknown>();
  private _storage: { ok: boolean; reason?: string; checkedAt?: string } = {
    ok: false,
    reason: 'the bucket has not been checked yet'
  };
  private _lastError: IArchiveStatus['lastError'] = null;
  private _archived = 0;
  private _checking = false;
  private _closed = false;
}

export namespace ArchiveQueue {
  /** One write the store confirmed (see {@link ArchiveQueue.onWrite}). */
  export interface IWrite {
    /** The API path whose key was written. */
    readonly path: string;
    /** A new version (`put`), or a delete marker. */
    readonly action: 'put' | 'delete';
    /** The version's size; 0 for a delete marker. */
    readonly bytes: number;
    /**
     * The version or marker id; null on an unversioned bucket or where no marker was written.
     * A put the store already held (a replay) answers the version it found.
     */
    readonly versionId: string | null;
    /** When it was confirmed (ISO 8601), as `lastArchived.at`. */
    readonly at: string;
  }

  export interface IOptions {
    store: IObjectStore;
    bucket: string;
    /** `workspace_prefix`. */
    prefix: string;
    journal: ArchiveJournal;
    /** `max_threads`: concurrent uploads. */
    maxThreads: number;
    log: Logger;
    /** Retry delays: the first bound and the cap (ms); default 250 ms and 30 s. */
    backoff?: { baseMs?: number; capMs?: number };
    /**
     * `archive_min_interval_seconds` in ms: at most one version per path per interval, the
     * newest state always (0, the default, archives every record).
     */
    minIntervalMs?: number;
    /**
     * Called once per record the object store confirmed, with the version (or delete marker)
     * id, before the next record of the same path starts. Must not throw.
     */
    onArchived?: (record: IJournalEntry, versionId: string | null, attachment: unknown) => void;
  }
}

/** Any failure as an ObjectStoreError; unknown ones count as transient. */
function toStoreError(error: unknown): ObjectStoreError {
  if (error instanceof ObjectStoreError) return error;
  return new ObjectStoreError(
    'unavailable',
    `the object store call failed: ${(error as Error)?.message ?? String(error)}`,
    (error as NodeJS.ErrnoException)?.code ?? 'Error',
    true
  );
}

function nextTurn(): Promise<void> {
  return new Promise(resolve => setImmediate(resolve));
}

function sleep(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}
