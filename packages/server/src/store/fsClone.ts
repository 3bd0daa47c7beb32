import { FsCloneRequestSchema, FsCloneResponseSchema } from '@jupyter-store/contract';
import type { Stats } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import type { ContentsManager } from '../contents/manager';
import { RootFs } from '../contents/rootFs';
import { HttpError, hasErrorCode } from '../errors';
import type { Route } from '../gateway/assemble';
import type { Logger } from '../gateway/logger';
import { httpErrors } from '../http/errorCatalogue';
import { displayable } from '../storage/keys';
import { sendCloned } from './clone';
import { cloneTarget, saveClone } from './cloneTarget';
import { tooLarge } from './objects';
import { readJsonObject, validate } from './requests';

/** What the fs-clone route needs. */
export interface IFsCloneOptions {
  /** The directory below which files may be cloned (`fs_cloning_basedir`), read per request. */
  readonly basedir: () => string;
  /** Where clones are written, as any save. */
  readonly manager: ContentsManager;
  /** Largest source read, in bytes; larger is 413. */
  readonly maxBytes: number;
  /** Where successful clones are logged (info). */
  readonly log?: Logger;
}

/**
 * `POST api/store/fs-clone`: copy a file from below `fs_cloning_basedir` into the server.
 *
 * #### Notes
 * As `POST api/store/clone` (see `store/clone.ts`: same target rules, same 200, 409, 413), but
 * the source is `relpath` below the base: 400 when it is absolute, has a NUL byte or a hidden
 * component, or names a directory or a non-regular file; 403 when `fs_cloning_basedir` is unset
 * or not an existing absolute directory (reason `fs cloning disabled`), when the file is
 * unreadable, or when it has more than one hard link (reason `hard link`); 404 when it resolves
 * outside the base (`..`, symlinks) or does not exist.
 */
export function fsCloneRoute(options: IFsCloneOptions): Route.Handler {
  const { manager, maxBytes } = options;
  return async (request, response) => {
    const { relpath, target_path } = validate(FsCloneRequestSchema, readJsonObject(request));
    const source = await resolveFsSource(options.basedir(), relpath);
    const target = cloneTarget(target_path, relpath, 'relpath');
    const model = await saveClone(manager, target, () => readFsSource(source, relpath, maxBytes));
    options.log?.info({ from: source.realPath, to: model.path }, 'cloned from the file system');
    sendCloned(response, FsCloneResponseSchema.parse({ ...model, relpath }));
  };
}

/** A file below the base, found through its real path. */
export interface IFsSource {
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
    throw httpErrors.invalidPath('relpath contains a NUL byte');
  }
  if (path.isAbsolute(relpath) || /^[A-Za-z]:[\\/]/.test(relpath)) {
    throw httpErrors.absolutePath(
      `relpath must be relative to the cloning directory, not ${JSON.stringify(displayable(relpath))}`
    );
  }
  if (relpath.split('/').some(isHiddenSegment)) {
    throw httpErrors.hiddenPath(
      `relpath ${JSON.stringify(displayable(relpath))} has a hidden component`
    );
  }
  let realBase: string;
  try {
    realBase = await fs.realpath(basedir);
  } catch {
    throw httpErrors.fsCloningDisabled(
      `Cloning from the file system is turned off: fs_cloning_basedir ${basedir} is not a directory`
    );
  }
  const shown = JSON.stringify(displayable(relpath));
  const outside = httpErrors.outsideBaseDirectory(
    `relpath ${shown} is outside the root cloning directory`
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
      throw httpErrors.notFound(`relpath ${shown} does not exist`);
    }
    if (hasErrorCode(error, 'ELOOP')) {
      throw httpErrors.notFound(`relpath ${shown} is a symlink loop`);
    }
    if (hasErrorCode(error, 'EACCES', 'EPERM')) {
      throw httpErrors.permissionDenied(`relpath ${shown} cannot be read: permission denied`);
    }
    if (hasErrorCode(error, 'ENAMETOOLONG')) {
      throw httpErrors.nameTooLong(`relpath ${shown} is too long`);
    }
    throw error;
  }
  if (realPath === realBase) {
    throw httpErrors.isDirectory(`relpath ${shown} is a directory, not a file`);
  }
  if (!isInside(realPath, realBase)) throw outside;
  if (path.relative(realBase, realPath).split(path.sep).some(isHiddenSegment)) {
    throw httpErrors.hiddenPath(`relpath ${shown} leads to a hidden file`);
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
    return httpErrors.notFound(`relpath ${shown} does not exist`, { cause: error });
  }
  if (hasErrorCode(error, 'EACCES', 'EPERM')) {
    return httpErrors.permissionDenied(`relpath ${shown} cannot be read: permission denied`, {
      cause: error
    });
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
    throw httpErrors.hardLink(
      `relpath ${shown} has ${stats.nlink} hard links; fs-clone copies only files with one ` +
        '(a hard link may be a file from outside the cloning directory): copy the file instead'
    );
  }
}

function checkRegularFile(stats: Stats, shown: string): void {
  if (stats.isDirectory()) {
    throw httpErrors.isDirectory(`relpath ${shown} is a directory, not a file`);
  }
  if (!stats.isFile()) {
    throw httpErrors.notAFile(`relpath ${shown} is not a regular file`);
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
      throw httpErrors.notFound(`relpath ${shown} changed while it was read`);
    }
    if (hasErrorCode(error, 'EISDIR')) {
      throw httpErrors.isDirectory(`relpath ${shown} is a directory, not a file`);
    }
    if (hasErrorCode(error, 'ENOTREGULAR')) {
      throw httpErrors.notAFile(`relpath ${shown} is not a regular file`);
    }
    throw sourceAccessError(error, shown);
  }
  const { handle, stats, realPath } = opened;
  try {
    checkSingleLink(stats, shown);
    if (realPath === source.realBase || !isInside(realPath, source.realBase)) {
      throw httpErrors.notFound(`relpath ${shown} changed while it was read`);
    }
    if (path.relative(source.realBase, realPath).split(path.sep).some(isHiddenSegment)) {
      throw httpErrors.hiddenPath(`relpath ${shown} leads to a hidden file`);
    }
    if (stats.size > maxBytes) throw tooLarge(`relpath ${shown}`, maxBytes);
    return await readAtMost(handle, maxBytes, `relpath ${shown}`);
  } catch (error) {
    if (error instanceof HttpError) throw error;
    if (hasErrorCode(error, 'EACCES', 'EPERM')) {
      throw httpErrors.permissionDenied(`relpath ${shown} cannot be read: permission denied`);
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
