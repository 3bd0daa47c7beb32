import type * as nbformat from '@jupyterlab/nbformat';
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { PromiseDelegate } from '@lumino/coreutils';
import { Panel, Widget } from '@lumino/widgets';
import type { CodeEditor } from '@jupyterlab/codeeditor';
import { createEditorFactory } from 'nbdime/lib/common/editor';
import type { IMimeDiffWidgetOptions } from 'nbdime/lib/common/interfaces';
import type { IDiffEntry } from 'nbdime/lib/diff/diffentries';
import { NotebookDiffModel, type CellDiffModel } from 'nbdime/lib/diff/model';
import {
  CELLDIFF_CLASS,
  CellDiffWidget,
  MetadataDiffWidget,
  NotebookDiffWidget
} from 'nbdime/lib/diff/widget';
import {
  ADDED_CHUNK_PANEL_CLASS,
  CHUNK_PANEL_CLASS,
  REMOVED_CHUNK_PANEL_CLASS,
  UNCHANGED_DIFF_CLASS
} from 'nbdime/lib/diff/widget/common';
import 'nbdime/lib/common/collapsible.css';
import 'nbdime/lib/upstreaming/flexpanel.css';
import 'nbdime/lib/styles/variables.css';
import 'nbdime/lib/styles/common.css';
import 'nbdime/lib/styles/diff.css';
import '../style/diff.css';
import { Dom } from './forms';

/**
 * How long cell views are built before the page gets to handle its events (and, the first time,
 * to paint the views built so far).
 *
 * nbdime's own `init()` adds one chunk of cells per frame, so that a 200-cell diff takes at least
 * 200 frames (over 3 s at 60 Hz) however fast each cell is; views are built here until the budget
 * is spent instead, and the page still answers several times a second while a long diff renders.
 */
const FRAME_BUDGET_MS = 150;

/** One notebook diff in nbdime's terms: the base notebook and the diff that turns it into the remote. */
export interface INotebookDiffContent {
  readonly base: nbformat.INotebookContent;
  readonly diff: readonly IDiffEntry[];
}

/**
 * The content of a diff tab: nbdime's `NotebookDiffWidget` for two notebooks, under a line that
 * names both sides and counts the changed cells; or, in preview mode, one notebook shown
 * read-only (as a diff of the notebook with itself, so that it looks like the diffs).
 *
 * #### Notes
 * The content is loaded by `options.load` when the view is created; `ready` settles once every
 * cell view is there. The three `hide…` switches only add classes: nothing is rendered again.
 */
export class NotebookDiffView extends Panel {
  constructor(options: NotebookDiffView.IOptions) {
    super();
    this._trans = options.trans;
    this._preview = options.preview ?? false;
    this.addClass('jp-store-DiffView');
    if (this._preview) this.addClass('jp-store-mod-preview');
    this._header = new Widget({ node: Dom.element('div', 'jp-store-DiffView-header') });
    this._status = Dom.element('p', 'jp-store-DiffView-status', this._trans.__('Loading…'));
    this._status.setAttribute('role', 'status');
    this._header.node.appendChild(this._status);
    this.addWidget(this._header);
    this._scroller = new Panel();
    // nbdime's styles apply below `nbdime-root`.
    this._scroller.addClass('nbdime-root');
    this._scroller.addClass('jp-store-DiffView-scroller');
    this.addWidget(this._scroller);
    void this._load(options);
  }

  /** Settles once every cell view has been added; rejects with the loading error. */
  get ready(): Promise<void> {
    return this._ready.promise;
  }

  /** Whether the diff holds no change (false until it is loaded). */
  get isEmpty(): boolean {
    return this._empty;
  }

  /** Hide the outputs of every cell. */
  get hideOutputs(): boolean {
    return this.hasClass('jp-store-mod-hideOutputs');
  }
  set hideOutputs(value: boolean) {
    this.toggleClass('jp-store-mod-hideOutputs', value);
  }

  /** Hide the metadata of the notebook and of every cell. */
  get hideMetadata(): boolean {
    return this.hasClass('jp-store-mod-hideMetadata');
  }
  set hideMetadata(value: boolean) {
    this.toggleClass('jp-store-mod-hideMetadata', value);
  }

  /** Hide the cells that did not change, leaving a line that counts them. */
  get hideUnchanged(): boolean {
    return this.hasClass('jp-store-mod-hideUnchanged');
  }
  set hideUnchanged(value: boolean) {
    this.toggleClass('jp-store-mod-hideUnchanged', value);
  }

  /** Name the two sides in the header (diff mode): `base ↔ remote`. */
  setLabels(base: string, remote: string): void {
    const line = Dom.element('p', 'jp-store-DiffView-subject');
    line.appendChild(Dom.element('span', 'jp-store-DiffView-base', base));
    line.appendChild(Dom.element('span', 'jp-store-DiffView-arrow', ' ↔ '));
    line.appendChild(Dom.element('span', 'jp-store-DiffView-remote', remote));
    this._setSubject(line);
  }

  /** Say what is shown in the header (preview mode). */
  setSubject(text: string): void {
    this._setSubject(Dom.element('p', 'jp-store-DiffView-subject', text));
  }

  private _setSubject(line: HTMLElement): void {
    this._header.node.querySelector('.jp-store-DiffView-subject')?.remove();
    this._header.node.insertBefore(line, this._status);
  }

  private async _load(options: NotebookDiffView.IOptions): Promise<void> {
    try {
      const content = await options.load();
      if (this.isDisposed) return;
      const model = new NotebookDiffModel(content.base, [...content.diff]);
      this._empty = content.diff.length === 0;
      this._status.textContent = this._preview
        ? this._trans._n('%1 cell, read-only', '%1 cells, read-only', model.cells.length)
        : this._summary(model);
      const widget = new IncrementalNotebookDiffWidget({
        model,
        rendermime: options.rendermime,
        editorFactory: options.editorFactory,
        translator: options.translator
      });
      this._scroller.addWidget(widget);
      await widget.init();
      if (this.isDisposed) return;
      Private.countHiddenRuns(widget, this._trans);
      this.addClass('jp-store-mod-rendered');
      this._ready.resolve();
    } catch (error) {
      this._status.textContent = '';
      this._ready.reject(error);
    }
  }

  /** "2 cells changed, 1 added, 1 removed", or that nothing changed. */
  private _summary(model: NotebookDiffModel): string {
    const trans = this._trans;
    if (this._empty) return trans.__('No differences.');
    let changed = 0;
    let added = 0;
    let removed = 0;
    for (const cell of model.cells) {
      if (cell.added) added++;
      else if (cell.deleted) removed++;
      else if (!cell.unchanged) changed++;
    }
    const parts = [
      trans._n('%1 cell changed', '%1 cells changed', changed),
      trans.__('%1 added', added),
      trans.__('%1 removed', removed)
    ];
    if (model.metadata) parts.push(trans.__('notebook metadata changed'));
    return parts.join(trans.__(', '));
  }

  private readonly _trans: TranslationBundle;
  private readonly _preview: boolean;
  private readonly _header: Widget;
  private readonly _status: HTMLElement;
  private readonly _scroller: Panel;
  private readonly _ready = new PromiseDelegate<void>();
  private _empty = false;
}

export namespace NotebookDiffView {
  export interface IOptions {
    /** Fetch the base notebook and the diff. */
    load(): Promise<INotebookDiffContent>;
    rendermime: IRenderMimeRegistry;
    /** The editors' factory, shared by the views (nbdime makes one per editor otherwise). */
    editorFactory: CodeEditor.Factory;
    translator: ITranslator;
    trans: TranslationBundle;
    /** Show one notebook read-only rather than a diff. */
    preview?: boolean;
  }

  /** One editor factory for every diff view: building nbdime's registries takes a while. */
  export function sharedEditorFactory(): CodeEditor.Factory {
    Private.editorFactory ??= createEditorFactory();
    return Private.editorFactory;
  }
}

/**
 * nbdime's `NotebookDiffWidget`, with its cell views added as many per animation frame as
 * {@link FRAME_BUDGET_MS} allows rather than one chunk per frame.
 */
class IncrementalNotebookDiffWidget extends NotebookDiffWidget {
  constructor(options: IMimeDiffWidgetOptions<NotebookDiffModel>) {
    super(options);
    this._renderer = options.rendermime;
  }

  override async init(): Promise<void> {
    const model = this.model;
    const shared = {
      editorFactory: this._editorFactory,
      translator: this._translator,
      ...this._viewOptions
    };
    if (model.metadata) {
      this.addWidget(new MetadataDiffWidget({ model: model.metadata, ...shared }));
    }
    // The views of the first frame are shown at once; the others are built out of the page and
    // added together at the end. Each CodeMirror editor, when created, makes the browser bring
    // the page's styles up to date (it waits for the fonts), so views added as they are built
    // would have the page restyled again and again while the diff grows.
    let pending: Widget[] = [];
    let shown = false;
    let frameStart = performance.now();
    for (const chunk of model.chunkedCells) {
      if (this.isDisposed) return;
      pending.push(this._chunkView(chunk, shared));
      if (performance.now() - frameStart > FRAME_BUDGET_MS) {
        if (shown) {
          // Nothing new to paint: let the page handle its events, without waiting for a frame.
          await new Promise(resolve => setTimeout(resolve, 0));
        } else {
          for (const view of pending) this.addWidget(view);
          pending = [];
          shown = true;
          await new Promise(resolve => requestAnimationFrame(resolve));
        }
        frameStart = performance.now();
      }
    }
    for (const view of pending) this.addWidget(view);
  }

  /**
   * One cell's view; or, for cells added and removed at one place, both groups side by side, as
   * nbdime lays them out.
   */
  private _chunkView(
    chunk: CellDiffModel[],
    shared: Omit<IMimeDiffWidgetOptions<CellDiffModel>, 'model' | 'rendermime'>
  ): Widget {
    const cellView = (cell: CellDiffModel) =>
      new CellDiffWidget({
        model: cell,
        rendermime: this._renderer,
        mimetype: this.model.mimetype,
        ...shared
      });
    if (chunk.length === 1 && !(chunk[0].added || chunk[0].deleted)) return cellView(chunk[0]);
    const chunkPanel = new Panel();
    chunkPanel.addClass(CHUNK_PANEL_CLASS);
    const added = new Panel();
    added.addClass(ADDED_CHUNK_PANEL_CLASS);
    const removed = new Panel();
    removed.addClass(REMOVED_CHUNK_PANEL_CLASS);
    for (const cell of chunk) (cell.deleted ? removed : added).addWidget(cellView(cell));
    chunkPanel.addWidget(added);
    chunkPanel.addWidget(removed);
    return chunkPanel;
  }

  private readonly _renderer: IRenderMimeRegistry;
}

namespace Private {
  export let editorFactory: CodeEditor.Factory | undefined;

  /**
   * Mark where runs of unchanged cells are, so that with unchanged cells hidden a line says how
   * many are hidden there: on the first shown item after each run, on the last shown item for a
   * run at the end, and on the diff itself when every cell is unchanged.
   */
  export function countHiddenRuns(diff: Widget, trans: TranslationBundle): void {
    const items = Array.from(diff.node.children).filter(
      node => node.classList.contains(CELLDIFF_CLASS) || node.classList.contains(CHUNK_PANEL_CLASS)
    ) as HTMLElement[];
    const text = (count: number) =>
      trans._n('%1 unchanged cell hidden', '%1 unchanged cells hidden', count);
    let run = 0;
    let lastShown: HTMLElement | null = null;
    for (const item of items) {
      if (item.classList.contains(UNCHANGED_DIFF_CLASS)) {
        run++;
        continue;
      }
      if (run > 0) item.dataset.storeHiddenBefore = text(run);
      run = 0;
      lastShown = item;
    }
    if (run === 0) return;
    if (lastShown) lastShown.dataset.storeHiddenAfter = text(run);
    else diff.node.dataset.storeHiddenAll = text(run);
  }
}
