import { isUtf8 } from 'node:buffer';
import type { Request } from 'express';
import { httpErrors } from './errorCatalogue';

/**
 * The JSON body of a request read by `rawBody` (see `body.ts`), as Jupyter's `get_json_body`
 * reads one: undefined when absent or blank (JSON whitespace only), else the parsed value.
 *
 * #### Notes
 * The body is taken off the request: the parsed value is all a route needs from then on, and a
 * body of hundreds of MiB should not stay alive with the request.
 *
 * @param parse - how the text is parsed: `JSON.parse`, or nbformat's `parsePythonJson` where
 *   Python's number spellings must survive (`1.0` stays a float).
 * @throws HttpError 400 (reason `bad request`) for bytes that are not UTF-8, a byte-order mark
 *   (not JSON, for Python's `json.loads` as for us) or text that is not JSON.
 */
export function readJsonBody(
  request: Request,
  parse: (bytes: Buffer) => unknown = bytes => JSON.parse(bytes.toString('utf8'))
): unknown {
  const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  request.body = undefined;
  if (isBlank(raw)) return undefined;
  if (!isUtf8(raw)) throw httpErrors.badRequest('Invalid UTF-8 in body of request');
  if (raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf) {
    throw httpErrors.badRequest('Invalid JSON in body of request: byte-order mark');
  }
  try {
    return parse(raw);
  } catch {
    throw httpErrors.badRequest('Invalid JSON in body of request');
  }
}

/** Only JSON whitespace (space, tab, line feed, carriage return), or nothing. */
function isBlank(bytes: Buffer): boolean {
  return bytes.every(byte => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09);
}
