import { z } from 'zod';
import { MAX_VERSION_ID_CHARS } from './diff';
import { dateTime } from './fields';

/**
 * Named versions: a name (and a note) given to one archived version of a notebook. The server
 * keeps each as a copy of the version below `named_prefix`, so that it outlives the retention of
 * the archived versions; listings show the label on the version it names.
 */

/** The most characters of a version's name, once trimmed. */
export const MAX_VERSION_NAME_CHARS = 100;

/** The most characters of a version's note. */
export const MAX_VERSION_NOTE_CHARS = 500;

/** C0 and C1 control characters and DEL: they would hide or forge text where a name is shown. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** The same, except line breaks and tabs, which a note of several lines keeps. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const NOTE_CONTROL = /[\u0000-\u0008\u000b-\u000c\u000e-\u001f\u007f-\u009f]/;

/** Characters as people count them (code points), not UTF-16 units. */
const characters = (text: string) => [...text].length;

/** A version's name: trimmed, 1 to {@link MAX_VERSION_NAME_CHARS} characters, no controls. */
export const VersionNameSchema = z
  .string()
  .trim()
  .refine(name => characters(name) >= 1 && characters(name) <= MAX_VERSION_NAME_CHARS, {
    error: `must be 1 to ${MAX_VERSION_NAME_CHARS} characters long (spaces around it do not count)`
  })
  .refine(name => !CONTROL.test(name), { error: 'must not contain control characters' })
  .meta({
    description:
      `The name, trimmed: 1 to ${MAX_VERSION_NAME_CHARS} characters, without control ` +
      'characters (line breaks included).'
  });

/** A version's note: at most {@link MAX_VERSION_NOTE_CHARS} characters; lines and tabs kept. */
export const VersionNoteSchema = z
  .string()
  .refine(note => characters(note) <= MAX_VERSION_NOTE_CHARS, {
    error: `must be at most ${MAX_VERSION_NOTE_CHARS} characters long`
  })
  .refine(note => !NOTE_CONTROL.test(note), {
    error: 'must not contain control characters other than line breaks and tabs'
  })
  .meta({
    description:
      `At most ${MAX_VERSION_NOTE_CHARS} characters; line breaks and tabs are kept, other ` +
      'control characters refused.'
  });

/** The label of a named version, as listings and `POST api/store/named` show it. */
export const VersionLabelSchema = z
  .object({
    name: z.string().meta({ description: 'The name given to the version.' }),
    note: z.string().nullable().meta({ description: 'The note given with it; null for none.' }),
    named_at: dateTime('When it was named (ISO 8601, UTC).'),
    object_key: z.string().meta({
      description:
        "The key of the named copy of the version's bytes: `<named_prefix>/<the version's key>/" +
        '<its version id>`. It is kept when the archived version expires or is deleted.'
    })
  })
  .meta({ description: 'The name and note of a named version.' });

/** The body of `POST {base}api/store/named/{path}`. */
export const NameVersionRequestSchema = z
  .object({
    name: VersionNameSchema,
    note: VersionNoteSchema.nullable()
      .optional()
      .meta({ description: 'A note; left out, null or empty for none.' }),
    object_version_id: z
      .string()
      .min(1, { error: 'must not be empty' })
      .max(MAX_VERSION_ID_CHARS, { error: `must be at most ${MAX_VERSION_ID_CHARS} characters` })
      .nullable()
      .optional()
      .meta({
        description:
          'The archived version to name (of the path asked for). Left out or null: the newest ' +
          'one, once the pending save of the path, if any, is archived (at most 5 s are waited).'
      })
  })
  .meta({
    description:
      'The name (and note) to give one archived version. Naming a version that has a name ' +
      'already replaces its name and note. Unknown fields are ignored.'
  });

/** `POST {base}api/store/named/{path}` → 200: the version named, and its label. */
export const NamedVersionSchema = z
  .object({
    path: z.string().meta({ description: 'The notebook path asked for.' }),
    object_bucket: z.string().meta({ description: 'The bucket of the archive and the copy.' }),
    object_key: z.string().meta({ description: 'The archived key: `<workspace_prefix>/<path>`.' }),
    object_version_id: z.string().meta({ description: 'The archived version named.' }),
    label: VersionLabelSchema
  })
  .meta({ description: 'The archived version named, and its label.' });

/** `DELETE {base}api/store/named/{path}` → 200: the name taken off the version. */
export const UnnamedVersionSchema = z
  .object({
    path: z.string().meta({ description: 'The notebook path asked for.' }),
    object_version_id: z.string().meta({ description: 'The archived version, now unnamed.' }),
    label_key: z.string().meta({
      description:
        'The key of the named copy, now hidden behind a delete marker (its versions are kept ' +
        'until the bucket expires them).'
    })
  })
  .meta({ description: 'The archived version whose name was removed.' });

export type VersionLabel = z.infer<typeof VersionLabelSchema>;
export type NameVersionRequest = z.infer<typeof NameVersionRequestSchema>;
export type NamedVersion = z.infer<typeof NamedVersionSchema>;
export type UnnamedVersion = z.infer<typeof UnnamedVersionSchema>;
