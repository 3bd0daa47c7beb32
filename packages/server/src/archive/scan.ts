import type { Dirent } from 'node:fs';
import * as fs from 'node:fs';
import * as path from 'node:path';
import pLimit from 'p-limit';
import type { Logger } from '../gateway/logger';
import { fileStat } from './archiveIndex';
import type { ArchiveFilter } from './filter';
import type { ArchiveIntake } from './intake';
import type { ChangeSource } from './sources/changes';

/** What the status reports of the scan. */
export interface IScanStatus {
  readonly intervalSeconds: number;
  readonly running: boolean;
  readonly lastCompletedAt: string | null;
  readonly lastDurationSeconds: number | null;
  readonly lastFileCount: number | null;
}

/**
 * The reconciliation scan: walks the root, compares each covered file's stat with what the
 * intake knows, and hands the files that differ (and the known files that are gone) to the
 * intake. It runs at start-up, every `intervalSeconds`, after a watcher or subscription lost
 * events, and on a directory that appeared.
 *
 * #### Notes
 * - An unchanged root costs one `readdir` per folder and one `lstat` per covered file, and reads
 *   no file: the same bargain as git's index. The walk uses the synchronous calls, one folder at
 *   a time, yielding to the event loop between folders (the promise API costs several times more
 *   per call for no gain here), and never descends into folders the filter ignores.
 * - Symlinks are not followed (no loops, no reads outside the root); a covered file is archived
 *   under its own path only.
 * - A full scan asked for while one runs is run once more after it, never twice at once.
 */
export class ReconciliationScan {
  constructor(options: ReconciliationScan.IOptions) {
    this._rootDir = options.rootDir;
    this._filter = options.filter;
    this._intake = options.intake;
    this._log = options.log;
    this._intervalSeconds = options.intervalSeconds;
    this._readers = pLimit(options.concurrency ?? 16);
  }

  /** Start the periodic scans (the first one is {@link run} by the caller). */
  startTimer(): void {
    this._timer = setInterval(() => void this.run('interval'), this._intervalSeconds * 1000);
    this._timer.unref();
  }

  /**
   * Scan the whole root; resolves when every difference found has been queued (not archived).
   */
  run(reason: string): Promise<void> {
    if (this._closed) return Promise.resolve();
    if (this._running) {
      this._again = true;
      this._againReason = reason;
      return this._running;
    }
    this._running = (async () => {
      try {
        await this._scan('', 'scan', reason);
        while (this._again && !this._closed) {
          this._again = false;
          await this._scan('', 'scan', this._againReason);
        }
      } finally {
        this._running = undefined;
      }
    })();
    return this._running;
  }

  /** Scan one directory's subtree (a directory created, moved in, or reported changed). */
  runSubtree(apiPath: string, source: ChangeSource): Promise<void> {
    if (this._closed) return Promise.resolve();
    return this._scan(apiPath, source, 'a directory changed').catch((error: unknown) => {
      this._log.warn({ path: apiPath, err: (error as Error).message }, 'scanning a folder failed');
    });
  }

  status(): IScanStatus {
    return {
      intervalSeconds: this._intervalSeconds,
      running: this._running !== undefined,
      lastCompletedAt: this._lastCompletedAt,
      lastDurationSeconds: this._lastDurationSeconds,
      lastFileCount: this._lastFileCount
    };
  }

  /** Stop the timer; a scan under way stops at its next folder. */
  async close(): Promise<void> {
    this._closed = true;
    if (this._timer) clearInterval(this._timer);
    await this._running?.catch(() => undefined);
  }

  private async _scan(subtree: string, source: ChangeSource, reason: string): Promise<void> {
    const started = Date.now();
    const present = new Set<string>();
    const toLook: string[] = [];
    const complete = await this._walk(subtree, present, toLook);
    if (this._closed) return;
    // Deletes first, held until the looks are done, so that a moved file pairs with its old path.
    const gone = complete
      ? this._intake.knownUnder(subtree).filter(known => !present.has(known))
      : [];
    for (const apiPath of gone) this._intake.holdDeleteUntilReleased(apiPath, source);
    await Promise.all(
      toLook.map(apiPath => this._readers(() => this._intake.look(apiPath, source)))
    );
    this._intake.releaseHeldDeletes();
    if (subtree === '' && complete) {
      this._lastCompletedAt = new Date().toISOString();
      this._lastDurationSeconds = (Date.now() - started) / 1000;
      this._lastFileCount = present.size;
      this._intake.forgetRemoteListing();
      this._log.debug(
        {
          reason,
          files: present.size,
          changed: toLook.length,
          gone: gone.length,
          ms: Date.now() - started
        },
        'scan complete'
      );
    }
  }

  /**
   * Collect the covered files below `subtree`, and those whose stat differs from the intake's.
   *
   * @returns false if the walk was cut short or the subtree's top could not be read, in which
   *   case nothing may be concluded about missing files.
   */
  private async _walk(subtree: string, present: Set<string>, toLook: string[]): Promise<boolean> {
    if (subtree !== '' && !this._filter.entersDirectory(subtree)) return false;
    const pending: string[] = [subtree];
    let first = true;
    while (pending.length > 0) {
      if (this._closed) return false;
      const directory = pending.pop()!;
      let entries: Dirent[];
      try {
        entries = fs.readdirSync(this._osPath(directory), { withFileTypes: true });
      } catch (error) {
        // The top missing or unreadable: nothing can be said about what was under it. Below it,
        // an unreadable folder's files count as missing only if it is gone (ENOENT).
        if (first) return (error as NodeJS.ErrnoException).code === 'ENOENT' && subtree !== '';
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
          for (const known of this._intake.knownUnder(directory)) present.add(known);
        }
        continue;
      }
      first = false;
      for (const entry of entries) {
        const apiPath = directory === '' ? entry.name : `${directory}/${entry.name}`;
        if (entry.isDirectory()) {
          if (this._filter.entersDirectory(apiPath)) pending.push(apiPath);
        } else if (entry.isFile() && this._filter.covers(apiPath)) {
          let stats: fs.Stats;
          try {
            stats = fs.lstatSync(this._osPath(apiPath));
          } catch {
            continue;
          }
          present.add(apiPath);
          if (this._intake.needsLook(apiPath, fileStat(stats))) toLook.push(apiPath);
        }
      }
      // Let requests through between folders.
      await new Promise<void>(resolve => setImmediate(resolve));
    }
    return true;
  }

  private _osPath(apiPath: string): string {
    return apiPath === '' ? this._rootDir : path.join(this._rootDir, ...apiPath.split('/'));
  }

  private readonly _rootDir: string;
  private readonly _filter: ArchiveFilter;
  private readonly _intake: ArchiveIntake;
  private readonly _log: Logger;
  private readonly _intervalSeconds: number;
  private readonly _readers: ReturnType<typeof pLimit>;
  private _timer: NodeJS.Timeout | undefined;
  private _running: Promise<void> | undefined;
  private _again = false;
  private _againReason = '';
  private _lastCompletedAt: string | null = null;
  private _lastDurationSeconds: number | null = null;
  private _lastFileCount: number | null = null;
  private _closed = false;
}

export namespace ReconciliationScan {
  export interface IOptions {
    rootDir: string;
    filter: ArchiveFilter;
    intake: ArchiveIntake;
    log: Logger;
    /** `archive_scan_interval_seconds`. */
    intervalSeconds: number;
    /** Files read at once; default 16. */
    concurrency?: number;
  }
}
