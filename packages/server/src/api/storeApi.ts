import {
  StoreInfoSchema,
  VersionListingSchema,
  type ObjectVersion,
  type StoreInfo,
  type VersionListing
} from '@jupyter-store/contract';
import { Router, type Request, type Response } from 'express';
import type { Archiving } from '../archive/archiving';
import { HttpError } from '../errors';
import { decodeUrlPath } from '../http/quote';
import { objectKey } from '../storage/keys';
import { ObjectStoreError, type IObjectVersion } from '../storage/objectStore';
import { packageVersion } from '../version';
import type { ContentsManager } from '../contents/manager';
import type { Logger } from '../gateway/logger';
import { addCloneRoutes } from './clone';
import { onlyMethods } from './methods';
import { addPublishRoutes } from './publish';
import { checkStorePath } from './storePaths';

/** What the store API needs from the running gateway. */
export interface IStoreApiOptions {
  archiving: Archiving;
  /** Whether publishing has been enabled (read on every request, so enabling needs no restart). */
  publishEnabled: () => boolean;
  /** The largest publish body accepted; default 100 MB. */
  maxPublishBodyBytes?: number;
  /** Where clones are written; without it the clone routes are not served. */
  manager?: ContentsManager;
  log?: Logger;
}

/**
 * The store API under `{base}api/store`: feature detection and version listings (publish and
 * clone join it). Mounted behind Jupyter's auth by the gateway.
 */
export function createStoreApiRouter(options: IStoreApiOptions): Router {
  const router = Router({ caseSensitive: true, strict: true });

  router.all('/', onlyMethods('GET'));
  router.get('/', (_request: Request, response: Response) => {
    response.json(StoreInfoSchema.parse(storeInfo(options)));
  });

  // `use`, not a route with a parameter: express would decode the path before we could check it.
  router.use('/versions', onlyMethods('GET'), (request: Request, response: Response, next) => {
    const raw = request.url.split('?', 1)[0].replace(/^\//, '');
    const decoded = decodeUrlPath(raw);
    if (decoded === undefined) {
      next(new HttpError(400, 'The path is not valid UTF-8', 'invalid path'));
      return;
    }
    listVersions(options.archiving, checkStorePath(decoded)).then(
      listing => response.json(VersionListingSchema.parse(listing)),
      next
    );
  });

  addPublishRoutes(router, { ...options, maxBodyBytes: options.maxPublishBodyBytes });
  if (options.manager) {
    addCloneRoutes(router, {
      archiving: options.archiving,
      manager: options.manager,
      log: options.log
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
    const times = Object.values(status.lastArchived).map(entry => entry.at);
    archive = {
      pending: status.pending,
      oldest_pending_age_seconds:
        status.oldestPendingAgeMs === null ? null : status.oldestPendingAgeMs / 1000,
      archived: status.archived,
      last_archived_at: times.length ? times.sort().at(-1)! : null,
      last_error: status.lastError
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
    published_prefix: settings.published_prefix
  };
}

async function listVersions(archiving: Archiving, path: string): Promise<VersionListing> {
  if (!archiving.features().features.store_valid) {
    throw new HttpError(
      503,
      `Object storage is not usable: ${archiving.features().reasons.store_valid}`,
      'store unavailable'
    );
  }
  const { settings, store, bucket } = archiving;
  const workspaceKey = objectKey(settings.workspace_prefix, path);
  const publishedKey = objectKey(settings.published_prefix, path);
  try {
    const [workspace, published] = await Promise.all([
      store.listVersions(bucket, workspaceKey),
      store.listVersions(bucket, publishedKey)
    ]);
    return {
      path,
      object_bucket: bucket,
      workspace: { object_key: workspaceKey, versions: workspace.map(toApiVersion) },
      published: { object_key: publishedKey, versions: published.map(toApiVersion) }
    };
  } catch (error) {
    throw toHttpError(error);
  }
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
    unavailable: 502
  }[error.kind];
  return new HttpError(status, error.message, error.code);
}
