import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Database } from 'node-sqlite3-wasm';

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
  /** Is the signature known? A hit counts as a use and refreshes it, as in nbformat. */
  checkSignature(digest: string, algorithm: string): Promise<boolean>;
  /** Forget a signature; forgetting an unknown one is not an error. */
  removeSignature(digest: string, algorithm: string): Promise<void>;
  /** Release what the store holds; it must not be used afterwards. */
  close(): Promise<void>;
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
 * SQLite here is WebAssembly (`node-sqlite3-wasm`). Its file layer cannot take the POSIX
 * byte-range locks that every native SQLite, Python's included, coordinates with; it locks by
 * creating a `<db>.lock` directory, which only other node-sqlite3-wasm processes see. It also
 * never replays a hot journal (its "is a reserved lock held?" test sees its own lock directory),
 * so it reads a half-written database as if it were whole. Left alone the two sides corrupt each
 * other: our writes land in the middle of Python's transactions and truncate its `-journal`, and
 * Python "recovers" our journal while we are still committing. So this store:
 *
 * - opens the database for one short synchronous transaction per operation and closes it again,
 *   so nothing of ours is held between operations, and a database that Python deletes
 *   (`jupyter trust --reset`) or renames (corruption recovery) is picked up at once instead of
 *   being written through an orphaned handle;
 * - right before beginning and again right before committing, looks for a Python transaction:
 *   a `-journal` file, or on Linux any lock on the file in `/proc/locks`. If there is one it
 *   waits (up to `busyTimeoutMs`, 5 s as Python's sqlite3) and starts over; a check that already
 *   has its answer returns it and only skips refreshing `last_seen`;
 * - keeps its own rollback journal in memory (`journal_mode=MEMORY`), so that there is never a
 *   journal of ours for Python to find.
 *
 * What remains is a window of microseconds per operation in which a Python process that starts
 * a transaction right then can read pages we are writing (it gets a transient "malformed"
 * error). A journal left by a crashed Python blocks us until a native SQLite replays it; after
 * the first timeout we stop waiting for that same journal and fail at once.
 */
export class SQLiteSignatureStore implements ISignatureStore {
  /** @param options - the database file (or `:memory:`) and tuning. */
  constructor(options: SQLiteSignatureStore.IOptions) {
    this.dbFile = options.dbFile;
    this.cacheSize = options.cacheSize ?? DEFAULT_CACHE_SIZE;
    this.busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    this.staleLockMs = options.staleLockMs ?? 10_000;
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
    await this.withDatabase(false, db => {
      const stamp = pythonUtcIsoformat(this.now());
      if (!refresh(db, digest, algorithm, stamp)) {
        db.run('INSERT INTO nbsignatures (algorithm, signature, last_seen) VALUES (?, ?, ?)', [
          algorithm,
          digest,
          stamp
        ]);
      }
      const row = db.get('SELECT count(*) AS n FROM nbsignatures');
      if (Number(row?.n) > this.cacheSize) {
        // Python leaves this DELETE uncommitted until its next commit (and loses it if it closes
        // first); we commit it with the insert so that no write lock lingers.
        db.run(
          'DELETE FROM nbsignatures WHERE id IN ' +
            '(SELECT id FROM nbsignatures ORDER BY last_seen DESC LIMIT -1 OFFSET ?)',
          [Math.max(Math.trunc(0.75 * this.cacheSize), 1)]
        );
      }
    });
  }

  /** Is the signature stored? A hit refreshes `last_seen`, as Python does on every check. */
  async checkSignature(digest: string, algorithm: string): Promise<boolean> {
    return this.withDatabase(true, db =>
      refresh(db, digest, algorithm, pythonUtcIsoformat(this.now()))
    );
  }

  /** Delete every row with this signature. */
  async removeSignature(digest: string, algorithm: string): Promise<void> {
    await this.withDatabase(false, db => {
      db.run('DELETE FROM nbsignatures WHERE algorithm = ? AND signature = ?', [algorithm, digest]);
    });
  }

  /** Close the in-memory database if there is one; file databases are never left open. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.memoryDb?.isOpen) this.memoryDb.close();
    this.memoryDb = undefined;
  }

  /**
   * Run `work` in one transaction on a freshly opened database, once no other process is inside
   * one, with nbformat's recovery for a file that is not a database. With `writeIsOptional` the
   * answer stands even when the commit has to be abandoned.
   */
  private async withDatabase<T>(writeIsOptional: boolean, work: (db: Database) => T): Promise<T> {
    const started = Date.now();
    let delay = 1;
    let corruptSeen = 0;
    for (;;) {
      if (this.closed) throw new Error('The notebook signature store is closed');
      if (this.memoryDb) return transaction(this.memoryDb, work, () => false, false);
      const stuck = this.stuckJournal();
      if (stuck) throw new SignatureStoreBusyError(this.dbFile, 0);
      try {
        return this.onFile(work, writeIsOptional);
      } catch (error) {
        const kind = classify(error);
        if (kind === 'corrupt' && ++corruptSeen >= 3) {
          this.recoverFromCorruption();
          continue;
        } else if (kind === 'corrupt') {
          // A read racing a Python commit can look corrupt, and moving a live database away
          // would split the two sides; so believe it only when it persists.
          delay = Math.max(delay, 50);
        } else if (kind === 'cantopen') {
          this.fallBackToMemory(error);
          continue;
        } else if (kind === 'busy') {
          this.removeStaleLock();
        } else {
          throw error;
        }
      }
      const waited = Date.now() - started;
      if (waited >= this.busyTimeoutMs) {
        this.noteStuckJournal();
        throw new SignatureStoreBusyError(this.dbFile, waited);
      }
      await sleep(Math.min(delay, this.busyTimeoutMs - waited));
      // Short polls: Python's transactions last milliseconds and we must catch the gaps.
      delay = Math.min(delay * 2, 20);
    }
  }

  private onFile<T>(work: (db: Database) => T, writeIsOptional: boolean): T {
    try {
      fs.mkdirSync(path.dirname(this.dbFile), { recursive: true, mode: 0o700 });
    } catch {
      // Opening the database reports it, and is what decides about the in-memory fallback.
    }
    // Opening touches no page; the check just before BEGIN keeps the unguarded gap tiny.
    const db = openDatabase(this.dbFile);
    try {
      if (foreignTransactionVisible(this.dbFile)) throw new ForeignActivity('database is locked');
      db.exec('PRAGMA journal_mode=MEMORY');
      return transaction(db, work, () => foreignTransactionVisible(this.dbFile), writeIsOptional);
    } finally {
      db.close();
    }
  }

  /**
   * A journal that nobody holds a lock for (crash leftover) and that already made us time out:
   * waiting for it again would only slow every request down until Python replays it.
   */
  private stuckJournal(): boolean {
    if (this.stuckJournalId === undefined) return false;
    if (journalIdentity(this.dbFile) === this.stuckJournalId) return true;
    this.stuckJournalId = undefined;
    return false;
  }

  private noteStuckJournal(): void {
    const id = journalIdentity(this.dbFile);
    if (id === undefined || this.stuckJournalId === id) return;
    const inode = fileInode(this.dbFile);
    const locks = inode === undefined ? null : locksOnInode(inode);
    // With a lock visible it is a live (if long) transaction; keep waiting for it next time.
    if (locks !== null && locks > 0) return;
    this.stuckJournalId = id;
    this.warn(
      `${this.dbFile}-journal looks left over by a crashed SQLite writer; notebook trust is ` +
        `unavailable until a native SQLite opens the database and rolls it back ` +
        `(for example: python -c "import sqlite3; sqlite3.connect('${this.dbFile}').execute('SELECT 1')").`
    );
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
      this.onFile(() => undefined, false);
    } catch (error) {
      this.fallBackToMemory(error);
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
   * A crashed node-sqlite3-wasm process leaves its `<db>.lock` directory behind and would block
   * every other one forever; our transactions last microseconds, so an old one is abandoned.
   */
  private removeStaleLock(): void {
    const lock = `${this.dbFile}.lock`;
    try {
      if (Date.now() - fs.statSync(lock).mtimeMs > this.staleLockMs) fs.rmdirSync(lock);
    } catch {
      // Gone already, or not ours to remove: keep waiting.
    }
  }

  private readonly busyTimeoutMs: number;
  private readonly staleLockMs: number;
  private readonly now: () => Date;
  private readonly warn: (message: string) => void;
  private memoryDb: Database | undefined;
  private stuckJournalId: string | undefined;
  private closed = false;
}

/** Options of {@link SQLiteSignatureStore}. */
export namespace SQLiteSignatureStore {
  export interface IOptions {
    /** The database file, or `:memory:` for a database that lives as long as the store. */
    dbFile: string;
    /** nbformat's `SQLiteSignatureStore.cache_size`; default 65535. */
    cacheSize?: number;
    /** How long to wait for another process's transaction; default 5000 ms as Python's sqlite3. */
    busyTimeoutMs?: number;
    /** Age after which another Node process's `<db>.lock` directory counts as abandoned. */
    staleLockMs?: number;
    /** The clock for `last_seen`. */
    now?: () => Date;
    /** Where warnings go (database replaced or unusable); default `console.warn`. */
    warn?: (message: string) => void;
  }
}

/**
 * Open a node-sqlite3-wasm database, loading the module on first use. Requiring it instantiates
 * SQLite's WebAssembly memory (about 19 MB, which V8 counts as external memory and answers with
 * extra full garbage collections), so it is loaded only by a thread that really opens a database:
 * the gateway imports this module for its types and errors and keeps the database in a worker
 * (see `WorkerSignatureStore`).
 */
function openDatabase(file: string): Database {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const sqlite = require('node-sqlite3-wasm') as typeof import('node-sqlite3-wasm');
  return new sqlite.Database(file);
}

/** Refresh `last_seen` of a known signature; false when it is unknown. */
function refresh(db: Database, digest: string, algorithm: string, stamp: string): boolean {
  const found = db.get('SELECT id FROM nbsignatures WHERE algorithm = ? AND signature = ?', [
    algorithm,
    digest
  ]);
  if (found === null) return false;
  db.run('UPDATE nbsignatures SET last_seen = ? WHERE algorithm = ? AND signature = ?', [
    stamp,
    algorithm,
    digest
  ]);
  return true;
}

/** Thrown to abandon an attempt because another process is inside a transaction. */
class ForeignActivity extends Error {}

/**
 * One write transaction that first makes sure the schema exists (as nbformat's `init_db` does on
 * every connection), and commits only if `interfered()` still says no other process is active.
 * Otherwise it rolls back and, unless `keepResult`, throws so that the caller starts over.
 */
function transaction<T>(
  db: Database,
  work: (db: Database) => T,
  interfered: () => boolean,
  keepResult: boolean
): T {
  db.exec('BEGIN IMMEDIATE');
  try {
    db.exec(
      'CREATE TABLE IF NOT EXISTS nbsignatures (' +
        'id integer PRIMARY KEY AUTOINCREMENT, algorithm text, signature text, path text, ' +
        'last_seen timestamp)'
    );
    db.exec('CREATE INDEX IF NOT EXISTS algosig ON nbsignatures(algorithm, signature)');
    const result = work(db);
    if (interfered()) {
      db.exec('ROLLBACK');
      if (keepResult) return result;
      throw new ForeignActivity('database is locked');
    }
    db.exec('COMMIT');
    return result;
  } finally {
    try {
      if (db.inTransaction) db.exec('ROLLBACK');
    } catch {
      // The error that got us here is the one worth reporting.
    }
  }
}

type ErrorKind = 'busy' | 'corrupt' | 'cantopen' | 'other';

/** node-sqlite3-wasm reports SQLite's message only, so classify by it. */
function classify(error: unknown): ErrorKind {
  if (error instanceof ForeignActivity) return 'busy';
  const message = error instanceof Error ? error.message : String(error);
  if (/database is locked|database table is locked/i.test(message)) return 'busy';
  if (/file is not a database|database disk image is malformed/i.test(message)) return 'corrupt';
  if (/could not open the database|unable to open database file/i.test(message)) return 'cantopen';
  return 'other';
}

/**
 * Does another process (a native SQLite such as Python's) look to be inside a transaction on
 * `dbFile`? Its rollback journal shows on every platform; on Linux its POSIX locks also show in
 * `/proc/locks`, which covers readers and the moment before a writer creates its journal. A
 * journal nobody holds a lock for is a crashed writer's; we cannot replay it, so it counts too.
 */
export function foreignTransactionVisible(dbFile: string): boolean {
  if (fs.existsSync(`${dbFile}-journal`)) return true;
  const inode = fileInode(dbFile);
  if (inode === undefined) return false;
  const locks = locksOnInode(inode);
  return locks !== null && locks > 0;
}

function fileInode(file: string): number | undefined {
  try {
    return fs.statSync(file).ino;
  } catch {
    return undefined;
  }
}

/** Identifies one particular journal file, so that a new one is not mistaken for a stuck one. */
function journalIdentity(dbFile: string): string | undefined {
  try {
    const stat = fs.statSync(`${dbFile}-journal`);
    return `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
  } catch {
    return undefined;
  }
}

let procLocksReadable = process.platform === 'linux';

/** How many `/proc/locks` entries name this inode; null when the kernel table is not readable. */
function locksOnInode(inode: number): number | null {
  if (!procLocksReadable) return null;
  let table: string;
  try {
    table = fs.readFileSync('/proc/locks', 'latin1');
  } catch {
    procLocksReadable = false;
    return null;
  }
  return countLocksOnInode(table, inode);
}

/**
 * Count the lines of a `/proc/locks` table that lock the given inode number. The device part is
 * ignored on purpose: overlay file systems report another device there than `stat` does, and a
 * lock on an unrelated file with the same inode number only makes us wait.
 */
export function countLocksOnInode(table: string, inode: number): number {
  let count = 0;
  const wanted = String(inode);
  for (const line of table.split('\n')) {
    const match = /\s[0-9a-f]+:[0-9a-f]+:(\d+)\s/i.exec(line);
    if (match && match[1] === wanted) count++;
  }
  return count;
}

function sleep(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}
