import type { ArchiveStatus, BlindSpot, StoreInfo } from '@jupyter-store/contract';
import { DOMUtils } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Signal, type ISignal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import { errorMessage, formatBytes, formatDuration, formatTime } from './format';
import { Dom } from './forms';
import type { StoreClient } from './storeClient';

/** How often the status is asked for while a save waits to be archived. */
const FAST_POLL_MS = 500;
/** How long, after a save, the status is polled fast. */
const FAST_POLL_FOR_MS = 20_000;

/**
 * The store's feature detection answer, kept fresh: asked for every `intervalMs`, and every
 * half second after a save (or a delete) until nothing is pending and the workspace usage
 * counts the last archive write.
 *
 * #### Notes
 * These are background polls: sent with `no_track_activity`, so that they do not count as the
 * user's activity (JupyterHub's idle culler), and not sent at all while the page is hidden
 * (another tab, a minimised window); the status is asked for at once when it is shown again.
 */
export class ArchiveStatusModel {
  /**
   * @param client - the store API.
   * @param info - the answer feature detection already got.
   * @param intervalMs - the normal polling interval.
   */
  constructor(
    private readonly _client: StoreClient,
    info: StoreInfo,
    intervalMs: number
  ) {
    this._info = info;
    this._intervalMs = intervalMs;
    document.addEventListener('visibilitychange', this._onVisibility);
    this._schedule(intervalMs);
  }

  /** The last answer. */
  get info(): StoreInfo {
    return this._info;
  }

  /** Why the last refresh failed, or null. */
  get error(): string | null {
    return this._error;
  }

  /** Emitted after every refresh. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Set a new normal polling interval. */
  set intervalMs(value: number) {
    this._intervalMs = value;
    this._schedule(this._fastUntil > Date.now() ? FAST_POLL_MS : value);
  }

  /** Ask now. */
  async refresh(): Promise<void> {
    if (this._disposed) return;
    try {
      this._info = await this._client.info({ background: true });
      this._error = null;
    } catch (error) {
      this._error = errorMessage(error);
    }
    if (this._disposed) return;
    this._changed.emit();
    const pending = this._info.archive?.pending ?? 0;
    const fast =
      this._fastUntil > Date.now() &&
      (pending > 0 || this._error !== null || usageBehind(this._info));
    if (!fast) this._fastUntil = 0;
    this._schedule(fast ? FAST_POLL_MS : this._intervalMs);
  }

  /**
   * A save (or a delete) happened: follow its archiving closely until nothing is pending and
   * the usage counts it.
   */
  watchSave(): void {
    this._fastUntil = Date.now() + FAST_POLL_FOR_MS;
    this._schedule(FAST_POLL_MS);
  }

  dispose(): void {
    this._disposed = true;
    window.clearTimeout(this._timer);
    document.removeEventListener('visibilitychange', this._onVisibility);
    Signal.clearData(this);
  }

  /** The next poll in `ms`; none while the page is hidden (it is scheduled when shown). */
  private _schedule(ms: number): void {
    window.clearTimeout(this._timer);
    if (this._disposed) return;
    if (document.visibilityState === 'hidden') {
      this._hiddenDue = true;
      return;
    }
    this._timer = window.setTimeout(() => void this.refresh(), ms);
  }

  private readonly _onVisibility = (): void => {
    if (document.visibilityState === 'hidden' || !this._hiddenDue) return;
    this._hiddenDue = false;
    void this.refresh();
  };

  private _info: StoreInfo;
  private _error: string | null = null;
  private _intervalMs: number;
  private _fastUntil = 0;
  private _timer = 0;
  /** A poll fell due while the page was hidden. */
  private _hiddenDue = false;
  private _disposed = false;
  private readonly _changed = new Signal<this, void>(this);
}

/** What the status bar says, and whether it is a warning. */
export interface IArchiveSummary {
  text: string;
  /** The longer explanation (tooltip and status dialog). */
  detail: string;
  warning: boolean;
}

/**
 * Put the archive state in a few words. In order: the status cannot be read, archiving is off,
 * archiving fails, the watcher misses changes (polling, or blind spots), saves are pending, all
 * is archived. Servers that do not report `observation` never get the watcher's warning.
 */
export function summarize(
  info: StoreInfo,
  error: string | null,
  trans: TranslationBundle
): IArchiveSummary {
  if (error !== null) {
    return {
      text: trans.__('Archive: status unknown'),
      detail: trans.__('The archive status could not be read: %1', error),
      warning: true
    };
  }
  const archive = info.archive;
  if (!info.features.archive_valid || archive === null) {
    const reason =
      info.reasons.archive_valid ?? info.reasons.store_valid ?? trans.__('no reason given');
    return {
      text: trans.__('Archive off'),
      detail: trans.__('Saves are not archived: %1', reason),
      warning: true
    };
  }
  const last = archive.last_archived_at
    ? trans.__('last archived %1', formatTime(archive.last_archived_at))
    : trans.__('nothing archived yet');
  if (archive.last_error) {
    return {
      text: trans._n('Archive failing: %1 pending', 'Archive failing: %1 pending', archive.pending),
      detail: trans.__(
        'Archiving failed (%1): %2. Saves wait on the server and are retried; %3.',
        formatTime(archive.last_error.at),
        archive.last_error.message,
        last
      ),
      warning: true
    };
  }
  const queue =
    archive.pending > 0
      ? trans.__('%1 saves wait to be archived; %2.', archive.pending, last)
      : trans.__('Every save is archived; %1.', last);
  const observation = archive.observation;
  if (observation?.watcher.mode === 'polling') {
    return {
      text: trans.__('Archive: scan only'),
      detail: trans.__(
        'The files are not watched, so changes that do not go through Jupyter (files written by a kernel, a terminal, git) are found only by the periodic scan, %1. Why: %2. %3',
        scanEvery(observation.scan.interval_seconds, trans),
        observation.watcher.reason ?? trans.__('no reason given'),
        queue
      ),
      warning: true
    };
  }
  const spots = observation?.blind_spots ?? [];
  if (observation && spots.length > 0) {
    return {
      text: trans._n('Archive: blind spot', 'Archive: %1 blind spots', spots.length),
      detail: trans._n(
        'The file watcher cannot see changes in %2: they are found only by the periodic scan, %3. %4',
        'The file watcher cannot see changes in %1 places: they are found only by the periodic scan, %3. %4',
        spots.length,
        blindSpotPlace(spots[0], trans),
        scanEvery(observation.scan.interval_seconds, trans),
        queue
      ),
      warning: true
    };
  }
  if (archive.pending > 0) {
    return {
      text: trans._n('Archiving: %1 pending', 'Archiving: %1 pending', archive.pending),
      detail: queue,
      warning: false
    };
  }
  return {
    text: archive.last_archived_at
      ? trans.__('Archived %1', new Date(archive.last_archived_at).toLocaleTimeString())
      : trans.__('Archive ready'),
    detail: queue,
    warning: false
  };
}

/**
 * What the workspace holds, in one line: "Workspace: 1,234 versions of 56 notebooks, 12.3 MB";
 * null when the server does not report it (older servers, archiving off, not measured yet).
 */
export function usageText(info: StoreInfo, trans: TranslationBundle): string | null {
  const usage = info.usage;
  if (!usage) return null;
  const count = (value: number) => value.toLocaleString();
  return trans.__(
    'Workspace: %1, %2',
    trans._n(
      '%2 version of %3 notebook',
      '%2 versions of %3 notebooks',
      usage.versions,
      count(usage.versions),
      count(usage.objects)
    ),
    formatBytes(usage.bytes, trans)
  );
}

/** Whether the usage was measured before the archive's last write, which it may not count. */
function usageBehind(info: StoreInfo): boolean {
  const archived = info.archive?.last_archived_at;
  return !!info.usage && !!archived && Date.parse(archived) > Date.parse(info.usage.measured_at);
}

/** "every 60 seconds": how often the reconciliation scan runs. */
function scanEvery(seconds: number, trans: TranslationBundle): string {
  return trans._n('every second', 'every %1 seconds', seconds);
}

/** Where a blind spot is: its path, or "the whole root". */
function blindSpotPlace(spot: BlindSpot, trans: TranslationBundle): string {
  return spot.path === '' ? trans.__('the whole root') : spot.path;
}

/** A `<dt>`/`<dd>` pair of a facts list; `off` marks the value as a reduced state. */
function addFact(list: HTMLElement, label: string, value: string | Node, off = false): void {
  list.appendChild(Dom.element('dt', undefined, label));
  const dd = Dom.element('dd', off ? 'jp-store-Off' : undefined);
  dd.append(value);
  list.appendChild(dd);
}

/** The per-source counts in one line: "gateway 4 / 4, events 1 / 0, watcher 2 / 1, scan 0 / 0". */
function sourceCounts(
  sources: NonNullable<ArchiveStatus['sources']>,
  trans: TranslationBundle
): string {
  return [
    trans.__('gateway %1 / %2', sources.gateway.seen, sources.gateway.archived),
    trans.__('events %1 / %2', sources.events.seen, sources.events.archived),
    trans.__('watcher %1 / %2', sources.watcher.seen, sources.watcher.archived),
    trans.__('scan %1 / %2', sources.scan.seen, sources.scan.archived)
  ].join(trans.__(', '));
}

/**
 * The status dialog's section on how changes are observed: the file watcher, the Jupyter event
 * subscription, the periodic scan, the blind spots, and the changes each source saw and got
 * archived. Null when the server does not say (older servers, archiving off).
 */
export function observationSection(info: StoreInfo, trans: TranslationBundle): HTMLElement | null {
  const archive = info.archive;
  if (!archive || (!archive.observation && !archive.sources)) return null;
  const section = Dom.element('section', 'jp-store-Observation');
  const heading = Dom.element('h3', undefined, trans.__('How changes are seen'));
  heading.id = DOMUtils.createDomID();
  // (Inline: the stylesheet is not this module's.)
  section.setAttribute('aria-labelledby', heading.id);
  section.appendChild(heading);
  const facts = Dom.element('dl', 'jp-store-Facts');
  const observation = archive.observation;
  if (observation) {
    const { watcher, events, scan, blind_spots: spots } = observation;
    const mode =
      watcher.mode === 'inotify'
        ? trans.__('inotify')
        : watcher.mode === 'polling'
          ? trans.__('polling')
          : trans.__('off');
    addFact(
      facts,
      trans.__('File watcher'),
      watcher.reason === null ? mode : trans.__('%1: %2', mode, watcher.reason),
      watcher.mode !== 'inotify'
    );
    addFact(
      facts,
      trans.__('Jupyter events'),
      events.connected
        ? trans.__('connected')
        : trans.__('not connected: %1', events.reason ?? trans.__('no reason given')),
      !events.connected
    );
    const every = scanEvery(scan.interval_seconds, trans);
    const parts = [every];
    if (scan.last_completed_at === null) {
      parts.push(trans.__('no complete scan yet'));
    } else {
      const at = formatTime(scan.last_completed_at);
      let done =
        scan.last_duration_seconds === null
          ? trans.__('last completed %1', at)
          : trans.__(
              'last completed %1 in %2',
              at,
              formatDuration(scan.last_duration_seconds, trans)
            );
      if (scan.last_file_count !== null) {
        done = trans._n('%2 (%1 notebook)', '%2 (%1 notebooks)', scan.last_file_count, done);
      }
      parts.push(done);
    }
    if (scan.running) parts.push(trans.__('scanning now'));
    addFact(facts, trans.__('Periodic scan'), parts.join(trans.__('; ')));
    if (spots.length > 0) {
      const where = document.createDocumentFragment();
      const list = Dom.element('ul', 'jp-store-BlindSpots');
      for (const spot of spots) {
        const item = Dom.element('li');
        item.append(
          spot.path === ''
            ? Dom.element('strong', undefined, blindSpotPlace(spot, trans))
            : Dom.element('code', undefined, spot.path),
          trans.__(': %1', spot.reason)
        );
        list.appendChild(item);
      }
      where.append(
        list,
        trans._n(
          'Changes there are found by the periodic scan, every second.',
          'Changes there are found by the periodic scan, every %1 seconds.',
          scan.interval_seconds
        )
      );
      addFact(facts, trans._n('Blind spot', 'Blind spots', spots.length), where, true);
    }
  }
  if (archive.sources) {
    addFact(facts, trans.__('Changes seen / archived'), sourceCounts(archive.sources, trans));
  }
  section.appendChild(facts);
  return section;
}

/**
 * The status bar item: pending count and time of the last archive, or a warning with the
 * reason when archiving fails or is off, or when the file watcher misses changes somewhere (the
 * periodic scan finds them, later). Activating it (click, Enter or Space) runs `onActivate`.
 */
export class ArchiveStatusItem extends Widget {
  constructor(
    private readonly _model: ArchiveStatusModel,
    private readonly _trans: TranslationBundle,
    onActivate: () => void
  ) {
    super();
    this.addClass('jp-store-StatusItem');
    this.node.tabIndex = 0;
    this.node.setAttribute('role', 'button');
    this._model.changed.connect(this._update, this);
    this.node.addEventListener('click', onActivate);
    this.node.addEventListener('keydown', event => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        onActivate();
      }
    });
    this._update();
  }

  private _update(): void {
    const summary = summarize(this._model.info, this._model.error, this._trans);
    this.node.textContent = summary.warning ? `⚠ ${summary.text}` : summary.text;
    this.node.title = summary.detail;
    this.node.setAttribute('aria-label', `${summary.text}. ${summary.detail}`);
    this.toggleClass('jp-mod-warning', summary.warning);
  }
}
