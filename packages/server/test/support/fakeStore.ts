import { createHash } from 'node:crypto';
import type { ILifecycleRule } from '../../src/storage/lifecycle';
import {
  ObjectStoreError,
  type IKeyVersion,
  type IObjectStore,
  type IObjectSummary,
  type IObjectVersion,
  type IObjectVersionPage
} from '../../src/storage/objectStore';

/** An in-memory versioned store whose next calls can be made to fail. */
export class FakeStore implements IObjectStore {
  readonly description = 'fake';
  readonly versions = new Map<
    string,
    Array<{
      id: string;
      body: Buffer;
      metadata: Record<string, string>;
      /** The SHA-256 the put was sent with, as an S3 server keeps it (the version's checksum). */
      sha256?: string;
      deleteMarker?: boolean;
      /** When it was written, as the server's `LastModified`. */
      at: Date;
    }>
  >();
  /** Flip a byte of the next put's body in transit, as a faulty network or disk would. */
  corruptNextBody = false;
  /** Errors thrown by the next put calls, in order. */
  failPuts: ObjectStoreError[] = [];
  /** When set, every call fails with it. */
  down: ObjectStoreError | undefined;
  /** When set, puts succeed on the server but the caller sees this error (a lost answer). */
  loseNextAnswer: ObjectStoreError | undefined;
  bucketVersioning: 'Enabled' | 'Suspended' | 'Disabled' = 'Enabled';
  puts = 0;
  active = 0;
  maxActive = 0;
  private counter = 0;

  async put(
    _bucket: string,
    key: string,
    body: Buffer,
    options?: { metadata?: Record<string, string>; sha256?: string }
  ) {
    this.puts++;
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    try {
      await new Promise(resolve => setTimeout(resolve, 2));
      if (this.down) throw this.down;
      const failure = this.failPuts.shift();
      if (failure) throw failure;
      const received = Buffer.from(body);
      if (this.corruptNextBody) {
        this.corruptNextBody = false;
        received[0] ^= 0xff;
      }
      // As S3 servers do: a body that does not match the SHA-256 sent with it is refused.
      const sha256 = options?.sha256;
      if (sha256 !== undefined && createHash('sha256').update(received).digest('hex') !== sha256) {
        throw new ObjectStoreError('bad-request', 'the body does not match', 'BadDigest');
      }
      const id = `v${++this.counter}`;
      const list = this.versions.get(key) ?? [];
      list.push({ id, body: received, metadata: { ...options?.metadata }, sha256, at: new Date() });
      this.versions.set(key, list);
      if (this.loseNextAnswer) {
        const lost = this.loseNextAnswer;
        this.loseNextAnswer = undefined;
        throw lost;
      }
      return { versionId: id };
    } finally {
      this.active--;
    }
  }

  async deleteObject(_bucket: string, key: string) {
    if (this.down) throw this.down;
    const id = `v${++this.counter}`;
    const list = this.versions.get(key) ?? [];
    list.push({ id, body: Buffer.alloc(0), metadata: {}, deleteMarker: true, at: new Date() });
    this.versions.set(key, list);
    return { versionId: id };
  }

  async get(): Promise<never> {
    throw new Error('not used');
  }

  async putVersionTags(): Promise<never> {
    throw new Error('not used');
  }

  async getVersionTags(): Promise<never> {
    throw new Error('not used');
  }

  async copyVersion(): Promise<never> {
    throw new Error('not used');
  }

  /** The bucket's lifecycle rules, as the last put left them. */
  lifecycleRules: ILifecycleRule[] = [];

  async getLifecycleRules(): Promise<ILifecycleRule[]> {
    if (this.down) throw this.down;
    return [...this.lifecycleRules];
  }

  async putLifecycleRules(_bucket: string, rules: readonly ILifecycleRule[]): Promise<void> {
    if (this.down) throw this.down;
    this.lifecycleRules = [...rules];
  }

  async head(_bucket: string, key: string) {
    if (this.down) throw this.down;
    const latest = this.versions.get(key)?.at(-1);
    if (!latest || latest.deleteMarker) {
      throw new ObjectStoreError('not-found', 'no such key', 'NoSuchKey');
    }
    return {
      versionId: latest.id,
      size: latest.body.length,
      lastModified: null,
      metadata: latest.metadata
    };
  }

  async listVersions(): Promise<IObjectVersion[]> {
    return [];
  }

  async listVersionPage(): Promise<IObjectVersionPage> {
    return { versions: [] };
  }

  async *listLatest(_bucket: string, prefix: string): AsyncIterable<IObjectSummary> {
    if (this.down) throw this.down;
    for (const [key, list] of this.versions) {
      const latest = list.at(-1);
      if (!key.startsWith(prefix) || !latest || latest.deleteMarker) continue;
      yield {
        key,
        size: latest.body.length,
        etag: `"${createHash('md5').update(latest.body).digest('hex')}"`,
        lastModified: latest.at
      };
    }
  }

  async *listAllVersions(_bucket: string, prefix: string): AsyncIterable<IKeyVersion> {
    if (this.down) throw this.down;
    for (const [key, list] of this.versions) {
      if (!key.startsWith(prefix)) continue;
      for (const [index, version] of [...list].reverse().entries()) {
        yield {
          key,
          versionId: version.id,
          lastModified: version.at,
          size: version.body.length,
          isLatest: index === 0,
          ...(version.deleteMarker ? { deleteMarker: true } : {})
        };
      }
    }
  }

  /** The bodies of a key's versions, oldest first, with `null` for delete markers. */
  history(key: string): Array<string | null> {
    return (this.versions.get(key) ?? []).map(version =>
      version.deleteMarker ? null : version.body.toString('utf8')
    );
  }

  async checkBucket() {
    if (this.down) throw this.down;
    return { versioning: this.bucketVersioning };
  }

  async close(): Promise<void> {}
}
