import type { StoreInfo } from '@jupyter-store/contract';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Signal, type ISignal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import { errorMessage, formatTime } from './format';
import type { StoreClient } from './storeClient';

/** How often the status is asked for while a save waits to be archived. */
const FAST_POLL_MS = 500;
/** How long, after a save, the status is polled fast. */
const FAST_POLL_FOR_MS = 20_000;

/**
 * The store's feature detection answer, kept fresh: asked for every `intervalMs`, and every
 * half second after a save until nothing is pending.
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
      this._info = await this._client.info();
      this._error = null;
    } catch (error) {
      this._error = errorMessage(error);
    }
    if (this._disposed) return;
    this._changed.emit();
    const pending = this._info.archive?.pending ?? 0;
    const fast = this._fastUntil > Date.now() && (pending > 0 || this._error !== null);
    if (!fast) this._fastUntil = 0;
    this._schedule(fast ? FAST_POLL_MS : this._intervalMs);
  }

  /** A save happened: follow its archiving closely until nothing is pending. */
  watchSave(): void {
    this._fastUntil = Date.now() + FAST_POLL_FOR_MS;
    this._schedule(FAST_POLL_MS);
  }

  dispose(): void {
    this._disposed = true;
    window.clearTimeout(this._timer);
    Signal.clearData(this);
  }

  private _schedule(ms: number): void {
    window.clearTimeout(this._timer);
    if (this._disposed) return;
    this._timer = window.setTimeout(() => void this.refresh(), ms);
  }

  private _info: StoreInfo;
  private _error: string | null = null;
  private _intervalMs: number;
  private _fastUntil = 0;
  private _timer = 0;
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

/** Put the archive state in a few words. */
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
  if (archive.pending > 0) {
    return {
      text: trans._n('Archiving: %1 pending', 'Archiving: %1 pending', archive.pending),
      detail: trans.__('%1 saves wait to be archived; %2.', archive.pending, last),
      warning: false
    };
  }
  return {
    text: archive.last_archived_at
      ? trans.__('Archived %1', new Date(archive.last_archived_at).toLocaleTimeString())
      : trans.__('Archive ready'),
    detail: trans.__('Every save is archived; %1.', last),
    warning: false
  };
}

/**
 * The status bar item: pending count and time of the last archive, or a warning with the
 * reason when archiving fails or is off. Activating it (click, Enter or Space) runs `onActivate`.
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
