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
import type { VersionLabels } from './named';
import {
  MAX_RENAMES_FOLLOWED,
  type IHistoryCursor,
  type IHistoryFrame,
  type IVersionCursor,
  type VersionPageTokens
} from './versionPages';

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
 * @param none - The message when there is none; default the one a diff needs.
 * @throws HttpError 503 while object storage is not usable, 404 (reason `no versions`) when the
 *   path has none.
 */
export async function newestArchivedVersion(
  archiving: StoreAccess,
  path: string,
  none = `${path} has no archived version to diff against: give base`
): Promise<string> {
  requireFeature({ archiving }, 'store');
  const { settings, store, bucket } = archiving;
  const key = objectKey(settings.workspace_prefix, path);
  const newest = (await store.listVersionPage(bucket, key, { limit: 1 })).versions[0]?.versionId;
  if (newest === undefined) {
    throw httpErrors.noVersions(none);
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
 * The two copies are paged side by side, each from its own cursor (the token holds both, null
 * for a copy already listed to its end), so the first page shows the newest versions of both.
 * Cursors resume after the last entry a page went through, so versions saved while a client
 * pages (which are newer) do not shift later pages: every version listed by the first page's
 * time appears exactly once, in order. `deleted` needs the newest entry of the archived key, so
 * only the first page reports it; when the newest archived version is not the latest entry, one
 * more call (one entry, delete markers included) finds out.
 *
 * The archived copy is the notebook's history across renames (see {@link Private.listHistory}):
 * after the versions of its path come those of the paths it had before, each marked with its
 * own `path`. The published copy is that of the path asked for only.
 *
 * With `labels`, each archived version that has been named carries its label (see
 * `VersionLabels`, which never fails the listing).
 */
export async function listVersions(
  archiving: StoreAccess,
  path: string,
  page: IPageRequest,
  labels?: Pick<VersionLabels, 'attach'>
): Promise<VersionListing> {
  requireFeature({ archiving }, 'store');
  const { settings, store, bucket } = archiving;
  const workspaceKey = objectKey(settings.workspace_prefix, path);
  const publishedKey = objectKey(settings.published_prefix, path);
  const identity = { bucket, workspaceKey, publishedKey };
  const cursor: IVersionCursor | undefined =
    page.token === undefined ? undefined : page.tokens.decode(identity, page.token);
  const first = cursor === undefined;
  const history: IHistoryCursor | null = first
    ? { frames: [{ path, after: null }], renames: 0 }
    : cursor.workspace;
  const listPublished = async (after: string | null | undefined) =>
    after === null
      ? { versions: [] as IObjectVersion[], next: undefined }
      : store.listVersionPage(bucket, publishedKey, { limit: page.limit, after });
  const [workspace, published] = await Promise.all([
    history === null
      ? { versions: [], next: null }
      : Private.listHistory(archiving, path, history, page.limit),
    listPublished(cursor?.published)
  ]);
  let deleted: NonNullable<VersionListing['workspace']['deleted']> | null = null;
  if (first && !workspace.versions[0]?.is_latest) {
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
      versions: labels ? await labels.attach(workspace.versions, workspaceKey) : workspace.versions,
      ...(first ? { deleted } : {})
    },
    published: { object_key: publishedKey, versions: published.versions.map(toApiVersion) },
    next: page.tokens.encode(identity, {
      workspace: workspace.next,
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

/**
 * The path a version's `renamed-from` metadata names (a HEAD of the version), decoded; undefined
 * when it has none, or when the version is gone or the metadata is not a percent-encoded path.
 */
export function versionRenamedFrom(
  archiving: StoreAccess,
  key: string,
  versionId: string
): Promise<string | undefined> {
  return Private.renamedFrom(archiving, key, versionId);
}

namespace Private {
  /** Entries listed per call while looking for where a rename left a key. */
  const BOUNDARY_PAGE = 100;

  /**
   * One page (at most `limit` versions) of a notebook's archived history across renames, and
   * the cursor of the rest (null when none is left).
   *
   * #### Notes
   * A rename is archived as the new key's first version, with `renamed-from` metadata (the old
   * path, percent-encoded), and a delete marker on the old key. So the history of a path is read
   * key by key, newest first, delete markers included: the oldest version of each run of
   * versions (the one just above a delete marker, or the key's first) is the only one a rename
   * can have written, and it alone is read (a HEAD) for the metadata. When it names an earlier
   * path, that path's versions older than the rename's delete marker follow (see
   * {@link renameBoundary}); the versions written there afterwards (another notebook under the
   * old name) are not this notebook's. The rest of the current key, below the marker, is listed
   * once the earlier path's history is: it is kept as a frame of the cursor, and a frame already
   * waiting for the very same entries (a notebook renamed back to an earlier name, whose rename
   * leads back to where the listing left that key) is not listed twice. Every entry is gone
   * through once, and at most {@link MAX_RENAMES_FOLLOWED} renames are followed, so a listing
   * ends whatever the metadata says.
   *
   * A page holds whole versions only: the version that ends a page is still told apart (is it
   * the oldest of its run?) by the entry after it, which the last call lists along. On servers
   * that list a page's delete markers before its versions (versitygw), runs are told apart only
   * approximately, so a rename may not be followed there; the versions of the path asked for
   * are listed all the same.
   *
   * Cost: the path's own listing makes the calls it made before (delete markers now come along)
   * plus one HEAD per run of versions, when the run's end is reached; each rename followed adds
   * the listing of the earlier key down to the rename's time.
   */
  export async function listHistory(
    archiving: StoreAccess,
    listingPath: string,
    start: IHistoryCursor,
    limit: number
  ): Promise<{ versions: ObjectVersion[]; next: IHistoryCursor | null }> {
    const { settings, store, bucket } = archiving;
    const frames: IHistoryFrame[] = [...start.frames];
    let renames = start.renames;
    const versions: ObjectVersion[] = [];
    const emit = (entry: IObjectVersion, path: string, renamedFrom?: string) =>
      versions.push({
        ...toApiVersion(entry),
        is_latest: entry.isLatest && path === listingPath,
        path,
        object_key: objectKey(settings.workspace_prefix, path),
        ...(renamedFrom !== undefined ? { renamed_from: renamedFrom } : {})
      });
    /** The version `entry` (the oldest of its run) ends: emit it, follow its rename if any. */
    const endRun = async (entry: IObjectVersion, path: string): Promise<boolean> => {
      const key = objectKey(settings.workspace_prefix, path);
      const earlier = await renamedFrom(archiving, key, entry.versionId);
      emit(entry, path, earlier);
      if (earlier === undefined || renames >= MAX_RENAMES_FOLLOWED) return false;
      renames++;
      const earlierKey = objectKey(settings.workspace_prefix, earlier);
      const after = await renameBoundary(archiving, earlierKey, entry.lastModified);
      const same = frames.findIndex(frame => frame.path === earlier && frame.after === after);
      if (same >= 0) frames.splice(same, 1);
      frames.push({ path: earlier, after });
      return true;
    };

    // The last version gone through, emitted once the entry after it tells whether it ends a
    // run; it always belongs to the innermost frame.
    let held: IObjectVersion | undefined;
    while (frames.length > 0 && (versions.length < limit || held !== undefined)) {
      const depth = frames.length - 1;
      const { path } = frames[depth];
      let after = frames[depth].after;
      const chunk = await store.listVersionPage(
        bucket,
        objectKey(settings.workspace_prefix, path),
        {
          // One entry more than the page still takes: the entry after its last version.
          limit: limit - versions.length + 1,
          ...(after !== null ? { after } : {}),
          includeDeleteMarkers: true
        }
      );
      let full = false;
      let followed = false;
      for (const entry of chunk.versions) {
        if (entry.deleteMarker) {
          after = entry.versionId;
          if (held !== undefined) {
            frames[depth] = { path, after };
            const ended = held;
            held = undefined;
            followed = await endRun(ended, path);
            if (followed) break;
          }
          continue;
        }
        if (held !== undefined) {
          emit(held, path);
          held = undefined;
        }
        if (versions.length >= limit) {
          full = true;
          break;
        }
        held = entry;
        after = entry.versionId;
      }
      if (followed) continue;
      if (!full && chunk.next === undefined) {
        // The key's entries end here: its last run of versions ends with the oldest.
        frames.splice(depth, 1);
        if (held !== undefined) {
          const ended = held;
          held = undefined;
          await endRun(ended, path);
        }
        continue;
      }
      // All entries gone through, more follow: on from where the store stopped.
      if (!full && chunk.next !== undefined) after = chunk.next;
      frames[depth] = { path, after };
    }
    return { versions, next: frames.length === 0 ? null : { frames, renames } };
  }

  /**
   * The path a version's `renamed-from` metadata names, decoded; undefined when it has none, or
   * when the version is gone or the metadata is not a percent-encoded path.
   */
  export async function renamedFrom(
    archiving: StoreAccess,
    key: string,
    versionId: string
  ): Promise<string | undefined> {
    let head;
    try {
      head = await archiving.store.head(archiving.bucket, key, versionId);
    } catch (error) {
      if (error instanceof ObjectStoreError && error.kind === 'not-found') return undefined;
      throw error;
    }
    const encoded = head.metadata['renamed-from'];
    if (encoded === undefined) return undefined;
    try {
      const path = decodeURIComponent(encoded).replace(/^\/+|\/+$/g, '');
      return path === '' ? undefined : path;
    } catch {
      return undefined;
    }
  }

  /**
   * Where the history of an earlier key ends, as a marker to list after: its entries from there
   * on (older) are the notebook's, those before it were written after the rename (written at
   * `renamedAt`) by another notebook of that name.
   *
   * #### Notes
   * The rename's delete marker is written after the version at the new key, so it is the oldest
   * delete marker of the earlier key not older than that version. When there is none (the key
   * was already deleted when it was renamed, or its marker could not be written), the versions
   * written after the rename are left out. Null: from the key's newest entry. The entries are
   * listed newest first only down to the rename's time.
   */
  async function renameBoundary(
    archiving: StoreAccess,
    key: string,
    renamedAt: Date
  ): Promise<string | null> {
    const { store, bucket } = archiving;
    let marker: string | null = null;
    let later: string | null = null;
    let after: string | undefined;
    for (;;) {
      const chunk = await store.listVersionPage(bucket, key, {
        limit: BOUNDARY_PAGE,
        ...(after !== undefined ? { after } : {}),
        includeDeleteMarkers: true
      });
      for (const entry of chunk.versions) {
        if (entry.lastModified < renamedAt) return marker ?? later;
        if (entry.deleteMarker) marker = entry.versionId;
        else if (entry.lastModified > renamedAt) later = entry.versionId;
      }
      if (chunk.next === undefined) return marker ?? later;
      after = chunk.next;
    }
  }
}
