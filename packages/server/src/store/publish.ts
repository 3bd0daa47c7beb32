import {
  type NotebookNode,
  NotebookWriteError,
  PythonException,
  isPlainObject,
  parsePythonJson,
  pythonRepr,
  serializeNotebook,
  validateNotebook,
  type IValidationError
} from '@jupyter-store/nbformat';
import type { Request } from 'express';
import type { Archiving } from '../archive/archiving';
import { HttpError } from '../errors';
import type { Route } from '../gateway/assemble';
import { httpErrors } from '../http/errorCatalogue';
import { readJsonBody } from '../http/jsonBody';
import { objectKey, objectPath } from '../storage/keys';

/** The content type of published objects. */
export const PUBLISHED_CONTENT_TYPE = 'application/x-ipynb+json';

/** The largest publish request body accepted by default (a 413 beyond it). */
export const DEFAULT_PUBLISH_BODY_LIMIT = 100 * 1024 * 1024;

/** How much of nbformat's own validation message a 422 repeats. */
const MAX_DETAIL_CHARS = 2000;

/** What the publish route needs. */
export interface IPublishOptions {
  readonly archiving: Pick<Archiving, 'settings' | 'store' | 'bucket'>;
}

/** The 200 body: where the notebook went (the contract's `PublishResultSchema`). */
export interface IPublishResult {
  object_bucket: string;
  object_key: string;
  object_version_id: string | null;
  object_path: string;
}

/**
 * `PUT api/store/publish/<path>`: write a
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
 * | 415 | `notebook required` | `type` is not `notebook`, or the path does not end in `.ipynb` |
 * | 422 | `empty content` | `content` missing, null or `{}` |
 * | 422 | `invalid notebook` | `content` is not nbformat 4, or fails the official nbformat schema (the message names the cell by position, id and type, says what is wrong where, then repeats nbformat's message) |
 * | 422 | `duplicate cell ids` | two or more cells share an id (the message names them and their positions) |
 * | 404, 403, 400, 502 | the store's code | the object store failed (see `http/errors.ts`) |
 * | 200 | | `{object_bucket, object_key, object_version_id, object_path}` |
 *
 * A 403 rather than the original's 404 (it registered no route at all): the route exists, it is
 * switched off, and the message says how to switch it on.
 */
export function publishRoute(options: IPublishOptions): Route.Handler {
  return async (request, response, { path }) => {
    const model = readModel(request);
    checkIsNotebook(model, path);
    const notebook = checkContent(model.content);
    const bytes = canonicalBytes(notebook);
    const { settings, store, bucket } = options.archiving;
    const key = objectKey(settings.published_prefix, path);
    const { versionId } = await store.put(bucket, key, bytes, {
      contentType: PUBLISHED_CONTENT_TYPE
    });
    const result: IPublishResult = {
      object_bucket: bucket,
      object_key: key,
      object_version_id: versionId,
      object_path: objectPath(bucket, settings.published_prefix, path)
    };
    response.json(result);
  };
}

/** The body as Jupyter's `get_json_body` reads it, which must be a non-empty object (400s). */
function readModel(request: Request): Record<string, unknown> {
  // Python's reading: `1.0` stays a float, so the bytes written are the ones Jupyter writes.
  const body = readJsonBody(request, parsePythonJson);
  if (body === undefined) {
    throw httpErrors.emptyModel('Cannot publish an empty model: the body is empty');
  }
  if (!isPlainObject(body)) {
    throw httpErrors.badRequest(
      'The body must be a contents model: a JSON object with "type" and "content"'
    );
  }
  if (Object.keys(body).length === 0) {
    throw httpErrors.emptyModel('Cannot publish an empty model');
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
    throw httpErrors.notebookRequired(`Only notebooks can be published: ${found}, not 'notebook'`);
  }
  if (!path.endsWith('.ipynb')) {
    throw httpErrors.notebookRequired(
      `Only notebooks can be published: the path must end in .ipynb, not ${JSON.stringify(path)}`
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
    throw httpErrors.emptyContent('Cannot publish empty contents');
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
  let failure: IValidationError | undefined;
  try {
    failure = validateNotebook(content);
  } catch (error) {
    if (error instanceof PythonException) {
      throw invalid(`nbformat cannot validate it: ${error.pythonRepr}`);
    }
    if (error instanceof RangeError) throw invalid('it is nested too deeply');
    throw error;
  }
  if (failure !== undefined) throw invalid(describeValidationError(failure, content));
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
  return httpErrors.invalidNotebook(`Cannot publish an invalid notebook: ${detail}`);
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
  throw httpErrors.duplicateCellIds(
    `Cannot publish a notebook whose cell ids are not unique: ${described}. Give each cell its ` +
      'own id; saving the notebook through the contents API (JupyterLab) repairs them.'
  );
}

/**
 * A readable account of a validation error: where (which cell, by position, id and type, and
 * where inside it), what is wrong, then nbformat's own message (cut short).
 */
export function describeValidationError(error: IValidationError, notebook: NotebookNode): string {
  const what = shorten(error.reason.trim(), 300);
  const detail = shorten(error.message, MAX_DETAIL_CHARS);
  return `${describeLocation(error.path, notebook)}: ${what}.\n\n${detail}`;
}

/** "cell 2 of 3 (index 1, id 'b', a code cell), at outputs[0].text" or "the notebook, at metadata". */
function describeLocation(path: readonly (string | number)[], notebook: NotebookNode): string {
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
