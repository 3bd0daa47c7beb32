import { displayable } from './keys';
import type { ILifecycleRule } from './lifecycle';
import { ObjectStoreError } from './objectStoreError';
/**
 * One interface over the object stores jupyter-store writes to: S3 and S3-compatible servers
 * (through the AWS SDK) and the embedded local versioned store. Every write creates a new
 * immutable version; reads can name one.
 */

/** What a successful put returns. */
export interface IPutResult {
  /** The id of the version just written; null only on a bucket without versioning. */
  readonly versionId: string | null;
  readonly etag?: string;
}

/** What {@link IObjectStore.put} may be told besides the bytes. */
export interface IPutOptions {
  readonly contentType?: string;
  readonly metadata?: Record<string, string>;
  /**
   * The body's SHA-256, hex, when the caller has it already (the archive journal keeps it with
   * every record). The store then checks the body against it instead of hashing it again: an S3
   * server stores it as the object's checksum and refuses a body that does not match (so does
   * the embedded store), so what arrives is exactly the bytes that were hashed.
   */
  readonly sha256?: string;
}

/** What {@link IObjectStore.copyVersion} gives the copy: its metadata replace the source's. */
export interface ICopyOptions {
  readonly metadata: Record<string, string>;
  readonly contentType?: string;
}

/** An object read whole (notebooks and clones are small enough for that). */
export interface IObject {
  readonly body: Buffer;
  readonly versionId: string | null;
  readonly lastModified: Date | null;
  readonly contentType?: string;
  /** User metadata (`x-amz-meta-*`), keys in lower case. */
  readonly metadata: Readonly<Record<string, string>>;
}

/** An object's description without its body. */
export interface IObjectHead {
  readonly versionId: string | null;
  readonly size: number;
  readonly lastModified: Date | null;
  readonly etag?: string;
  readonly metadata: Readonly<Record<string, string>>;
}

/** What a delete returns. */
export interface IDeleteResult {
  /**
   * The id of the delete marker the key now ends with; null on a bucket without versioning, and
   * where the server wrote no marker (see {@link IObjectStore.deleteObject}).
   */
  readonly versionId: string | null;
}

/** One version of a key, as a version listing shows it. */
export interface IObjectVersion {
  readonly versionId: string;
  readonly lastModified: Date;
  /** 0 for a delete marker. */
  readonly size: number;
  /** True for the newest entry of the key, whether a version or a delete marker. */
  readonly isLatest: boolean;
  /**
   * True for a delete marker: the entry a delete left, which hides the key without removing its
   * versions. Listed only when asked for (`includeDeleteMarkers`).
   */
  readonly deleteMarker?: boolean;
}

/** One page of a key's version listing (see {@link IObjectStore.listVersionPage}). */
export interface IObjectVersionPage {
  /** At most the `limit` asked for, newest first. */
  readonly versions: IObjectVersion[];
  /**
   * Where the next page starts: give it as `after` to list the entries that follow. Undefined
   * when no entry of the key follows these.
   */
  readonly next?: string;
}

/** What {@link IObjectStore.listVersionPage} lists. */
export interface IVersionPageOptions {
  /** The most entries returned, from 1. */
  readonly limit: number;
  /** The `next` of the page before; left out for the first page. */
  readonly after?: string;
  /** List delete markers too (they then count towards `limit`). */
  readonly includeDeleteMarkers?: boolean;
}

/** What {@link IObjectStore.get} may be told. */
export interface IGetOptions {
  /**
   * The most bytes of body to accept. A larger object is refused with a `too-large` error as
   * soon as that is known: from the announced length, or once more than this many bytes have
   * arrived, whereupon the read is stopped (its request aborted). At most this many bytes plus
   * one chunk of the transfer are ever held.
   */
  readonly maxBytes?: number;
}

/** A key whose latest version is an object (not a delete marker), as a listing shows it. */
export interface IObjectSummary {
  readonly key: string;
  readonly size: number;
  /** As `head()` reports it: quoted. */
  readonly etag?: string;
  readonly lastModified: Date;
}

/** One entry of a prefix-wide version listing: a version or a delete marker, with its key. */
export interface IKeyVersion extends IObjectVersion {
  readonly key: string;
}

/** The operation of a `listAllVersions` call, for messages: names the prefix when there is one. */
export function listAllVersionsOperation(prefix: string): string {
  return prefix === ''
    ? 'list every version in'
    : `list every version below "${displayable(prefix)}" of`;
}

/** What a bucket check found. */
export interface IBucketCheck {
  /** `Enabled`, `Suspended`, or `Disabled` when versioning was never turned on. */
  readonly versioning: 'Enabled' | 'Suspended' | 'Disabled';
}

// Its own module, so that `keys.ts` (which this module uses) can raise it without a cycle.
export { ObjectStoreError, type ObjectStoreErrorKind } from './objectStoreError';

/** What one call of a store addresses, for its error messages. */
export interface IStoreTarget {
  readonly operation: string;
  readonly bucket: string;
  readonly key?: string;
  readonly versionId?: string;
}

/** `s3://bucket/key`, `version "v" of s3://bucket/key`, or `bucket "b"`, log-safe. */
export function describeStoreTarget(target: IStoreTarget): string {
  if (target.key === undefined) return `bucket "${displayable(target.bucket)}"`;
  const where = displayable(`s3://${target.bucket}/${target.key}`);
  return target.versionId === undefined
    ? where
    : `version "${displayable(target.versionId)}" of ${where}`;
}

/** The operation of a `listLatest` call, for messages: names the prefix when there is one. */
export function listLatestOperation(prefix: string): string {
  return prefix === ''
    ? 'list the objects of'
    : `list the objects below "${displayable(prefix)}" of`;
}

/** A read of `target` refused or stopped because the version is over `maxBytes`. */
export function tooLargeError(target: IStoreTarget, maxBytes: number): ObjectStoreError {
  return new ObjectStoreError(
    'too-large',
    `Could not read ${describeStoreTarget(target)}: it is larger than the ${maxBytes} bytes ` +
      'allowed (TooLarge)',
    'TooLarge'
  );
}

/** A SHA-256 given to `put`: 64 hex digits (another value is a programming error). */
export function checkSha256(sha256: string): string {
  if (!/^[0-9a-f]{64}$/i.test(sha256)) {
    throw new RangeError(`A SHA-256 must be 64 hex digits, not "${displayable(sha256)}"`);
  }
  return sha256.toLowerCase();
}

/** Why a put was refused whose body does not match the SHA-256 given with it. */
export const CHECKSUM_MISMATCH_REASON = 'the body does not match the SHA-256 it was sent with';

/** The refusal of a body whose bytes do not match the SHA-256 given with it. */
export function checksumMismatchError(target: IStoreTarget, code: string): ObjectStoreError {
  return new ObjectStoreError(
    'bad-request',
    `Could not ${target.operation} ${describeStoreTarget(target)}: ${CHECKSUM_MISMATCH_REASON} (${code})`,
    code
  );
}

/** The `limit` of a version page, checked (a positive integer), as every store takes it. */
export function checkVersionPageLimit(limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new RangeError(`A version page limit must be a positive integer, not ${limit}`);
  }
  return limit;
}

/** The most tags a version may have, as S3 allows. */
export const MAX_VERSION_TAGS = 10;

/**
 * Tags as `putVersionTags` takes them, checked: at most {@link MAX_VERSION_TAGS}, keys of 1 to
 * 128 characters and values of at most 256 (another value is a programming error).
 */
export function checkVersionTags(
  tags: Readonly<Record<string, string>>
): Readonly<Record<string, string>> {
  const entries = Object.entries(tags);
  if (entries.length > MAX_VERSION_TAGS) {
    throw new RangeError(`A version has at most ${MAX_VERSION_TAGS} tags, not ${entries.length}`);
  }
  for (const [name, value] of entries) {
    if (name.length < 1 || name.length > 128 || value.length > 256) {
      throw new RangeError(`Invalid tag "${displayable(name)}": keys 1-128, values 0-256 chars`);
    }
  }
  return tags;
}

/** An object store. Implementations must be safe for concurrent calls. */
export interface IObjectStore {
  /** How logs and feature detection name it: `s3://…` endpoint and region, or the local directory. */
  readonly description: string;

  /**
   * Write a new version of `key`.
   *
   * #### Notes
   * A body that does not match the `sha256` given fails as `bad-request` and writes nothing.
   */
  put(bucket: string, key: string, body: Buffer, options?: IPutOptions): Promise<IPutResult>;

  /** Read `key`, or one of its versions; with `maxBytes`, never more than that (see IGetOptions). */
  get(bucket: string, key: string, versionId?: string, options?: IGetOptions): Promise<IObject>;

  /** Describe `key`, or one of its versions, without reading it. */
  head(bucket: string, key: string, versionId?: string): Promise<IObjectHead>;

  /**
   * Hide `key` behind a new delete marker (S3 DeleteObject without a version id).
   *
   * #### Notes
   * On a versioned bucket nothing is removed: every earlier version stays readable by its id,
   * and a later put makes the key visible again. Reads of the key without a version id, and reads
   * naming the marker's own id, then fail as `not-found`. Deleting a key that does not exist
   * succeeds. Servers differ in what it leaves: S3 and the embedded store add a marker every time;
   * MinIO adds none for a key without versions (the answer's id is then null) and none on top of
   * a marker (it answers with that marker's id); versitygw adds none for a key without versions.
   */
  deleteObject(bucket: string, key: string): Promise<IDeleteResult>;

  /**
   * Every version of exactly `key` (not of keys it prefixes), newest first.
   *
   * #### Notes
   * Delete markers are left out unless `includeDeleteMarkers` is set, so callers that only read
   * versions need not know about them. `isLatest` is the store's: when a delete marker is the
   * newest entry, no listed version is the latest.
   */
  listVersions(
    bucket: string,
    key: string,
    options?: { includeDeleteMarkers?: boolean }
  ): Promise<IObjectVersion[]>;

  /**
   * One page of the versions of exactly `key`, newest first: at most `limit` entries, and where
   * the next page starts.
   *
   * #### Notes
   * Paging resumes after the last entry returned, so versions written meanwhile (which are newer)
   * never shift a later page: every version that existed when the first page was read is listed
   * once, in order. `isLatest` is as in {@link listVersions}. A page may hold fewer than `limit`
   * entries although more follow (a store bounds the work of one call), but `next` is then set.
   */
  listVersionPage(
    bucket: string,
    key: string,
    options: IVersionPageOptions
  ): Promise<IObjectVersionPage>;

  /**
   * Replace the tags of one version of `key` (S3 PutObjectTagging). Tags are the one thing of a
   * version that can change: its bytes and metadata never do.
   *
   * #### Notes
   * At most {@link MAX_VERSION_TAGS} tags; S3 limits keys to 128 characters and values to 256.
   * A version that does not exist, or a delete marker's id, fails as `not-found`.
   */
  putVersionTags(
    bucket: string,
    key: string,
    versionId: string,
    tags: Readonly<Record<string, string>>
  ): Promise<void>;

  /** The tags of one version of `key` (S3 GetObjectTagging); `{}` when it has none. */
  getVersionTags(bucket: string, key: string, versionId: string): Promise<Record<string, string>>;

  /**
   * Write a new version of `targetKey` holding the bytes of one version of `sourceKey`, copied
   * inside the store (S3 CopyObject naming the source version): nothing passes through the
   * caller. The copy gets `options.metadata` (and content type) in place of the source's.
   *
   * #### Notes
   * The copy is an object of its own: deleting or expiring the source version leaves it. A
   * source version that does not exist, or a delete marker's id, fails as `not-found`.
   */
  copyVersion(
    bucket: string,
    sourceKey: string,
    sourceVersionId: string,
    targetKey: string,
    options: ICopyOptions
  ): Promise<IPutResult>;

  /**
   * Every key that starts with `prefix` (a plain string prefix, as S3's ListObjectsV2 takes it;
   * empty for the whole bucket) and whose latest version is not a delete marker, with that
   * version's size, ETag and time.
   *
   * #### Notes
   * Pages are fetched as the caller iterates, so a bucket of any size never sits in memory whole.
   * The order is the store's: S3 servers list keys in UTF-8 byte order, the embedded store in an
   * order of its own.
   */
  listLatest(bucket: string, prefix: string): AsyncIterable<IObjectSummary>;

  /**
   * Every version and every delete marker of every key that starts with `prefix` (a plain string
   * prefix, as for {@link listLatest}), each with its key.
   *
   * #### Notes
   * Pages are fetched as the caller iterates (S3 ListObjectVersions resumed with KeyMarker and
   * VersionIdMarker), so a bucket of any size never sits in memory whole; its cost is one pass
   * over every entry below the prefix. The entries of one key come together, newest first, with
   * `isLatest` on the key's newest entry (a marker when the key is deleted); the order of the
   * keys is the store's (S3 servers: UTF-8 byte order, the embedded store an order of its own).
   * versitygw 1.7.0 lists a page's delete markers before its versions, so there a key's marker
   * may come before older versions: callers rely on `isLatest`, and on each kind being newest
   * first, not on how the two kinds interleave.
   */
  listAllVersions(bucket: string, prefix: string): AsyncIterable<IKeyVersion>;

  /**
   * The rules of the bucket's lifecycle configuration (S3 GetBucketLifecycleConfiguration), in
   * S3's shape; `[]` when it has none.
   *
   * #### Notes
   * A server that does not implement lifecycle configuration (versitygw) fails as
   * `not-supported`.
   */
  getLifecycleRules(bucket: string): Promise<ILifecycleRule[]>;

  /**
   * Replace the bucket's whole lifecycle configuration with `rules` (S3
   * PutBucketLifecycleConfiguration; DeleteBucketLifecycle for `[]`). To change one rule, read
   * the rules, change that one and write them all back: see `lifecycle.ts`.
   *
   * #### Notes
   * S3 servers apply the rules in their own background scan; the embedded store applies
   * noncurrent-version expiration to a key when it writes a new version or delete marker of it
   * (see `expiredVersions`). Not-supported as for {@link getLifecycleRules}.
   */
  putLifecycleRules(bucket: string, rules: readonly ILifecycleRule[]): Promise<void>;

  /**
   * Check that the bucket exists and that these credentials may use it (HeadBucket), and report
   * its versioning status.
   */
  checkBucket(bucket: string): Promise<IBucketCheck>;

  /** Release connections and files. */
  close(): Promise<void>;
}
