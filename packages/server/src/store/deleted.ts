import {
  DEFAULT_DELETED_LIMIT,
  DeletedListingSchema,
  MAX_DELETED_LIMIT,
  type DeletedListing,
  type DeletedNotebook
} from '@jupyter-store/contract';
import { ArchiveFilter } from '../archive/filter';
import { requestQuery, type Route } from '../gateway/assemble';
import { objectKey } from '../storage/keys';
import type { IKeyVersion } from '../storage/objectStore';
import { versionRenamedFrom, type StoreAccess } from './objects';
import { checkStorePath } from './paths';
import { parseLimitParameter } from './versionPages';

/**
 * `GET api/store/deleted[?prefix=P][&limit=N]`: the archived notebooks whose newest entry is a
 * delete marker, newest deletion first.
 *
 * #### Notes
 * Cost: one pass over the workspace's version listing (every version and delete marker below
 * `<workspace_prefix>/`, `listAllVersions`), whatever `prefix` and `limit` are, because a rename
 * out of `prefix` is told apart from a delete only by the version it wrote elsewhere; plus a
 * HEAD of each version that may have been written by the rename of a deleted path (see
 * {@link findDeleted}). Nothing is cached: the list is asked for when a user looks at it.
 */
export function deletedRoute(options: { readonly archiving: StoreAccess }): Route.Handler {
  return async (request, response) => {
    const query = requestQuery(request);
    const rawPrefix = query.getAll('prefix').at(-1);
    const prefix = rawPrefix === undefined ? '' : checkStorePath(rawPrefix, 'prefix');
    const limit = parseLimitParameter(
      query.getAll('limit').at(-1),
      DEFAULT_DELETED_LIMIT,
      MAX_DELETED_LIMIT
    );
    const listing = await findDeleted(options.archiving, { prefix, limit });
    response.json(DeletedListingSchema.parse(listing));
  };
}

/** A deleted notebook as {@link findDeleted} finds it, with its key. */
interface IDeletedKey {
  readonly key: string;
  readonly notebook: DeletedNotebook;
}

/**
 * The deleted notebooks below `prefix` (an API path, slash-aware; empty for all), newest
 * deletion first, at most `limit`, and how many more there are.
 *
 * #### Notes
 * One pass over the workspace's listing, a key's entries at a time (they come together): a key
 * is deleted when its newest entry is a delete marker and it has a version (a key of markers
 * only is left out). A rename leaves a delete marker on the old key too, just after it wrote
 * the new key's first version with `renamed-from` metadata. That version begins a run of the
 * new key's versions (the key's first, or the first after a delete marker): only such versions
 * are kept from the pass, and afterwards those written within {@link RENAME_WINDOW_MS} before a
 * marker (at most {@link MAX_RENAME_CANDIDATES}, the nearest first) are read with a HEAD, until
 * one names the deleted path. Memory: one entry per deleted key and per run of versions.
 */
export async function findDeleted(
  archiving: StoreAccess,
  options: { readonly prefix: string; readonly limit: number }
): Promise<DeletedListing> {
  const { settings, store, bucket } = archiving;
  const root = `${objectKey(settings.workspace_prefix)}/`;
  const below = options.prefix === '' ? '' : `${options.prefix}/`;
  const filter = new ArchiveFilter({
    include: settings.archive_include,
    exclude: settings.archive_exclude
  });
  const deleted: IDeletedKey[] = [];
  const runStarts: Private.IRunStart[] = [];
  const finish = (entries: IKeyVersion[]) => {
    if (entries.length === 0) return;
    const key = entries[0].key;
    runStarts.push(...Private.runStarts(entries));
    const path = key.slice(root.length);
    if (!path.startsWith(below) || !filter.covers(path)) return;
    const found = Private.deletedNotebook(path, entries);
    if (found) deleted.push({ key, notebook: found });
  };
  let entries: IKeyVersion[] = [];
  for await (const entry of store.listAllVersions(bucket, root)) {
    if (entries.length > 0 && entry.key !== entries[0].key) {
      finish(entries);
      entries = [];
    }
    entries.push(entry);
  }
  finish(entries);

  deleted.sort(
    (a, b) =>
      b.notebook.deleted_at.localeCompare(a.notebook.deleted_at) ||
      a.notebook.path.localeCompare(b.notebook.path)
  );
  runStarts.sort((a, b) => a.time - b.time);
  const heads = new Map<string, Promise<string | undefined>>();
  const renamedFrom = (start: Private.IRunStart) => {
    const id = `${start.key}\u0000${start.versionId}`;
    let head = heads.get(id);
    if (!head) {
      head = versionRenamedFrom(archiving, start.key, start.versionId);
      heads.set(id, head);
    }
    return head;
  };
  const kept: DeletedNotebook[] = [];
  let leftOut = 0;
  for (let start = 0; start < deleted.length; start += Private.HEAD_BATCH) {
    const batch = deleted.slice(start, start + Private.HEAD_BATCH);
    const renamed = await Promise.all(
      batch.map(async ({ key, notebook }) => {
        const at = Date.parse(notebook.deleted_at);
        for (const candidate of Private.candidates(runStarts, key, at)) {
          if ((await renamedFrom(candidate)) === notebook.path) return true;
        }
        return false;
      })
    );
    batch.forEach(({ notebook }, index) => {
      if (renamed[index]) return;
      if (kept.length < options.limit) kept.push(notebook);
      else leftOut++;
    });
  }
  return { deleted: kept, left_out: leftOut };
}

/** How long before its delete marker a rename may have written the new key's version. */
export const RENAME_WINDOW_MS = 10_000;

/** The most versions read (HEAD) to tell whether one delete marker was a rename's. */
export const MAX_RENAME_CANDIDATES = 4;

namespace Private {
  /** Deleted keys whose rename candidates are read at the same time. */
  export const HEAD_BATCH = 8;

  /** A version that begins a run of a key's versions: the one a rename may have written. */
  export interface IRunStart {
    readonly key: string;
    readonly versionId: string;
    readonly time: number;
  }

  /**
   * One key's entries, newest first: the latest (flagged by the store) first, then by time;
   * the sort is stable, so entries of the same time keep the store's order.
   */
  function newestFirst(entries: readonly IKeyVersion[]): IKeyVersion[] {
    return [...entries].sort(
      (a, b) =>
        Number(b.isLatest) - Number(a.isLatest) ||
        b.lastModified.getTime() - a.lastModified.getTime()
    );
  }

  /** The versions of one key that begin a run: the oldest, and each just above a marker. */
  export function runStarts(entries: readonly IKeyVersion[]): IRunStart[] {
    const ordered = newestFirst(entries);
    return ordered
      .filter((entry, index) => !entry.deleteMarker && (ordered[index + 1]?.deleteMarker ?? true))
      .map(entry => ({
        key: entry.key,
        versionId: entry.versionId,
        time: entry.lastModified.getTime()
      }));
  }

  /** The key's deleted notebook, when its newest entry is a marker above a version. */
  export function deletedNotebook(
    path: string,
    entries: readonly IKeyVersion[]
  ): DeletedNotebook | undefined {
    const marker = entries.find(entry => entry.isLatest);
    if (!marker?.deleteMarker) return undefined;
    // Each kind is listed newest first (see IObjectStore.listAllVersions).
    const last = entries.find(entry => !entry.deleteMarker);
    if (!last) return undefined;
    return {
      path,
      deleted_at: marker.lastModified.toISOString(),
      delete_marker_id: marker.versionId,
      last_version: {
        object_version_id: last.versionId,
        last_modified: last.lastModified.toISOString(),
        size: last.size
      }
    };
  }

  /**
   * The versions of other keys that begin a run, written within the window before `at` (a
   * second after too: servers that keep whole seconds may round the two differently), the
   * nearest first.
   */
  export function* candidates(
    sorted: readonly IRunStart[],
    key: string,
    at: number
  ): Generator<IRunStart> {
    let index = upperBound(sorted, at + 1000);
    let given = 0;
    while (--index >= 0 && given < MAX_RENAME_CANDIDATES) {
      const start = sorted[index];
      if (start.time < at - RENAME_WINDOW_MS) return;
      if (start.key === key) continue;
      given++;
      yield start;
    }
  }

  /** The index of the first run start later than `time`, in a list sorted by time. */
  function upperBound(sorted: readonly IRunStart[], time: number): number {
    let low = 0;
    let high = sorted.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (sorted[middle].time <= time) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}
