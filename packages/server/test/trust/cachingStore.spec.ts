import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CachingSignatureStore } from '../../src/contents/trust/cachingStore';
import {
  MemorySignatureStore,
  type ISignatureStore
} from '../../src/contents/trust/signatureStore';

/** A store that counts the calls reaching it and touches a file on each write, like SQLite. */
class CountingStore implements ISignatureStore {
  constructor(private readonly dbFile: string) {
    fs.writeFileSync(dbFile, '0');
  }
  readonly inner = new MemorySignatureStore();
  calls = { store: 0, check: 0, remove: 0 };
  async storeSignature(digest: string, algorithm: string) {
    this.calls.store++;
    await this.inner.storeSignature(digest, algorithm);
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
    expect(database.calls).toEqual({ store: 1, check: 0, remove: 0 });
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
});
