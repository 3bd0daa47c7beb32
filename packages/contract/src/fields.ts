import { z } from 'zod';

/**
 * Field builders the store API's schemas share, so that one kind of field is validated and
 * described alike on every endpoint.
 */

/** A required string field: missing, not a string, or empty each get their own message. */
export function requiredString(max: number) {
  return z
    .string({
      error: issue => (issue.input === undefined ? 'is required' : 'must be a string')
    })
    .min(1, { error: 'must not be empty' })
    .max(max, { error: `must be at most ${max} characters long` });
}

/** An optional string field: absent or null mean "not given"; an empty string is refused. */
export function optionalString(max: number) {
  return z
    .string({ error: 'must be a string (or null, or left out)' })
    .min(1, { error: 'must not be empty (leave it out instead)' })
    .max(max, { error: `must be at most ${max} characters long` })
    .nullish();
}

/**
 * The description of a request body built from {@link requiredString} and
 * {@link optionalString} fields: what it asks for, then how its fields are read.
 */
export function requestDescription(what: string): string {
  return (
    `${what} A JSON \`null\` in an optional field means the field is left out; an empty ` +
    'string is refused. Unknown fields are ignored.'
  );
}

/** A time in an answer: ISO 8601 in UTC, as the gateway writes times. */
export function dateTime(description: string) {
  return z.string().meta({ format: 'date-time', description });
}

/** A count or a size in an answer: a whole number, never negative. */
export function count(description: string) {
  return z.number().int().nonnegative().meta({ description });
}
