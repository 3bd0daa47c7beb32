import {
  MAX_VERSION_ID_CHARS,
  type ObjectVersion,
  type VersionListing
} from '@jupyter-store/contract';
import type { Archiving } from '../archive/archiving';
import type { HttpError } from '../errors';
import { httpErrors } from '../http/errorCatalogue';
import { displayable, objectKey } from '../storage/keys';
import { ObjectStoreError, type IObjectVersion } from '../storage/objectStore';
import { requireFeature } from './features';
import type { IVersionCursor, VersionPageTokens } from './versionPages';

/**
 * The object-store reads that more than one route makes: one object or one notebook version
 * read whole (clone, versions, diff), the newest archived version (diff), and the paged listing
 * of a notebook's versions (versions).
 *
 * Errors of the store itself (`ObjectStoreError`) are left to the error handler, which answers
 * them by kind (see `http/errors.ts`); only what these reads decide themselves is raised here.
 */

/** Largest object a clone, a version read or a diff reads, in bytes: 100 MiB. */
export const DEFAULT_MAX_CLONE_BYTES = 100 * 1024 * 1024;

/** The two copies of a notebook in the bucket: archived saves, and published versions. */
export type StoreCopy = 'workspace' | 'published';

/** What the reads need of archiving. */
export type StoreAccess = Pick<Archiving, 'settings' | 'store' | 'bucket' | 'features'>;

/**
 * Read an object (the version named, or the latest) whole, but never more than `maxBytes`.
 *
 * #### Notes
 * The HEAD refuses an object it says is too large without reading it, and fixes the version to
 * read. It is not relied on: it may fail (the GET then gives the precise error) or be out of
 * date (an unversioned bucket's object replaced before the GET), so the GET itself is bounded:
 * an announced length over `maxBytes` is refused before the body is read, and the body is
 * streamed and the request aborted as soon as more than `maxBytes` have arrived. Either way
 * the answer is the same 413 (reason `too large`), and nothing is written.
 */
export async function readObject(
  archiving: Pick<Archiving, 'store'>,
  bucket: string,
  key: string,
  versionId: string | undefined,
  maxBytes: number
): Promise<{ body: Buffer; versionId: string | null }> {
  const where = `s3://${displayable(bucket)}/${displayable(key)}`;
  const { store } = archiving;
  try {
    let version = versionId;
    try {
      const head = await store.head(bucket, key, versionId);
      if (head.size > maxBytes) throw tooLarge(where, maxBytes);
      version ??= head.versionId ?? undefined;
    } catch (error) {
      // A HEAD answer has no body, so S3 servers give no error code (`NoSuchKey`,
      // `NoSuchVersion`, `AccessDenied` …) with it: the GET below fails with the precise one.
      if (!(error instanceof ObjectStoreError) || error.kind === 'unavailable') throw error;
    }
    const object = await store.get(bucket, key, version, { maxBytes });
    if (object.body.length > maxBytes) throw tooLarge(where, maxBytes);
    return { body: object.body, versionId: object.versionId };
  } catch (error) {
    if (error instanceof ObjectStoreError && error.kind === 'too-large') {
      throw tooLarge(where, maxBytes);
    }
    throw error;
  }
}

/** 413 for a source over the bytes a clone (or a version read) may copy. */
export function tooLarge(what: string, maxBytes: number): HttpError {
  return httpErrors.tooLarge(`${what} is larger than the ${maxBytes} bytes a clone may copy`);
}

/**
 * Read one version of a copy of a notebook whole, and parse it.
 *
 * @param options - `maxBytes`, the most bytes read (413 beyond), and `parse`, which answers the
 *   notebook in the bytes or undefined when they hold none.
 * @throws HttpError 400 for an empty or too long version id, 503 while object storage is not
 *   usable, 413 over `maxBytes`, 422 (reason `not a notebook`) when `parse` finds no notebook;
 *   the store's own errors (404 when the version does not exist) propagate.
 */
export async function readNotebookVersion<T>(
  archiving: StoreAccess,
  path: string,
  versionId: string,
  copy: StoreCopy,
  options: { maxBytes: number; parse: (bytes: Buffer) => T | undefined }
): Promise<{ key: string; versionId: string; notebook: T }> {
  if (versionId === '' || versionId.length > MAX_VERSION_ID_CHARS) {
    throw httpErrors.badRequest(
      `object_version_id must be 1 to ${MAX_VERSION_ID_CHARS} characters long`
    );
  }
  requireFeature({ archiving }, 'store');
  const { settings, bucket } = archiving;
  const prefix = copy === 'workspace' ? settings.workspace_prefix : settings.published_prefix;
  const key = objectKey(prefix, path);
  const object = await readObject(archiving, bucket, key, versionId, options.maxBytes);
  const notebook = options.parse(object.body);
  if (notebook === undefined) {
    throw httpErrors.notANotebook(
      `Version ${JSON.stringify(displayable(versionId))} of s3://${bucket}/${key} is not an nbformat 4 notebook`
    );
  }
  return { key, versionId: object.versionId ?? versionId, notebook };
}

/**
 * The id of the newest archived version of a path.
 *
 * @throws HttpError 503 while object storage is not usable, 404 (reason `no versions`) when the
 *   path has none.
 */
export async function newestArchivedVersion(archiving: StoreAccess, path: string): Promise<string> {
  requireFeature({ archiving }, 'store');
  const { settings, store, bucket } = archiving;
  const key = objectKey(settings.workspace_prefix, path);
  const newest = (await store.listVersionPage(bucket, key, { limit: 1 })).versions[0]?.versionId;
  if (newest === undefined) {
    throw httpErrors.noVersions(`${path} has no archived version to diff against: give base`);
  }
  return newest;
}

/** Which page of a listing is asked for. */
export interface IPageRequest {
  /** Versions of each copy on the page. */
  readonly limit: number;
  /** The `next` of the page before; undefined for the first page. */
  readonly token: string | undefined;
  readonly tokens: VersionPageTokens;
}

/**
 * One page of the archived and published versions of a path: at most `limit` of each copy,
 * newest first, and the token of the next page.
 *
 * #### Notes
 * The two copies are paged side by side, each from its own marker (the token holds both, null
 * for a copy already listed to its end), so the first page shows the newest versions of both.
 * Markers are store version ids and a page resumes after the last version it returned, so
 * versions saved while a client pages (which are newer) do not shift later pages: every
 * version listed by the first page's time appears exactly once, in order. `deleted` needs the
 * newest entry of the archived key, so only the first page reports it; when the newest archived
 * version is not the latest entry, one more call (one entry, delete markers included) finds out.
 */
export async function listVersions(
  archiving: StoreAccess,
  path: string,
  page: IPageRequest
): Promise<VersionListing> {
  requireFeature({ archiving }, 'store');
  const { settings, store, bucket } = archiving;
  const workspaceKey = objectKey(settings.workspace_prefix, path);
  const publishedKey = objectKey(settings.published_prefix, path);
  const identity = { bucket, workspaceKey, publishedKey };
  const cursor: IVersionCursor | undefined =
    page.token === undefined ? undefined : page.tokens.decode(identity, page.token);
  const first = cursor === undefined;
  const listCopy = async (key: string, after: string | null | undefined) =>
    after === null
      ? { versions: [] as IObjectVersion[], next: undefined }
      : store.listVersionPage(bucket, key, { limit: page.limit, after });
  const [workspace, published] = await Promise.all([
    listCopy(workspaceKey, cursor?.workspace),
    listCopy(publishedKey, cursor?.published)
  ]);
  let deleted: NonNullable<VersionListing['workspace']['deleted']> | null = null;
  if (first && !workspace.versions[0]?.isLatest) {
    // A delete marker on top: the notebook was deleted; its versions stay listed for restoring.
    // (The latest flag, not the position: versitygw lists markers before versions.)
    const newest = await store.listVersionPage(bucket, workspaceKey, {
      limit: 1,
      includeDeleteMarkers: true
    });
    const marker = newest.versions.find(entry => entry.deleteMarker && entry.isLatest);
    if (marker) {
      deleted = { at: marker.lastModified.toISOString(), object_version_id: marker.versionId };
    }
  }
  return {
    path,
    object_bucket: bucket,
    workspace: {
      object_key: workspaceKey,
      versions: workspace.versions.map(toApiVersion),
      ...(first ? { deleted } : {})
    },
    published: { object_key: publishedKey, versions: published.versions.map(toApiVersion) },
    next: page.tokens.encode(identity, {
      workspace: workspace.next ?? null,
      published: published.next ?? null
    })
  };
}

function toApiVersion(version: IObjectVersion): ObjectVersion {
  return {
    object_version_id: version.versionId,
    last_modified: version.lastModified.toISOString(),
    size: version.size,
    is_latest: version.isLatest
  };
}
