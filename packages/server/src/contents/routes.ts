import {
  CreateRequestSchema,
  RenameRequestSchema,
  SaveRequestSchema,
  type ContentsModel
} from '@jupyter-store/contract';
import {
  PyNumber,
  parsePythonJson,
  pythonTruthy,
  stringifyPythonNumbers
} from '@jupyter-store/nbformat';
import type { Request, Response } from 'express';
import type { ISurface, Route } from '../gateway/assemble';
import { httpErrors } from '../http/errorCatalogue';
import { readJsonBody } from '../http/jsonBody';
import { urlEscapePath } from '../http/quote';
import { parseRequest, type ISafeParser } from '../http/schema';
import { normalizeType, type ContentsManager } from './manager';
import { checkApiPath } from './paths';

/** The largest request body accepted by default: Jupyter's `max_body_size`, 512 MiB. */
export const DEFAULT_MAX_CONTENTS_BODY_BYTES = 512 * 1024 * 1024;

/**
 * The contents REST API (`{base_url}api/contents…`) over a ContentsManager, with Jupyter
 * Server 2's routes, query parameters, statuses and headers.
 *
 * #### Notes
 * Paths are matched on the raw URL and decoded once (see `gateway/assemble.ts`), as tornado
 * does, so that an encoded `/` or `..` is seen for what it is and invalid UTF-8 is a 400. The
 * routes are tornado's, in its order: a file named `checkpoints` or `trust` is reached through
 * its directory only as those routes allow, as in Jupyter.
 */
export function contentsApi(options: contentsApi.IOptions): ISurface {
  const api = new Private.Handlers(options.manager, options.baseUrl ?? '/');
  const body = { bodyLimit: options.maxBodyBytes ?? DEFAULT_MAX_CONTENTS_BODY_BYTES };
  return {
    prefix: 'api/contents',
    kind: 'api',
    checkPath: checkApiPath,
    fallback: api.notAContentsPath,
    routes: [
      ['POST', '*path/checkpoints/:checkpoint_id', api.restoreCheckpoint, 'contents:write'],
      ['DELETE', '*path/checkpoints/:checkpoint_id', api.deleteCheckpoint, 'contents:write'],
      ['GET', '*path/checkpoints', api.listCheckpoints, 'contents:read'],
      ['POST', '*path/checkpoints', api.createCheckpoint, 'contents:write'],
      ['POST', '*path/trust', api.trust, 'contents:write'],
      ['GET', '*path', api.get, 'contents:read'],
      ['PUT', '*path', api.put, 'contents:write', body],
      ['POST', '*path', api.post, 'contents:write', body],
      ['PATCH', '*path', api.patch, 'contents:write', body],
      ['DELETE', '*path', api.delete, 'contents:write']
    ]
  };
}

export namespace contentsApi {
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

function parseBody<T>(schema: ISafeParser<T>, body: unknown): T {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw httpErrors.badRequest('The request body must be a JSON object');
  }
  return parseRequest(schema, body, (field, problem) => `Invalid field '${field}': ${problem}`);
}

namespace Private {
  /** The handlers of the routes, over one contents manager. */
  export class Handlers {
    constructor(
      private readonly _manager: ContentsManager,
      private readonly _baseUrl: string
    ) {}

    /** `GET {path}`: a file, notebook or directory model. */
    readonly get: Route.Handler = async (request, response, { path }) => {
      const query = requestQuery(request);
      let type = lastValue(query, 'type');
      if (type !== undefined && type !== 'directory' && type !== 'file' && type !== 'notebook')
        type = 'file';
      const format = lastValue(query, 'format');
      if (format !== undefined && format !== 'text' && format !== 'base64') {
        throw httpErrors.badFormat(`Format '${format}' is invalid`);
      }
      const content = lastValue(query, 'content') ?? '1';
      if (content !== '0' && content !== '1') {
        throw httpErrors.badContent(`Content '${content}' is invalid`);
      }
      const hash = lastValue(query, 'hash') ?? '0';
      if (hash !== '0' && hash !== '1') {
        throw httpErrors.badHash(`Hash argument '${hash}' is invalid. It must be '0' or '1'.`);
      }
      const model = await this._manager.get(path, {
        type: type as ContentsModel['type'] | undefined,
        format: format as 'text' | 'base64' | undefined,
        content: content === '1',
        hash: hash === '1'
      });
      this._sendModel(response, 200, model, false);
    };

    /** `PUT {path}`: save, upload a chunk, or (without a body) create an untitled item. */
    readonly put: Route.Handler = async (request, response, { path }) => {
      const body = readJsonBody(request, parsePythonJson);
      const manager = this._manager;
      if (!pythonTruthy(body)) {
        this._sendModel(response, 201, await manager.newUntitled(path), true);
        return;
      }
      const model = parseBody(SaveRequestSchema, body);
      if (pythonTruthy(model.copy_from)) {
        throw httpErrors.badRequest('Cannot copy with PUT, only POST');
      }
      if (
        (typeof model.path === 'string' &&
          model.path !== '' &&
          (await manager.isHidden(model.path))) ||
        (await manager.isHidden(path))
      ) {
        throw httpErrors.hiddenPath(`Cannot create file or directory '${path}'`);
      }
      const { model: saved, created } = await manager.put(path, {
        type: normalizeType(model.type),
        format: model.format,
        content: model.content,
        chunk: chunkNumber(model.chunk)
      });
      this._sendModel(response, created ? 201 : 200, saved, true);
    };

    /** `POST {path}`: a copy, or a new untitled item, in the directory `path`. */
    readonly post: Route.Handler = async (request, response, { path }) => {
      const body = readJsonBody(request, parsePythonJson);
      const manager = this._manager;
      if (await manager.fileExists(path)) {
        throw httpErrors.badRequest('Cannot POST to files, use PUT instead.');
      }
      if (!pythonTruthy(body)) {
        this._sendModel(response, 201, await manager.newUntitled(path), true);
        return;
      }
      const model = parseBody(CreateRequestSchema, body);
      if (pythonTruthy(model.copy_from)) {
        if (typeof model.copy_from !== 'string') {
          throw httpErrors.badRequest("Invalid field 'copy_from': expected a path");
        }
        const source = checkApiPath(model.copy_from);
        if ((await manager.isHidden(path)) || (await manager.isHidden(source))) {
          throw httpErrors.hiddenPath(`Cannot copy file or directory '${path}'`);
        }
        this._sendModel(response, 201, await manager.copy(source, path), true);
        return;
      }
      const created = await manager.newUntitled(path, normalizeType(model.type), model.ext ?? '');
      this._sendModel(response, 201, created, true);
    };

    /** `PATCH {path}`: rename. */
    readonly patch: Route.Handler = async (request, response, { path }) => {
      const body = readJsonBody(request, parsePythonJson);
      if (body === undefined) throw httpErrors.badRequest('JSON body missing');
      const model = parseBody(RenameRequestSchema, body);
      const newPath = model.path !== undefined ? checkApiPath(model.path) : path;
      this._sendModel(response, 200, await this._manager.rename(path, newPath), true);
    };

    /** `DELETE {path}`: to the trash, or removed. */
    readonly delete: Route.Handler = async (_request, response, { path }) => {
      await this._manager.delete(path);
      response.status(204).end();
    };

    /** `GET {path}/checkpoints`. */
    readonly listCheckpoints: Route.Handler = async (_request, response, { path }) => {
      sendJson(response, 200, await this._manager.listCheckpoints(path));
    };

    /** `POST {path}/checkpoints`. */
    readonly createCheckpoint: Route.Handler = async (_request, response, { path }) => {
      const checkpoint = await this._manager.createCheckpoint(path);
      response.setHeader(
        'Location',
        `${this._baseUrl}api/contents/${urlEscapePath(path)}/checkpoints/${urlEscapePath(checkpoint.id)}`
      );
      sendJson(response, 201, checkpoint);
    };

    /** `POST {path}/checkpoints/{checkpoint_id}`: restore. */
    readonly restoreCheckpoint: Route.Handler = async (_request, response, params) => {
      await this._manager.restoreCheckpoint(params.path, params.checkpoint_id);
      response.status(204).end();
    };

    /** `DELETE {path}/checkpoints/{checkpoint_id}`. */
    readonly deleteCheckpoint: Route.Handler = async (_request, response, params) => {
      await this._manager.deleteCheckpoint(params.path, params.checkpoint_id);
      response.status(204).end();
    };

    /** `POST {path}/trust`: sign the notebook. */
    readonly trust: Route.Handler = async (_request, response, { path }) => {
      await this._manager.trust(path);
      response.status(201);
      response.setHeader('Content-Type', 'text/html; charset=UTF-8');
      response.end();
    };

    /**
     * Any other path: with trailing slashes, a GET is sent to the path without them (tornado's
     * redirect); anything else (an empty segment) is no contents path.
     */
    readonly notAContentsPath: Route.Handler = (request, response) => {
      const rawPath = request.path;
      if (
        (request.method === 'GET' || request.method === 'HEAD') &&
        /^(?:\/[^/]+)+\/+$/.test(rawPath)
      ) {
        const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
        response.status(302);
        response.setHeader(
          'Location',
          `${this._baseUrl}api/contents${rawPath.replace(/\/+$/, '')}${query}`
        );
        response.setHeader('Content-Type', 'text/html; charset=UTF-8');
        response.end();
        return;
      }
      throw httpErrors.notFound('Not a valid contents path');
    };

    private _sendModel(
      response: Response,
      status: number,
      model: ContentsModel,
      location: boolean
    ): void {
      if (location) {
        response.setHeader('Location', `${this._baseUrl}api/contents/${urlEscapePath(model.path)}`);
      }
      response.setHeader('Last-Modified', new Date(model.last_modified).toUTCString());
      sendJson(response, status, model);
    }
  }

  /** The query of a request below the mount point. */
  function requestQuery(request: Request): URLSearchParams {
    return new URLSearchParams(
      request.url.includes('?') ? request.url.slice(request.url.indexOf('?') + 1) : ''
    );
  }
}
