import { statSync } from 'node:fs';
import type { ISignature, ISignatureStore } from './signatureStore';

/**
 * A signature store in front of the shared SQLite database that answers repeated questions from
 * memory while staying exactly consistent with other processes (stock Jupyter, `jupyter trust`).
 *
 * #### Notes
 * The SQLite store works synchronously and costs milliseconds per call (locks shared with
 * Python, fsync), which would dominate opening and saving small notebooks. This layer:
 * - answers known-trusted signatures from memory (a bounded LRU): a signature, once recorded,
 *   stays trusted until it is removed, here or by culling, which only drops long-unused ones;
 * - remembers a miss only while the database file is unchanged (same inode, size and times) and
 *   for at most `missTtlMs`, so trust granted by another process is seen on the next open;
 * - writes a new signature through before the save returns, so another process sees it at once,
 *   and skips the write for a signature already recorded;
 * - group-commits: the signatures asked for while a write is on its way are written together
 *   in the next transaction, so saves that arrive together share one commit (four fsyncs of
 *   SQLite's rollback journal) instead of queueing for one each;
 * - or, with {@link storeSignatureSoon}, trusts a signature in this process at once and commits
 *   it in the background, for a caller that keeps the signature durable elsewhere meanwhile (the
 *   archive journal) and can wait for {@link flushed} before it forgets it.
 * Skipped on a memory hit: refreshing `last_seen`, which only orders Python's culling.
 */
export class CachingSignatureStore implements ISignatureStore {
  /**
   * @param inner - the shared store.
   * @param dbFile - the database file whose changes invalidate remembered misses.
   */
  constructor(
    private readonly inner: ISignatureStore,
    private readonly dbFile: string,
    options: CachingSignatureStore.IOptions = {}
  ) {
    this.maxEntries = options.maxEntries ?? 4096;
    this.missTtlMs = options.missTtlMs ?? 2000;
  }

  async storeSignature(digest: string, algorithm: string): Promise<void> {
    const key = `${algorithm}:${digest}`;
    if (this.trusted.has(key) && !this.inFlight.has(key)) {
      this.remember(key);
      return;
    }
    await this.write(key, { digest, algorithm });
    this.misses.delete(key);
    this.remember(key);
  }

  /**
   * Trust the signature in this process at once, and write it in the next group commit.
   *
   * @returns the write: it resolves once the signature is committed (for other processes to see)
   *   and rejects if it could not be, in which case it is no longer trusted here either.
   */
  storeSignatureSoon(digest: string, algorithm: string): Promise<void> {
    const key = `${algorithm}:${digest}`;
    const wasTrusted = this.trusted.has(key);
    this.misses.delete(key);
    this.remember(key);
    if (wasTrusted) return this.inFlight.get(key) ?? Promise.resolve();
    return this.write(key, { digest, algorithm }).catch((error: unknown) => {
      this.trusted.delete(key);
      throw error;
    });
  }

  /** The signatures of each, in one commit. */
  async storeSignatures(signatures: readonly ISignature[]): Promise<void> {
    await Promise.all(
      signatures.map(({ digest, algorithm }) => this.storeSignature(digest, algorithm))
    );
  }

  /** Resolves once every write asked for so far has been committed or has failed. */
  async flushed(): Promise<void> {
    await Promise.allSettled([...this.inFlight.values()]);
  }

  async checkSignature(digest: string, algorithm: string): Promise<boolean> {
    const key = `${algorithm}:${digest}`;
    if (this.trusted.has(key)) {
      this.remember(key);
      return true;
    }
    const stamp = this.databaseStamp();
    const miss = this.misses.get(key);
    if (stamp !== undefined && miss?.stamp === stamp && Date.now() - miss.at < this.missTtlMs) {
      return false;
    }
    const known = await this.inner.checkSignature(digest, algorithm);
    if (known) {
      this.misses.delete(key);
      this.remember(key);
    } else {
      // The check itself may have written (it refreshes last_seen on hits only), so stamp after.
      const after = this.databaseStamp();
      if (after !== undefined) this.bounded(this.misses).set(key, { stamp: after, at: Date.now() });
    }
    return known;
  }

  async removeSignature(digest: string, algorithm: string): Promise<void> {
    const key = `${algorithm}:${digest}`;
    // A write still on its way must not land after the removal and trust the notebook again.
    await this.inFlight.get(key)?.catch(() => undefined);
    this.trusted.delete(key);
    await this.inner.removeSignature(digest, algorithm);
  }

  async close(): Promise<void> {
    await this.flushed();
    await this.inner.close();
  }

  /** Queue a write for the next commit (or join the one already queued for this signature). */
  private write(key: string, signature: ISignature): Promise<void> {
    const queued = this.inFlight.get(key);
    if (queued) return queued;
    this.batch.set(key, signature);
    if (!this.batchDone) {
      this.batchDone = Promise.withResolvers<void>();
      // The promise is also what every caller awaits; nobody may see it reject unhandled.
      this.batchDone.promise.catch(() => undefined);
    }
    const written = this.batchDone.promise;
    this.inFlight.set(key, written);
    void written
      .catch(() => undefined)
      .finally(() => {
        if (this.inFlight.get(key) === written) this.inFlight.delete(key);
      });
    if (!this.committing) this.committing = this.commitBatches();
    return written;
  }

  /**
   * Commit queued signatures, one batch per transaction, until none is left. The first batch
   * starts on the next turn of the event loop, so the saves of one burst go in together.
   */
  private async commitBatches(): Promise<void> {
    await new Promise(resolve => setImmediate(resolve));
    while (this.batchDone) {
      const done = this.batchDone;
      const signatures = [...this.batch.values()];
      this.batch = new Map();
      this.batchDone = undefined;
      try {
        await this.inner.storeSignatures(signatures);
        done.resolve();
      } catch (error) {
        done.reject(error);
      }
    }
    this.committing = undefined;
  }

  /** Identifies the database file's current content; undefined when it can't be read. */
  private databaseStamp(): string | undefined {
    try {
      const stats = statSync(this.dbFile, { bigint: true });
      return `${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;
    } catch {
      return undefined;
    }
  }

  private remember(key: string): void {
    this.trusted.delete(key);
    this.bounded(this.trusted).set(key, true);
  }

  private bounded<V>(map: Map<string, V>): Map<string, V> {
    if (map.size >= this.maxEntries) map.delete(map.keys().next().value as string);
    return map;
  }

  private readonly trusted = new Map<string, true>();
  private readonly misses = new Map<string, { stamp: string; at: number }>();
  private readonly inFlight = new Map<string, Promise<void>>();
  private batch = new Map<string, ISignature>();
  private batchDone: PromiseWithResolvers<void> | undefined;
  private committing: Promise<void> | undefined;
  private readonly missTtlMs: number;
  private readonly maxEntries: number;
}

export namespace CachingSignatureStore {
  export interface IOptions {
    /** Signatures (and misses) kept in memory (default 4096 each). */
    maxEntries?: number;
    /**
     * The longest a miss is remembered even with the file unchanged (default 2000 ms): file
     * timestamps are coarse, and a same-size write within one tick would not change the stamp.
     */
    missTtlMs?: number;
  }
}
