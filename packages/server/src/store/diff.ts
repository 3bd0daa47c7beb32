import {
  CURRENT_REF,
  DiffRequestSchema,
  MAX_VERSION_ID_CHARS,
  NotebookDiffSchema,
  PUBLISHED_REF_PREFIX,
  type DiffSide,
  type NotebookDiff
} from '@jupyter-store/contract';
import {
  diffNotebooks,
  joinMultilineStrings,
  type DiffEntry,
  type INotebookContent
} from '@jupyter-store/diff';
import { readNotebook, type CellIdGenerator } from '@jupyter-store/nbformat';
import type { Request, Response } from 'express';
import type { ContentsManager } from '../contents/manager';
import { HttpError } from '../errors';
import { requestQuery, type Route } from '../gateway/assemble';
import { httpErrors } from '../http/errorCatalogue';
import { readJsonBody } from '../http/jsonBody';
import {
  newestArchivedVersion,
  readNotebookVersion,
  type StoreAccess,
  type StoreCopy
} from './objects';
import { checkStorePath } from './paths';
import { validate } from './requests';

/** What the diff routes need. */
export interface IDiffRoutesOptions {
  /** Settings, the object store, its bucket and feature validation. */
  archiving: StoreAccess;
  /** Where `current` is read, with the contents API's rules (hidden files, permissions). */
  manager: ContentsManager;
  /** The most bytes read for one notebook, and the largest request body; larger is 413. */
  maxNotebookBytes: number;
}

/**
 * `GET api/store/diff/<path>?base=<ref>&remote=<ref>` and `POST api/store/diff`: the diff of two notebooks in nbdime's format, answered as
 * `{path, base, diff, base_ref, remote_ref}` (the contract's `NotebookDiffSchema`), where `base`
 * and `diff` are what nbdime's `NotebookDiffModel` takes.
 *
 * #### Notes
 * A ref is `current` (the file on disk, read through the contents manager), an archived version
 * id, or `published:<version id>`. Left out, `remote` is `current` and `base` the newest archived
 * version: like `git diff`, the default shows what the archive does not have yet (nothing, once
 * the last save is archived); name a version to see what changed since. The POST also takes a
 * notebook object in place of a ref, so that a browser can diff what it has not saved.
 *
 * Both read only (`contents: read`). Statuses (every error is Jupyter's `{"message",
 * "reason"}`):
 *
 * | status | when |
 * |---|---|
 * | 200 | the diff; `diff` is empty when the notebooks are equal |
 * | 400 | a path refused by `checkStorePath`; a ref empty, too long or `published:` with no id (reason `bad request`); a body that is not a JSON object, or a field of the wrong type (`bad request`); a ref with no `path` to read it at (`bad request`); a version id the store finds malformed (its own code) |
 * | 403 | Jupyter's `Authorizer` does not allow the caller `contents: read` (reason `not authorized`); the file cannot be read; object storage denies access |
 * | 404 | the file, or the version, does not exist; no archived version to default `base` to (reason `no versions`) |
 * | 405 | another method (`diff` and `diff/` take POST, `diff/<path>` GET) |
 * | 413 | a notebook, or the request body, over the limit |
 * | 415 | a request body with a `Content-Encoding` other than `identity` |
 * | 422 | a file, a version or an inline notebook that is not an nbformat 4 notebook (reason `not a notebook`) |
 * | 502 | object storage unreachable |
 * | 503 | object storage not usable, for a ref that reads it (reason `store unavailable`) |
 *
 * Each side is read as nbformat reads a file (lines joined, transient fields dropped, older
 * formats upgraded), without the untrusted marks that restoring adds: a diff shows the
 * notebooks, not how they would be reopened.
 */
export function diffRoutes(options: IDiffRoutesOptions): {
  /** `GET diff/<path>`. */
  readonly queried: Route.Handler;
  /** `POST diff` (its body read up to `options.maxNotebookBytes`). */
  readonly posted: Route.Handler;
} {
  const reader = new Private.SideReader(options);
  const respond =
    (diff: (reader: Private.SideReader, request: Request, path: string) => Promise<NotebookDiff>) =>
    async (request: Request, response: Response, params: Route.Params) => {
      const result = await diff(reader, request, params.path);
      response.json(NotebookDiffSchema.parse(result));
    };
  return { queried: respond(Private.queriedDiff), posted: respond(Private.postedDiff) };
}

/**
 * A ref as the diff routes read it: `current`, `published:<version id>`, or any other string as
 * an archived version id.
 *
 * @throws HttpError 400 (reason `bad request`) for an empty or too long ref, or `published:`
 *   without an id.
 */
function parseRef(
  ref: string,
  field: string
): { source: 'current' } | { source: StoreCopy; versionId: string } {
  if (ref === CURRENT_REF) return { source: 'current' };
  const published = ref.startsWith(PUBLISHED_REF_PREFIX);
  const versionId = published ? ref.slice(PUBLISHED_REF_PREFIX.length) : ref;
  if (versionId === '' || versionId.length > MAX_VERSION_ID_CHARS) {
    throw httpErrors.badRequest(
      `${field} must be "${CURRENT_REF}", a version id or "${PUBLISHED_REF_PREFIX}<version id>", ` +
        `with a version id of 1 to ${MAX_VERSION_ID_CHARS} characters`
    );
  }
  return { source: published ? 'published' : 'workspace', versionId };
}

namespace Private {
  /** Which side of the diff a notebook is. */
  type Role = 'base' | 'remote';

  /** A side as asked for: a ref, a notebook given inline, or left out (its default). */
  type Operand = string | Record<string, unknown> | undefined;

  /** One side, read. */
  interface ISide {
    notebook: INotebookContent;
    side: DiffSide;
  }

  /** `GET /diff/<path>?base=…&remote=…`. */
  export async function queriedDiff(
    reader: SideReader,
    request: Request,
    path: string
  ): Promise<NotebookDiff> {
    const query = requestQuery(request);
    return diffOf(reader, path, query.getAll('base').at(-1), query.getAll('remote').at(-1));
  }

  /** `POST /diff` with `{path?, base?, remote?}`. */
  export async function postedDiff(reader: SideReader, request: Request): Promise<NotebookDiff> {
    const body = validate(DiffRequestSchema, jsonBody(request));
    const path =
      body.path === undefined || body.path === null ? undefined : checkStorePath(body.path);
    return diffOf(reader, path, body.base ?? undefined, body.remote ?? undefined);
  }

  async function diffOf(
    reader: SideReader,
    path: string | undefined,
    base: Operand,
    remote: Operand
  ): Promise<NotebookDiff> {
    // One after the other: two notebooks of the largest size at once would double the memory.
    const from = await reader.read(path, 'base', base);
    const to = await reader.read(path, 'remote', remote);
    let diff: DiffEntry[];
    try {
      diff = diffNotebooks(from.notebook, to.notebook);
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
      // The call stack ran out: values nested deeper than any notebook needs.
      throw httpErrors.notANotebook('The notebooks are nested too deeply to diff');
    }
    return {
      path: path ?? null,
      base: from.notebook as Record<string, unknown>,
      diff,
      base_ref: from.side,
      remote_ref: to.side
    };
  }

  /** Reads each side of a diff from the disk, the store or the request. */
  export class SideReader {
    constructor(options: IDiffRoutesOptions) {
      this.maxBytes = options.maxNotebookBytes;
      this._archiving = options.archiving;
      this._manager = options.manager;
    }

    /** The most bytes of one notebook, and of a request body. */
    readonly maxBytes: number;

    async read(path: string | undefined, role: Role, operand: Operand): Promise<ISide> {
      if (typeof operand === 'object') {
        let notebook: INotebookContent | undefined;
        // Only nbformat 4, unlike a file: nbformat would take `{}` for an empty version 1 notebook.
        if (operand.nbformat === 4 && Array.isArray(operand.cells)) {
          try {
            notebook = parseNotebookBytes(Buffer.from(JSON.stringify(operand), 'utf8'));
          } catch {
            // Nested too deeply to be written out again: no notebook is.
          }
        }
        if (!notebook) {
          throw httpErrors.notANotebook(`${role} is not an nbformat 4 notebook`);
        }
        return { notebook, side: { ref: null, source: 'inline', object_version_id: null } };
      }
      if (path === undefined) {
        const what = operand === undefined ? 'left out (its default is a ref)' : 'a ref';
        throw httpErrors.badRequest(
          `${role} is ${what}, which needs a path to read it at: give path, or a notebook`
        );
      }
      const ref =
        operand ??
        (role === 'remote' ? CURRENT_REF : await newestArchivedVersion(this._archiving, path));
      const parsed = parseRef(ref, role);
      if (parsed.source === 'current') {
        return {
          notebook: await this._readCurrent(path),
          side: { ref, source: 'current', object_version_id: null }
        };
      }
      const version = await readNotebookVersion(
        this._archiving,
        path,
        parsed.versionId,
        parsed.source,
        { maxBytes: this.maxBytes, parse: parseNotebookBytes }
      );
      const versionId = version.versionId;
      return {
        notebook: version.notebook,
        side: {
          ref: parsed.source === 'published' ? `${PUBLISHED_REF_PREFIX}${versionId}` : versionId,
          source: parsed.source,
          object_version_id: versionId
        }
      };
    }

    /** The file on disk, read as the contents API reads it, at most `maxBytes`. */
    private async _readCurrent(path: string): Promise<INotebookContent> {
      const options = { type: 'file', format: 'text' } as const;
      const checkSize = (size: number | null): void => {
        if (size !== null && size > this.maxBytes) {
          throw httpErrors.tooLarge(
            `${path} is larger than the ${this.maxBytes} bytes a diff reads`
          );
        }
      };
      let bytes: Buffer | undefined;
      try {
        // The size first, so that a file far too large is not read at all.
        checkSize((await this._manager.get(path, { ...options, content: false })).size);
        const { content } = await this._manager.get(path, { ...options, content: true });
        if (typeof content === 'string') bytes = Buffer.from(content, 'utf8');
      } catch (error) {
        // A directory, or a file that is not UTF-8 text: the contents API's 400s say why.
        if (error instanceof HttpError && error.status === 400) {
          throw httpErrors.notANotebook(`${path} is not a notebook: ${error.message}`, {
            cause: error
          });
        }
        throw error;
      }
      checkSize(bytes?.length ?? null);
      const notebook = bytes && parseNotebookBytes(bytes);
      if (!notebook) {
        throw httpErrors.notANotebook(`${path} is not an nbformat 4 notebook`);
      }
      return notebook;
    }

    private readonly _archiving: IDiffRoutesOptions['archiving'];
    private readonly _manager: ContentsManager;
  }

  /**
   * The notebook in these bytes as nbformat reads it, as plain JSON with its multiline strings
   * joined, or undefined when they hold no nbformat 4 notebook.
   *
   * #### Notes
   * Cells that lack an id get ids counted from the start, not random ones, so that a notebook
   * read twice diffs as equal. Python's number types are dropped: nbdime compares `1.0` and `1`
   * as equal too.
   */
  export function parseNotebookBytes(bytes: Buffer): INotebookContent | undefined {
    let notebook: unknown;
    try {
      notebook = readNotebook(bytes, { generateCellId: countedCellIds() }).notebook;
    } catch {
      return undefined;
    }
    const candidate = notebook as { nbformat?: unknown; cells?: unknown } | null;
    if (candidate?.nbformat !== 4 || !Array.isArray(candidate.cells)) return undefined;
    return joinMultilineStrings(JSON.parse(JSON.stringify(notebook)) as INotebookContent);
  }

  function countedCellIds(): CellIdGenerator {
    let count = 0;
    return () => `cell-${++count}`;
  }

  /** The body as JSON; its shape is checked by the contract's schema. */
  function jsonBody(request: Request): unknown {
    let body: unknown;
    try {
      body = readJsonBody(request);
    } catch {
      // One message for every way a body is not JSON: it says what is expected.
    }
    if (body === undefined) {
      throw httpErrors.badRequest(
        'The request body must be a JSON object (UTF-8, no byte-order mark): {path, base, remote}'
      );
    }
    return body;
  }
}
