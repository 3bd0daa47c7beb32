import { httpErrors } from './errorCatalogue';

/** What a zod schema offers: `safeParse` with the issues of a failure. */
export interface ISafeParser<T> {
  safeParse(
    value: unknown
  ):
    | { success: true; data: T }
    | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } };
}

/**
 * Parse a request value with a contract schema; the first problem becomes a 400 whose message
 * `describe` builds from the field's dotted path (`body` for the value itself) and the problem.
 */
export function parseRequest<T>(
  schema: ISafeParser<T>,
  value: unknown,
  describe: (field: string, problem: string) => string
): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = issue.path.map(String).join('.') || 'body';
  throw httpErrors.badRequest(describe(field, issue.message));
}
