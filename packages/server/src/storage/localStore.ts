import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { syncDirectory, writeFileAtomic } from '../contents/fileio';
import { hasErrorCode } from '../errors';
import {
  checkObjectKey,
  checkObjectPrefix,
  displayable,
  isValidBucketName,
  normalizeMetadata
} from './keys';
import {
  checkLifecycleRules,
  expiredVersions,
  noncurrentExpirations,
  type ILifecycleRule
} from './lifecycle';
import {
  ObjectStoreError,
  type IBucketCheck,
  type ICopyOptions,
  type IDeleteResult,
  type IGetOptions,
  type IObject,
  type IObjectHead,
  type IObjectStore,
  type IObjectSummary,
  type IObjectVersion,
  type IObjectVersionPage,
  type IKeyVersion,
  type IPutResult,
  type IVersionPageOptions,
  checkSha256,
  checkVersionTags,
  checksumMismatchError,
  checkVersionPageLimit,
  describeStoreTarget,
  listAllVersionsOperation,
  listLatestOperation,
  tooLargeError,
  type IPutOptions,
  type IStoreTarget
} from './objectStore';

/**
 * The embedded object store: versioned objects in a directory on local disk, so that archiving
 * works on a fresh machine with nothing configured.
 *
 * #### Notes
 * Layout: `<root>/<bucket>/objects/<h>/<sha256 of key>/<version id>.v`, one immutable file per
 * version holding a small JSON header (key, size, ETag, content type, metadata) and the body.
 *
 * - Keys are hashed rather than encoded into readable names: any key (`/`, `..`, Unicode, 1024
 *   bytes) then maps to one fixed-length, lowercase hex name, which cannot leave the root, never
 *   exceeds a file-name limit, and cannot collide on case- or normalization-insensitive file
 *   systems (macOS). The key is kept in each version's header and checked on every read.
 * - Each version file is written with {@link writeFileAtomic} (temporary file, fsync, rename,
 *   directory fsync), so a crash leaves either no new version or a complete one; a killed
 *   writer's temporary file does not have a version file's name and is never read.
 * - There is no mutable "latest" pointer: the latest version is the greatest version id in the
 *   key's directory. Version ids are a 13-digit millisecond time, a 6-digit counter and 16 random
 *   hex digits; within one process they increase in write order, because puts to one key are
 *   serialized and the clock is never allowed to run backwards. Separate processes writing the
 *   same key concurrently are not ordered against each other.
 * - A delete writes a delete marker: a version file like any other, with a fresh version id,
 *   flagged in its header and with no body, so it gets the same crash safety and the same place
 *   in the order. When it is the greatest id the key reads as missing (`NoSuchKey`); reading the
 *   marker by its id fails as S3 fails it (`MethodNotAllowed`, mapped to `not-found`). Its file
 *   starts with a magic of its own, so a release that predates markers skips it as an
 *   incomplete file instead of serving it as an empty object.
 * - Listing a bucket's latest objects walks the hashed directories and reads each key's newest
 *   header, since only the headers know the keys: fine for rebuilding an index, too slow for a
 *   request path.
 * - A version's tags, the one thing of it that can change, are kept beside it in
 *   `<version id>.tags` (JSON), replaced whole and atomically; a version without tags has no file.
 * - A bucket's lifecycle configuration is `<root>/<bucket>/lifecycle.json`, S3's rules as JSON.
 *   Its noncurrent-version expirations are applied to a key each time the key gets a new version
 *   or delete marker (see `expiredVersions` in `lifecycle.ts`), not by a background scan.
 * - Buckets are directories. `createBucket` makes one; the bucket named in the options is
 *   created on first use (not in the constructor, which cannot report a failure).
 */
export class LocalObjectStore implements IObjectStore {
  constructor(options: LocalObjectStore.IOptions) {
    this._root = path.resolve(options.root);
    this._defaultBucket = options.defaultBucket;
    if (this._defaultBucket !== undefined) Private.checkBucketName(this._defaultBucket);
    this._listPageSize = Private.checkPageSize(options.listPageSize ?? 1000);
    this._now = options.now ?? Date.now;
    this.description = `local directory ${this._root}`;
  }

  /** `local directory <root>`. */
  readonly description: string;

  /**
   * Create a bucket (its directory); nothing happens if it exists.
   *
   * @throws ObjectStoreError `bad-request` for a name S3 would refuse.
   */
  async createBucket(bucket: string): Promise<void> {
    Private.checkBucketName(bucket);
    await this._run({ operation: 'create', bucket }, () => this._createBucket(bucket));
  }

  /**
   * Write a new immutable version of `key`; see the class notes for crash safety. A body that
   * does not match the `sha256` given is refused (`BadDigest`, as S3 answers) before anything is
   * written.
   */
  async put(
    bucket: string,
    key: string,
    body: Buffer,
    options: IPutOptions = {}
  ): Promise<IPutResult> {
    const target = { operation: 'write', bucket, key };
    Private.checkTarget(target);
    const metadata = normalizeMetadata(options.metadata);
    if (
      options.sha256 !== undefined &&
      createHash('sha256').update(body).digest('hex') !== checkSha256(options.sha256)
    ) {
      throw checksumMismatchError(target, 'BadDigest');
    }
    return this._run(target, async () => {
      const header = await this._write(
        bucket,
        key,
        {
          size: body.length,
          etag: `"${createHash('md5').update(body).digest('hex')}"`,
          contentType: options.contentType ?? 'application/octet-stream',
          metadata
        },
        body
      );
      return { versionId: header.versionId, etag: header.etag };
    });
  }

  /**
   * Write a new version of `targetKey` with the bytes of one version of `sourceKey` and the
   * metadata given; the content type is the one given, else the source's. Reading a missing
   * version or a delete marker fails as `get` does (`not-found`).
   */
  async copyVersion(
    bucket: string,
    sourceKey: string,
    sourceVersionId: string,
    targetKey: string,
    options: ICopyOptions
  ): Promise<IPutResult> {
    const target = { operation: 'copy to', bucket, key: targetKey };
    Private.checkTarget(target);
    const metadata = normalizeMetadata(options.metadata);
    const source = await this.get(bucket, sourceKey, sourceVersionId);
    return this._run(target, async () => {
      const header = await this._write(
        bucket,
        targetKey,
        {
          size: source.body.length,
          etag: `"${createHash('md5').update(source.body).digest('hex')}"`,
          contentType: options.contentType ?? source.contentType ?? 'application/octet-stream',
          metadata
        },
        source.body
      );
      return { versionId: header.versionId, etag: header.etag };
    });
  }

  /**
   * Hide `key` behind a new delete marker; its versions stay. A key never written gets a marker
   * too, as on S3.
   */
  async deleteObject(bucket: string, key: string): Promise<IDeleteResult> {
    const target = { operation: 'delete', bucket, key };
    Private.checkTarget(target);
    return this._run(target, async () => {
      const header = await this._write(
        bucket,
        key,
        { size: 0, metadata: {}, deleteMarker: true },
        Buffer.alloc(0)
      );
      return { versionId: header.versionId };
    });
  }

  /**
   * Read `key` (its latest version, or the one named) whole; with `maxBytes`, a version whose
   * header says it is larger is refused unread, and the file is never read past its header and
   * `maxBytes` of body.
   */
  async get(
    bucket: string,
    key: string,
    versionId?: string,
    options: IGetOptions = {}
  ): Promise<IObject> {
    const target = { operation: 'read', bucket, key, versionId };
    Private.checkTarget(target);
    const { maxBytes } = options;
    return this._run(target, async () => {
      const { header, file } = await this._find(bucket, key, versionId);
      if (maxBytes !== undefined && header.size > maxBytes) {
        throw Private.tooLarge(target, maxBytes);
      }
      const bytes =
        maxBytes === undefined
          ? await fs.readFile(file)
          : await Private.readFileAtMost(file, maxBytes, target);
      const version = Private.decodeVersion(bytes, key, header.versionId);
      if (!version) throw Private.notFound(target, versionId ? 'NoSuchVersion' : 'NoSuchKey');
      return {
        body: version.body,
        versionId: version.header.versionId,
        lastModified: new Date(version.header.lastModified),
        contentType: version.header.contentType,
        metadata: { ...version.header.metadata }
      };
    });
  }

  /** Describe `key` (its latest version, or the one named) from the version's header. */
  async head(bucket: string, key: string, versionId?: string): Promise<IObjectHead> {
    const target = { operation: 'read', bucket, key, versionId };
    Private.checkTarget(target);
    return this._run(target, async () => {
      const { header } = await this._find(bucket, key, versionId);
      return {
        versionId: header.versionId,
        size: header.size,
        lastModified: new Date(header.lastModified),
        etag: header.etag,
        metadata: { ...header.metadata }
      };
    });
  }

  /**
   * Replace the tags of one version, in the file beside it. A missing version, or a delete
   * marker's id, fails as on S3.
   */
  async putVersionTags(
    bucket: string,
    key: string,
    versionId: string,
    tags: Readonly<Record<string, string>>
  ): Promise<void> {
    const target = { operation: 'tag', bucket, key, versionId };
    Private.checkTarget(target);
    const checked = { ...checkVersionTags(tags) };
    await this._run(target, async () => {
      await this._find(bucket, key, versionId);
      const directory = this._keyDirectory(bucket, key);
      await this._serialize(directory, () =>
        writeFileAtomic(
          path.join(directory, Private.tagsFileName(versionId)),
          Buffer.from(JSON.stringify(checked))
        )
      );
    });
  }

  /** The tags of one version, from the file beside it; `{}` when there is none. */
  async getVersionTags(
    bucket: string,
    key: string,
    versionId: string
  ): Promise<Record<string, string>> {
    const target = { operation: 'read the tags of', bucket, key, versionId };
    Private.checkTarget(target);
    return this._run(target, async () => {
      await this._find(bucket, key, versionId);
      const file = path.join(this._keyDirectory(bucket, key), Private.tagsFileName(versionId));
      let text: string;
      try {
        text = await fs.readFile(file, 'utf8');
      } catch (error) {
        if (hasErrorCode(error, 'ENOENT')) return {};
        throw error;
      }
      return Private.parseTags(text);
    });
  }

  /**
   * Every complete version of exactly `key`, newest first; empty for a key never written.
   *
   * #### Notes
   * The latest is the newest entry, delete markers included, also when markers are left out of
   * the answer: a deleted key then has no latest version, as on S3.
   */
  async listVersions(
    bucket: string,
    key: string,
    options: { includeDeleteMarkers?: boolean } = {}
  ): Promise<IObjectVersion[]> {
    const target = { operation: 'list the versions of', bucket, key };
    Private.checkTarget(target);
    return this._run(target, async () => {
      await this._requireBucket(bucket);
      const headers = await this._versions(bucket, key);
      const versions = headers.map((header, index): IObjectVersion => ({
        versionId: header.versionId,
        lastModified: new Date(header.lastModified),
        size: header.size,
        isLatest: index === 0,
        ...(header.deleteMarker ? { deleteMarker: true } : {})
      }));
      return options.includeDeleteMarkers
        ? versions
        : versions.filter(version => !version.deleteMarker);
    });
  }

  /**
   * One page of the versions of exactly `key`, newest first, resuming after the version id
   * `after`.
   *
   * #### Notes
   * Version ids order the versions, so a page is the ids below `after` (all of them for the first
   * page), read header by header until the page and one more entry are found; only the key's
   * directory names are read whole. `next` is the id of the last entry returned.
   */
  async listVersionPage(
    bucket: string,
    key: string,
    options: IVersionPageOptions
  ): Promise<IObjectVersionPage> {
    const target = { operation: 'list the versions of', bucket, key };
    Private.checkTarget(target);
    const limit = checkVersionPageLimit(options.limit);
    const after = options.after;
    if (after !== undefined && !Private.isVersionId(after)) {
      throw new ObjectStoreError(
        'bad-request',
        `Could not ${target.operation} ${Private.describe(target)}: "${displayable(after)}" is ` +
          'not a valid version id (InvalidArgument)',
        'InvalidArgument'
      );
    }
    return this._run(target, async () => {
      await this._requireBucket(bucket);
      const directory = this._keyDirectory(bucket, key);
      // The newest entry is the latest: on the first page, the first complete header of the
      // same read (one listing of the directory); a later page's entries are all older than
      // an entry listed before, so none is the latest.
      let newest: string | undefined;
      const headers = await Private.readVersions(directory, { key }, limit + 1, {
        before: after,
        accept: header => options.includeDeleteMarkers === true || !header.deleteMarker,
        onNewest: header => {
          if (after === undefined) newest = header.versionId;
        }
      });
      const versions = headers.slice(0, limit).map((header): IObjectVersion => ({
        versionId: header.versionId,
        lastModified: new Date(header.lastModified),
        size: header.size,
        isLatest: header.versionId === newest,
        ...(header.deleteMarker ? { deleteMarker: true } : {})
      }));
      return headers.length > limit
        ? { versions, next: versions[limit - 1].versionId }
        : { versions };
    });
  }

  /**
   * Every key below `prefix` whose newest entry is not a delete marker, in no particular order.
   *
   * #### Notes
   * The keys exist only in the version headers, so every key directory of the bucket is visited
   * (in hash order) and its newest complete header read, whatever the prefix. Directories are
   * read `listPageSize` at a time, each page as one call that `close()` waits for; the generator
   * holds nothing between pages but one shard's directory names.
   */
  async *listLatest(bucket: string, prefix: string): AsyncGenerator<IObjectSummary> {
    const target = { operation: listLatestOperation(prefix), bucket };
    Private.checkTarget(target);
    checkObjectPrefix(prefix);
    const pages = this._keyPages(bucket, target, async (directory, hash) => {
      const [header] = await Private.readVersions(directory, { hash }, 1);
      return header;
    });
    for await (const latest of pages) {
      for (const header of latest) {
        if (!header || header.deleteMarker || !header.key.startsWith(prefix)) continue;
        yield {
          key: header.key,
          size: header.size,
          etag: header.etag,
          lastModified: new Date(header.lastModified)
        };
      }
    }
  }

  /**
   * Every version and delete marker below `prefix`, key by key, each key's newest first.
   *
   * #### Notes
   * Walks the key directories as {@link listLatest} does, `listPageSize` directories per call;
   * a key's newest header says whether it is below `prefix`, and only then are its other headers
   * read. The generator holds one page of keys' headers at a time.
   */
  async *listAllVersions(bucket: string, prefix: string): AsyncGenerator<IKeyVersion> {
    const target = { operation: listAllVersionsOperation(prefix), bucket };
    Private.checkTarget(target);
    checkObjectPrefix(prefix);
    const pages = this._keyPages(bucket, target, async (directory, hash) => {
      const [newest] = await Private.readVersions(directory, { hash }, 1);
      if (!newest || !newest.key.startsWith(prefix)) return [];
      return Private.readVersions(directory, { hash });
    });
    for await (const keys of pages) {
      for (const headers of keys) {
        for (const [index, header] of headers.entries()) {
          yield {
            key: header.key,
            versionId: header.versionId,
            lastModified: new Date(header.lastModified),
            size: header.size,
            isLatest: index === 0,
            ...(header.deleteMarker ? { deleteMarker: true } : {})
          };
        }
      }
    }
  }

  /**
   * Every key directory of `bucket`, shard by shard, `listPageSize` at a time: `read` of each
   * directory of a page (its path and key hash), as one call that `close()` waits for.
   */
  private async *_keyPages<T>(
    bucket: string,
    target: Private.ITarget,
    read: (directory: string, hash: string) => Promise<T>
  ): AsyncGenerator<T[]> {
    const objects = path.join(this._bucketDirectory(bucket), 'objects');
    const shards = await this._run(target, async () => {
      await this._requireBucket(bucket);
      return Private.directoryNames(objects, Private.isShardName);
    });
    for (const shard of shards) {
      const shardDirectory = path.join(objects, shard);
      const hashes = await this._run(target, () =>
        Private.directoryNames(shardDirectory, name => Private.isKeyHashIn(name, shard))
      );
      for (let start = 0; start < hashes.length; start += this._listPageSize) {
        const page = hashes.slice(start, start + this._listPageSize);
        yield await this._run(target, () =>
          Private.mapInBatches(page, hash => read(path.join(shardDirectory, hash), hash))
        );
      }
    }
  }

  /** The rules kept in the bucket's `lifecycle.json`; `[]` when there is none. */
  async getLifecycleRules(bucket: string): Promise<ILifecycleRule[]> {
    const target = { operation: 'read the lifecycle configuration of', bucket };
    Private.checkTarget(target);
    return this._run(target, async () => {
      await this._requireBucket(bucket);
      const rules = await Private.readLifecycle(this._lifecycleFile(bucket));
      return [...rules];
    });
  }

  /**
   * Replace the bucket's `lifecycle.json` atomically (remove it for `[]`), after the checks S3
   * makes (see `checkLifecycleRules`). Writes apply its rules from then on.
   */
  async putLifecycleRules(bucket: string, rules: readonly ILifecycleRule[]): Promise<void> {
    const target = { operation: 'write the lifecycle configuration of', bucket };
    Private.checkTarget(target);
    checkLifecycleRules(rules);
    await this._run(target, async () => {
      await this._requireBucket(bucket);
      const file = this._lifecycleFile(bucket);
      if (rules.length === 0) {
        await fs.rm(file, { force: true });
      } else {
        await writeFileAtomic(file, Buffer.from(JSON.stringify({ Rules: rules })));
      }
    });
  }

  /** An existing bucket directory is a bucket, always versioned (`Enabled`). */
  async checkBucket(bucket: string): Promise<IBucketCheck> {
    const target = { operation: 'check', bucket };
    Private.checkTarget(target);
    return this._run(target, async () => {
      await this._requireBucket(bucket);
      return { versioning: 'Enabled' };
    });
  }

  /** Wait for the calls under way; later calls fail as `unavailable`. */
  async close(): Promise<void> {
    this._closed = true;
    await Promise.allSettled(this._pending);
  }

  /**
   * The directory holding the versions of `key`: for operators looking for a key's files, and for
   * tests that simulate a crash. It always lies inside the bucket's directory.
   */
  locate(bucket: string, key: string): string {
    Private.checkTarget({ operation: 'locate', bucket, key });
    return this._keyDirectory(bucket, key);
  }

  /** Run one call: refuse after close, create the default bucket once, map file-system errors. */
  private async _run<T>(target: Private.ITarget, call: () => Promise<T>): Promise<T> {
    if (this._closed) {
      throw new ObjectStoreError(
        'unavailable',
        `Could not ${target.operation} ${Private.describe(target)}: the store is closed`,
        'StoreClosed'
      );
    }
    const running = (async () => {
      try {
        if (this._defaultBucket !== undefined) {
          this._defaultBucketReady ??= this._createBucket(this._defaultBucket).catch(error => {
            // Let a later call try again (the directory may become writable).
            this._defaultBucketReady = undefined;
            throw error;
          });
          await this._defaultBucketReady;
        }
        return await call();
      } catch (error) {
        throw Private.fileError(error, target);
      }
    })();
    this._pending.add(running);
    try {
      return await running;
    } finally {
      this._pending.delete(running);
    }
  }

  private async _createBucket(bucket: string): Promise<void> {
    await Private.makeDirectoryDurably(path.join(this._bucketDirectory(bucket), 'objects'));
  }

  private async _requireBucket(bucket: string): Promise<void> {
    try {
      const stats = await fs.stat(this._bucketDirectory(bucket));
      if (stats.isDirectory()) return;
    } catch (error) {
      if (!hasErrorCode(error, 'ENOENT', 'ENOTDIR')) throw error;
    }
    throw Private.notFound({ operation: 'use', bucket }, 'NoSuchBucket');
  }

  /** The header and file of the version asked for, or of the latest complete version. */
  private async _find(
    bucket: string,
    key: string,
    versionId: string | undefined
  ): Promise<{ header: Private.IHeader; file: string }> {
    await this._requireBucket(bucket);
    const directory = this._keyDirectory(bucket, key);
    const target = { operation: 'read', bucket, key, versionId };
    if (versionId === undefined) {
      const [latest] = await this._versions(bucket, key, 1);
      // A delete marker on top hides the key, as on S3.
      if (!latest || latest.deleteMarker) throw Private.notFound(target, 'NoSuchKey');
      return {
        header: latest,
        file: path.join(directory, Private.versionFileName(latest.versionId))
      };
    }
    if (!Private.isVersionId(versionId)) {
      // S3 servers accept "null" (the version of an object written before versioning was on).
      if (versionId === 'null') throw Private.notFound(target, 'NoSuchVersion');
      throw new ObjectStoreError(
        'bad-request',
        `Could not read ${Private.describe(target)}: "${displayable(versionId)}" is not a valid ` +
          'version id (InvalidArgument)',
        'InvalidArgument'
      );
    }
    const file = path.join(directory, Private.versionFileName(versionId));
    const header = await Private.readHeader(file, key, versionId);
    if (!header) throw Private.notFound(target, 'NoSuchVersion');
    // S3 answers 405 MethodNotAllowed for a delete marker's version: there is nothing to read.
    if (header.deleteMarker) throw Private.notFound(target, 'MethodNotAllowed');
    return { header, file };
  }

  /**
   * The complete versions of `key` (delete markers included), newest first; with `limit`, only
   * that many (the latest is found without reading every header).
   */
  private async _versions(
    bucket: string,
    key: string,
    limit = Infinity
  ): Promise<Private.IHeader[]> {
    return Private.readVersions(this._keyDirectory(bucket, key), { key }, limit);
  }

  /**
   * Write a new version file of `key` (an object or a delete marker) after the key's earlier
   * writes, with a fresh version id; see the class notes for crash safety.
   */
  private async _write(
    bucket: string,
    key: string,
    fields: Private.IHeaderFields,
    body: Buffer
  ): Promise<Private.IHeader> {
    await this._requireBucket(bucket);
    const directory = this._keyDirectory(bucket, key);
    return this._serialize(directory, async () => {
      await Private.makeDirectoryDurably(directory);
      const written = Private.newHeader(key, Private.nextVersionId(), fields);
      await writeFileAtomic(
        path.join(directory, Private.versionFileName(written.versionId)),
        Private.encodeVersion(written, body)
      );
      await this._applyLifecycle(bucket, key, directory);
      return written;
    });
  }

  /**
   * Expire the versions of `key` that the bucket's lifecycle rules say are due (see
   * `expiredVersions` for the rules and where they are simpler than S3's), after a write of the
   * key and in its turn. Best effort: the write has succeeded whatever happens here, and a version
   * not removed now is removed at the key's next write.
   */
  private async _applyLifecycle(bucket: string, key: string, directory: string): Promise<void> {
    try {
      const rules = await Private.readLifecycle(this._lifecycleFile(bucket));
      if (noncurrentExpirations(rules, key).length === 0) return;
      const history = await Private.readVersions(directory, { key });
      for (const versionId of expiredVersions(rules, key, history, this._now())) {
        // The version first: tags left without their version are never read.
        await fs.rm(path.join(directory, Private.versionFileName(versionId)), { force: true });
        await fs.rm(path.join(directory, Private.tagsFileName(versionId)), { force: true });
      }
    } catch {
      // Tried again at the key's next write (see above).
    }
  }

  /** Where a bucket's lifecycle configuration is kept: beside its `objects` directory. */
  private _lifecycleFile(bucket: string): string {
    return path.join(this._bucketDirectory(bucket), Private.LIFECYCLE_FILE);
  }

  /** Run `call` after every earlier call for the same key directory, so ids follow write order. */
  private async _serialize<T>(directory: string, call: () => Promise<T>): Promise<T> {
    const previous = this._keyLocks.get(directory) ?? Promise.resolve();
    const result = previous.then(call);
    const settled = result.then(
      () => undefined,
      () => undefined
    );
    this._keyLocks.set(directory, settled);
    try {
      return await result;
    } finally {
      if (this._keyLocks.get(directory) === settled) this._keyLocks.delete(directory);
    }
  }

  private _bucketDirectory(bucket: string): string {
    // The name was validated (lowercase letters, digits, dots, hyphens; no '..'), so it is one
    // plain directory name below the root.
    return path.join(this._root, bucket);
  }

  private _keyDirectory(bucket: string, key: string): string {
    const hash = Private.keyHash(key);
    return path.join(this._bucketDirectory(bucket), 'objects', hash.slice(0, 2), hash);
  }

  private readonly _root: string;
  private readonly _defaultBucket: string | undefined;
  private readonly _listPageSize: number;
  private readonly _now: () => number;
  private _defaultBucketReady: Promise<void> | undefined;
  private _closed = false;
  private readonly _pending = new Set<Promise<unknown>>();
  private readonly _keyLocks = new Map<string, Promise<void>>();
}

export namespace LocalObjectStore {
  export interface IOptions {
    /** The directory holding the buckets; created when needed. */
    root: string;
    /** A bucket created on first use when missing (the embedded default's own bucket). */
    defaultBucket?: string;
    /**
     * Key directories `listLatest` and `listAllVersions` read per page; default 1000 (tests make
     * it small).
     */
    listPageSize?: number;
    /**
     * The clock lifecycle rules are applied with, in ms (tests move it on); default `Date.now`.
     * Version times are always the system clock's.
     */
    now?: () => number;
  }
}

namespace Private {
  /** What a call addresses. */
  export type ITarget = IStoreTarget;

  /** What a version file says about its version. */
  export interface IHeader {
    readonly key: string;
    readonly versionId: string;
    /** 0 for a delete marker. */
    readonly size: number;
    /** Absent on a delete marker, which has no body. */
    readonly etag?: string;
    /** Absent on a delete marker. */
    readonly contentType?: string;
    readonly metadata: Readonly<Record<string, string>>;
    /** Milliseconds since the epoch. */
    readonly lastModified: number;
    /** True on a delete marker. */
    readonly deleteMarker?: boolean;
  }

  /** What a writer says of a new version; the key, the id and the time are the store's. */
  export type IHeaderFields = Omit<IHeader, 'key' | 'versionId' | 'lastModified'>;

  /**
   * The header of a new version, its fields in the order the format has always written them
   * (the header's JSON is part of the version file).
   */
  export function newHeader(key: string, versionId: string, fields: IHeaderFields): IHeader {
    const { deleteMarker, ...rest } = fields;
    return {
      key,
      versionId,
      ...rest,
      lastModified: versionTime(versionId),
      ...(deleteMarker === undefined ? {} : { deleteMarker })
    };
  }

  /** First bytes of every object version file; a later format gets a new magic. */
  const MAGIC = Buffer.from('JSOBJv1\n', 'latin1');

  /**
   * First bytes of every delete marker file, of MAGIC's length. Older releases know only MAGIC,
   * so they skip a marker as an incomplete file rather than read it as an empty object.
   */
  const MARKER_MAGIC = Buffer.from('JSDELv1\n', 'latin1');

  /** Magic plus a 32-bit header length. */
  const PREAMBLE_BYTES = MAGIC.length + 4;

  /** The file of a bucket's lifecycle configuration, `{"Rules": […]}` in S3's shape. */
  export const LIFECYCLE_FILE = 'lifecycle.json';

  /**
   * The rules of a lifecycle file; none when it does not exist. A file that is not a
   * configuration fails (`MalformedLifecycle`) rather than reading as none, which a
   * read-modify-write would then overwrite.
   */
  export async function readLifecycle(file: string): Promise<readonly ILifecycleRule[]> {
    let text: string;
    try {
      text = await fs.readFile(file, 'utf8');
    } catch (error) {
      if (hasErrorCode(error, 'ENOENT')) return [];
      throw error;
    }
    let rules: unknown;
    try {
      rules = (JSON.parse(text) as { Rules?: unknown } | null)?.Rules;
    } catch {
      rules = undefined;
    }
    if (!Array.isArray(rules)) {
      throw new ObjectStoreError(
        'unavailable',
        `The lifecycle configuration in ${file} is damaged (MalformedLifecycle)`,
        'MalformedLifecycle'
      );
    }
    return rules as ILifecycleRule[];
  }

  /** Headers are small (metadata is at most 2 KB, keys 1 KB); a bigger one is damage. */
  const HEADER_LIMIT_BYTES = 64 * 1024;

  const VERSION_ID = /^\d{13}-\d{6}-[0-9a-f]{16}$/;
  const VERSION_SUFFIX = '.v';

  export function isVersionId(text: string): boolean {
    return VERSION_ID.test(text);
  }

  export function versionFileName(versionId: string): string {
    return versionId + VERSION_SUFFIX;
  }

  /** The name of the file that holds a version's tags, beside the version's own. */
  export function tagsFileName(versionId: string): string {
    return `${versionId}.tags`;
  }

  /** Tags as their file holds them; anything that is not a map of strings counts as none. */
  export function parseTags(text: string): Record<string, string> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return {};
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return {};
    const tags: Record<string, string> = {};
    for (const [name, value] of Object.entries(parsed)) {
      if (typeof value === 'string') tags[name] = value;
    }
    return tags;
  }

  /** The id of a version file's name; undefined for anything else (temporary files). */
  export function versionIdOfFileName(name: string): string | undefined {
    if (!name.endsWith(VERSION_SUFFIX)) return undefined;
    const id = name.slice(0, -VERSION_SUFFIX.length);
    return isVersionId(id) ? id : undefined;
  }

  /** The name of a key's directory: the SHA-256 of its UTF-8 bytes, in lowercase hex. */
  export function keyHash(key: string): string {
    return createHash('sha256').update(key, 'utf8').digest('hex');
  }

  const SHARD_NAME = /^[0-9a-f]{2}$/;
  const KEY_HASH = /^[0-9a-f]{64}$/;

  /** Is `name` one of the 256 directories that key directories are spread over? */
  export function isShardName(name: string): boolean {
    return SHARD_NAME.test(name);
  }

  /** Is `name` a key directory's name that belongs in the shard `shard`? */
  export function isKeyHashIn(name: string, shard: string): boolean {
    return KEY_HASH.test(name) && name.startsWith(shard);
  }

  /** The time part of a version id, in ms. */
  export function versionTime(versionId: string): number {
    return Number(versionId.slice(0, 13));
  }

  let lastMs = 0;
  let counter = 0;

  /**
   * A new version id, greater than every id this process made before.
   *
   * #### Notes
   * If the clock steps back, ids keep the last time and count on, so order never breaks; the
   * counter allows a million ids per millisecond before time is pushed forward by one.
   */
  export function nextVersionId(): string {
    const now = Date.now();
    if (now > lastMs) {
      lastMs = now;
      counter = 0;
    } else if (++counter > 999999) {
      lastMs += 1;
      counter = 0;
    }
    const time = String(lastMs).padStart(13, '0');
    return `${time}-${String(counter).padStart(6, '0')}-${randomBytes(8).toString('hex')}`;
  }

  export function encodeVersion(header: IHeader, body: Buffer): Buffer[] {
    const json = Buffer.from(JSON.stringify(header), 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32BE(json.length);
    return [header.deleteMarker ? MARKER_MAGIC : MAGIC, length, json, body];
  }

  /** Whether a file's first bytes are an object version's or a delete marker's; undefined if neither. */
  function kindOf(bytes: Buffer): 'object' | 'marker' | undefined {
    if (bytes.length < MAGIC.length) return undefined;
    const magic = bytes.subarray(0, MAGIC.length);
    return magic.equals(MAGIC) ? 'object' : magic.equals(MARKER_MAGIC) ? 'marker' : undefined;
  }

  /**
   * The complete versions in a key's directory (delete markers included), newest first; with
   * `limit`, only that many.
   *
   * #### Notes
   * `owner` is the key the directory is for; a caller that walks directories without knowing
   * their keys gives the directory's name (the key's hash) instead, and a header then counts only
   * if its key hashes to that name.
   */
  export async function readVersions(
    directory: string,
    owner: { readonly key: string } | { readonly hash: string },
    limit = Infinity,
    options: {
      /** Only versions older than this id (a page that resumes after it). */
      readonly before?: string;
      /** Only the headers this takes (the others do not count towards `limit`). */
      readonly accept?: (header: IHeader) => boolean;
      /** Told the first complete header read, whether `accept` takes it or not. */
      readonly onNewest?: (header: IHeader) => void;
    } = {}
  ): Promise<IHeader[]> {
    const key = 'key' in owner ? owner.key : undefined;
    let names: string[];
    try {
      names = await fs.readdir(directory);
    } catch (error) {
      if (hasErrorCode(error, 'ENOENT', 'ENOTDIR')) return [];
      throw error;
    }
    const { before, accept, onNewest } = options;
    let sawNewest = false;
    const ids = names
      .map(versionIdOfFileName)
      .filter((id): id is string => id !== undefined && (before === undefined || id < before))
      .sort()
      .reverse();
    const headers: IHeader[] = [];
    // Read headers in batches: a key with thousands of versions must not open thousands of
    // files at once, and finding the latest usually needs only the first.
    const batchSize = Math.min(READ_BATCH, limit);
    for (let start = 0; start < ids.length && headers.length < limit; start += batchSize) {
      const batch = ids.slice(start, start + batchSize);
      const read = await Promise.all(
        batch.map(id => readHeader(path.join(directory, versionFileName(id)), key, id))
      );
      for (const header of read) {
        // An incomplete file is skipped: it is not a version (see readHeader).
        if (!header) continue;
        if ('hash' in owner && keyHash(header.key) !== owner.hash) continue;
        if (!sawNewest) {
          sawNewest = true;
          onNewest?.(header);
        }
        if (headers.length >= limit || (accept && !accept(header))) continue;
        headers.push(header);
      }
    }
    return headers;
  }

  /**
   * The header and body of a whole version file, or undefined when the file is not a complete
   * version of `key` (damage a crash on a file system without ordered writes could leave).
   */
  export function decodeVersion(
    bytes: Buffer,
    key: string,
    versionId: string
  ): { header: IHeader; body: Buffer } | undefined {
    const header = parseHeader(bytes, key, versionId);
    if (!header) return undefined;
    const start = PREAMBLE_BYTES + bytes.readUInt32BE(MAGIC.length);
    if (bytes.length !== start + header.size) return undefined;
    return { header, body: bytes.subarray(start) };
  }

  /**
   * The header of a version file, checked against its file's length; undefined if absent or
   * incomplete. With `key` undefined, a header of any key counts (the caller checks its hash).
   */
  export async function readHeader(
    file: string,
    key: string | undefined,
    versionId: string
  ): Promise<IHeader | undefined> {
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(file, 'r');
    } catch (error) {
      if (hasErrorCode(error, 'ENOENT', 'ENOTDIR')) return undefined;
      throw error;
    }
    try {
      const { size } = await handle.stat();
      const preamble = Buffer.alloc(PREAMBLE_BYTES);
      const { bytesRead } = await handle.read(preamble, 0, PREAMBLE_BYTES, 0);
      if (bytesRead < PREAMBLE_BYTES || kindOf(preamble) === undefined) return undefined;
      const headerLength = preamble.readUInt32BE(MAGIC.length);
      if (headerLength > HEADER_LIMIT_BYTES) return undefined;
      const json = Buffer.alloc(headerLength);
      const read = await handle.read(json, 0, headerLength, PREAMBLE_BYTES);
      if (read.bytesRead < headerLength) return undefined;
      const header = parseHeader(Buffer.concat([preamble, json]), key, versionId);
      if (!header || size !== PREAMBLE_BYTES + headerLength + header.size) return undefined;
      return header;
    } finally {
      await handle.close();
    }
  }

  function parseHeader(
    bytes: Buffer,
    key: string | undefined,
    versionId: string
  ): IHeader | undefined {
    const kind = kindOf(bytes);
    if (bytes.length < PREAMBLE_BYTES || kind === undefined) return undefined;
    const headerLength = bytes.readUInt32BE(MAGIC.length);
    if (headerLength > HEADER_LIMIT_BYTES || bytes.length < PREAMBLE_BYTES + headerLength) {
      return undefined;
    }
    let header: IHeader;
    try {
      header = JSON.parse(
        bytes.subarray(PREAMBLE_BYTES, PREAMBLE_BYTES + headerLength).toString('utf8')
      ) as IHeader;
    } catch {
      return undefined;
    }
    if (typeof header?.key !== 'string' || header.versionId !== versionId) return undefined;
    // The key check also guards against a hash collision, however unlikely.
    if (key !== undefined && header.key !== key) return undefined;
    if (!Number.isSafeInteger(header.size) || header.size < 0) return undefined;
    // The magic and the flag must agree, and a marker has no body.
    const marker = header.deleteMarker === true;
    if (marker !== (kind === 'marker') || (marker && header.size !== 0)) return undefined;
    return header;
  }

  /** The read of `target` refused or stopped because it is over `maxBytes`. */
  export const tooLarge = tooLargeError;

  /**
   * A version file whole, but never more than its largest possible header plus `maxBytes` of
   * body: a file that holds more (damage, or a file swapped in by hand) is refused as too large
   * without being read further.
   */
  export async function readFileAtMost(
    file: string,
    maxBytes: number,
    target: ITarget
  ): Promise<Buffer> {
    const limit = PREAMBLE_BYTES + HEADER_LIMIT_BYTES + maxBytes;
    const handle = await fs.open(file, 'r');
    try {
      const chunks: Buffer[] = [];
      let total = 0;
      for (;;) {
        const buffer = Buffer.allocUnsafe(Math.min(1024 * 1024, limit + 1 - total));
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
        if (bytesRead === 0) break;
        chunks.push(buffer.subarray(0, bytesRead));
        total += bytesRead;
        if (total > limit) throw tooLarge(target, maxBytes);
      }
      return Buffer.concat(chunks, total);
    } finally {
      await handle.close();
    }
  }

  /** Files opened at once by one call: enough to overlap reads, far below descriptor limits. */
  const READ_BATCH = 64;

  /** `each` over `items`, READ_BATCH at a time, results in the order of `items`. */
  export async function mapInBatches<T, R>(
    items: readonly T[],
    each: (item: T) => Promise<R>
  ): Promise<R[]> {
    const results: R[] = [];
    for (let start = 0; start < items.length; start += READ_BATCH) {
      results.push(...(await Promise.all(items.slice(start, start + READ_BATCH).map(each))));
    }
    return results;
  }

  /** The sorted names in `directory` that `accept` takes; none if it does not exist. */
  export async function directoryNames(
    directory: string,
    accept: (name: string) => boolean
  ): Promise<string[]> {
    try {
      return (await fs.readdir(directory)).filter(accept).sort();
    } catch (error) {
      if (hasErrorCode(error, 'ENOENT', 'ENOTDIR')) return [];
      throw error;
    }
  }

  /** A listing's page size, checked once in the constructor: a bad one is a programming error. */
  export function checkPageSize(size: number): number {
    if (!Number.isSafeInteger(size) || size < 1) {
      throw new RangeError(`A listing page size must be a positive integer, not ${size}`);
    }
    return size;
  }

  /**
   * `mkdir -p`, then fsync the parent of every directory it created, so the new entries survive
   * a power cut as the version file's own rename does.
   */
  export async function makeDirectoryDurably(directory: string): Promise<void> {
    const first = await fs.mkdir(directory, { recursive: true });
    if (first === undefined) return;
    const created: string[] = [];
    for (let current = directory; ; current = path.dirname(current)) {
      created.push(current);
      if (current === first || path.dirname(current) === current) break;
    }
    for (const each of created.reverse()) await syncDirectory(path.dirname(each));
  }

  export function checkBucketName(bucket: string): void {
    if (!isValidBucketName(bucket)) {
      throw new ObjectStoreError(
        'bad-request',
        `"${displayable(bucket)}" is not a valid bucket name (3-63 lowercase letters, digits, ` +
          'dots, hyphens) (InvalidBucketName)',
        'InvalidBucketName'
      );
    }
  }

  export function checkTarget(target: ITarget): void {
    checkBucketName(target.bucket);
    if (target.key !== undefined) checkObjectKey(target.key);
  }

  /** `s3://bucket/key`, `version "v" of s3://bucket/key`, or `bucket "b"`, log-safe. */
  export const describe = describeStoreTarget;

  /**
   * A `not-found` error with S3's code: `MethodNotAllowed` is S3's (405) answer to reading a
   * delete marker by its version id, which the S3 adapter maps to `not-found` too.
   */
  export function notFound(
    target: ITarget,
    code: 'NoSuchBucket' | 'NoSuchKey' | 'NoSuchVersion' | 'MethodNotAllowed'
  ): ObjectStoreError {
    const version = () =>
      `Version "${displayable(target.versionId ?? '')}" of ` +
      `${describe({ ...target, versionId: undefined })}`;
    const message =
      code === 'NoSuchBucket'
        ? `The bucket "${displayable(target.bucket)}" does not exist`
        : code === 'NoSuchVersion'
          ? `${version()} does not exist`
          : code === 'MethodNotAllowed'
            ? `${version()} is a delete marker`
            : `${describe(target)} does not exist`;
    return new ObjectStoreError('not-found', `${message} (${code})`, code);
  }

  /** A file-system failure as an ObjectStoreError; ObjectStoreErrors pass through. */
  export function fileError(error: unknown, target: ITarget): ObjectStoreError {
    if (error instanceof ObjectStoreError) return error;
    const code =
      typeof (error as NodeJS.ErrnoException)?.code === 'string'
        ? (error as NodeJS.ErrnoException).code!
        : 'UnknownError';
    const what = `Could not ${target.operation} ${describe(target)}`;
    if (hasErrorCode(error, 'EACCES', 'EPERM', 'EROFS')) {
      // Not transient: the store's directory needs its permissions fixed.
      return new ObjectStoreError(
        'access-denied',
        `${what}: the store's directory may not be written or read (${code})`,
        code
      );
    }
    if (hasErrorCode(error, 'ENOSPC', 'EDQUOT')) {
      return new ObjectStoreError('unavailable', `${what}: the disk is full (${code})`, code);
    }
    return new ObjectStoreError(
      'unavailable',
      `${what}: a file-system error occurred (${code})`,
      code
    );
  }
}
