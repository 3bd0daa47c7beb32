import { realpathSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { HttpError, hasErrorCode } from '../errors';
import { httpErrors } from '../http/errorCatalogue';

/**
 * API paths are `/`-separated, relative to the contents root, with no leading or trailing slash
 * (`""` is the root). Everything that turns one into a file-system path goes through this module,
 * so that no request can reach outside the root.
 */

/** Longest file name most file systems accept, in bytes. */
const MAX_NAME_BYTES = 255;

/** Longest API path accepted, in bytes: PATH_MAX (4096) less room for the root directory. */
const MAX_PATH_BYTES = 3072;

/** Strip the slashes Jupyter strips from both ends of an API path. */
export function normalizeApiPath(apiPath: string): string {
  return apiPath.replace(/^\/+|\/+$/g, '');
}

/** The last segment of an API path (`""` for the root). */
export function baseName(apiPath: string): string {
  const index = apiPath.lastIndexOf('/');
  return index < 0 ? apiPath : apiPath.slice(index + 1);
}

/** The parent directory of an API path (`""` for top-level items). */
export function parentPath(apiPath: string): string {
  const index = apiPath.lastIndexOf('/');
  return index < 0 ? '' : apiPath.slice(0, index);
}

/** Join API path segments, dropping empty ones. */
export function joinApiPath(...parts: string[]): string {
  return parts
    .map(normalizeApiPath)
    .filter(part => part !== '')
    .join('/');
}

/**
 * Check an API path for every lexical way out of the root or into an invalid name, and return it
 * normalised.
 *
 * #### Notes
 * Jupyter answers 404 for paths outside the root; so do we, for `..` anywhere (Jupyter accepts
 * `a/../b` when it stays inside; we refuse it, as no client sends it) and NUL bytes. Backslashes
 * and `C:` are ordinary name characters on POSIX, as for Jupyter there. Names longer than the
 * file system allows get 400 instead of an OS error.
 */
export function checkApiPath(apiPath: string): string {
  const normalized = normalizeApiPath(apiPath);
  if (normalized.includes('\0')) {
    throw httpErrors.badPath('The path contains a NUL byte and is not a valid path');
  }
  if (normalized === '') return normalized;
  if (Buffer.byteLength(normalized) > MAX_PATH_BYTES) {
    throw httpErrors.nameTooLong('The path is too long');
  }
  for (const segment of normalized.split('/')) {
    if (segment === '..' || segment === '.') {
      throw httpErrors.outsideRoot(`${normalized} is outside root contents directory`);
    }
    if (segment === '') {
      throw httpErrors.badPath(`${normalized} is not a valid path: empty segment`);
    }
    if (Buffer.byteLength(segment) > MAX_NAME_BYTES) {
      throw httpErrors.nameTooLong(`The name ${segment.slice(0, 40)}… is too long`);
    }
  }
  return normalized;
}

/**
 * Maps API paths to OS paths below one root directory, refusing symlinks that lead outside it.
 */
export class RootResolver {
  /**
   * @param rootDir - an absolute directory; its real path is resolved once.
   */
  constructor(readonly rootDir: string) {
    this.rootDir = path.resolve(rootDir);
  }

  /** The OS path of an API path, checked lexically only (no file-system access). */
  osPath(apiPath: string): string {
    const checked = checkApiPath(apiPath);
    return checked === '' ? this.rootDir : path.join(this.rootDir, ...checked.split('/'));
  }

  /**
   * The OS path of an API path, after checking that following symlinks keeps it inside the root.
   * A missing path is checked through its nearest existing ancestor, so that creating
   * `link-outside/new.txt` is refused too.
   *
   * #### Notes
   * The real paths are asked on the calling thread (`realpath(3)`, one `readlink` a component):
   * 7 µs where a trip through the thread pool costs about 45 µs, and every request resolves its
   * path first, in series with everything else. The trade-off is that of the manager's other
   * looks (`statNow` in `fileio.ts`): on a slow network file system, the event loop waits.
   */
  async resolve(apiPath: string): Promise<string> {
    return this.resolveNow(apiPath);
  }

  /** {@link resolve}, synchronously. */
  resolveNow(apiPath: string): string {
    const osPath = this.osPath(apiPath);
    const realRoot = this.realRoot();
    let probe = osPath;
    for (;;) {
      try {
        const real = realpathSync.native(probe);
        if (!isInside(real, realRoot)) {
          throw httpErrors.outsideRoot(
            `${normalizeApiPath(apiPath)} is outside root contents directory`
          );
        }
        return osPath;
      } catch (error) {
        if (error instanceof HttpError) throw error;
        if (!hasErrorCode(error, 'ENOENT', 'ENOTDIR')) {
          if (hasErrorCode(error, 'ELOOP')) {
            throw httpErrors.badPath(`${normalizeApiPath(apiPath)} is a symlink loop`);
          }
          if (hasErrorCode(error, 'EACCES', 'EPERM')) return osPath;
          throw error;
        }
        const parent = path.dirname(probe);
        if (parent === probe || probe === this.rootDir) return osPath;
        probe = parent;
      }
    }
  }

  /** Does this OS path, with symlinks followed, stay inside the root? */
  async isInsideRoot(osPath: string): Promise<boolean> {
    const realRoot = this.realRoot();
    try {
      return isInside(await fs.realpath(osPath), realRoot);
    } catch (error) {
      if (!hasErrorCode(error, 'ENOENT')) return false;
      // A dangling link reveals nothing, but writing through it would create its target:
      // it is inside only if that target would be.
      try {
        const target = path.resolve(path.dirname(osPath), await fs.readlink(osPath));
        return isInside(
          path.resolve(
            await fs.realpath(path.dirname(target)).catch(() => target),
            path.basename(target)
          ),
          realRoot
        );
      } catch {
        return false;
      }
    }
  }

  private _realRoot: string | undefined;

  private realRoot(): string {
    if (this._realRoot === undefined) this._realRoot = realpathSync.native(this.rootDir);
    return this._realRoot;
  }
}

function isInside(candidate: string, root: string): boolean {
  return (
    candidate === root || candidate.startsWith(root.endsWith(path.sep) ? root : root + path.sep)
  );
}

/** Python's `os.path.splitext`: the last dot, ignoring leading dots of the name. */
export function splitExtension(name: string): { name: string; ext: string } {
  const dot = name.lastIndexOf('.');
  if (dot <= 0 || /^\.+$/.test(name.slice(0, dot + 1))) return { name, ext: '' };
  return { name: name.slice(0, dot), ext: name.slice(dot) };
}
