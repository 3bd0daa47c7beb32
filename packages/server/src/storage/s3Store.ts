import {
  CopyObjectCommand,
  DeleteBucketLifecycleCommand,
  DeleteObjectCommand,
  GetBucketLifecycleConfigurationCommand,
  GetBucketVersioningCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  GetObjectTaggingCommand,
  PutBucketLifecycleConfigurationCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  S3Client,
  type LifecycleRule,
  type ListObjectVersionsCommandOutput,
  type PutObjectCommandInput,
  type S3ClientConfig
} from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import * as http from 'node:http';
import * as https from 'node:https';
import { Readable } from 'node:stream';
import { checkObjectKey, checkObjectPrefix, displayable, normalizeMetadata } from './keys';
import { LeanPut } from './leanPut';
import { lifecycleSupport, type ILifecycleRule } from './lifecycle';
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
  type IPutOptions,
  type IPutResult,
  type IVersionPageOptions,
  CHECKSUM_MISMATCH_REASON,
  checkSha256,
  checkVersionTags,
  checkVersionPageLimit,
  describeStoreTarget,
  listAllVersionsOperation,
  listLatestOperation,
  tooLargeError,
  type IStoreTarget
} from './objectStore';

/**
 * The object store on S3 or an S3-compatible server (MinIO, versitygw, Ceph …), through one
 * shared AWS SDK v3 client.
 *
 * #### Notes
 * Bodies are Buffers, never streams: the SDK then sends a plain body with a checksum header (no
 * `aws-chunked` framing, which some servers mishandle) and can retry the request itself. The
 * checksum is the SHA-256 the caller gave, or else the SDK's CRC32. The SDK's
 * standard retries cover short blips; longer outages surface as `unavailable` for the caller's
 * durable queue. Every failure is an {@link ObjectStoreError} made by {@link toObjectStoreError},
 * whose messages are our own sentences: the servers' texts can quote the access key id.
 */
export class S3ObjectStore implements IObjectStore {
  constructor(options: S3ObjectStore.IOptions) {
    this._connectionTimeoutMs = options.connectionTimeoutMs ?? 5000;
    this._requestTimeoutMs = options.requestTimeoutMs ?? 30000;
    this._listPageSize = Private.checkPageSize(options.listPageSize ?? 1000);
    const where = options.endpoint ? Private.endpointForDisplay(options.endpoint) : 'AWS S3';
    this._where = where;
    this.description = `${where}, region ${options.region}`;
    // Both agents: a plain-http endpoint (local servers, tests) goes through httpAgent, and the
    // handler's default of 50 sockets would not follow max_threads. They are made here, not by
    // the handler, so that the lean puts share the handler's pool. (Given agents, the handler
    // also sends a body over 2 MB, with `Expect: 100-continue`, on the pool at once, where it
    // would open a connection of its own for it and wait for the server's go-ahead.)
    const agentOptions = { keepAlive: true, maxSockets: options.maxSockets };
    const httpAgent = new http.Agent(agentOptions);
    const httpsAgent = new https.Agent(agentOptions);
    const checksums = options.checksums === 'when_required' ? 'WHEN_REQUIRED' : 'WHEN_SUPPORTED';
    this._sendChecksums = checksums === 'WHEN_SUPPORTED';
    const config: S3ClientConfig = {
      region: options.region,
      maxAttempts: options.maxAttempts ?? 3,
      requestChecksumCalculation: checksums,
      responseChecksumValidation: checksums,
      requestHandler: new NodeHttpHandler({
        httpAgent,
        httpsAgent,
        connectionTimeout: this._connectionTimeoutMs,
        // Without throwOnRequestTimeout the handler only logs a warning when the time is up.
        requestTimeout: this._requestTimeoutMs,
        throwOnRequestTimeout: true,
        // requestTimeout stops counting once the headers are in; an idle limit on the socket
        // also ends a body that stalls halfway.
        socketTimeout: this._requestTimeoutMs
      })
    };
    if (options.endpoint) {
      // Local and self-hosted servers have no per-bucket DNS names.
      config.endpoint = options.endpoint;
      config.forcePathStyle = true;
    }
    if (options.accessKeyId !== undefined && options.secretAccessKey !== undefined) {
      config.credentials = {
        accessKeyId: options.accessKeyId,
        secretAccessKey: options.secretAccessKey
      };
    } else if (options.credentials !== undefined) {
      config.credentials = options.credentials;
    }
    this._headBucket = options.headBucket ?? true;
    this._client = new S3Client(config);
    Private.trackAttempts(this._client);
    Private.usePayloadHashes(this._client);
    // It only writes to `config.logger`, which is never set, yet filters every call's input and
    // output for it (a walk of the operation's schema per call).
    this._client.middlewareStack.remove('loggerMiddleware');
    this._agents = [httpAgent, httpsAgent];
    this._leanPut =
      options.leanPuts === false
        ? undefined
        : new LeanPut({
            client: this._client,
            httpAgent,
            httpsAgent,
            connectionTimeoutMs: this._connectionTimeoutMs,
            requestTimeoutMs: this._requestTimeoutMs,
            sendChecksum: this._sendChecksums
          });
  }

  /** Where the store is, for logs and feature detection: endpoint (without credentials) and region. */
  readonly description: string;

  /**
   * Write a new version of `key` with a single PutObject.
   *
   * #### Notes
   * With `sha256`, the SDK hashes nothing: the hash is the request's signed payload hash
   * (`x-amz-content-sha256`), and with `checksums` `when_supported` also the object's checksum
   * (`ChecksumSHA256`, stored with the version), in place of the CRC32 the SDK would compute of
   * every body. Either way the server checks the body against it and refuses a mismatch.
   *
   * A put with `sha256` is first sent as one signed HTTP PUT without the SDK's per-request
   * machinery (see {@link LeanPut}, which says why), the same request the SDK would send. Only
   * its 2xx answer is taken; on anything else the SDK's call follows, with its retries and the
   * error mapping of every other call, as if the first attempt had been the SDK's own (a re-put
   * of the same bytes is what the SDK's retry would send). Such a put may thus make one attempt
   * more than `maxAttempts`, and a failure is `ambiguous` when the first attempt may have
   * reached the server even if the SDK's did not.
   *
   * @throws ObjectStoreError `bad-request` for invalid metadata or a body that does not match
   * `sha256`, else as mapped from the server.
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
    const sha256 = options.sha256 === undefined ? undefined : checkSha256(options.sha256);
    let lean: LeanPut.IFailure | undefined;
    if (sha256 !== undefined && this._leanPut?.enabled && !this._closed) {
      const { contentType } = options;
      const result = await this._leanPut.put({ bucket, key, body, sha256, contentType, metadata });
      if (result.ok) {
        this._leanPut.noteSuccess();
        return { versionId: result.versionId, etag: result.etag };
      }
      lean = result;
    }
    const input: PutObjectCommandInput = {
      Bucket: bucket,
      Key: key,
      Body: body,
      ContentType: options.contentType,
      Metadata: metadata
    };
    if (sha256 !== undefined) {
      if (this._sendChecksums) input.ChecksumSHA256 = Buffer.from(sha256, 'hex').toString('base64');
      Private.payloadHashes.set(body, sha256);
    }
    try {
      const output = await this._guard(target, () =>
        this._client.send(new PutObjectCommand(input))
      );
      if (lean) this._leanPut?.noteFallback(lean, true);
      return { versionId: output.VersionId ?? null, etag: output.ETag };
    } catch (error) {
      if (lean) this._leanPut?.noteFallback(lean, false);
      throw lean?.maybeApplied ? Private.ambiguous(error) : error;
    } finally {
      if (sha256 !== undefined) Private.payloadHashes.delete(body);
    }
  }

  /**
   * Read `key` (or one version of it) whole; with `maxBytes`, never more than that.
   *
   * #### Notes
   * The body is always consumed or destroyed, so a failed read never keeps a pooled socket busy.
   * With `maxBytes`, an announced length over it is refused before any of the body is read, and
   * the body is read chunk by chunk and refused as soon as more than `maxBytes` have arrived,
   * whatever the length announced (or an earlier HEAD) said: the request is then aborted, which
   * closes its connection, so the rest of the object is never transferred.
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
    if (maxBytes !== undefined) Private.checkMaxBytes(maxBytes);
    const abort = new AbortController();
    const output = await this._guard(target, () =>
      this._client.send(new GetObjectCommand({ Bucket: bucket, Key: key, VersionId: versionId }), {
        abortSignal: abort.signal
      })
    );
    let body: Buffer;
    try {
      if (maxBytes === undefined) {
        const bytes = output.Body ? await output.Body.transformToByteArray() : new Uint8Array();
        body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      } else {
        if (output.ContentLength !== undefined && output.ContentLength > maxBytes) {
          throw Private.tooLarge(target, maxBytes);
        }
        body = await Private.readAtMost(output.Body, maxBytes, target);
      }
    } catch (error) {
      (output.Body as { destroy?: () => void } | undefined)?.destroy?.();
      abort.abort();
      if (error instanceof ObjectStoreError) throw error;
      throw this._error(error, target, true);
    }
    if (output.ContentLength !== undefined && output.ContentLength !== body.length) {
      throw new ObjectStoreError(
        'unavailable',
        `Could not read ${Private.describe(target)}: the object store sent ${body.length} of ` +
          `${output.ContentLength} bytes`,
        'IncompleteBody'
      );
    }
    return {
      body,
      versionId: output.VersionId ?? null,
      lastModified: output.LastModified ?? null,
      contentType: output.ContentType,
      metadata: Private.lowerCaseKeys(output.Metadata)
    };
  }

  /**
   * Describe `key` (or one version of it) with HeadObject.
   *
   * #### Notes
   * A HEAD answer has no body, hence no error code; a 404 or 403 is explained by one more call
   * (see `_explainHead`).
   */
  async head(bucket: string, key: string, versionId?: string): Promise<IObjectHead> {
    const target = { operation: 'read', bucket, key, versionId };
    Private.checkTarget(target);
    const output = await this._guard(target, () =>
      this._client.send(new HeadObjectCommand({ Bucket: bucket, Key: key, VersionId: versionId }))
    ).catch((error: ObjectStoreError) => this._explainHead(error, target));
    return {
      versionId: output.VersionId ?? null,
      size: output.ContentLength ?? 0,
      lastModified: output.LastModified ?? null,
      etag: output.ETag,
      metadata: Private.lowerCaseKeys(output.Metadata)
    };
  }

  /** Replace the tags of one version with PutObjectTagging. */
  async putVersionTags(
    bucket: string,
    key: string,
    versionId: string,
    tags: Readonly<Record<string, string>>
  ): Promise<void> {
    const target = { operation: 'tag', bucket, key, versionId };
    Private.checkTarget(target);
    const tagSet = Object.entries(checkVersionTags(tags)).map(([Key, Value]) => ({ Key, Value }));
    await this._guard(target, () =>
      this._client.send(
        new PutObjectTaggingCommand({
          Bucket: bucket,
          Key: key,
          VersionId: versionId,
          Tagging: { TagSet: tagSet }
        })
      )
    ).catch((error: ObjectStoreError) => Private.markerIsNotFound(error, target));
  }

  /** The tags of one version, with GetObjectTagging. */
  async getVersionTags(
    bucket: string,
    key: string,
    versionId: string
  ): Promise<Record<string, string>> {
    const target = { operation: 'read the tags of', bucket, key, versionId };
    Private.checkTarget(target);
    const output = await this._guard(target, () =>
      this._client.send(
        new GetObjectTaggingCommand({ Bucket: bucket, Key: key, VersionId: versionId })
      )
    ).catch((error: ObjectStoreError) => Private.markerIsNotFound(error, target));
    const tags: Record<string, string> = {};
    for (const tag of output.TagSet ?? []) {
      if (tag.Key !== undefined) tags[tag.Key] = tag.Value ?? '';
    }
    return tags;
  }

  /**
   * Copy one version into a new version of `targetKey` with CopyObject, the metadata replaced.
   *
   * #### Notes
   * `CopySource` is a URL path, `bucket/key?versionId=id`: the key is percent-encoded (its
   * slashes kept), so that keys with spaces, `?`, `%` or non-ASCII name the same object on
   * every server. A copy of a delete marker's id fails as reading it does (`not-found`): the
   * source version is described first (HeadObject), because versitygw 1.7.0 copies a marker
   * as an empty object where S3 and MinIO refuse it.
   */
  async copyVersion(
    bucket: string,
    sourceKey: string,
    sourceVersionId: string,
    targetKey: string,
    options: ICopyOptions
  ): Promise<IPutResult> {
    const source = { operation: 'copy', bucket, key: sourceKey, versionId: sourceVersionId };
    Private.checkTarget(source);
    Private.checkTarget({ operation: 'copy to', bucket, key: targetKey });
    await this.head(bucket, sourceKey, sourceVersionId);
    const copySource =
      `${bucket}/${encodeURIComponent(sourceKey).replace(/%2F/g, '/')}` +
      `?versionId=${encodeURIComponent(sourceVersionId)}`;
    const output = await this._guard(source, () =>
      this._client.send(
        new CopyObjectCommand({
          Bucket: bucket,
          Key: targetKey,
          CopySource: copySource,
          MetadataDirective: 'REPLACE',
          Metadata: normalizeMetadata(options.metadata),
          ContentType: options.contentType
        })
      )
    ).catch((error: ObjectStoreError) => Private.markerIsNotFound(error, source));
    return { versionId: output.VersionId ?? null, etag: output.CopyObjectResult?.ETag };
  }

  /**
   * Hide `key` behind a delete marker with DeleteObject, naming no version.
   *
   * #### Notes
   * Without a version id a versioned bucket removes nothing. A retry after an ambiguous failure
   * can leave a second marker on top of the first, which readers cannot tell apart from one.
   * MinIO and versitygw write no marker for a key that has no version at all and answer without
   * a version id (null here), where S3 writes one; MinIO also writes none on top of a marker and
   * answers with that marker's id.
   */
  async deleteObject(bucket: string, key: string): Promise<IDeleteResult> {
    const target = { operation: 'delete', bucket, key };
    Private.checkTarget(target);
    const output = await this._guard(target, () =>
      this._client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }))
    );
    return { versionId: output.VersionId ?? null };
  }

  /**
   * Every version of exactly `key`, newest first; delete markers only when asked for.
   *
   * #### Notes
   * ListObjectVersions can only filter by prefix, so `a.ipynb` also lists `a.ipynb.bak` and
   * `a.ipynb/x`; those are dropped. The listing is ordered by key and `key` sorts before every
   * longer key it prefixes, so paging stops at the first other key. Versions keep the server's
   * order, which S3 defines as newest first (MinIO and versitygw follow it; LastModified has only
   * second precision on some servers, so it could not order them anyway).
   *
   * The SDK parses versions and delete markers into two lists, losing how the server interleaved
   * them; with `includeDeleteMarkers` that order is read from the answer's XML itself (see
   * {@link Private.recordEntryOrder}), for the same reason. versitygw 1.7.0 does not interleave:
   * it writes all of a page's delete markers before all of its versions, so a marker older than
   * a version is listed before it there (each kind is still newest first, and `isLatest` right).
   */
  async listVersions(
    bucket: string,
    key: string,
    options: { includeDeleteMarkers?: boolean } = {}
  ): Promise<IObjectVersion[]> {
    const target = { operation: 'list the versions of', bucket, key };
    Private.checkTarget(target);
    const versions: IObjectVersion[] = [];
    let markers: Private.IListMarkers = {};
    while (true) {
      const call = await this._listKeyVersions(target, key, markers, options.includeDeleteMarkers);
      versions.push(...call.versions);
      if (!call.resume) return versions;
      markers = call.resume;
    }
  }

  /**
   * One ListObjectVersions call below `key`, from `markers`: the versions of exactly `key` in the
   * listing's order (the server's, delete markers included, with `includeDeleteMarkers`), and
   * where the server would resume, or nothing once the listing is done or has passed beyond
   * `key` (other keys that `key` prefixes come after all of its entries).
   */
  private async _listKeyVersions(
    target: Private.ITarget,
    key: string,
    markers: Private.IListMarkers,
    includeDeleteMarkers: boolean | undefined
  ): Promise<{ versions: IObjectVersion[]; resume?: Private.IListMarkers }> {
    const command = new ListObjectVersionsCommand({
      Bucket: target.bucket,
      Prefix: key,
      KeyMarker: markers.keyMarker,
      VersionIdMarker: markers.versionIdMarker,
      MaxKeys: markers.maxKeys
    });
    const order = includeDeleteMarkers ? Private.recordEntryOrder(command) : undefined;
    const page = await this._guard(target, () => this._client.send(command));
    const entries = order
      ? Private.entriesInOrder(page, order.kinds)
      : Private.entries(page.Versions, false);
    const versions: IObjectVersion[] = [];
    let passedKey = false;
    for (const entry of entries) {
      if (entry.key === key) versions.push(entry.version);
      else passedKey = true;
    }
    passedKey ||= (page.DeleteMarkers ?? []).some(marker => marker.Key !== key);
    // The server's own markers, as given: MinIO adds a cache hint to NextKeyMarker.
    if (passedKey || !page.IsTruncated || page.NextKeyMarker === undefined) return { versions };
    return {
      versions,
      resume: { keyMarker: page.NextKeyMarker, versionIdMarker: page.NextVersionIdMarker }
    };
  }

  /**
   * One page of the versions of exactly `key`, newest first, with ListObjectVersions from the
   * marker `after` (KeyMarker `key`, VersionIdMarker `after`).
   *
   * #### Notes
   * Each call asks for what the page still needs plus one entry, so that a page that ends the
   * key's entries says so (no empty last page); `next` is the id of the last entry returned.
   * Other keys that `key` prefixes come after all of its entries and end the page, as in
   * {@link listVersions}. Within one page the server's NextKeyMarker is passed back as given
   * (MinIO appends a cache hint to the key); a page's `next` resumes with KeyMarker `key`. Delete markers left out still count towards S3's MaxKeys, so filling
   * a page can take several calls; at most {@link Private.MAX_PAGE_CALLS} are made, and a page
   * cut short by that resumes where the server stopped (`next` may then be a delete marker's
   * id). With `includeDeleteMarkers`, the order is the server's as for {@link listVersions}
   * (on versitygw, which writes a page's markers first, paging through markers is only
   * approximate; the store API only asks for the newest entry).
   */
  async listVersionPage(
    bucket: string,
    key: string,
    options: IVersionPageOptions
  ): Promise<IObjectVersionPage> {
    const target = { operation: 'list the versions of', bucket, key };
    Private.checkTarget(target);
    const limit = checkVersionPageLimit(options.limit);
    if (options.after !== undefined) Private.checkMarker(options.after);
    const versions: IObjectVersion[] = [];
    let keyMarker = options.after === undefined ? undefined : key;
    let versionIdMarker = options.after;
    for (let call = 0; call < Private.MAX_PAGE_CALLS; call++) {
      const listed = await this._listKeyVersions(
        target,
        key,
        { keyMarker, versionIdMarker, maxKeys: Math.min(1000, limit - versions.length + 1) },
        options.includeDeleteMarkers
      );
      for (const version of listed.versions) {
        if (options.after !== undefined && version.versionId === options.after) {
          // S3 lists what follows the marker; versitygw 1.7.0 starts over from the newest when
          // the marker is the latest version, the marker included: what came so far is the
          // page before.
          versions.length = 0;
          continue;
        }
        // One more entry than the page holds: there is a next page, from the last one returned.
        if (versions.length === limit) return { versions, next: versions[limit - 1].versionId };
        versions.push(version);
      }
      if (!listed.resume?.keyMarker || !listed.resume.versionIdMarker) return { versions };
      ({ keyMarker, versionIdMarker } = listed.resume);
    }
    // Cut short: the next page resumes where the server stopped (with KeyMarker `key`).
    return { versions, next: versionIdMarker };
  }

  /**
   * Every key below `prefix` whose latest version is not a delete marker, in UTF-8 byte order,
   * with ListObjectsV2.
   *
   * #### Notes
   * ListObjectsV2 on a versioned bucket already lists only keys whose latest entry is an object.
   * One page (`listPageSize` keys, 1000 by default, S3's maximum) is fetched at a time, when the
   * caller has consumed the one before.
   */
  async *listLatest(bucket: string, prefix: string): AsyncGenerator<IObjectSummary> {
    const target = { operation: listLatestOperation(prefix), bucket };
    Private.checkTarget(target);
    checkObjectPrefix(prefix);
    let token: string | undefined;
    do {
      const page = await this._guard(target, () =>
        this._client.send(
          new ListObjectsV2Command({
            Bucket: bucket,
            Prefix: prefix === '' ? undefined : prefix,
            ContinuationToken: token,
            MaxKeys: this._listPageSize
          })
        )
      );
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined) continue;
        yield {
          key: object.Key,
          size: object.Size ?? 0,
          etag: object.ETag,
          lastModified: object.LastModified ?? new Date(0)
        };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }

  /**
   * Every version and delete marker below `prefix`, with ListObjectVersions.
   *
   * #### Notes
   * One page (`listPageSize` entries, 1000 by default) is fetched at a time, when the caller has
   * consumed the one before, and resumed with the server's NextKeyMarker and NextVersionIdMarker
   * as given. Versions and markers keep the server's order, read from the answer's XML as for
   * {@link listVersions}.
   */
  async *listAllVersions(bucket: string, prefix: string): AsyncGenerator<IKeyVersion> {
    const target = { operation: listAllVersionsOperation(prefix), bucket };
    Private.checkTarget(target);
    checkObjectPrefix(prefix);
    let markers: Private.IListMarkers | undefined = {};
    // The ids listed so far of the key a page ended in: versitygw 1.7.0 resumes a key from its
    // newest entry when the VersionIdMarker is the latest, listing some entries again.
    let lastKey: string | undefined;
    const lastKeyIds = new Set<string>();
    while (markers) {
      const command: ListObjectVersionsCommand = new ListObjectVersionsCommand({
        Bucket: bucket,
        Prefix: prefix === '' ? undefined : prefix,
        KeyMarker: markers.keyMarker,
        VersionIdMarker: markers.versionIdMarker,
        MaxKeys: this._listPageSize
      });
      const order = Private.recordEntryOrder(command);
      const page: ListObjectVersionsCommandOutput = await this._guard(target, () =>
        this._client.send(command)
      );
      // Stable, in the server's UTF-8 byte order: keeps each key's entries together even where
      // entriesInOrder had to fall back to ordering by time.
      const listed = Private.entriesInOrder(page, order.kinds).sort((a, b) =>
        Buffer.compare(Buffer.from(a.key ?? '', 'utf8'), Buffer.from(b.key ?? '', 'utf8'))
      );
      for (const entry of listed) {
        if (entry.key === undefined) continue;
        if (entry.key !== lastKey) {
          lastKey = entry.key;
          lastKeyIds.clear();
        } else if (lastKeyIds.has(entry.version.versionId)) {
          continue;
        }
        lastKeyIds.add(entry.version.versionId);
        yield { key: entry.key, ...entry.version };
      }
      const next: Private.IListMarkers | undefined =
        page.IsTruncated && page.NextKeyMarker !== undefined
          ? { keyMarker: page.NextKeyMarker, versionIdMarker: page.NextVersionIdMarker }
          : undefined;
      // A server that answers with the markers it was given would list the same page forever.
      const stuck: boolean =
        next !== undefined &&
        next.keyMarker === markers.keyMarker &&
        next.versionIdMarker === markers.versionIdMarker;
      if (stuck) {
        throw new ObjectStoreError(
          'unavailable',
          `Could not ${target.operation} ${describeStoreTarget(target)}: the server resumed ` +
            'the listing where it was (InvalidListing)',
          'InvalidListing'
        );
      }
      markers = next;
    }
  }

  /**
   * The rules of GetBucketLifecycleConfiguration, as the SDK parsed them; a bucket without a
   * configuration (`NoSuchLifecycleConfiguration`) has none.
   */
  async getLifecycleRules(bucket: string): Promise<ILifecycleRule[]> {
    const target = { operation: 'read the lifecycle configuration of', bucket };
    Private.checkTarget(target);
    try {
      const output = await this._guard(target, () =>
        this._client.send(new GetBucketLifecycleConfigurationCommand({ Bucket: bucket }))
      );
      return (output.Rules ?? []) as ILifecycleRule[];
    } catch (error) {
      if (Private.isNoLifecycle(error)) return [];
      throw lifecycleSupport(error, target);
    }
  }

  /**
   * PutBucketLifecycleConfiguration with every rule, or DeleteBucketLifecycle when none is left
   * (S3 refuses a configuration without rules). The rules go to the SDK as they came, so rules
   * read from the bucket are written back with every field they had.
   */
  async putLifecycleRules(bucket: string, rules: readonly ILifecycleRule[]): Promise<void> {
    const target = { operation: 'write the lifecycle configuration of', bucket };
    Private.checkTarget(target);
    await this._guard(target, () =>
      rules.length === 0
        ? this._client.send(new DeleteBucketLifecycleCommand({ Bucket: bucket }))
        : this._client.send(
            new PutBucketLifecycleConfigurationCommand({
              Bucket: bucket,
              LifecycleConfiguration: { Rules: [...rules] as LifecycleRule[] }
            })
          )
    ).catch(error => {
      // Removing a configuration that is not there (MinIO says so) leaves what was asked for.
      if (rules.length === 0 && Private.isNoLifecycle(error)) return;
      throw lifecycleSupport(error, target);
    });
  }

  /**
   * HeadBucket (existence and permission) unless the `headBucket` option is false, then
   * GetBucketVersioning.
   */
  async checkBucket(bucket: string): Promise<IBucketCheck> {
    const target = { operation: 'check', bucket };
    Private.checkTarget(target);
    if (this._headBucket) {
      await this._guard(target, () =>
        this._client.send(new HeadBucketCommand({ Bucket: bucket }))
      ).catch((error: ObjectStoreError) => this._explainHead(error, target));
    }
    const versioning = await this._guard(target, () =>
      this._client.send(new GetBucketVersioningCommand({ Bucket: bucket }))
    );
    // A bucket whose versioning was never configured answers with no Status at all.
    return { versioning: versioning.Status ?? 'Disabled' };
  }

  /** Close the pooled connections. Calls made afterwards fail. */
  async close(): Promise<void> {
    this._closed = true;
    this._leanPut?.clear();
    this._client.destroy();
    for (const agent of this._agents) agent.destroy();
  }

  /**
   * Throw the best explanation of a failed HEAD request.
   *
   * #### Notes
   * A HEAD answer has no body, so its error carries only a status: a 404 could be a missing key,
   * a missing bucket, or (versitygw) an unknown access key id; a 403 a wrong secret or a policy.
   * GetBucketVersioning answers with a coded body; its answer replaces the HEAD's only when it
   * names a credential problem or a missing bucket. A plain AccessDenied does not count: a policy
   * may allow reading objects but not the bucket's versioning.
   */
  private async _explainHead(error: ObjectStoreError, target: Private.ITarget): Promise<never> {
    if (
      (error.kind !== 'not-found' && error.kind !== 'access-denied') ||
      Private.PRECISE_HEAD_CODES.has(error.code)
    ) {
      throw error;
    }
    try {
      await this._client.send(new GetBucketVersioningCommand({ Bucket: target.bucket }));
    } catch (followUp) {
      const explained = this._error(followUp, target, false);
      if (Private.CREDENTIAL_CODES.has(explained.code) || explained.code === 'NoSuchBucket') {
        throw explained;
      }
    }
    throw error;
  }

  /** Run one SDK call, turning its failure into an ObjectStoreError. */
  private async _guard<Output>(
    target: Private.ITarget,
    call: () => Promise<Output>
  ): Promise<Output> {
    try {
      return await call();
    } catch (error) {
      throw this._error(error, target, false);
    }
  }

  private _error(error: unknown, target: Private.ITarget, readingBody: boolean): ObjectStoreError {
    return toObjectStoreError(error, {
      ...target,
      where: this._where,
      connectionTimeoutMs: this._connectionTimeoutMs,
      requestTimeoutMs: this._requestTimeoutMs,
      readingBody
    });
  }

  private readonly _client: S3Client;
  /** The handler's connection pools (plain and TLS), which the lean puts share. */
  private readonly _agents: readonly (http.Agent | https.Agent)[];
  /** Puts with a SHA-256 without the SDK's per-request cost; unset with `leanPuts: false`. */
  private readonly _leanPut: LeanPut | undefined;
  private _closed = false;
  private readonly _headBucket: boolean;
  /** `checksums` is `when_supported`: a SHA-256 given to `put` is sent as the object's checksum. */
  private readonly _sendChecksums: boolean;
  private readonly _where: string;
  private readonly _connectionTimeoutMs: number;
  private readonly _requestTimeoutMs: number;
  private readonly _listPageSize: number;
}

export namespace S3ObjectStore {
  export interface IOptions {
    /** An S3-compatible server's URL; unset for AWS (then addressing is virtual-host style). */
    endpoint?: string;
    region: string;
    /**
     * Both or neither; neither uses `credentials`, or else the SDK's default chain (environment,
     * profile, role).
     */
    accessKeyId?: string;
    secretAccessKey?: string;
    /** A provider of expiring credentials, such as JupyterHub's credential service's. */
    credentials?: S3ClientConfig['credentials'];
    /**
     * Whether `checkBucket` starts with HeadBucket; default true. S3 authorizes HeadBucket as
     * ListBucket of the whole bucket, which credentials scoped to prefixes do not have:
     * GetBucketVersioning alone then tells a missing bucket and refused credentials.
     */
    headBucket?: boolean;
    /** Connections per protocol in the pool (`max_threads`). */
    maxSockets: number;
    /** Longest a request may take (and a body read may stall); default 30 s. */
    requestTimeoutMs?: number;
    /** Longest a connection may take to open; default 5 s. */
    connectionTimeoutMs?: number;
    /**
     * The SDK's checksum mode; `when_required` for servers that reject checksum headers (a
     * SHA-256 given to `put` is then only the signed payload hash, not a checksum header).
     */
    checksums?: 'when_supported' | 'when_required';
    /** Attempts per call including the first (SDK standard retries); default 3. */
    maxAttempts?: number;
    /**
     * Whether a put with a SHA-256 is first sent without the SDK's per-request machinery (see
     * {@link LeanPut}); default true. Tests turn it off to compare with the SDK's own request.
     */
    leanPuts?: boolean;
    /**
     * Keys per ListObjectsV2 page in `listLatest`, and entries per ListObjectVersions page in
     * `listAllVersions`; default 1000 (tests make it small).
     */
    listPageSize?: number;
  }
}

/** What a failed call was doing, for the message. */
export interface IFailedCall {
  /** A verb: `read`, `write`, `delete`, `check`, `list the versions of`, `list the objects of`. */
  readonly operation: string;
  readonly bucket: string;
  readonly key?: string;
  readonly versionId?: string;
  /** The server as {@link S3ObjectStore.description} names it (no credentials). */
  readonly where: string;
  readonly connectionTimeoutMs?: number;
  readonly requestTimeoutMs?: number;
  /** True when the failure came while reading a response body. */
  readonly readingBody?: boolean;
}

/**
 * Turn whatever the SDK or the network threw into an {@link ObjectStoreError}: the one place
 * where S3 error codes, HTTP statuses and socket errors get their meaning.
 *
 * #### Notes
 * The message is our own sentence plus the code, never the server's text, which can quote the
 * access key id (`InvalidAccessKeyId`, `SignatureDoesNotMatch`). `ambiguous` is set when any
 * attempt of the call (the SDK retries) may have reached the server without an answer that
 * proves it was refused: a timeout, a cut connection, a 500/502/504.
 */
export function toObjectStoreError(error: unknown, call: IFailedCall): ObjectStoreError {
  if (error instanceof ObjectStoreError) return error;
  const record =
    typeof error === 'object' && error !== null ? Private.callRecords.get(error) : undefined;
  const facts = Private.facts(Private.unwrap(error));
  const ambiguous = record?.maybeSent ?? Private.mayHaveApplied(error);
  const what = Private.describe(call);
  const { name, status, code } = facts;

  if (Private.UNAVAILABLE_NAMES.has(name) || (status !== undefined && status >= 500)) {
    const throttled = Private.THROTTLE_NAMES.has(name) || status === 503;
    const reason =
      name === 'RequestTimeout'
        ? 'the object store gave up waiting for the request'
        : throttled
          ? `the object store at ${call.where} asks to slow down or is unavailable`
          : `the object store at ${call.where} answered with a server error (HTTP ${status ?? '5xx'})`;
    return new ObjectStoreError(
      'unavailable',
      `Could not ${call.operation} ${what}: ${reason} (${code})`,
      code,
      ambiguous
    );
  }
  if (facts.deleteMarker && (status === 404 || status === 405)) {
    // The read met a delete marker: S3 answers 404 NoSuchKey when the marker is the latest entry
    // and 405 MethodNotAllowed when the call named the marker's own version id. Both mean there
    // is nothing to read, as the embedded store says with the same codes; a HEAD answer has no
    // body, so the code is taken from the status.
    const markerCode = status === 405 ? 'MethodNotAllowed' : 'NoSuchKey';
    const message =
      status === 405
        ? `Version "${displayable(call.versionId ?? '')}" of ` +
          `${Private.describe({ ...call, versionId: undefined })} is a delete marker`
        : `${what} does not exist`;
    return new ObjectStoreError('not-found', `${message} (${markerCode})`, markerCode, ambiguous);
  }
  const deniedByName = Private.ACCESS_DENIED_NAMES.has(name);
  if (!deniedByName && (Private.NOT_FOUND_NAMES.has(name) || status === 404)) {
    let message: string;
    if (name === 'NoSuchBucket' || call.key === undefined) {
      message = `The bucket "${displayable(call.bucket)}" does not exist`;
    } else if (name === 'NoSuchVersion' || call.versionId !== undefined) {
      message = `Version "${displayable(call.versionId ?? '')}" of ${Private.describe({ ...call, versionId: undefined })} does not exist`;
    } else {
      message = `${what} does not exist`;
    }
    return new ObjectStoreError('not-found', `${message} (${code})`, code, ambiguous);
  }
  if (deniedByName || status === 403 || status === 401) {
    const reason =
      name === 'InvalidAccessKeyId' || name === 'XAdminUserNotFound'
        ? 'the object store does not know the configured access key id'
        : name === 'SignatureDoesNotMatch'
          ? 'the object store rejected the request signature; check the secret access key'
          : name === 'ExpiredToken' || name === 'TokenRefreshRequired'
            ? 'the object store credentials have expired'
            : name === 'CredentialsProviderError'
              ? 'no object store credentials were found (environment, profile or role)'
              : 'access was denied; check the credentials and the bucket policy';
    return new ObjectStoreError(
      'access-denied',
      `Could not ${call.operation} ${what}: ${reason} (${code})`,
      code,
      ambiguous
    );
  }
  if (status !== undefined && status >= 300 && status < 500) {
    const reason =
      name === 'InvalidBucketName'
        ? `"${displayable(call.bucket)}" is not a valid bucket name`
        : Private.CHECKSUM_MISMATCH_CODES.has(name)
          ? CHECKSUM_MISMATCH_REASON
          : name === 'PermanentRedirect' ||
              name === 'AuthorizationHeaderMalformed' ||
              status === 301
            ? 'the bucket is in another region than the one configured'
            : call.versionId !== undefined && (name === 'InvalidArgument' || status === 400)
              ? `"${displayable(call.versionId)}" is not a valid version id`
              : 'the object store refused the request as invalid';
    return new ObjectStoreError(
      'bad-request',
      `Could not ${call.operation} ${what}: ${reason} (${code})`,
      code,
      ambiguous
    );
  }
  return new ObjectStoreError(
    'unavailable',
    `Could not ${call.operation} ${what}: ${Private.networkReason(facts, call)} (${code})`,
    code,
    ambiguous
  );
}

namespace Private {
  /** What a call addresses. */
  export type ITarget = IStoreTarget;

  /** The answer of a lifecycle call on a bucket that has no lifecycle configuration. */
  export function isNoLifecycle(error: unknown): boolean {
    return error instanceof ObjectStoreError && error.code === 'NoSuchLifecycleConfiguration';
  }

  /** Where a ListObjectVersions call starts, and how many entries it may return. */
  export interface IListMarkers {
    readonly keyMarker?: string;
    readonly versionIdMarker?: string;
    readonly maxKeys?: number;
  }

  /**
   * What servers answer when a body does not match a hash sent with it: S3 and versitygw
   * `BadDigest`, MinIO `XAmzContentChecksumMismatch` for the object's checksum and
   * `XAmzContentSHA256Mismatch` (S3 too) for the signed payload hash.
   */
  export const CHECKSUM_MISMATCH_CODES = new Set([
    'BadDigest',
    'InvalidDigest',
    'XAmzContentChecksumMismatch',
    'XAmzContentSHA256Mismatch'
  ]);

  /** SHA-256s (hex) of bodies being put, by body: the signed payload hash of their request. */
  export const payloadHashes = new WeakMap<object, string>();

  /**
   * Sign the body of a put whose SHA-256 the caller gave with that hash, so that the signer does
   * not hash the body again.
   *
   * #### Notes
   * SigV4 signs `x-amz-content-sha256`, which S3 requests always carry; the signer computes it
   * from the body unless the header is there already. A middleware of the build step (before
   * signing) sets it from {@link payloadHashes}. The server checks it against the body it
   * received, so a wrong hash fails the put rather than storing other bytes.
   */
  export function usePayloadHashes(client: S3Client): void {
    client.middlewareStack.add(
      next => async args => {
        const request = args.request as { headers?: Record<string, string>; body?: unknown };
        const body = request?.body;
        const sha256 =
          typeof body === 'object' && body !== null ? payloadHashes.get(body) : undefined;
        if (sha256 !== undefined && request.headers) {
          request.headers['x-amz-content-sha256'] = sha256;
        }
        return next(args);
      },
      { step: 'build', name: 'jupyterStorePayloadHash' }
    );
  }

  /**
   * `error` marked ambiguous: a put whose first, lean attempt may have reached the server failed
   * afterwards in the SDK's call, whose own attempts may all have been refused.
   */
  export function ambiguous(error: unknown): unknown {
    if (!(error instanceof ObjectStoreError) || error.ambiguous) return error;
    return new ObjectStoreError(error.kind, error.message, error.code, true);
  }

  /** Codes and names that mean "does not exist". */
  export const NOT_FOUND_NAMES = new Set([
    'NoSuchKey',
    'NoSuchBucket',
    'NoSuchVersion',
    'NotFound'
  ]);

  /** Codes that say the credentials themselves are wrong, not a policy. */
  export const CREDENTIAL_CODES = new Set([
    'InvalidAccessKeyId',
    'SignatureDoesNotMatch',
    'ExpiredToken',
    'TokenRefreshRequired',
    'InvalidToken',
    // versitygw's answer to an unknown access key id (a 404).
    'XAdminUserNotFound'
  ]);

  /** HEAD failures that need no explaining: the error already names its cause. */
  export const PRECISE_HEAD_CODES = new Set([
    ...CREDENTIAL_CODES,
    'NoSuchKey',
    'NoSuchBucket',
    'NoSuchVersion',
    // Only ever given to an answer that says it met a delete marker (see toObjectStoreError).
    'MethodNotAllowed'
  ]);

  /** Codes and names that mean "these credentials may not do this". */
  export const ACCESS_DENIED_NAMES = new Set([
    ...CREDENTIAL_CODES,
    'AccessDenied',
    'AllAccessDisabled',
    'AccountProblem',
    'CredentialsProviderError'
  ]);

  /** Server-side refusals that say "try again later". */
  export const THROTTLE_NAMES = new Set([
    'SlowDown',
    'Throttling',
    'ThrottlingException',
    'ThrottledException',
    'TooManyRequestsException',
    'RequestLimitExceeded',
    'RequestThrottled',
    'RequestThrottledException',
    'ServiceUnavailable',
    'BandwidthLimitExceeded',
    'PriorRequestNotComplete'
  ]);

  /** Names that are transient whatever their status (`RequestTimeout` is a 400). */
  export const UNAVAILABLE_NAMES = new Set([
    ...THROTTLE_NAMES,
    'RequestTimeout',
    'RequestTimeoutException',
    'InternalError'
  ]);

  /** Socket errors raised before a request could leave: nothing reached the server. */
  const NOT_SENT_CODES = new Set([
    'ECONNREFUSED',
    'ENOTFOUND',
    'EAI_AGAIN',
    'EHOSTUNREACH',
    'ENETUNREACH',
    'EADDRNOTAVAIL',
    'ERR_INVALID_URL'
  ]);

  /** The handler's message when the connect phase timed out (its error has no code). */
  const CONNECT_TIMEOUT = /did not establish a connection/;

  /** The handler's message when the whole request timed out (`ETIMEDOUT`). */
  const REQUEST_TIMEOUT = /exceeded the configured \d+ ms requestTimeout/;

  /** The handler's message when a socket stayed idle too long. */
  const SOCKET_TIMEOUT = /timed out after \d+ ms of inactivity/;

  /** What an SDK, HTTP or socket error says about itself. */
  export interface IFacts {
    /** The S3 error code, or the error's class name (`TimeoutError`, `Error`). */
    readonly name: string;
    readonly status?: number;
    /** The best code to report: the S3 code, the socket code, or the name. */
    readonly code: string;
    readonly socketCode?: string;
    readonly message: string;
    /** The answer carried `x-amz-delete-marker: true`: the key or version is a delete marker. */
    readonly deleteMarker: boolean;
  }

  export function facts(error: unknown): IFacts {
    if (typeof error !== 'object' || error === null) {
      return {
        name: 'UnknownError',
        code: 'UnknownError',
        message: String(error),
        deleteMarker: false
      };
    }
    const record = error as {
      name?: unknown;
      code?: unknown;
      message?: unknown;
      errors?: unknown;
      $metadata?: { httpStatusCode?: unknown };
      $response?: { statusCode?: unknown; headers?: Record<string, unknown> };
    };
    const name = typeof record.name === 'string' ? record.name : 'Error';
    const rawStatus = record.$metadata?.httpStatusCode ?? record.$response?.statusCode;
    const status = typeof rawStatus === 'number' && rawStatus > 0 ? rawStatus : undefined;
    let socketCode = typeof record.code === 'string' ? record.code : undefined;
    // Node's happy-eyeballs connect reports one AggregateError for all addresses it tried.
    if (socketCode === undefined && Array.isArray(record.errors)) {
      const inner = record.errors.find(
        (each): each is { code: string } => typeof each?.code === 'string'
      );
      socketCode = inner?.code;
    }
    const message = typeof record.message === 'string' ? record.message : '';
    const isServiceError = status !== undefined;
    // A bodiless error answer (HEAD) has no code; the SDK then says "Unknown" or the status.
    const code = isServiceError
      ? name === 'Unknown' || name === 'UnknownError'
        ? String(status)
        : name
      : (socketCode ?? name);
    const headers = Object.entries(record.$response?.headers ?? {});
    const deleteMarker = headers.some(
      ([header, value]) =>
        header.toLowerCase() === 'x-amz-delete-marker' && String(value).toLowerCase() === 'true'
    );
    return { name, status, code, socketCode, message, deleteMarker };
  }

  /**
   * Could this one attempt have taken effect on the server? Only a refusal proves it did not:
   * no connection at all, a 4xx, or a 503 (S3's "slow down").
   */
  export function mayHaveApplied(error: unknown): boolean {
    const { status, socketCode, message, name } = facts(error);
    if (status !== undefined) return status >= 500 && status !== 503;
    if (socketCode !== undefined && NOT_SENT_CODES.has(socketCode)) return false;
    if (name === 'TimeoutError' && CONNECT_TIMEOUT.test(message)) return false;
    if (name === 'CredentialsProviderError') return false;
    return true;
  }

  /** Why a call failed without an HTTP answer, as a sentence. */
  export function networkReason(facts: IFacts, call: IFailedCall): string {
    const { socketCode, message, name } = facts;
    const at = `the object store at ${call.where}`;
    if (socketCode === 'ECONNREFUSED') return `${at} refused the connection`;
    if (socketCode === 'ENOTFOUND' || socketCode === 'EAI_AGAIN') {
      return `the host name of ${at} could not be resolved`;
    }
    if (socketCode === 'EHOSTUNREACH' || socketCode === 'ENETUNREACH') {
      return `${at} is not reachable from this machine`;
    }
    if (name === 'TimeoutError' && CONNECT_TIMEOUT.test(message)) {
      return `${at} did not accept a connection within ${call.connectionTimeoutMs} ms`;
    }
    if (REQUEST_TIMEOUT.test(message) || SOCKET_TIMEOUT.test(message)) {
      return `${at} did not answer within ${call.requestTimeoutMs} ms`;
    }
    if (socketCode === 'ECONNRESET' || socketCode === 'EPIPE' || message === 'aborted') {
      return `the connection to ${at} was cut`;
    }
    if (name === 'AbortError') return 'the request was aborted';
    if (call.readingBody) return `the answer of ${at} could not be read`;
    return `${at} could not be reached`;
  }

  /** What the attempts of one failed call showed, filed under the error that came out of it. */
  export interface ICallRecord {
    /** Whether any attempt may have taken effect on the server. */
    readonly maybeSent: boolean;
    /** The last attempt's own error, as the HTTP handler or the deserializer threw it. */
    readonly lastAttemptError: unknown;
  }

  /** Failed calls' records, by the error `send` rejected with. */
  export const callRecords = new WeakMap<object, ICallRecord>();

  /** The context slots where one call's attempts are tallied. */
  const MAYBE_SENT = 'jupyterStoreMaybeSent';
  const LAST_ERROR = 'jupyterStoreLastAttemptError';

  /**
   * Record, per call, whether any attempt may have taken effect, and the last attempt's error.
   *
   * #### Notes
   * The SDK retries inside one `send`, and only the last attempt's error comes out: a put whose
   * first attempt timed out after the server stored it and whose retry then met a refused
   * connection would look unambiguous. A middleware inside the retry loop (deserialize step) sees
   * every attempt; one outside it (initialize step) files the tally under the error that escapes.
   * The raw error is kept because the retry middleware replaces an error that is not an `Error`
   * of its own realm (socket errors under Jest's VM contexts) with a bare
   * "AWS SDK error wrapper", losing the code.
   */
  export function trackAttempts(client: S3Client): void {
    client.middlewareStack.add(
      (next, context) => async args => {
        context[MAYBE_SENT] = false;
        context[LAST_ERROR] = undefined;
        try {
          return await next(args);
        } catch (error) {
          if (typeof error === 'object' && error !== null) {
            callRecords.set(error, {
              maybeSent: context[MAYBE_SENT] === true,
              lastAttemptError: context[LAST_ERROR]
            });
          }
          throw error;
        }
      },
      { step: 'initialize', priority: 'high', name: 'jupyterStoreAttemptTally' }
    );
    client.middlewareStack.add(
      (next, context) => async args => {
        try {
          return await next(args);
        } catch (error) {
          if (mayHaveApplied(error)) context[MAYBE_SENT] = true;
          context[LAST_ERROR] = error;
          throw error;
        }
      },
      { step: 'deserialize', priority: 'high', name: 'jupyterStoreAttemptCheck' }
    );
  }

  /**
   * The error to classify: the last attempt's own error when the SDK's retry middleware wrapped it
   * beyond recognition, else the error itself.
   */
  export function unwrap(error: unknown): unknown {
    const record = typeof error === 'object' && error !== null ? callRecords.get(error) : undefined;
    if (!record || record.lastAttemptError === undefined) return error;
    const message = (error as { message?: unknown }).message;
    const raw = record.lastAttemptError;
    const wrapped = message === `AWS SDK error wrapper for ${String(raw)}`;
    return wrapped ? raw : error;
  }

  /** Refuse what no server could answer sensibly, before sending it. */
  /**
   * A tagging call that named a delete marker: S3 servers refuse it as a bad request (405
   * MethodNotAllowed); like a read of the marker, it names no version, so it is `not-found`.
   */
  export function markerIsNotFound(error: ObjectStoreError, target: ITarget): never {
    if (error.kind === 'bad-request' && error.code === 'MethodNotAllowed') {
      throw new ObjectStoreError(
        'not-found',
        `Could not ${target.operation} ${describeStoreTarget(target)}: it is a delete marker (MethodNotAllowed)`,
        'MethodNotAllowed'
      );
    }
    throw error;
  }

  export function checkTarget(target: ITarget): void {
    if (target.bucket === '') {
      throw new ObjectStoreError('bad-request', 'No bucket was given', 'InvalidBucketName');
    }
    if (target.key !== undefined) checkObjectKey(target.key);
    if (target.versionId === '') {
      throw new ObjectStoreError(
        'bad-request',
        'A version id must not be empty',
        'InvalidArgument'
      );
    }
  }

  /** `s3://bucket/key`, `version "v" of s3://bucket/key`, or `bucket "b"`, log-safe. */
  export const describe = describeStoreTarget;

  /** The endpoint URL without user info (a URL may carry credentials). */
  export function endpointForDisplay(endpoint: string): string {
    try {
      const url = new URL(endpoint);
      url.username = '';
      url.password = '';
      return url.toString().replace(/\/$/, '');
    } catch {
      return 'an invalid endpoint URL';
    }
  }

  /** A listing's page size, checked once in the constructor: a bad one is a programming error. */
  export function checkPageSize(size: number): number {
    if (!Number.isSafeInteger(size) || size < 1 || size > 1000) {
      throw new RangeError(`A listing page size must be an integer from 1 to 1000, not ${size}`);
    }
    return size;
  }

  /** ListObjectVersions calls one `listVersionPage` makes at most (10,000 entries scanned). */
  export const MAX_PAGE_CALLS = 10;

  /** A version-id marker to resume after: what a page's `next` was, so never empty. */
  export function checkMarker(marker: string): void {
    if (marker === '' || marker.length > 1024) {
      throw new ObjectStoreError(
        'bad-request',
        'A version listing cannot resume after an empty or overlong version id',
        'InvalidArgument'
      );
    }
  }

  /** A `maxBytes` for `get`: a whole number of bytes (a bad one is a programming error). */
  export function checkMaxBytes(maxBytes: number): void {
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
      throw new RangeError(`maxBytes must be a whole number of bytes, not ${maxBytes}`);
    }
  }

  /** The read of `target` refused or stopped because it is over `maxBytes`. */
  export const tooLarge = tooLargeError;

  /**
   * A response body read chunk by chunk, refused with {@link tooLarge} as soon as more than
   * `maxBytes` have arrived; the chunk that passes the limit is not kept. Leaving the loop early
   * destroys the stream; the caller also aborts the request.
   */
  export async function readAtMost(
    body: unknown,
    maxBytes: number,
    target: ITarget
  ): Promise<Buffer> {
    if (body === undefined || body === null) return Buffer.alloc(0);
    const iterable = body as Partial<AsyncIterable<Uint8Array>>;
    if (typeof iterable[Symbol.asyncIterator] !== 'function') {
      // Not a Node stream (never under Node's handler): its bytes can only be read whole.
      throw new ObjectStoreError(
        'unavailable',
        `Could not read ${describe(target)}: the answer's body cannot be read in chunks`,
        'UnreadableBody'
      );
    }
    const chunks: Buffer[] = [];
    let total = 0;
    for await (const chunk of iterable as AsyncIterable<Uint8Array>) {
      total += chunk.byteLength;
      if (total > maxBytes) throw tooLarge(target, maxBytes);
      chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    }
    return Buffer.concat(chunks, total);
  }

  /** One entry of a ListObjectVersions page: a version or a delete marker, with its key. */
  export interface IEntry {
    readonly key: string | undefined;
    readonly version: IObjectVersion;
  }

  type ListedEntry = NonNullable<ListObjectVersionsCommandOutput['Versions']>[number] &
    NonNullable<ListObjectVersionsCommandOutput['DeleteMarkers']>[number];

  /** A page's versions, or its delete markers, as entries in the page's order. */
  export function entries(
    listed: readonly Partial<ListedEntry>[] | undefined,
    deleteMarkers: boolean
  ): IEntry[] {
    return (listed ?? []).map(each => ({
      key: each.Key,
      version: {
        versionId: each.VersionId ?? 'null',
        lastModified: each.LastModified ?? new Date(0),
        size: deleteMarkers ? 0 : (each.Size ?? 0),
        isLatest: each.IsLatest ?? false,
        ...(deleteMarkers ? { deleteMarker: true } : {})
      }
    }));
  }

  /** Which list each `<Version>` or `<DeleteMarker>` of an answer went to, in document order. */
  export type EntryKind = 'version' | 'marker';

  /**
   * A page's versions and delete markers merged as the server ordered them.
   *
   * #### Notes
   * `kinds` is the document order {@link recordEntryOrder} saw. When it is missing or does not
   * match the parsed lists, the entries are ordered newest first by LastModified, the latest
   * first among equal times: right except for entries of one key written within the same second
   * on servers with second precision. (Entries of other keys are only counted, not kept, so their
   * place does not matter.)
   */
  export function entriesInOrder(
    page: ListObjectVersionsCommandOutput,
    kinds: readonly EntryKind[] | undefined
  ): IEntry[] {
    const versions = entries(page.Versions, false);
    const markers = entries(page.DeleteMarkers, true);
    const count = (kind: EntryKind) => kinds?.filter(each => each === kind).length;
    if (kinds && count('version') === versions.length && count('marker') === markers.length) {
      let nextVersion = 0;
      let nextMarker = 0;
      return kinds.map(kind =>
        kind === 'version' ? versions[nextVersion++] : markers[nextMarker++]
      );
    }
    return [...versions, ...markers].sort(
      (a, b) =>
        b.version.lastModified.getTime() - a.version.lastModified.getTime() ||
        Number(b.version.isLatest) - Number(a.version.isLatest)
    );
  }

  /** `<Version>` and `<DeleteMarker>` elements; keys are escaped, so `<` is always markup. */
  const ENTRY_TAG = /<(Version|DeleteMarker)>/g;

  /**
   * Record the order of the `<Version>` and `<DeleteMarker>` elements of one ListObjectVersions
   * answer, which the SDK's parsed output does not keep.
   *
   * #### Notes
   * A middleware of this command alone, inside the SDK's deserializer, reads the raw body of a
   * 200 answer and hands the deserializer a new stream of the same bytes. Each attempt the SDK
   * makes overwrites the record, so it describes the answer that was parsed.
   */
  export function recordEntryOrder(command: ListObjectVersionsCommand): {
    readonly kinds?: EntryKind[];
  } {
    const record: { kinds?: EntryKind[] } = {};
    command.middlewareStack.add(
      next => async args => {
        const result = await next(args);
        const response = result.response as { statusCode?: number; body?: unknown };
        const body = response?.body as Partial<AsyncIterable<Uint8Array>> | undefined;
        // Node's handler answers with an IncomingMessage; anything else is left to the fallback.
        if (response?.statusCode === 200 && typeof body?.[Symbol.asyncIterator] === 'function') {
          const chunks: Buffer[] = [];
          for await (const chunk of body as AsyncIterable<Uint8Array>) {
            chunks.push(Buffer.from(chunk));
          }
          const bytes = Buffer.concat(chunks);
          response.body = Readable.from([bytes]);
          record.kinds = [...bytes.toString('utf8').matchAll(ENTRY_TAG)].map(match =>
            match[1] === 'Version' ? 'version' : 'marker'
          );
        }
        return result;
      },
      { step: 'deserialize', priority: 'low', name: 'jupyterStoreEntryOrder' }
    );
    return record;
  }

  export function lowerCaseKeys(
    metadata: Record<string, string> | undefined
  ): Record<string, string> {
    const lowered: Record<string, string> = {};
    for (const [key, value] of Object.entries(metadata ?? {})) lowered[key.toLowerCase()] = value;
    return lowered;
  }
}
