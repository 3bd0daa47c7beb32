import { accessSync, lstatSync, statSync, type Stats } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { hasErrorCode } from '../errors';
import { PinnedDir, writeAtomicIn, type IWriteOptions } from './rootFs';

/**
 * Crash-safe file writing.
 *
 * #### Notes
 * Jupyter's "atomic" writing copies the target to `.~name`, rewrites the target in place and
 * deletes the copy; a crash mid-write leaves a torn file beside a backup. We write a hidden
 * temporary file in the same directory, fsync it, rename it over the target and fsync the
 * directory, so a reader sees either the old bytes or the new ones. Mode and ownership of an
 * existing target are kept, and a symlinked target is written through the link, as Jupyter does.
 * `durable: false` keeps the all-or-nothing rename but skips the fsyncs, for copies that can be
 * made again, as Jupyter does not fsync its checkpoint copies either.
 *
 * This is for the gateway's own files (journal, index, local store), which no user path names.
 * Files below the contents root are written with {@link RootFs.writeFileAtomic}, which shares
 * this code ({@link writeAtomicIn}) but checks where every directory it writes in really is.
 */
export async function writeFileAtomic(
  osPath: string,
  data: Buffer | readonly Buffer[],
  options: IWriteOptions = {}
): Promise<void> {
  const target = await followSymlink(osPath);
  await writeAtomicIn(
    PinnedDir.byPath(path.dirname(target)),
    path.basename(target),
    await statOrUndefined(target),
    data,
    options
  );
}

/** Stats with symlinks followed, or undefined when the path does not exist. */
export async function statOrUndefined(osPath: string): Promise<Stats | undefined> {
  return missingAsUndefined(() => fs.stat(osPath));
}

/** Stats of the path itself (a symlink is not followed), or undefined when it does not exist. */
export async function lstatOrUndefined(osPath: string): Promise<Stats | undefined> {
  return missingAsUndefined(() => fs.lstat(osPath));
}

/**
 * {@link statOrUndefined}, made on the calling thread.
 *
 * #### Notes
 * A look (`stat`, `lstat`, `realpath`, `access`) through the thread pool costs 40-55 µs of CPU
 * and wall time on this machine, the syscall itself 2-7 µs (measured side by side, 3,000 of
 * each): a new untitled notebook, a rename and a delete make a dozen of them in series, which
 * was most of their time. So the contents manager makes its looks synchronously. The trade-off:
 * on a slow network file system (a home directory over NFS), a look blocks the event loop for
 * the round trip to the server, and every request waits meanwhile; reads, writes and fsyncs,
 * which can be slow anywhere, stay asynchronous.
 */
export function statNow(osPath: string): Stats | undefined {
  return missingAsUndefined(() => statSync(osPath, { throwIfNoEntry: false }));
}

/** {@link lstatOrUndefined}, made on the calling thread (see {@link statNow}). */
export function lstatNow(osPath: string): Stats | undefined {
  return missingAsUndefined(() => lstatSync(osPath, { throwIfNoEntry: false }));
}

/**
 * What `look` answers, or undefined when the path or one of its folders is missing (`ENOENT`,
 * `ENOTDIR`), for a synchronous look and an asynchronous one alike.
 */
function missingAsUndefined<T>(look: () => Promise<T>): Promise<T | undefined>;
function missingAsUndefined<T>(look: () => T): T | undefined;
function missingAsUndefined<T>(look: () => T | Promise<T>): T | undefined | Promise<T | undefined> {
  const missing = (error: unknown): undefined => {
    if (hasErrorCode(error, 'ENOENT', 'ENOTDIR')) return undefined;
    throw error;
  };
  try {
    const answer = look();
    // A thenable, not `instanceof Promise`: fs's promises may come from another realm (a VM
    // context, as under a test runner).
    return isPromiseLike(answer) ? Promise.resolve(answer).catch(missing) : answer;
  } catch (error) {
    return missing(error);
  }
}

function isPromiseLike<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | undefined)?.then === 'function';
}

/** Can this process access the path so (`os.access`), asked on the calling thread (see {@link statNow})? */
export function canAccessNow(osPath: string, mode: number): boolean {
  try {
    accessSync(osPath, mode);
    return true;
  } catch {
    return false;
  }
}

/** fsync a directory so that a rename or a new entry in it survives a crash. */
export async function syncDirectory(directory: string): Promise<void> {
  await PinnedDir.byPath(directory).sync();
}

async function followSymlink(osPath: string): Promise<string> {
  try {
    return await fs.realpath(osPath);
  } catch {
    return osPath;
  }
}
