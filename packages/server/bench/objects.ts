/**
 * What the archive benchmarks read back from the object store (MinIO): listings of keys and
 * versions, objects, and a poller that notices new versions as soon as they are listed.
 */
import {
  GetObjectCommand,
  ListObjectVersionsCommand,
  ListObjectsV2Command,
  type ObjectVersion,
  type S3Client
} from '@aws-sdk/client-s3';
import { sleep } from './harness';

/** A listing or read that takes longer fails the benchmark. */
const REQUEST_TIMEOUT_MS = 30_000;

/** `<prefix>/<apiPath>`: the object key the gateway archives an API path to. */
export function objectKeyOf(prefix: string, apiPath: string): string {
  return `${prefix}/${apiPath}`;
}

/** Every version below `prefix` (newest first per key, as S3 lists them). */
export async function listVersions(
  client: S3Client,
  bucket: string,
  prefix: string
): Promise<ObjectVersion[]> {
  const versions: ObjectVersion[] = [];
  let keyMarker: string | undefined;
  let versionIdMarker: string | undefined;
  for (;;) {
    const page = await client.send(
      new ListObjectVersionsCommand({
        Bucket: bucket,
        Prefix: prefix,
        KeyMarker: keyMarker,
        VersionIdMarker: versionIdMarker
      }),
      { abortSignal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }
    );
    versions.push(...(page.Versions ?? []));
    if (!page.IsTruncated) return versions;
    keyMarker = page.NextKeyMarker;
    versionIdMarker = page.NextVersionIdMarker;
  }
}

/** The number of versions of each key below `prefix`. */
export async function versionCounts(
  client: S3Client,
  bucket: string,
  prefix: string
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const version of await listVersions(client, bucket, prefix)) {
    if (version.Key !== undefined) counts.set(version.Key, (counts.get(version.Key) ?? 0) + 1);
  }
  return counts;
}

/** Every key below `prefix` (`ListObjectsV2`, all pages). */
export async function listKeys(client: S3Client, bucket: string, prefix = ''): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
      { abortSignal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }
    );
    for (const object of page.Contents ?? []) if (object.Key !== undefined) keys.push(object.Key);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
  return keys;
}

/** The bytes of an object (its latest version, or the one named). */
export async function readObject(
  client: S3Client,
  bucket: string,
  key: string,
  versionId?: string
): Promise<Buffer> {
  const output = await client.send(
    new GetObjectCommand({ Bucket: bucket, Key: key, VersionId: versionId }),
    { abortSignal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }
  );
  return Buffer.from((await output.Body?.transformToByteArray()) ?? new Uint8Array());
}

/**
 * Watches keys with writes outstanding: every `intervalMs` it lists the versions of each such
 * key (one `ListObjectVersions` per key, all at once) and resolves the waits whose version
 * count has been reached with the time (`clock()`) the listing's answer arrived.
 */
export class VersionPoller {
  /**
   * @param timeoutMs - a wait not resolved after this long is rejected.
   * @param clock - the time source of the resolved values (default `performance.now`).
   */
  constructor(
    private readonly _client: S3Client,
    private readonly _bucket: string,
    private readonly _intervalMs: number,
    private readonly _timeoutMs: number,
    private readonly _clock: () => number = () => performance.now()
  ) {}

  /** Round trips of the listings, ms. */
  readonly rtts: number[] = [];

  /** Version id → the clock's time of the first listing that showed it. */
  readonly firstSeen = new Map<string, number>();

  /** Resolve with the clock's time once `key` has at least `count` versions. */
  expect(key: string, count: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const waiting = this._waiting.get(key) ?? [];
      waiting.push({ count, resolve, reject, since: performance.now() });
      this._waiting.set(key, waiting);
    });
  }

  start(): void {
    this._running = true;
    this._loop = this._run();
  }

  async stop(): Promise<void> {
    this._running = false;
    await this._loop;
  }

  private async _run(): Promise<void> {
    while (this._running) {
      const tick = performance.now();
      await Promise.all([...this._waiting.keys()].map(key => this._poll(key)));
      await sleep(this._intervalMs - (performance.now() - tick));
    }
  }

  private async _poll(key: string): Promise<void> {
    const sent = performance.now();
    let versions: ObjectVersion[];
    try {
      const page = await this._client.send(
        new ListObjectVersionsCommand({ Bucket: this._bucket, Prefix: key }),
        { abortSignal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }
      );
      versions = (page.Versions ?? []).filter(version => version.Key === key);
      if (page.IsTruncated) throw new Error(`${key}: more than one page of versions`);
    } catch (error) {
      for (const waiter of this._waiting.get(key) ?? []) waiter.reject(error as Error);
      this._waiting.delete(key);
      return;
    }
    const received = performance.now();
    const at = this._clock();
    this.rtts.push(received - sent);
    for (const version of versions) {
      if (version.VersionId !== undefined && !this.firstSeen.has(version.VersionId)) {
        this.firstSeen.set(version.VersionId, at);
      }
    }
    const waiting = this._waiting.get(key) ?? [];
    const left = waiting.filter(waiter => {
      if (waiter.count <= versions.length) {
        waiter.resolve(at);
        return false;
      }
      if (received - waiter.since > this._timeoutMs) {
        waiter.reject(new Error(`${key}: no version ${waiter.count} after ${this._timeoutMs} ms`));
        return false;
      }
      return true;
    });
    if (left.length === 0) this._waiting.delete(key);
    else this._waiting.set(key, left);
  }

  private readonly _waiting = new Map<
    string,
    Array<{
      count: number;
      since: number;
      resolve: (at: number) => void;
      reject: (error: Error) => void;
    }>
  >();
  private _running = false;
  private _loop: Promise<void> = Promise.resolve();
}
