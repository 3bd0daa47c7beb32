import type { ContentsModel, ContentsType } from '@jupyter-store/contract';
import { constants as fsConstants, type Stats } from 'node:fs';
import { canAccessNow } from './fileio';
import { baseName } from './paths';

export { guessMimeType } from './mimetypes';

/**
 * Jupyter's rendering of a datetime in models: ISO 8601 in UTC with a `Z`, microseconds only when
 * they are not zero (Python's `isoformat()`).
 */
export function formatTimestamp(milliseconds: number): string {
  const whole = Math.floor(milliseconds / 1000);
  const micros = Math.round((milliseconds - whole * 1000) * 1000);
  const carry = micros >= 1_000_000 ? 1 : 0;
  const date = new Date((whole + carry) * 1000).toISOString().slice(0, 19);
  const fraction = micros % 1_000_000;
  return fraction === 0 ? `${date}Z` : `${date}.${String(fraction).padStart(6, '0')}Z`;
}

/**
 * Can this process write the path (`os.access(path, W_OK)`)? Asked on the calling thread, as
 * the manager's other looks (see {@link canAccessNow}).
 */
export function isWritable(osPath: string): boolean {
  return canAccessNow(osPath, fsConstants.W_OK);
}

/**
 * The fields every model has, from the item's own stats (`lstat`, as Jupyter takes them).
 * `created` is the inode change time, as Python 3.11 reports it on Linux.
 */
export async function baseModel(
  apiPath: string,
  osPath: string,
  stats: Stats,
  type: ContentsType
): Promise<ContentsModel> {
  return {
    name: baseName(apiPath),
    path: apiPath,
    type,
    writable: isWritable(osPath),
    created: formatTimestamp(stats.ctimeMs),
    last_modified: formatTimestamp(stats.mtimeMs),
    mimetype: null,
    content: null,
    format: null,
    size: type === 'directory' ? null : stats.size,
    hash: null,
    hash_algorithm: null
  };
}

/** Python's `base64.encodebytes`: base64 with a newline after every 76 characters and at the end. */
export function encodeBase64Lines(bytes: Buffer): string {
  if (bytes.length === 0) return '';
  const flat = bytes.toString('base64');
  const lines: string[] = [];
  for (let i = 0; i < flat.length; i += 76) lines.push(flat.slice(i, i + 76));
  return lines.join('\n') + '\n';
}

/**
 * Python's `base64.decodebytes`: characters outside the alphabet are dropped, but the padding
 * must be right. Returns undefined for input Python would refuse.
 */
export function decodeBase64Lenient(text: string): Buffer | undefined {
  const cleaned = text.replace(/[^A-Za-z0-9+/=]/g, '');
  const body = cleaned.replace(/=+$/, '');
  if (body.includes('=')) return undefined;
  if (body.length % 4 === 1) return undefined;
  if (cleaned.length % 4 !== 0 && body.length % 4 !== 0) return undefined;
  return Buffer.from(body, 'base64');
}

/** Does this file name denote a notebook by Jupyter's rule? */
export function isNotebookName(name: string): boolean {
  return name.endsWith('.ipynb');
}
