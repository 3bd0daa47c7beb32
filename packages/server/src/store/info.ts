import { StoreInfoSchema, type StoreInfo } from '@jupyter-store/contract';
import type { Archiving } from '../archive/archiving';
import type { Route } from '../gateway/assemble';
import type { IContentsBackendChoice } from '../gateway/contentsBackend';
import { packageVersion } from '../version';
import type { WorkspaceUsageMeter } from './usage';

/** What feature detection reports on. */
export interface IInfoOptions {
  readonly archiving: Archiving;
  /** Whether publishing has been enabled (read on every request: enabling needs no restart). */
  readonly publishEnabled: () => boolean;
  /** The contents backend in force and why. */
  readonly contentsBackend?: IContentsBackendChoice;
}

/**
 * `GET api/store`: feature detection (the contract's `StoreInfoSchema`), with the workspace's
 * usage when a meter is given (cached: see `WorkspaceUsageMeter`).
 */
export function infoRoute(options: IInfoOptions, usage?: WorkspaceUsageMeter): Route.Handler {
  return async (_request, response) => {
    const info = storeInfo(options);
    if (usage) info.usage = await usage.current();
    response.json(StoreInfoSchema.parse(info));
  };
}

/** Feature detection: release, features with reasons, archive status. */
export function storeInfo(options: IInfoOptions): StoreInfo {
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
      coalesced: status.coalesced,
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
