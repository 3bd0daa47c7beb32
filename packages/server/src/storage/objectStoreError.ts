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
  /** The object is larger than the reader's `maxBytes`; its read was stopped (413). */
  | 'too-large'
  /** The store could not be reached or answered with a server error; worth retrying (502/503). */
  | 'unavailable'
  /** The store does not implement the call at all, e.g. versitygw's bucket lifecycle (501). */
  | 'not-supported';

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
