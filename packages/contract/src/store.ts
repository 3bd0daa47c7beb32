import { z } from 'zod';

/** The five features of feature detection, by the specification's names. */
export const StoreFeaturesSchema = z.object({
  store_valid: z.boolean(),
  archive_valid: z.boolean(),
  publish_valid: z.boolean(),
  object_clone_valid: z.boolean(),
  fs_clone_valid: z.boolean()
});

/** Changes one source reported (`seen`) and the versions they produced (`archived`). */
export const ArchiveSourceCountsSchema = z.object({
  seen: z.number().int().nonnegative(),
  archived: z.number().int().nonnegative()
});

/** A part of the root where a file-system watcher cannot see changes, and why. */
export const BlindSpotSchema = z.object({
  /** The API path of the directory ('' for the whole root). */
  path: z.string(),
  reason: z.string()
});

/** How writes that do not pass through the gateway are observed. */
export const ArchiveObservationSchema = z.object({
  /** The file-system watcher: inotify, polling (the periodic scan is the source), or off. */
  watcher: z.object({
    mode: z.enum(['inotify', 'polling', 'off']),
    /** Why the mode is not inotify, or null. */
    reason: z.string().nullable()
  }),
  /** Directories the watcher cannot see into; the periodic scan covers them. */
  blind_spots: z.array(BlindSpotSchema),
  /** The subscription to Jupyter Server's event bus (`contents_service` events). */
  events: z.object({
    connected: z.boolean(),
    /** Why it is not connected, or null. */
    reason: z.string().nullable()
  }),
  /** The reconciliation scan of the root. */
  scan: z.object({
    interval_seconds: z.number().nonnegative(),
    running: z.boolean(),
    /** When the last complete scan finished (ISO 8601), or null before the first. */
    last_completed_at: z.string().nullable(),
    last_duration_seconds: z.number().nonnegative().nullable(),
    /** Notebooks the last complete scan found under the root. */
    last_file_count: z.number().int().nonnegative().nullable()
  })
});

/** The archive queue's state, as feature detection reports it. */
export const ArchiveStatusSchema = z.object({
  /** Saves journalled and not yet confirmed by the object store. */
  pending: z.number().int().nonnegative(),
  /** Age of the oldest pending save in seconds, or null when none is pending. */
  oldest_pending_age_seconds: z.number().nonnegative().nullable(),
  /** Saves archived since the gateway started. */
  archived: z.number().int().nonnegative(),
  /** When the last save was archived (ISO 8601), or null. */
  last_archived_at: z.string().nullable(),
  /** The last failure, cleared by the next success. */
  last_error: z
    .object({ message: z.string(), at: z.string(), path: z.string().optional() })
    .nullable(),
  /** Per source of changes: how many it reported, and how many of them became versions. */
  sources: z
    .object({
      gateway: ArchiveSourceCountsSchema,
      events: ArchiveSourceCountsSchema,
      watcher: ArchiveSourceCountsSchema,
      scan: ArchiveSourceCountsSchema
    })
    .optional(),
  /** How changes made by other writers (kernels, terminals, git, Python's contents manager) are seen. */
  observation: ArchiveObservationSchema.optional()
});

/** The contents backend in force: `node` (the gateway's manager) or `jupyter` (Python's). */
export const ContentsBackendInfoSchema = z.object({
  backend: z.enum(['node', 'jupyter']),
  setting: z.enum(['auto', 'node', 'jupyter']),
  reason: z.string()
});

/** `GET {base}api/store`: feature detection. */
export const StoreInfoSchema = z.object({
  /** The jupyter-store release. */
  release: z.string(),
  features: StoreFeaturesSchema,
  /** In words, why each feature that is off is off. */
  reasons: z.record(z.string(), z.string()),
  /** The archive queue, or null when archiving is off. */
  archive: ArchiveStatusSchema.nullable(),
  /** The configured bucket (the embedded store's is `jupyter-store`); null when none is set. */
  object_bucket: z.string().nullable(),
  /** Where saves are archived in the bucket: `<workspace_prefix>/<path>`. */
  workspace_prefix: z.string(),
  /** Where notebooks are published in the bucket: `<published_prefix>/<path>`. */
  published_prefix: z.string(),
  /** Who answers the contents API, the `contents_backend` setting it came from, and why. */
  contents_backend: ContentsBackendInfoSchema.optional()
});

/** One stored version of an object. */
export const ObjectVersionSchema = z.object({
  object_version_id: z.string(),
  last_modified: z.string(),
  size: z.number().int().nonnegative(),
  is_latest: z.boolean()
});

/** The versions of one object, newest first. */
export const ObjectHistorySchema = z.object({
  object_key: z.string(),
  versions: z.array(ObjectVersionSchema),
  /**
   * Archived copies only: set when the notebook was deleted (the archive's newest entry is a
   * delete marker), with when and the marker's id. The versions before it are kept and listed.
   * Reported on the first page of a listing only (it describes the newest entry); absent on the
   * pages that `next` leads to.
   */
  deleted: z.object({ at: z.string(), object_version_id: z.string() }).nullable().optional()
});

/** Versions of each copy on one page of a listing when `limit` is not given. */
export const DEFAULT_VERSIONS_PAGE_LIMIT = 100;

/** The largest `limit` a listing accepts. */
export const MAX_VERSIONS_PAGE_LIMIT = 1000;

/**
 * `GET {base}api/store/versions/{path}[?limit=N][&next=TOKEN]`: one page of the archived and
 * published versions of a path, at most `limit` of each copy.
 */
export const VersionListingSchema = z.object({
  path: z.string(),
  object_bucket: z.string(),
  /** Archived (workspace) versions, newest first. */
  workspace: ObjectHistorySchema,
  /** Published versions, newest first. */
  published: ObjectHistorySchema,
  /**
   * The opaque token of the next page (give it back as `next=`, with the same path), or null on
   * the last page. Servers before paging leave it out: their one page is the whole listing.
   */
  next: z.string().nullable().optional()
});

export type StoreFeatures = z.infer<typeof StoreFeaturesSchema>;
export type ArchiveStatus = z.infer<typeof ArchiveStatusSchema>;
export type ArchiveObservation = z.infer<typeof ArchiveObservationSchema>;
export type BlindSpot = z.infer<typeof BlindSpotSchema>;
export type StoreInfo = z.infer<typeof StoreInfoSchema>;
/**
 * `GET {base}api/store/versions/{path}?object_version_id=…[&copy=published]`: the content of one
 * archived (or published) version of a notebook, for restoring it.
 */
export const VersionContentSchema = z.object({
  path: z.string(),
  object_bucket: z.string(),
  object_key: z.string(),
  object_version_id: z.string(),
  /** The notebook of that version (nbformat 4 JSON), its cells marked untrusted. */
  content: z.record(z.string(), z.unknown())
});

export type ObjectVersion = z.infer<typeof ObjectVersionSchema>;
export type VersionContent = z.infer<typeof VersionContentSchema>;
export type VersionListing = z.infer<typeof VersionListingSchema>;
