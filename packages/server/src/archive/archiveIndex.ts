import { createHash } from 'node:crypto';
import type { Stats } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { writeFileAtomic } from '../contents/fileio';

/**
 * What identifies a file's state without reading it, as git's index keeps it: device, inode,
 * size and modification time (ms, with the sub-millisecond part the file system gives).
 */
export interface IFileStat {
  readonly dev: number;
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
}

/** What the archive holds for one path: the file's state when read, and what became of it. */
export interface IIndexEntry {
  readonly stat: IFileStat;
  /** SHA-256 of the archived bytes, hex. */
  readonly sha256: string;
  /** The version the object store gave them; null when unknown (rebuilt from a listing). */
  readonly versionId: string | null;
  /**
   * The file was read so soon after its last write that a later write within the same
   * timestamp tick could leave the same stat ("racily clean", as git calls it): the next scan
   * reads it again even if the stat matches.
   */
  readonly racy: boolean;
}

/** The stat tuple of a `Stats`. */
export function fileStat(stats: Stats): IFileStat {
  return { dev: stats.dev, ino: stats.ino, size: stats.size, mtimeMs: stats.mtimeMs };
}

/** Do two stat tuples name the same state of the same file? */
export function sameStat(a: IFileStat | undefined, b: IFileStat | undefined): boolean {
  return (
    a !== undefined &&
    b !== undefined &&
    a.dev === b.dev &&
    a.ino === b.ino &&
    a.size === b.size &&
    a.mtimeMs === b.mtimeMs
  );
}

/**
 * How long after a write a stat stays ambiguous. Most Linux file systems stamp times at the
 * kernel tick (a few ms), NFS and FAT at up to 2 s: two writes within that window can leave the
 * same mtime.
 */
export const RACY_WINDOW_MS = 2000;

/**
 * The archive index: path → (stat, content hash, version) of what was archived, so that a scan
 * of an unchanged root reads no file and the same content is never archived twice in a row.
 *
 * #### Notes
 * - It lives in one JSON file per (root, store, bucket, prefix), named by a hash of the four, in
 *   the journal directory: one data directory can serve several roots or buckets without mixing
 *   their archives.
 * - It is a cache of what the bucket holds, never the only record: the journal holds what is on
 *   its way, and a lost or foreign index file is rebuilt from a listing of the bucket. So it is
 *   written without blocking archiving: at most once per `flushIntervalMs` when changed, and at
 *   close, marked `clean`.
 * - An index that was not closed cleanly may lag the bucket by the last interval's uploads: its
 *   entries are then `unconfirmed` until their path is archived again, and the first upload of
 *   such a path first compares with the latest object (`checkLatest`), so a crash does not make
 *   a duplicate version.
 */
export class ArchiveIndex {
  private constructor(
    readonly file: string,
    private readonly _identity: ArchiveIndex.IIdentity,
    private readonly _flushIntervalMs: number
  ) {}

  /**
   * Open (or start) the index of one archive.
   *
   * @returns the index, and whether it was found (false: empty, to be rebuilt from the bucket).
   */
  static async open(options: ArchiveIndex.IOptions): Promise<ArchiveIndex> {
    const name = createHash('sha256')
      .update(JSON.stringify(options.identity))
      .digest('hex')
      .slice(0, 16);
    const index = new ArchiveIndex(
      path.join(options.dir, `index-${name}.json`),
      options.identity,
      options.flushIntervalMs ?? 2000
    );
    await fs.mkdir(options.dir, { recursive: true, mode: 0o700 });
    await index._load();
    return index;
  }

  /** Was an index file found for this archive (false: it must be rebuilt from the bucket)? */
  get found(): boolean {
    return this._found;
  }

  /** Was the file found written at a clean stop? */
  get wasClean(): boolean {
    return this._wasClean;
  }

  /** The number of paths indexed. */
  get size(): number {
    return this._entries.size;
  }

  get(apiPath: string): IIndexEntry | undefined {
    return this._entries.get(apiPath);
  }

  /** Every indexed path. */
  paths(): IterableIterator<string> {
    return this._entries.keys();
  }

  /** Is this path's entry possibly behind the bucket (see the class notes)? */
  isUnconfirmed(apiPath: string): boolean {
    return this._unconfirmed.has(apiPath);
  }

  /** Record what the archive now holds for a path. */
  set(apiPath: string, entry: IIndexEntry): void {
    this._entries.set(apiPath, entry);
    this._unconfirmed.delete(apiPath);
    this._changed();
  }

  /** Forget a path (deleted from the root and marked deleted in the bucket). */
  delete(apiPath: string): void {
    if (this._entries.delete(apiPath)) this._changed();
    this._unconfirmed.delete(apiPath);
  }

  /** Write the index now if it changed. */
  async flush(): Promise<void> {
    if (this._timer) clearTimeout(this._timer);
    this._timer = undefined;
    if (!this._dirty) return;
    await this._write(false);
  }

  /** Write the index as cleanly closed; later changes are not recorded. */
  async close(): Promise<void> {
    if (this._timer) clearTimeout(this._timer);
    this._timer = undefined;
    this._closed = true;
    await this._writing;
    await this._write(true);
  }

  private _changed(): void {
    this._dirty = true;
    if (this._timer || this._closed) return;
    this._timer = setTimeout(() => {
      this._timer = undefined;
      void this._write(false).catch(() => undefined);
    }, this._flushIntervalMs);
    this._timer.unref();
  }

  /** One write at a time; a change during a write is picked up by the next. */
  private async _write(clean: boolean): Promise<void> {
    const previous = this._writing;
    const current = (async () => {
      await previous.catch(() => undefined);
      this._dirty = false;
      const entries: Record<string, Private.SerializedEntry> = {};
      for (const [apiPath, entry] of this._entries) {
        const { dev, ino, size, mtimeMs } = entry.stat;
        entries[apiPath] = [dev, ino, size, mtimeMs, entry.sha256, entry.versionId, entry.racy];
      }
      const document: Private.IDocument = {
        format: Private.FORMAT,
        identity: this._identity,
        clean,
        entries
      };
      // Not fsynced except at a clean stop: a lost write only costs a comparison (class notes).
      await writeFileAtomic(this.file, Buffer.from(JSON.stringify(document)), { durable: clean });
    })();
    this._writing = current.catch(() => undefined);
    await current;
  }

  private async _load(): Promise<void> {
    let document: Private.IDocument;
    try {
      document = JSON.parse(await fs.readFile(this.file, 'utf8')) as Private.IDocument;
    } catch {
      return;
    }
    if (
      document?.format !== Private.FORMAT ||
      JSON.stringify(document.identity) !== JSON.stringify(this._identity) ||
      typeof document.entries !== 'object' ||
      document.entries === null
    ) {
      return;
    }
    for (const [apiPath, value] of Object.entries(document.entries)) {
      if (!Array.isArray(value) || value.length !== 7) continue;
      const [dev, ino, size, mtimeMs, sha256, versionId, racy] = value;
      if (typeof sha256 !== 'string') continue;
      this._entries.set(apiPath, {
        stat: { dev, ino, size, mtimeMs },
        sha256,
        versionId: typeof versionId === 'string' ? versionId : null,
        racy: racy === true
      });
      if (document.clean !== true) this._unconfirmed.add(apiPath);
    }
    this._found = true;
    this._wasClean = document.clean === true;
  }

  private readonly _entries = new Map<string, IIndexEntry>();
  private readonly _unconfirmed = new Set<string>();
  private _found = false;
  private _wasClean = false;
  private _dirty = false;
  private _closed = false;
  private _timer: NodeJS.Timeout | undefined;
  private _writing: Promise<void> = Promise.resolve();
}

export namespace ArchiveIndex {
  /** What the index describes: a file from another root or bucket is not used. */
  export interface IIdentity {
    readonly rootDir: string;
    readonly store: string;
    readonly bucket: string;
    readonly prefix: string;
  }

  export interface IOptions {
    /** The directory of index files (the journal directory). */
    dir: string;
    identity: IIdentity;
    /** The longest a change waits before the file is rewritten; default 2 s. */
    flushIntervalMs?: number;
  }
}

namespace Private {
  export const FORMAT = 'jupyter-store-index-1';

  /** An entry as stored: [dev, ino, size, mtimeMs, sha256, versionId, racy], compact for 100k paths. */
  export type SerializedEntry = [number, number, number, number, string, string | null, boolean];

  export interface IDocument {
    format: string;
    identity: IIdentity;
    clean: boolean;
    entries: Record<string, SerializedEntry>;
  }

  type IIdentity = ArchiveIndex.IIdentity;
}
