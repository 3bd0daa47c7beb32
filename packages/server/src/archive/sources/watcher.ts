import * as parcelWatcher from '@parcel/watcher';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import picomatch from 'picomatch';
import type { Logger } from '../../gateway/logger';
import { ArchiveFilter } from '../filter';
import type { IChangeSink } from './changes';
import { detectBlindSpots, type IBlindSpot } from './fileSystems';

/**
 * How changes made outside the gateway reach the archive: `inotify` (a native watcher; on
 * macOS and Windows the platform's own), `polling` (only the periodic scan), `off` (watching is
 * turned off; the periodic scan still runs).
 */
export type WatchMode = 'inotify' | 'polling' | 'off';

/** What the watcher reports to the status. */
export interface IWatcherStatus {
  readonly mode: WatchMode;
  /** Why the mode is not plain `inotify`, or what it misses; null when all is well. */
  readonly reason: string | null;
  /** Parts of the root (or the root itself) on file systems inotify cannot see into. */
  readonly blindSpots: readonly IBlindSpot[];
  /** Changes reported to the sink since start-up. */
  readonly seen: number;
}

/**
 * Reports changes that kernels, terminals and git make under the root to the archive intake,
 * through @parcel/watcher (its `inotify` backend on Linux, one watch per folder).
 *
 * #### Notes
 * What @parcel/watcher 2.6 does not tell (src/linux/InotifyBackend.cc), and how it is covered:
 * - **Queue overflow.** `IN_Q_OVERFLOW` is skipped without a word, so events are lost silently
 *   during a burst (seen here: 60 000 files written in 3.6 s, 74 never reported, no error).
 *   After {@link BURST_EVENTS} events within {@link BURST_WINDOW_MS}, the whole tree is
 *   rescanned once the burst is over.
 * - **Folders that arrive with subfolders.** A new folder is watched when its own create event
 *   is handled, but what it already contains is never crawled: after `mkdir -p a/b`, a `mv` or
 *   `git clone` into the root, writes in `a/b` are never reported. After renaming a folder that
 *   has subfolders, the subfolders' events carry the old path. When a created folder has a
 *   subfolder that was not reported as created too, the root is watched afresh (unsubscribe,
 *   subscribe: a full crawl) and then rescanned, since changes made in between were not seen.
 * - **The watch limit.** When `inotify_add_watch` fails with ENOSPC at subscription, the
 *   promise rejects with "inotify_add_watch on '<dir>' failed: No space left on device": the
 *   mode becomes `polling`, with a reason that names `fs.inotify.max_user_watches`. There is no
 *   retry, since each attempt would take every free watch of this user (shared with other
 *   processes) for a moment. When it fails for a folder created later, nothing is reported at
 *   all: the folder is left out, and its `create` is held back until some other event under
 *   the root is reported. New folders are looked up in this process's inotify watches
 *   (`/proc/self/fdinfo`), and those left out are named in the reason (the mode stays
 *   `inotify`: the rest is still watched).
 * - **The instance limit.** When `inotify_init1` fails (`fs.inotify.max_user_instances`
 *   reached), `subscribe` never returns: the backend thread dies before signalling that it
 *   started, and the JavaScript thread waits for that signal forever. So before subscribing, a
 *   child process checks that inotify can be used on the root (`fs.watch`); if not, `polling`.
 * - **The root removed.** Reported as a `delete` of the root, after which nothing more is: the
 *   watcher rescans and re-subscribes with backoff until the root is back.
 *
 * Events go to the sink as they come: `create`/`update` as `changed`, `delete` as `removed`,
 * for files and folders alike (a new folder is one `create`; the sink looks at its subtree).
 * Only ignored folders are pruned, here and by @parcel/watcher's `ignore`. A rename is a
 * `delete` and a `create`, in either order; a file replaced by a rename (atomic save) is a
 * `create`. Events in one batch are ordered by path, not by time.
 */
export class FileSystemWatcher {
  constructor(options: FileSystemWatcher.IOptions) {
    this._rootDir = path.resolve(options.rootDir);
    this._enabled = options.enabled;
    this._sink = options.sink;
    this._log = options.log;
    this._detect = options.detect ?? detectBlindSpots;
    this._subscribe = options.subscribe ?? parcelWatcher.subscribe;
    this._native = options.subscribe === undefined;
    this._backend = process.platform === 'linux' ? 'inotify' : undefined;
    this._backoff = { baseMs: 1000, capMs: 60_000, ...options.backoff };
  }

  /**
   * Find blind spots and subscribe. Resolves once watching, or once it fell back to polling;
   * never rejects for a watch problem (the reason is in {@link status}).
   */
  async start(): Promise<void> {
    if (this._started) return;
    this._started = true;
    if (!this._enabled) {
      this._setMode(
        'off',
        'archive_watch is off: changes made outside the gateway are found by the periodic scan'
      );
      return;
    }
    this._blindSpots = await this._detect(this._rootDir).catch((error: unknown) => {
      this._log.warn(
        { root: this._rootDir, error: messageOf(error) },
        'could not check the file systems under the root'
      );
      return [];
    });
    if (this._closed) return;
    const rootSpot = this._blindSpots.find(spot => spot.path === '');
    if (rootSpot) {
      this._setMode('polling', `${rootSpot.reason}; the periodic scan finds changes instead`);
      this._log.warn({ root: this._rootDir }, `not watching the root: ${rootSpot.reason}`);
      return;
    }
    for (const spot of this._blindSpots) {
      this._log.warn(
        { path: spot.path },
        `part of the root cannot be watched: ${spot.reason}; the periodic scan covers it`
      );
    }
    await this._watch(null);
  }

  /** The current mode, why, the blind spots, and how many changes were reported. */
  status(): IWatcherStatus {
    return {
      mode: this._mode,
      reason: this._reason,
      blindSpots: [...this._blindSpots],
      seen: this._seen
    };
  }

  /** Stop watching; no change is reported after this resolves. */
  async close(): Promise<void> {
    this._closed = true;
    this._generation++;
    for (const timer of [this._retryTimer, this._resyncTimer, this._burstTimer]) {
      if (timer) clearTimeout(timer);
    }
    const subscription = this._subscription;
    this._subscription = null;
    await this._unsubscribing;
    if (subscription) await this._unsubscribe(subscription);
    this._setMode('off', 'the watcher is closed');
  }

  /**
   * One attempt to subscribe. On success, `rescanReason` (if any) is passed on to the sink:
   * changes made while nothing watched were not seen. Never rejects.
   */
  private async _watch(rescanReason: string | null): Promise<void> {
    await this._unsubscribing;
    if (this._closed) return;
    const problem = await this._preflight();
    if (this._closed) return;
    if (problem) {
      this._failed(problem.message, problem.permanent, rescanReason);
      return;
    }
    const generation = ++this._generation;
    try {
      const subscription = await this._subscribe(
        this._rootDir,
        (error, events) => this._onEvents(generation, error, events),
        { backend: this._backend, ignore: [...ArchiveFilter.IGNORED_DIRECTORY_GLOBS] }
      );
      if (this._closed || generation !== this._generation) {
        await this._unsubscribe(subscription);
        return;
      }
      this._subscription = subscription;
      this._attempt = 0;
      this._setMode('inotify', null);
      this._log.info(
        { root: this._rootDir, backend: this._backend ?? 'default' },
        'watching the root for changes'
      );
      if (rescanReason) this._sink.rescan(rescanReason, 'watcher');
    } catch (error) {
      const message = messageOf(error);
      const limit = isWatchLimitError(message) ? await watchLimitReason(message) : null;
      this._failed(limit ?? message, limit !== null, rescanReason);
    }
  }

  /** Is the root a folder, and can inotify be used at all (checked in a child process)? */
  private async _preflight(): Promise<{ message: string; permanent: boolean } | null> {
    try {
      const stats = await fs.stat(this._rootDir);
      if (!stats.isDirectory()) {
        return { message: `the root ${this._rootDir} is not a folder`, permanent: false };
      }
    } catch (error) {
      return {
        message: `the root ${this._rootDir} cannot be read: ${messageOf(error)}`,
        permanent: false
      };
    }
    if (!this._native || this._backend !== 'inotify') return null;
    const probe = await probeInotify(this._rootDir);
    if (probe === undefined) {
      this._log.debug('could not check inotify in a child process; subscribing anyway');
      return null;
    }
    if (probe === null) return null;
    if (probe.code === 'ENOSPC') {
      return { message: await watchLimitReason(probe.message), permanent: true };
    }
    if (probe.code === 'EMFILE') {
      return { message: await instanceLimitReason(probe.message), permanent: true };
    }
    if (probe.code === 'ENOSYS') {
      return {
        message: `inotify is not available in this kernel (${probe.message}); the periodic scan finds changes instead`,
        permanent: true
      };
    }
    if (probe.code === 'ENOENT' || probe.code === 'ENOTDIR' || probe.code === 'EACCES') {
      return { message: `the root cannot be watched: ${probe.message}`, permanent: false };
    }
    return null;
  }

  /**
   * Subscribing failed: fall back to polling, for good when the cause is a limit, otherwise
   * until a retry (with backoff) succeeds.
   */
  private _failed(message: string, permanent: boolean, rescanReason: string | null): void {
    if (permanent) {
      this._setMode('polling', message);
      this._log.warn({ root: this._rootDir }, `not watching the root: ${message}`);
      return;
    }
    const delay = this._delay(this._attempt++);
    this._setMode(
      'polling',
      `watching failed (${message}); retrying, and the periodic scan finds changes meanwhile`
    );
    this._log.warn(
      { root: this._rootDir, retryInMs: Math.round(delay) },
      `watching the root failed: ${message}`
    );
    this._retryLater(delay, rescanReason ?? `watching resumed after it had failed (${message})`);
  }

  /** The subscription is gone (an error, the root removed): rescan, and subscribe again. */
  private async _lost(message: string): Promise<void> {
    if (this._closed) return;
    this._generation++;
    const subscription = this._subscription;
    this._subscription = null;
    if (subscription) this._unsubscribing = this._unsubscribe(subscription);
    this._sink.rescan(message, 'watcher');
    if (isWatchLimitError(message)) {
      this._failed(await watchLimitReason(message), true, null);
      return;
    }
    const delay = this._delay(this._attempt++);
    this._setMode(
      'polling',
      `${message}; re-subscribing, and the periodic scan finds changes meanwhile`
    );
    this._log.warn({ root: this._rootDir, retryInMs: Math.round(delay) }, message);
    this._retryLater(delay, `watching resumed after: ${message}`);
  }

  private _retryLater(delay: number, rescanReason: string): void {
    if (this._closed) return;
    if (this._retryTimer) clearTimeout(this._retryTimer);
    this._retryTimer = setTimeout(() => {
      this._retryTimer = undefined;
      void this._watch(rescanReason);
    }, delay);
    this._retryTimer.unref();
  }

  /**
   * Watch the root afresh (a full crawl adds the watches @parcel/watcher missed), then rescan.
   * Requests are merged; while they keep coming (a `pip install` into a folder under the
   * root), they are spaced out from 2 s up to a minute, since each costs a crawl and a rescan.
   */
  private _resync(why: string): void {
    if (this._closed || this._resyncTimer) return;
    const now = Date.now();
    if (now - this._lastResync > RESYNC_MAX_INTERVAL_MS) this._resyncsInARow = 0;
    const interval = Math.min(
      RESYNC_MAX_INTERVAL_MS,
      RESYNC_MIN_INTERVAL_MS * 2 ** Math.min(this._resyncsInARow, 10)
    );
    const wait = Math.max(RESYNC_DELAY_MS, this._lastResync + interval - now);
    this._resyncTimer = setTimeout(() => {
      this._resyncTimer = undefined;
      const subscription = this._subscription;
      if (this._closed || !subscription) return;
      this._lastResync = Date.now();
      this._resyncsInARow++;
      this._log.info({ root: this._rootDir }, `watching the root afresh: ${why}`);
      this._generation++;
      this._subscription = null;
      this._unsubscribing = this._unsubscribe(subscription);
      void this._watch(
        `the root was watched afresh (${why}): changes made meanwhile may have been missed`
      );
    }, wait);
    this._resyncTimer.unref();
  }

  /** @parcel/watcher's callback; an exception here would kill the process, so none escapes. */
  private _onEvents(
    generation: number,
    error: Error | null,
    events: readonly parcelWatcher.Event[]
  ): void {
    if (this._closed) return;
    try {
      if (error) {
        if (generation === this._generation) {
          void this._lost(`the file-system watcher failed: ${error.message}`);
        }
        return;
      }
      let rootGone = false;
      const created: string[] = [];
      for (const event of events) {
        const apiPath = this._apiPath(event.path);
        if (apiPath === undefined) continue;
        if (apiPath === '') {
          if (event.type === 'delete') rootGone = true;
          continue;
        }
        if (this._inIgnoredDirectory(apiPath)) continue;
        this._seen++;
        if (event.type === 'delete') {
          this._sink.removed(apiPath, 'watcher');
        } else {
          // A known file is no new folder (see _checkNewFolders): the gateway's saves, renamed
          // over their files, are reported as creates every time.
          const known = event.type === 'create' && this._sink.isKnownFile?.(apiPath) === true;
          this._sink.changed(apiPath, 'watcher');
          if (event.type === 'create' && !known) created.push(apiPath);
        }
      }
      this._countForBursts(events.length);
      if (rootGone && generation === this._generation) {
        void this._lost(`the root ${this._rootDir} was removed or moved away`);
        return;
      }
      if (created.length > 0 && this._native && this._backend === 'inotify') {
        void this._checkNewFolders(created).catch((failure: unknown) =>
          this._log.debug({ error: messageOf(failure) }, 'could not check new folders')
        );
      }
    } catch (failure) {
      this._log.error({ error: messageOf(failure) }, 'handling file-system events failed');
    }
  }

  /**
   * Cover what @parcel/watcher misses about new folders: subfolders that were there before the
   * folder was watched (watch afresh), and folders whose watch failed (say so).
   *
   * #### Notes
   * Each created path costs an `lstat` (is it a folder?), so paths the sink knows as files are
   * not passed here: a folder can only take a known file's path after the file's removal, whose
   * report makes the path unknown (see {@link IChangeSink.isKnownFile}); a removal and a create
   * in one batch are reported as an update, which this never checked.
   */
  private async _checkNewFolders(created: readonly string[]): Promise<void> {
    const now = Date.now();
    for (const apiPath of created) this._recentCreates.set(apiPath, now);
    for (const [apiPath, at] of this._recentCreates) {
      if (now - at > RECENT_CREATE_MS) this._recentCreates.delete(apiPath);
    }
    // Let the next batches arrive (a subfolder made after its parent was watched is reported
    // in one of them), and @parcel/watcher's thread add the watches of what it reported.
    await sleep(CHECK_DELAY_MS);
    // A crawl that started since these events came covers them.
    if (this._closed || this._mode !== 'inotify' || this._lastResync >= now) return;
    const folders: { apiPath: string; ino: number; dev: number }[] = [];
    for (const apiPath of created.slice(0, MAX_PATHS_CHECKED)) {
      const stats = await fs.lstat(this._absolute(apiPath)).catch(() => undefined);
      if (!stats?.isDirectory()) continue;
      const missed = await this._unreportedSubfolder(apiPath);
      if (missed !== undefined) {
        this._resync(`${missed} was there before its parent folder was watched`);
        return;
      }
      folders.push({ apiPath, ino: stats.ino, dev: stats.dev });
    }
    if (folders.length === 0) return;
    const watched = await watchedInodes();
    if (!watched || this._closed || this._mode !== 'inotify') return;
    const unwatched: string[] = [];
    for (const folder of folders) {
      if (watched.has(inodeKey(folder.ino, folder.dev))) continue;
      // Gone or replaced meanwhile: nothing to watch there, or a create event of its own.
      const stats = await fs.lstat(this._absolute(folder.apiPath)).catch(() => undefined);
      if (stats?.isDirectory() && stats.ino === folder.ino) unwatched.push(folder.apiPath);
    }
    if (unwatched.length === 0) return;
    const reason =
      `new folders are not watched (${unwatched.slice(0, 5).join(', ')}${unwatched.length > 5 ? ', …' : ''}): ` +
      `@parcel/watcher could not add their inotify watches and does not say why; the usual cause ` +
      `is the watch limit (${await watchLimitText()}, shared by every process of this user). ` +
      `The periodic scan covers them; raise the limit and restart to watch them.`;
    this._reason = reason;
    this._log.warn({ root: this._rootDir, folders: unwatched }, reason);
  }

  /**
   * A subfolder of a new folder that was not reported as created itself (so @parcel/watcher
   * never watched it), or undefined.
   */
  private async _unreportedSubfolder(apiPath: string): Promise<string | undefined> {
    const entries = await fs
      .readdir(this._absolute(apiPath), { withFileTypes: true })
      .catch(() => []);
    for (const entry of entries) {
      if (!entry.isDirectory()) continue;
      const child = `${apiPath}/${entry.name}`;
      if (this._inIgnoredDirectory(child)) continue;
      if (!this._recentCreates.has(child)) return child;
    }
    return undefined;
  }

  private _absolute(apiPath: string): string {
    return path.join(this._rootDir, ...apiPath.split('/'));
  }

  /**
   * A burst may have overflowed the kernel's queue unnoticed: once {@link BURST_EVENTS} events
   * came within {@link BURST_WINDOW_MS}, rescan when they stop coming.
   */
  private _countForBursts(count: number): void {
    const now = Date.now();
    if (now - this._windowStart > BURST_WINDOW_MS) {
      this._windowStart = now;
      this._windowEvents = 0;
    }
    this._windowEvents += count;
    if (this._windowEvents < BURST_EVENTS && !this._burstTimer) return;
    this._burstEvents += count;
    if (this._burstTimer) clearTimeout(this._burstTimer);
    this._burstTimer = setTimeout(() => {
      this._burstTimer = undefined;
      const total = this._burstEvents;
      this._burstEvents = 0;
      this._windowEvents = 0;
      if (this._closed) return;
      this._sink.rescan(
        `a burst of ${total} changes may have overflowed the inotify queue, which @parcel/watcher drops silently`,
        'watcher'
      );
    }, BURST_QUIET_MS);
    this._burstTimer.unref();
  }

  /** The API path of an event's path; '' for the root, undefined outside it. */
  private _apiPath(eventPath: string): string | undefined {
    const relative = path.relative(this._rootDir, eventPath);
    if (relative === '') return '';
    if (relative === '..' || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative)) {
      return undefined;
    }
    return relative.split(path.sep).join('/');
  }

  /** Is the path, or a folder above it, one that no watcher needs to see into? */
  private _inIgnoredDirectory(apiPath: string): boolean {
    const parts = apiPath.split('/');
    for (let end = 1; end <= parts.length; end++) {
      if (IGNORED(parts.slice(0, end).join('/'))) return true;
    }
    return false;
  }

  private async _unsubscribe(subscription: parcelWatcher.AsyncSubscription): Promise<void> {
    await subscription.unsubscribe().catch((error: unknown) => {
      this._log.debug({ error: messageOf(error) }, 'unsubscribing the watcher failed');
    });
  }

  private _setMode(mode: WatchMode, reason: string | null): void {
    this._mode = mode;
    this._reason = reason;
  }

  /** Full jitter: a random delay up to the capped exponential bound. */
  private _delay(attempt: number): number {
    const bound = Math.min(this._backoff.capMs, this._backoff.baseMs * 2 ** Math.min(attempt, 30));
    return Math.random() * bound;
  }

  private readonly _rootDir: string;
  private readonly _enabled: boolean;
  private readonly _sink: IChangeSink;
  private readonly _log: Logger;
  private readonly _detect: (rootDir: string) => Promise<IBlindSpot[]>;
  private readonly _subscribe: typeof parcelWatcher.subscribe;
  /** The real @parcel/watcher (not an injected one): inotify-specific checks apply. */
  private readonly _native: boolean;
  private readonly _backend: parcelWatcher.BackendType | undefined;
  private readonly _backoff: { baseMs: number; capMs: number };
  /** Folders reported as created lately (API path → ms), to tell missed subfolders. */
  private readonly _recentCreates = new Map<string, number>();
  private _subscription: parcelWatcher.AsyncSubscription | null = null;
  /** The unsubscription under way, awaited before subscribing again (same root, same key). */
  private _unsubscribing: Promise<void> = Promise.resolve();
  /** Bumped whenever a subscription is dropped: its late errors are ignored. */
  private _generation = 0;
  private _mode: WatchMode = 'polling';
  private _reason: string | null = 'the watcher has not started';
  private _blindSpots: IBlindSpot[] = [];
  private _seen = 0;
  private _attempt = 0;
  /** Events in the current burst window, and in the burst under way (if any). */
  private _windowStart = 0;
  private _windowEvents = 0;
  private _burstEvents = 0;
  private _lastResync = 0;
  private _resyncsInARow = 0;
  private _retryTimer: NodeJS.Timeout | undefined;
  private _resyncTimer: NodeJS.Timeout | undefined;
  private _burstTimer: NodeJS.Timeout | undefined;
  private _started = false;
  private _closed = false;
}

export namespace FileSystemWatcher {
  export interface IOptions {
    /** The root: the contents manager's root directory. */
    rootDir: string;
    /** `archive_watch`; when false the mode is `off` and nothing is subscribed. */
    enabled: boolean;
    sink: IChangeSink;
    log: Logger;
    /** Blind-spot detection (tests); default {@link detectBlindSpots}. */
    detect?: (rootDir: string) => Promise<IBlindSpot[]>;
    /**
     * @parcel/watcher's `subscribe` (tests). When given, the inotify-specific checks (the
     * child-process probe, new-folder checks) are skipped.
     */
    subscribe?: typeof parcelWatcher.subscribe;
    /** Re-subscription delays: the first bound and the cap (ms); default 1 s and 60 s. */
    backoff?: { baseMs?: number; capMs?: number };
  }
}

/** This many events within {@link BURST_WINDOW_MS} may come with a lost overflow. */
export const BURST_EVENTS = 1000;
export const BURST_WINDOW_MS = 1000;

/**
 * Can this user use inotify on `rootDir` at all? Checked in a child process (`fs.watch`), so
 * that a failing `inotify_init1` cannot block this one (see {@link FileSystemWatcher}).
 *
 * @returns null when it can; the error's code and message when it cannot (`EMFILE`: the
 * instance limit, `ENOSPC`: the watch limit); undefined when the check itself failed.
 */
export function probeInotify(
  rootDir: string,
  timeoutMs = 10_000
): Promise<{ code: string; message: string } | null | undefined> {
  return new Promise(resolve => {
    let output = '';
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(process.execPath, ['-e', PROBE_SCRIPT, rootDir], {
        stdio: ['ignore', 'pipe', 'ignore'],
        env: { ...process.env, NODE_OPTIONS: '' },
        timeout: timeoutMs
      });
    } catch {
      resolve(undefined);
      return;
    }
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.on('error', () => resolve(undefined));
    child.on('close', code => {
      if (code === 0 && output.trim() === 'ok') {
        resolve(null);
        return;
      }
      try {
        const failure = JSON.parse(output) as { code?: unknown; message?: unknown };
        resolve({ code: String(failure.code ?? 'UNKNOWN'), message: String(failure.message) });
      } catch {
        resolve(undefined);
      }
    });
  });
}

/** The child's script: create an inotify instance and one watch, on the root. */
const PROBE_SCRIPT = `
try {
  require('fs').watch(process.argv[1]).close();
  process.stdout.write('ok');
} catch (error) {
  process.stdout.write(JSON.stringify({ code: error.code, message: error.message }));
  process.exitCode = 3;
}`;

/** ENOSPC from inotify_add_watch, as @parcel/watcher or Node word it. */
function isWatchLimitError(message: string): boolean {
  return /ENOSPC|No space left on device|limit for number of file watchers/i.test(message);
}

async function watchLimitReason(detail: string): Promise<string> {
  return (
    `the inotify watch limit is reached: ${await watchLimitText()}, one watch per folder, ` +
    `shared by every process of this user (${detail}). The periodic scan finds changes ` +
    `instead. To watch, raise it on the host, e.g. ` +
    `"sudo sysctl -w fs.inotify.max_user_watches=524288" and the same line in /etc/sysctl.d/ ` +
    `(on Kubernetes: on the node), then restart.`
  );
}

/** "fs.inotify.max_user_watches is 8192", and a user namespace's lower limit if any. */
async function watchLimitText(): Promise<string> {
  const limit = await readProcNumber('/proc/sys/fs/inotify/max_user_watches');
  const inNamespace = await readProcNumber('/proc/sys/user/max_inotify_watches');
  const namespaceNote =
    inNamespace !== undefined && limit !== undefined && inNamespace < limit
      ? ` (this user namespace allows ${inNamespace}: /proc/sys/user/max_inotify_watches)`
      : '';
  return `fs.inotify.max_user_watches is ${limit ?? 'unknown'}${namespaceNote}`;
}

async function instanceLimitReason(detail: string): Promise<string> {
  const limit = await readProcNumber('/proc/sys/fs/inotify/max_user_instances');
  const inNamespace = await readProcNumber('/proc/sys/user/max_inotify_instances');
  const namespaceNote =
    inNamespace !== undefined && limit !== undefined && inNamespace < limit
      ? ` (this user namespace allows ${inNamespace}: /proc/sys/user/max_inotify_instances)`
      : '';
  return (
    `the inotify instance limit is reached: fs.inotify.max_user_instances is ` +
    `${limit ?? 'unknown'}${namespaceNote}, shared by every process of this user (${detail}). ` +
    `The periodic scan finds changes instead. To watch, raise it on the host, e.g. ` +
    `"sudo sysctl -w fs.inotify.max_user_instances=1024" and the same line in /etc/sysctl.d/ ` +
    `(on Kubernetes: on the node), then restart.`
  );
}

async function readProcNumber(file: string): Promise<number | undefined> {
  try {
    const value = Number((await fs.readFile(file, 'utf8')).trim());
    return Number.isFinite(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The inodes this process watches with inotify, as `ino:sdev` keys (from each inotify file
 * descriptor's `/proc/self/fdinfo`), or undefined when that cannot be read.
 */
async function watchedInodes(): Promise<Set<string> | undefined> {
  let descriptors: string[];
  try {
    descriptors = await fs.readdir('/proc/self/fd');
  } catch {
    return undefined;
  }
  const keys = new Set<string>();
  let found = false;
  for (const fd of descriptors) {
    const target = await fs.readlink(`/proc/self/fd/${fd}`).catch(() => '');
    if (target !== 'anon_inode:inotify') continue;
    const info = await fs.readFile(`/proc/self/fdinfo/${fd}`, 'utf8').catch(() => '');
    for (const match of info.matchAll(/^inotify wd:\S+ ino:([0-9a-f]+) sdev:([0-9a-f]+)/gm)) {
      found = true;
      keys.add(`${match[1]}:${match[2]}`);
    }
  }
  return found ? keys : undefined;
}

/**
 * fdinfo's key for an inode: `ino` in hex, and the device in the kernel's internal encoding
 * (major << 20 | minor), where `stat` gives the user-space one.
 */
function inodeKey(ino: number, dev: number): string {
  const major = (dev >>> 8) & 0xfff;
  const minor = (dev & 0xff) | ((dev >>> 12) & 0xfff00);
  return `${ino.toString(16)}:${((major << 20) | minor).toString(16)}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function sleep(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}

const IGNORED = picomatch([...ArchiveFilter.IGNORED_DIRECTORY_GLOBS], { dot: true });

/** How long after a burst's last batch the rescan is asked for (ms). */
const BURST_QUIET_MS = 1000;
/** Merge requests to watch afresh (ms), and space them out (ms). */
const RESYNC_DELAY_MS = 200;
const RESYNC_MIN_INTERVAL_MS = 2000;
const RESYNC_MAX_INTERVAL_MS = 60_000;
/** How long a reported folder create counts as "reported" for its parent's check (ms). */
const RECENT_CREATE_MS = 10_000;
/** Created paths checked per batch (a `git clone` makes thousands; one resync covers them). */
const MAX_PATHS_CHECKED = 200;
/** Wait before checking new folders (ms): longer than @parcel/watcher's 50 ms debounce. */
const CHECK_DELAY_MS = 300;
