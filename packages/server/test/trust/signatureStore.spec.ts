/**
 * The signature database as nbformat's `SQLiteSignatureStore` keeps it: schema, `last_seen` text,
 * refresh on hit, culling, corruption recovery, and SQLite's locks and journal shared with other
 * connections (here another connection of this process; Python's in notary.itest.ts).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import {
  MemorySignatureStore,
  SQLiteSignatureStore,
  SignatureStoreBusyError,
  pythonUtcIsoformat
} from '../../src/contents/trust';

let tmp: string;
let dbFile: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trust-store-'));
  dbFile = path.join(tmp, 'nbsignatures.db');
});
afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A clock that advances one second per reading, from a fixed start. */
function steppingClock(start = Date.UTC(2024, 0, 2, 3, 4, 5, 600)): () => Date {
  let t = start;
  return () => new Date((t += 1000));
}

function rows(file: string): Record<string, unknown>[] {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    return db
      .prepare('SELECT id, algorithm, signature, path, last_seen FROM nbsignatures ORDER BY id')
      .all()
      .map(row => ({ ...row }));
  } finally {
    db.close();
  }
}

/**
 * Another connection holding a transaction on the database (`BEGIN IMMEDIATE`: others may still
 * read; `BEGIN EXCLUSIVE`: nobody else may even read), as a busy Python would, until `release`.
 */
function holdLock(file: string, mode: 'IMMEDIATE' | 'EXCLUSIVE'): { release: () => void } {
  const db = new DatabaseSync(file);
  db.exec(`BEGIN ${mode}`);
  db.prepare(
    "UPDATE nbsignatures SET path = 'held' WHERE id = (SELECT min(id) FROM nbsignatures)"
  ).run();
  return {
    release: () => {
      db.exec('COMMIT');
      db.close();
    }
  };
}

describe('pythonUtcIsoformat', () => {
  it('writes datetime.isoformat() of an aware UTC datetime', () => {
    expect(pythonUtcIsoformat(new Date(Date.UTC(2024, 4, 6, 7, 8, 9, 123)))).toBe(
      '2024-05-06T07:08:09.123000+00:00'
    );
    expect(pythonUtcIsoformat(new Date(Date.UTC(2024, 4, 6, 7, 8, 9, 1)))).toBe(
      '2024-05-06T07:08:09.001000+00:00'
    );
    // Python leaves out a zero fraction altogether.
    expect(pythonUtcIsoformat(new Date(Date.UTC(2024, 4, 6, 7, 8, 9, 0)))).toBe(
      '2024-05-06T07:08:09+00:00'
    );
  });
});

describe('SQLiteSignatureStore', () => {
  it('creates the same table and index as nbformat', async () => {
    const store = new SQLiteSignatureStore({ dbFile });
    expect(await store.checkSignature('abc', 'sha256')).toBe(false);
    const db = new DatabaseSync(dbFile, { readOnly: true });
    try {
      const all = (sql: string) => db.prepare(sql).all();
      expect(all('PRAGMA table_info(nbsignatures)').map(c => [c.name, c.type, c.pk])).toEqual([
        ['id', 'INTEGER', 1],
        ['algorithm', 'TEXT', 0],
        ['signature', 'TEXT', 0],
        ['path', 'TEXT', 0],
        ['last_seen', 'timestamp', 0]
      ]);
      expect(all('PRAGMA index_info(algosig)').map(c => c.name)).toEqual([
        'algorithm',
        'signature'
      ]);
      // AUTOINCREMENT, as Python declares it, brings sqlite_sequence along.
      const tables = all("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
      expect(tables.map(t => t.name)).toEqual(['nbsignatures', 'sqlite_sequence']);
      // The default rollback journal, as Python's; never WAL, which would stick to the file.
      expect(db.prepare('PRAGMA journal_mode').get()?.journal_mode).toBe('delete');
      expect(fs.existsSync(`${dbFile}-journal`)).toBe(false);
    } finally {
      db.close();
    }
    await store.close();
  });

  it('inserts with a Python last_seen, refreshes it on check and on re-store', async () => {
    const now = steppingClock();
    const store = new SQLiteSignatureStore({ dbFile, now });
    await store.storeSignature('d1', 'sha256');
    expect(rows(dbFile)).toEqual([
      {
        id: 1,
        algorithm: 'sha256',
        signature: 'd1',
        path: null,
        last_seen: '2024-01-02T03:04:06.600000+00:00'
      }
    ]);
    expect(await store.checkSignature('d1', 'sha256')).toBe(true);
    expect(rows(dbFile)[0].last_seen).toBe('2024-01-02T03:04:07.600000+00:00');
    // Same digest under another algorithm is another signature.
    expect(await store.checkSignature('d1', 'sha512')).toBe(false);
    await store.storeSignature('d1', 'sha256');
    expect(rows(dbFile)).toHaveLength(1);
    // The clock is read when a row is written, so not for the miss.
    expect(rows(dbFile)[0].last_seen).toBe('2024-01-02T03:04:08.600000+00:00');
    await store.removeSignature('d1', 'sha256');
    await store.removeSignature('never-stored', 'sha256');
    expect(rows(dbFile)).toEqual([]);
    await store.close();
  });

  it('culls down to the 75% most recently seen once over cache_size', async () => {
    const store = new SQLiteSignatureStore({ dbFile, cacheSize: 8, now: steppingClock() });
    for (let i = 0; i < 8; i++) await store.storeSignature(`d${i}`, 'sha256');
    expect(rows(dbFile)).toHaveLength(8);
    // Seeing d0 makes it recent again, so d1 is now the oldest.
    expect(await store.checkSignature('d0', 'sha256')).toBe(true);
    await store.storeSignature('d8', 'sha256');
    // 9 > 8: keep max(int(0.75 * 8), 1) = 6, by last_seen descending.
    expect(rows(dbFile).map(r => r.signature)).toEqual(['d0', 'd4', 'd5', 'd6', 'd7', 'd8']);
    await store.close();
  });

  it('keeps at least one row when the cache is tiny', async () => {
    const store = new SQLiteSignatureStore({ dbFile, cacheSize: 1, now: steppingClock() });
    await store.storeSignature('a', 'sha256');
    await store.storeSignature('b', 'sha256');
    expect(rows(dbFile).map(r => r.signature)).toEqual(['b']);
    await store.close();
  });

  it('replaces a file that is not a database, keeping it as .bak, as nbformat does', async () => {
    fs.writeFileSync(dbFile, 'this is not a database '.repeat(100));
    const warnings: string[] = [];
    const store = new SQLiteSignatureStore({ dbFile, warn: m => warnings.push(m) });
    await store.storeSignature('d', 'sha256');
    expect(fs.readFileSync(`${dbFile}.bak`, 'utf8')).toMatch(/^this is not a database/);
    expect(rows(dbFile).map(r => r.signature)).toEqual(['d']);
    expect(warnings.join('\n')).toMatch(/moved to .*nbsignatures\.db\.bak/);
    expect(store.dbFile).toBe(dbFile);
    await store.close();
  });

  it('falls back to memory for the session when the file cannot be opened', async () => {
    fs.writeFileSync(path.join(tmp, 'blocker'), '');
    const warnings: string[] = [];
    const store = new SQLiteSignatureStore({
      dbFile: path.join(tmp, 'blocker', 'nbsignatures.db'),
      warn: m => warnings.push(m)
    });
    await store.storeSignature('d', 'sha256');
    expect(await store.checkSignature('d', 'sha256')).toBe(true);
    expect(store.dbFile).toBe(':memory:');
    expect(warnings.join('\n')).toMatch(/in-memory/);
    await store.close();
    await expect(store.checkSignature('d', 'sha256')).rejects.toThrow(/closed/);
  });

  it('waits for a write transaction of another connection, then stores', async () => {
    const store = new SQLiteSignatureStore({ dbFile, busyTimeoutMs: 2000 });
    await store.storeSignature('d', 'sha256');
    const lock = holdLock(dbFile, 'IMMEDIATE');
    setTimeout(() => lock.release(), 150);
    const started = Date.now();
    await store.storeSignature('e', 'sha256');
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    expect(rows(dbFile).map(r => [r.signature, r.path])).toEqual([
      ['d', 'held'],
      ['e', null]
    ]);
    await store.close();
  });

  it('answers a check during a write transaction of another connection, without refreshing', async () => {
    const store = new SQLiteSignatureStore({ dbFile, busyTimeoutMs: 2000, now: steppingClock() });
    await store.storeSignature('d', 'sha256');
    const before = rows(dbFile)[0].last_seen;
    const lock = holdLock(dbFile, 'IMMEDIATE');
    try {
      const started = Date.now();
      expect(await store.checkSignature('d', 'sha256')).toBe(true);
      expect(await store.checkSignature('x', 'sha256')).toBe(false);
      expect(Date.now() - started).toBeLessThan(100);
    } finally {
      lock.release();
    }
    // The write lock was taken, so last_seen (which only orders culling) stayed as it was.
    expect(rows(dbFile)[0].last_seen).toBe(before);
    expect(await store.checkSignature('d', 'sha256')).toBe(true);
    expect(rows(dbFile)[0].last_seen).not.toBe(before);
    await store.close();
  });

  it('waits for BEGIN EXCLUSIVE of another connection even to read', async () => {
    const store = new SQLiteSignatureStore({ dbFile, busyTimeoutMs: 2000 });
    await store.storeSignature('d', 'sha256');
    const lock = holdLock(dbFile, 'EXCLUSIVE');
    setTimeout(() => lock.release(), 150);
    const started = Date.now();
    expect(await store.checkSignature('d', 'sha256')).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    await store.close();
  });

  it('gives up with SignatureStoreBusyError after the busy timeout, without blocking the event loop', async () => {
    const store = new SQLiteSignatureStore({ dbFile, busyTimeoutMs: 300 });
    await store.storeSignature('d', 'sha256');
    const lock = holdLock(dbFile, 'EXCLUSIVE');
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 10);
    try {
      const started = Date.now();
      const error = await store.storeSignature('e', 'sha256').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SignatureStoreBusyError);
      expect(error).toMatchObject({ dbFile });
      expect((error as SignatureStoreBusyError).waitedMs).toBeGreaterThanOrEqual(300);
      expect(Date.now() - started).toBeLessThan(2000);
      await expect(store.checkSignature('d', 'sha256')).rejects.toBeInstanceOf(
        SignatureStoreBusyError
      );
      // The waits were timers, not SQLite sleeping in this thread.
      expect(ticks).toBeGreaterThanOrEqual(20);
    } finally {
      clearInterval(ticker);
      lock.release();
    }
    expect(rows(dbFile).map(r => r.signature)).toEqual(['d']);
    expect(await store.checkSignature('d', 'sha256')).toBe(true);
    await store.close();
  });

  it('rolls back the journal of a writer that died mid-transaction, as any SQLite does', async () => {
    const store = new SQLiteSignatureStore({ dbFile });
    await store.storeSignature('d', 'sha256');
    const before = rows(dbFile);
    // A process that dies in the middle of a large write: a hot journal and a half-written file.
    const crash = spawnSync(
      process.execPath,
      [
        '-e',
        String.raw`
          const { DatabaseSync } = require('node:sqlite');
          const db = new DatabaseSync(process.argv[1]);
          db.exec('PRAGMA cache_size=2');
          db.exec('BEGIN');
          db.exec("INSERT INTO nbsignatures (algorithm, signature, last_seen) SELECT 'sha256', " +
            "hex(randomblob(200)), '2000-01-01T00:00:00+00:00' FROM (WITH RECURSIVE c(n) AS " +
            "(SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5000) SELECT n FROM c)");
          process.kill(process.pid, 'SIGKILL');
        `,
        dbFile
      ],
      { encoding: 'utf8' }
    );
    expect([crash.signal, crash.stderr]).toEqual(['SIGKILL', '']);
    expect(fs.existsSync(`${dbFile}-journal`)).toBe(true);

    expect(await store.checkSignature('d', 'sha256')).toBe(true);
    expect(fs.existsSync(`${dbFile}-journal`)).toBe(false);
    expect(rows(dbFile).map(r => r.signature)).toEqual(before.map(r => r.signature));
    const db = new DatabaseSync(dbFile, { readOnly: true });
    expect(db.prepare('PRAGMA integrity_check').get()?.integrity_check).toBe('ok');
    db.close();
    await store.close();
  });

  it('starts a new database when the file is deleted between calls (jupyter trust --reset)', async () => {
    const store = new SQLiteSignatureStore({ dbFile });
    await store.storeSignature('d', 'sha256');
    fs.rmSync(dbFile);
    expect(await store.checkSignature('d', 'sha256')).toBe(false);
    await store.storeSignature('e', 'sha256');
    expect(rows(dbFile).map(r => r.signature)).toEqual(['e']);
    await store.close();
  });

  it('keeps a :memory: database for the life of the store', async () => {
    const store = new SQLiteSignatureStore({ dbFile: ':memory:' });
    await store.storeSignature('d', 'sha256');
    expect(await store.checkSignature('d', 'sha256')).toBe(true);
    await store.close();
  });
});

describe('MemorySignatureStore', () => {
  it('drops the least recently used quarter once full, as nbformat', async () => {
    const store = new MemorySignatureStore(8);
    for (let i = 0; i < 7; i++) await store.storeSignature(`d${i}`, 'sha256');
    expect(await store.checkSignature('d0', 'sha256')).toBe(true);
    // Reaching 8 entries culls 8 // 4 = 2 of the least recently used: d1 and d2.
    await store.storeSignature('d7', 'sha256');
    const present = [];
    for (let i = 0; i < 8; i++) present.push(await store.checkSignature(`d${i}`, 'sha256'));
    expect(present).toEqual([true, false, false, true, true, true, true, true]);
    await store.removeSignature('d0', 'sha256');
    expect(await store.checkSignature('d0', 'sha256')).toBe(false);
    expect(await store.checkSignature('d3', 'sha512')).toBe(false);
  });
});
