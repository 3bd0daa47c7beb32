import { z } from 'zod';
import { count, dateTime, optionalString, requestDescription, requiredString } from './fields';
import { ContentsModelSchema, type ContentsModel } from './contents';

/**
 * Recently deleted notebooks and their restore: `GET {base}api/store/deleted` lists the archived
 * notebooks whose newest archive entry is a delete marker, `POST {base}api/store/restore` writes
 * one of their versions back. And the workspace's usage that feature detection reports.
 */

/** Deleted notebooks on one answer of `GET api/store/deleted` when `limit` is not given. */
export const DEFAULT_DELETED_LIMIT = 100;

/** The largest `limit` `GET api/store/deleted` accepts. */
export const MAX_DELETED_LIMIT = 1000;

/** The newest version of a deleted notebook: what a restore writes back by default. */
export const LastVersionSchema = z
  .object({
    object_version_id: z
      .string()
      .meta({ description: 'The version id, as `POST api/store/restore` takes it.' }),
    last_modified: dateTime('When the version was written (ISO 8601, UTC).'),
    size: count('Its size in bytes.')
  })
  .meta({ description: 'The newest version written before the delete.' });

/** One recently deleted notebook. */
export const DeletedNotebookSchema = z
  .object({
    path: z.string().meta({ description: 'The notebook path it had, relative to the root.' }),
    deleted_at: dateTime('When it was deleted: the time of its delete marker (ISO 8601, UTC).'),
    delete_marker_id: z
      .string()
      .meta({ description: 'The version id of the delete marker its key ends with.' }),
    last_version: LastVersionSchema
  })
  .meta({ description: 'An archived notebook whose newest archive entry is a delete marker.' });

/** `GET {base}api/store/deleted[?prefix=P][&limit=N]`. */
export const DeletedListingSchema = z
  .object({
    deleted: z.array(DeletedNotebookSchema).meta({
      description: 'The deleted notebooks, newest deletion first, at most `limit` of them.'
    }),
    left_out: count(
      'How many more deleted notebooks there are, older deletions than those listed; 0 when ' +
        'all are listed.'
    )
  })
  .meta({
    description:
      'The recently deleted notebooks below the workspace prefix (and `prefix`). Renames are not ' +
      'deletions: the old path of a renamed notebook is not listed.'
  });

/** `POST {base}api/store/restore`: write a version of a deleted notebook back. */
export const RestoreRequestSchema = z
  .object({
    path: requiredString(4096).meta({
      description: 'The notebook path to restore, relative to the root; its directory must exist.'
    }),
    object_version_id: optionalString(1024).meta({
      description:
        'The archived version to write back; left out or null for the newest version before ' +
        'the newest delete marker (or the newest version, when the path is not deleted).'
    })
  })
  .meta({ description: requestDescription('What to restore.') });

/** What a restore adds to the contents model of what it wrote. */
export const RestoreSourceSchema = z
  .object({
    restored_from: z.object({
      path: z.string().meta({ description: 'The path asked for.' }),
      object_key: z.string().meta({ description: 'The archived key read.' }),
      object_version_id: z.string().meta({ description: 'The version written back.' })
    })
  })
  .meta({ description: 'Where a restore came from.' });

/**
 * The answer to a restore (200): the contents model of what was written (at `path`, or at the
 * first free `-<n>` name when `path` exists again), without content, plus where it came from.
 */
export const RestoreResponseSchema: z.ZodType<RestoreResponse> = ContentsModelSchema.and(
  RestoreSourceSchema
).meta({
  description:
    'The contents model of the restored file (at `path`, or at `name-1.ipynb` … when `path` ' +
    'exists) plus the version it came from.'
});

/**
 * `usage` in `GET {base}api/store`: what the workspace prefix holds, cached, and measured again
 * after the archive writes or once it is a minute old.
 */
export const WorkspaceUsageSchema = z
  .object({
    objects: count('Keys whose newest entry is a version (notebooks that exist in the archive).'),
    versions: count('Every version kept, of every key (delete markers not counted).'),
    bytes: count('The bytes of every version kept.'),
    current_bytes: count('The bytes of the newest versions of the `objects`.'),
    measured_at: dateTime(
      'When these figures were last brought up to date (ISO 8601, UTC): the start of the ' +
        'count, or the newest archive write added since.'
    )
  })
  .meta({ description: 'What the workspace prefix of the bucket holds.' });

export type LastVersion = z.infer<typeof LastVersionSchema>;
export type DeletedNotebook = z.infer<typeof DeletedNotebookSchema>;
export type DeletedListing = z.infer<typeof DeletedListingSchema>;
export type RestoreRequest = z.input<typeof RestoreRequestSchema>;
export type RestoreSource = z.infer<typeof RestoreSourceSchema>;
export type RestoreResponse = ContentsModel & RestoreSource;
export type WorkspaceUsage = z.infer<typeof WorkspaceUsageSchema>;
