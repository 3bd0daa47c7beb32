import { z } from 'zod';
import { ContentsModelSchema, type ContentsModel } from './contents';
import { optionalString, requestDescription, requiredString } from './fields';

/**
 * The clone endpoints of the store API: `POST {base}api/store/clone` (from object storage) and
 * `POST {base}api/store/fs-clone` (from the directory tree below `fs_cloning_basedir`).
 *
 * Request fields are strings; a JSON `null` in an optional field means the field is absent, an
 * empty string is refused. Unknown fields are ignored, as the original ignored them.
 */

/** `POST {base}api/store/clone`: copy an object (optionally one version of it) into the contents. */
export const ObjectCloneRequestSchema = z
  .object({
    /** Any bucket the configured credentials can read. */
    object_bucket: requiredString(255).meta({
      description:
        'Any bucket the configured credentials can read; when `clone_buckets` is set, one it ' +
        'lists or the configured bucket (else 403, reason `bucket not allowed`).'
    }),
    object_key: requiredString(1024).meta({
      description: "The object's key, used as is (a leading `/` names another object)."
    }),
    /** A version of the object; absent or null: the latest. */
    object_version_id: optionalString(1024).meta({
      description: 'A version of the object; left out or null for the latest.'
    }),
    /** Contents path of the copy; absent or null: the key's last segment, in the root. */
    target_path: optionalString(4096).meta({
      description:
        'The path of the copy in the server, relative to its root; its directory must exist. ' +
        "Left out or null: the key's last segment, in the root."
    })
  })
  .meta({ description: requestDescription('What to clone from object storage, and where to.') });

/** `POST {base}api/store/fs-clone`: copy a file below `fs_cloning_basedir` into the contents. */
export const FsCloneRequestSchema = z
  .object({
    /** Path of the file relative to `fs_cloning_basedir`. */
    relpath: requiredString(4096).meta({
      description: "The file's path relative to `fs_cloning_basedir`."
    }),
    /** Contents path of the copy; absent or null: the last segment of `relpath`, in the root. */
    target_path: optionalString(4096).meta({
      description:
        'The path of the copy in the server, relative to its root; its directory must exist. ' +
        'Left out or null: the last segment of `relpath`, in the root.'
    })
  })
  .meta({
    description: requestDescription('What to clone from below `fs_cloning_basedir`, and where to.')
  });

/** What the object-storage clone adds to the contents model of the created item. */
export const ObjectCloneSourceSchema = z
  .object({
    object_bucket: z.string().meta({ description: 'The bucket read.' }),
    object_key: z.string().meta({ description: 'The key read.' }),
    /** The version actually read; null when the bucket is not versioned. */
    object_version_id: z.string().nullable().meta({
      description: 'The version actually read; null when the bucket is not versioned.'
    }),
    /** `s3://bucket/key`. */
    object_path: z.string().meta({ description: '`s3://<bucket>/<key>`.' })
  })
  .meta({ description: 'Where an object-storage clone came from.' });

/** What the file-system clone adds to the contents model of the created item. */
export const FsCloneSourceSchema = z
  .object({
    /** The `relpath` of the request, as given. */
    relpath: z.string().meta({ description: 'The `relpath` of the request, as given.' })
  })
  .meta({ description: 'Where a file-system clone came from.' });

/**
 * The answer to an object-storage clone (200): the contents model of the created item, without
 * content, plus where it came from.
 */
export const ObjectCloneResponseSchema: z.ZodType<ObjectCloneResponse> = ContentsModelSchema.and(
  ObjectCloneSourceSchema
).meta({
  description: 'The contents model of the created file plus its object-storage source.'
});

/** The answer to a file-system clone (200): the created item's contents model plus `relpath`. */
export const FsCloneResponseSchema: z.ZodType<FsCloneResponse> = ContentsModelSchema.and(
  FsCloneSourceSchema
).meta({ description: 'The contents model of the created file plus its `relpath`.' });

/** The request body as sent (optional fields may be null). */
export type ObjectCloneRequest = z.input<typeof ObjectCloneRequestSchema>;
export type FsCloneRequest = z.input<typeof FsCloneRequestSchema>;
export type ObjectCloneSource = z.infer<typeof ObjectCloneSourceSchema>;
export type FsCloneSource = z.infer<typeof FsCloneSourceSchema>;
export type ObjectCloneResponse = ContentsModel & ObjectCloneSource;
export type FsCloneResponse = ContentsModel & FsCloneSource;
