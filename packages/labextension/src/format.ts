import { PathExt } from '@jupyterlab/coreutils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { StoreRequestError } from './request';

/** A byte count as people read it: `812 B`, `4.2 KB`, `1.3 MB` (powers of 1024). */
export function formatBytes(bytes: number, trans: TranslationBundle): string {
  if (bytes < 1024) return trans.__('%1 B', bytes);
  const units = [trans.__('KB'), trans.__('MB'), trans.__('GB'), trans.__('TB')];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** A timestamp in the reader's locale and time zone, to the second. */
export function formatTime(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit'
  });
}

/** A duration as people read it: `12 ms`, `4.2 s`, `35 s`, `3 min 5 s`, `2 h 10 min`. */
export function formatDuration(seconds: number, trans: TranslationBundle): string {
  if (seconds < 1) return trans.__('%1 ms', Math.round(seconds * 1000));
  if (seconds < 10) return trans.__('%1 s', seconds.toFixed(1));
  const whole = Math.round(seconds);
  if (whole < 60) return trans.__('%1 s', whole);
  if (whole < 3600) return trans.__('%1 min %2 s', Math.floor(whole / 60), whole % 60);
  return trans.__('%1 h %2 min', Math.floor(whole / 3600), Math.floor((whole % 3600) / 60));
}

/** What to tell the user about a failed call: the server's message, else the error's. */
export function errorMessage(error: unknown): string {
  if (error instanceof StoreRequestError) return error.message;
  if (error instanceof Error) return error.message;
  return String(error);
}

/** `dir/name.ext` in `dir` (the root when `dir` is empty). */
export function joinPath(dir: string, name: string): string {
  return dir === '' ? name : PathExt.join(dir, name);
}

/** The last segment of a key or path (`a/b/c.ipynb` → `c.ipynb`), without trailing slashes. */
export function lastSegment(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  return trimmed.slice(trimmed.lastIndexOf('/') + 1);
}

/**
 * A file name for a copy of `path` made at `when`: `analysis.ipynb` →
 * `analysis-2026-11-22-103455.ipynb`, in the same directory.
 */
export function datedSibling(path: string, when: string, label = ''): string {
  const dir = PathExt.dirname(path);
  const ext = PathExt.extname(path);
  const stem = PathExt.basename(path, ext);
  const date = new Date(when);
  const stamp = Number.isNaN(date.getTime())
    ? 'version'
    : date
        .toISOString()
        .replace(/\.\d+Z$/, '')
        .replace('T', '-')
        .replace(/:/g, '');
  return joinPath(dir, `${stem}-${label ? `${label}-` : ''}${stamp}${ext}`);
}
