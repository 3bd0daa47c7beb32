import { httpErrors } from '../http/errorCatalogue';

/**
 * Check a path given to the store API (a publish or versions path, a clone target): it names a
 * notebook-server path, so it must be relative, without `.` or `..` segments, empty segments,
 * hidden components or NUL bytes. Returns it without outer slashes.
 *
 * @throws HttpError 400 saying what is wrong.
 */
export function checkStorePath(path: string, what = 'path'): string {
  if (path === '' || /^\/+$/.test(path)) {
    throw httpErrors.emptyPath(`The ${what} is empty`);
  }
  if (path.startsWith('/') || /^[A-Za-z]:[\\/]/.test(path)) {
    throw httpErrors.absolutePath(`The ${what} must be relative, not ${JSON.stringify(path)}`);
  }
  const trimmed = path.replace(/\/+$/g, '');
  if (trimmed.includes('\0')) throw httpErrors.invalidPath(`The ${what} contains a NUL byte`);
  for (const segment of trimmed.split('/')) {
    if (segment === '' || segment === '.' || segment === '..') {
      throw httpErrors.invalidPath(
        `The ${what} ${JSON.stringify(path)} may not contain empty, '.' or '..' segments`
      );
    }
    if (segment.startsWith('.')) {
      throw httpErrors.hiddenPath(
        `The ${what} ${JSON.stringify(path)} has a hidden component (${JSON.stringify(segment)})`
      );
    }
  }
  return trimmed;
}
