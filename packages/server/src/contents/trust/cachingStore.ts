import { statSync } from 'node:fs';
import type { ISignatureStore } from './signatureStore';

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
 *   and skips the write for a signature already recorded.
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
    if (!this.trusted.has(key)) await this.inner.storeSignature(digest, algorithm);
    this.misses.delete(key);
    this.remember(key);
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
    this.trusted.delete(`${algorithm}:${digest}`);
    await this.inner.removeSignature(digest, algorithm);
  }

  async close(): Promise<void> {
    await this.inner.close();
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
