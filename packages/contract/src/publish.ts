import { z } from 'zod';

/**
 * The body of `PUT {base}api/store/publish/{path}`: the contents-API model of a notebook, as a
 * contents `PUT` sends it. Other model fields (`name`, `path`, …) are allowed and ignored.
 *
 * The server checks bodies itself, in the order its statuses require (400 empty, 415 not a
 * notebook, 422 invalid notebook); this schema is for clients that build the request.
 */
export const PublishRequestSchema = z
  .object({
    type: z.literal('notebook'),
    /** Ignored for notebooks, as the contents API ignores it; `json` when sent. */
    format: z.literal('json').nullable().optional(),
    /** The notebook (nbformat 4) as JSON. */
    content: z.record(z.string(), z.unknown())
  })
  .passthrough();

/** `PUT {base}api/store/publish/{path}` → 200: where the notebook was published. */
export const PublishResultSchema = z.object({
  /** The one bucket of workspace and published copies. */
  object_bucket: z.string(),
  /** `<published_prefix>/<path>`. */
  object_key: z.string(),
  /** The new version; null only on a bucket without versioning. */
  object_version_id: z.string().nullable(),
  /** `s3://<bucket>/<key>`. */
  object_path: z.string()
});

export type PublishRequest = z.infer<typeof PublishRequestSchema>;
export type PublishResult = z.infer<typeof PublishResultSchema>;
