/**
 * How objects are named: keys joined from a prefix and a path, `s3://` paths, and the naming
 * rules both object stores enforce alike (bucket names, user metadata).
 */
import { ObjectStoreError } from './objectStoreError';

/**
 * The object key of `path` below `prefix`.
 *
 * #### Notes
 * Each part has its slashes trimmed on both sides and empty parts are dropped before the parts
 * are joined with `/`, so a prefix written `works/` or `/workspace/kylek` gives `works/a.ipynb`
 * and `workspace/kylek/a.ipynb` (the original concatenated `prefix + "/" + path` and produced
 * `works//a.ipynb` and a key with a leading slash, which S3 treats as a different object).
 * Inside each part nothing changes: a path's inner slashes, dots and spaces are kept, because
 * the key must name the same file as the Jupyter path it archives.
 */
export function objectKey(prefix: string, path = ''): string {
  return [prefix, path]
    .map(part => part.replace(/^\/+|\/+$/g, ''))
    .filter(part => part !== '')
    .join('/');
}

/** `s3://bucket/key`: the `object_path` that API responses report. */
export function objectPath(bucket: string, prefix: string, path = ''): string {
  return `s3://${bucket}/${objectKey(prefix, path)}`;
}

/**
 * The object's `s3://` path made safe to put in a log line.
 *
 * #### Notes
 * Keys come from users and may hold control characters, line breaks or bidirectional overrides
 * that would forge or hide log lines; they are shown as `\u{…}` escapes. Everything else is the
 * same as {@link objectPath}, so the two match for every ordinary key.
 */
export function objectDisplayName(bucket: string, prefix: string, path = ''): string {
  return displayable(objectPath(bucket, prefix, path));
}

/** A user-given string with invisible and line-breaking characters escaped, for messages and logs. */
export function displayable(text: string): string {
  return text.replace(
    // C0/C1 controls, line and paragraph separators, bidi marks and overrides, BOM.
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]/g,
    character => `\\u{${character.codePointAt(0)!.toString(16)}}`
  );
}

/** S3's rule for bucket names: 3–63 lowercase letters, digits, dots and hyphens, as settings check. */
const BUCKET_NAME = /^(?!xn--)(?!.*\.\.)(?!\d+\.\d+\.\d+\.\d+$)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** Is `name` a valid S3 bucket name (3–63 lowercase letters, digits, dots, hyphens)? */
export function isValidBucketName(name: string): boolean {
  return BUCKET_NAME.test(name);
}

/** S3's limit on key length, in UTF-8 bytes. */
const KEY_LIMIT_BYTES = 1024;

/**
 * Check an object key as S3 does, so both stores refuse the same keys: not empty, well-formed
 * Unicode (a lone surrogate would be stored as U+FFFD and name another key), at most 1024 bytes.
 *
 * @throws ObjectStoreError `bad-request` otherwise.
 */
export function checkObjectKey(key: string): void {
  if (key === '') {
    throw new ObjectStoreError('bad-request', 'An object key must not be empty', 'InvalidKey');
  }
  checkKeyText(key, 'An object key');
}

/**
 * Check a key prefix as {@link checkObjectKey} checks a key, except that it may be empty (every
 * key).
 *
 * #### Notes
 * A prefix that no key could start with (a lone surrogate, over 1024 bytes) is refused rather
 * than answered with an empty listing: it can only come from a bug.
 *
 * @throws ObjectStoreError `bad-request` otherwise.
 */
export function checkObjectPrefix(prefix: string): void {
  checkKeyText(prefix, 'An object key prefix');
}

function checkKeyText(text: string, what: string): void {
  if (!text.isWellFormed()) {
    throw new ObjectStoreError('bad-request', `${what} must be well-formed Unicode`, 'InvalidKey');
  }
  if (Buffer.byteLength(text) > KEY_LIMIT_BYTES) {
    throw new ObjectStoreError(
      'bad-request',
      `${what} must be at most ${KEY_LIMIT_BYTES} bytes long`,
      'KeyTooLongError'
    );
  }
}

/** S3's limit on user metadata: keys and values together, in UTF-8 bytes. */
const METADATA_LIMIT_BYTES = 2048;

/** A metadata key must be a valid HTTP header-name tail (`x-amz-meta-<key>`). */
const METADATA_KEY = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;

/** Printable ASCII: what survives an HTTP header unchanged on every S3 server. */
const METADATA_VALUE = /^[\x20-\x7e]*$/;

/**
 * User metadata as every store keeps it: keys in lower case (S3 lowercases them), checked so
 * that both stores accept and refuse the same metadata.
 *
 * #### Notes
 * Values must be printable ASCII and the whole at most 2 KB, as S3 requires; S3 servers differ on
 * what they do with other bytes in a header (reject, mangle, or RFC 2047-encode), so such values
 * are refused before they are sent rather than stored differently per server.
 *
 * @throws ObjectStoreError `bad-request` for an invalid key or value, keys that collide once
 *   lowercased, or metadata over the limit.
 */
export function normalizeMetadata(metadata: Record<string, string> = {}): Record<string, string> {
  const normalized: Record<string, string> = {};
  let bytes = 0;
  for (const [name, value] of Object.entries(metadata)) {
    const key = name.toLowerCase();
    if (!METADATA_KEY.test(key)) {
      throw invalidMetadata(`the metadata name "${displayable(name)}" is not a valid header name`);
    }
    if (typeof value !== 'string' || !METADATA_VALUE.test(value)) {
      throw invalidMetadata(`the value of metadata "${key}" must be printable ASCII`);
    }
    if (Object.hasOwn(normalized, key)) {
      throw invalidMetadata(`the metadata name "${key}" is given twice`);
    }
    normalized[key] = value;
    bytes += Buffer.byteLength(key) + Buffer.byteLength(value);
  }
  if (bytes > METADATA_LIMIT_BYTES) {
    throw invalidMetadata(`user metadata is limited to ${METADATA_LIMIT_BYTES} bytes`);
  }
  return normalized;
}

function invalidMetadata(reason: string): ObjectStoreError {
  return new ObjectStoreError(
    'bad-request',
    `Invalid object metadata: ${reason}`,
    'InvalidMetadata'
  );
}
