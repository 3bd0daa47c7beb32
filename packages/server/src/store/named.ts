import {
  MAX_VERSION_ID_CHARS,
  NamedVersionSchema,
  NameVersionRequestSchema,
  UnnamedVersionSchema,
  type NamedVersion,
  type ObjectVersion,
  type VersionLabel
} from '@jupyter-store/contract';
import pLimit from 'p-limit';
import type { Archiving } from '../archive/archiving';
import { requestQuery, type Route } from '../gateway/assemble';
import type { Logger } from '../gateway/logger';
import { httpErrors } from '../http/errorCatalogue';
import { objectKey } from '../storage/keys';
import { ObjectStoreError } from '../storage/objectStore';
import { newestArchivedVersion, type StoreAccess } from './objects';
import { readJsonObject, validate } from './requests';

/**
 * Named versions. A name given to archived version `V` of a notebook is a copy of that
 * version's bytes, made inside the store, at `<named_prefix>/<workspace key>/<V>`: the archived
 * key mirrored below `named_prefix`, one key per named version. A retention rule scoped to
 * `workspace_prefix` never touches it, so the named version outlives the archived one, and
 * per-user workspace prefixes (`workspace/<user>`) map to `named/workspace/<user>/…`, which
 * credentials can be scoped to alike.
 *
 * The label is the copy's user metadata (see {@link labelMetadata}); the newest version of the
 * named key is the label in force, so naming again replaces it, and a delete marker removes it.
 */

/** The content type of named copies: the archive's. */
const NAMED_CONTENT_TYPE = 'application/x-ipynb+json';

/** S3's limit on user metadata, keys and values together, in UTF-8 bytes. */
const METADATA_LIMIT_BYTES = 2048;

/** The largest request body naming a version, in bytes: a name, a note and a version id. */
export const NAME_VERSION_BODY_LIMIT = 64 * 1024;

/** HEADs at once while a listing reads labels. */
const LABEL_READS = 8;

/**
 * Labels read, by named key and ETag (a label never changes without a new version), and
 * listings of named copies, by archived key: at most this many of each.
 */
const LABEL_CACHE_SIZE = 1000;

/** How long a listing of the named copies of an archived key is used again. */
const LISTING_TTL_MS = 30_000;

/** What the named-version routes need of archiving. */
export type NamedAccess = StoreAccess & Pick<Archiving, 'pathSettled'>;

/** The key below which the named versions of archived key `archivedKey` are kept. */
export function namedKeyPrefix(namedPrefix: string, archivedKey: string): string {
  return objectKey(namedPrefix, archivedKey);
}

/** The key of the named copy of version `versionId` of archived key `archivedKey`. */
export function namedKey(namedPrefix: string, archivedKey: string, versionId: string): string {
  return `${namedKeyPrefix(namedPrefix, archivedKey)}/${versionId}`;
}

/**
 * The user metadata of a named copy: the name and note percent-encoded (metadata must be
 * printable ASCII on every S3 server; `renamed-from` is written the same way), the version it
 * copies and when it was named.
 *
 * @throws HttpError 400 (reason `label too long`) when it is over the 2 KB S3 allows: non-ASCII
 *   text takes up to 9 bytes a character once encoded, so the characters allowed are not enough.
 */
export function labelMetadata(label: {
  name: string;
  note: string | null;
  sourceKey: string;
  sourceVersionId: string;
  namedAt: Date;
}): Record<string, string> {
  const metadata: Record<string, string> = {
    'version-name': encodeURIComponent(label.name),
    'source-key': encodeURIComponent(label.sourceKey),
    'source-version-id': encodeURIComponent(label.sourceVersionId),
    'named-at': label.namedAt.toISOString()
  };
  if (label.note !== null) metadata['version-note'] = encodeURIComponent(label.note);
  const bytes = Object.entries(metadata).reduce(
    (sum, [key, value]) => sum + Buffer.byteLength(key) + Buffer.byteLength(value),
    0
  );
  if (bytes > METADATA_LIMIT_BYTES) {
    throw httpErrors.labelTooLong(
      `The name and note take ${bytes} bytes of object metadata once encoded, more than the ` +
        `${METADATA_LIMIT_BYTES} S3 allows: shorten them (characters beyond ASCII take several ` +
        'bytes each)'
    );
  }
  return metadata;
}

/** The label a named copy's metadata holds; undefined when it holds none that decodes. */
export function readLabel(
  metadata: Readonly<Record<string, string>>,
  key: string
): VersionLabel | undefined {
  const decode = (value: string | undefined) => {
    if (value === undefined) return undefined;
    try {
      return decodeURIComponent(value);
    } catch {
      return undefined;
    }
  };
  const name = decode(metadata['version-name']);
  const namedAt = metadata['named-at'];
  if (name === undefined || namedAt === undefined) return undefined;
  return {
    name,
    note: decode(metadata['version-note']) ?? null,
    named_at: namedAt,
    object_key: key
  };
}

/**
 * `POST api/store/named/<path>`: name an archived version of the notebook (body `name`, `note`,
 * `object_version_id`), replacing the name it had.
 *
 * #### Notes
 * Without `object_version_id`, the pending save of the path (a save just made, not yet
 * archived) is waited for, at most 5 s, as a checkpoint after a save is: "Save Version" saves
 * then names, and must name what it saved. Statuses: 400 for a bad body (reason `bad request`)
 * or a label over the metadata limit (`label too long`); 404 `no versions` when the notebook
 * has no archived version, or the store's `NoSuchVersion`/`NoSuchKey` when the version named
 * does not exist; 503 while object storage is not usable.
 */
export function nameVersionRoute(options: {
  archiving: NamedAccess;
  labels?: Pick<VersionLabels, 'forget'>;
}): Route.Handler {
  const { archiving, labels } = options;
  return async (request, response, { path }) => {
    const body = validate(NameVersionRequestSchema, readJsonObject(request));
    const { settings, store, bucket } = archiving;
    const note =
      body.note === undefined || body.note === null || body.note === '' ? null : body.note;
    const sourceKey = objectKey(settings.workspace_prefix, path);
    const namedAt = new Date();
    // Checked before anything is waited for or read: the request cannot succeed.
    labelMetadata({ name: body.name, note, sourceKey, sourceVersionId: '', namedAt });
    let versionId = body.object_version_id ?? undefined;
    if (versionId === undefined) {
      await archiving.pathSettled(path);
      versionId = await newestArchivedVersion(
        archiving,
        path,
        `${path} has no archived version to name: save it first`
      );
    }
    const metadata = labelMetadata({
      name: body.name,
      note,
      sourceKey,
      sourceVersionId: versionId,
      namedAt
    });
    const key = namedKey(settings.named_prefix, sourceKey, versionId);
    await store.copyVersion(bucket, sourceKey, versionId, key, {
      metadata,
      contentType: NAMED_CONTENT_TYPE
    });
    labels?.forget(sourceKey);
    const named: NamedVersion = {
      path,
      object_bucket: bucket,
      object_key: sourceKey,
      object_version_id: versionId,
      label: { name: body.name, note, named_at: namedAt.toISOString(), object_key: key }
    };
    response.json(NamedVersionSchema.parse(named));
  };
}

/**
 * `DELETE api/store/named/<path>?object_version_id=…`: take the name off an archived version,
 * by hiding its named copy behind a delete marker. 400 without `object_version_id`, 404 (reason
 * `not named`) when the version has no name.
 */
export function unnameVersionRoute(options: {
  archiving: StoreAccess;
  labels?: Pick<VersionLabels, 'forget'>;
}): Route.Handler {
  const { archiving, labels } = options;
  return async (request, response, { path }) => {
    const versionId = requestQuery(request).getAll('object_version_id').at(-1);
    if (versionId === undefined || versionId === '' || versionId.length > MAX_VERSION_ID_CHARS) {
      throw httpErrors.badRequest(
        `object_version_id is required: the archived version to unname, 1 to ` +
          `${MAX_VERSION_ID_CHARS} characters`
      );
    }
    const { settings, store, bucket } = archiving;
    const sourceKey = objectKey(settings.workspace_prefix, path);
    const key = namedKey(settings.named_prefix, sourceKey, versionId);
    try {
      await store.head(bucket, key);
    } catch (error) {
      if (error instanceof ObjectStoreError && error.kind === 'not-found') {
        throw httpErrors.notNamed(`Version ${JSON.stringify(versionId)} of ${path} has no name`);
      }
      throw error;
    }
    await store.deleteObject(bucket, key);
    labels?.forget(sourceKey);
    response.json(
      UnnamedVersionSchema.parse({ path, object_version_id: versionId, label_key: key })
    );
  };
}

/**
 * Labels of the versions of a listing page, read from the named copies.
 *
 * #### Notes
 * One `listLatest` per archived key on the page (a page spans earlier paths after renames),
 * then one HEAD per named copy of a version on the page, a few at a time; listings are kept a
 * short while and HEADs cached by key and ETag. The named prefix may be out of reach when the rest is not (credentials scoped
 * to the workspace): the listing is then answered without labels, and the failure logged.
 */
export class VersionLabels {
  constructor(options: VersionLabels.IOptions) {
    this._archiving = options.archiving;
    this._log = options.log;
  }

  /** The versions, each with its label when it has one. */
  async attach(versions: ObjectVersion[], defaultKey: string): Promise<ObjectVersion[]> {
    if (versions.length === 0) return versions;
    try {
      const labels = await this._read(versions, defaultKey);
      return versions.map(version => {
        const label = labels.get(
          `${version.object_key ?? defaultKey}\n${version.object_version_id}`
        );
        return label === undefined ? version : { ...version, label };
      });
    } catch (error) {
      if (!(error instanceof ObjectStoreError)) throw error;
      this._log?.warn({ err: error.message }, 'version names could not be read; listed without');
      return versions;
    }
  }

  /** The label of each named version on the page, by `<archived key>\n<version id>`. */
  private async _read(
    versions: ObjectVersion[],
    defaultKey: string
  ): Promise<Map<string, VersionLabel>> {
    const wanted = new Map<string, Set<string>>();
    for (const version of versions) {
      const key = version.object_key ?? defaultKey;
      const ids = wanted.get(key) ?? new Set<string>();
      ids.add(version.object_version_id);
      wanted.set(key, ids);
    }
    const found: { archivedKey: string; versionId: string; key: string; etag?: string }[] = [];
    for (const [archivedKey, ids] of wanted) {
      for (const named of await this._namedCopies(archivedKey)) {
        if (ids.has(named.versionId)) found.push({ archivedKey, ...named });
      }
    }
    const limit = pLimit(LABEL_READS);
    const labels = new Map<string, VersionLabel>();
    await Promise.all(
      found.map(named =>
        limit(async () => {
          const label = await this._label(named.key, named.etag);
          if (label) labels.set(`${named.archivedKey}\n${named.versionId}`, label);
        })
      )
    );
    return labels;
  }

  /**
   * Forget what is cached of the named copies of `archivedKey`: this gateway has just named a
   * version of it, or removed a name.
   */
  forget(archivedKey: string): void {
    this._listings.delete(archivedKey);
  }

  /**
   * The named copies of `archivedKey`: their keys, the version each names, and their ETags.
   *
   * #### Notes
   * Kept for {@link LISTING_TTL_MS}: the embedded store lists a prefix by walking every key of
   * the bucket, too slow to repeat on every refresh of a versions panel. Names given or removed
   * through this gateway are seen at once (see {@link forget}); those of another process that
   * writes the same bucket within the time kept.
   */
  private async _namedCopies(
    archivedKey: string
  ): Promise<{ versionId: string; key: string; etag?: string }[]> {
    const cached = this._listings.get(archivedKey);
    if (cached && Date.now() - cached.at < LISTING_TTL_MS) return cached.copies;
    const { settings, store, bucket } = this._archiving;
    const prefix = `${namedKeyPrefix(settings.named_prefix, archivedKey)}/`;
    const copies: { versionId: string; key: string; etag?: string }[] = [];
    for await (const summary of store.listLatest(bucket, prefix)) {
      copies.push({
        versionId: summary.key.slice(prefix.length),
        key: summary.key,
        etag: summary.etag
      });
    }
    Private.bounded(this._listings, LABEL_CACHE_SIZE);
    this._listings.set(archivedKey, { at: Date.now(), copies });
    return copies;
  }

  /** The label of one named copy, from the cache when its ETag is the one cached. */
  private async _label(key: string, etag: string | undefined): Promise<VersionLabel | undefined> {
    const cacheKey = etag === undefined ? undefined : `${key}\n${etag}`;
    if (cacheKey !== undefined && this._cache.has(cacheKey)) return this._cache.get(cacheKey);
    let head;
    try {
      head = await this._archiving.store.head(this._archiving.bucket, key);
    } catch (error) {
      // Removed since it was listed.
      if (error instanceof ObjectStoreError && error.kind === 'not-found') return undefined;
      throw error;
    }
    const label = readLabel(head.metadata, key);
    if (cacheKey !== undefined) {
      Private.bounded(this._cache, LABEL_CACHE_SIZE);
      this._cache.set(cacheKey, label);
    }
    return label;
  }

  private readonly _archiving: StoreAccess;
  private readonly _log: Logger | undefined;
  private readonly _cache = new Map<string, VersionLabel | undefined>();
  private readonly _listings = new Map<
    string,
    { at: number; copies: { versionId: string; key: string; etag?: string }[] }
  >();
}

namespace Private {
  /** Make room for one more entry in a cache of at most `size`: the oldest entry goes. */
  export function bounded(cache: Map<string, unknown>, size: number): void {
    if (cache.size >= size) cache.delete(cache.keys().next().value as string);
  }
}

export namespace VersionLabels {
  export interface IOptions {
    readonly archiving: StoreAccess;
    /** Where a failure to read labels is logged (warn). */
    readonly log?: Logger;
  }
}
