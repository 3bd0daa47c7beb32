import type { Request } from 'express';
import { httpErrors } from '../http/errorCatalogue';
import { readJsonBody } from '../http/jsonBody';
import { parseRequest, type ISafeParser } from '../http/schema';

/**
 * Validate a request with a contract schema; the first problem becomes a 400 (reason `bad
 * request`) naming its field: `target_path must be a string`.
 */
export function validate<T>(schema: ISafeParser<T>, body: unknown): T {
  return parseRequest(schema, body, (field, problem) => `${field} ${problem}`);
}

/**
 * The body of a request as a JSON object (clone requests), or a 400 (reason `bad request`)
 * that says what is wrong with it.
 */
export function readJsonObject(request: Request): Record<string, unknown> {
  const body = readJsonBody(request);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw httpErrors.badRequest('The request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}
