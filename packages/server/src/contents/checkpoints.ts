import type { CheckpointModel } from '@jupyter-store/contract';
import { constants as fsConstants, statSync, type Stats } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { hasErrorCode } from '../errors';
import { canAccessNow, lstatNow, statNow } from './fileio';
import { httpErrors } from '../http/errorCatalogue';
import { formatTimestamp } from './model';
import { parentPath, baseName, splitExtension, type RootResolver } from './paths';
import { RootFs } from './rootFs';

/** Jupyter keeps one checkpoint per file, with this id. */
export const CHECKPOINT_ID = 'checkpoint';

/** The directory, beside each file, that holds checkpoints. */
export const CHECKPOINT_DIR = '.ipynb_checkpoints';

/**
 * File checkpoints in Jupyter's exact layout, so that Jupyter and we see the same checkpoint:
 * `<dir>/.ipynb_checkpoints/<stem>-<id><ext>`, or `<tmp>/jupyter_checkpoints/<dir>/…` when the
 * directory is not writable.
 *
 * #### Notes
 * Like Jupyter, computing a checkpoint's path creates the checkpoint directory, even for a
 * listing; doing the same keeps the trees of both servers identical.
 *
 * Checkpoints are read, written, created and removed through {@link RootFs}: those beside the
 * files stay inside the contents root, those in the temporary directory inside
 * `<tmp>/jupyter_checkpoints`.
 */
export class FileCheckpoints {
  constructor(
    private readonly resolver: RootResolver,
    private readonly files: RootFs
  ) {}

  /** The OS path of a file's checkpoint, creating its directory. */
  async checkpointPath(apiPath: string, checkpointId = CHECKPOINT_ID): Promise<string> {
    return (await this.locate(apiPath, checkpointId)).osPath;
  }

  /** The checkpoint's OS path and the confined file system it lives in, creating its directory. */
  private async locate(
    apiPath: string,
    checkpointId: string
  ): Promise<{ osPath: string; files: RootFs }> {
    const name = baseName(apiPath);
    const { name: stem, ext } = splitExtension(name);
    const directory = this.resolver.osPath(parentPath(apiPath));
    let checkpointDir = path.join(directory, CHECKPOINT_DIR);
    let files = this.files;
    // Nearly always the directory is there already: one look spares opening and checking the
    // parent to create it. Both looks on this thread, as the manager's (see statNow).
    const writable = canAccessNow(directory, fsConstants.W_OK);
    const existing = lstatNow(checkpointDir);
    if (!writable) {
      const relative = path.relative(this.resolver.rootDir, directory);
      const tmpRoot = path.join(os.tmpdir(), 'jupyter_checkpoints');
      checkpointDir = path.join(tmpRoot, relative);
      files = this.tmpFiles(tmpRoot);
    }
    try {
      if (files === this.files) {
        // Creating nothing, the look needs no check of where it was made; anything else there
        // (a symlink, a file) goes the checked way, which refuses or fails as before.
        if (!existing?.isDirectory()) await files.mkdir(checkpointDir, { existOk: true });
      } else await fs.mkdir(checkpointDir, { recursive: true });
    } catch (error) {
      if (hasErrorCode(error, 'EACCES', 'EPERM')) {
        throw httpErrors.permissionDenied(`Permission denied: ${apiPath}`);
      }
      if (!hasErrorCode(error, 'ENOENT', 'ENOTDIR')) throw error;
    }
    return { osPath: path.join(checkpointDir, `${stem}-${checkpointId}${ext}`), files };
  }

  /** Copy the file to its checkpoint, replacing an older one. */
  async create(apiPath: string): Promise<CheckpointModel> {
    const source = this.resolver.osPath(apiPath);
    const target = await this.locate(apiPath, CHECKPOINT_ID);
    let read: { bytes: Buffer; stats: Stats };
    try {
      read = await this.files.readFile(source);
    } catch (error) {
      if (hasErrorCode(error, 'ENOENT', 'EISDIR', 'ENOTDIR', 'ENOTREGULAR')) {
        throw httpErrors.notFound(`No such file: ${apiPath}`);
      }
      throw error;
    }
    // The times are those of the bytes read, set on the copy before it takes its name.
    await target.files.writeFileAtomic(target.osPath, read.bytes, {
      durable: false,
      times: read.stats
    });
    return this.model(CHECKPOINT_ID, target.osPath);
  }

  /**
   * Give a file that has no checkpoint one, from the bytes a save writes there (Jupyter's save
   * makes it so for a notebook): the copy Jupyter makes, without reading the file back. The
   * copy takes the file's times, as `shutil.copy2` gives it.
   *
   * @param saved - settles when the save's own write has: the copy is written meanwhile, and
   *   takes the file's times and its name only once the file is written. If the write fails,
   *   no checkpoint is made.
   *
   * #### Notes
   * Written after the file, as before, the copy's seven trips through the thread pool came
   * after the file's own and its two fsyncs; written meanwhile, a new notebook waits for two
   * of them after its file is written. A crash leaves at worst the copy's hidden temporary file,
   * never a checkpoint of a file that was not written. Where the checkpoint directory is not
   * there yet, the copy waits for the write as before: a save that fails creates no directory,
   * as Jupyter's creates none.
   */
  async createIfMissing(
    apiPath: string,
    bytes: Buffer,
    saved: Promise<unknown> = Promise.resolve()
  ): Promise<void> {
    const directory = this.resolver.osPath(parentPath(apiPath));
    if (!lstatNow(path.join(directory, CHECKPOINT_DIR))?.isDirectory()) await saved;
    const target = await this.locate(apiPath, CHECKPOINT_ID);
    if (isFile(target.osPath)) return;
    const times = saved.then(() => {
      const stats = statNow(this.resolver.osPath(apiPath));
      return stats?.isFile() ? stats : undefined;
    });
    // Awaited by the write only once its bytes are written; a failure before leaves it unread.
    times.catch(() => undefined);
    await target.files.writeFileAtomic(target.osPath, bytes, { durable: false, times });
  }

  /** The checkpoints of a file: none, or the one. */
  async list(apiPath: string): Promise<CheckpointModel[]> {
    const target = await this.checkpointPath(apiPath);
    if (!isFile(target)) return [];
    return [await this.model(CHECKPOINT_ID, target)];
  }

  /** Copy a checkpoint back over its file. */
  async restore(apiPath: string, checkpointId: string): Promise<void> {
    const source = await this.locate(apiPath, checkpointId);
    let read: { bytes: Buffer; stats: Stats };
    try {
      read = await source.files.readFile(source.osPath);
    } catch (error) {
      if (hasErrorCode(error, 'ENOENT', 'EISDIR', 'ENOTDIR', 'ENOTREGULAR'))
        this.noSuchCheckpoint(apiPath, checkpointId);
      throw error;
    }
    const target = this.resolver.osPath(apiPath);
    await this.files.writeFileAtomic(target, read.bytes, { times: read.stats });
  }

  /** Delete a checkpoint; 404 when there is none. */
  async delete(apiPath: string, checkpointId: string): Promise<void> {
    const target = await this.locate(apiPath, checkpointId);
    try {
      if (!(await fs.stat(target.osPath)).isFile()) this.noSuchCheckpoint(apiPath, checkpointId);
      await target.files.unlink(target.osPath);
    } catch (error) {
      if (hasErrorCode(error, 'ENOENT')) this.noSuchCheckpoint(apiPath, checkpointId);
      throw error;
    }
  }

  /** Move a file's checkpoints with it. */
  async renameAll(oldPath: string, newPath: string): Promise<void> {
    // Jupyter lists the checkpoints (there is at most the one), then moves each: located once.
    const from = await this.locate(oldPath, CHECKPOINT_ID);
    if (isFile(from.osPath)) {
      const to = await this.locate(newPath, CHECKPOINT_ID);
      if (from.files === to.files) await from.files.rename(from.osPath, to.osPath);
      else {
        // Between the root and the temporary directory: copy, then remove.
        const read = await from.files.readFile(from.osPath);
        await to.files.writeFileAtomic(to.osPath, read.bytes, {
          durable: false,
          times: read.stats
        });
        await from.files.unlink(from.osPath);
      }
    }
  }

  /** Delete a file's checkpoints with it. */
  async deleteAll(apiPath: string): Promise<void> {
    // As listing and then deleting each, with the one checkpoint located once.
    const target = await this.locate(apiPath, CHECKPOINT_ID);
    if (!isFile(target.osPath)) return;
    try {
      await target.files.unlink(target.osPath);
    } catch (error) {
      if (hasErrorCode(error, 'ENOENT')) this.noSuchCheckpoint(apiPath, CHECKPOINT_ID);
      throw error;
    }
  }

  /** The confined file system of `<tmp>/jupyter_checkpoints`, made once. */
  private tmpFiles(tmpRoot: string): RootFs {
    if (this._tmpFiles?.rootDir !== path.resolve(tmpRoot)) this._tmpFiles = new RootFs(tmpRoot);
    return this._tmpFiles;
  }

  private _tmpFiles: RootFs | undefined;

  private async model(id: string, osPath: string): Promise<CheckpointModel> {
    const stats = statSync(osPath);
    return { id, last_modified: formatTimestamp(stats.mtimeMs) };
  }

  private noSuchCheckpoint(apiPath: string, checkpointId: string): never {
    throw httpErrors.notFound(`Checkpoint does not exist: ${apiPath}@${checkpointId}`);
  }
}

/** Is there a regular file (symlinks followed) at the path? Asked on this thread (see statNow). */
function isFile(osPath: string): boolean {
  try {
    return statNow(osPath)?.isFile() ?? false;
  } catch {
    return false;
  }
}
