import { storageMode, type StoreSettings } from './storeSettings';
import { isDirectory } from '../fileChecks';

/** The features feature detection reports, by their specification names. */
export const FEATURES = [
  'store_valid',
  'archive_valid',
  'publish_valid',
  'object_clone_valid',
  'fs_clone_valid'
] as const;

export type FeatureName = (typeof FEATURES)[number];

/** Whether each feature is usable, and in words why not. */
export interface IFeatureValidation {
  readonly features: Readonly<Record<FeatureName, boolean>>;
  /** One sentence for each feature that is off. */
  readonly reasons: Readonly<Partial<Record<FeatureName, string>>>;
}

/** What besides the settings decides the features. */
export interface IValidationContext {
  /** Publishing has been enabled (`jupyter store enable`); off by default. */
  publishEnabled?: boolean;
  /**
   * The result of the last bucket check (credentials, existence, versioning): null while it has
   * not run, otherwise the reason it failed, or `true` when it passed.
   */
  storageCheck?: true | string | null;
}

/**
 * Validate the settings feature by feature, as the original's `validate_bookstore` did, with its
 * gaps fixed: the embedded store counts as a store, object cloning needs a usable store, a
 * file-system clone base must be an existing absolute directory, and a failed bucket check turns
 * the storage features off with its reason.
 */
export function validateStoreSettings(
  settings: StoreSettings,
  context: IValidationContext = {}
): IFeatureValidation {
  const reasons: Partial<Record<FeatureName, string>> = {};
  const mode = storageMode(settings);
  let storeReason: string | undefined;
  if (mode === 's3' && settings.object_bucket === '') {
    storeReason = 'object_bucket is not set, so there is no bucket to use';
  } else if (typeof context.storageCheck === 'string') {
    storeReason = context.storageCheck;
  }
  if (storeReason) reasons.store_valid = storeReason;

  if (storeReason) reasons.archive_valid = storeReason;
  else if (settings.workspace_prefix.replace(/\/+/g, '') === '') {
    reasons.archive_valid = 'workspace_prefix is empty';
  }

  if (storeReason) reasons.publish_valid = storeReason;
  else if (settings.published_prefix.replace(/\/+/g, '') === '') {
    reasons.publish_valid = 'published_prefix is empty';
  } else if (!context.publishEnabled) {
    reasons.publish_valid =
      'publishing is off until enabled with `jupyter store enable --user` or `--sys-prefix`';
  }

  if (!settings.enable_object_cloning) {
    reasons.object_clone_valid = 'enable_object_cloning is false';
  } else if (storeReason) reasons.object_clone_valid = storeReason;

  if (settings.fs_cloning_basedir === '') {
    reasons.fs_clone_valid = 'fs_cloning_basedir is not set';
  } else if (!isDirectory(settings.fs_cloning_basedir)) {
    reasons.fs_clone_valid = `fs_cloning_basedir ${settings.fs_cloning_basedir} is not a directory`;
  }

  const features = Object.fromEntries(
    FEATURES.map(feature => [feature, reasons[feature] === undefined])
  ) as Record<FeatureName, boolean>;
  return { features, reasons };
}
