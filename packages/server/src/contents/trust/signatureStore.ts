import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DatabaseSync } from 'node:sqlite';

/**
 * Where notebook signatures are remembered: the same SQLite database that nbformat's
 * `SQLiteSignatureStore` uses (`<jupyter data dir>/nbsignatures.db`, table `nbsignatures`), read
 * and written so that a live Python Jupyter keeps reading it, plus the in-memory store nbformat
 * falls back to.
 */

/** A place to remember which notebook signatures are trusted. */
export interface ISignatureStore {
  /** Remember a signature (refreshing it when already known); may cull the oldest ones. */
  storeSignature(digest: string, algorithm: string): Promise<void>;
  /**
   * Remember several signatures at once, as one commit where the store has commits: the group
   * commit of saves that arrive together.
   */
  storeSignatures(signatures: readonly ISignature[]): Promise<void>;
  /**
   * Trust the signature in this process at once and commit it later (a store that batches
   * writes); resolves once committed. Stores without it are written through instead.
   */
  storeSignatureSoon?(digest: string, algorithm: string): Promise<void>;
  /** Resolves once every write asked for so far has settled (a store that batches writes). */
  flushed?(): Promise<void>;
  /** Is the signature known? A hit counts as a use and refreshes it, as in nbformat. */
  checkSignature(digest: string, algorithm: string): Promise<boolean>;
  /** Forget a signature; forgetting an unknown one is not an error. */
  removeSignature(digest: string, algorithm: string): Promise<void>;
  /** Release what the store holds; it must not be used afterwards. */
  close(): Promise<void>;
}

/** A notebook's signature and the algorithm that made it. */
export interface ISignature {
  readonly digest: string;
  readonly algorithm: string;
}

/**
 * The database stayed in use by another process for longer than the store's busy timeout, as
 * Python's `sqlite3.OperationalError: database is locked` after its 5 s timeout.
 */
export class SignatureStoreBusyError extends Error {
  /**
   * @param dbFile - the database that was busy.
   * @param waitedMs - how long we waited for it.
   */
  constructor(
    readonly dbFile: string,
    readonly waitedMs: number
  ) {
    super(`The notebook signature database ${dbFile} stayed locked for ${waitedMs} ms`);
    this.name = 'SignatureStoreBusyError';
  }
}

/** How long the write lock is left free after each of our commits (see `inTurn`). */
const COMMIT_GAP_MS = 15;

/** nbformat's default capacity: 64k signatures, about 12 MB of database. */
export const DEFAULT_CACHE_SIZE = 65535;

/**
 * `datetime.now(tz=timezone.utc).isoformat()`, the `last_seen` text nbformat writes:
 * `2024-05-06T07:08:09.123000+00:00`, with the fraction left out when it is zero as Python does.
 * Keeping Python's exact layout keeps `ORDER BY last_seen` chronological across both writers.
 */
export function pythonUtcIsoformat(date: Date): string {
  const seconds = date.toISOString().slice(0, 19);
  const millis = date.getUTCMilliseconds();
  return millis === 0
    ? `${seconds}+00:00`
    : `${seconds}.${String(millis * 1000).padStart(6, '0')}+00:00`;
}

/**
 * nbformat's `MemorySignatureStore`: signatures kept in insertion/use order; when it reaches
 * `cacheSize` entries the oldest quarter is dropped. Nothing survives the process.
 */
export class MemorySignatureStore implements ISignatureStore {
  /** @param cacheSize - how many signatures to hold before culling; nbformat uses 65535. */
  constructor(readonly cacheSize: number = DEFAULT_CACHE_SIZE) {}

  /** Remember the signature as the most recently used one, then cull if full. */
  async storeSignature(digest: string, algorithm: string): Promise<void> {
    const key = memoryKey(digest, algorithm);
    this.data.delete(key);
    this.data.add(key);
    if (this.data.size < this.cacheSize) return;
    let drop = Math.floor(this.data.size / 4);
    for (const oldest of this.data) {
      if (drop-- <= 0) break;
      this.data.delete(oldest);
    }
  }

  /** Each in turn, as {@link storeSignature}. */
  async storeSignatures(signatures: readonly ISignature[]): Promise<void> {
    for (const { digest, algorithm } of signatures) await this.storeSignature(digest, algorithm);
  }

  /** Known signatures become the most recently used. */
  async checkSignature(digest: string, algorithm: string): Promise<boolean> {
    const key = memoryKey(digest, algorithm);
    if (!this.data.delete(key)) return false;
    this.data.add(key);
    return true;
  }

  /** Forget the signature if present. */
  async removeSignature(digest: string, algorithm: string): Promise<void> {
    this.data.delete(memoryKey(digest, algorithm));
  }

  /** Nothing to release. */
  async close(): Promise<void> {}

  // A Set iterates in insertion order, which is the least-recently-used order we need.
  private readonly data = new Set<string>();
}

function memoryKey(digest: string, algorithm: string): string {
  return `${algorithm}\u0000${digest}`;
}

/**
 * nbformat's `SQLiteSignatureStore`, on the same file: same table, columns, index, `last_seen`
 * text, refresh-on-hit and cull rule (beyond `cacheSize` rows keep the `0.75 * cacheSize` most
 * recently seen), and the same recovery when the file is not a database (renamed to `.bak`, a new
 * one created, or an in-memory database for the rest of the session if that fails too).
 *
 * #### Notes
 * SQLite here is Node's own (`node:sqlite`): a native SQLite that takes the same POSIX locks and
 * keeps the same rollback journal as Python's, and rolls back a journal left by a crashed writer,
 * so the two coordinate as any two SQLite processes do. On top of that:
 *
 * - the database is opened for each operation and closed again, so nothing of ours is held
 *   between operations, and a database that Python deletes (`jupyter trust --reset`) or renames
 *   (corruption recovery) is picked up at once instead of being written through an orphaned
 *   handle;
 * - SQLite itself never waits for a lock (no busy timeout: it would sleep in the calling thread).
 *   An operation that finds the database locked is rolled back and started over after a short
 *   asynchronous pause, for up to `busyTimeoutMs` (5 s, as Python's sqlite3), then fails with
 *   {@link SignatureStoreBusyError};
 * - a check only reads, so it is held up only while another process commits or holds
 *   `BEGIN EXCLUSIVE`, not by a write transaction in progress; it then refreshes `last_seen` of a
 *   hit if the write lock is free at once, and otherwise leaves it (it only orders culling).
 *
 * Every call runs synchronously, and a commit waits for the disk (fsync, milliseconds), so the
 * gateway runs this store in a worker thread (see `WorkerSignatureStore`).
 */
export class SQLiteSignatureStore implements ISignatureStore {
  /** @param options - the database file (or `:memory:`) and tuning. */
  constructor(options: SQLiteSignatureStore.IOptions) {
    this.dbFile = options.dbFile;
    this.cacheSize = options.cacheSize ?? DEFAULT_CACHE_SIZE;
    this.busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    this.now = options.now ?? (() => new Date());
    this.warn = options.warn ?? (message => console.warn(message));
    if (this.dbFile === ':memory:') this.openMemoryDatabase();
  }

  /** The database file in use; becomes `:memory:` if the file could not be used at all. */
  dbFile: string;

  /** Rows beyond which the least recently seen quarter is culled. */
  readonly cacheSize: number;

  /** Insert the signature, or refresh its `last_seen`; then cull if over `cacheSize`. */
  async storeSignature(digest: string, algorithm: string): Promise<void> {
    await this.storeSignatures([{ digest, algorithm }]);
  }

  /**
   * {@link storeSignature} for each, in one transaction: one commit (and so one set of fsyncs)
   * for all of them, which Python sees all at once.
   */
  async storeSignatures(signatures: readonly ISignature[]): Promise<void> {
    if (signatures.length === 0) return;
    await this.inTurn(() =>
      this.withDatabase(db =>
        writeTransaction(db, () => {
          const stamp = pythonUtcIsoformat(this.now());
          for (const { digest, algorithm } of signatures) {
            if (!refresh(db, digest, algorithm, stamp)) {
              db.prepare(
                'INSERT INTO nbsignatures (algorithm, signature, last_seen) VALUES (?, ?, ?)'
              ).run(algorithm, digest, stamp);
            }
          }
          const row = db.prepare('SELECT count(*) AS n FROM nbsignatures').get();
          if (Number(row?.n) > this.cacheSize) {
            // Python leaves this DELETE uncommitted until its next commit (and loses it if it
            // closes first); we commit it with the insert so that no write lock lingers.
            db.prepare(
              'DELETE FROM nbsignatures WHERE id IN ' +
                '(SELECT id FROM nbsignatures ORDER BY last_seen DESC LIMIT -1 OFFSET ?)'
            ).run(Math.max(Math.trunc(0.75 * this.cacheSize), 1));
          }
        })
      )
    );
  }

  /**
   * Is the signature stored? A hit refreshes `last_seen`, as Python does on every check, unless
   * another process holds the write lock at that moment.
   */
  async checkSignature(digest: string, algorithm: string): Promise<boolean> {
    // After the writes asked for before it, as when every call ran at once.
    await this.writeTail;
    return this.withDatabase(db => {
      const found = db
        .prepare('SELECT id FROM nbsignatures WHERE algorithm = ? AND signature = ?')
        .get(algorithm, digest);
      if (found === undefined) return false;
      try {
        writeTransaction(db, () => refresh(db, digest, algorithm, pythonUtcIsoformat(this.now())));
        // A commit too: the next write of ours leaves the lock free after it (see `inTurn`).
        this.lastCommitAt = Date.now();
      } catch (error) {
        if (errorKind(error) !== 'busy') throw error;
      }
      return true;
    });
  }

  /** Delete every row with this signature. */
  async removeSignature(digest: string, algorithm: string): Promise<void> {
    await this.inTurn(() =>
      this.withDatabase(db =>
        writeTransaction(db, () => {
          db.prepare('DELETE FROM nbsignatures WHERE algorithm = ? AND signature = ?').run(
            algorithm,
            digest
          );
        })
      )
    );
  }

  /** Close the in-memory database if there is one; file databases are never left open. */
  async close(): Promise<void> {
    this.closed = true;
    this.memoryDb?.close();
    this.memoryDb = undefined;
  }

  /**
   * Run `work` on a freshly opened database, starting over while another process holds a lock
   * that it needs, with nbformat's recovery for a file that is not a database.
   */
  private async withDatabase<T>(work: (db: DatabaseSync) => T): Promise<T> {
    const started = Date.now();
    let delay = 1;
    let recovered = false;
    for (;;) {
      if (this.closed) throw new Error('The notebook signature store is closed');
      if (this.memoryDb) return work(this.memoryDb);
      try {
        return this.onFile(work);
      } catch (error) {
        const kind = errorKind(error);
        if (kind === 'corrupt' && !recovered) {
          recovered = true;
          this.recoverFromCorruption();
          continue;
        } else if (kind === 'cantopen') {
          this.fallBackToMemory(error);
          continue;
        } else if (kind !== 'busy') {
          throw error;
        }
      }
      const waited = Date.now() - started;
      if (waited >= this.busyTimeoutMs) throw new SignatureStoreBusyError(this.dbFile, waited);
      await sleep(Math.min(delay, this.busyTimeoutMs - waited));
      // Short polls: Python's transactions last milliseconds and we must catch the gaps.
      delay = Math.min(delay * 2, 20);
    }
  }

  /** Open the file (and its directory, 0700, if missing), make sure of the schema, run `work`. */
  private onFile<T>(work: (db: DatabaseSync) => T): T {
    try {
      fs.mkdirSync(path.dirname(this.dbFile), { recursive: true, mode: 0o700 });
    } catch {
      // Opening the database reports it, and is what decides about the in-memory fallback.
    }
    const db = openDatabase(this.dbFile);
    try {
      return work(db);
    } finally {
      // Rolls back whatever `work` left uncommitted.
      db.close();
    }
  }

  private recoverFromCorruption(): void {
    const backup = `${this.dbFile}.bak`;
    this.warn(
      `${this.dbFile} is not a readable SQLite database; it was moved to ${backup} and an ` +
        `empty one started, so notebooks trusted before are untrusted until signed again.`
    );
    try {
      try {
        fs.renameSync(this.dbFile, backup);
      } catch (error) {
        // Someone else (Python) moved it away first; the new file is theirs or ours to create.
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
      this.onFile(() => undefined);
    } catch (error) {
      if (errorKind(error) !== 'busy') this.fallBackToMemory(error);
    }
  }

  private fallBackToMemory(error: unknown): void {
    this.warn(
      `Failed to use the signatures database ${this.dbFile} (${String(error)}); ` +
        `using an in-memory signatures database for the remainder of this session.`
    );
    this.dbFile = ':memory:';
    this.openMemoryDatabase();
  }

  private openMemoryDatabase(): void {
    this.memoryDb = openDatabase(':memory:');
  }

  /**
   * Run writes one at a time, in call order, leaving the write lock free for a moment after
   * each commit before taking it again.
   *
   * #### Notes
   * Python's sqlite3 waits for a lock by sleeping and retrying (1 ms, growing to 100 ms between
   * tries) and never tells the holder it waits, while our writes follow each other as fast as
   * the disk commits: back to back, they could keep a Jupyter process from ever signing. A gap
   * of {@link COMMIT_GAP_MS} lets its retries land; the caching layer in front gathers the
   * signatures asked for meanwhile into the next commit, so no throughput is lost.
   */
  private async inTurn(write: () => Promise<void>): Promise<void> {
    const previous = this.writeTail;
    const done = Promise.withResolvers<void>();
    this.writeTail = done.promise;
    try {
      await previous;
      const wait = this.lastCommitAt + COMMIT_GAP_MS - Date.now();
      if (wait > 0) await sleep(wait);
      await write();
      this.lastCommitAt = Date.now();
    } finally {
      done.resolve();
    }
  }

  /** Settles when the last write asked for has (writes run one at a time, in call order). */
  private writeTail: Promise<void> = Promise.resolve();
  private lastCommitAt = 0;
  private readonly busyTimeoutMs: number;
  private readonly now: () => Date;
  private readonly warn: (message: string) => void;
  private memoryDb: DatabaseSync | undefined;
  private closed = false;
}

/** Options of {@link SQLiteSignatureStore}. */
export namespace SQLiteSignatureStore {
  export interface IOptions {
    /** The database file, or `:memory:` for a database that lives as long as the store. */
    dbFile: string;
    /** nbformat's `SQLiteSignatureStore.cache_size`; default 65535. */
    cacheSize?: number;
    /** How long to wait for another process's lock; default 5000 ms as Python's sqlite3. */
    busyTimeoutMs?: number;
    /** The clock for `last_seen`. */
    now?: () => Date;
    /** Where warnings go (database replaced or unusable); default `console.warn`. */
    warn?: (message: string) => void;
  }
}

/**
 * Open a database and make sure of nbformat's schema, as its `init_db` does on every connection.
 * With the table and index there, this only reads: it waits for no other process's transaction
 * unless that one is committing.
 */
function openDatabase(file: string): DatabaseSync {
  const db = new (loadSqlite().DatabaseSync)(file);
  try {
    db.exec(
      'CREATE TABLE IF NOT EXISTS nbsignatures (' +
        'id integer PRIMARY KEY AUTOINCREMENT, algorithm text, signature text, path text, ' +
        'last_seen timestamp);' +
        'CREATE INDEX IF NOT EXISTS algosig ON nbsignatures(algorithm, signature);'
    );
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

let sqlite: typeof import('node:sqlite') | undefined;

/**
 * `node:sqlite`, loaded by the first store that opens a database rather than by every importer of
 * this module. Node 22.13 to 23 call it experimental and print an `ExperimentalWarning` when it
 * loads (Node 24 does not); that one warning is dropped so that it never reaches the gateway's
 * log, and any other passes.
 */
function loadSqlite(): typeof import('node:sqlite') {
  if (sqlite) return sqlite;
  const emitWarning = process.emitWarning;
  process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    if (!isSqliteExperimentalWarning(warning, rest[0])) {
      (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
    }
  } as typeof process.emitWarning;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    sqlite = require('node:sqlite') as typeof import('node:sqlite');
  } finally {
    process.emitWarning = emitWarning;
  }
  return sqlite;
}

function isSqliteExperimentalWarning(warning: string | Error, typeOrOptions: unknown): boolean {
  const type =
    typeof typeOrOptions === 'string'
      ? typeOrOptions
      : ((typeOrOptions as { type?: string } | undefined)?.type ??
        (warning instanceof Error ? warning.name : 'Warning'));
  const message = typeof warning === 'string' ? warning : warning.message;
  return type === 'ExperimentalWarning' && /^SQLite is an experimental feature/.test(message);
}

/** Refresh `last_seen` of a known signature; false when it is unknown. */
function refresh(db: DatabaseSync, digest: string, algorithm: string, stamp: string): boolean {
  const { changes } = db
    .prepare('UPDATE nbsignatures SET last_seen = ? WHERE algorithm = ? AND signature = ?')
    .run(stamp, algorithm, digest);
  return Number(changes) > 0;
}

/**
 * Run `work` in a write transaction, taking the write lock first (so that it fails at once,
 * rather than half-way, when another process holds it); rolled back if anything fails, the
 * commit included.
 */
function writeTransaction<T>(db: DatabaseSync, work: () => T): T {
  db.exec('BEGIN IMMEDIATE');
  try {
    const result = work();
    db.exec('COMMIT');
    return result;
  } catch (error) {
    try {
      db.exec('ROLLBACK');
    } catch {
      // SQLite rolled back already; the error that got us here is the one worth reporting.
    }
    throw error;
  }
}

type ErrorKind = 'busy' | 'corrupt' | 'cantopen' | 'other';

/** What an error of `node:sqlite` means here, by SQLite's primary result code. */
function errorKind(error: unknown): ErrorKind {
  const code = (error as { errcode?: unknown } | null)?.errcode;
  if (typeof code !== 'number') return 'other';
  switch (code & 0xff) {
    case 5: // SQLITE_BUSY
    case 6: // SQLITE_LOCKED
      return 'busy';
    case 11: // SQLITE_CORRUPT
    case 26: // SQLITE_NOTADB
      return 'corrupt';
    case 14: // SQLITE_CANTOPEN
      return 'cantopen';
    default:
      return 'other';
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}
