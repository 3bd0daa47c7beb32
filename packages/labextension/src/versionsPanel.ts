import type { ObjectVersion, VersionListing } from '@jupyter-store/contract';
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { PathExt } from '@jupyterlab/coreutils';
import type * as nbformat from '@jupyterlab/nbformat';
import type { DocumentRegistry } from '@jupyterlab/docregistry';
import type { INotebookModel, NotebookPanel } from '@jupyterlab/notebook';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';
import type { ArchiveStatusModel } from './archiveStatus';
import { UNSAVED_REF, versionLabel, versionRef, type IComparison, type IPreview } from './compare';
import { runWithProgress } from './errors';
import { datedSibling, errorMessage, formatBytes, formatTime } from './format';
import { Dom } from './forms';
import { labelElement, nameArchivedVersion } from './saveVersion';
import type { RecentlyDeleted } from './recentlyDeleted';
import { StoreRequestError } from './request';
import type { StoreClient } from './storeClient';

type NotebookContext = DocumentRegistry.IContext<INotebookModel>;
/** A Lumino message (the type of `@lumino/messaging`, through the widget that takes it). */
type Message = Parameters<Widget['processMessage']>[0];

/**
 * The archived and published versions of one notebook, newest first, with time and size:
 * "Open" clones a version beside the notebook, "Restore" replaces the notebook's content with
 * it (a save, so it becomes a new version itself), "Preview" shows it read-only, and "Compare
 * with current" and "Compare with previous" open a diff; "Compare two…" asks for any two.
 * "Name…" names an archived version, "Save Version…" saves and names the new one; a named
 * version shows its name and note above its facts.
 * Refreshed after each archive.
 *
 * #### Notes
 * The store lists versions a page at a time (100 of each copy). The panel shows the first page
 * and, while more follow, a "Show more versions" button that appends the next page; a refresh
 * reloads as many pages as were shown.
 */
export class VersionsPanel extends Widget {
  constructor(options: VersionsPanel.IOptions) {
    super();
    this._client = options.client;
    this._trans = options.trans;
    this._status = options.status;
    this._open = options.open;
    this._compare = options.compare;
    this._preview = options.preview;
    const trans = this._trans;
    this.id = 'jp-store-versions';
    this.addClass('jp-store-VersionsPanel');
    this.title.caption = trans.__('Archived versions');
    this.title.label = trans.__('Versions');

    const header = Dom.element('div', 'jp-store-VersionsPanel-header');
    this._heading = Dom.element(
      'h2',
      'jp-store-VersionsPanel-title',
      trans.__('Archived versions')
    );
    header.appendChild(this._heading);
    const compareTwo = Dom.button(Private.BUTTON_CLASS, trans.__('Compare two…'), {
      action: 'compare-two',
      title: trans.__('Pick two versions of the notebook and see what changed'),
      onClick: () => {
        if (this._notebook) void options.pickAndCompare(this._notebook.context.path);
      }
    });
    this._compareTwo = compareTwo;
    const saveVersion = Dom.button(Private.BUTTON_CLASS, trans.__('Save Version…'), {
      action: 'save-version',
      title: trans.__('Save the notebook and give the version saved a name'),
      onClick: () => void options.saveVersion()
    });
    this._saveVersion = saveVersion;
    header.appendChild(
      Dom.refreshButton(trans.__('Refresh'), trans.__('Refresh the versions'), () => {
        void this.refresh();
      })
    );
    this.node.appendChild(header);
    this._pathLine = Dom.element('p', 'jp-store-VersionsPanel-path');
    this.node.appendChild(this._pathLine);
    const tools = Dom.element('div', 'jp-store-VersionsPanel-tools');
    tools.appendChild(compareTwo);
    tools.appendChild(saveVersion);
    this.node.appendChild(tools);
    this._message = Dom.element('p', 'jp-store-VersionsPanel-message');
    this._message.setAttribute('role', 'status');
    this.node.appendChild(this._message);
    this._body = Dom.element('div', 'jp-store-VersionsPanel-body');
    this.node.appendChild(this._body);
    this._recentlyDeleted = options.recentlyDeleted ?? null;
    if (this._recentlyDeleted) this.node.appendChild(this._recentlyDeleted.node);
    this._status.changed.connect(this._onStatus, this);
    this._render();
  }

  /** The notebook shown, or null. */
  get notebook(): NotebookPanel | null {
    return this._notebook;
  }

  /** Show the versions of `panel` (null: none), following its saves and renames. */
  setNotebook(panel: NotebookPanel | null): void {
    if (panel === this._notebook) return;
    if (this._notebook) {
      this._notebook.context.saveState.disconnect(this._onSaveState, this);
      this._notebook.context.pathChanged.disconnect(this._onPathChanged, this);
      this._notebook.disposed.disconnect(this._onNotebookDisposed, this);
    }
    this._notebook = panel;
    this._listing = null;
    this._pages = 0;
    if (panel) {
      panel.context.saveState.connect(this._onSaveState, this);
      panel.context.pathChanged.connect(this._onPathChanged, this);
      panel.disposed.connect(this._onNotebookDisposed, this);
    }
    this._render();
    void this.refresh();
  }

  /** Ask for the listing again: as many pages as were shown (at least the first). */
  async refresh(): Promise<void> {
    const panel = this._notebook;
    if (!panel || this.isDisposed) return;
    const generation = ++this._generation;
    const path = panel.context.path;
    const pages = Math.max(1, this._pages);
    this._setMessage(this._listing ? '' : this._trans.__('Loading…'));
    try {
      let listing = await this._client.versionsPage(path);
      let loaded = 1;
      while (typeof listing.next === 'string' && loaded < pages) {
        const page = await this._client.versionsPage(path, { next: listing.next });
        if (generation !== this._generation || this.isDisposed) return;
        listing = Private.append(listing, page);
        loaded++;
      }
      if (generation !== this._generation || this.isDisposed) return;
      this._listing = listing;
      this._pages = loaded;
      this._setMessage('');
    } catch (error) {
      if (generation !== this._generation || this.isDisposed) return;
      this._listing = null;
      this._pages = 0;
      this._setMessage(this._trans.__('The versions could not be listed: %1', errorMessage(error)));
    }
    this._loadingMore = false;
    this._render();
  }

  /**
   * Append the next page of versions. A token the server no longer accepts (it restarted)
   * reloads the listing from the first page instead.
   */
  async showMore(): Promise<void> {
    const panel = this._notebook;
    const listing = this._listing;
    if (!panel || !listing || typeof listing.next !== 'string' || this._loadingMore) return;
    const generation = this._generation;
    this._loadingMore = true;
    this._render();
    try {
      const page = await this._client.versionsPage(panel.context.path, { next: listing.next });
      if (generation !== this._generation || this.isDisposed) return;
      this._listing = Private.append(listing, page);
      this._pages++;
      this._setMessage('');
    } catch (error) {
      if (generation !== this._generation || this.isDisposed) return;
      if (error instanceof StoreRequestError && error.reason === 'invalid token') {
        void this.refresh();
        return;
      }
      this._setMessage(
        this._trans.__('More versions could not be listed: %1', errorMessage(error))
      );
    }
    this._loadingMore = false;
    this._render();
  }

  override dispose(): void {
    if (this.isDisposed) return;
    this._recentlyDeleted?.dispose();
    this.setNotebook(null);
    this._status.changed.disconnect(this._onStatus, this);
    super.dispose();
  }

  /** The recently deleted notebooks are listed again each time the panel is shown. */
  protected override onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this._recentlyDeleted?.refresh();
  }

  private _onSaveState(_: NotebookContext, state: DocumentRegistry.SaveState): void {
    if (state === 'completed') {
      // The save is archived shortly after; the status model follows it and tells us.
      this._status.watchSave();
      void this.refresh();
    }
  }

  private _onPathChanged(): void {
    this._listing = null;
    this._pages = 0;
    this._render();
    void this.refresh();
  }

  private _onNotebookDisposed(): void {
    this.setNotebook(null);
  }

  /** Refresh when the number of archived saves changes. */
  private _onStatus(): void {
    const archived = this._status.info.archive?.archived ?? null;
    if (archived !== this._lastArchived) {
      this._lastArchived = archived;
      if (this._notebook && this.isVisible) void this.refresh();
    }
  }

  private _setMessage(text: string): void {
    this._message.textContent = text;
    this._message.hidden = text === '';
  }

  /**
   * Render the listing again. A keyboard user's focus on a version's button survives: the same
   * button of the same version is focused in the new list.
   */
  private _render(): void {
    const focused = this._focusedButton();
    this._renderBody();
    if (focused) this._body.querySelector<HTMLElement>(focused)?.focus();
  }

  /** A selector for the version button (or the "more" button) that has the focus, or null. */
  private _focusedButton(): string | null {
    const active = document.activeElement;
    if (!(active instanceof HTMLElement) || !this._body.contains(active)) return null;
    if (active.dataset.action === 'more') return 'button[data-action="more"]';
    const item = active.closest<HTMLElement>('li.jp-store-Version');
    const section = active.closest<HTMLElement>('section');
    const action = active.dataset.action;
    if (!item?.dataset.versionId || !section?.dataset.kind || !action) return null;
    return (
      `section[data-kind="${CSS.escape(section.dataset.kind)}"] ` +
      `li[data-version-id="${CSS.escape(item.dataset.versionId)}"] ` +
      `button[data-action="${CSS.escape(action)}"]`
    );
  }

  private _renderBody(): void {
    const trans = this._trans;
    this._body.replaceChildren();
    const panel = this._notebook;
    this._compareTwo.disabled = !panel;
    this._saveVersion.disabled = !panel;
    if (!panel) {
      this._pathLine.textContent = trans.__('Open a notebook to see its versions.');
      return;
    }
    this._pathLine.textContent = panel.context.path;
    const listing = this._listing;
    if (!listing) return;
    this._body.appendChild(
      this._section(
        trans.__('Archived'),
        'workspace',
        listing,
        listing.workspace.versions,
        trans.__('No archived versions yet: every save adds one.')
      )
    );
    this._body.appendChild(
      this._section(
        trans.__('Published'),
        'published',
        listing,
        listing.published.versions,
        trans.__('Not published.')
      )
    );
    if (typeof listing.next === 'string') {
      const more = Dom.button(
        'jp-Button jp-mod-styled jp-mod-reject jp-store-VersionsPanel-more',
        this._loadingMore ? trans.__('Loading…') : trans.__('Show more versions'),
        {
          action: 'more',
          title: trans.__('List the next older versions'),
          onClick: () => void this.showMore()
        }
      );
      more.disabled = this._loadingMore;
      this._body.appendChild(more);
    }
  }

  private _section(
    title: string,
    kind: 'workspace' | 'published',
    listing: VersionListing,
    versions: readonly ObjectVersion[],
    empty: string
  ): HTMLElement {
    const trans = this._trans;
    const section = Dom.element('section', 'jp-store-VersionsSection');
    section.dataset.kind = kind;
    const key = kind === 'workspace' ? listing.workspace.object_key : listing.published.object_key;
    const heading = Dom.element('h3', undefined, title);
    heading.title = `s3://${listing.object_bucket}/${key}`;
    section.appendChild(heading);
    if (versions.length === 0) {
      section.appendChild(Dom.element('p', 'jp-store-VersionsSection-empty', empty));
      return section;
    }
    const list = Dom.element('ul', 'jp-store-VersionList');
    list.setAttribute('aria-label', title);
    for (const [index, version] of versions.entries()) {
      const item = Dom.element('li', 'jp-store-Version');
      item.dataset.versionId = version.object_version_id;
      if (kind === 'workspace' && version.path !== undefined) item.dataset.path = version.path;
      const facts = Dom.element('div', 'jp-store-Version-facts');
      const time = Dom.element('time', 'jp-store-Version-time', formatTime(version.last_modified));
      time.dateTime = version.last_modified;
      facts.appendChild(time);
      facts.appendChild(
        Dom.element('span', 'jp-store-Version-size', formatBytes(version.size, trans))
      );
      if (version.is_latest) {
        facts.appendChild(Dom.element('span', 'jp-store-Version-badge', trans.__('latest')));
      }
      const earlier = Private.earlierPath(kind, listing, version);
      if (earlier !== undefined) {
        // Saved before a rename: the notebook had another path then.
        const name = Dom.element(
          'span',
          'jp-store-Version-path',
          trans.__('as %1', PathExt.basename(earlier))
        );
        name.title = trans.__('Archived as %1, before the notebook was renamed', earlier);
        facts.appendChild(name);
      }
      facts.title = trans.__('Version id: %1', version.object_version_id);
      const label = kind === 'workspace' ? labelElement(version, trans) : null;
      if (label) {
        item.classList.add('jp-mod-named');
        item.appendChild(label);
      }
      item.appendChild(facts);
      const actions = Dom.element('div', 'jp-store-Version-actions');
      const text = Private.buttonText(trans, formatTime(version.last_modified));
      actions.append(
        this._button('open', text, () =>
          this._openVersion(listing, version.object_key ?? key, version)
        ),
        this._button('restore', text, () => this._restoreVersion(listing, key, version)),
        this._button('preview', text, () => this._preview(this._previewOf(kind, version)))
      );
      if (kind === 'workspace') {
        actions.appendChild(this._button('name', text, () => this._nameVersion(version)));
      }
      item.appendChild(actions);
      const compare = Dom.element('div', 'jp-store-Version-actions');
      compare.appendChild(
        this._button('compare-current', text, () => this._compareWithCurrent(kind, version))
      );
      if (index < versions.length - 1 || typeof listing.next === 'string') {
        compare.appendChild(
          this._button('compare-previous', text, () => this._compareWithPrevious(kind, version))
        );
      }
      item.appendChild(compare);
      list.appendChild(item);
    }
    section.appendChild(list);
    return section;
  }

  private _button(
    action: Private.VersionAction,
    text: Private.ButtonText,
    run: () => Promise<void>
  ): HTMLButtonElement {
    const [label, description] = text[action];
    return Dom.button(Private.BUTTON_CLASS, label, { action, title: description, onClick: run });
  }

  private _previewOf(kind: 'workspace' | 'published', version: ObjectVersion): IPreview {
    const path = this._notebook?.context.path ?? '';
    return {
      path: this._earlierPath(kind, version) ?? path,
      ref: versionRef(kind, version),
      label: versionLabel(kind, version, this._trans)
    };
  }

  /**
   * Diff the version with the notebook as it is now: the open notebook's model when it has
   * unsaved changes (what the user sees), else the file on disk.
   */
  private async _compareWithCurrent(
    kind: 'workspace' | 'published',
    version: ObjectVersion
  ): Promise<void> {
    const panel = this._notebook;
    if (!panel) return;
    const unsaved = panel.context.model.dirty;
    await this._compare({
      path: panel.context.path,
      base: versionRef(kind, version),
      baseLabel: versionLabel(kind, version, this._trans),
      basePath: this._earlierPath(kind, version),
      remote: unsaved ? UNSAVED_REF : undefined,
      remoteLabel: unsaved ? this._trans.__('unsaved changes') : this._trans.__('current file')
    });
  }

  /**
   * Diff the version with the next older one of the same copy, loading the next page of the
   * listing first when the version is the last one shown.
   */
  private async _compareWithPrevious(
    kind: 'workspace' | 'published',
    version: ObjectVersion
  ): Promise<void> {
    const panel = this._notebook;
    if (!panel) return;
    const previous = (): ObjectVersion | undefined => {
      const versions = this._listing?.[kind].versions ?? [];
      const index = versions.findIndex(
        candidate => candidate.object_version_id === version.object_version_id
      );
      return index < 0 ? undefined : versions[index + 1];
    };
    let older = previous();
    if (!older && typeof this._listing?.next === 'string') {
      await this.showMore();
      older = previous();
    }
    if (!older) {
      this._setMessage(
        this._trans.__('The version of %1 is the oldest.', formatTime(version.last_modified))
      );
      return;
    }
    await this._compare({
      path: panel.context.path,
      base: versionRef(kind, older),
      baseLabel: versionLabel(kind, older, this._trans),
      basePath: this._earlierPath(kind, older),
      remote: versionRef(kind, version),
      remoteLabel: versionLabel(kind, version, this._trans),
      remotePath: this._earlierPath(kind, version)
    });
  }

  /** The earlier path a version was archived under (see `Private.earlierPath`), if any. */
  private _earlierPath(
    kind: 'workspace' | 'published',
    version: ObjectVersion
  ): string | undefined {
    return this._listing ? Private.earlierPath(kind, this._listing, version) : undefined;
  }

  /** Name (or rename) an archived version, read at the path it was archived under. */
  private async _nameVersion(version: ObjectVersion): Promise<void> {
    const path = this._earlierPath('workspace', version) ?? this._notebook?.context.path;
    if (path === undefined) return;
    if (await nameArchivedVersion(path, version, this._client, this._trans)) {
      await this.refresh();
    }
  }

  /** Clone the version into a new file beside the notebook, and open it. */
  private async _openVersion(
    listing: VersionListing,
    key: string,
    version: ObjectVersion
  ): Promise<void> {
    const trans = this._trans;
    const panel = this._notebook;
    if (!panel) return;
    const target = datedSibling(panel.context.path, version.last_modified);
    const model = await runWithProgress(
      {
        progress: trans.__('Opening the version of %1…', formatTime(version.last_modified)),
        done: opened => trans.__('Opened as %1', opened.path),
        failed: trans.__('Opening the version failed'),
        errorTitle: trans.__('Cannot open the version')
      },
      trans,
      () =>
        this._client.cloneObject({
          object_bucket: listing.object_bucket,
          object_key: key,
          object_version_id: version.object_version_id,
          target_path: target
        })
    );
    if (model) await this._open(model.path);
  }

  /**
   * Replace the notebook's content with the version, after a confirmation, and save it.
   *
   * #### Notes
   * The version's notebook comes from `GET api/store/versions/<path>?object_version_id=…`; it
   * replaces the model and is saved, so the restore is itself archived as a new version.
   */
  private async _restoreVersion(
    listing: VersionListing,
    key: string,
    version: ObjectVersion
  ): Promise<void> {
    const trans = this._trans;
    const panel = this._notebook;
    if (!panel) return;
    const context = panel.context;
    const when = formatTime(version.last_modified);
    const confirm = await showDialog({
      title: trans.__('Restore this version?'),
      body: trans.__(
        'The content of %1 is replaced with the version of %2, and saved. The current content stays in the archive as an earlier version.',
        context.path,
        when
      ),
      buttons: [
        Dialog.cancelButton({ label: trans.__('Cancel') }),
        Dialog.warnButton({ label: trans.__('Restore') })
      ]
    });
    if (!confirm.button.accept || panel.isDisposed) return;
    await runWithProgress(
      {
        progress: trans.__('Restoring the version of %1…', when),
        done: () => trans.__('Restored %1 to the version of %2', context.path, when),
        failed: trans.__('Restoring the version failed'),
        errorTitle: trans.__('Cannot restore the version')
      },
      trans,
      async () => {
        const copy = key === listing.published.object_key ? 'published' : 'workspace';
        // A version of an earlier path is read there, and restored into the notebook as it is.
        const stored = await this._client.versionContent(
          Private.earlierPath(copy, listing, version) ?? context.path,
          version.object_version_id,
          copy
        );
        context.model.fromJSON(stored.content as unknown as nbformat.INotebookContent);
        await context.save();
      }
    );
  }

  private readonly _client: StoreClient;
  private readonly _trans: TranslationBundle;
  private readonly _status: ArchiveStatusModel;
  private readonly _open: (path: string) => Promise<void>;
  private readonly _recentlyDeleted: RecentlyDeleted | null;
  private readonly _compare: (comparison: IComparison) => Promise<void>;
  private readonly _preview: (preview: IPreview) => Promise<void>;
  private readonly _heading: HTMLElement;
  private readonly _compareTwo: HTMLButtonElement;
  private readonly _saveVersion: HTMLButtonElement;
  private readonly _pathLine: HTMLElement;
  private readonly _message: HTMLElement;
  private readonly _body: HTMLElement;
  private _notebook: NotebookPanel | null = null;
  private _listing: VersionListing | null = null;
  /** Pages of the listing shown (0 before the first arrives). */
  private _pages = 0;
  private _loadingMore = false;
  private _generation = 0;
  private _lastArchived: number | null = null;
}

namespace Private {
  /** The classes of the panel's text buttons. */
  export const BUTTON_CLASS = 'jp-Button jp-mod-styled jp-mod-reject jp-store-Version-button';

  /** What a version's buttons do; also each button's `data-action`. */
  export type VersionAction =
    'open' | 'restore' | 'preview' | 'name' | 'compare-current' | 'compare-previous';

  /** The label and the tooltip of each of a version's buttons. */
  export type ButtonText = Record<VersionAction, [label: string, description: string]>;

  /** The texts of the buttons of the version saved at `when` (a formatted time). */
  export function buttonText(trans: TranslationBundle, when: string): ButtonText {
    return {
      open: [trans.__('Open'), trans.__('Open the version of %1 as a new file', when)],
      restore: [trans.__('Restore'), trans.__('Replace the notebook with the version of %1', when)],
      preview: [
        trans.__('Preview'),
        trans.__('Show the version of %1 read-only, without creating a file', when)
      ],
      name: [trans.__('Name…'), trans.__('Give the version of %1 a name and a note', when)],
      'compare-current': [
        trans.__('Compare with current'),
        trans.__('See what changed from the version of %1 to the notebook as it is now', when)
      ],
      'compare-previous': [
        trans.__('Compare with previous'),
        trans.__('See what changed in the version of %1 since the one before it', when)
      ]
    };
  }

  /**
   * The path an archived version was saved under when it is not the listing's: a version of the
   * notebook's earlier path, before a rename, which is read (and cloned) there.
   */
  export function earlierPath(
    kind: 'workspace' | 'published',
    listing: VersionListing,
    version: ObjectVersion
  ): string | undefined {
    return kind === 'workspace' && version.path !== undefined && version.path !== listing.path
      ? version.path
      : undefined;
  }

  /** The listing with the versions of the next page added after its own. */
  export function append(listing: VersionListing, page: VersionListing): VersionListing {
    return {
      ...listing,
      workspace: {
        ...listing.workspace,
        versions: [...listing.workspace.versions, ...page.workspace.versions]
      },
      published: {
        ...listing.published,
        versions: [...listing.published.versions, ...page.published.versions]
      },
      next: page.next ?? null
    };
  }
}

export namespace VersionsPanel {
  export interface IOptions {
    client: StoreClient;
    trans: TranslationBundle;
    status: ArchiveStatusModel;
    /** Open a file in JupyterLab. */
    open(path: string): Promise<void>;
    /** Open the diff of two sides of the notebook. */
    compare(comparison: IComparison): Promise<void>;
    /** Show a version read-only. */
    preview(preview: IPreview): Promise<void>;
    /** Ask for two sides of the notebook at `path`, then open their diff. */
    pickAndCompare(path: string): Promise<void>;
    /** Save the notebook shown and name the version saved (File › Save Version…). */
    saveVersion(): Promise<void>;
    /** The "Recently deleted" section shown below the versions; the panel disposes of it. */
    recentlyDeleted?: RecentlyDeleted;
  }
}
