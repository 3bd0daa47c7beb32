import {
  CreateRequestSchema,
  RenameRequestSchema,
  SaveRequestSchema,
  type ContentsModel
} from '@jupyter-store/contract';
import { isUtf8 } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { HttpError } from '../errors';
import { decodeUrlPath, urlEscapePath } from '../http/quote';
import { parseRequest, type ISafeParser } from '../http/schema';
import { ContentsManager, normalizeType } from './manager';
import { PyNumber, pythonFloatRepr, pythonTruthy } from './nbformat/pynumber';
import { parsePythonJson } from './nbformat';
import { checkApiPath } from './paths';
import { rawBody } from '../http/body';

/** One path segment as tornado's `path_regex` sees it, and a checkpoint id. */
const CHECKPOINT_ROUTE = /^((?:\/[^/]+)*)\/checkpoints\/([\w-]+)$/;
const CHECKPOINTS_ROUTE = /^((?:\/[^/]+)*)\/checkpoints$/;
const TRUST_ROUTE = /^((?:\/[^/]+)*)\/trust$/;
const CONTENTS_ROUTE = /^((?:\/[^/]+)+|\/?)$/;

/**
 * The contents REST API (`{base_url}api/contents…`) over a ContentsManager, with Jupyter
 * Server 2's routes, query parameters, statuses and headers.
 *
 * #### Notes
 * Paths are taken from the raw URL and decoded here, as tornado does, so that an encoded `/`
 * or `..` is seen for what it is and invalid UTF-8 is a 400.
 */
export function createContentsRouter(options: ContentsRouter.IOptions): Router {
  const { manager } = options;
  const baseUrl = options.baseUrl ?? '/';
  const router = express.Router();
  router.use(rawBody(options.maxBodyBytes ?? 512 * 1024 * 1024));
  router.use(async (req: Request, res: Response, next: NextFunction) => {
    try {
      await route(req, res);
    } catch (error) {
      next(error);
    }
  });

  async function route(req: Request, res: Response): Promise<void> {
    const rawPath = req.url.split('?')[0];
    const query = new URLSearchParams(
      req.url.includes('?') ? req.url.slice(req.url.indexOf('?') + 1) : ''
    );
    let match: RegExpMatchArray | null;
    if ((match = CHECKPOINT_ROUTE.exec(rawPath))) {
      const apiPath = decodePath(match[1]);
      const id = match[2];
      if (req.method === 'POST') {
        await manager.restoreCheckpoint(apiPath, id);
        res.status(204).end();
      } else if (req.method === 'DELETE') {
        await manager.deleteCheckpoint(apiPath, id);
        res.status(204).end();
      } else methodNotAllowed();
      return;
    }
    if ((match = CHECKPOINTS_ROUTE.exec(rawPath))) {
      const apiPath = decodePath(match[1]);
      if (req.method === 'GET') {
        sendJson(res, 200, await manager.listCheckpoints(apiPath));
      } else if (req.method === 'POST') {
        const checkpoint = await manager.createCheckpoint(apiPath);
        res.setHeader(
          'Location',
          `${baseUrl}api/contents/${urlEscapePath(apiPath)}/checkpoints/${urlEscapePath(checkpoint.id)}`
        );
        sendJson(res, 201, checkpoint);
      } else methodNotAllowed();
      return;
    }
    if ((match = TRUST_ROUTE.exec(rawPath))) {
      if (req.method !== 'POST') methodNotAllowed();
      await manager.trust(decodePath(match[1]));
      res.status(201);
      res.setHeader('Content-Type', 'text/html; charset=UTF-8');
      res.end();
      return;
    }
    if (!CONTENTS_ROUTE.exec(rawPath)) {
      if ((req.method === 'GET' || req.method === 'HEAD') && /^(?:\/[^/]+)+\/+$/.test(rawPath)) {
        const query = req.url.includes('?') ? req.url.slice(req.url.indexOf('?')) : '';
        res.status(302);
        res.setHeader('Location', `${baseUrl}api/contents${rawPath.replace(/\/+$/, '')}${query}`);
        res.setHeader('Content-Type', 'text/html; charset=UTF-8');
        res.end();
        return;
      }
      throw new HttpError(404, 'Not a valid contents path', 'not found');
    }
    const apiPath = decodePath(rawPath);
    switch (req.method) {
      case 'GET':
      case 'HEAD':
        return getContents(apiPath, query, res);
      case 'PUT':
        return putContents(apiPath, jsonBody(req), res);
      case 'POST':
        return postContents(apiPath, jsonBody(req), res);
      case 'PATCH':
        return patchContents(apiPath, jsonBody(req), res);
      case 'DELETE':
        await manager.delete(apiPath);
        res.status(204).end();
        return;
      default:
        methodNotAllowed();
    }
  }

  async function getContents(
    apiPath: string,
    query: URLSearchParams,
    res: Response
  ): Promise<void> {
    let type = lastValue(query, 'type');
    if (type !== undefined && type !== 'directory' && type !== 'file' && type !== 'notebook')
      type = 'file';
    const format = lastValue(query, 'format');
    if (format !== undefined && format !== 'text' && format !== 'base64') {
      throw new HttpError(400, `Format '${format}' is invalid`, 'bad format');
    }
    const content = lastValue(query, 'content') ?? '1';
    if (content !== '0' && content !== '1') {
      throw new HttpError(400, `Content '${content}' is invalid`, 'bad content');
    }
    const hash = lastValue(query, 'hash') ?? '0';
    if (hash !== '0' && hash !== '1') {
      throw new HttpError(
        400,
        `Hash argument '${hash}' is invalid. It must be '0' or '1'.`,
        'bad hash'
      );
    }
    const model = await manager.get(apiPath, {
      type: type as ContentsModel['type'] | undefined,
      format: format as 'text' | 'base64' | undefined,
      content: content === '1',
      hash: hash === '1'
    });
    sendModel(res, 200, model, false);
  }

  async function putContents(apiPath: string, body: unknown, res: Response): Promise<void> {
    if (!pythonTruthy(body)) {
      sendModel(res, 201, await manager.newUntitled(apiPath), true);
      return;
    }
    const request = parseBody(SaveRequestSchema, body);
    if (pythonTruthy(request.copy_from))
      throw new HttpError(400, 'Cannot copy with PUT, only POST', 'bad request');
    if (
      (typeof request.path === 'string' &&
        request.path !== '' &&
        (await manager.isHidden(request.path))) ||
      (await manager.isHidden(apiPath))
    ) {
      throw new HttpError(400, `Cannot create file or directory '${apiPath}'`, 'hidden');
    }
    const { model, created } = await manager.put(apiPath, {
      type: normalizeType(request.type),
      format: request.format,
      content: request.content,
      chunk: chunkNumber(request.chunk)
    });
    sendModel(res, created ? 201 : 200, model, true);
  }

  async function postContents(apiPath: string, body: unknown, res: Response): Promise<void> {
    if (await manager.fileExists(apiPath)) {
      throw new HttpError(400, 'Cannot POST to files, use PUT instead.', 'bad request');
    }
    if (!pythonTruthy(body)) {
      sendModel(res, 201, await manager.newUntitled(apiPath), true);
      return;
    }
    const request = parseBody(CreateRequestSchema, body);
    if (pythonTruthy(request.copy_from)) {
      if (typeof request.copy_from !== 'string') {
        throw new HttpError(400, "Invalid field 'copy_from': expected a path", 'bad request');
      }
      const source = checkApiPath(request.copy_from);
      if ((await manager.isHidden(apiPath)) || (await manager.isHidden(source))) {
        throw new HttpError(400, `Cannot copy file or directory '${apiPath}'`, 'hidden');
      }
      sendModel(res, 201, await manager.copy(source, apiPath), true);
      return;
    }
    const model = await manager.newUntitled(
      apiPath,
      normalizeType(request.type),
      request.ext ?? ''
    );
    sendModel(res, 201, model, true);
  }

  async function patchContents(apiPath: string, body: unknown, res: Response): Promise<void> {
    if (body === undefined) throw new HttpError(400, 'JSON body missing', 'bad request');
    const request = parseBody(RenameRequestSchema, body);
    const newPath = request.path !== undefined ? checkApiPath(request.path) : apiPath;
    sendModel(res, 200, await manager.rename(apiPath, newPath), true);
  }

  function sendModel(res: Response, status: number, model: ContentsModel, location: boolean): void {
    if (location) res.setHeader('Location', `${baseUrl}api/contents/${urlEscapePath(model.path)}`);
    res.setHeader('Last-Modified', new Date(model.last_modified).toUTCString());
    sendJson(res, status, model);
  }

  return router;
}

export namespace ContentsRouter {
  export interface IOptions {
    manager: ContentsManager;
    /** The server's base URL, starting and ending with `/`. */
    baseUrl?: string;
    /** The largest request body accepted (Jupyter's default: 512 MiB). */
    maxBodyBytes?: number;
  }
}

/** Send a JSON body with Jupyter's bare `application/json` content type. */
export function sendJson(res: Response, status: number, body: unknown): void {
  res.status(status);
  res.setHeader('Content-Type', 'application/json');
  res.end(stringifyPythonNumbers(body));
}

/** Marks a number to be written as Python wrote it; random, so no user string can forge it. */
const NUMBER_MARK = `\u0000pynumber-${randomBytes(8).toString('hex')}:`;
const MARKED_NUMBER = new RegExp(`"\\\\u0000${NUMBER_MARK.slice(1)}([^"]*)"`, 'g');

/**
 * JSON.stringify, except that numbers Python reads as floats though JavaScript sees integers
 * (`1.0`) and integers beyond 2^53 keep their Python spelling, as Jupyter sends them. A Python
 * client then reads back exactly the notebook on disk.
 */
export function stringifyPythonNumbers(body: unknown): string {
  let marked = false;
  const text = JSON.stringify(body, function (this: Record<string, unknown>, key, value) {
    const original = this[key];
    if (original instanceof PyNumber) {
      marked = true;
      return NUMBER_MARK + original.text;
    }
    // Below 1e-4 Python switches to exponent notation with two digits (`1e-07`), JS does not.
    if (typeof value === 'number' && value !== 0 && Math.abs(value) < 1e-4) {
      marked = true;
      return NUMBER_MARK + pythonFloatRepr(value);
    }
    return value;
  });
  return marked ? text.replace(MARKED_NUMBER, '$1') : text;
}

function decodePath(raw: string): string {
  const decoded = decodeUrlPath(raw);
  if (decoded === undefined)
    throw new HttpError(400, 'Invalid unicode in the request path', 'bad path');
  return checkApiPath(decoded);
}

/**
 * The chunk number as Jupyter's large-file manager reads it: `None` is a plain save, a value equal
 * to 1 (Python: `1`, `1.0`, `True`) starts the upload, one equal to -1 ends it, anything else
 * appends.
 */
function chunkNumber(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  const number = value === true ? 1 : value instanceof PyNumber ? Number(value.text) : value;
  if (number === 1 || number === -1) return number;
  return 2;
}

function lastValue(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  return values.length === 0 ? undefined : values[values.length - 1];
}

function methodNotAllowed(): never {
  throw new HttpError(405, 'Method not allowed', 'method not allowed');
}

/** The request's JSON body as Jupyter's `get_json_body` reads it: absent or blank is undefined. */
function jsonBody(req: Request): unknown {
  const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  // The parsed model is all that is needed from here on; a 50 MB body should not stay alive.
  req.body = undefined;
  let start = 0;
  while (
    start < raw.length &&
    (raw[start] === 0x20 || raw[start] === 0x0a || raw[start] === 0x0d || raw[start] === 0x09)
  )
    start++;
  if (start === raw.length) return undefined;
  if (!isUtf8(raw)) throw new HttpError(400, 'Invalid UTF-8 in body of request', 'bad request');
  // A byte-order mark is not JSON, for Python's json.loads as for us.
  if (raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf) {
    throw new HttpError(400, 'Invalid JSON in body of request: byte-order mark', 'bad request');
  }
  try {
    return parsePythonJson(raw);
  } catch {
    throw new HttpError(400, 'Invalid JSON in body of request', 'bad request');
  }
}

function parseBody<T>(schema: ISafeParser<T>, body: unknown): T {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new HttpError(400, 'The request body must be a JSON object', 'bad request');
  }
  return parseRequest(schema, body, (field, problem) => `Invalid field '${field}': ${problem}`);
}
