import { CachingSignatureStore } from '../../src/contents/trust/cachingStore';
import { MemorySignatureStore, type ISignatureStore } from '../../src/contents/trust/signatureStore';

/** A store that counts the calls reaching it. */
class CountingStore implements ISignatureStore {
  readonly inner = new MemorySignatureStore();
  calls = { store: 0, check: 0, remove: 0 };
  async storeSignature(digest: string, algorithm: string) {
    this.calls.store++;
    await this.inner.storeSignature(digest, algorithm);
  }
  async checkSignature(digest: string, algorithm: string) {
    this.calls.check++;
    return this.inner.checkSignature(digest, algorithm);
  }
  async removeSignature(digest: string, algorithm: string) {
    this.calls.remove++;
    await this.inner.removeSignature(digest, algorithm);
  }
  async close() {}
}

describe('CachingSignatureStore', () => {
  it('trusts a new signature at once and writes it to the database in one batch', async () => {
    const database = new CountingStore();
    const store = new CachingSignatureStore(database, { flushDelayMs: 10_000 });
    await store.storeSignature('aa', 'sha256');
    await store.storeSignature('aa', 'sha256');
    await store.storeSignature('bb', 'sha256');
    expect(await store.checkSignature('aa', 'sha256')).toBe(true);
    expect(database.calls).toEqual({ store: 0, check: 0, remove: 0 });
    await store.close();
    expect(database.calls.store).toBe(2);
    expect(await database.inner.checkSignature('bb', 'sha256')).toBe(true);
  });

  it('flushes by itself after the delay', async () => {
    const database = new CountingStore();
    const store = new CachingSignatureStore(database, { flushDelayMs: 5 });
    await store.storeSignature('cc', 'sha256');
    await new Promise(resolve => setTimeout(resolve, 50));
    expect(await database.inner.checkSignature('cc', 'sha256')).toBe(true);
    await store.close();
  });

  it('asks the database once for a signature it finds there', async () => {
    const database = new CountingStore();
    await database.inner.storeSignature('dd', 'sha256');
    const store = new CachingSignatureStore(database);
    expect(await store.checkSignature('dd', 'sha256')).toBe(true);
    expect(await store.checkSignature('dd', 'sha256')).toBe(true);
    expect(database.calls.check).toBe(1);
  });

  it('believes a miss only for the negative TTL, so trust given elsewhere is seen', async () => {
    const database = new CountingStore();
    const store = new CachingSignatureStore(database, { negativeTtlMs: 20 });
    expect(await store.checkSignature('ee', 'sha256')).toBe(false);
    await database.inner.storeSignature('ee', 'sha256');
    expect(await store.checkSignature('ee', 'sha256')).toBe(false);
    await new Promise(resolve => setTimeout(resolve, 40));
    expect(await store.checkSignature('ee', 'sha256')).toBe(true);
    expect(database.calls.check).toBe(2);
  });

  it('forgets a removed signature everywhere', async () => {
    const database = new CountingStore();
    const store = new CachingSignatureStore(database, { flushDelayMs: 10_000 });
    await store.storeSignature('ff', 'sha256');
    await store.removeSignature('ff', 'sha256');
    expect(await store.checkSignature('ff', 'sha256')).toBe(false);
    await store.close();
    expect(database.calls.store).toBe(0);
  });
});
