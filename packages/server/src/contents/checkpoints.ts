import type { CheckpointModel } from '@jupyter-store/contract';
import { constants as fsConstants } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { HttpError, hasErrorCode } from '../errors';
import { writeFileAtomic } from './fileio';
import { formatTimestamp } from './model';
import { parentPath, baseName, splitExtension, type RootResolver } from './paths';

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
 */
export class FileCheckpoints {
  constructor(private readonly resolver: RootResolver) {}

  /** The OS path of a file's checkpoint, creating its directory. */
  async checkpointPath(apiPath: string, checkpointId = CHECKPOINT_ID): Promise<string> {
    const name = baseName(apiPath);
    const { name: stem, ext } = splitExtension(name);
    const directory = this.resolver.osPath(parentPath(apiPath));
    let checkpointDir = path.join(directory, CHECKPOINT_DIR);
    if (!(await canWrite(directory))) {
      const relative = path.relative(this.resolver.rootDir, directory);
      checkpointDir = path.join(os.tmpdir(), 'jupyter_checkpoints', relative);
    }
    try {
      await fs.mkdir(checkpointDir, { recursive: true });
    } catch (error) {
      if (hasErrorCode(error, 'EACCES', 'EPERM')) {
        throw new HttpError(403, `Permission denied: ${apiPath}`, 'permission denied');
      }
      if (!hasErrorCode(error, 'ENOENT', 'ENOTDIR')) throw error;
    }
    return path.join(checkpointDir, `${stem}-${checkpointId}${ext}`);
  }

  /** Copy the file to its checkpoint, replacing an older one. */
  async create(apiPath: string): Promise<CheckpointModel> {
    const source = this.resolver.osPath(apiPath);
    const target = await this.checkpointPath(apiPath);
    let bytes: Buffer;
    try {
      bytes = await fs.readFile(source);
    } catch (error) {
      if (hasErrorCode(error, 'ENOENT', 'EISDIR', 'ENOTDIR')) {
        throw new HttpError(404, `No such file: ${apiPath}`, 'not found');
      }
      throw error;
    }
    await writeFileAtomic(target, bytes, { durable: false });
    const stats = await fs.stat(source);
    await fs.utimes(target, stats.atime, stats.mtime);
    return this.model(CHECKPOINT_ID, target);
  }

  /** The checkpoints of a file: none, or the one. */
  async list(apiPath: string): Promise<CheckpointModel[]> {
    const target = await this.checkpointPath(apiPath);
    try {
      if (!(await fs.stat(target)).isFile()) return [];
    } catch {
      return [];
    }
    return [await this.model(CHECKPOINT_ID, target)];
  }

  /** Copy a checkpoint back over its file. */
  async restore(apiPath: string, checkpointId: string): Promise<void> {
    const source = await this.checkpointPath(apiPath, checkpointId);
    let bytes: Buffer;
    try {
      bytes = await fs.readFile(source);
    } catch (error) {
      if (hasErrorCode(error, 'ENOENT', 'EISDIR', 'ENOTDIR'))
        this.noSuchCheckpoint(apiPath, checkpointId);
      throw error;
    }
    const target = this.resolver.osPath(apiPath);
    await writeFileAtomic(target, bytes);
    const stats = await fs.stat(source);
    await fs.utimes(target, stats.atime, stats.mtime);
  }

  /** Delete a checkpoint; 404 when there is none. */
  async delete(apiPath: string, checkpointId: string): Promise<void> {
    const target = await this.checkpointPath(apiPath, checkpointId);
    try {
      if (!(await fs.stat(target)).isFile()) this.noSuchCheckpoint(apiPath, checkpointId);
      await fs.unlink(target);
    } catch (error) {
      if (hasErrorCode(error, 'ENOENT')) this.noSuchCheckpoint(apiPath, checkpointId);
      throw error;
    }
  }

  /** Move a file's checkpoints with it. */
  async renameAll(oldPath: string, newPath: string): Promise<void> {
    for (const checkpoint of await this.list(oldPath)) {
      const from = await this.checkpointPath(oldPath, checkpoint.id);
      const to = await this.checkpointPath(newPath, checkpoint.id);
      await fs.rename(from, to);
    }
  }

  /** Delete a file's checkpoints with it. */
  async deleteAll(apiPath: string): Promise<void> {
    for (const checkpoint of await this.list(apiPath)) await this.delete(apiPath, checkpoint.id);
  }

  private async model(id: string, osPath: string): Promise<CheckpointModel> {
    const stats = await fs.stat(osPath);
    return { id, last_modified: formatTimestamp(stats.mtimeMs) };
  }

  private noSuchCheckpoint(apiPath: string, checkpointId: string): never {
    throw new HttpError(404, `Checkpoint does not exist: ${apiPath}@${checkpointId}`, 'not found');
  }
}

async function canWrite(directory: string): Promise<boolean> {
  try {
    await fs.access(directory, fsConstants.W_OK);
    return true;
  } catch {
    return false;
  }
}
