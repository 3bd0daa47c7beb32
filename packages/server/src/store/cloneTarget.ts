import type { ContentsModel } from '@jupyter-store/contract';
import { readNotebook, type NotebookNode } from '@jupyter-store/nbformat';
import type { ContentsManager } from '../contents/manager';
import { isNotebookName } from '../contents/model';
import { splitForCounter } from '../contents/naming';
import { baseName, joinApiPath, parentPath } from '../contents/paths';
import { HttpError, hasErrorCode } from '../errors';
import { httpErrors, isCatalogued } from '../http/errorCatalogue';
import { errnoError } from '../http/errors';
import { displayable } from '../storage/keys';
import { checkStorePath } from './paths';

/**
 * Where a clone goes, and how it is written there: shared by the clone routes (from object
 * storage and from the file system) and by their landing pages, which propose the target.
 */

/** How many `-<n>` names a clone tries before giving up with 409. */
const MAX_INCREMENT = 10_000;

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
    throw httpErrors.badRequest(
      `${sourceField} ${JSON.stringify(displayable(source))} has no file name to clone to; ` +
        'give a target_path'
    );
  }
  return checkStorePath(name, `target_path (by default the last segment of ${sourceField})`);
}

/**
 * Save the bytes of a clone at the target, whose parent must exist (a visible directory inside
 * the root), or, when the target is taken, at the first free `-<n>` name.
 *
 * @param save - How the bytes are written at the name chosen: by default as a clone (a notebook
 *   never trusted); a restore keeps the trust the notebook's signature gives it.
 * @throws HttpError 400 when the parent is hidden or leads outside the root, 409 when it is
 *   missing or every name is taken.
 */
export async function saveClone(
  manager: ContentsManager,
  target: string,
  read: () => Promise<Buffer>,
  save: SaveBytes = Private.saveAs
): Promise<ContentsModel> {
  await Private.checkTargetParent(manager, target);
  return Private.saveUnique(manager, target, await read(), save);
}

/** Write bytes at a path through the contents manager, answering the model written. */
export type SaveBytes = (
  manager: ContentsManager,
  apiPath: string,
  bytes: Buffer
) => Promise<ContentsModel>;

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

namespace Private {
  /**
   * The target's parent must be an existing, visible directory inside the root.
   *
   * @throws HttpError 400 when it is hidden or leads outside the root, 409 when it is missing.
   */
  export async function checkTargetParent(manager: ContentsManager, target: string): Promise<void> {
    const parent = parentPath(target);
    if (parent === '') return;
    let isDirectory: boolean;
    try {
      if (await manager.isHidden(parent)) {
        throw httpErrors.hiddenPath(`The directory '${parent}' of target_path is hidden`);
      }
      isDirectory = await manager.dirExists(parent);
    } catch (error) {
      throw outsideRootAs400(error, target);
    }
    if (!isDirectory) {
      throw httpErrors.missingParentDirectory(
        `The parent directory '${parent}' of target_path does not exist; create it first`
      );
    }
  }

  /** The contents manager's refusal of a path whose symlinks lead outside the root. */
  function leadsOutsideRoot(error: unknown): boolean {
    return isCatalogued(error, 'outsideRoot') || hasErrorCode(error, 'EOUTSIDEROOT');
  }

  /** The contents manager answers 404 for a path whose symlinks lead outside the root. */
  function outsideRootAs400(error: unknown, target: string): unknown {
    if (!leadsOutsideRoot(error)) return error;
    return httpErrors.targetOutsideRoot(
      `target_path '${target}' leads outside the root directory`,
      { cause: error }
    );
  }

  /**
   * Save the bytes at the target or, when it is taken, at the first free `-<n>` name.
   *
   * #### Notes
   * The name is reserved by creating an empty file exclusively (`O_EXCL`, which does not follow
   * a symlink either, in a directory whose descriptor is checked to be inside the root) before
   * the contents manager writes it (temporary file and rename), so concurrent clones, and anyone
   * else creating files, never share a name. If the save fails, the reservation is removed
   * unless something was written over it.
   */
  export async function saveUnique(
    manager: ContentsManager,
    target: string,
    bytes: Buffer,
    save: SaveBytes
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
        throw reservationError(error, candidate);
      }
      try {
        return await save(manager, candidate, bytes);
      } catch (error) {
        await manager.removeEmptyFile(candidate, reserved);
        throw error;
      } finally {
        release();
      }
    }
    throw httpErrors.conflict(
      `'${target}' and its next ${MAX_INCREMENT} numbered names are all taken`
    );
  }

  /** Is there anything (a dangling symlink too) at the path, or a symlink leading outside? */
  async function isTaken(manager: ContentsManager, apiPath: string): Promise<boolean> {
    try {
      return await manager.exists(apiPath);
    } catch (error) {
      if (leadsOutsideRoot(error)) return true;
      throw error;
    }
  }

  /** A notebook target with notebook bytes is saved as a notebook; everything else as bytes. */
  export async function saveAs(
    manager: ContentsManager,
    apiPath: string,
    bytes: Buffer
  ): Promise<ContentsModel> {
    const notebook = isNotebookName(apiPath) ? parseNotebook(bytes) : undefined;
    if (notebook) {
      try {
        return await manager.save(apiPath, {
          type: 'notebook',
          format: 'json',
          content: notebook
        });
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
   * A failure to reserve a name: a missing parent (gone since it was checked) is 409, as when
   * it was missing from the start; the others as the errno table answers them.
   */
  function reservationError(error: unknown, apiPath: string): unknown {
    if (hasErrorCode(error, 'ENOENT', 'ENOTDIR')) {
      return httpErrors.missingParentDirectory(
        `The parent directory '${parentPath(apiPath)}' of target_path does not exist`,
        { cause: error }
      );
    }
    return errnoError(error, apiPath, 'creating') ?? error;
  }
}
