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

/** One version of a key, as a version listing shows it. */
export interface IObjectVersion {
  readonly versionId: string;
  readonly lastModified: Date;
  readonly size: number;
  readonly isLatest: boolean;
}

/** What a bucket check found. */
export interface IBucketCheck {
  /** `Enabled`, `Suspended`, or `Disabled` when versioning was never turned on. */
  readonly versioning: 'Enabled' | 'Suspended' | 'Disabled';
}

/**
 * The ways an object-store call fails, as the gateway maps them: to HTTP statuses for the store
 * API, and to "retry" or "stop and re-authenticate" for the archive queue.
 */
export type ObjectStoreErrorKind =
  /** The bucket, key or version does not exist (404). */
  | 'not-found'
  /** The credentials are refused or lack permission (403). */
  | 'access-denied'
  /** The request itself is wrong, e.g. a malformed version id (400). */
  | 'bad-request'
  /** The store could not be reached or answered with a server error; worth retrying (502/503). */
  | 'unavailable';

/** A failed object-store call, with a message fit for users (never a credential). */
export class ObjectStoreError extends Error {
  constructor(
    readonly kind: ObjectStoreErrorKind,
    message: string,
    /** The store's own error code (`NoSuchKey`, `AccessDenied`, `ECONNREFUSED` …), for logs. */
    readonly code: string,
    /**
     * True when the call may have taken effect although it failed (a timeout or a cut
     * connection after the request was sent): a retried put could then make a duplicate.
     */
    readonly ambiguous = false
  ) {
    super(message);
    this.name = 'ObjectStoreError';
  }

  /** Transient failures are retried; the others need a change of configuration. */
  get retryable(): boolean {
    return this.kind === 'unavailable';
  }
}

/** An object store. Implementations must be safe for concurrent calls. */
export interface IObjectStore {
  /** How logs and feature detection name it: `s3://…` endpoint and region, or the local directory. */
  readonly description: string;

  /** Write a new version of `key`. */
  put(
    bucket: string,
    key: string,
    body: Buffer,
    options?: { contentType?: string; metadata?: Record<string, string> }
  ): Promise<IPutResult>;

  /** Read `key`, or one of its versions. */
  get(bucket: string, key: string, versionId?: string): Promise<IObject>;

  /** Describe `key`, or one of its versions, without reading it. */
  head(bucket: string, key: string, versionId?: string): Promise<IObjectHead>;

  /** Every version of exactly `key` (not of keys it prefixes), newest first. */
  listVersions(bucket: string, key: string): Promise<IObjectVersion[]>;

  /**
   * Check that the bucket exists and that these credentials may use it (HeadBucket), and report
   * its versioning status.
   */
  checkBucket(bucket: string): Promise<IBucketCheck>;

  /** Release connections and files. */
  close(): Promise<void>;
}
