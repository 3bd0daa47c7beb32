import { HttpError } from '../errors';

/**
 * Check a path given to the store API (a publish or versions path, a clone target): it names a
 * notebook-server path, so it must be relative, without `.` or `..` segments, empty segments,
 * hidden components or NUL bytes. Returns it without outer slashes.
 *
 * @throws HttpError 400 saying what is wrong.
 */
export function checkStorePath(path: string, what = 'path'): string {
  if (path === '' || /^\/+$/.test(path)) {
    throw new HttpError(400, `The ${what} is empty`, 'empty path');
  }
  if (path.startsWith('/') || /^[A-Za-z]:[\\/]/.test(path)) {
    throw new HttpError(
      400,
      `The ${what} must be relative, not ${JSON.stringify(path)}`,
      'absolute path'
    );
  }
  const trimmed = path.replace(/\/+$/g, '');
  if (trimmed.includes('\0'))
    throw new HttpError(400, `The ${what} contains a NUL byte`, 'invalid path');
  for (const segment of trimmed.split('/')) {
    if (segment === '' || segment === '.' || segment === '..') {
      throw new HttpError(
        400,
        `The ${what} ${JSON.stringify(path)} may not contain empty, '.' or '..' segments`,
        'invalid path'
      );
    }
    if (segment.startsWith('.')) {
      throw new HttpError(
        400,
        `The ${what} ${JSON.stringify(path)} has a hidden component (${JSON.stringify(segment)})`,
        'hidden path'
      );
    }
  }
  return trimmed;
}
