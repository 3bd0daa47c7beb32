import { createHash } from 'node:crypto';
import type { Stats } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { RootFs, type IFileIdentity } from '../contents/rootFs';
import { hasErrorCode } from '../errors';
import { httpErrors } from '../http/errorCatalogue';
import type { Logger } from '../gateway/logger';
import {
  fileStat,
  RACY_WINDOW_MS,
  sameStat,
  type ArchiveIndex,
  type IFileStat
} from './archiveIndex';
import type { ArchiveFilter } from './filter';
import type { IAppendOptions, IJournalEntry } from './journal';
import type { ArchiveQueue } from './queue';
import { CHANGE_SOURCES, type ChangeSource, type IChangeSink } from './sources/changes';

/** Per source: changes reported, and versions (or delete markers) they produced. */
export type SourceCounts = Record<ChangeSource, { seen: number; archived: number }>;

/**
 * The one door into the archive. Every source reports here; per path, the intake settles the
 * file, reads it, and queues its bytes unless they equal the newest content already queued or
 * archived for that path.
 *
 * #### Notes
 * - **Order.** Per path, looks run one at a time (a look asked for while one waits is merged
 *   into it), and journal appends run one at a time in the order they were decided, so the
 *   queue archives a path's states in the order they were on disk.
 * - **The gateway's saves** come with their bytes and are journalled durably before the save
 *   is answered, with no settling. A look that read the file before such a save but decides
 *   after it is thrown away and run again, so it cannot queue older bytes after newer ones.
 * - **Settling.** A file is read once its mtime is `settleMs` old and Jupyter's `.~name`
 *   atomic-writing copy is gone (Jupyter rewrites the target in place, so a reader could see
 *   half a file), and again if its stat changed while it was read. After `maxSettleMs` of
 *   constant change it is read as it is. The bytes are archived as they are, valid JSON or not.
 * - **Unchanged content** is never queued twice in a row for a path (the gateway's saves
 *   included), so an unchanged Ctrl+S, a touch or a rewrite with the same bytes adds no version.
 * - **Renames.** A rename reported as one (the gateway's, Jupyter's event) archives the file
 *   under its new key with `renamed-from` metadata, then puts a delete marker on the old key.
 *   The metadata goes with the first record queued at the new path after the rename, whoever
 *   queues it: a save that comes before the rename's own read (Lab saves right after renaming)
 *   carries it, else the rename's history would lose the link.
 *   A delete is held for `renameWindowMs` (or until the scan that found it ends): if a new path
 *   turns up with the deleted path's content meanwhile, the pair is recorded as a rename.
 * - **Memory.** Bulk producers (the scan) wait for room in the queue before reading, so a root
 *   full of new notebooks is archived with a bounded number of files in memory.
 */
export class ArchiveIntake implements IChangeSink {
  constructor(options: ArchiveIntake.IOptions) {
    this._rootDir = options.rootDir;
    this._files = new RootFs(options.rootDir);
    this._filter = options.filter;
    this._queue = options.queue;
    this._index = options.index;
    this._log = options.log;
    this._settleMs = options.settleMs ?? 200;
    this._maxSettleMs = options.maxSettleMs ?? 10_000;
    this._renameWindowMs = options.renameWindowMs ?? 1500;
    this._maxPendingForBulk = options.maxPendingForBulk ?? 64;
    for (const apiPath of this._index.paths()) {
      const entry = this._index.get(apiPath)!;
      this._known.set(apiPath, {
        sha256: entry.sha256,
        stat: entry.stat,
        racy: entry.racy,
        archived: true,
        durable: true
      });
    }
  }

  /**
   * Take account of the records an earlier run left in the journal: they are the newest
   * content of their paths until they arrive.
   */
  replayed(entries: readonly IJournalEntry[]): void {
    for (const entry of entries) {
      if (entry.action === 'delete') this._known.delete(entry.path);
      else {
        this._known.set(entry.path, {
          sha256: entry.sha256,
          stat: undefined,
          racy: true,
          archived: false,
          durable: true
        });
      }
    }
  }

  /**
   * The latest objects of the bucket, for an index that was lost: a file whose MD5 and size
   * match its key's latest object is recorded as archived instead of being uploaded again.
   */
  useRemoteListing(latest: ReadonlyMap<string, { etag?: string; size: number }>): void {
    this._remote = latest;
  }

  /** Stop using the bucket listing (after the first complete scan). */
  forgetRemoteListing(): void {
    this._remote = undefined;
  }

  /** Where a directory's subtree is looked at (the scan), set once both exist. */
  set subtreeScanner(scan: (apiPath: string, source: ChangeSource) => Promise<void>) {
    this._scanSubtree = (apiPath, source) => this._track(scan(apiPath, source));
  }

  /** Where a rescan is asked for. */
  set rescanner(rescan: (reason: string, source: ChangeSource) => void) {
    this._rescan = rescan;
  }

  /**
   * The gateway's own save: bytes in hand, already written. Resolves once they are journalled
   * durably (or found equal to what is already journalled durably or archived).
   *
   * @param save - what the record must also hold when the file was written without fsyncs
   *   (`written`) or the signature not committed yet (`signature`).
   * @returns true when this save was journalled durably with `save`, so that the journal stands
   *   in for the file's fsyncs; false when nothing was journalled (the caller syncs).
   */
  async saved(
    apiPath: string,
    bytes: Buffer,
    source: ChangeSource = 'gateway',
    save: Pick<IAppendOptions, 'written' | 'signature'> = {}
  ): Promise<boolean> {
    this._counts[source].seen++;
    this._savesReported.set(apiPath, (this._savesReported.get(apiPath) ?? 0) + 1);
    if (!this._filter.covers(apiPath)) return false;
    const sha256 = hash(bytes);
    this._bumpGeneration(apiPath);
    this._cancelPendingDelete(apiPath);
    const known = this._known.get(apiPath);
    const holder: Private.IStatHolder = { stat: undefined, racy: true };
    const written = writtenStat(save.written?.after, known?.stat);
    // The stat for the index: what the save saw of its file, or read without delaying the journal.
    const statRead =
      written === undefined
        ? fs.lstat(this._osPath(apiPath)).then(
            stats => this._fillStat(apiPath, sha256, holder, fileStat(stats)),
            () => undefined
          )
        : undefined;
    if (known?.sha256 === sha256 && (known.archived || known.durable)) {
      if (written) this._fillStat(apiPath, sha256, holder, written);
      await statRead;
      return false;
    }
    // Same bytes queued by a look, but not durably: journal them durably, compared with the
    // latest object before upload so that the bucket gets them once.
    const checkLatest = known?.sha256 === sha256 || this._index.isUnconfirmed(apiPath);
    this._known.set(apiPath, {
      sha256,
      stat: undefined,
      racy: true,
      archived: false,
      durable: true
    });
    if (written) this._fillStat(apiPath, sha256, holder, written);
    await Promise.all([
      this._enqueue(
        apiPath,
        bytes,
        { source, durable: true, checkLatest, sha256, ...save },
        holder
      ),
      statRead
    ]);
    return true;
  }

  /**
   * The gateway is about to write `apiPath`: until the returned function is called, what a look
   * reads there is not queued (it may be an empty reservation or a write half done, and the
   * gateway reports its save itself). If no save was reported meanwhile, the path is looked at
   * again when the hold ends.
   *
   * #### Notes
   * A look asked for while the path is held (the watcher reporting the gateway's own write
   * before the save reached the intake: under load the event loop may run the watcher's
   * callback first) waits for the end of the hold instead of settling and reading a file that
   * the save is about to report: it then finds the saved state, for one `lstat`.
   */
  holdObservation(apiPath: string): () => void {
    this._holds.set(apiPath, (this._holds.get(apiPath) ?? 0) + 1);
    const savesBefore = this._savesReported.get(apiPath) ?? 0;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this._holds.get(apiPath) ?? 1) - 1;
      if (left > 0) this._holds.set(apiPath, left);
      else this._holds.delete(apiPath);
      const putOff = left > 0 ? undefined : this._looksAfterHold.get(apiPath);
      if (putOff !== undefined) this._looksAfterHold.delete(apiPath);
      if (this._closed) return;
      if ((this._savesReported.get(apiPath) ?? 0) === savesBefore) {
        void this.look(apiPath, 'gateway');
      } else if (putOff !== undefined) {
        void this.look(apiPath, putOff);
      }
    };
  }

  /**
   * A save the gateway relayed to Jupyter (the `jupyter` contents backend) was answered with
   * success: read the file now and journal it durably, before the answer goes back.
   *
   * @throws when the file was written but cannot be journalled (the caller answers 503).
   */
  async relayedSave(apiPath: string): Promise<void> {
    if (!this._isInRoot(apiPath) || !this._filter.covers(apiPath)) {
      this._counts.gateway.seen++;
      return;
    }
    let bytes: Buffer;
    try {
      const stats = await fs.lstat(this._osPath(apiPath));
      if (!stats.isFile()) {
        this._counts.gateway.seen++;
        return;
      }
      bytes = await this._readInsideRoot(this._osPath(apiPath));
    } catch {
      // Gone already, or not readable by us: the watcher and the scan have it.
      this._counts.gateway.seen++;
      return;
    }
    try {
      await this.saved(apiPath, bytes, 'gateway');
    } catch (error) {
      throw httpErrors.archiveUnavailable(
        `${apiPath} was saved, but could not be queued for archiving ` +
          `(${(error as Error).message}); save again to retry`
      );
    }
  }

  changed(apiPath: string, source: ChangeSource): void {
    this._counts[source].seen++;
    if (!this._isInRoot(apiPath)) return;
    if (source === 'events' && this._takeEcho(apiPath)) return;
    void this.look(apiPath, source);
  }

  /**
   * The gateway told Jupyter's event bus of its own save of `apiPath`: the event the bus sends
   * back for it is this save's echo, and is dropped before any work (see {@link _takeEcho}).
   *
   * #### Notes
   * Every save the gateway answers is reported twice after its own report: by the file watcher
   * (the rename of its temporary file) and by the bus. Looking at the path for the bus's echo
   * finds the state the save has just journalled, for an `lstat` on the thread pool and the
   * look's bookkeeping on the event loop. Dropping it loses nothing:
   * - events are counted, not matched: with n echoes expected for a path, its first n events
   *   are dropped, whichever they are. A look reads the path's state on disk, not the event, so
   *   when another writer's event comes too, the last event of the path is looked at, after
   *   every change the events stand for, even if an echo came after it;
   * - what anyone else writes reaches the disk, where the watcher reports it and the scan finds
   *   it, whatever the bus says;
   * - echoes are expected for {@link ECHO_WINDOW_MS} only: an event the gateway failed to post
   *   never comes, and hides at most one other event of that path within that time (which the
   *   watcher and the scan still cover).
   */
  expectEcho(apiPath: string): void {
    const now = Date.now();
    const expected = this._echoes.get(apiPath);
    if (expected !== undefined && now <= expected.until) {
      expected.count++;
      expected.until = now + ECHO_WINDOW_MS;
      return;
    }
    if (this._echoes.size >= MAX_EXPECTED_ECHOES) {
      for (const [path, { until }] of this._echoes) if (now > until) this._echoes.delete(path);
    }
    this._echoes.set(apiPath, { count: 1, until: now + ECHO_WINDOW_MS });
  }

  /** Is this bus report of `apiPath` the echo of a save of the gateway's own? Counts it off. */
  private _takeEcho(apiPath: string): boolean {
    const expected = this._echoes.get(apiPath);
    if (expected === undefined) return false;
    if (Date.now() > expected.until) {
      this._echoes.delete(apiPath);
      return false;
    }
    if (--expected.count === 0) this._echoes.delete(apiPath);
    return true;
  }

  removed(apiPath: string, source: ChangeSource): void {
    this._counts[source].seen++;
    for (const gone of this._knownAt(apiPath)) this._holdDelete(gone, source, false);
  }

  renamed(from: string, to: string, source: ChangeSource): void {
    this._counts[source].seen++;
    if (!this._isInRoot(from) || !this._isInRoot(to) || from === to) return;
    const moves = this._knownAt(from).map(old => ({ old, now: to + old.slice(from.length) }));
    for (const { old, now } of moves) {
      this._cancelPendingDelete(old);
      const known = this._known.get(old);
      this._known.delete(old);
      this._bumpGeneration(old);
      if (known) this._renamedInto.set(now, old);
      void this._chainLook(now, async () => {
        const read = await this._settleAndRead(now);
        if (read.kind === 'file' && this._filter.covers(now)) {
          const current = this._known.get(now);
          if (current?.sha256 !== read.sha256) {
            this._known.set(now, { ...read.state, archived: false, durable: false });
            this._enqueueQuietly(
              now,
              read.bytes,
              {
                source,
                durable: false,
                checkLatest: this._index.isUnconfirmed(now),
                sha256: read.sha256
              },
              read.holder
            );
          }
        }
        // Nothing queued at the new path (same content as known there): no record to mark.
        if (this._renamedInto.get(now) === old) this._renamedInto.delete(now);
        this._enqueueDelete(old, source, now);
      });
    }
    // Whatever was not known under the new name (new files moved in) is looked at there.
    this._scanSubtree?.(to, source);
  }

  isKnownFile(apiPath: string): boolean {
    return this._known.get(apiPath)?.stat !== undefined && !this._pendingDeletes.has(apiPath);
  }

  rescan(reason: string, source: ChangeSource): void {
    this._counts[source].seen++;
    this._log.info({ source, reason }, 'rescanning the root');
    this._rescan?.(reason, source);
  }

  /**
   * Look at one path now (queued behind the path's earlier looks): a file is settled, read and
   * queued if it changed; a directory is scanned; a missing file counts as removed.
   */
  look(apiPath: string, source: ChangeSource): Promise<void> {
    const waiting = this._waitingLooks.get(apiPath);
    if (waiting) return waiting;
    const run = this._chainLook(apiPath, async () => {
      this._waitingLooks.delete(apiPath);
      await this._lookNow(apiPath, source);
    });
    this._waitingLooks.set(apiPath, run);
    return run;
  }

  /**
   * Does the file's stat differ from what is known of it (or is the known stat ambiguous)? A
   * scan reads only the files for which this is true.
   */
  needsLook(apiPath: string, stats: IFileStat): boolean {
    const known = this._known.get(apiPath);
    return !known || known.racy || !sameStat(known.stat, stats);
  }

  /** The known (queued or archived) paths at or below an API path. */
  knownUnder(apiPath: string): string[] {
    return this._knownAt(apiPath);
  }

  /**
   * Hold a delete found by a scan until {@link releaseHeldDeletes}: a new file with its content
   * found by the same scan turns it into a rename.
   */
  holdDeleteUntilReleased(apiPath: string, source: ChangeSource): void {
    this._counts[source].seen++;
    this._holdDelete(apiPath, source, true);
  }

  /** Process the deletes held by a scan. */
  releaseHeldDeletes(): void {
    for (const [apiPath, pending] of this._pendingDeletes) {
      if (pending.timer === undefined) this._startDelete(apiPath, pending.source);
    }
  }

  /** Per source, changes seen and archived. */
  counts(): SourceCounts {
    return Object.fromEntries(
      CHANGE_SOURCES.map(source => [source, { ...this._counts[source] }])
    ) as SourceCounts;
  }

  /** Called by the queue for every record the object store confirmed. */
  archived(entry: IJournalEntry, versionId: string | null, attachment: unknown): void {
    if (entry.source) this._counts[entry.source].archived++;
    if (entry.action === 'delete') {
      this._index.delete(entry.path);
      return;
    }
    const holder = attachment as Private.IStatHolder | undefined;
    const known = this._known.get(entry.path);
    if (known?.sha256 === entry.sha256) known.archived = true;
    this._index.set(entry.path, {
      // An unknown stat never matches, so the next scan reads the file once more.
      stat: holder?.stat ?? { dev: -1, ino: -1, size: -1, mtimeMs: -1 },
      sha256: entry.sha256,
      versionId,
      racy: holder?.racy ?? true
    });
  }

  /**
   * Wait for every look and delete under way (and those they start) to be queued; with
   * `apiPath`, only for those of that path. Rechecks of racy stats waiting for their time run
   * at once (see {@link _recheckLater}), so that their outcome is queued too.
   */
  async idle(timeoutMs = 30_000, apiPath?: string): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    const ofPath = (chains: Map<string, Promise<void>>) => {
      const chain = chains.get(apiPath!);
      return chain === undefined ? [] : [chain];
    };
    while (Date.now() < deadline) {
      const rechecks = apiPath === undefined ? [...this._rechecks.keys()] : [apiPath];
      for (const path of rechecks) this._recheckNow(path);
      const busy =
        apiPath === undefined
          ? [...this._lookChains.values(), ...this._enqueueChains.values(), ...this._background]
          : [...ofPath(this._lookChains), ...ofPath(this._enqueueChains)];
      const waiting =
        apiPath === undefined
          ? this._pendingDeletes.size > 0 || this._looksAfterHold.size > 0
          : this._pendingDeletes.has(apiPath) || this._looksAfterHold.has(apiPath);
      if (busy.length === 0 && !waiting) return true;
      // Held deletes wait for timers, put-off looks for the end of a save: give them turns of
      // the event loop.
      if (busy.length === 0) await sleep(20);
      else await Promise.race([Promise.allSettled(busy), sleep(50)]);
    }
    return false;
  }

  /**
   * Stop: no new work is started; timers of held deletes and of rechecks are cancelled (the next
   * scan redoes them).
   */
  close(): void {
    this._closed = true;
    for (const pending of this._pendingDeletes.values()) clearTimeout(pending.timer);
    this._pendingDeletes.clear();
    for (const pending of this._rechecks.values()) clearTimeout(pending.timer);
    this._rechecks.clear();
    this._echoes.clear();
  }

  private async _lookNow(apiPath: string, source: ChangeSource): Promise<void> {
    if (this._holds.has(apiPath)) {
      // The gateway is writing it: look once the write is over (see holdObservation).
      if (!this._looksAfterHold.has(apiPath)) this._looksAfterHold.set(apiPath, source);
      return;
    }
    const generation = this._generation(apiPath);
    if (source === 'scan') await this._queue.waitForRoom(this._maxPendingForBulk);
    if (await this._stillAsKnown(apiPath, source)) return;
    const read = await this._settleAndRead(apiPath);
    if (this._closed) return;
    if (read.kind === 'directory') {
      this._scanSubtree?.(apiPath, source);
      return;
    }
    if (read.kind === 'missing') {
      for (const gone of this._knownAt(apiPath)) this._holdDelete(gone, source, false);
      return;
    }
    if (read.kind !== 'file' || !this._filter.covers(apiPath)) return;
    // The gateway is writing it and will report the result itself (see holdObservation).
    if (this._holds.has(apiPath)) return;
    if (this._generation(apiPath) !== generation) {
      // The gateway saved or renamed this path while we read it: look again, after its record.
      void this.look(apiPath, source);
      return;
    }
    this._cancelPendingDelete(apiPath);
    const known = this._known.get(apiPath);
    if (known?.sha256 === read.sha256) {
      known.stat = read.state.stat;
      known.racy = read.state.racy;
      const entry = this._index.get(apiPath);
      if (entry?.sha256 === read.sha256) {
        this._index.set(apiPath, { ...entry, stat: read.state.stat!, racy: read.state.racy });
      }
      return;
    }
    if (!known && this._remote) {
      const remote = this._remote.get(apiPath);
      if (
        remote?.size === read.bytes.length &&
        remote.etag?.replace(/"/g, '') === createHash('md5').update(read.bytes).digest('hex')
      ) {
        this._known.set(apiPath, { ...read.state, archived: true, durable: true });
        this._index.set(apiPath, {
          stat: read.state.stat!,
          sha256: read.sha256,
          versionId: null,
          racy: read.state.racy
        });
        return;
      }
    }
    const renamedFrom = known
      ? undefined
      : (this._takePendingDeleteWithContent(read.sha256) ??
        (await this._takeVanishedWithContent(read.sha256, apiPath)));
    if (this._holds.has(apiPath) || this._generation(apiPath) !== generation) {
      // The gateway took over this path meanwhile: the old path is still gone, the new one is
      // looked at again after the gateway's record.
      if (renamedFrom !== undefined) this._enqueueDelete(renamedFrom, source);
      void this.look(apiPath, source);
      return;
    }
    this._known.set(apiPath, { ...read.state, archived: false, durable: false });
    // Without an index nor a listing, the bucket may hold this content already.
    const checkLatest =
      this._index.isUnconfirmed(apiPath) || (!known && !this._index.found && !this._remote);
    this._enqueueQuietly(
      apiPath,
      read.bytes,
      { source, durable: false, renamedFrom, checkLatest, sha256: read.sha256 },
      read.holder
    );
    if (renamedFrom !== undefined) this._enqueueDelete(renamedFrom, source, apiPath);
  }

  /**
   * Is the file still exactly the state known for its path, so that settling and reading it
   * would find nothing to queue? This is what the watcher's and Jupyter's reports of the
   * gateway's own saves find, and it costs one `lstat`.
   *
   * #### Notes
   * A stat that differs from the known one, or no known stat yet, leaves the path to the full
   * look. An equal stat is trusted as the scan trusts it, unless it is racy: a write by someone
   * else within the same timestamp tick as the known write, the same size, in the same inode,
   * leaves the same stat, so the bytes must be read (without settling: equal bytes need none)
   * and compared with the known content. That read is put off until the stat is no longer racy
   * (see {@link _recheckLater}), when one read settles the question for good, because every save
   * the gateway answers is racy when its own watcher report comes, tens of milliseconds later:
   * reading it then would read back every save (an open, a stat, a read, a close and a hash) to
   * rule out a write that almost never happens. A write that lands after this check is
   * reported again.
   */
  private async _stillAsKnown(apiPath: string, source: ChangeSource): Promise<boolean> {
    const known = this._known.get(apiPath);
    if (known?.stat === undefined || this._pendingDeletes.has(apiPath)) return false;
    const osPath = this._osPath(apiPath);
    const readNow = !known.racy || this._readNow.delete(known) || this._closed;
    const clearAt = known.stat.mtimeMs + RACY_WINDOW_MS;
    let stats: Stats;
    try {
      if (known.racy && (readNow || Date.now() >= clearAt)) {
        const readAt = Date.now();
        const read = await this._files.readFile(osPath, { followSymlinks: false });
        if (hash(read.bytes) !== known.sha256) return false;
        stats = read.stats;
        if (!sameStat(known.stat, fileStat(stats)) || this._known.get(apiPath) !== known) {
          return false;
        }
        if (readAt - stats.mtimeMs >= RACY_WINDOW_MS) this._settleRacy(apiPath, known);
        return true;
      }
      stats = await fs.lstat(osPath);
    } catch {
      return false;
    }
    if (
      !stats.isFile() ||
      !sameStat(known.stat, fileStat(stats)) ||
      this._known.get(apiPath) !== known
    ) {
      return false;
    }
    if (known.racy) this._recheckLater(apiPath, known, clearAt, source);
    return true;
  }

  /**
   * Read a path whose known state has a racy stat once that state is no longer racy, unless the
   * state was replaced meanwhile (see {@link _stillAsKnown}).
   *
   * #### Notes
   * - One recheck per path: a newer state of the path replaces the older one's. When a newer
   *   state replaced it (almost always a newer gateway save, which renamed a new file over the
   *   old one), the check is dropped: whatever else was written into the old file is gone from
   *   the disk, as it would be if the gateway's save had come a moment later.
   * - {@link idle} runs the pending rechecks at once, so that its caller sees their outcome (a
   *   stop waits for it before {@link close}, which drops what is left). The index keeps an
   *   entry racy until a read confirms it, so the next start's scan reads a file whose recheck
   *   never ran.
   * - A stat from the future (clock skew) is read after the racy window all the same, and stays
   *   racy: it is rechecked again after its next report.
   */
  private _recheckLater(
    apiPath: string,
    known: Private.IKnown,
    clearAt: number,
    source: ChangeSource
  ): void {
    const pending = this._rechecks.get(apiPath);
    if (pending?.known === known) return;
    if (pending) clearTimeout(pending.timer);
    // Past the window by a tick, so that the read settles the state (see _settleRacy).
    const delay = Math.min(Math.max(0, clearAt - Date.now()), RACY_WINDOW_MS) + 10;
    const timer = setTimeout(() => this._recheckNow(apiPath), delay);
    timer.unref();
    this._rechecks.set(apiPath, { known, source, timer });
  }

  /** Run the path's pending recheck now (a look that reads the file), if it still applies. */
  private _recheckNow(apiPath: string): void {
    const pending = this._rechecks.get(apiPath);
    if (!pending) return;
    clearTimeout(pending.timer);
    this._rechecks.delete(apiPath);
    if (this._closed || this._known.get(apiPath) !== pending.known) return;
    this._readNow.add(pending.known);
    void this.look(apiPath, pending.source);
  }

  /** The known state's stat was confirmed by a read long enough after its write: not racy. */
  private _settleRacy(apiPath: string, known: Private.IKnown): void {
    known.racy = false;
    const entry = this._index.get(apiPath);
    if (known.archived && entry?.sha256 === known.sha256) {
      this._index.set(apiPath, { ...entry, racy: false });
    }
  }

  /** Settle, then read: see the class notes. */
  private async _settleAndRead(apiPath: string): Promise<Private.ReadResult> {
    const osPath = this._osPath(apiPath);
    const deadline = Date.now() + this._maxSettleMs;
    let previous: Stats | undefined;
    for (;;) {
      let stats: Stats;
      try {
        stats = await fs.lstat(osPath);
      } catch {
        return { kind: 'missing' };
      }
      if (stats.isDirectory()) return { kind: 'directory' };
      // Symlinks are not followed: their target is archived under its own path, if covered.
      if (!stats.isFile()) return { kind: 'other' };
      const now = Date.now();
      const quietFor = now - stats.mtimeMs;
      // A future mtime (clock skew, extracted archives) cannot age: two equal stats settle it.
      const quiet =
        quietFor >= this._settleMs ||
        (quietFor < 0 && previous !== undefined && sameStat(fileStat(previous), fileStat(stats)));
      if (now < deadline && (!quiet || (await this._atomicCopyExists(osPath)))) {
        previous = stats;
        await sleep(quietFor >= 0 ? Math.max(20, this._settleMs - quietFor) : this._settleMs);
        continue;
      }
      const readAt = Date.now();
      let bytes: Buffer;
      try {
        bytes = await this._readInsideRoot(osPath);
      } catch (error) {
        // Outside the root (a directory on the way swapped for a symlink) or a symlink now:
        // not archived, and not taken for a delete either.
        if (hasErrorCode(error, 'EOUTSIDEROOT', 'ELOOP', 'ENOTREGULAR', 'EISDIR')) {
          return { kind: 'other' };
        }
        return { kind: 'missing' };
      }
      let after: Stats;
      try {
        after = await fs.lstat(osPath);
      } catch {
        return { kind: 'missing' };
      }
      if (!sameStat(fileStat(stats), fileStat(after)) && Date.now() < deadline) {
        previous = after;
        continue;
      }
      const stat = fileStat(after);
      const racy = readAt - after.mtimeMs < RACY_WINDOW_MS;
      const sha256 = hash(bytes);
      return {
        kind: 'file',
        bytes,
        sha256,
        state: { sha256, stat, racy },
        holder: { stat, racy }
      };
    }
  }

  /**
   * The bytes of a regular file, read from a descriptor checked to be inside the root, the last
   * component not followed (see {@link RootFs.openFile}): whatever is swapped meanwhile, what is
   * archived under a path of the root is never a file from outside it.
   */
  private async _readInsideRoot(osPath: string): Promise<Buffer> {
    return (await this._files.readFile(osPath, { followSymlinks: false })).bytes;
  }

  /** Jupyter's `atomic_writing` keeps a `.~<name>` copy while it rewrites the file in place. */
  private async _atomicCopyExists(osPath: string): Promise<boolean> {
    try {
      await fs.lstat(path.join(path.dirname(osPath), `.~${path.basename(osPath)}`));
      return true;
    } catch {
      return false;
    }
  }

  private _track(work: Promise<void>): void {
    const tracked = work.catch(() => undefined);
    this._background.add(tracked);
    void tracked.then(() => this._background.delete(tracked));
  }

  private _holdDelete(apiPath: string, source: ChangeSource, untilReleased: boolean): void {
    if (this._closed || this._pendingDeletes.has(apiPath)) return;
    const known = this._known.get(apiPath);
    if (!known) return;
    const pending: Private.IPendingDelete = { source, sha256: known.sha256, timer: undefined };
    if (!untilReleased) {
      pending.timer = setTimeout(() => this._startDelete(apiPath, source), this._renameWindowMs);
      pending.timer.unref();
    }
    this._pendingDeletes.set(apiPath, pending);
  }

  private _startDelete(apiPath: string, source: ChangeSource): void {
    const pending = this._pendingDeletes.get(apiPath);
    if (!pending) return;
    clearTimeout(pending.timer);
    this._pendingDeletes.delete(apiPath);
    void this._chainLook(apiPath, async () => {
      const read = await this._settleAndRead(apiPath);
      if (read.kind === 'file') {
        // It came back (a rewrite by delete and create): an ordinary change.
        await this._lookNow(apiPath, source);
        return;
      }
      if (!this._known.has(apiPath)) return;
      this._known.delete(apiPath);
      this._bumpGeneration(apiPath);
      this._enqueueQuietly(
        apiPath,
        Buffer.alloc(0),
        { source, action: 'delete', durable: false },
        undefined
      );
    });
  }

  private _cancelPendingDelete(apiPath: string): void {
    const pending = this._pendingDeletes.get(apiPath);
    if (!pending) return;
    clearTimeout(pending.timer);
    this._pendingDeletes.delete(apiPath);
  }

  /** A held delete whose content is `sha256`: the other half of a rename. */
  private _takePendingDeleteWithContent(sha256: string): string | undefined {
    for (const [apiPath, pending] of this._pendingDeletes) {
      if (pending.sha256 !== sha256) continue;
      clearTimeout(pending.timer);
      this._pendingDeletes.delete(apiPath);
      this._known.delete(apiPath);
      this._bumpGeneration(apiPath);
      return apiPath;
    }
    return undefined;
  }

  /**
   * A known path with this content whose file is gone, though its delete was not reported yet:
   * the other half of a rename whose new name was seen first (the watcher often reports the
   * new name before the old one's removal, and Jupyter's rename event comes later still).
   */
  private async _takeVanishedWithContent(
    sha256: string,
    newPath: string
  ): Promise<string | undefined> {
    for (const candidate of this._known.withContent(sha256)) {
      if (candidate === newPath) continue;
      try {
        await fs.lstat(this._osPath(candidate));
        continue;
      } catch {
        // Gone: a rename, unless someone else claimed it meanwhile.
      }
      if (this._known.get(candidate)?.sha256 !== sha256) continue;
      this._cancelPendingDelete(candidate);
      this._known.delete(candidate);
      this._bumpGeneration(candidate);
      return candidate;
    }
    return undefined;
  }

  /**
   * Journal and queue a record behind the path's earlier records. Failures are logged, never
   * thrown at a source; the gateway's saves await the promise and see them.
   */
  private _enqueue(
    apiPath: string,
    bytes: Buffer,
    options: Parameters<ArchiveQueue['enqueue']>[2],
    holder: Private.IStatHolder | undefined,
    behind?: string
  ): Promise<void> {
    const renamedFrom = this._renamedInto.get(apiPath);
    if (renamedFrom !== undefined && options?.action !== 'delete') {
      // The first record at a rename's new path carries the rename (see the class notes).
      this._renamedInto.delete(apiPath);
      options = { ...options, renamedFrom: options?.renamedFrom ?? renamedFrom };
    }
    // Behind another path: after its records were handed to the queue, so that the queue can
    // put this one behind them (see ArchiveQueue.enqueue). The chains never reject.
    const own = this._enqueueChains.get(apiPath) ?? Promise.resolve();
    const other = behind === undefined ? undefined : this._enqueueChains.get(behind);
    const previous = other === undefined ? own : Promise.all([own, other]);
    const current = previous.then(async () => {
      await this._queue.enqueue(apiPath, bytes, options, holder, behind);
    });
    const settled = current.catch((error: unknown) => {
      this._log.error(
        { path: apiPath, err: (error as Error).message },
        'a change could not be journalled; the next scan retries it'
      );
      // Forget what was not queued, so that the next look queues it again.
      const known = this._known.get(apiPath);
      if (known && !known.archived) this._known.delete(apiPath);
    });
    this._enqueueChains.set(apiPath, settled);
    void settled.then(() => {
      if (this._enqueueChains.get(apiPath) === settled) this._enqueueChains.delete(apiPath);
    });
    return current;
  }

  /**
   * Queue the delete of `apiPath`; for a rename, `renamedTo` is the new path, whose version the
   * queue archives first (see ArchiveQueue.enqueue).
   */
  private _enqueueDelete(apiPath: string, source: ChangeSource, renamedTo?: string): void {
    this._enqueueQuietly(
      apiPath,
      Buffer.alloc(0),
      { source, action: 'delete', durable: false },
      undefined,
      renamedTo
    );
  }

  /** {@link _enqueue} for observed changes: a failure is logged there, and nobody waits. */
  private _enqueueQuietly(...args: Parameters<ArchiveIntake['_enqueue']>): void {
    this._enqueue(...args).catch(() => undefined);
  }

  private _chainLook(apiPath: string, work: () => Promise<void>): Promise<void> {
    const previous = this._lookChains.get(apiPath) ?? Promise.resolve();
    const current = previous.then(work).catch((error: unknown) => {
      this._log.warn(
        { path: apiPath, err: (error as Error).message },
        'looking at a change failed'
      );
    });
    this._lookChains.set(apiPath, current);
    void current.then(() => {
      if (this._lookChains.get(apiPath) === current) this._lookChains.delete(apiPath);
    });
    return current;
  }

  private _fillStat(
    apiPath: string,
    sha256: string,
    holder: Private.IStatHolder,
    stat: IFileStat
  ): void {
    holder.stat = stat;
    holder.racy = Date.now() - stat.mtimeMs < RACY_WINDOW_MS;
    const known = this._known.get(apiPath);
    if (known?.sha256 === sha256) {
      known.stat = holder.stat;
      known.racy = holder.racy;
      const entry = this._index.get(apiPath);
      if (known.archived && entry?.sha256 === sha256) {
        this._index.set(apiPath, { ...entry, stat: holder.stat, racy: holder.racy });
      }
    }
  }

  /** The known paths that are `apiPath` or below it. */
  private _knownAt(apiPath: string): string[] {
    if (!this._isInRoot(apiPath)) return [];
    const found: string[] = [];
    if (this._known.has(apiPath)) found.push(apiPath);
    const prefix = apiPath === '' ? '' : `${apiPath}/`;
    for (const known of this._known.keys()) {
      if (known.startsWith(prefix) && known !== apiPath) found.push(known);
    }
    return found;
  }

  private _isInRoot(apiPath: string): boolean {
    return !apiPath.split('/').some(part => part === '..' || part === '.');
  }

  private _osPath(apiPath: string): string {
    return path.join(this._rootDir, ...apiPath.split('/'));
  }

  private _generation(apiPath: string): number {
    return this._generations.get(apiPath) ?? 0;
  }

  private _bumpGeneration(apiPath: string): void {
    this._generations.set(apiPath, this._generation(apiPath) + 1);
  }

  private readonly _rootDir: string;
  private readonly _files: RootFs;
  private readonly _filter: ArchiveFilter;
  private readonly _queue: ArchiveQueue;
  private readonly _index: ArchiveIndex;
  private readonly _log: Logger;
  private readonly _settleMs: number;
  private readonly _maxSettleMs: number;
  private readonly _renameWindowMs: number;
  private readonly _maxPendingForBulk: number;
  /** The newest content queued or archived per path. */
  private readonly _known = new Private.KnownContents();
  private readonly _lookChains = new Map<string, Promise<void>>();
  private readonly _waitingLooks = new Map<string, Promise<void>>();
  private readonly _enqueueChains = new Map<string, Promise<void>>();
  private readonly _pendingDeletes = new Map<string, Private.IPendingDelete>();
  /** New paths of renames whose first record is not queued yet, with their old paths. */
  private readonly _renamedInto = new Map<string, string>();
  /** Paths the gateway is writing, with how many writes (see holdObservation). */
  private readonly _holds = new Map<string, number>();
  /** Held paths a look was asked for meanwhile, with the source that asked first. */
  private readonly _looksAfterHold = new Map<string, ChangeSource>();
  /** How many saves the gateway reported per path (holds compare it at their end). */
  private readonly _savesReported = new Map<string, number>();
  /** Per path, echoes of the gateway's own saves still to come from the bus (see expectEcho). */
  private readonly _echoes = new Map<string, { count: number; until: number }>();
  /** Bumped by the gateway's saves, renames and deletes, so that a stale look is redone. */
  private readonly _generations = new Map<string, number>();
  /** Per path, the known state whose racy stat is to be confirmed by a read later. */
  private readonly _rechecks = new Map<string, Private.IRecheck>();
  /** Known states that the next look reads at once (a recheck is due or was hurried). */
  private readonly _readNow = new WeakSet<Private.IKnown>();
  private readonly _counts: SourceCounts = {
    gateway: { seen: 0, archived: 0 },
    events: { seen: 0, archived: 0 },
    watcher: { seen: 0, archived: 0 },
    scan: { seen: 0, archived: 0 }
  };
  private _remote: ReadonlyMap<string, { etag?: string; size: number }> | undefined;
  private _scanSubtree: ((apiPath: string, source: ChangeSource) => void) | undefined;
  /** Subtree scans under way, which {@link idle} waits for too. */
  private readonly _background = new Set<Promise<void>>();
  private _rescan: ((reason: string, source: ChangeSource) => void) | undefined;
  private _closed = false;
}

export namespace ArchiveIntake {
  export interface IOptions {
    rootDir: string;
    filter: ArchiveFilter;
    queue: ArchiveQueue;
    index: ArchiveIndex;
    log: Logger;
    /** How long a file's mtime must be still before it is read; default 200 ms. */
    settleMs?: number;
    /** The longest a constantly changing file waits before it is read anyway; default 10 s. */
    maxSettleMs?: number;
    /** How long a delete waits for the create that would make it a rename; default 1.5 s. */
    renameWindowMs?: number;
    /** Records pending in the queue above which a scan waits before reading more; default 64. */
    maxPendingForBulk?: number;
  }
}

namespace Private {
  /** The known content per path, with the paths of each content, for pairing renames. */
  export class KnownContents {
    get(apiPath: string): IKnown | undefined {
      return this._byPath.get(apiPath);
    }

    has(apiPath: string): boolean {
      return this._byPath.has(apiPath);
    }

    keys(): IterableIterator<string> {
      return this._byPath.keys();
    }

    set(apiPath: string, known: IKnown): void {
      this.delete(apiPath);
      this._byPath.set(apiPath, known);
      let paths = this._bySha.get(known.sha256);
      if (!paths) this._bySha.set(known.sha256, (paths = new Set()));
      paths.add(apiPath);
    }

    delete(apiPath: string): void {
      const known = this._byPath.get(apiPath);
      if (!known) return;
      this._byPath.delete(apiPath);
      const paths = this._bySha.get(known.sha256);
      paths?.delete(apiPath);
      if (paths?.size === 0) this._bySha.delete(known.sha256);
    }

    /** The paths whose known content is `sha256`. */
    withContent(sha256: string): string[] {
      return [...(this._bySha.get(sha256) ?? [])];
    }

    private readonly _byPath = new Map<string, IKnown>();
    private readonly _bySha = new Map<string, Set<string>>();
  }

  export interface IKnown {
    sha256: string;
    /** Undefined until known (a replayed record, a save whose stat is being read). */
    stat: IFileStat | undefined;
    racy: boolean;
    /** The object store confirmed this content. */
    archived: boolean;
    /** It is journalled durably (fsynced), as the gateway's saves are. */
    durable: boolean;
  }

  /** The file's stat for the index, filled in when known, handed back by the queue. */
  export interface IStatHolder {
    stat: IFileStat | undefined;
    racy: boolean;
  }

  export interface IRecheck {
    /** The state to confirm: the recheck is dropped once another replaced it. */
    known: IKnown;
    source: ChangeSource;
    timer: NodeJS.Timeout;
  }

  export interface IPendingDelete {
    source: ChangeSource;
    sha256: string;
    timer: NodeJS.Timeout | undefined;
  }

  export type ReadResult =
    | { kind: 'missing' | 'directory' | 'other' }
    | {
        kind: 'file';
        bytes: Buffer;
        sha256: string;
        state: { sha256: string; stat: IFileStat; racy: boolean };
        holder: IStatHolder;
      };
}

/**
 * The stat of the file a gateway save wrote, from what the save itself saw of it (`written.after`,
 * taken before the rename that put it in place), without asking the file system again.
 *
 * #### Notes
 * That lacks the device, which is taken from the path's known stat: the file before it, in the
 * same folder. Without one (the path's first save since start-up, or an unknown stat) the
 * caller reads the stat instead. A device that is not the file's (a file system mounted on the
 * folder meanwhile) only makes the next scan read the file once more.
 */
function writtenStat(
  after: IFileIdentity | undefined,
  previous: IFileStat | undefined
): IFileStat | undefined {
  if (after === undefined || previous === undefined || previous.dev < 0) return undefined;
  return { dev: previous.dev, ino: after.ino, size: after.size, mtimeMs: after.mtimeMs };
}

function hash(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function sleep(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms).unref());
}

/**
 * How long the echo of a save of the gateway's own is expected from Jupyter's event bus (see
 * `ArchiveIntake.expectEcho`): the events are posted one at a time after each save, and come
 * back within milliseconds, or a second or two behind a burst.
 */
const ECHO_WINDOW_MS = 5000;
/** Beyond this many paths with echoes expected, the expired ones are dropped. */
const MAX_EXPECTED_ECHOES = 4096;
