import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CachingSignatureStore } from '../../src/contents/trust/cachingStore';
import {
  MemorySignatureStore,
  type ISignature,
  type ISignatureStore
} from '../../src/contents/trust/signatureStore';

/** A store that counts the calls reaching it and touches a file on each write, like SQLite. */
class CountingStore implements ISignatureStore {
  constructor(private readonly dbFile: string) {
    fs.writeFileSync(dbFile, '0');
  }
  readonly inner = new MemorySignatureStore();
  calls = { store: 0, check: 0, remove: 0, commits: 0 };
  /** While set, commits wait for it (a slow disk); a rejection fails them. */
  gate: Promise<void> | undefined;
  async storeSignature(digest: string, algorithm: string) {
    await this.storeSignatures([{ digest, algorithm }]);
  }
  async storeSignatures(signatures: readonly ISignature[]) {
    this.calls.commits++;
    await this.gate;
    for (const { digest, algorithm } of signatures) {
      this.calls.store++;
      await this.inner.storeSignature(digest, algorithm);
    }
    this.touch();
  }
  async checkSignature(digest: string, algorithm: string) {
    this.calls.check++;
    return this.inner.checkSignature(digest, algorithm);
  }
  async removeSignature(digest: string, algorithm: string) {
    this.calls.remove++;
    await this.inner.removeSignature(digest, algorithm);
    this.touch();
  }
  /** Another process writing the database. */
  touch() {
    fs.appendFileSync(this.dbFile, '+');
  }
  async close() {}
}

describe('CachingSignatureStore', () => {
  let dbFile: string;
  beforeEach(() => {
    dbFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'caching-store-')), 'nbsignatures.db');
  });

  it('writes a new signature through once, then answers it from memory', async () => {
    const database = new CountingStore(dbFile);
    const store = new CachingSignatureStore(database, dbFile);
    await store.storeSignature('aa', 'sha256');
    expect(await database.inner.checkSignature('aa', 'sha256')).toBe(true);
    await store.storeSignature('aa', 'sha256');
    expect(await store.checkSignature('aa', 'sha256')).toBe(true);
    expect(database.calls).toEqual({ store: 1, check: 0, remove: 0, commits: 1 });
  });

  it('asks the database once for a signature it finds there', async () => {
    const database = new CountingStore(dbFile);
    await database.inner.storeSignature('dd', 'sha256');
    const store = new CachingSignatureStore(database, dbFile);
    expect(await store.checkSignature('dd', 'sha256')).toBe(true);
    expect(await store.checkSignature('dd', 'sha256')).toBe(true);
    expect(database.calls.check).toBe(1);
  });

  it('remembers a miss only until the database file changes', async () => {
    const database = new CountingStore(dbFile);
    const store = new CachingSignatureStore(database, dbFile);
    expect(await store.checkSignature('ee', 'sha256')).toBe(false);
    expect(await store.checkSignature('ee', 'sha256')).toBe(false);
    expect(database.calls.check).toBe(1);
    // Another process trusts it: the file changes, and the next check sees it.
    await database.inner.storeSignature('ee', 'sha256');
    database.touch();
    expect(await store.checkSignature('ee', 'sha256')).toBe(true);
    expect(database.calls.check).toBe(2);
  });

  it('forgets a removed signature', async () => {
    const database = new CountingStore(dbFile);
    const store = new CachingSignatureStore(database, dbFile);
    await store.storeSignature('ff', 'sha256');
    await store.removeSignature('ff', 'sha256');
    expect(await store.checkSignature('ff', 'sha256')).toBe(false);
    expect(database.calls.remove).toBe(1);
  });

  it('commits the signatures of saves that arrive together once', async () => {
    const database = new CountingStore(dbFile);
    const cache = new CachingSignatureStore(database, dbFile);
    await Promise.all(Array.from({ length: 10 }, (_, i) => cache.storeSignature(`d${i}`, 'a')));
    expect(database.calls).toMatchObject({ commits: 1, store: 10 });
    for (let i = 0; i < 10; i++) {
      await expect(database.inner.checkSignature(`d${i}`, 'a')).resolves.toBe(true);
    }
  });

  it('gathers the signatures asked for during a commit into the next one', async () => {
    const database = new CountingStore(dbFile);
    const cache = new CachingSignatureStore(database, dbFile);
    const slow = Promise.withResolvers<void>();
    database.gate = slow.promise;
    const first = cache.storeSignature('first', 'a');
    await new Promise(resolve => setImmediate(resolve));
    expect(database.calls.commits).toBe(1);
    const later = Array.from({ length: 5 }, (_, i) => cache.storeSignature(`later${i}`, 'a'));
    database.gate = undefined;
    slow.resolve();
    await Promise.all([first, ...later]);
    expect(database.calls).toMatchObject({ commits: 2, store: 6 });
  });

  it('trusts a signature stored soon at once, and flushed() waits for its commit', async () => {
    const database = new CountingStore(dbFile);
    const cache = new CachingSignatureStore(database, dbFile);
    const slow = Promise.withResolvers<void>();
    database.gate = slow.promise;
    const written = cache.storeSignatureSoon('soon', 'a');
    await expect(cache.checkSignature('soon', 'a')).resolves.toBe(true);
    expect(database.calls.check).toBe(0);
    let flushed = false;
    const flushing = cache.flushed().then(() => (flushed = true));
    await new Promise(resolve => setTimeout(resolve, 20));
    expect(flushed).toBe(false);
    await expect(database.inner.checkSignature('soon', 'a')).resolves.toBe(false);
    slow.resolve();
    await written;
    await flushing;
    await expect(database.inner.checkSignature('soon', 'a')).resolves.toBe(true);
  });

  it('stops trusting a signature stored soon whose commit failed', async () => {
    const database = new CountingStore(dbFile);
    const cache = new CachingSignatureStore(database, dbFile);
    database.gate = Promise.reject(new Error('database is locked'));
    database.gate.catch(() => undefined);
    await expect(cache.storeSignatureSoon('lost', 'a')).rejects.toThrow('database is locked');
    database.gate = undefined;
    await expect(cache.checkSignature('lost', 'a')).resolves.toBe(false);
    expect(database.calls.check).toBe(1);
  });

  it('removes a signature only after its write on the way has landed', async () => {
    const database = new CountingStore(dbFile);
    const cache = new CachingSignatureStore(database, dbFile);
    const slow = Promise.withResolvers<void>();
    database.gate = slow.promise;
    void cache.storeSignatureSoon('gone', 'a');
    const removing = cache.removeSignature('gone', 'a');
    slow.resolve();
    await removing;
    await expect(database.inner.checkSignature('gone', 'a')).resolves.toBe(false);
    await expect(cache.checkSignature('gone', 'a')).resolves.toBe(false);
  });
});
