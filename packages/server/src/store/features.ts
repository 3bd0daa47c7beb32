import * as path from 'node:path';
import type { Archiving } from '../archive/archiving';
import type { HttpError } from '../errors';
import { httpErrors } from '../http/errorCatalogue';

/**
 * A feature of the store API that settings or the object store can turn off:
 *
 * - `store`: object storage is usable (a bucket, a passed bucket check);
 * - `publish`: publishing is enabled (`jupyter store enable`) and the store usable;
 * - `object clone`: `enable_object_cloning` is on and the store usable;
 * - `fs clone`: `fs_cloning_basedir` is an existing absolute directory.
 */
export type StoreFeature = 'store' | 'publish' | 'object clone' | 'fs clone';

/** Where the features are read: feature detection, as `GET api/store` reports it. */
export interface IFeatureSource {
  readonly archiving: Pick<Archiving, 'settings' | 'features'>;
  /** Whether publishing has been enabled; asked on every check. Default: it has not. */
  readonly publishEnabled?: () => boolean;
}

/**
 * Refuse a request that needs a feature which is off, saying why (feature detection's reason).
 * Routes declare the features they need in their table (see `store/routes.ts`); routes that
 * need object storage only for some requests (a diff of a file with the disk) ask here then.
 *
 * @throws HttpError 503 (`store unavailable`) while object storage is not usable; 403 when the
 *   feature is turned off (`publish disabled`, `object cloning disabled`, `fs cloning
 *   disabled`).
 */
export function requireFeature(source: IFeatureSource, feature: StoreFeature): void {
  const { archiving } = source;
  // Whether publishing is enabled is read from the configuration: only when it matters.
  const { features, reasons } = archiving.features(
    feature === 'publish' ? { publishEnabled: source.publishEnabled?.() ?? false } : {}
  );
  switch (feature) {
    case 'store':
      if (!features.store_valid) throw Private.storeUnavailable(reasons.store_valid);
      return;
    case 'publish':
      if (features.publish_valid) return;
      if (!features.store_valid) throw Private.storeUnavailable(reasons.store_valid);
      throw httpErrors.publishDisabled(`Publishing is disabled: ${reasons.publish_valid}`);
    case 'object clone':
      if (!archiving.settings.enable_object_cloning) {
        throw httpErrors.objectCloningDisabled(
          'Cloning from object storage is turned off (enable_object_cloning is false)'
        );
      }
      if (!features.object_clone_valid) {
        throw Private.storeUnavailable(reasons.object_clone_valid ?? 'unknown reason');
      }
      return;
    case 'fs clone':
      if (!features.fs_clone_valid || !path.isAbsolute(archiving.settings.fs_cloning_basedir)) {
        throw httpErrors.fsCloningDisabled(
          `Cloning from the file system is turned off: ${
            reasons.fs_clone_valid ?? 'fs_cloning_basedir is not an absolute path'
          }`
        );
      }
      return;
  }
}

namespace Private {
  export function storeUnavailable(reason: string | undefined): HttpError {
    return httpErrors.storeUnavailable(`Object storage is not usable: ${reason}`);
  }
}
