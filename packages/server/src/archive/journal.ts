import { createHash, randomBytes } from 'node:crypto';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { writeFileAtomic } from '../contents/fileio';
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
   * False skips the fsyncs (the rename stays all-or-nothing): for changes observed on disk,
   * whose bytes a scan finds again after a power cut; the gateway's own saves are always durable.
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
 * The durable list of saves not yet archived: one file per save, written (fsynced, renamed,
 * directory fsynced) before the save is acknowledged and removed once the object store has
 * confirmed the upload.
 *
 * #### Notes
 * One file per record keeps every write all-or-nothing without a log format to repair: a crash
 * leaves either the complete record or none (stray temporary files are removed at open). A file
 * is a JSON header line followed by the exact bytes to archive. A record whose bytes no longer
 * match its checksum is moved to `damaged/`, never deleted. A pid lock file keeps a second
 * process from replaying the same journal.
 */
export class ArchiveJournal {
  constructor(
    readonly dir: string,
    options: ArchiveJournal.IOptions = {}
  ) {
    this._beforeForget = options.beforeForget;
  }

  /**
   * Take the journal (creating it if needed) and return the records left by earlier runs, in
   * save order.
   *
   * @throws Error when another live process holds the journal.
   */
  async open(): Promise<IJournalRecord[]> {
    await fs.mkdir(path.join(this.dir, PENDING), { recursive: true, mode: 0o700 });
    await this._lock();
    const records: IJournalRecord[] = [];
    for (const name of await fs.readdir(path.join(this.dir, PENDING))) {
      const file = path.join(this.dir, PENDING, name);
      if (!RECORD_NAME.test(name)) {
        if (name.startsWith('.~jupyter-store-')) await fs.rm(file, { force: true });
        continue;
      }
      const record = await this._read(file);
      if (record) {
        records.push(record);
        this._noteSettling(record);
      } else await this._setAside(name);
    }
    records.sort((a, b) => a.seq - b.seq);
    this._nextSeq = (records.at(-1)?.seq ?? (await this._lastSeqOnRecord())) + 1;
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
    const header = Buffer.from(`${JSON.stringify(entry)}\n`, 'utf8');
    if (options.durable === false && content.length <= SMALL_RECORD_BYTES) {
      this._writeSmallRecord(seq, header, content);
    } else {
      await writeFileAtomic(this._file(seq), [header, content], { durable: options.durable });
    }
    this._highestSeq = Math.max(this._highestSeq, seq);
    this._noteSettling(entry);
    return { ...entry, content };
  }

  /**
   * Forget an archived record.
   *
   * #### Notes
   * The directory is not fsynced: if a crash brings the record back, the replay finds through
   * its save id that it already arrived, so durability here would only cost time.
   *
   * A record that stands in for fsyncs not made (a save's file, a signature not committed yet)
   * is forgotten only after `beforeForget` made those durable; that happens in the background,
   * a batch at a time, so that the queue does not wait for it, and {@link close} waits for it.
   */
  async remove(seq: number): Promise<void> {
    const settling = this._settling.get(seq);
    if (settling && this._beforeForget) {
      this._settling.delete(seq);
      this._toForget.push(settling);
      this._forgetting ??= this._forgetBatches(this._beforeForget);
      return;
    }
    await this._unlink(seq);
  }

  /** Wait for what {@link remove} left to finish, remember the highest number, release the lock. */
  async close(): Promise<void> {
    await this._forgetting;
    if (this._locked) {
      // After a crash the pending files carry the highest number instead.
      if (this._highestSeq > 0) {
        await fs.writeFile(path.join(this.dir, LAST_SEQ), String(this._highestSeq));
      }
      await fs.rm(path.join(this.dir, LOCK), { force: true });
      this._locked = false;
    }
  }

  /**
   * A small record that needs no fsync: written and renamed into place with synchronous calls.
   *
   * #### Notes
   * The rename keeps it all-or-nothing, as {@link writeFileAtomic} does. For a few kilobytes in
   * the page cache the two system calls take microseconds, while the promise API costs a
   * thread-pool round trip per call (open, write, close, rename): in a bulk archive of a root
   * full of notebooks that was a sixth of the gateway's CPU.
   */
  private _writeSmallRecord(seq: number, header: Buffer, content: Buffer): void {
    const target = this._file(seq);
    // Named like writeFileAtomic's temporary files, which open() clears after a crash.
    const temporary = path.join(this.dir, PENDING, `.~jupyter-store-${seq}.tmp`);
    try {
      writeFileSync(temporary, Buffer.concat([header, content]), { mode: 0o600 });
      renameSync(temporary, target);
    } catch (error) {
      rmSync(temporary, { force: true });
      throw error;
    }
  }

  private _noteSettling(entry: IJournalEntry): void {
    if (entry.written || entry.signature) this._settling.set(entry.seq, entryOf(entry));
  }

  /**
   * Settle and unlink the records given to {@link remove}, in batches: the saves of a burst
   * share the fsyncs of a path and one signature commit. A batch that cannot be settled stays
   * on disk, and the next start settles it again.
   */
  private async _forgetBatches(
    beforeForget: NonNullable<ArchiveJournal.IOptions['beforeForget']>
  ): Promise<void> {
    await new Promise(resolve => setImmediate(resolve));
    while (this._toForget.length > 0) {
      const batch = this._toForget;
      this._toForget = [];
      try {
        await beforeForget(batch);
      } catch {
        continue;
      }
      await Promise.all(batch.map(entry => this._unlink(entry.seq).catch(() => undefined)));
    }
    this._forgetting = undefined;
  }

  private async _unlink(seq: number): Promise<void> {
    try {
      await fs.unlink(this._file(seq));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }

  private _file(seq: number): string {
    return path.join(this.dir, PENDING, `${String(seq).padStart(16, '0')}.rec`);
  }

  private async _read(file: string): Promise<IJournalRecord | undefined> {
    const data = await fs.readFile(file);
    const newline = data.indexOf(0x0a);
    if (newline < 0) return undefined;
    let entry: IJournalEntry;
    try {
      entry = JSON.parse(data.subarray(0, newline).toString('utf8')) as IJournalEntry;
    } catch {
      return undefined;
    }
    const content = data.subarray(newline + 1);
    const sha256 = createHash('sha256').update(content).digest('hex');
    if (sha256 !== entry.sha256 || typeof entry.path !== 'string') return undefined;
    return { ...entry, content };
  }

  private async _setAside(name: string): Promise<void> {
    await fs.mkdir(path.join(this.dir, DAMAGED), { recursive: true });
    await fs.rename(path.join(this.dir, PENDING, name), path.join(this.dir, DAMAGED, name));
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
  private _toForget: IJournalEntry[] = [];
  private _forgetting: Promise<void> | undefined;
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
  }
}

const PENDING = 'pending';
/** Records up to this size that need no fsync are written synchronously (see _writeSmallRecord). */
const SMALL_RECORD_BYTES = 256 * 1024;
const DAMAGED = 'damaged';
const LOCK = 'journal.lock';
const LAST_SEQ = 'last-seq';
const RECORD_NAME = /^\d{16}\.rec$/;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
