import type { DeletedNotebook } from '@jupyter-store/contract';
import type { Contents } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import { usageText, type ArchiveStatusModel } from './archiveStatus';
import { errorMessage, formatBytes, formatTime, lastSegment } from './format';
import { Dom } from './forms';
import { trimSlashes, type StoreClient } from './storeClient';

/**
 * The "Recently deleted" section of the versions panel: the notebooks deleted from the server
 * whose versions the archive keeps, each with a Restore button, and below them what the
 * workspace holds (feature detection's `usage`).
 *
 * #### Notes
 * The server lists the whole workspace archive for this (one pass over its versions), so the
 * list is asked for only when the panel is shown, after a delete in the file browser, and when
 * the user refreshes it; never on a timer. A restore writes the notebook back through the
 * server (archived as a new version; beside the original name when that exists again) and
 * opens what was written.
 */
/** When, after a delete, the list is asked for again (each wait after the one before). */
const FOLLOW_DELETE_MS = [500, 500, 1000, 2000, 4000];

export class RecentlyDeleted {
  constructor(options: RecentlyDeleted.IOptions) {
    this._client = options.client;
    this._trans = options.trans;
    this._status = options.status;
    this._open = options.open;
    this._contents = options.contents ?? null;
    const trans = this._trans;
    this.node = Dom.element('section', 'jp-store-RecentlyDeleted');
    const header = Dom.element('div', 'jp-store-RecentlyDeleted-header');
    const heading = Dom.element('h3', undefined, trans.__('Recently deleted'));
    heading.title = trans.__('Notebooks deleted from the server whose versions the archive keeps');
    header.appendChild(heading);
    header.appendChild(
      Dom.refreshButton(
        trans.__('Refresh'),
        trans.__('Refresh the recently deleted notebooks'),
        () => void this.refresh()
      )
    );
    this.node.appendChild(header);
    this._message = Dom.element('p', 'jp-store-RecentlyDeleted-message');
    this._message.setAttribute('role', 'status');
    this.node.appendChild(this._message);
    this._list = Dom.element('ul', 'jp-store-RecentlyDeleted-list');
    this._list.setAttribute('aria-label', trans.__('Recently deleted'));
    this.node.appendChild(this._list);
    this._usage = Dom.element('p', 'jp-store-Usage');
    this.node.appendChild(this._usage);
    this._status.changed.connect(this._showUsage, this);
    this._contents?.fileChanged.connect(this._onFileChanged, this);
    this._showUsage();
  }

  /** The section's element, for the panel to place. */
  readonly node: HTMLElement;

  /** Whether it was disposed. */
  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Ask for the list again; answers that arrive after a newer request are dropped. */
  async refresh(): Promise<void> {
    if (this._disposed) return;
    const generation = ++this._generation;
    if (this._entries === null) this._setMessage(this._trans.__('Loading…'));
    try {
      const listing = await this._client.deleted();
      if (generation !== this._generation || this._disposed) return;
      this._entries = listing.deleted;
      this._setMessage(
        listing.deleted.length === 0
          ? this._trans.__('No deleted notebooks.')
          : listing.left_out > 0
            ? this._trans._n(
                '%1 older deleted notebook is not shown.',
                '%1 older deleted notebooks are not shown.',
                listing.left_out
              )
            : ''
      );
    } catch (error) {
      if (generation !== this._generation || this._disposed) return;
      this._entries = null;
      this._setMessage(
        this._trans.__('The deleted notebooks could not be listed: %1', errorMessage(error))
      );
    }
    this._render();
  }

  dispose(): void {
    if (this._disposed) return;
    this._disposed = true;
    this._status.changed.disconnect(this._showUsage, this);
    this._contents?.fileChanged.disconnect(this._onFileChanged, this);
  }

  /**
   * A delete in the file browser (or anywhere through the contents service): list again until
   * the path deleted (or a notebook below it) is listed. The archive writes the delete marker
   * shortly after the delete (it first waits to see whether the delete is half of a rename),
   * so the listing is asked for after 0.5, 1, 2, 4 and 8 s at most, and no more once it is
   * there: a handful of listings per delete, never a poll.
   */
  private _onFileChanged(_: Contents.IManager, change: Contents.IChangedArgs): void {
    const deleted = change.type === 'delete' ? change.oldValue?.path : undefined;
    if (deleted && this.node.isConnected) void this._followDelete(trimSlashes(deleted));
  }

  private async _followDelete(path: string): Promise<void> {
    const follow = ++this._following;
    for (const delay of FOLLOW_DELETE_MS) {
      await new Promise(resolve => window.setTimeout(resolve, delay));
      if (follow !== this._following || this._disposed || !this.node.isConnected) return;
      await this.refresh();
      const listed = (this._entries ?? []).some(
        entry => entry.path === path || entry.path.startsWith(`${path}/`)
      );
      if (listed) {
        // The server measures the workspace again after the delete marker: show it soon.
        this._status.watchSave();
        return;
      }
    }
  }

  private _showUsage(): void {
    const text = usageText(this._status.info, this._trans);
    this._usage.textContent = text ?? '';
    this._usage.hidden = text === null;
  }

  private _setMessage(text: string): void {
    this._message.textContent = text;
    this._message.hidden = text === '';
  }

  private _render(): void {
    const trans = this._trans;
    this._list.replaceChildren();
    for (const entry of this._entries ?? []) {
      const item = Dom.element('li', 'jp-store-RecentlyDeleted-item');
      item.dataset.path = entry.path;
      const facts = Dom.element('div', 'jp-store-RecentlyDeleted-facts');
      const name = Dom.element('span', 'jp-store-RecentlyDeleted-path', entry.path);
      facts.appendChild(name);
      const time = Dom.element(
        'time',
        'jp-store-RecentlyDeleted-time',
        trans.__('deleted %1', formatTime(entry.deleted_at))
      );
      time.dateTime = entry.deleted_at;
      facts.appendChild(time);
      facts.title = trans.__(
        'Last version %1 of %2, %3',
        entry.last_version.object_version_id,
        formatTime(entry.last_version.last_modified),
        formatBytes(entry.last_version.size, trans)
      );
      item.appendChild(facts);
      const restore = Dom.button(
        'jp-Button jp-mod-styled jp-mod-accept jp-store-Version-button',
        trans.__('Restore'),
        {
          action: 'restore-deleted',
          title: trans.__(
            'Write %1 back as it was last saved, and open it',
            lastSegment(entry.path)
          ),
          onClick: () => this._restore(entry)
        }
      );
      item.appendChild(restore);
      this._list.appendChild(item);
    }
  }

  /** Restore one notebook, open what was written, and list again. */
  private async _restore(entry: DeletedNotebook): Promise<void> {
    try {
      const restored = await this._client.restore(entry.path);
      // A save: follow its archiving, and the usage measured after it.
      this._status.watchSave();
      await this._open(restored.path);
      this._setMessage(
        restored.path === entry.path
          ? this._trans.__('Restored %1.', entry.path)
          : this._trans.__('Restored %1 as %2: the name is taken.', entry.path, restored.path)
      );
    } catch (error) {
      this._setMessage(
        this._trans.__('%1 could not be restored: %2', entry.path, errorMessage(error))
      );
      return;
    }
    // The message above stays: the listing only changes the list.
    const message = this._message.textContent ?? '';
    await this.refresh();
    if (!this._disposed && this._entries !== null) this._setMessage(message);
  }

  private readonly _client: StoreClient;
  private readonly _trans: TranslationBundle;
  private readonly _status: ArchiveStatusModel;
  private readonly _open: (path: string) => Promise<void>;
  private readonly _contents: Contents.IManager | null;
  private readonly _message: HTMLElement;
  private readonly _list: HTMLElement;
  private readonly _usage: HTMLElement;
  private _entries: DeletedNotebook[] | null = null;
  private _generation = 0;
  /** Which delete is being followed: a newer one takes over. */
  private _following = 0;
  private _disposed = false;
}

export namespace RecentlyDeleted {
  export interface IOptions {
    client: StoreClient;
    trans: TranslationBundle;
    /** The archive status, whose `usage` the section shows. */
    status: ArchiveStatusModel;
    /** Open a restored notebook (refreshing the file browser first). */
    open: (path: string) => Promise<void>;
    /** The contents service, whose deletes make the section list again. */
    contents?: Contents.IManager;
  }
}
