import { z } from 'zod';

/**
 * The Jupyter contents API, as Jupyter Server 2 speaks it. The server validates request bodies
 * with these schemas; the client and the JupyterLab extension parse responses with them.
 */

/** The three kinds of item the contents API knows. */
export const ContentsType = z.enum(['directory', 'file', 'notebook']);
export type ContentsType = z.infer<typeof ContentsType>;

/** How a file's content travels: text (UTF-8) or base64; `json` for notebooks and directories. */
export const ContentsFormat = z.enum(['text', 'base64', 'json']);
export type ContentsFormat = z.infer<typeof ContentsFormat>;

/** A contents model, as returned by every contents call. */
export interface ContentsModel {
  name: string;
  path: string;
  type: ContentsType;
  writable: boolean;
  created: string;
  last_modified: string;
  mimetype: string | null;
  content: unknown;
  format: ContentsFormat | null;
  size: number | null;
  hash: string | null;
  hash_algorithm: string | null;
  /** Set on notebooks that fail nbformat validation. */
  message?: string;
}

/** ISO 8601 in UTC with a `Z`, as Jupyter renders datetimes. */
function isoDate(description: string) {
  return z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/)
    .meta({ format: 'date-time', description });
}

export const ContentsModelSchema: z.ZodType<ContentsModel> = z
  .object({
    name: z.string().meta({ description: 'The file name.' }),
    path: z.string().meta({ description: 'The full path in the server, relative to its root.' }),
    type: ContentsType.meta({ description: 'What the item is.' }),
    writable: z.boolean().meta({ description: 'Whether the server may write it.' }),
    created: isoDate('When it was created (ISO 8601, UTC, as Jupyter renders it).'),
    last_modified: isoDate('When it was last written (ISO 8601, UTC).'),
    mimetype: z
      .string()
      .nullable()
      .meta({ description: "The file's MIME type; null for notebooks and directories." }),
    content: z
      .unknown()
      .meta({ description: 'The content when asked for; null in clone answers.' }),
    format: ContentsFormat.nullable().meta({
      description: 'How `content` is encoded; null when there is no content.'
    }),
    size: z
      .number()
      .int()
      .nonnegative()
      .nullable()
      .meta({ description: 'The size in bytes; null for directories.' }),
    hash: z
      .string()
      .nullable()
      .meta({ description: 'The content hash when asked for (`hash=1`); else null.' }),
    hash_algorithm: z
      .string()
      .nullable()
      .meta({ description: 'The algorithm of `hash` (`sha256`); else null.' }),
    message: z
      .string()
      .optional()
      .meta({ description: 'Set on notebooks that fail nbformat validation, saying why.' })
  })
  .meta({
    description:
      'A Jupyter contents-API model, as `GET api/contents/<path>?content=0` returns it. In ' +
      'clone answers `content`, `format`, `hash` and `hash_algorithm` are null.'
  });

/**
 * The body of `PUT {base}api/contents/<path>`: save or create. Jupyter treats an unknown `type`
 * as `file`, so the type is a free string here and normalised by the server.
 */
export const SaveRequestSchema = z
  .object({
    /** Any value: Jupyter saves an unknown type as `file`. */
    type: z.unknown().optional(),
    format: z.string().nullable().optional(),
    content: z.unknown().optional(),
    /**
     * 1 starts a chunked upload, 2, 3, … append, -1 appends the last chunk; null is a plain save.
     * Any other value appends, as in Jupyter, whose tests are `chunk == 1` and `chunk == -1`.
     */
    chunk: z.unknown().optional(),
    path: z.string().optional(),
    name: z.string().optional(),
    copy_from: z.unknown().optional()
  })
  .passthrough();
export type SaveRequest = z.infer<typeof SaveRequestSchema>;

/** The body of `POST {base}api/contents/<dir>`: a new untitled item, or a copy. */
export const CreateRequestSchema = z
  .object({
    /** Any value: Jupyter creates an unknown type as `file`. */
    type: z.unknown().optional(),
    ext: z.string().nullable().optional(),
    /** The path to copy; a falsy value (as Python sees it) means no copy. */
    copy_from: z.unknown().optional()
  })
  .passthrough();
export type CreateRequest = z.infer<typeof CreateRequestSchema>;

/** The body of `PATCH {base}api/contents/<path>`: a rename. */
export const RenameRequestSchema = z.object({ path: z.string().optional() }).passthrough();
export type RenameRequest = z.infer<typeof RenameRequestSchema>;

/** A checkpoint: Jupyter keeps one per file, with the id `checkpoint`. */
export const CheckpointModelSchema = z.object({
  id: z.string(),
  last_modified: isoDate('When the checkpoint was written.')
});
export type CheckpointModel = z.infer<typeof CheckpointModelSchema>;
