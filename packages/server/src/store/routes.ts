import type { Archiving } from '../archive/archiving';
import type { ContentsManager } from '../contents/manager';
import type { ISurface } from '../gateway/assemble';
import type { IContentsBackendChoice } from '../gateway/contentsBackend';
import type { Logger } from '../gateway/logger';
import { cloneRoute, DEFAULT_MAX_CLONE_BODY_BYTES } from './clone';
import { deletedRoute } from './deleted';
import { diffRoutes } from './diff';
import { requireFeature, type StoreFeature } from './features';
import { fsCloneRoute } from './fsClone';
import { infoRoute } from './info';
import {
  NAME_VERSION_BODY_LIMIT,
  nameVersionRoute,
  unnameVersionRoute,
  VersionLabels
} from './named';
import { DEFAULT_MAX_CLONE_BYTES } from './objects';
import { checkStorePath } from './paths';
import { DEFAULT_PUBLISH_BODY_LIMIT, publishRoute } from './publish';
import { restoreRoute } from './restore';
import { MAX_RETENTION_BODY_BYTES, retentionRoutes } from './retention';
import { workspaceUsageMeter } from './usage';
import { versionsRoute } from './versions';

/**
 * The store API under `{base}api/store`: feature detection, version listings, named versions,
 * publish, clone and diff. Behind Jupyter's auth (every request, as Jupyter's API handlers); each route asks
 * the permission its action implies of Jupyter's `Authorizer` (see `ASKED_PERMISSIONS` in
 * `gateway/auth.ts` for why) and the feature it needs before its body is read.
 *
 * #### Notes
 * A store path (`**path`) is everything after the route's name, checked by `checkStorePath`
 * once decoded: `versions`, `versions/` and `versions//` are all the empty path (400).
 */
export function storeApi(options: storeApi.IOptions): ISurface {
  const { archiving, manager, log } = options;
  const maxBytes = options.maxCloneBytes ?? DEFAULT_MAX_CLONE_BYTES;
  const requires = (feature: StoreFeature) => () => requireFeature(options, feature);
  const publishBody = { bodyLimit: options.maxPublishBodyBytes ?? DEFAULT_PUBLISH_BODY_LIMIT };
  const cloneBody = { bodyLimit: DEFAULT_MAX_CLONE_BODY_BYTES };
  const storeFeature = { requires: requires('store') };
  const diff = diffRoutes({ archiving, manager, maxNotebookBytes: maxBytes });
  const basedir = () => archiving.settings.fs_cloning_basedir;
  const usage = workspaceUsageMeter(archiving, log);
  const retention = retentionRoutes({ archiving, log });
  const retentionWrite = { requires: requires('store'), bodyLimit: MAX_RETENTION_BODY_BYTES };
  const labels = new VersionLabels({ archiving, log });
  return {
    prefix: 'api/store',
    kind: 'api',
    checkPath: checkStorePath,
    routes: [
      ['GET', '/', infoRoute(options, usage), 'contents:read'],
      [
        'GET',
        '/versions{/**path}',
        versionsRoute({ archiving, maxBytes, labels }),
        'contents:read'
      ],
      [
        'POST',
        '/named{/**path}',
        nameVersionRoute({ archiving, labels }),
        'contents:write',
        { requires: requires('store'), bodyLimit: NAME_VERSION_BODY_LIMIT }
      ],
      [
        'DELETE',
        '/named{/**path}',
        unnameVersionRoute({ archiving, labels }),
        'contents:write',
        { requires: requires('store') }
      ],
      [
        'PUT',
        '/publish{/**path}',
        publishRoute({ archiving }),
        'contents:write',
        { requires: requires('publish'), ...publishBody }
      ],
      [
        'POST',
        '/clone{/}',
        cloneRoute({ archiving, manager, maxBytes, log }),
        'contents:write',
        { requires: requires('object clone'), ...cloneBody }
      ],
      [
        'POST',
        '/fs-clone{/}',
        fsCloneRoute({ basedir, manager, maxBytes, log }),
        'contents:write',
        { requires: requires('fs clone'), ...cloneBody }
      ],
      ['GET', '/deleted{/}', deletedRoute({ archiving }), 'contents:read', storeFeature],
      [
        'POST',
        '/restore{/}',
        restoreRoute({ archiving, manager, maxBytes, log }),
        'contents:write',
        { ...storeFeature, ...cloneBody }
      ],
      ['POST', '/diff{/}', diff.posted, 'contents:read', { bodyLimit: maxBytes }],
      ['GET', '/diff{/**path}', diff.queried, 'contents:read'],
      ['GET', '/retention{/}', retention.read, 'contents:read', { requires: requires('store') }],
      ['PUT', '/retention{/}', retention.set, 'contents:write', retentionWrite],
      ['DELETE', '/retention{/}', retention.clear, 'contents:write', retentionWrite]
    ]
  };
}

export namespace storeApi {
  /** What the store API needs from the running gateway. */
  export interface IOptions {
    readonly archiving: Archiving;
    /** Where clones are written, and `current` is read for diffs: the gateway's manager. */
    readonly manager: ContentsManager;
    /** Whether publishing has been enabled (read on every request: enabling needs no restart). */
    readonly publishEnabled: () => boolean;
    /** The largest publish body accepted; default 100 MiB. */
    readonly maxPublishBodyBytes?: number;
    /** The contents backend in force and why, for feature detection. */
    readonly contentsBackend?: IContentsBackendChoice;
    /**
     * The most bytes a clone, a version read or one notebook of a diff reads from object
     * storage (default {@link DEFAULT_MAX_CLONE_BYTES}); larger is 413.
     */
    readonly maxCloneBytes?: number;
    readonly log?: Logger;
  }
}
