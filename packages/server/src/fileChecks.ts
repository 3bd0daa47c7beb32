import * as fs from 'node:fs';

/**
 * Quiet checks of what a path is, for validating settings and command-line values: each answers
 * false instead of throwing when the path is missing or unreadable.
 */

/** Is there a directory at `dir` (symlinks followed)? */
export function isDirectory(dir: string): boolean {
  try {
    return fs.statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

/** Is there a regular file at `file` that this process may execute? */
export function isExecutableFile(file: string): boolean {
  return isFileWithAccess(file, fs.constants.X_OK);
}

/** Is there a regular file at `file` that this process may read? */
export function isReadableFile(file: string): boolean {
  return isFileWithAccess(file, fs.constants.R_OK);
}

function isFileWithAccess(file: string, mode: number): boolean {
  try {
    fs.accessSync(file, mode);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}
