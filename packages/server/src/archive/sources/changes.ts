/**
 * What every source of changes (the gateway's own contents manager, Jupyter's event bus, the
 * file-system watcher, the reconciliation scan) tells the archive intake. Sources only report
 * what they saw; the intake decides, per path, what becomes a version.
 */

/** Where a change was seen first. */
export type ChangeSource = 'gateway' | 'events' | 'watcher' | 'scan';

/** Every source, in the order the status lists them. */
export const CHANGE_SOURCES: readonly ChangeSource[] = ['gateway', 'events', 'watcher', 'scan'];

/**
 * The receiving end of every source. Paths are API paths: relative to the root, `/`-separated,
 * no leading or trailing slash ('' is the root itself).
 *
 * #### Notes
 * None of these calls waits for anything or throws: a source reports and moves on, and the
 * intake settles, reads, compares and archives in its own time, in order per path. A source may
 * report a path the archive does not cover (a hidden file, a text file); the intake ignores it.
 */
export interface IChangeSink {
  /**
   * Something at `path` may have been written or created: a file, or a directory whose whole
   * subtree is then looked at.
   */
  changed(path: string, source: ChangeSource): void;

  /** `path` may be gone: a file, or a directory with everything below it. */
  removed(path: string, source: ChangeSource): void;

  /** `from` was moved to `to` (a file, or a directory with everything below it). */
  renamed(from: string, to: string, source: ChangeSource): void;

  /**
   * Changes may have been missed (a watcher's queue overflowed, a subscription dropped):
   * compare the whole tree with the index soon.
   */
  rescan(reason: string, source: ChangeSource): void;

  /**
   * Is `path` a file the sink knows already (archived or queued, its stat known, its removal not
   * reported)? A source may skip work that only matters for folders for it: the watcher's check
   * of every created path for a new folder costs an `lstat`, and a save by the gateway, a rename
   * over the old file, is reported as a create every time.
   */
  isKnownFile?(path: string): boolean;
}
