import picomatch from 'picomatch';

/**
 * Which files under the root the archive covers: notebooks by default, never anything hidden,
 * temporary or generated, whatever the patterns say.
 *
 * #### Notes
 * A path is covered when it matches an `archive_include` pattern, no `archive_exclude` pattern,
 * and none of its components is always ignored: a hidden name (`.git`, `.ipynb_checkpoints`,
 * Jupyter's `.~name` atomic-writing copies, our `.~jupyter-store-*.tmp` files, collaboration's
 * `.jupyter_ystore.db`), `node_modules`, `__pycache__`. Patterns are globs matched against the
 * API path (`**` crosses folders; a pattern without a slash matches the name in any folder), so
 * `archive_include: ["**\/*.ipynb", "**\/*.py"]` archives scripts too.
 */
export class ArchiveFilter {
  constructor(options: ArchiveFilter.IOptions = {}) {
    const include = options.include ?? DEFAULT_INCLUDE;
    const exclude = options.exclude ?? [];
    this._include = include.length ? picomatch([...include], GLOB_OPTIONS) : () => false;
    this._exclude = exclude.length ? picomatch([...exclude], GLOB_OPTIONS) : () => false;
  }

  /** Does the archive cover the file at this API path? */
  covers(apiPath: string): boolean {
    if (apiPath === '') return false;
    const parts = apiPath.split('/');
    if (parts.some(isAlwaysIgnored)) return false;
    return this._include(apiPath) && !this._excludedWithAncestors(parts);
  }

  /**
   * May anything below the directory at this API path be covered? False for ignored folders,
   * so that a scan or a watcher need not descend into them.
   */
  entersDirectory(apiPath: string): boolean {
    if (apiPath === '') return true;
    const parts = apiPath.split('/');
    return !parts.some(isAlwaysIgnored) && !this._excludedWithAncestors(parts);
  }

  /**
   * Globs of the folders no watcher needs to see into, for watchers that take ignore patterns
   * (relative to the root).
   */
  static readonly IGNORED_DIRECTORY_GLOBS: readonly string[] = [
    '**/.*',
    '**/node_modules',
    '**/__pycache__'
  ];

  /** An exclude pattern that matches a folder excludes everything below it. */
  private _excludedWithAncestors(parts: readonly string[]): boolean {
    for (let end = 1; end <= parts.length; end++) {
      if (this._exclude(parts.slice(0, end).join('/'))) return true;
    }
    return false;
  }

  private readonly _include: (path: string) => boolean;
  private readonly _exclude: (path: string) => boolean;
}

export namespace ArchiveFilter {
  export interface IOptions {
    /** `archive_include`: default `["**\/*.ipynb"]`. */
    include?: readonly string[];
    /** `archive_exclude`: default none. */
    exclude?: readonly string[];
  }
}

/** Notebooks only, in any folder. */
export const DEFAULT_INCLUDE: readonly string[] = ['**/*.ipynb'];

/** `basename`: a pattern without a slash matches the last component, as .gitignore does. */
const GLOB_OPTIONS: picomatch.PicomatchOptions = { dot: true, basename: true };

/** Hidden names (Jupyter's rule), and folders full of generated files. */
function isAlwaysIgnored(name: string): boolean {
  return name.startsWith('.') || name === 'node_modules' || name === '__pycache__';
}
