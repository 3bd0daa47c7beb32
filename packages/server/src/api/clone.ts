import {
  FsCloneRequestSchema,
  FsCloneResponseSchema,
  ObjectCloneRequestSchema,
  ObjectCloneResponseSchema,
  type ContentsModel
} from '@jupyter-store/contract';
import { isUtf8 } from 'node:buffer';
import type { Stats } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { Archiving } from '../archive/archiving';
import type { ContentsManager } from '../contents/manager';
import { isNotebookName } from '../contents/model';
import { splitForCounter } from '../contents/naming';
import { readNotebook, type NotebookNode } from '../contents/nbformat';
import { baseName, joinApiPath, parentPath } from '../contents/paths';
import { RootFs } from '../contents/rootFs';
import { HttpError, hasErrorCode } from '../errors';
import { parseRequest, type ISafeParser } from '../http/schema';
import { requirePermission } from '../gateway/auth';
import type { Logger } from '../gateway/logger';
import { displayable, isValidBucketName } from '../storage/keys';
import { ObjectStoreError } from '../storage/objectStore';
import { onlyMethods } from './methods';
import { checkStorePath } from './storePaths';
import { toHttpError } from './storeApi';
import { rawBody } from '../http/body';

/** Largest source a clone reads (object or file), in bytes: 100 MiB. */
export const DEFAULT_MAX_CLONE_BYTES = 100 * 1024 * 1024;

/** Largest clone request body, in bytes: the fields are short strings. */
export const DEFAULT_MAX_CLONE_BODY_BYTES = 64 * 1024;

/** How many `-<n>` names a clone tries before giving up with 409. */
const MAX_INCREMENT = 10_000;

/** What the clone routes need. */
export interface ICloneRoutesOptions {
  /** Settings, the object store, its bucket and feature validation (only these are used). */
  archiving: Pick<Archiving, 'settings' | 'store' | 'bucket' | 'features'>;
  /** Where clones are written, as any save. */
  manager: ContentsManager;
  /** Largest source read, in bytes (default {@link DEFAULT_MAX_CLONE_BYTES}); larger is 413. */
  maxCloneBytes?: number;
  /** Largest request body, in bytes (default {@link DEFAULT_MAX_CLONE_BODY_BYTES}); larger is 413. */
  maxBodyBytes?: number;
  /** Where successful clones are logged (info). */
  log?: Logger;
}

/**
 * Add `POST /clone` (from object storage) and `POST /fs-clone` (from below
 * `fs_cloning_basedir`) to the store API router mounted at `{base}api/store`.
 *
 * #### Notes
 * Statuses (every error is Jupyter's `{"message", "reason"}`):
 *
 * | status | when |
 * |---|---|
 * | 200 | cloned: the contents model of the created item (no content) plus the source fields |
 * | 400 | body not a JSON object; a field missing, not a string, empty or too long; an invalid bucket name; a malformed version id; `relpath` absolute, with a NUL byte or a hidden component, or naming a directory or a non-regular file; `target_path` absolute, with `.`/`..`/empty segments, hidden, or leading outside the root through a symlink |
 * | 403 | Jupyter's `Authorizer` does not allow the caller `contents: write` (reason `not authorized`, checked first); the feature is off (`enable_object_cloning` false: reason `object cloning disabled`; `fs_cloning_basedir` unset or not an existing absolute directory: reason `fs cloning disabled`); `clone_buckets` is set and does not list `object_bucket` (reason `bucket not allowed`, before object storage is asked); object storage denies access; the source file is unreadable; the source file has more than one hard link (reason `hard link`) |
 * | 404 | bucket, key or version does not exist; `relpath` resolves outside the base (`..`, symlinks) or does not exist |
 * | 409 | the parent directory of `target_path` does not exist (reason `missing parent directory`) |
 * | 413 | request body over {@link DEFAULT_MAX_CLONE_BODY_BYTES}, or source over {@link DEFAULT_MAX_CLONE_BYTES} (an object is refused by its announced length, or as soon as more than that has been read, whatever HEAD said) |
 * | 502 | object storage unreachable or failing |
 * | 503 | object storage not usable (no bucket configured, failed bucket check), reason `store unavailable` |
 *
 * A clone never overwrites: when `target_path` is taken, the copy is named `name-1.ext`,
 * `name-2.ext`, … (counter before `.ipynb`, else before the first dot), the chosen name being
 * created exclusively (`O_EXCL`) so that two clones never pick the same one. A `.ipynb` target
 * whose bytes are a notebook is saved as a notebook through the contents manager (so it is
 * archived like any save, and never arrives trusted); anything else is saved as a file with
 * exactly the source bytes.
 */
export function addCloneRoutes(router: Router, options: ICloneRoutesOptions): void {
  const { archiving, manager } = options;
  const maxCloneBytes = options.maxCloneBytes ?? DEFAULT_MAX_CLONE_BYTES;
  const parseBody = rawBody(options.maxBodyBytes ?? DEFAULT_MAX_CLONE_BODY_BYTES);
  const handle = (
    enabled: () => void,
    run: (body: Record<string, unknown>) => Promise<unknown>
  ): express.RequestHandler[] => [
    (_req: Request, _res: Response, next: NextFunction) => {
      try {
        enabled();
        next();
      } catch (error) {
        next(error);
      }
    },
    parseBody,
    (req: Request, res: Response, next: NextFunction) => {
      let body: Record<string, unknown>;
      try {
        body = jsonObjectBody(req);
      } catch (error) {
        next(error);
        return;
      }
      run(body).then(result => {
        res.status(200);
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify(result));
      }, next);
    }
  ];

  router.all(['/clone', '/clone/', '/fs-clone', '/fs-clone/'], onlyMethods('POST'));
  // A clone writes into the server: `contents: write` (see ASKED_PERMISSIONS in gateway/auth).
  const writing = requirePermission('contents', 'write');
  router.post(
    ['/clone', '/clone/'],
    writing,
    ...handle(
      () => checkObjectCloneEnabled(archiving),
      async body => {
        const request = validate(ObjectCloneRequestSchema, body);
        const bucket = request.object_bucket;
        const key = request.object_key;
        const requestedVersion = request.object_version_id ?? undefined;
        if (!isValidBucketName(bucket)) {
          throw new HttpError(
            400,
            `object_bucket "${displayable(bucket)}" is not a valid bucket name`,
            'bad request'
          );
        }
        checkCloneBucket(archiving, bucket);
        const target = cloneTarget(request.target_path, key, 'object_key');
        await checkTargetParent(manager, target);
        const object = await readObject(archiving, bucket, key, requestedVersion, maxCloneBytes);
        const model = await saveUnique(manager, target, object.body);
        options.log?.info(
          { from: `s3://${bucket}/${key}`, version: object.versionId, to: model.path },
          'cloned from object storage'
        );
        return ObjectCloneResponseSchema.parse({
          ...model,
          object_bucket: bucket,
          object_key: key,
          object_version_id: object.versionId,
          object_path: `s3://${bucket}/${key}`
        });
      }
    )
  );

  router.post(
    ['/fs-clone', '/fs-clone/'],
    writing,
    ...handle(
      () => checkFsCloneEnabled(archiving),
      async body => {
        const request = validate(FsCloneRequestSchema, body);
        const relpath = request.relpath;
        const source = await resolveFsSource(archiving.settings.fs_cloning_basedir, relpath);
        const target = cloneTarget(request.target_path, relpath, 'relpath');
        await checkTargetParent(manager, target);
        const bytes = await readFsSource(source, relpath, maxCloneBytes);
        const model = await saveUnique(manager, target, bytes);
        options.log?.info({ from: source.realPath, to: model.path }, 'cloned from the file system');
        return FsCloneResponseSchema.parse({ ...model, relpath });
      }
    )
  );
}

/**
 * Is cloning from object storage served? 403 when `enable_object_cloning` is false, 503 when
 * object storage is not usable. Shared by the API route and its landing page.
 */
export function checkObjectCloneEnabled(archiving: Pick<Archiving, 'settings' | 'features'>): void {
  if (!archiving.settings.enable_object_cloning) {
    throw new HttpError(
      403,
      'Cloning from object storage is turned off (enable_object_cloning is false)',
      'object cloning disabled'
    );
  }
  const { features, reasons } = archiving.features();
  if (!features.object_clone_valid) {
    throw new HttpError(
      503,
      `Object storage is not usable: ${reasons.object_clone_valid ?? 'unknown reason'}`,
      'store unavailable'
    );
  }
}

/**
 * Is cloning from the file system served? 403 unless `fs_cloning_basedir` is an existing
 * absolute directory. Shared by the API route and its landing page.
 */
export function checkFsCloneEnabled(archiving: Pick<Archiving, 'settings' | 'features'>): void {
  const { features, reasons } = archiving.features();
  const basedir = archiving.settings.fs_cloning_basedir;
  if (!features.fs_clone_valid || !path.isAbsolute(basedir)) {
    throw new HttpError(
      403,
      `Cloning from the file system is turned off: ${
        reasons.fs_clone_valid ?? 'fs_cloning_basedir is not an absolute path'
      }`,
      'fs cloning disabled'
    );
  }
}

/**
 * May a clone read from this bucket? Any bucket the credentials can read while `clone_buckets`
 * is unset; once it is set, only the buckets it lists and the configured bucket (where the
 * archived and published versions are, which the versions panel opens). Shared by the API route
 * and its landing page.
 *
 * @throws HttpError 403 (reason `bucket not allowed`) for another bucket, before object
 *   storage is asked anything.
 */
export function checkCloneBucket(
  archiving: Pick<Archiving, 'settings' | 'bucket'>,
  bucket: string
): void {
  const allowed = archiving.settings.clone_buckets;
  if (allowed === undefined || bucket === archiving.bucket || allowed.includes(bucket)) return;
  throw new HttpError(
    403,
    `Cloning from the bucket "${displayable(bucket)}" is not allowed: it is not one of the ` +
      'buckets clone_buckets lists',
    'bucket not allowed'
  );
}

// ---------------------------------------------------------------------------------------------
// Request bodies
// ---------------------------------------------------------------------------------------------

/** The body as a JSON object, or a 400 that says what is wrong with it. */
function jsonObjectBody(req: Request): Record<string, unknown> {
  const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  req.body = undefined;
  if (!isUtf8(raw)) throw new HttpError(400, 'Invalid UTF-8 in body of request', 'bad request');
  const text = raw.toString('utf8');
  if (text.trim() === '') {
    throw new HttpError(400, 'The request body must be a JSON object', 'bad request');
  }
  if (text.charCodeAt(0) === 0xfeff) {
    throw new HttpError(400, 'Invalid JSON in body of request: byte-order mark', 'bad request');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new HttpError(400, 'Invalid JSON in body of request', 'bad request');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new HttpError(400, 'The request body must be a JSON object', 'bad request');
  }
  return parsed as Record<string, unknown>;
}

/** Validate with a contract schema; the first problem becomes a 400 naming its field. */
export function validate<T>(schema: ISafeParser<T>, body: unknown): T {
  return parseRequest(schema, body, (field, problem) => `${field} ${problem}`);
}

// ---------------------------------------------------------------------------------------------
// Targets
// ---------------------------------------------------------------------------------------------

/**
 * The checked target path: the one given, or the last segment of the source (an object key or
 * a relpath) in the root.
 */
export function cloneTarget(
  given: string | null | undefined,
  source: string,
  sourceField: 'object_key' | 'relpath'
): string {
  if (given !== undefined && given !== null) return checkStorePath(given, 'target_path');
  // A key ending in `/` names no file (a "folder" marker); a relpath `dir/` names `dir`.
  const trimmed = sourceField === 'relpath' ? source.replace(/\/+$/, '') : source;
  const name = trimmed.slice(trimmed.lastIndexOf('/') + 1);
  if (name === '') {
    throw new HttpError(
      400,
      `${sourceField} ${JSON.stringify(displayable(source))} has no file name to clone to; ` +
        'give a target_path',
      'bad request'
    );
  }
  return checkStorePath(name, `target_path (by default the last segment of ${sourceField})`);
}

/**
 * The target's parent must be an existing, visible directory inside the root.
 *
 * @throws HttpError 400 when it is hidden or leads outside the root, 409 when it is missing.
 */
async function checkTargetParent(manager: ContentsManager, target: string): Promise<void> {
  const parent = parentPath(target);
  if (parent === '') return;
  let isDirectory: boolean;
  try {
    if (await manager.isHidden(parent)) {
      throw new HttpError(400, `The directory '${parent}' of target_path is hidden`, 'hidden path');
    }
    isDirectory = await manager.dirExists(parent);
  } catch (error) {
    throw outsideRootAs400(error, target);
  }
  if (!isDirectory) {
    throw new HttpError(
      409,
      `The parent directory '${parent}' of target_path does not exist; create it first`,
      'missing parent directory'
    );
  }
}

/** The contents manager answers 404 for a path whose symlinks lead outside the root. */
function outsideRootAs400(error: unknown, target: string): unknown {
  if (error instanceof HttpError && error.reason === 'outside root') {
    return new HttpError(
      400,
      `target_path '${target}' leads outside the root directory`,
      'outside root'
    );
  }
  return error;
}

/**
 * Save the bytes at the target or, when it is taken, at the first free `-<n>` name.
 *
 * #### Notes
 * The name is reserved by creating an empty file exclusively (`O_EXCL`, which does not follow a
 * symlink either, in a directory whose descriptor is checked to be inside the root) before the
 * contents manager writes it (temporary file and rename), so concurrent clones, and anyone else
 * creating files, never share a name. If the save fails,
 * the reservation is removed unless something was written over it.
 */
async function saveUnique(
  manager: ContentsManager,
  target: string,
  bytes: Buffer
): Promise<ContentsModel> {
  const parent = parentPath(target);
  const name = baseName(target);
  const { stem, suffix } = splitForCounter(name);
  for (let counter = 0; counter <= MAX_INCREMENT; counter++) {
    const candidate = joinApiPath(parent, counter === 0 ? name : `${stem}-${counter}${suffix}`);
    if (await isTaken(manager, candidate)) continue;
    // The empty reservation is ours, not a state of the file worth a version.
    const release = manager.beginWrite(candidate);
    let reserved: { dev: number; ino: number };
    try {
      // Created in its directory checked to be inside the root (see RootFs), never through a
      // symlink: a directory swapped for a link meanwhile gets nothing created outside.
      reserved = await manager.createEmptyFile(candidate);
    } catch (error) {
      release();
      if (hasErrorCode(error, 'EEXIST')) continue;
      throw fileSystemError(error, candidate);
    }
    try {
      return await saveAs(manager, candidate, bytes);
    } catch (error) {
      await manager.removeEmptyFile(candidate, reserved);
      throw error;
    } finally {
      release();
    }
  }
  throw new HttpError(
    409,
    `'${target}' and its next ${MAX_INCREMENT} numbered names are all taken`,
    'conflict'
  );
}

/** Is there anything (a dangling symlink too) at the path, or a symlink leading outside? */
async function isTaken(manager: ContentsManager, apiPath: string): Promise<boolean> {
  try {
    return await manager.exists(apiPath);
  } catch (error) {
    if (error instanceof HttpError && error.reason === 'outside root') return true;
    throw error;
  }
}

/** A notebook target with notebook bytes is saved as a notebook; everything else as bytes. */
async function saveAs(
  manager: ContentsManager,
  apiPath: string,
  bytes: Buffer
): Promise<ContentsModel> {
  const notebook = isNotebookName(apiPath) ? parseNotebook(bytes) : undefined;
  if (notebook) {
    try {
      return await manager.save(apiPath, { type: 'notebook', format: 'json', content: notebook });
    } catch (error) {
      // A model nbformat cannot write is refused before anything is written: keep the bytes.
      if (!(error instanceof HttpError && error.status === 400)) throw error;
    }
  }
  return manager.save(apiPath, {
    type: 'file',
    format: 'base64',
    content: bytes.toString('base64')
  });
}

/**
 * The notebook in these bytes, with every cell marked untrusted (a clone comes from elsewhere:
 * it must not be signed on save, whatever its cells claim), or undefined if it is not one.
 *
 * #### Notes
 * `readNotebook` already drops `metadata.trusted` as nbformat does; marking the cells `false`
 * keeps a cloned notebook from being signed even if that ever changes.
 */
export function parseNotebook(bytes: Buffer): NotebookNode | undefined {
  let notebook: NotebookNode;
  try {
    notebook = readNotebook(bytes).notebook;
  } catch {
    return undefined;
  }
  if (typeof notebook !== 'object' || notebook === null || notebook.nbformat !== 4) {
    return undefined;
  }
  const cells = (notebook as { cells?: unknown }).cells;
  if (Array.isArray(cells)) {
    for (const cell of cells as unknown[]) {
      if (typeof cell !== 'object' || cell === null) continue;
      const record = cell as { metadata?: unknown };
      if (typeof record.metadata !== 'object' || record.metadata === null) record.metadata = {};
      (record.metadata as Record<string, unknown>).trusted = false;
    }
  }
  return notebook;
}

// ---------------------------------------------------------------------------------------------
// Sources
// ---------------------------------------------------------------------------------------------

/**
 * Read an object (the version named, or the latest) whole, but never more than `maxBytes`.
 *
 * #### Notes
 * The HEAD refuses an object it says is too large without reading it, and fixes the version to
 * read. It is not relied on: it may fail (the GET then gives the precise error) or be out of
 * date (an unversioned bucket's object replaced before the GET), so the GET itself is bounded:
 * an announced length over `maxBytes` is refused before the body is read, and the body is
 * streamed and the request aborted as soon as more than `maxBytes` have arrived. Either way
 * the answer is the same 413 (reason `too large`), and nothing is written.
 */
export async function readObject(
  archiving: Pick<Archiving, 'store'>,
  bucket: string,
  key: string,
  versionId: string | undefined,
  maxBytes: number
): Promise<{ body: Buffer; versionId: string | null }> {
  const where = `s3://${displayable(bucket)}/${displayable(key)}`;
  const { store } = archiving;
  try {
    let version = versionId;
    try {
      const head = await store.head(bucket, key, versionId);
      if (head.size > maxBytes) throw tooLarge(where, maxBytes);
      version ??= head.versionId ?? undefined;
    } catch (error) {
      // A HEAD answer has no body, so S3 servers give no error code (`NoSuchKey`,
      // `NoSuchVersion`, `AccessDenied` …) with it: the GET below fails with the precise one.
      if (!(error instanceof ObjectStoreError) || error.kind === 'unavailable') throw error;
    }
    const object = await store.get(bucket, key, version, { maxBytes });
    if (object.body.length > maxBytes) throw tooLarge(where, maxBytes);
    return { body: object.body, versionId: object.versionId };
  } catch (error) {
    if (error instanceof ObjectStoreError && error.kind === 'too-large') {
      throw tooLarge(where, maxBytes);
    }
    throw toHttpError(error);
  }
}

function tooLarge(what: string, maxBytes: number): HttpError {
  return new HttpError(
    413,
    `${what} is larger than the ${maxBytes} bytes a clone may copy`,
    'too large'
  );
}

/** A file below the base, found through its real path. */
interface IFsSource {
  /** The base directory, symlinks resolved. */
  readonly realBase: string;
  /** The file, symlinks resolved; strictly inside `realBase`. */
  readonly realPath: string;
}

/**
 * Resolve `relpath` below the base, following symlinks on both, and refuse anything that is not
 * a visible regular file strictly inside the base.
 *
 * @throws HttpError 400 for a malformed relpath (absolute, NUL byte, hidden component) or a
 *   directory; 404 when it leads outside the base or does not exist; 403 when unreadable.
 */
export async function resolveFsSource(basedir: string, relpath: string): Promise<IFsSource> {
  if (relpath.includes('\0')) {
    throw new HttpError(400, 'relpath contains a NUL byte', 'invalid path');
  }
  if (path.isAbsolute(relpath) || /^[A-Za-z]:[\\/]/.test(relpath)) {
    throw new HttpError(
      400,
      `relpath must be relative to the cloning directory, not ${JSON.stringify(displayable(relpath))}`,
      'absolute path'
    );
  }
  if (relpath.split('/').some(isHiddenSegment)) {
    throw new HttpError(
      400,
      `relpath ${JSON.stringify(displayable(relpath))} has a hidden component`,
      'hidden path'
    );
  }
  let realBase: string;
  try {
    realBase = await fs.realpath(basedir);
  } catch {
    throw new HttpError(
      403,
      `Cloning from the file system is turned off: fs_cloning_basedir ${basedir} is not a directory`,
      'fs cloning disabled'
    );
  }
  const shown = JSON.stringify(displayable(relpath));
  const outside = new HttpError(
    404,
    `relpath ${shown} is outside the root cloning directory`,
    'outside base directory'
  );
  const lexical = path.resolve(realBase, relpath);
  if (!isInside(lexical, realBase)) throw outside;
  let realPath: string;
  try {
    realPath = await fs.realpath(lexical);
  } catch (error) {
    if (hasErrorCode(error, 'ENOENT', 'ENOTDIR')) {
      // Only say "does not exist" for what is inside: nothing is told about the outside.
      if (!(await nearestExistingIsInside(lexical, realBase))) throw outside;
      throw new HttpError(404, `relpath ${shown} does not exist`, 'not found');
    }
    if (hasErrorCode(error, 'ELOOP')) {
      throw new HttpError(404, `relpath ${shown} is a symlink loop`, 'not found');
    }
    if (hasErrorCode(error, 'EACCES', 'EPERM')) {
      throw new HttpError(403, `relpath ${shown} cannot be read: permission denied`, 'forbidden');
    }
    if (hasErrorCode(error, 'ENAMETOOLONG')) {
      throw new HttpError(400, `relpath ${shown} is too long`, 'name too long');
    }
    throw error;
  }
  if (realPath === realBase) {
    throw new HttpError(400, `relpath ${shown} is a directory, not a file`, 'is a directory');
  }
  if (!isInside(realPath, realBase)) throw outside;
  if (path.relative(realBase, realPath).split(path.sep).some(isHiddenSegment)) {
    throw new HttpError(400, `relpath ${shown} leads to a hidden file`, 'hidden path');
  }
  return { realBase, realPath };
}

/**
 * Is the source a regular file? For the landing page, which checks a link without reading it.
 *
 * @throws HttpError 400 for a directory or a special file, 404 when it is gone, 403 when it
 *   cannot be examined.
 */
export async function checkFsSourceIsFile(source: IFsSource, relpath: string): Promise<void> {
  const shown = JSON.stringify(displayable(relpath));
  let stats: Stats;
  try {
    stats = await fs.stat(source.realPath);
  } catch (error) {
    throw sourceAccessError(error, shown);
  }
  checkRegularFile(stats, shown);
  checkSingleLink(stats, shown);
}

/** A failure to open or examine the source, as the clone reports it (others pass unchanged). */
function sourceAccessError(error: unknown, shown: string): unknown {
  if (hasErrorCode(error, 'ENOENT', 'ELOOP', 'ENOTDIR')) {
    return new HttpError(404, `relpath ${shown} does not exist`, 'not found');
  }
  if (hasErrorCode(error, 'EACCES', 'EPERM')) {
    return new HttpError(403, `relpath ${shown} cannot be read: permission denied`, 'forbidden');
  }
  return error;
}

/**
 * Refuse a regular file with more than one hard link.
 *
 * #### Notes
 * A hard link is the file itself under a second name: nothing tells which name is "the" file,
 * nor where the other names are. A hard link inside `fs_cloning_basedir` may well be a file
 * from outside it (anyone who may write in the base and read a file elsewhere on the same file
 * system can make one), and descriptor checks cannot see that, as the path of the opened file
 * is the one inside. So fs-clone copies only files with exactly one link (`nlink === 1`) and
 * answers 403, reason `hard link`, for the others: copy the file instead of linking it.
 */
function checkSingleLink(stats: Stats, shown: string): void {
  if (stats.nlink > 1) {
    throw new HttpError(
      403,
      `relpath ${shown} has ${stats.nlink} hard links; fs-clone copies only files with one ` +
        '(a hard link may be a file from outside the cloning directory): copy the file instead',
      'hard link'
    );
  }
}

function checkRegularFile(stats: Stats, shown: string): void {
  if (stats.isDirectory()) {
    throw new HttpError(400, `relpath ${shown} is a directory, not a file`, 'is a directory');
  }
  if (!stats.isFile()) {
    throw new HttpError(400, `relpath ${shown} is not a regular file`, 'not a file');
  }
}

/**
 * Read the file found by {@link resolveFsSource}, refusing what is not a regular file, what has
 * more than one hard link, what is over `maxBytes`, and anything the descriptor opened shows to
 * be outside the base or hidden (a directory on the way swapped for a symlink since it was
 * resolved): the bytes read are those of the descriptor checked (see {@link RootFs.openFile}).
 */
async function readFsSource(source: IFsSource, relpath: string, maxBytes: number): Promise<Buffer> {
  const shown = JSON.stringify(displayable(relpath));
  let opened: Awaited<ReturnType<RootFs['openFile']>>;
  try {
    // Not following a symlink at the end: the resolved path has none. Opened without blocking,
    // so that a FIFO swapped in does not hang the request (it is refused, never read).
    opened = await new RootFs(source.realBase).openFile(source.realPath, { followSymlinks: false });
  } catch (error) {
    if (hasErrorCode(error, 'EOUTSIDEROOT', 'ELOOP')) {
      throw new HttpError(404, `relpath ${shown} changed while it was read`, 'not found');
    }
    if (hasErrorCode(error, 'EISDIR')) {
      throw new HttpError(400, `relpath ${shown} is a directory, not a file`, 'is a directory');
    }
    if (hasErrorCode(error, 'ENOTREGULAR')) {
      throw new HttpError(400, `relpath ${shown} is not a regular file`, 'not a file');
    }
    throw sourceAccessError(error, shown);
  }
  const { handle, stats, realPath } = opened;
  try {
    checkSingleLink(stats, shown);
    if (realPath === source.realBase || !isInside(realPath, source.realBase)) {
      throw new HttpError(404, `relpath ${shown} changed while it was read`, 'not found');
    }
    if (path.relative(source.realBase, realPath).split(path.sep).some(isHiddenSegment)) {
      throw new HttpError(400, `relpath ${shown} leads to a hidden file`, 'hidden path');
    }
    if (stats.size > maxBytes) throw tooLarge(`relpath ${shown}`, maxBytes);
    return await readAtMost(handle, maxBytes, `relpath ${shown}`);
  } catch (error) {
    if (error instanceof HttpError) throw error;
    if (hasErrorCode(error, 'EACCES', 'EPERM')) {
      throw new HttpError(403, `relpath ${shown} cannot be read: permission denied`, 'forbidden');
    }
    throw error;
  } finally {
    await handle.close();
  }
}

/** Read the whole file, but never more than `maxBytes` (a file growing meanwhile is 413). */
async function readAtMost(handle: fs.FileHandle, maxBytes: number, what: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  const chunkSize = 1024 * 1024;
  for (;;) {
    const buffer = Buffer.allocUnsafe(Math.min(chunkSize, maxBytes + 1 - total));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
    if (bytesRead === 0) break;
    chunks.push(buffer.subarray(0, bytesRead));
    total += bytesRead;
    if (total > maxBytes) throw tooLarge(what, maxBytes);
  }
  return Buffer.concat(chunks, total);
}

/** Walk up to the nearest existing ancestor and say whether its real path is inside the base. */
async function nearestExistingIsInside(lexical: string, realBase: string): Promise<boolean> {
  let probe = path.dirname(lexical);
  for (;;) {
    try {
      return isInside(await fs.realpath(probe), realBase);
    } catch (error) {
      if (!hasErrorCode(error, 'ENOENT', 'ENOTDIR')) return false;
      const parent = path.dirname(probe);
      if (parent === probe) return false;
      probe = parent;
    }
  }
}

/** A dot name other than `.` and `..` (those are resolved, not hidden). */
function isHiddenSegment(segment: string): boolean {
  return segment.startsWith('.') && segment !== '.' && segment !== '..';
}

/** Is `candidate` the root or below it? */
function isInside(candidate: string, root: string): boolean {
  return (
    candidate === root || candidate.startsWith(root.endsWith(path.sep) ? root : root + path.sep)
  );
}

/** File-system failures while reserving a name, as the contents manager maps them. */
function fileSystemError(error: unknown, apiPath: string): unknown {
  if (hasErrorCode(error, 'EACCES', 'EPERM', 'EROFS')) {
    return new HttpError(403, `Permission denied: ${apiPath}`, 'permission denied');
  }
  if (hasErrorCode(error, 'ENAMETOOLONG')) {
    return new HttpError(400, `The name ${apiPath} is too long`, 'name too long');
  }
  if (hasErrorCode(error, 'ENOENT', 'ENOTDIR')) {
    return new HttpError(
      409,
      `The parent directory '${parentPath(apiPath)}' of target_path does not exist`,
      'missing parent directory'
    );
  }
  if (hasErrorCode(error, 'ENOSPC', 'EDQUOT')) {
    return new HttpError(507, `No space left on the device for ${apiPath}`, 'no space');
  }
  return error;
}
