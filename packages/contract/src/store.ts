import { z } from 'zod';
import { WorkspaceUsageSchema } from './deleted';
import { dateTime } from './fields';
import { VersionLabelSchema } from './labels';

/** The five features of feature detection, by the specification's names. */
export const StoreFeaturesSchema = z
  .object({
    store_valid: z.boolean().meta({
      description:
        'Object storage is usable: the embedded store, or an S3 bucket that is configured and ' +
        'passed the bucket check (exists, readable, versioning enabled).'
    }),
    archive_valid: z.boolean().meta({
      description:
        'Notebook saves are archived (a usable store and a non-empty `workspace_prefix`).'
    }),
    publish_valid: z.boolean().meta({
      description:
        '`PUT api/store/publish/{path}` works: a usable store, a non-empty `published_prefix`, ' +
        'and publishing enabled with `jupyter store enable`.'
    }),
    object_clone_valid: z.boolean().meta({
      description:
        '`POST api/store/clone` works: `enable_object_cloning` is true and the store is usable.'
    }),
    fs_clone_valid: z.boolean().meta({
      description:
        '`POST api/store/fs-clone` works: `fs_cloning_basedir` is an existing absolute directory.'
    })
  })
  .meta({
    description:
      'Whether each feature is usable with the current settings. New features may be added as ' +
      'new keys.'
  });

/** Changes one source reported (`seen`) and the versions they produced (`archived`). */
export const ArchiveSourceCountsSchema = z
  .object({
    seen: z.number().int().nonnegative().meta({
      description: 'Changes the source reported (saves, events, file-system events, scan findings).'
    }),
    archived: z.number().int().nonnegative().meta({
      description: 'Versions and delete markers that the object store confirmed for them.'
    })
  })
  .meta({ description: 'What one source of changes reported, and what became of it.' });

/** A part of the root where a file-system watcher cannot see changes, and why. */
export const BlindSpotSchema = z
  .object({
    /** The API path of the directory ('' for the whole root). */
    path: z
      .string()
      .meta({ description: "The folder's path below the root; empty for the whole root." }),
    reason: z
      .string()
      .meta({ description: 'Why (a network or FUSE file system, the inotify watch limit).' })
  })
  .meta({ description: 'A folder where the file-system watcher cannot see changes.' });

/** How writes that do not pass through the gateway are observed. */
export const ArchiveObservationSchema = z
  .object({
    /** The file-system watcher: inotify, polling (the periodic scan is the source), or off. */
    watcher: z.object({
      mode: z.enum(['inotify', 'polling', 'off']).meta({
        description:
          '`inotify`: the root is watched; `polling`: the watcher is blind and the periodic ' +
          'scan is the source; `off`: turned off by `archive_watch`.'
      }),
      /** Why the mode is not inotify, or null. */
      reason: z
        .string()
        .nullable()
        .meta({ description: 'Why the mode is not `inotify`; null when it is.' })
    }),
    /** Directories the watcher cannot see into; the periodic scan covers them. */
    blind_spots: z.array(BlindSpotSchema).meta({
      description: 'Folders the watcher cannot see into; the periodic scan covers them.'
    }),
    /** The subscription to Jupyter Server's event bus (`contents_service` events). */
    events: z
      .object({
        connected: z.boolean(),
        /** Why it is not connected, or null. */
        reason: z
          .string()
          .nullable()
          .meta({ description: 'Why it is not connected; null when it is.' })
      })
      .meta({ description: "The subscription to Jupyter Server's `contents_service` events." }),
    /** The reconciliation scan of the root. */
    scan: z
      .object({
        interval_seconds: z
          .number()
          .nonnegative()
          .meta({ description: 'The period of the scan (`archive_scan_interval_seconds`).' }),
        running: z.boolean(),
        /** When the last complete scan finished (ISO 8601), or null before the first. */
        last_completed_at: dateTime(
          'When the last complete scan finished; null before the first.'
        ).nullable(),
        last_duration_seconds: z.number().nonnegative().nullable(),
        /** Notebooks the last complete scan found under the root. */
        last_file_count: z
          .number()
          .int()
          .nonnegative()
          .nullable()
          .meta({ description: 'The files the last complete scan found under the root.' })
      })
      .meta({ description: 'The reconciliation scan of the root.' })
  })
  .meta({
    description:
      "How writes that do not pass through the gateway's contents API are seen: kernels, " +
      "terminals, git, papermill (the watcher), Python's contents manager and collaboration " +
      'rooms (the event subscription), and anything else (the periodic scan).'
  });

/** The archive queue's state, as feature detection reports it. */
export const ArchiveStatusSchema = z
  .object({
    /** Saves journalled and not yet confirmed by the object store. */
    pending: z
      .number()
      .int()
      .nonnegative()
      .meta({ description: 'Saves journalled and not yet confirmed by the object store.' }),
    /** Age of the oldest pending save in seconds, or null when none is pending. */
    oldest_pending_age_seconds: z.number().nonnegative().nullable().meta({
      description: 'Age of the oldest pending save in seconds; null when none is pending.'
    }),
    /** Saves archived since the gateway started. */
    archived: z
      .number()
      .int()
      .nonnegative()
      .meta({ description: 'Saves archived since the gateway started.' }),
    /** Saves skipped for a newer state of their path (`archive_min_interval_seconds`). */
    coalesced: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .meta({
        description:
          'Saves not archived since the gateway started because a newer state of their path ' +
          'replaced them within archive_min_interval_seconds (the newest state always is archived).'
      }),
    /** When the last save was archived (ISO 8601), or null. */
    last_archived_at: dateTime(
      'When the last save was archived (ISO 8601, UTC); null when none was.'
    ).nullable(),
    /** The last failure, cleared by the next success. */
    last_error: z
      .object({
        message: z.string().meta({ description: 'What failed.' }),
        at: dateTime('When it failed (ISO 8601, UTC).'),
        path: z.string().optional().meta({ description: 'The path of the save that failed.' })
      })
      .nullable()
      .meta({ description: 'The last archive failure; null again after the next success.' }),
    /** Per source of changes: how many it reported, and how many of them became versions. */
    sources: z
      .object({
        gateway: ArchiveSourceCountsSchema,
        events: ArchiveSourceCountsSchema,
        watcher: ArchiveSourceCountsSchema,
        scan: ArchiveSourceCountsSchema
      })
      .optional()
      .meta({
        description:
          'Per source of changes since the gateway started: changes it reported (`seen`) and ' +
          'the versions or delete markers they produced (`archived`).'
      }),
    /** How changes made by other writers (kernels, terminals, git, Python's contents manager) are seen. */
    observation: ArchiveObservationSchema.optional()
  })
  .meta({
    description: 'The archive queue, which uploads every notebook save from a local journal.'
  });

/** The contents backend in force: `node` (the gateway's manager) or `jupyter` (Python's). */
export const ContentsBackendInfoSchema = z
  .object({
    backend: z.enum(['node', 'jupyter']),
    setting: z
      .enum(['auto', 'node', 'jupyter'])
      .meta({ description: 'The `contents_backend` setting it was chosen from.' }),
    reason: z
      .string()
      .meta({ description: 'Why, in words (with `auto`, what the upstream loads).' })
  })
  .meta({
    description:
      "Who answers the contents API: `node`, the gateway's own contents manager, or `jupyter`, " +
      "Python's (with its extensions and save hooks) behind the proxy."
  });

/** `GET {base}api/store`: feature detection. */
export const StoreInfoSchema = z
  .object({
    /** The jupyter-store release. */
    release: z.string().meta({ description: 'The jupyter-store release (the package version).' }),
    features: StoreFeaturesSchema,
    /** In words, why each feature that is off is off. */
    reasons: z.record(z.string(), z.string()).meta({
      description:
        'For each feature that is off (by its key in `features`), one sentence saying why, ' +
        'e.g. `publish_valid: "publishing is off until enabled with …"`.'
    }),
    /** The archive queue, or null when archiving is off. */
    archive: ArchiveStatusSchema.nullable().meta({
      description: 'The archive queue; null when archiving is off.'
    }),
    /** The configured bucket (the embedded store's is `jupyter-store`); null when none is set. */
    object_bucket: z
      .string()
      .nullable()
      .meta({
        description:
          'The configured bucket, where saves are archived and notebooks published (the ' +
          "embedded store's is `jupyter-store`); the default bucket of clones. Null when none is " +
          'set.'
      }),
    /** Where saves are archived in the bucket: `<workspace_prefix>/<path>`. */
    workspace_prefix: z
      .string()
      .meta({ description: 'Saves are archived at `<workspace_prefix>/<path>` in the bucket.' }),
    /** Where notebooks are published in the bucket: `<published_prefix>/<path>`. */
    published_prefix: z.string().meta({
      description: 'Notebooks are published at `<published_prefix>/<path>` in the bucket.'
    }),
    /** Who answers the contents API, the `contents_backend` setting it came from, and why. */
    contents_backend: ContentsBackendInfoSchema.optional(),
    /** What the workspace prefix holds; null until first measured. Absent from older servers. */
    usage: WorkspaceUsageSchema.nullable()
      .optional()
      .meta({
        description:
          'What the workspace prefix holds: counted from a listing of every version below it, ' +
          "then kept up to date with each of the archive's writes, and counted again in the " +
          'background once an hour old (for other writers and lifecycle expiry); null while ' +
          'archiving is off or until the first count is done. Absent from older servers.'
      })
  })
  .meta({
    description:
      'Feature detection. Extra information is added as new keys, never by changing these.'
  });

/** One stored version of an object. */
export const ObjectVersionSchema = z
  .object({
    object_version_id: z
      .string()
      .meta({ description: 'The version id, as `POST api/store/clone` takes it.' }),
    last_modified: dateTime('When the version was written (ISO 8601, UTC).'),
    size: z.number().int().nonnegative().meta({ description: 'Its size in bytes.' }),
    is_latest: z.boolean().meta({ description: 'True for the current version.' }),
    /**
     * Archived versions only: the notebook path the version was archived under. It differs from
     * the listing's `path` for the versions of the notebook's earlier paths (before renames).
     * Servers before renames were followed leave it out: read it as the listing's `path`.
     */
    path: z
      .string()
      .optional()
      .meta({
        description:
          'Archived versions only: the notebook path this version was archived under (its key is ' +
          "`<workspace_prefix>/<path>`). It differs from the listing's `path` for the versions of " +
          "the notebook's earlier paths, listed after its own. Absent from older servers: the " +
          "listing's `path`."
      }),
    /** Archived versions only: the key the version is stored under (`<workspace_prefix>/<path>`). */
    object_key: z
      .string()
      .optional()
      .meta({
        description:
          "Archived versions only: the version's key in `object_bucket`, as `POST api/store/clone` " +
          "takes it (the key of its own `path`). Absent from older servers: the copy's `object_key`."
      }),
    /**
     * Archived versions only: set on the version a rename wrote (the first at its new path), to
     * the path the notebook had before; the listing goes on with that path's versions.
     */
    renamed_from: z
      .string()
      .optional()
      .meta({
        description:
          'Archived versions only: set on the first version archived after a rename, to the path ' +
          'the notebook was renamed from. The versions of that path follow it in the listing.'
      }),
    /** Archived versions only: the version's name and note, when it has been named. */
    label: VersionLabelSchema.optional().meta({
      description:
        'Archived versions only: set when the version has been named (`POST ' +
        'api/store/named/{path}`). Absent when it has no name, or when the named copies could ' +
        'not be read (the listing is answered all the same).'
    })
  })
  .meta({ description: 'One stored version of an object.' });

/** The versions of one object, newest first. */
export const ObjectHistorySchema = z
  .object({
    object_key: z.string().meta({ description: "The object's key in `object_bucket`." }),
    versions: z.array(ObjectVersionSchema).meta({
      description:
        'The versions on this page, newest first (at most `limit`); empty when there is none, ' +
        'or when the pages before listed them all.'
    }),
    /**
     * Archived copies only: set when the notebook was deleted (the archive's newest entry is a
     * delete marker), with when and the marker's id. The versions before it are kept and listed.
     * Reported on the first page of a listing only (it describes the newest entry); absent on the
     * pages that `next` leads to.
     */
    deleted: z
      .object({
        at: dateTime('When it was deleted (ISO 8601, UTC).'),
        object_version_id: z.string().meta({ description: "The delete marker's version id." })
      })
      .nullable()
      .optional()
      .meta({
        description:
          'Archived copies only, on the first page only (it describes the newest entry; later ' +
          'pages leave it out): set when the notebook was deleted, so that the newest entry of ' +
          'its key is a delete marker, else null. The versions before it stay listed, so it can ' +
          'be restored.'
      })
  })
  .meta({ description: 'The versions of one object.' });

/** Versions of each copy on one page of a listing when `limit` is not given. */
export const DEFAULT_VERSIONS_PAGE_LIMIT = 100;

/** The largest `limit` a listing accepts. */
export const MAX_VERSIONS_PAGE_LIMIT = 1000;

/**
 * `GET {base}api/store/versions/{path}[?limit=N][&next=TOKEN]`: one page of the archived and
 * published versions of a path, at most `limit` of each copy.
 */
export const VersionListingSchema = z
  .object({
    path: z
      .string()
      .meta({ description: 'The notebook path, as checked (outer slashes removed).' }),
    object_bucket: z.string().meta({ description: 'The bucket of both copies.' }),
    /** Archived (workspace) versions, newest first. */
    workspace: ObjectHistorySchema.meta({
      description: 'The archived saves, under `<workspace_prefix>/<path>`.'
    }),
    /** Published versions, newest first. */
    published: ObjectHistorySchema.meta({
      description: 'The published copies, under `<published_prefix>/<path>`.'
    }),
    /**
     * The opaque token of the next page (give it back as `next=`, with the same path), or null on
     * the last page. Servers before paging leave it out: their one page is the whole listing.
     */
    next: z
      .string()
      .nullable()
      .optional()
      .meta({
        description:
          'Null on the last page. Otherwise more versions follow: the opaque token to give as ' +
          '`next=` with the same path to get them. Always sent by this server; clients of older ' +
          'servers, which leave it out, treat a missing `next` as null.'
      })
  })
  .meta({ description: 'One page of the archived and published versions of one notebook path.' });

/**
 * `GET {base}api/store/versions/{path}?object_version_id=…[&copy=published]`: the content of one
 * archived (or published) version of a notebook, for restoring it.
 */
export const VersionContentSchema = z
  .object({
    path: z.string().meta({ description: "The notebook's path, as asked for." }),
    object_bucket: z.string(),
    object_key: z.string().meta({
      description:
        'The key of the copy (`<workspace_prefix>/<path>` or `<published_prefix>/<path>`).'
    }),
    object_version_id: z.string().meta({ description: 'The version read.' }),
    /** The notebook of that version (nbformat 4 JSON), its cells marked untrusted. */
    content: z.record(z.string(), z.unknown()).meta({
      description: 'The notebook of that version (nbformat 4 JSON), its cells marked untrusted.'
    })
  })
  .meta({
    description: "One version of a notebook's archived or published copy, with its content."
  });

export type StoreFeatures = z.infer<typeof StoreFeaturesSchema>;
export type ArchiveStatus = z.infer<typeof ArchiveStatusSchema>;
export type ArchiveObservation = z.infer<typeof ArchiveObservationSchema>;
export type BlindSpot = z.infer<typeof BlindSpotSchema>;
export type StoreInfo = z.infer<typeof StoreInfoSchema>;
export type ObjectVersion = z.infer<typeof ObjectVersionSchema>;
export type VersionContent = z.infer<typeof VersionContentSchema>;
export type VersionListing = z.infer<typeof VersionListingSchema>;
