import type { ISignatureStore } from './signatureStore';

/**
 * A signature store in front of the shared SQLite database that keeps the database off the
 * request path.
 *
 * #### Notes
 * The SQLite store works synchronously and costs several milliseconds per call (locks shared
 * with Python, fsync), which would dominate small saves and opens. This layer:
 * - answers known-trusted signatures from memory (a bounded LRU), so reopening a notebook we
 *   signed or already found costs nothing;
 * - remembers a miss for `negativeTtlMs`, so a notebook another process trusts
 *   (`jupyter trust`, stock Jupyter) is seen as trusted after at most that long;
 * - batches new signatures and writes them shortly after the save, once per batch. A signature
 *   is trusted by us at once; Python sees it once the batch is written (at most `flushDelayMs`
 *   later, and always before `close()` returns).
 * Skipped on a memory hit: refreshing `last_seen`, which only orders Python's culling.
 */
export class CachingSignatureStore implements ISignatureStore {
  constructor(
    private readonly inner: ISignatureStore,
    options: CachingSignatureStore.IOptions = {}
  ) {
    this.maxEntries = options.maxEntries ?? 4096;
    this.negativeTtlMs = options.negativeTtlMs ?? 1000;
    this.flushDelayMs = options.flushDelayMs ?? 250;
    this.warn = options.warn ?? (message => console.warn(message));
  }

  async storeSignature(digest: string, algorithm: string): Promise<void> {
    const key = `${algorithm}:${digest}`;
    this.remember(key);
    this.pending.set(key, { digest, algorithm });
    this.flushTimer ??= setTimeout(() => void this.flush(), this.flushDelayMs);
  }

  async checkSignature(digest: string, algorithm: string): Promise<boolean> {
    const key = `${algorithm}:${digest}`;
    if (this.trusted.has(key)) {
      this.remember(key);
      return true;
    }
    const missedAt = this.misses.get(key);
    if (missedAt !== undefined && Date.now() - missedAt < this.negativeTtlMs) return false;
    const known = await this.inner.checkSignature(digest, algorithm);
    if (known) {
      this.misses.delete(key);
      this.remember(key);
    } else {
      this.misses.set(key, Date.now());
      if (this.misses.size > this.maxEntries) this.misses.delete(this.misses.keys().next().value!);
    }
    return known;
  }

  async removeSignature(digest: string, algorithm: string): Promise<void> {
    const key = `${algorithm}:${digest}`;
    this.trusted.delete(key);
    this.pending.delete(key);
    await this.inner.removeSignature(digest, algorithm);
  }

  /** Write the signatures waiting for the database. */
  async flush(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const batch = [...this.pending.values()];
    this.pending.clear();
    this.flushing = this.flushing.then(async () => {
      for (const { digest, algorithm } of batch) {
        try {
          await this.inner.storeSignature(digest, algorithm);
        } catch (error) {
          this.warn(`could not record a notebook signature: ${(error as Error).message}`);
        }
      }
    });
    await this.flushing;
  }

  async close(): Promise<void> {
    await this.flush();
    await this.inner.close();
  }

  private remember(key: string): void {
    this.trusted.delete(key);
    this.trusted.set(key, true);
    if (this.trusted.size > this.maxEntries) this.trusted.delete(this.trusted.keys().next().value!);
  }

  private readonly trusted = new Map<string, true>();
  private readonly misses = new Map<string, number>();
  private readonly pending = new Map<string, { digest: string; algorithm: string }>();
  private flushTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private readonly maxEntries: number;
  private readonly negativeTtlMs: number;
  private readonly flushDelayMs: number;
  private readonly warn: (message: string) => void;
}

export namespace CachingSignatureStore {
  export interface IOptions {
    /** Signatures kept in memory (default 4096). */
    maxEntries?: number;
    /** How long a miss is believed (default 1000 ms). */
    negativeTtlMs?: number;
    /** How long new signatures wait to be written together (default 250 ms). */
    flushDelayMs?: number;
    /** Where write failures go (default `console.warn`). */
    warn?: (message: string) => void;
  }
}
