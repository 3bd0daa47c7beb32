import { isUtf8 } from 'node:buffer';
import { type NextFunction, type Request, type Response, type Router } from 'express';
import type { Archiving } from '../archive/archiving';
import {
  type NotebookNode,
  NotebookWriteError,
  PythonException,
  parsePythonJson,
  pythonRepr,
  serializeNotebook,
  validateNotebook,
  VALIDATION_MESSAGE_PREFIX
} from '../contents/nbformat';
import { isPlainObject } from '../contents/nbformat/pyjson';
import { HttpError } from '../errors';
import { requirePermission } from '../gateway/auth';
import { decodeUrlPath } from '../http/quote';
import { objectKey, objectPath } from '../storage/keys';
import { toHttpError } from './storeApi';
import { onlyMethods } from './methods';
import { checkStorePath } from './storePaths';
import { rawBody } from '../http/body';

/** The content type of published objects. */
export const PUBLISHED_CONTENT_TYPE = 'application/x-ipynb+json';

/** The largest publish request body accepted by default (a 413 beyond it). */
export const DEFAULT_PUBLISH_BODY_LIMIT = 100 * 1024 * 1024;

/** How much of nbformat's own validation message a 422 repeats. */
const MAX_DETAIL_CHARS = 2000;

/** What the publish route needs. */
export interface IPublishRouteOptions {
  archiving: Archiving;
  /** Whether publishing has been enabled; asked on every request (see `isPublishEnabled`). */
  publishEnabled: () => boolean;
  /** The request body limit in bytes; default {@link DEFAULT_PUBLISH_BODY_LIMIT}. */
  maxBodyBytes?: number;
}

/** The 200 body: where the notebook went (the contract's `PublishResultSchema`). */
export interface IPublishResult {
  object_bucket: string;
  object_key: string;
  object_version_id: string | null;
  object_path: string;
}

/**
 * Add `PUT /publish/<path>` to the store API router (mounted at `{base}api/store`): write a
 * notebook to `<published_prefix>/<path>` in the bucket, as the canonical nbformat bytes that
 * the contents manager would write for it.
 *
 * Checks, in this order (every error is Jupyter's `{"message", "reason"}`):
 *
 * | status | reason | when |
 * |---|---|---|
 * | 405 | `method not allowed` | any method but PUT |
 * | 403 | `not authorized` | Jupyter's `Authorizer` does not allow the caller `contents: write` |
 * | 403 | `publish disabled` | publishing is not enabled (`jupyter store enable`), or `published_prefix` is empty; the message carries feature detection's reason |
 * | 503 | `store unavailable` | the object store is not usable (feature `store_valid` is false) |
 * | 400 | `empty path`, `absolute path`, `invalid path`, `hidden path` | see `checkStorePath`; `..` is refused plain and percent-encoded |
 * | 413 | `entity.too.large` | the body is over the limit |
 * | 400 | `empty model`, `bad request` | no body, a blank one or `{}`; not UTF-8 or not JSON; not a JSON object |
 * | 415 | `not a notebook` | `type` is not `notebook`, or the path does not end in `.ipynb` |
 * | 422 | `empty content` | `content` missing, null or `{}` |
 * | 422 | `invalid notebook` | `content` is not nbformat 4, or fails the official nbformat schema (the message names the cell by position, id and type, says what is wrong where, then repeats nbformat's message) |
 * | 422 | `duplicate cell ids` | two or more cells share an id (the message names them and their positions) |
 * | 404, 403, 400, 502 | the store's code | the object store failed (see `toHttpError`) |
 * | 200 | | `{object_bucket, object_key, object_version_id, object_path}` |
 *
 * A 403 rather than the original's 404 (it registered no route at all): the route exists, it is
 * switched off, and the message says how to switch it on.
 */
export function addPublishRoutes(router: Router, options: IPublishRouteOptions): void {
  const readBody = rawBody(options.maxBodyBytes ?? DEFAULT_PUBLISH_BODY_LIMIT);
  // `use`, not a route with a parameter: express would decode the path before we could check it.
  router.use(
    '/publish',
    onlyMethods('PUT'),
    // A write, although nothing in the server changes: see ASKED_PERMISSIONS in gateway/auth.
    requirePermission('contents', 'write'),
    (_request: Request, _response: Response, next: NextFunction) => {
      try {
        // Refuse before reading a body that would be thrown away.
        checkPublishAvailable(options);
        next();
      } catch (error) {
        next(error);
      }
    },
    readBody,
    (request: Request, response: Response, next: NextFunction) => {
      publish(request, options).then(result => response.json(result), next);
    }
  );
}

/** 403 while publishing is off, 503 while the store cannot be used. */
function checkPublishAvailable(options: IPublishRouteOptions): void {
  const { features, reasons } = options.archiving.features({
    publishEnabled: options.publishEnabled()
  });
  if (features.publish_valid) return;
  if (!features.store_valid) {
    throw new HttpError(
      503,
      `Object storage is not usable: ${reasons.store_valid}`,
      'store unavailable'
    );
  }
  throw new HttpError(403, `Publishing is disabled: ${reasons.publish_valid}`, 'publish disabled');
}

async function publish(request: Request, options: IPublishRouteOptions): Promise<IPublishResult> {
  const path = publishPath(request);
  const model = readModel(request);
  checkIsNotebook(model, path);
  const notebook = checkContent(model.content);
  const bytes = canonicalBytes(notebook);
  const { settings, store, bucket } = options.archiving;
  const key = objectKey(settings.published_prefix, path);
  try {
    const { versionId } = await store.put(bucket, key, bytes, {
      contentType: PUBLISHED_CONTENT_TYPE
    });
    return {
      object_bucket: bucket,
      object_key: key,
      object_version_id: versionId,
      object_path: objectPath(bucket, settings.published_prefix, path)
    };
  } catch (error) {
    throw toHttpError(error);
  }
}

/** The path below `/publish/`, decoded as tornado decodes it, then checked (400s). */
function publishPath(request: Request): string {
  const raw = request.url.split('?', 1)[0].replace(/^\//, '');
  const decoded = decodeUrlPath(raw);
  if (decoded === undefined) {
    throw new HttpError(400, 'The path is not valid UTF-8', 'invalid path');
  }
  return checkStorePath(decoded);
}

/** The body as Jupyter's `get_json_body` reads it, which must be a non-empty object (400s). */
function readModel(request: Request): Record<string, unknown> {
  const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  request.body = undefined;
  let start = 0;
  while (start < raw.length && [0x20, 0x0a, 0x0d, 0x09].includes(raw[start])) start++;
  if (start === raw.length) {
    throw new HttpError(400, 'Cannot publish an empty model: the body is empty', 'empty model');
  }
  if (!isUtf8(raw)) throw new HttpError(400, 'Invalid UTF-8 in body of request', 'bad request');
  if (raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf) {
    throw new HttpError(400, 'Invalid JSON in body of request: byte-order mark', 'bad request');
  }
  let body: unknown;
  try {
    // Python's reading: `1.0` stays a float, so the bytes written are the ones Jupyter writes.
    body = parsePythonJson(raw);
  } catch {
    throw new HttpError(400, 'Invalid JSON in body of request', 'bad request');
  }
  if (!isPlainObject(body)) {
    throw new HttpError(
      400,
      'The body must be a contents model: a JSON object with "type" and "content"',
      'bad request'
    );
  }
  if (Object.keys(body).length === 0) {
    throw new HttpError(400, 'Cannot publish an empty model', 'empty model');
  }
  return body;
}

/** Only notebooks, to `.ipynb` paths (415). */
function checkIsNotebook(model: Record<string, unknown>, path: string): void {
  if (model.type !== 'notebook') {
    const found =
      model.type === undefined
        ? 'the model has no type'
        : `the model's type is ${pythonRepr(model.type)}`;
    throw new HttpError(
      415,
      `Only notebooks can be published: ${found}, not 'notebook'`,
      'not a notebook'
    );
  }
  if (!path.endsWith('.ipynb')) {
    throw new HttpError(
      415,
      `Only notebooks can be published: the path must end in .ipynb, not ${JSON.stringify(path)}`,
      'not a notebook'
    );
  }
}

/** A non-empty, valid nbformat 4 notebook with unique cell ids (422s). */
function checkContent(content: unknown): NotebookNode {
  if (
    content === undefined ||
    content === null ||
    (isPlainObject(content) && Object.keys(content).length === 0)
  ) {
    throw new HttpError(422, 'Cannot publish empty contents', 'empty content');
  }
  if (!isPlainObject(content)) {
    throw invalid(`the content must be a notebook (a JSON object), not ${jsonKind(content)}`);
  }
  if (!Object.prototype.hasOwnProperty.call(content, 'nbformat')) {
    throw invalid("the content has no 'nbformat' field");
  }
  if (content.nbformat !== 4) {
    throw invalid(
      `only nbformat 4 notebooks can be published, not nbformat ${pythonRepr(content.nbformat)}` +
        ' (open and save it in JupyterLab to convert it)'
    );
  }
  let message: string | undefined;
  try {
    message = validateNotebook(content);
  } catch (error) {
    if (error instanceof PythonException) {
      throw invalid(`nbformat cannot validate it: ${error.pythonRepr}`);
    }
    if (error instanceof RangeError) throw invalid('it is nested too deeply');
    throw error;
  }
  if (message !== undefined) throw invalid(describeValidationMessage(message, content));
  checkUniqueCellIds(content);
  return content;
}

/** The canonical on-disk bytes, exactly as the contents manager writes the notebook (422s). */
function canonicalBytes(notebook: NotebookNode): Buffer {
  try {
    return serializeNotebook(notebook).bytes;
  } catch (error) {
    if (error instanceof NotebookWriteError) {
      throw invalid(`it cannot be written as a notebook file: ${error.message}`);
    }
    if (error instanceof RangeError) throw invalid('it is nested too deeply');
    throw error;
  }
}

function invalid(detail: string): HttpError {
  return new HttpError(422, `Cannot publish an invalid notebook: ${detail}`, 'invalid notebook');
}

/**
 * nbformat repairs repeated cell ids silently when it saves; a published notebook must keep the
 * ids its author sees, so repeats are refused instead, naming each id and where it occurs.
 */
function checkUniqueCellIds(notebook: NotebookNode): void {
  const cells: unknown[] = Array.isArray(notebook.cells) ? notebook.cells : [];
  const positions = new Map<string, number[]>();
  cells.forEach((cell, index) => {
    if (!isPlainObject(cell) || typeof cell.id !== 'string') return;
    const list = positions.get(cell.id) ?? [];
    list.push(index);
    positions.set(cell.id, list);
  });
  const repeated = [...positions].filter(([, list]) => list.length > 1);
  if (repeated.length === 0) return;
  const described = repeated
    .map(([id, list]) => `${pythonRepr(id)} (cells at index ${list.join(', ')})`)
    .join('; ');
  throw new HttpError(
    422,
    `Cannot publish a notebook whose cell ids are not unique: ${described}. Give each cell its ` +
      'own id; saving the notebook through the contents API (JupyterLab) repairs them.',
    'duplicate cell ids'
  );
}

/**
 * A readable account of nbformat's validation message: where (which cell, by position, id and
 * type, and where inside it), what is wrong, then nbformat's own message (cut short).
 */
export function describeValidationMessage(message: string, notebook: NotebookNode): string {
  const body = message.startsWith(VALIDATION_MESSAGE_PREFIX)
    ? message.slice(VALIDATION_MESSAGE_PREFIX.length)
    : message;
  const what = shorten(body.split('\n\nFailed validating', 1)[0].trim(), 300);
  const on = /^On instance((?:\[(?:\d+|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")\])*):$/m.exec(body);
  const path = on ? parsePath(on[1]) : [];
  const detail = shorten(message, MAX_DETAIL_CHARS);
  return `${describeLocation(path, notebook)}: ${what}.\n\n${detail}`;
}

/** `['cells'][2]['outputs'][0]` → `['cells', 2, 'outputs', 0]` (quotes left off, not unescaped). */
function parsePath(text: string): (string | number)[] {
  const items: (string | number)[] = [];
  for (const match of text.matchAll(/\[(\d+|'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\]/g)) {
    const item = match[1];
    items.push(/^\d+$/.test(item) ? Number(item) : item.slice(1, -1));
  }
  return items;
}

/** "cell 2 of 3 (index 1, id 'b', a code cell), at outputs[0].text" or "the notebook, at metadata". */
function describeLocation(path: (string | number)[], notebook: NotebookNode): string {
  const cells: unknown[] = Array.isArray(notebook.cells) ? notebook.cells : [];
  let where = 'the notebook';
  let rest = path;
  if (path[0] === 'cells' && typeof path[1] === 'number') {
    const index = path[1];
    const cell = cells[index];
    const facts = [`index ${index}`];
    if (isPlainObject(cell)) {
      if (typeof cell.id === 'string') facts.push(`id ${pythonRepr(cell.id)}`);
      if (typeof cell.cell_type === 'string') facts.push(`a ${cell.cell_type} cell`);
    }
    where = `cell ${index + 1} of ${cells.length} (${facts.join(', ')})`;
    rest = path.slice(2);
  }
  if (rest.length === 0) return where;
  const inner = rest
    .map((item, i) => (typeof item === 'number' ? `[${item}]` : i === 0 ? item : `.${item}`))
    .join('');
  return `${where}, at ${inner}`;
}

function shorten(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}… (cut short)`;
}

/** What a JSON value that is not an object is (numbers may be `PyNumber`s). */
function jsonKind(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'string') return 'a string';
  if (typeof value === 'boolean') return 'a boolean';
  return 'a number';
}
