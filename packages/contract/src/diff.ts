import { z } from 'zod';

/**
 * The diff endpoints of the store API: `GET {base}api/store/diff/{path}?base=…&remote=…` and
 * `POST {base}api/store/diff`. Both answer a {@link NotebookDiff}: the base notebook and the
 * diff that turns it into the remote one, in nbdime's format, the shape nbdime's
 * `NotebookDiffModel` takes.
 *
 * A ref names one side:
 * - `current`: the file on disk, as the contents API reads it;
 * - a version id: that archived version (`<workspace_prefix>/<path>`);
 * - `published:<version id>`: that published version (`<published_prefix>/<path>`).
 *
 * Left out, `remote` is `current` and `base` the newest archived version, as `git diff` compares
 * the last commit with the working tree.
 */

/** The ref of the file on disk. */
export const CURRENT_REF = 'current';

/** The prefix of a ref to a published version. */
export const PUBLISHED_REF_PREFIX = 'published:';

/** The longest version id the store API accepts (a ref's, `object_version_id`). */
export const MAX_VERSION_ID_CHARS = 1024;

/** An index of a sequence, or a count of its items. */
const sequenceIndex = z.number().int().nonnegative();

/** One entry of a diff in nbdime's format (`diff_format.schema.json`). */
export type DiffEntry =
  | { op: 'add'; key: string; value: unknown }
  | { op: 'remove'; key: string }
  | { op: 'replace'; key: string; value: unknown }
  | { op: 'patch'; key: string | number; diff: DiffEntry[] }
  | { op: 'addrange'; key: number; valuelist: unknown[] | string }
  | { op: 'removerange'; key: number; length: number };

/**
 * One entry of a diff in nbdime's format. Mappings are changed key by key (`add`, `remove`,
 * `replace`, `patch`), sequences index by index (`addrange` inserts before `key`, `removerange`
 * removes `length` items from `key`, `patch` changes the item at `key`). Multiline strings are
 * diffed as sequences of lines, and a patched line as a sequence of characters, where
 * `valuelist` is a string.
 */
export const DiffEntrySchema: z.ZodType<DiffEntry> = z
  .discriminatedUnion('op', [
    z
      .object({
        op: z.literal('add'),
        key: z.string(),
        value: z.unknown().meta({ description: 'Any JSON value.' })
      })
      .meta({ description: 'Add `value` under a new `key` of a mapping.' }),
    z
      .object({ op: z.literal('remove'), key: z.string() })
      .meta({ description: 'Remove `key` from a mapping.' }),
    z
      .object({
        op: z.literal('replace'),
        key: z.string(),
        value: z.unknown().meta({ description: 'Any JSON value.' })
      })
      .meta({ description: 'Replace the value under `key` of a mapping with `value`.' }),
    z
      .object({
        op: z.literal('patch'),
        key: z.union([z.string(), sequenceIndex]),
        get diff() {
          return z.array(DiffEntrySchema);
        }
      })
      .meta({
        description: 'Change the value under `key` (a mapping key or a sequence index) by `diff`.'
      }),
    z
      .object({
        op: z.literal('addrange'),
        key: sequenceIndex,
        valuelist: z
          .union([z.array(z.unknown()), z.string()])
          .meta({ description: 'The items; for the characters of one line, a string.' })
      })
      .meta({ description: 'Insert the items of `valuelist` before index `key` of a sequence.' }),
    z
      .object({ op: z.literal('removerange'), key: sequenceIndex, length: sequenceIndex })
      .meta({ description: 'Remove `length` items of a sequence from index `key`.' })
  ])
  .meta({
    description:
      "One entry of a diff in nbdime's format (`diff_format.schema.json`). Mappings change key " +
      'by key (`add`, `remove`, `replace`, `patch`); sequences index by index (`addrange` ' +
      'inserts `valuelist` before index `key`, `removerange` removes `length` items from ' +
      '`key`, `patch` changes the item at `key`). Multiline strings (sources, text outputs) ' +
      'are diffed as sequences of lines, and a patched line as a sequence of characters, whose ' +
      '`valuelist` is a string.'
  });

/** A notebook (nbformat 4 JSON), given inline or answered. */
const NotebookJsonSchema = z.record(z.string(), z.unknown());

/** What one side of a diff was read from. */
export const DiffSideSchema = z
  .object({
    /**
     * The ref it was read by (`current`, a version id, `published:<version id>`), with a default
     * resolved to what it named; null for a notebook given inline.
     */
    ref: z
      .string()
      .nullable()
      .meta({
        description:
          'The ref it was read by (`current`, a version id, `published:<version id>`), a ' +
          'left-out `base` resolved to the version it named; null for an inline notebook.'
      }),
    /** The file on disk, an archived version, a published version, or the request body. */
    source: z.enum(['current', 'workspace', 'published', 'inline']).meta({
      description:
        'The file on disk, an archived version (`<workspace_prefix>/<path>`), a published one ' +
        '(`<published_prefix>/<path>`), or the request body.'
    }),
    /** The version read; null for the file on disk and for an inline notebook. */
    object_version_id: z.string().nullable().meta({
      description: 'The version read; null for the file on disk and for an inline notebook.'
    })
  })
  .meta({ description: 'What one side of a diff was read from.' });

/** The answer of both diff routes (200). */
export const NotebookDiffSchema = z
  .object({
    /** The notebook path the refs were read at; null for a POST of two inline notebooks. */
    path: z.string().nullable().meta({
      description: 'The notebook path refs were read at; null for two inline notebooks.'
    }),
    /**
     * The base notebook, its multiline strings joined (as nbformat reads a file): the value the
     * diff applies to.
     */
    base: NotebookJsonSchema.meta({
      description:
        'The base notebook (nbformat 4 JSON) with its multiline strings joined, as nbformat ' +
        'reads a file: the value `diff` applies to.'
    }),
    /** The diff from `base` to the remote notebook; empty when they are equal. */
    diff: z.array(DiffEntrySchema).meta({
      description: 'The diff from `base` to the remote notebook; empty when they are equal.'
    }),
    base_ref: DiffSideSchema,
    remote_ref: DiffSideSchema
  })
  .meta({
    description:
      "A notebook diff, as nbdime's `NotebookDiffModel` takes it (`base` and `diff`), and what " +
      'each side was read from.'
  });

/** One side of a `POST {base}api/store/diff`: a ref (the request needs a `path`) or a notebook. */
const DiffOperandSchema = z.union(
  [z.string().min(1, { error: 'must not be empty' }), NotebookJsonSchema],
  { error: 'must be a ref (a string) or a notebook (an object)' }
);

/**
 * `POST {base}api/store/diff`: diff two notebooks, each named by a ref or given inline, so that
 * a browser can diff what it has not saved. A JSON `null` means the field is left out; unknown
 * fields are ignored.
 */
export const DiffRequestSchema = z
  .object({
    /** The notebook path that refs are read at; needed unless both sides are inline. */
    path: z
      .string({ error: 'must be a string (or null, or left out)' })
      .min(1, { error: 'must not be empty (leave it out instead)' })
      .max(4096, { error: 'must be at most 4096 characters long' })
      .nullish()
      .meta({
        description: 'The notebook path refs are read at; needed unless both sides are inline.'
      }),
    /** Default: the newest archived version of `path`. */
    base: DiffOperandSchema.nullish().meta({
      description: 'A ref or a notebook; left out or null, the newest archived version.'
    }),
    /** Default: `current`, the file at `path` on disk. */
    remote: DiffOperandSchema.nullish().meta({
      description: 'A ref or a notebook; left out or null, `current`.'
    })
  })
  .meta({
    description:
      'Two notebooks to diff, each a ref or a notebook object. A JSON `null` means the field is ' +
      'left out. Unknown fields are ignored.'
  });

export type DiffSide = z.infer<typeof DiffSideSchema>;
export type NotebookDiff = z.infer<typeof NotebookDiffSchema>;
/** The request body as sent (optional fields may be null). */
export type DiffRequest = z.input<typeof DiffRequestSchema>;
