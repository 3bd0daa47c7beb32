/**
 * The signature database as nbformat's `SQLiteSignatureStore` keeps it: schema, `last_seen` text,
 * refresh on hit, culling, corruption recovery and waiting for other writers.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Database } from 'node-sqlite3-wasm';
import {
  MemorySignatureStore,
  SQLiteSignatureStore,
  SignatureStoreBusyError,
  countLocksOnInode,
  foreignTransactionVisible,
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
  const db = new Database(file, { readOnly: true });
  try {
    return db.all('SELECT id, algorithm, signature, path, last_seen FROM nbsignatures ORDER BY id');
  } finally {
    db.close();
  }
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
    const db = new Database(dbFile, { readOnly: true });
    try {
      expect(db.all('PRAGMA table_info(nbsignatures)').map(c => [c.name, c.type, c.pk])).toEqual([
        ['id', 'INTEGER', 1],
        ['algorithm', 'TEXT', 0],
        ['signature', 'TEXT', 0],
        ['path', 'TEXT', 0],
        ['last_seen', 'timestamp', 0]
      ]);
      expect(db.all('PRAGMA index_info(algosig)').map(c => c.name)).toEqual([
        'algorithm',
        'signature'
      ]);
      // AUTOINCREMENT, as Python declares it, brings sqlite_sequence along.
      const tables = db.all("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
      expect(tables.map(t => t.name)).toEqual(['nbsignatures', 'sqlite_sequence']);
      // The rollback journal stays the default for everyone else; ours lives in memory.
      expect(db.get('PRAGMA journal_mode')?.journal_mode).toBe('delete');
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
    expect(rows(dbFile)[0].last_seen).toBe('2024-01-02T03:04:09.600000+00:00');
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

  it('waits for another node-sqlite3-wasm process holding its lock directory', async () => {
    const store = new SQLiteSignatureStore({ dbFile, busyTimeoutMs: 2000 });
    await store.storeSignature('d', 'sha256');
    fs.mkdirSync(`${dbFile}.lock`);
    const released = new Promise<void>(resolve =>
      setTimeout(() => {
        fs.rmdirSync(`${dbFile}.lock`);
        resolve();
      }, 150)
    );
    const started = Date.now();
    expect(await store.checkSignature('d', 'sha256')).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    await released;
    await store.close();
  });

  it('gives up with SignatureStoreBusyError after the busy timeout', async () => {
    const store = new SQLiteSignatureStore({ dbFile, busyTimeoutMs: 120 });
    await store.storeSignature('d', 'sha256');
    fs.mkdirSync(`${dbFile}.lock`);
    await expect(store.storeSignature('e', 'sha256')).rejects.toBeInstanceOf(
      SignatureStoreBusyError
    );
    fs.rmdirSync(`${dbFile}.lock`);
    expect(rows(dbFile).map(r => r.signature)).toEqual(['d']);
    await store.close();
  });

  it('never touches the database while a rollback journal exists, and stops waiting for a stale one', async () => {
    const warnings: string[] = [];
    const store = new SQLiteSignatureStore({
      dbFile,
      busyTimeoutMs: 150,
      warn: m => warnings.push(m)
    });
    await store.storeSignature('d', 'sha256');
    const before = fs.readFileSync(dbFile);
    fs.writeFileSync(`${dbFile}-journal`, Buffer.alloc(512, 0xd9));

    let started = Date.now();
    await expect(store.checkSignature('d', 'sha256')).rejects.toBeInstanceOf(
      SignatureStoreBusyError
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(warnings.join('\n')).toMatch(/crashed SQLite writer/);
    // The same journal again: no second wait, no second warning.
    started = Date.now();
    await expect(store.storeSignature('e', 'sha256')).rejects.toBeInstanceOf(
      SignatureStoreBusyError
    );
    expect(Date.now() - started).toBeLessThan(100);
    expect(warnings).toHaveLength(1);
    expect(fs.readFileSync(dbFile)).toEqual(before);

    // Once a native SQLite has replayed it (the journal is gone), everything works again.
    fs.rmSync(`${dbFile}-journal`);
    await store.storeSignature('e', 'sha256');
    expect(rows(dbFile).map(r => r.signature)).toEqual(['d', 'e']);
    await store.close();
  });

  it('removes a lock directory abandoned by a crashed process', async () => {
    const store = new SQLiteSignatureStore({ dbFile, busyTimeoutMs: 1000, staleLockMs: 50 });
    await store.storeSignature('d', 'sha256');
    fs.mkdirSync(`${dbFile}.lock`);
    const old = new Date(Date.now() - 60_000);
    fs.utimesSync(`${dbFile}.lock`, old, old);
    expect(await store.checkSignature('d', 'sha256')).toBe(true);
    expect(fs.existsSync(`${dbFile}.lock`)).toBe(false);
    await store.close();
  });

  it('keeps a :memory: database for the life of the store', async () => {
    const store = new SQLiteSignatureStore({ dbFile: ':memory:' });
    await store.storeSignature('d', 'sha256');
    expect(await store.checkSignature('d', 'sha256')).toBe(true);
    await store.close();
  });
});

describe('foreign transaction detection', () => {
  it('counts /proc/locks entries on an inode, whatever the device', () => {
    const table = [
      '1: POSIX  ADVISORY  WRITE 6979 fe:00:9988470 1073741825 1073741825',
      '2: POSIX  ADVISORY  READ 6979 fe:00:9988470 1073741826 1073742335',
      '3: -> POSIX  ADVISORY  WRITE 7000 00:2e:9988470 1073741824 1073741824',
      '4: FLOCK  ADVISORY  WRITE 12 fe:00:99884700 0 EOF',
      '5: OFDLCK ADVISORY  READ  -1 00:05:123 0 EOF',
      ''
    ].join('\n');
    expect(countLocksOnInode(table, 9988470)).toBe(3);
    expect(countLocksOnInode(table, 123)).toBe(1);
    expect(countLocksOnInode(table, 998847)).toBe(0);
  });

  it('sees nothing on a missing or idle database', async () => {
    expect(foreignTransactionVisible(dbFile)).toBe(false);
    const store = new SQLiteSignatureStore({ dbFile });
    await store.storeSignature('d', 'sha256');
    expect(foreignTransactionVisible(dbFile)).toBe(false);
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
