import { randomBytes } from 'node:crypto';
import type { Stats } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { HttpError, hasErrorCode } from '../errors';

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
 * made again (checkpoints), as Jupyter does not fsync its checkpoint copies either.
 */
export async function writeFileAtomic(
  osPath: string,
  data: Buffer | readonly Buffer[],
  options: { durable?: boolean } = {}
): Promise<void> {
  const target = await followSymlink(osPath);
  const existing = await statOrUndefined(target);
  if (existing?.isDirectory()) {
    throw new HttpError(400, `${path.basename(osPath)} is a directory`, 'bad type');
  }
  const directory = path.dirname(target);
  // The temporary name is short and fixed in shape, so the longest legal target name still fits.
  const temporary = path.join(directory, `.~jupyter-store-${randomBytes(8).toString('hex')}.tmp`);
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(temporary, 'wx', existing ? existing.mode & 0o7777 : 0o666);
  } catch (error) {
    // A writable file in a read-only directory: Jupyter writes it in place, and so do we.
    if (existing && hasErrorCode(error, 'EACCES', 'EPERM', 'EROFS')) {
      return writeInPlace(target, data);
    }
    throw error;
  }
  try {
    await writeAll(handle, data);
    if (existing) await keepOwnership(handle, existing);
    if (options.durable !== false) await handle.sync();
  } catch (error) {
    await handle.close().catch(() => undefined);
    await fs.rm(temporary, { force: true });
    throw error;
  }
  await handle.close();
  try {
    await fs.rename(temporary, target);
  } catch (error) {
    await fs.rm(temporary, { force: true });
    throw error;
  }
  if (options.durable !== false) await syncDirectory(directory);
}

/** Append bytes to a file and make them durable (the later chunks of a chunked upload). */
export async function appendFileDurably(osPath: string, data: Buffer): Promise<void> {
  const handle = await fs.open(await followSymlink(osPath), 'a');
  try {
    await handle.write(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
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
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(directory, 'r');
    await handle.sync();
  } catch {
    // Some file systems refuse fsync on directories; the rename itself is still atomic.
  } finally {
    await handle?.close();
  }
}

async function followSymlink(osPath: string): Promise<string> {
  try {
    return await fs.realpath(osPath);
  } catch {
    return osPath;
  }
}

async function writeAll(handle: fs.FileHandle, data: Buffer | readonly Buffer[]): Promise<void> {
  if (Buffer.isBuffer(data)) {
    await handle.writeFile(data);
    return;
  }
  for (const piece of data) await handle.write(piece);
}

async function writeInPlace(target: string, data: Buffer | readonly Buffer[]): Promise<void> {
  const handle = await fs.open(target, 'w');
  try {
    await writeAll(handle, data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function keepOwnership(handle: fs.FileHandle, existing: Stats): Promise<void> {
  if (process.getuid?.() !== 0) return;
  await handle.chown(existing.uid, existing.gid).catch(() => undefined);
}
