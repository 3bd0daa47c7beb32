import type { Stats } from 'node:fs';
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
  try {
    return await fs.stat(osPath);
  } catch (error) {
    if (hasErrorCode(error, 'ENOENT', 'ENOTDIR')) return undefined;
    throw error;
  }
}

/** Stats of the path itself (a symlink is not followed), or undefined when it does not exist. */
export async function lstatOrUndefined(osPath: string): Promise<Stats | undefined> {
  try {
    return await fs.lstat(osPath);
  } catch (error) {
    if (hasErrorCode(error, 'ENOENT', 'ENOTDIR')) return undefined;
    throw error;
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
