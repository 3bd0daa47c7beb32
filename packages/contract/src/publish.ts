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
    type: z.literal('notebook').meta({ description: 'Must be `notebook` (else 415).' }),
    /** Ignored for notebooks, as the contents API ignores it; `json` when sent. */
    format: z.literal('json').nullable().optional().meta({
      description: 'Ignored for notebooks, as the contents API ignores it; `json` when sent.'
    }),
    /** The notebook (nbformat 4) as JSON. */
    content: z.record(z.string(), z.unknown()).meta({
      description:
        'The notebook (nbformat 4) as JSON; it must pass the official nbformat schema, and its ' +
        'cell ids must be unique (else 422).'
    })
  })
  .passthrough()
  .meta({
    description:
      'The contents-API model of a notebook, as a contents `PUT` sends it. Other model fields ' +
      '(`name`, `path`, …) are allowed and ignored.'
  });

/** `PUT {base}api/store/publish/{path}` → 200: where the notebook was published. */
export const PublishResultSchema = z
  .object({
    object_bucket: z
      .string()
      .meta({ description: 'The one bucket of workspace and published copies.' }),
    object_key: z.string().meta({ description: '`<published_prefix>/<path>`.' }),
    object_version_id: z
      .string()
      .nullable()
      .meta({ description: 'The new version; null only on a bucket without versioning.' }),
    object_path: z.string().meta({ description: '`s3://<bucket>/<key>`.' })
  })
  .meta({ description: 'Where the notebook was published.' });

export type PublishRequest = z.infer<typeof PublishRequestSchema>;
export type PublishResult = z.infer<typeof PublishResultSchema>;
