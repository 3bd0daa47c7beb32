import { createHash, randomBytes } from 'node:crypto';
import * as fsSync from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { syncDirectory } from '../contents/fileio';
import type { IWrittenSave } from '../contents/manager';
import type { ISignature } from '../contents/trust';
import type { ChangeSource } from './sources/changes';

/** What the journal keeps about one save waiting to be archived. */
export interface IJournalEntry {
  /** Position in save order, increasing across restarts. */
  readonly seq: number;
  /** API path of the saved notebook. */
  readonly path: string;
  /** When the save was queued (ms since the epoch). */
  readonly queuedAt: number;
  /** SHA-256 of the content, hex: checked at replay, and stored with the object. */
  readonly sha256: string;
  /** Unique id of this save, stored with the object so that a replay can tell it already arrived. */
  readonly saveId: string;
  /**
   * `put` archives the content as a new version (the default, and all that journals written
   * before deletes were archived hold); `delete` puts a delete marker on the path's key.
   */
  readonly action?: JournalAction;
  /** For a put that follows a rename: the path the content was archived under before. */
  readonly renamedFrom?: string;
  /** Who wrote the change, for the object's metadata and the status counts. */
  readonly source?: ChangeSource;
  /**
   * The archive may already hold exactly this content as the key's latest version (the index
   * was not saved at a clean stop): compare before uploading, so nothing is archived twice.
   */
  readonly checkLatest?: boolean;
  /**
   * The gateway wrote the file without fsyncs and this record is what makes the save durable:
   * what a repair after a power cut needs (see `ContentsManager.recoverJournalled`).
   */
  readonly written?: IWrittenSave;
  /** The notebook's signature, whose database commit may not have happened yet. */
  readonly signature?: ISignature;
}

/** The entry of a record, without its bytes (what callers keep after the queue took it). */
export function entryOf(record: IJournalEntry & { readonly content?: Buffer }): IJournalEntry {
  const entry: { -readonly [K in keyof IJournalRecord]?: IJournalRecord[K] } = { ...record };
  delete entry.content;
  return entry as IJournalEntry;
}

/** What a journal record asks of the object store. */
export type JournalAction = 'put' | 'delete';

/** What a record says besides its path and bytes. */
export interface IAppendOptions {
  readonly action?: JournalAction;
  readonly renamedFrom?: string;
  readonly source?: ChangeSource;
  readonly checkLatest?: boolean;
  /**
   * False skips the fsync: for changes observed on disk, whose bytes a scan finds again after a
   * power cut; the gateway's own saves are always durable.
   */
  readonly durable?: boolean;
  /** When the change was seen (ms since the epoch); default now. */
  readonly queuedAt?: number;
  /** The content's SHA-256 (hex) when the caller has it already; computed otherwise. */
  readonly sha256?: string;
  readonly written?: IWrittenSave;
  readonly signature?: ISignature;
}

/** An entry with the bytes it archives. */
export interface IJournalRecord extends IJournalEntry {
  readonly content: Buffer;
}

/**
 * The durable list of changes not yet archived: a write-ahead log.
 *
 * #### Notes
 * Records are appended to a log segment (`log/<first sequence number>.log`): a frame per record
 * (a magic number, the length of a JSON header line, the header, the exact bytes to archive), so
 * that a record costs one `write` and, when it must be durable, its share of one `fdatasync`:
 * appends that arrive while a sync is under way are made durable together by the next one (group
 * commit). Archived records are marked done with small frames of their own (not synced: a crash
 * that loses a mark brings a record back, and the replay finds through its save id that it
 * already arrived), and a segment is deleted once every record in it and in the segments before
 * it is done, so marks are never lost with a segment while the records they name live on.
 *
 * A run never appends to a segment of an earlier run: a crash leaves at most a frame cut short at
 * a segment's end, which is ignored. A complete frame whose bytes do not match its checksum means
 * damage: the segment is copied to `damaged/` (never deleted) and its frames from there on are not
 * replayed. Journals written before the log (one file per record in `pending/`) are read and
 * drained as before. A pid lock file keeps a second process from replaying the same journal.
 */
export class ArchiveJournal {
  constructor(
    readonly dir: string,
    options: ArchiveJournal.IOptions = {}
  ) {
    this._beforeForget = options.beforeForget;
    this._settleWindowMs = options.settleWindowMs ?? SETTLE_WINDOW_MS;
    this._settleWindowMax = options.settleWindowMax ?? SETTLE_WINDOW_MAX;
  }

  /**
   * Take the journal (creating it if needed) and return the records left by earlier runs, in
   * save order.
   *
   * @throws Error when another live process holds the journal.
   */
  async open(): Promise<IJournalRecord[]> {
    await fs.mkdir(path.join(this.dir, LOG), { recursive: true, mode: 0o700 });
    await this._lock();
    const records = await this._openLegacy();
    let highest = records.reduce((max, record) => Math.max(max, record.seq), 0);
    const read = await Private.readLog(path.join(this.dir, LOG));
    for (const segment of read.segments) {
      if (segment.damaged) {
        await fs.mkdir(path.join(this.dir, DAMAGED), { recursive: true });
        await fs.copyFile(
          path.join(this.dir, LOG, segment.name),
          path.join(this.dir, DAMAGED, segment.name)
        );
      }
      const kept: Private.ISegment = { name: segment.name, size: segment.size, live: new Set() };
      for (const record of segment.records) {
        highest = Math.max(highest, record.seq);
        if (read.done.has(record.seq)) continue;
        kept.live.add(record.seq);
        this._segmentOf.set(record.seq, kept);
        this._outstanding.add(record.seq);
        this._noteSettling(record);
        records.push(record);
      }
      this._segments.push(kept);
    }
    for (const seq of read.done) highest = Math.max(highest, seq);
    await this._dropDoneSegments();
    records.sort((a, b) => a.seq - b.seq);
    this._nextSeq = Math.max(highest, await this._lastSeqOnRecord()) + 1;
    return records;
  }

  /**
   * Record a change; resolves once it would survive a crash (and, unless `durable` is false, a
   * power cut).
   */
  async append(
    apiPath: string,
    content: Buffer,
    options: IAppendOptions = {}
  ): Promise<IJournalRecord> {
    const seq = this._nextSeq++;
    const entry: IJournalEntry = {
      seq,
      path: apiPath,
      queuedAt: options.queuedAt ?? Date.now(),
      sha256: options.sha256 ?? createHash('sha256').update(content).digest('hex'),
      saveId: `${this._runId}-${seq}`,
      ...(options.action && options.action !== 'put' ? { action: options.action } : {}),
      ...(options.renamedFrom !== undefined ? { renamedFrom: options.renamedFrom } : {}),
      ...(options.source ? { source: options.source } : {}),
      ...(options.checkLatest ? { checkLatest: true } : {}),
      ...(options.written ? { written: options.written } : {}),
      ...(options.signature ? { signature: options.signature } : {})
    };
    const segment = this._segmentForAppend(seq);
    segment.appending = (segment.appending ?? 0) + 1;
    this._appending++;
    try {
      const end = await this._write(
        segment,
        Private.frame({ ...entry, size: content.length }, content)
      );
      if (options.durable !== false) await this._sync(segment, end);
    } catch (error) {
      // A frame half written may end the segment: nothing more goes after it.
      this._retire(segment);
      segment.appending--;
      this._appending--;
      // This record will not come: what waits for the archive to go quiet may not.
      this._wakeSettling();
      throw error;
    }
    segment.appending--;
    this._appending--;
    segment.live.add(seq);
    this._segmentOf.set(seq, segment);
    this._outstanding.add(seq);
    this._highestSeq = Math.max(this._highestSeq, seq);
    this._noteSettling(entry);
    return { ...entry, content };
  }

  /**
   * Forget an archived record.
   *
   * #### Notes
   * A record that stands in for fsyncs not made (a save's file, a signature not committed yet)
   * is forgotten only after `beforeForget` made those durable; that happens in the background,
   * a window of records at a time (see {@link _forgetBatches}), so that the queue does not wait
   * for it, and {@link close} waits for it.
   */
  async remove(seq: number): Promise<void> {
    this._outstanding.delete(seq);
    const settling = this._settling.get(seq);
    if (settling && this._beforeForget) {
      this._settling.delete(seq);
      this._toForget.push(settling);
      this._forgetSoon(this._beforeForget);
      return;
    }
    // The last record the archive had to send may be this one.
    this._wakeSettling();
    await this._markDone([seq]);
  }

  /**
   * Forget archived records together (a record with those it superseded): they are marked done
   * in one frame, after `beforeForget` if one of them needs it, so that a replay never finds a
   * superseded record without the one that replaced it.
   */
  async removeTogether(entries: readonly IJournalEntry[]): Promise<void> {
    for (const entry of entries) this._outstanding.delete(entry.seq);
    if (!this._beforeForget || !entries.some(entry => this._settling.has(entry.seq))) {
      this._wakeSettling();
      await this._markDone(entries.map(entry => entry.seq));
      return;
    }
    for (const entry of entries) {
      this._toForget.push(this._settling.get(entry.seq) ?? entryOf(entry));
      this._settling.delete(entry.seq);
    }
    this._forgetSoon(this._beforeForget);
  }

  /**
   * Settle at once what {@link remove} left (a clean stop does not wait for the window), wait
   * for it to finish, remember the highest number, release the lock.
   */
  async close(): Promise<void> {
    this._closing = true;
    this._wakeSettling();
    await this._forgetting;
    await this._marking;
    await this._writing;
    // A clean stop leaves no segment whose records are all archived.
    this._active = undefined;
    await this._dropDoneSegments();
    for (const segment of this._segments) {
      if (segment.fd !== undefined) fsSync.closeSync(segment.fd);
      segment.fd = undefined;
    }
    this._active = undefined;
    if (this._locked) {
      // After a crash the log carries the highest number instead.
      if (this._highestSeq > 0) {
        await fs.writeFile(path.join(this.dir, LAST_SEQ), String(this._highestSeq));
      }
      await fs.rm(path.join(this.dir, LOCK), { force: true });
      this._locked = false;
    }
  }

  /**
   * How many records a journal directory holds that are not archived yet, read without taking
   * it (for status reports and tests).
   */
  static async pendingCount(dir: string): Promise<number> {
    let count = 0;
    try {
      count = (await fs.readdir(path.join(dir, PENDING))).filter(name =>
        RECORD_NAME.test(name)
      ).length;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    const { records, done } = await Private.scanHeaders(path.join(dir, LOG));
    for (const seq of records) if (!done.has(seq)) count++;
    return count;
  }

  /** The segment the next frame goes to: the active one, or a new one when it is full. */
  private _segmentForAppend(seq: number): Private.ISegment {
    const active = this._active;
    if (active?.fd !== undefined && active.size < SEGMENT_BYTES) return active;
    const name = `${String(seq).padStart(16, '0')}.log`;
    const fd = fsSync.openSync(
      path.join(this.dir, LOG, name),
      fsSync.constants.O_WRONLY |
        fsSync.constants.O_CREAT |
        fsSync.constants.O_EXCL |
        fsSync.constants.O_APPEND,
      0o600
    );
    // The new file's name must be durable before a record in it is said to be.
    const named = syncDirectory(path.join(this.dir, LOG));
    named.catch(() => undefined);
    const segment: Private.ISegment = { name, size: 0, live: new Set(), fd, synced: 0, named };
    this._segments.push(segment);
    this._active = segment;
    return segment;
  }

  /**
   * Append a frame. Frames are written in order: a small one at once with one synchronous call
   * (microseconds into the page cache, where the promise API would cost a thread-pool round
   * trip per call), a large one, or one behind a large one, through the thread pool.
   *
   * @returns the segment's size after the frame.
   */
  private _write(segment: Private.ISegment, frame: Buffer): Promise<number> {
    const fd = segment.fd;
    if (fd === undefined) return Promise.reject(new Error('the journal segment is closed'));
    if (!this._writing && frame.length <= SYNC_WRITE_BYTES) {
      Private.writeFullySync(fd, frame);
      segment.size += frame.length;
      return Promise.resolve(segment.size);
    }
    const written = (this._writing ?? Promise.resolve()).then(async () => {
      await Private.writeFully(fd, frame);
      segment.size += frame.length;
      return segment.size;
    });
    const settled = written.then(
      () => undefined,
      () => undefined
    );
    this._writing = settled;
    void settled.then(() => {
      if (this._writing === settled) this._writing = undefined;
    });
    return written;
  }

  /** Make the segment durable up to `end`, sharing each fdatasync with every append before it. */
  private async _sync(segment: Private.ISegment, end: number): Promise<void> {
    await segment.named;
    while ((segment.synced ?? 0) < end) {
      if (!segment.syncing) {
        const fd = segment.fd;
        if (fd === undefined) throw new Error('the journal segment is closed');
        const target = segment.size;
        segment.syncing = fdatasync(fd)
          .then(() => {
            segment.synced = Math.max(segment.synced ?? 0, target);
          })
          .finally(() => {
            segment.syncing = undefined;
          });
      }
      await segment.syncing;
    }
  }

  /** Take the segment out of use for new frames (a failed write may have left half a frame). */
  private _retire(segment: Private.ISegment): void {
    if (this._active === segment) this._active = undefined;
  }

  private _noteSettling(entry: IJournalEntry): void {
    if (entry.written || entry.signature) this._settling.set(entry.seq, entryOf(entry));
  }

  /** Start settling what waits to be forgotten, if that is not under way. */
  private _forgetSoon(beforeForget: NonNullable<ArchiveJournal.IOptions['beforeForget']>): void {
    this._forgetting ??= this._forgetBatches(beforeForget);
    this._wakeSettling();
  }

  /**
   * Settle and mark done the records given to {@link remove}, in batches: the saves of a burst
   * share the fsyncs of a path, of a directory and one signature commit. A batch that cannot be
   * settled stays pending, and the next start settles it again.
   *
   * #### Notes
   * While the archive is busy, a batch gathers for up to `settleWindowMs` (or until it holds
   * `settleWindowMax` records): a burst saves each path several times in that time, and only
   * the file now at a path needs its fsync, once, and a directory once for all its files. As
   * soon as every record still pending has been
   * handed to {@link remove} (nothing queued, uploading or being appended), and at
   * {@link close}, the batch is settled at once: the last save of a burst is forgotten within
   * milliseconds, as a lone save is. The wait costs no durability: until a record is marked
   * done a restart replays it, finds it archived through its save id and repairs its file.
   * The entries waiting hold no content (see {@link entryOf}).
   */
  private async _forgetBatches(
    beforeForget: NonNullable<ArchiveJournal.IOptions['beforeForget']>
  ): Promise<void> {
    await nextTurn();
    while (this._toForget.length > 0) {
      await this._settleWindow();
      const batch = this._toForget;
      this._toForget = [];
      try {
        await beforeForget(batch);
      } catch {
        continue;
      }
      await this._markDone(batch.map(entry => entry.seq));
    }
    this._forgetting = undefined;
  }

  /** Resolves when the records waiting to be forgotten should be settled (see `_forgetBatches`). */
  private _settleWindow(): Promise<void> {
    if (this._settleNow()) return Promise.resolve();
    return new Promise(resolve => {
      const timer = setTimeout(() => this._wakeSettling(true), this._settleWindowMs);
      // A process that ends without `close` loses nothing by not waiting for it.
      timer.unref();
      this._windowEnds = () => {
        clearTimeout(timer);
        this._windowEnds = undefined;
        resolve();
      };
    });
  }

  /** Should what waits to be forgotten be settled now, without waiting for the window? */
  private _settleNow(): boolean {
    return (
      this._closing ||
      this._toForget.length >= this._settleWindowMax ||
      (this._outstanding.size === 0 && this._appending === 0)
    );
  }

  /** End the settling window if it is time (or, with `always`, in any case). */
  private _wakeSettling(always = false): void {
    if (this._windowEnds && (always || this._settleNow())) this._windowEnds();
  }

  /**
   * Mark records done: a record of an old journal loses its file; log records are marked in
   * one frame per turn of the event loop, and the segments left with nothing pending deleted.
   */
  private async _markDone(seqs: readonly number[]): Promise<void> {
    for (const seq of seqs) {
      if (this._legacy.delete(seq)) await this._unlinkLegacy(seq);
      else if (this._segmentOf.has(seq)) this._doneQueue.push(seq);
    }
    if (this._doneQueue.length === 0) return;
    this._marking ??= (async () => {
      await nextTurn();
      while (this._doneQueue.length > 0) {
        const seqs = this._doneQueue;
        this._doneQueue = [];
        for (const seq of seqs) {
          this._segmentOf.get(seq)?.live.delete(seq);
          this._segmentOf.delete(seq);
        }
        await this._dropDoneSegments();
        // The mark is needed only while a segment holding records (done or not) remains.
        if (this._segments.length > 0) {
          const segment = this._segmentForAppend(this._nextSeq);
          await this._write(segment, Private.frame({ done: seqs, size: 0 }, EMPTY)).catch(() => {
            // Without its mark the record comes back after a restart and is found archived.
            this._retire(segment);
          });
        }
      }
      this._marking = undefined;
    })();
    await this._marking;
  }

  /**
   * Delete segments from the oldest while nothing in them is pending (the active one too once
   * it is large enough to be worth a new file), so that a deleted segment never held the only
   * mark of a record that is kept.
   */
  private async _dropDoneSegments(): Promise<void> {
    while (this._segments.length > 0) {
      const oldest = this._segments[0];
      if (oldest.live.size > 0 || (oldest.appending ?? 0) > 0 || oldest.syncing) return;
      if (oldest === this._active && oldest.size < ROTATE_EMPTY_BYTES) return;
      this._segments.shift();
      if (oldest === this._active) this._active = undefined;
      if (oldest.fd !== undefined) fsSync.closeSync(oldest.fd);
      oldest.fd = undefined;
      await fs.rm(path.join(this.dir, LOG, oldest.name), { force: true });
    }
  }

  /** Records of a journal written before the log, one file each in `pending/`. */
  private async _openLegacy(): Promise<IJournalRecord[]> {
    const records: IJournalRecord[] = [];
    let names: string[];
    try {
      names = await fs.readdir(path.join(this.dir, PENDING));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return records;
      throw error;
    }
    for (const name of names) {
      const file = path.join(this.dir, PENDING, name);
      if (!RECORD_NAME.test(name)) {
        if (name.startsWith('.~jupyter-store-')) await fs.rm(file, { force: true });
        continue;
      }
      const record = Private.parseLegacy(await fs.readFile(file));
      if (record) {
        records.push(record);
        this._legacy.add(record.seq);
        this._outstanding.add(record.seq);
        this._noteSettling(record);
      } else {
        await fs.mkdir(path.join(this.dir, DAMAGED), { recursive: true });
        await fs.rename(file, path.join(this.dir, DAMAGED, name));
      }
    }
    return records;
  }

  private async _unlinkLegacy(seq: number): Promise<void> {
    const file = path.join(this.dir, PENDING, `${String(seq).padStart(16, '0')}.rec`);
    await fs.rm(file, { force: true });
  }

  /** The highest sequence number ever used, so numbers keep increasing after a clean drain. */
  private async _lastSeqOnRecord(): Promise<number> {
    try {
      return Number((await fs.readFile(path.join(this.dir, LAST_SEQ), 'utf8')).trim()) || 0;
    } catch {
      return 0;
    }
  }

  private async _lock(): Promise<void> {
    const lock = path.join(this.dir, LOCK);
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await fs.writeFile(lock, String(process.pid), { flag: 'wx' });
        this._locked = true;
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const owner = Number((await fs.readFile(lock, 'utf8').catch(() => '')).trim());
      if (owner && owner !== process.pid && isAlive(owner)) {
        throw new Error(
          `the archive journal ${this.dir} is in use by process ${owner}; ` +
            'give each gateway its own journal_dir'
        );
      }
      await fs.rm(lock, { force: true });
    }
    throw new Error(`cannot lock the archive journal ${this.dir}`);
  }

  private readonly _beforeForget: ArchiveJournal.IOptions['beforeForget'];
  /** Records that stand in for fsyncs not made, by sequence number, until they are settled. */
  private readonly _settling = new Map<number, IJournalEntry>();
  private readonly _settleWindowMs: number;
  private readonly _settleWindowMax: number;
  private _toForget: IJournalEntry[] = [];
  private _forgetting: Promise<void> | undefined;
  /** Ends the settling window under way (see `_settleWindow`). */
  private _windowEnds: (() => void) | undefined;
  /** Records appended (or replayed) and not yet handed to `remove`: the archive's work left. */
  private readonly _outstanding = new Set<number>();
  /** Appends under way, whose records are not in `_outstanding` yet. */
  private _appending = 0;
  private _closing = false;
  /** Segments in order, oldest first; the active one (if any) is the last. */
  private readonly _segments: Private.ISegment[] = [];
  private _active: Private.ISegment | undefined;
  private readonly _segmentOf = new Map<number, Private.ISegment>();
  /** Pending records of a journal written before the log. */
  private readonly _legacy = new Set<number>();
  private _doneQueue: number[] = [];
  private _marking: Promise<void> | undefined;
  private _writing: Promise<void> | undefined;
  private _nextSeq = 1;
  private _highestSeq = 0;
  private _locked = false;
  /** Distinguishes save ids of this run from those of earlier runs with the same numbers. */
  private readonly _runId = randomBytes(6).toString('hex');
}

/** Options of {@link ArchiveJournal}. */
export namespace ArchiveJournal {
  export interface IOptions {
    /**
     * Make durable what records with `written` or `signature` stand in for, before they are
     * forgotten (the contents manager's `settleJournalled`).
     */
    beforeForget?: (entries: readonly IJournalEntry[]) => Promise<void>;
    /**
     * How long (ms) records archived while others are still on their way may wait to be
     * settled together; default 1 s.
     */
    settleWindowMs?: number;
    /** How many records may wait to be settled together before they are at once; default 4096. */
    settleWindowMax?: number;
  }
}

const LOG = 'log';
/** Where journals written before the log kept one file per record. */
const PENDING = 'pending';
const DAMAGED = 'damaged';
const LOCK = 'journal.lock';
const LAST_SEQ = 'last-seq';
const RECORD_NAME = /^\d{16}\.rec$/;
const SEGMENT_NAME = /^\d{16}\.log$/;
/** New records go to a new segment beyond this size, so that done ones can be deleted. */
const SEGMENT_BYTES = 8 * 1024 * 1024;
/** An active segment with nothing pending is replaced by a new one beyond this size. */
const ROTATE_EMPTY_BYTES = 1024 * 1024;
/** The longest a busy archive lets archived records wait to be settled together. */
const SETTLE_WINDOW_MS = 1000;
/** The most records settled together (entries without content: a few hundred bytes each). */
const SETTLE_WINDOW_MAX = 4096;
/** Frames up to this size are written with one synchronous call (see `_write`). */
const SYNC_WRITE_BYTES = 256 * 1024;
const MAGIC = Buffer.from('JSJ1', 'latin1');
const EMPTY = Buffer.alloc(0);

const fdatasync = promisify(fsSync.fdatasync);
const nextTurn = (): Promise<void> => new Promise(resolve => setImmediate(resolve));

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

namespace Private {
  /** A log segment, as this run knows it. */
  export interface ISegment {
    readonly name: string;
    /** Bytes in the file (for a segment of an earlier run, as read at open). */
    size: number;
    /** Records in it not yet archived. */
    readonly live: Set<number>;
    /** Open for appending (segments of this run only). */
    fd?: number;
    /** Bytes known to be on disk. */
    synced?: number;
    /** The fdatasync under way. */
    syncing?: Promise<void>;
    /** The fsync of the log directory that makes the segment's name durable. */
    named?: Promise<void>;
    /** Appends under way. */
    appending?: number;
  }

  /** A frame: magic, header length (u32 LE), JSON header, content. */
  export function frame(header: object, content: Buffer): Buffer {
    const json = Buffer.from(JSON.stringify(header), 'utf8');
    const head = Buffer.allocUnsafe(8);
    MAGIC.copy(head, 0);
    head.writeUInt32LE(json.length, 4);
    return Buffer.concat([head, json, content]);
  }

  export interface IReadSegment {
    name: string;
    size: number;
    records: IJournalRecord[];
    /** A complete frame did not check out: what follows it is not replayed. */
    damaged: boolean;
  }

  /** Every segment of a log directory, in order, and the records marked done in any of them. */
  export async function readLog(
    dir: string
  ): Promise<{ segments: IReadSegment[]; done: Set<number> }> {
    const done = new Set<number>();
    const segments: IReadSegment[] = [];
    let names: string[];
    try {
      names = (await fs.readdir(dir)).filter(name => SEGMENT_NAME.test(name)).sort();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { segments, done };
      throw error;
    }
    for (const name of names) {
      const data = await fs.readFile(path.join(dir, name));
      const segment: IReadSegment = { name, size: data.length, records: [], damaged: false };
      let offset = 0;
      while (offset < data.length) {
        // A frame cut short by a crash ends the segment; anything else that does not check out
        // is damage.
        if (data.length - offset < 8) break;
        if (!data.subarray(offset, offset + 4).equals(MAGIC)) {
          segment.damaged = true;
          break;
        }
        const headerEnd = offset + 8 + data.readUInt32LE(offset + 4);
        if (headerEnd > data.length) break;
        let header: IJournalEntry & { size?: unknown; done?: unknown };
        try {
          header = JSON.parse(
            data.subarray(offset + 8, headerEnd).toString('utf8')
          ) as typeof header;
        } catch {
          segment.damaged = true;
          break;
        }
        const size = typeof header.size === 'number' ? header.size : -1;
        if (size < 0) {
          segment.damaged = true;
          break;
        }
        if (headerEnd + size > data.length) break;
        const content = data.subarray(headerEnd, headerEnd + size);
        offset = headerEnd + size;
        if (Array.isArray(header.done)) {
          for (const seq of header.done) if (typeof seq === 'number') done.add(seq);
          continue;
        }
        const record = checked(header, content);
        if (!record) {
          segment.damaged = true;
          break;
        }
        segment.records.push(record);
      }
      segments.push(segment);
    }
    return { segments, done };
  }

  /**
   * The sequence numbers of the records in a log directory and those marked done, from the
   * frames' headers alone (no content is read or checked): cheap enough to poll.
   */
  export async function scanHeaders(
    dir: string
  ): Promise<{ records: number[]; done: Set<number> }> {
    const records: number[] = [];
    const done = new Set<number>();
    let names: string[];
    try {
      names = (await fs.readdir(dir)).filter(name => SEGMENT_NAME.test(name));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { records, done };
      throw error;
    }
    const head = Buffer.alloc(8);
    for (const name of names) {
      let handle: fs.FileHandle;
      try {
        handle = await fs.open(path.join(dir, name), 'r');
      } catch {
        continue; // deleted meanwhile
      }
      try {
        const size = (await handle.stat()).size;
        let offset = 0;
        while (offset + 8 <= size) {
          await handle.read(head, 0, 8, offset);
          if (!head.subarray(0, 4).equals(MAGIC)) break;
          const length = head.readUInt32LE(4);
          if (offset + 8 + length > size) break;
          const json = Buffer.alloc(length);
          await handle.read(json, 0, length, offset + 8);
          let header: { seq?: unknown; size?: unknown; done?: unknown };
          try {
            header = JSON.parse(json.toString('utf8')) as typeof header;
          } catch {
            break;
          }
          if (typeof header.size !== 'number') break;
          offset += 8 + length + header.size;
          if (Array.isArray(header.done)) {
            for (const seq of header.done) if (typeof seq === 'number') done.add(seq);
          } else if (typeof header.seq === 'number' && offset <= size) records.push(header.seq);
        }
      } finally {
        await handle.close();
      }
    }
    return { records, done };
  }

  /** A record of a journal written before the log: a JSON header line, then the bytes. */
  export function parseLegacy(data: Buffer): IJournalRecord | undefined {
    const newline = data.indexOf(0x0a);
    if (newline < 0) return undefined;
    try {
      const header = JSON.parse(data.subarray(0, newline).toString('utf8')) as IJournalEntry;
      return checked(header, data.subarray(newline + 1));
    } catch {
      return undefined;
    }
  }

  /** The record, if its bytes match its checksum; `size` is the frame's, not the entry's. */
  function checked(
    header: IJournalEntry & { size?: unknown },
    content: Buffer
  ): IJournalRecord | undefined {
    const entry: IJournalEntry & { size?: unknown } = { ...header };
    delete entry.size;
    const sha256 = createHash('sha256').update(content).digest('hex');
    if (sha256 !== entry.sha256 || typeof entry.path !== 'string') return undefined;
    if (typeof entry.seq !== 'number') return undefined;
    return { ...entry, content };
  }

  export function writeFullySync(fd: number, data: Buffer): void {
    let offset = 0;
    while (offset < data.length) offset += fsSync.writeSync(fd, data, offset);
  }

  const write = promisify(fsSync.write);

  export async function writeFully(fd: number, data: Buffer): Promise<void> {
    let offset = 0;
    while (offset < data.length) {
      offset += (await write(fd, data, offset, data.length - offset, null)).bytesWritten;
    }
  }
}
