import {
  MAX_VERSION_ID_CHARS,
  StoreInfoSchema,
  VersionContentSchema,
  VersionListingSchema,
  type ObjectVersion,
  type VersionContent,
  type StoreInfo,
  type VersionListing
} from '@jupyter-store/contract';
import { Router, type Request, type Response } from 'express';
import type { Archiving } from '../archive/archiving';
import { HttpError } from '../errors';
import { decodeUrlPath } from '../http/quote';
import { displayable, objectKey } from '../storage/keys';
import { ObjectStoreError, type IObjectVersion } from '../storage/objectStore';
import { packageVersion } from '../version';
import type { ContentsManager } from '../contents/manager';
import { requirePermission } from '../gateway/auth';
import type { IContentsBackendChoice } from '../gateway/contentsBackend';
import type { Logger } from '../gateway/logger';
import { addCloneRoutes, DEFAULT_MAX_CLONE_BYTES, parseNotebook, readObject } from './clone';
import { onlyMethods } from './methods';
import { addDiffRoutes } from './diff';
import { addPublishRoutes } from './publish';
import { checkStorePath } from './storePaths';
import { parseVersionsLimit, VersionPageTokens, type IVersionCursor } from './versionPages';

/** What the store API needs from the running gateway. */
export interface IStoreApiOptions {
  archiving: Archiving;
  /** Whether publishing has been enabled (read on every request, so enabling needs no restart). */
  publishEnabled: () => boolean;
  /** The largest publish body accepted; default 100 MB. */
  maxPublishBodyBytes?: number;
  /** The contents backend in force and why, for feature detection. */
  contentsBackend?: IContentsBackendChoice;
  /** Where clones are written; without it the clone routes are not served. */
  manager?: ContentsManager;
  /**
   * The most bytes a clone, or a version read for restoring, reads from object storage
   * (default {@link DEFAULT_MAX_CLONE_BYTES}); larger is 413.
   */
  maxCloneBytes?: number;
  log?: Logger;
}

/**
 * The store API under `{base}api/store`: feature detection and version listings (publish, clone
 * and diff join it). Mounted behind Jupyter's auth by the gateway; each route then asks the
 * permission that its action implies of Jupyter's `Authorizer` (see `ASKED_PERMISSIONS` in
 * `gateway/auth.ts` for the table): `contents: read` here and for diffs, `contents: write` for
 * publish and clone.
 */
export function createStoreApiRouter(options: IStoreApiOptions): Router {
  const router = Router({ caseSensitive: true, strict: true });
  const tokens = new VersionPageTokens();
  const maxCloneBytes = options.maxCloneBytes ?? DEFAULT_MAX_CLONE_BYTES;

  router.all('/', onlyMethods('GET'));
  router.get('/', requirePermission('contents', 'read'), (_request, response: Response) => {
    response.json(StoreInfoSchema.parse(storeInfo(options)));
  });

  // `use`, not a route with a parameter: express would decode the path before we could check it.
  const reading = [onlyMethods('GET'), requirePermission('contents', 'read')];
  router.use('/versions', ...reading, (request: Request, response: Response, next) => {
    let path: string;
    try {
      path = requestStorePath(request);
    } catch (error) {
      next(error);
      return;
    }
    const query = requestQuery(request);
    const versionId = query.getAll('object_version_id').at(-1);
    if (versionId === undefined) {
      let page: IPageRequest;
      try {
        page = {
          limit: parseVersionsLimit(query.getAll('limit').at(-1)),
          token: query.getAll('next').at(-1),
          tokens
        };
      } catch (error) {
        next(error);
        return;
      }
      listVersions(options.archiving, path, page).then(
        listing => response.json(VersionListingSchema.parse(listing)),
        next
      );
    } else {
      readVersion(
        options.archiving,
        path,
        versionId,
        query.getAll('copy').at(-1),
        maxCloneBytes
      ).then(content => response.json(VersionContentSchema.parse(content)), next);
    }
  });

  addPublishRoutes(router, { ...options, maxBodyBytes: options.maxPublishBodyBytes });
  if (options.manager) {
    addCloneRoutes(router, {
      archiving: options.archiving,
      manager: options.manager,
      maxCloneBytes,
      log: options.log
    });
    addDiffRoutes(router, {
      archiving: options.archiving,
      manager: options.manager,
      maxNotebookBytes: maxCloneBytes
    });
  }
  return router;
}

/** Feature detection: release, features with reasons, archive status. */
export function storeInfo(options: IStoreApiOptions): StoreInfo {
  const { features, reasons } = options.archiving.features({
    publishEnabled: options.publishEnabled()
  });
  const queue = options.archiving.queue;
  let archive: StoreInfo['archive'] = null;
  if (queue) {
    const status = queue.status();

    archive = {
      pending: status.pending,
      oldest_pending_age_seconds:
        status.oldestPendingAgeMs === null ? null : status.oldestPendingAgeMs / 1000,
      archived: status.archived,
      last_archived_at: status.lastArchived?.at ?? null,
      last_error: status.lastError,
      ...options.archiving.observation()
    };
  }
  const { bucket, settings } = options.archiving;
  return {
    release: packageVersion(),
    features,
    reasons: { ...reasons },
    archive,
    object_bucket: bucket === '' ? null : bucket,
    workspace_prefix: settings.workspace_prefix,
    published_prefix: settings.published_prefix,
    ...(options.contentsBackend ? { contents_backend: { ...options.contentsBackend } } : {})
  };
}

/**
 * The path below a route mounted with `use` (`/versions/<path>`, `/diff/<path>`), decoded as
 * tornado decodes it, then checked.
 *
 * @throws HttpError 400 when it is not UTF-8 or {@link checkStorePath} refuses it.
 */
export function requestStorePath(request: Request): string {
  const raw = request.url.split('?', 1)[0].replace(/^\//, '');
  const decoded = decodeUrlPath(raw);
  if (decoded === undefined) {
    throw new HttpError(400, 'The path is not valid UTF-8', 'invalid path');
  }
  return checkStorePath(decoded);
}

/** The query of a request; a repeated parameter is read by its last value, as tornado does. */
export function requestQuery(request: Request): URLSearchParams {
  return new URL(request.originalUrl, 'http://gateway.invalid').searchParams;
}

/** 503 while object storage cannot be used (no bucket, failed bucket check). */
export function checkStoreUsable(archiving: Pick<Archiving, 'features'>): void {
  if (!archiving.features().features.store_valid) {
    throw new HttpError(
      503,
      `Object storage is not usable: ${archiving.features().reasons.store_valid}`,
      'store unavailable'
    );
  }
}

/** Which page of a listing is asked for. */
interface IPageRequest {
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
async function listVersions(
  archiving: Archiving,
  path: string,
  page: IPageRequest
): Promise<VersionListing> {
  checkStoreUsable(archiving);
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
  try {
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
  } catch (error) {
    throw toHttpError(error);
  }
}

/** The two copies of a notebook in the bucket: archived saves, and published versions. */
export type StoreCopy = 'workspace' | 'published';

/**
 * One version of the archived (`copy` workspace, the default) or published copy of a notebook,
 * with its content: 400 for an empty, too long or malformed version id or an unknown `copy`, 404
 * when the version does not exist, 413 over the clone limit, 422 when it is not a notebook.
 */
async function readVersion(
  archiving: Archiving,
  path: string,
  versionId: string,
  copy = 'workspace',
  maxBytes = DEFAULT_MAX_CLONE_BYTES
): Promise<VersionContent> {
  if (copy !== 'workspace' && copy !== 'published') {
    throw new HttpError(400, 'copy must be "workspace" or "published"', 'bad request');
  }
  const version = await readNotebookVersion(archiving, path, versionId, copy, {
    maxBytes,
    parse: parseNotebook
  });
  return {
    path,
    object_bucket: archiving.bucket,
    object_key: version.key,
    object_version_id: version.versionId,
    content: version.notebook as unknown as Record<string, unknown>
  };
}

/**
 * Read one version of a copy of a notebook whole, and parse it.
 *
 * @param options - `maxBytes`, the most bytes read (413 beyond), and `parse`, which answers the
 *   notebook in the bytes or undefined when they hold none.
 * @throws HttpError 400 for an empty or too long version id, 503 while object storage is not
 *   usable, 404 when the version does not exist, 413 over `maxBytes`, 422 (reason `not a
 *   notebook`) when `parse` finds no notebook, and the store's own errors (see
 *   {@link toHttpError}).
 */
export async function readNotebookVersion<T>(
  archiving: Pick<Archiving, 'settings' | 'store' | 'bucket' | 'features'>,
  path: string,
  versionId: string,
  copy: StoreCopy,
  options: { maxBytes: number; parse: (bytes: Buffer) => T | undefined }
): Promise<{ key: string; versionId: string; notebook: T }> {
  if (versionId === '' || versionId.length > MAX_VERSION_ID_CHARS) {
    throw new HttpError(
      400,
      `object_version_id must be 1 to ${MAX_VERSION_ID_CHARS} characters long`,
      'bad request'
    );
  }
  checkStoreUsable(archiving);
  const { settings, bucket } = archiving;
  const prefix = copy === 'workspace' ? settings.workspace_prefix : settings.published_prefix;
  const key = objectKey(prefix, path);
  const object = await readObject(archiving, bucket, key, versionId, options.maxBytes);
  const notebook = options.parse(object.body);
  if (notebook === undefined) {
    throw new HttpError(
      422,
      `Version ${JSON.stringify(displayable(versionId))} of s3://${bucket}/${key} is not an nbformat 4 notebook`,
      'not a notebook'
    );
  }
  return { key, versionId: object.versionId ?? versionId, notebook };
}

function toApiVersion(version: IObjectVersion): ObjectVersion {
  return {
    object_version_id: version.versionId,
    last_modified: version.lastModified.toISOString(),
    size: version.size,
    is_latest: version.isLatest
  };
}

/** Object-storage failures as DESIGN maps them: 404, 403, 400, or 502 for an unreachable store. */
export function toHttpError(error: unknown): unknown {
  if (!(error instanceof ObjectStoreError)) return error;
  const status = {
    'not-found': 404,
    'access-denied': 403,
    'bad-request': 400,
    'too-large': 413,
    unavailable: 502
  }[error.kind];
  return new HttpError(status, error.message, error.code);
}
