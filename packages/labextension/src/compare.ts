import {
  CURRENT_REF,
  PUBLISHED_REF_PREFIX,
  type DiffSide,
  type NotebookDiff,
  type ObjectVersion,
  type VersionListing
} from '@jupyter-store/contract';
import type { JupyterFrontEnd } from '@jupyterlab/application';
import { Dialog, MainAreaWidget, showDialog } from '@jupyterlab/apputils';
import { PathExt } from '@jupyterlab/coreutils';
import type * as nbformat from '@jupyterlab/nbformat';
import type { INotebookTracker } from '@jupyterlab/notebook';
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';
import type { IDiffEntry } from 'nbdime/lib/diff/diffentries';
import { NotebookDiffView, type INotebookDiffContent } from './diffView';
import { showStoreError } from './errors';
import { formatTime } from './format';
import { Dom, FormBody } from './forms';
import { versionsIcon } from './icons';
import type { StoreClient } from './storeClient';

/**
 * The ref of the open notebook as it is on screen, saved or not: its model is sent inline. Not a
 * ref the server knows; store version ids never take this form.
 */
export const UNSAVED_REF = 'unsaved';

/** Two sides of a notebook to compare. */
export interface IComparison {
  /** The notebook path the refs are read at. */
  readonly path: string;
  /** Default: the newest archived version. */
  readonly base?: string;
  /** Default: the file on disk (`current`). */
  readonly remote?: string;
  /** How the tab names each side; by default a name made from the ref. */
  readonly baseLabel?: string;
  readonly remoteLabel?: string;
  /**
   * The path a side's archived version is read at when it is not `path`: a version of the
   * notebook's earlier path, before a rename (its `path` in the listing).
   */
  readonly basePath?: string;
  readonly remotePath?: string;
}

/** One version to show read-only. */
export interface IPreview {
  readonly path: string;
  /** An archived version id, or `published:<version id>`. */
  readonly ref: string;
  readonly label?: string;
}

/** The ref of a version of the archived (`workspace`) or published copy. */
export function versionRef(copy: 'workspace' | 'published', version: ObjectVersion): string {
  return copy === 'published'
    ? `${PUBLISHED_REF_PREFIX}${version.object_version_id}`
    : version.object_version_id;
}

/** How a version is named in a diff tab: "version of <time>", "published version of <time>". */
export function versionLabel(
  copy: 'workspace' | 'published',
  version: ObjectVersion,
  trans: TranslationBundle
): string {
  const when = formatTime(version.last_modified);
  return copy === 'published'
    ? trans.__('published version of %1', when)
    : trans.__('version of %1', when);
}

/**
 * Opens diffs and read-only previews of a notebook's versions in main-area tabs, directly or
 * after a dialog in which the versions are picked.
 *
 * #### Notes
 * A diff of two stored sides is opened once: asking for it again activates its tab. A diff with
 * the unsaved notebook always opens a new tab, as what is on screen may have changed.
 */
export class VersionComparer {
  constructor(options: VersionComparer.IOptions) {
    this._app = options.app;
    this._client = options.client;
    this._notebooks = options.notebooks;
    this._rendermime = options.rendermime;
    this._translator = options.translator;
    this._trans = options.trans;
  }

  /** How a ref is named when the caller gave no label. */
  labelOfRef(ref: string): string {
    const trans = this._trans;
    if (ref === CURRENT_REF) return trans.__('current file');
    if (ref === UNSAVED_REF) return trans.__('unsaved changes');
    if (ref.startsWith(PUBLISHED_REF_PREFIX)) {
      return trans.__(
        'published version %1',
        Private.shortId(ref.slice(PUBLISHED_REF_PREFIX.length))
      );
    }
    return trans.__('version %1', Private.shortId(ref));
  }

  /**
   * Open the diff of two sides of a notebook in a tab.
   *
   * @returns the tab once the diff is rendered, or null when it could not be made (the user has
   *   been told why).
   */
  async compare(request: IComparison): Promise<MainAreaWidget<NotebookDiffView> | null> {
    const trans = this._trans;
    const involvesUnsaved = request.base === UNSAVED_REF || request.remote === UNSAVED_REF;
    const key = involvesUnsaved
      ? null
      : JSON.stringify([
          request.path,
          request.base ?? null,
          request.remote ?? null,
          request.basePath ?? null,
          request.remotePath ?? null
        ]);
    const open = key === null ? undefined : this._tabs.get(key);
    if (open && !open.isDisposed) {
      this._app.shell.activateById(open.id);
      return open;
    }
    let tab: MainAreaWidget<NotebookDiffView> | null = null;
    const view = new NotebookDiffView({
      ...this._viewOptions(),
      load: async () => {
        const answer = await this._fetchDiff(request);
        const base = request.baseLabel ?? this._labelOfSide(answer.base_ref);
        const remote = request.remoteLabel ?? this._labelOfSide(answer.remote_ref);
        view.setLabels(base, remote);
        if (tab) {
          tab.title.label = trans.__('%1: %2 ↔ %3', PathExt.basename(request.path), base, remote);
          tab.title.caption = trans.__('%1: %2 ↔ %3', request.path, base, remote);
        }
        return Private.diffContent(answer);
      }
    });
    tab = this._addTab(view, trans.__('%1: comparing…', PathExt.basename(request.path)), [
      ['outputs', trans.__('Hide outputs'), trans.__('Hide the outputs of every cell')],
      ['metadata', trans.__('Hide metadata'), trans.__('Hide notebook and cell metadata')],
      ['unchanged', trans.__('Hide unchanged cells'), trans.__('Show only the cells that changed')]
    ]);
    if (key !== null) {
      this._tabs.set(key, tab);
      tab.disposed.connect(() => this._tabs.delete(key));
    }
    return this._whenRendered(tab, trans.__('Cannot compare the versions'));
  }

  /**
   * Show one version read-only in a tab: its notebook is read from the store, and no file is
   * written.
   *
   * @returns the tab once the notebook is rendered, or null when it could not be read.
   */
  async preview(request: IPreview): Promise<MainAreaWidget<NotebookDiffView> | null> {
    const trans = this._trans;
    const label = request.label ?? this.labelOfRef(request.ref);
    const published = request.ref.startsWith(PUBLISHED_REF_PREFIX);
    const versionId = published ? request.ref.slice(PUBLISHED_REF_PREFIX.length) : request.ref;
    const view = new NotebookDiffView({
      ...this._viewOptions(),
      preview: true,
      load: async () => {
        const stored = await this._client.versionContent(
          request.path,
          versionId,
          published ? 'published' : 'workspace'
        );
        // A notebook against itself: every cell unchanged, shown once.
        return { base: stored.content as unknown as nbformat.INotebookContent, diff: [] };
      }
    });
    view.setSubject(trans.__('%1, %2 (read-only)', request.path, label));
    const tab = this._addTab(
      view,
      trans.__('%1 (%2, read-only)', PathExt.basename(request.path), label),
      [['outputs', trans.__('Hide outputs'), trans.__('Hide the outputs of every cell')]]
    );
    tab.addClass('jp-store-PreviewTab');
    return this._whenRendered(tab, trans.__('Cannot preview the version'));
  }

  /** Ask for two sides of the notebook at `path` ("Compare two…"), then compare them. */
  async pickAndCompare(path: string): Promise<MainAreaWidget<NotebookDiffView> | null> {
    const trans = this._trans;
    const choices = await this._choices(path, { current: true, unsaved: this._isDirty(path) });
    if (!choices) return null;
    const versions = choices.filter(choice => choice.group !== 'special');
    const picked = await this._pick(
      trans.__('Compare two versions of %1', path),
      trans.__('Compare'),
      [
        {
          label: trans.__('Base (shown as removed)'),
          choices,
          selected: (versions[1] ?? versions[0])?.ref
        },
        {
          label: trans.__('Compared with (shown as added)'),
          choices,
          selected: versions.length > 1 ? versions[0].ref : CURRENT_REF
        }
      ]
    );
    if (!picked) return null;
    const [base, remote] = picked;
    return this.compare({
      path,
      base: base.ref,
      remote: remote.ref,
      baseLabel: base.label,
      remoteLabel: remote.label,
      basePath: base.path,
      remotePath: remote.path
    });
  }

  /** Compare the notebook on screen with a version: `base`, or one picked in a dialog. */
  async compareUnsaved(
    path: string,
    base?: string,
    baseLabel?: string
  ): Promise<MainAreaWidget<NotebookDiffView> | null> {
    const trans = this._trans;
    let basePath: string | undefined;
    if (base === undefined) {
      const choices = await this._choices(path, { current: true, unsaved: false });
      if (!choices) return null;
      const picked = await this._pick(
        trans.__('Compare unsaved changes of %1', path),
        trans.__('Compare'),
        [
          {
            label: trans.__('With the version'),
            choices,
            selected: choices.find(choice => choice.group !== 'special')?.ref
          }
        ]
      );
      if (!picked) return null;
      [{ ref: base, label: baseLabel, path: basePath }] = picked;
    }
    return this.compare({ path, base, baseLabel, basePath, remote: UNSAVED_REF });
  }

  /** Preview a version picked in a dialog. */
  async pickAndPreview(path: string): Promise<MainAreaWidget<NotebookDiffView> | null> {
    const trans = this._trans;
    const choices = await this._choices(path, { current: false, unsaved: false });
    if (!choices) return null;
    const picked = await this._pick(
      trans.__('Preview a version of %1', path),
      trans.__('Preview'),
      [{ label: trans.__('Version'), choices, selected: choices[0]?.ref }]
    );
    if (!picked) return null;
    return this.preview({ path, ref: picked[0].ref, label: picked[0].label });
  }

  private _viewOptions() {
    return {
      rendermime: this._rendermime,
      editorFactory: NotebookDiffView.sharedEditorFactory(),
      translator: this._translator,
      trans: this._trans
    };
  }

  /** A main-area tab around `view`, with a toolbar switch for each of `switches`. */
  private _addTab(
    view: NotebookDiffView,
    label: string,
    switches: [Private.Switch, string, string][]
  ): MainAreaWidget<NotebookDiffView> {
    const tab = new MainAreaWidget({ content: view, translator: this._translator });
    tab.addClass('jp-store-DiffTab');
    tab.title.label = label;
    tab.title.icon = versionsIcon;
    tab.title.closable = true;
    for (const [name, text, caption] of switches) {
      tab.toolbar.addItem(`hide-${name}`, Private.switchButton(view, name, text, caption));
    }
    this._app.shell.add(tab, 'main', { activate: true });
    return tab;
  }

  /** The tab once its view is rendered; a failure closes it and is shown in a dialog. */
  private async _whenRendered(
    tab: MainAreaWidget<NotebookDiffView>,
    errorTitle: string
  ): Promise<MainAreaWidget<NotebookDiffView> | null> {
    try {
      await tab.content.ready;
    } catch (error) {
      tab.dispose();
      await showStoreError(errorTitle, error, this._trans);
      return null;
    }
    return tab.isDisposed ? null : tab;
  }

  /** GET the diff of two refs; POST it when one side is the unsaved notebook. */
  private async _fetchDiff(request: IComparison): Promise<NotebookDiff> {
    const { path, base, remote } = request;
    const elsewhere = (ref: string | undefined, at: string | undefined) =>
      ref !== undefined && at !== undefined && at !== path;
    const moved = elsewhere(base, request.basePath) || elsewhere(remote, request.remotePath);
    if (base !== UNSAVED_REF && remote !== UNSAVED_REF && !moved) {
      return this._client.diff(path, { base, remote });
    }
    // The unsaved notebook, and a version of an earlier path (which no ref at `path` names),
    // are sent inline.
    const operand = async (ref: string | undefined, at: string | undefined) => {
      if (ref === UNSAVED_REF) return this._unsavedNotebook(path);
      if (ref === undefined || at === undefined || at === path) return ref;
      return (await this._client.versionContent(at, ref, 'workspace')).content;
    };
    const [baseOperand, remoteOperand] = await Promise.all([
      operand(base, request.basePath),
      operand(remote, request.remotePath)
    ]);
    return this._client.diffInline({ path, base: baseOperand, remote: remoteOperand });
  }

  /** The model of the open notebook at `path`, as nbformat JSON. */
  private _unsavedNotebook(path: string): Record<string, unknown> {
    const panel = this._notebooks.find(candidate => candidate.context.path === path);
    if (!panel) {
      throw new Error(
        this._trans.__('%1 is not open, so it has no unsaved changes to compare.', path)
      );
    }
    return panel.context.model.toJSON() as unknown as Record<string, unknown>;
  }

  private _isDirty(path: string): boolean {
    return this._notebooks.find(panel => panel.context.path === path)?.context.model.dirty ?? false;
  }

  private _labelOfSide(side: DiffSide): string {
    if (side.source === 'inline') return this.labelOfRef(UNSAVED_REF);
    return this.labelOfRef(side.ref ?? CURRENT_REF);
  }

  /**
   * What the pickers offer for `path`: the unsaved notebook and the file on disk when asked for,
   * then the first page of archived and published versions (newest first). Null, after telling
   * the user, when the versions cannot be listed or there are none.
   */
  private async _choices(
    path: string,
    include: { current: boolean; unsaved: boolean }
  ): Promise<Private.IChoice[] | null> {
    const trans = this._trans;
    let listing: VersionListing;
    try {
      listing = await this._client.versionsPage(path);
    } catch (error) {
      await showStoreError(trans.__('Cannot list the versions'), error, trans);
      return null;
    }
    const choices: Private.IChoice[] = [];
    if (include.unsaved) {
      choices.push({ ref: UNSAVED_REF, label: this.labelOfRef(UNSAVED_REF), group: 'special' });
    }
    if (include.current) {
      choices.push({ ref: CURRENT_REF, label: this.labelOfRef(CURRENT_REF), group: 'special' });
    }
    for (const copy of ['workspace', 'published'] as const) {
      for (const version of listing[copy].versions) {
        // A version of the notebook's earlier path (before a rename) is read there.
        const earlier = copy === 'workspace' && version.path !== undefined && version.path !== path;
        const label = versionLabel(copy, version, trans);
        choices.push({
          ref: versionRef(copy, version),
          label: earlier
            ? trans.__('%1, as %2', label, PathExt.basename(version.path ?? ''))
            : label,
          group: copy,
          ...(earlier ? { path: version.path } : {})
        });
      }
    }
    if (!choices.some(choice => choice.group !== 'special')) {
      await showDialog({
        title: trans.__('No versions yet'),
        body: trans.__('%1 has no archived or published version: every save adds one.', path),
        buttons: [Dialog.okButton({ label: trans.__('Close') })]
      });
      return null;
    }
    return choices;
  }

  /** A dialog with one list per field; the choices picked, or null when cancelled. */
  private async _pick(
    title: string,
    accept: string,
    fields: Private.IField[]
  ): Promise<Private.IChoice[] | null> {
    const trans = this._trans;
    const result = await showDialog({
      title,
      body: new Private.PickerBody(fields, trans),
      buttons: [
        Dialog.cancelButton({ label: trans.__('Cancel') }),
        Dialog.okButton({ label: accept })
      ],
      focusNodeSelector: 'select'
    });
    return result.button.accept ? result.value : null;
  }

  private readonly _app: JupyterFrontEnd;
  private readonly _client: StoreClient;
  private readonly _notebooks: INotebookTracker;
  private readonly _rendermime: IRenderMimeRegistry;
  private readonly _translator: ITranslator;
  private readonly _trans: TranslationBundle;
  private readonly _tabs = new Map<string, MainAreaWidget<NotebookDiffView>>();
}

export namespace VersionComparer {
  export interface IOptions {
    app: JupyterFrontEnd;
    client: StoreClient;
    /** Where the open notebooks, and so their unsaved state, are found. */
    notebooks: INotebookTracker;
    /** Renders outputs and markdown in the diffs. */
    rendermime: IRenderMimeRegistry;
    translator: ITranslator;
    trans: TranslationBundle;
  }
}

namespace Private {
  /** What a toolbar switch of a diff tab hides. */
  export type Switch = 'outputs' | 'metadata' | 'unchanged';

  /** One entry of a picker's list. */
  export interface IChoice {
    readonly ref: string;
    readonly label: string;
    /** `special`: the unsaved notebook or the file on disk. */
    readonly group: 'special' | 'workspace' | 'published';
    /** The path an archived version is read at when it is not the notebook's (see IComparison). */
    readonly path?: string;
  }

  /** One list of a picker, with the ref selected at first. */
  export interface IField {
    readonly label: string;
    readonly choices: readonly IChoice[];
    readonly selected?: string;
  }

  /** The first characters of a version id: enough to tell versions apart in a title. */
  export function shortId(versionId: string): string {
    return versionId.length > 12 ? `${versionId.slice(0, 8)}…` : versionId;
  }

  /** The answer of the diff API, in nbdime's types. */
  export function diffContent(answer: NotebookDiff): INotebookDiffContent {
    return {
      base: answer.base as unknown as nbformat.INotebookContent,
      diff: answer.diff as unknown as IDiffEntry[]
    };
  }

  /**
   * A toolbar button that switches one `hide…` property of the view; its pressed state says
   * whether the switch is on (Enter and Space toggle it, as any button).
   */
  export function switchButton(
    view: NotebookDiffView,
    name: Switch,
    text: string,
    caption: string
  ): Widget {
    const button = Dom.element('button', 'jp-Button jp-mod-minimal jp-store-ToggleButton', text);
    button.type = 'button';
    button.title = caption;
    button.dataset.switch = name;
    const property = (
      { outputs: 'hideOutputs', metadata: 'hideMetadata', unchanged: 'hideUnchanged' } as const
    )[name];
    const show = () => button.setAttribute('aria-pressed', String(view[property]));
    button.addEventListener('click', () => {
      view[property] = !view[property];
      show();
    });
    show();
    return new Widget({ node: button });
  }

  /** The body of a picker dialog: one labelled list per field, grouped by copy. */
  export class PickerBody extends FormBody<IChoice[]> {
    constructor(fields: readonly IField[], trans: TranslationBundle) {
      super();
      this.addClass('jp-store-VersionPicker');
      const groups: Record<IChoice['group'], string> = {
        special: trans.__('Now'),
        workspace: trans.__('Archived'),
        published: trans.__('Published')
      };
      for (const [index, field] of fields.entries()) {
        const select = Dom.element('select', 'jp-mod-styled jp-store-Field-input');
        select.name = `side-${index}`;
        for (const group of Object.keys(groups) as IChoice['group'][]) {
          const members = field.choices.filter(choice => choice.group === group);
          if (members.length === 0) continue;
          const optgroup = Dom.element('optgroup');
          optgroup.label = groups[group];
          for (const choice of members) {
            const option = Dom.element('option', undefined, choice.label);
            option.value = choice.ref;
            option.selected = choice.ref === field.selected;
            optgroup.appendChild(option);
          }
          select.appendChild(optgroup);
        }
        this._fields.push({ select, choices: field.choices });
        this.node.appendChild(Dom.field(field.label, select));
      }
    }

    getValue(): IChoice[] {
      return this._fields.map(
        ({ select, choices }) => choices.find(choice => choice.ref === select.value) ?? choices[0]
      );
    }

    private readonly _fields: { select: HTMLSelectElement; choices: readonly IChoice[] }[] = [];
  }
}
