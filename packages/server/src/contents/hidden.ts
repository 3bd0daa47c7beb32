import { constants as fsConstants, statSync, type Stats } from 'node:fs';
import { canAccessNow } from './fileio';

/** Jupyter's default `ContentsManager.hide_globs`: never listed, even with hidden files allowed. */
export const DEFAULT_HIDE_GLOBS: readonly string[] = [
  '__pycache__',
  '*.pyc',
  '*.pyo',
  '.DS_Store',
  '*~'
];

/** Compile fnmatch-style globs (`*`, `?`, `[...]`) into one matcher of file names. */
export function compileGlobs(globs: readonly string[]): (name: string) => boolean {
  if (globs.length === 0) return () => false;
  const sources = globs.map(glob => {
    let source = '';
    for (let i = 0; i < glob.length; i++) {
      const char = glob[i];
      if (char === '*') source += '.*';
      else if (char === '?') source += '.';
      else if (char === '[') {
        const end = glob.indexOf(']', i + 2);
        if (end < 0) source += '\\[';
        else {
          let set = glob.slice(i + 1, end).replace(/\\/g, '\\\\');
          if (set.startsWith('!')) set = '^' + set.slice(1);
          source += `[${set}]`;
          i = end;
        }
      } else source += char.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    }
    return source;
  });
  const pattern = new RegExp(`^(?:${sources.join('|')})$`, 's');
  return name => pattern.test(name);
}

/** Does any segment of this API path start with a dot? */
export function hasHiddenSegment(apiPath: string): boolean {
  return apiPath.split('/').some(segment => segment.startsWith('.'));
}

/**
 * Is the item itself hidden, by Jupyter's rule: a dot name, or a directory the server may not
 * list (no read and execute permission).
 *
 * @param stats - the item's stats with symlinks followed, when already known.
 */
export async function isItemHidden(name: string, osPath: string, stats?: Stats): Promise<boolean> {
  if (name.startsWith('.')) return true;
  // Both looks on the calling thread, as the manager's others (see statNow).
  let info = stats;
  if (info === undefined) {
    try {
      info = statSync(osPath);
    } catch {
      return false;
    }
  }
  if (!info.isDirectory()) return false;
  return !canAccessNow(osPath, fsConstants.R_OK | fsConstants.X_OK);
}

/**
 * Is the API path hidden: any dot segment below the root, or the item is an unlistable
 * directory. The root itself is never hidden.
 *
 * @param stats - the item's stats with symlinks followed, when the caller already has them.
 */
export async function isHidden(apiPath: string, osPath: string, stats?: Stats): Promise<boolean> {
  if (apiPath === '') return false;
  if (hasHiddenSegment(apiPath)) return true;
  return isItemHidden(apiPath.slice(apiPath.lastIndexOf('/') + 1), osPath, stats);
}
