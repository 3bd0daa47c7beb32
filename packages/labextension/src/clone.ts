import {
  DEFAULT_VERSIONS_PAGE_LIMIT,
  type ContentsModel,
  type ObjectVersion
} from '@jupyter-store/contract';
import { Dialog, showDialog } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { runWithProgress, showStoreError } from './errors';
import { errorMessage, formatBytes, formatTime, joinPath, lastSegment } from './format';
import { Dom, FormBody } from './forms';
import { pathOfKey, trimSlashes, type IStoreLayout, type StoreClient } from './storeClient';

/** What the object-storage clone dialog asks for. */
export interface IObjectCloneValue {
  bucket: string;
  key: string;
  /** Empty for the latest version. */
  versionId: string;
  /** The folder the copy goes into. */
  targetDir: string;
}

/** How long the version picker waits after the last keystroke before it asks for versions. */
const VERSION_LOOKUP_DELAY_MS = 400;

/**
 * The body of "Clone from object storage…": bucket (defaulting to the store's), key, version
 * (a picker filled from the store's version listing when the key is one of ours, else free
 * text), and the target folder.
 */
export class ObjectCloneForm extends FormBody<IObjectCloneValue> {
  constructor(options: ObjectCloneForm.IOptions) {
    super();
    const { trans } = options;
    this._trans = trans;
    this._client = options.client;
    this._storeLayout = options.layout;
    this.addClass('jp-store-CloneForm');
    this._bucket = Dom.textInput('bucket', options.layout.bucket, trans.__('bucket name'));
    this._key = Dom.textInput(
      'key',
      options.key ?? '',
      trans.__('e.g. published/team/report.ipynb')
    );
    this._versionText = Dom.textInput('version', '', trans.__('latest'));
    this._versionSelect = Dom.element('select', 'jp-mod-styled jp-store-Field-input');
    this._versionSelect.name = 'version-choice';
    this._versionSelect.setAttribute('aria-label', trans.__('Version'));
    this._target = Dom.textInput('target', options.targetDir, trans.__('(the root folder)'));
    this._status = Dom.element('span', 'jp-store-Field-hint');
    this._status.setAttribute('aria-live', 'polite');

    this.node.appendChild(Dom.field(trans.__('Bucket'), this._bucket));
    this.node.appendChild(Dom.field(trans.__('Key'), this._key));
    const version = Dom.field(
      trans.__('Version'),
      this._versionText,
      trans.__('Leave empty for the latest version.')
    );
    version.insertBefore(this._versionSelect, this._versionText);
    version.appendChild(this._status);
    this.node.appendChild(version);
    this.node.appendChild(
      Dom.field(
        trans.__('Target folder'),
        this._target,
        trans.__('A file of the same name there is kept: the copy gets a new name.')
      )
    );
    this._showPicker(false);
    const schedule = (): void => this._scheduleLookup();
    this._bucket.addEventListener('input', schedule);
    this._key.addEventListener('input', schedule);
    if (options.key) this._scheduleLookup();
  }

  getValue(): IObjectCloneValue {
    const picking = !this._versionSelect.hidden;
    return {
      bucket: this._bucket.value.trim(),
      key: this._key.value.trim(),
      versionId: (picking ? this._versionSelect.value : this._versionText.value).trim(),
      targetDir: trimSlashes(this._target.value.trim())
    };
  }

  /** Resolves when the version picker has caught up with the key (for tests and callers). */
  get lookupDone(): Promise<void> {
    return this._lookup;
  }

  override dispose(): void {
    window.clearTimeout(this._timer);
    super.dispose();
  }

  private _scheduleLookup(): void {
    window.clearTimeout(this._timer);
    this._timer = window.setTimeout(() => {
      this._lookup = this._lookupVersions();
    }, VERSION_LOOKUP_DELAY_MS);
  }

  /** Fill the picker when the key is one this store archives or publishes. */
  private async _lookupVersions(): Promise<void> {
    const trans = this._trans;
    const generation = ++this._generation;
    const layout = this._storeLayout;
    const ours = pathOfKey(layout, this._bucket.value.trim(), this._key.value.trim());
    if (!ours) {
      this._showPicker(false);
      this._status.textContent = '';
      return;
    }
    this._status.textContent = trans.__('Looking up versions…');
    let versions: readonly ObjectVersion[];
    let more = false;
    try {
      // The first page: the newest versions of the key, which the picker offers.
      const listing = await this._client.versionsPage(ours.path);
      versions =
        ours.kind === 'published' ? listing.published.versions : listing.workspace.versions;
      // A full page and a next one: older versions of this copy may follow.
      more = typeof listing.next === 'string' && versions.length >= DEFAULT_VERSIONS_PAGE_LIMIT;
    } catch (error) {
      if (generation !== this._generation) return;
      this._showPicker(false);
      this._status.textContent = trans.__('No version list: %1', errorMessage(error));
      return;
    }
    if (generation !== this._generation || this.isDisposed) return;
    if (versions.length === 0) {
      this._showPicker(false);
      this._status.textContent = trans.__('No versions of this key in the store.');
      return;
    }
    this._versionSelect.replaceChildren();
    const latest = Dom.element('option', undefined, trans.__('Latest'));
    latest.value = '';
    this._versionSelect.appendChild(latest);
    for (const version of versions) {
      const option = Dom.element(
        'option',
        undefined,
        trans.__(
          '%1 · %2 · %3',
          formatTime(version.last_modified),
          formatBytes(version.size, trans),
          version.object_version_id
        )
      );
      option.value = version.object_version_id;
      this._versionSelect.appendChild(option);
    }
    this._status.textContent = more
      ? trans.__('The %1 newest versions', versions.length)
      : trans._n('%1 version', '%1 versions', versions.length);
    this._showPicker(true);
  }

  private _showPicker(show: boolean): void {
    this._versionSelect.hidden = !show;
    this._versionText.hidden = show;
  }

  private readonly _trans: TranslationBundle;
  private readonly _client: StoreClient;
  private readonly _storeLayout: IStoreLayout;
  private readonly _bucket: HTMLInputElement;
  private readonly _key: HTMLInputElement;
  private readonly _versionText: HTMLInputElement;
  private readonly _versionSelect: HTMLSelectElement;
  private readonly _target: HTMLInputElement;
  private readonly _status: HTMLSpanElement;
  private _timer = 0;
  private _generation = 0;
  private _lookup: Promise<void> = Promise.resolve();
}

export namespace ObjectCloneForm {
  export interface IOptions {
    trans: TranslationBundle;
    client: StoreClient;
    /** The store's bucket and prefixes. */
    layout: IStoreLayout;
    /** The folder the file browser shows. */
    targetDir: string;
    key?: string;
  }
}

/** What the file-system clone dialog asks for. */
export interface IFsCloneValue {
  relpath: string;
  targetDir: string;
}

/** The body of "Clone from file system…": a path below the clone base directory, and a folder. */
export class FsCloneForm extends FormBody<IFsCloneValue> {
  constructor(options: { trans: TranslationBundle; targetDir: string }) {
    super();
    const { trans } = options;
    this.addClass('jp-store-CloneForm');
    this._relpath = Dom.textInput('relpath', '', trans.__('e.g. shared/templates/report.ipynb'));
    this._target = Dom.textInput('target', options.targetDir, trans.__('(the root folder)'));
    this.node.appendChild(
      Dom.field(
        trans.__('Path'),
        this._relpath,
        trans.__("Relative to the server's clone base directory.")
      )
    );
    this.node.appendChild(
      Dom.field(
        trans.__('Target folder'),
        this._target,
        trans.__('A file of the same name there is kept: the copy gets a new name.')
      )
    );
  }

  getValue(): IFsCloneValue {
    return {
      relpath: this._relpath.value.trim(),
      targetDir: trimSlashes(this._target.value.trim())
    };
  }

  private readonly _relpath: HTMLInputElement;
  private readonly _target: HTMLInputElement;
}

/** What the clone commands need from the application. */
export interface ICloneContext {
  client: StoreClient;
  trans: TranslationBundle;
  /** The store's bucket and prefixes, as feature detection last reported them. */
  layout(): IStoreLayout;
  /** Open the cloned file. */
  open(path: string): Promise<void>;
}

/**
 * Ask for an object (and version) and clone it into `targetDir`, with a notification for
 * progress; then open the copy.
 *
 * @returns the contents model of the copy, or null when cancelled or failed (the failure was shown).
 */
export async function cloneFromObjectStorage(
  context: ICloneContext,
  targetDir: string
): Promise<ContentsModel | null> {
  const { client, trans } = context;
  const layout = context.layout();
  let value: IObjectCloneValue = {
    bucket: layout.bucket,
    key: '',
    versionId: '',
    targetDir
  };
  for (;;) {
    const form = new ObjectCloneForm({
      trans,
      client,
      layout,
      targetDir: value.targetDir,
      key: value.key
    });
    const choice = await showDialog({
      title: trans.__('Clone from object storage'),
      body: form,
      buttons: [
        Dialog.cancelButton({ label: trans.__('Cancel') }),
        Dialog.okButton({ label: trans.__('Clone') })
      ],
      focusNodeSelector: 'input[name="key"]'
    });
    if (!choice.button.accept || choice.value === null) return null;
    value = choice.value;
    const missing = !value.bucket ? trans.__('a bucket') : !value.key ? trans.__('a key') : '';
    if (!missing) break;
    await showStoreError(trans.__('Cannot clone'), new Error(trans.__('Give %1.', missing)), trans);
  }
  const name = lastSegment(value.key);
  const source = `s3://${value.bucket}/${value.key}`;
  return runClone(context, trans.__('Cloning %1…', source), () =>
    client.cloneObject({
      object_bucket: value.bucket,
      object_key: value.key,
      object_version_id: value.versionId || null,
      target_path: name ? joinPath(value.targetDir, name) : null
    })
  );
}

/**
 * Ask for a path below the clone base directory and clone it into `targetDir`; then open it.
 *
 * @returns the contents model of the copy, or null when cancelled or failed (the failure was shown).
 */
export async function cloneFromFileSystem(
  context: ICloneContext,
  targetDir: string
): Promise<ContentsModel | null> {
  const { client, trans } = context;
  let value: IFsCloneValue;
  for (;;) {
    const choice = await showDialog({
      title: trans.__('Clone from file system'),
      body: new FsCloneForm({ trans, targetDir }),
      buttons: [
        Dialog.cancelButton({ label: trans.__('Cancel') }),
        Dialog.okButton({ label: trans.__('Clone') })
      ],
      focusNodeSelector: 'input[name="relpath"]'
    });
    if (!choice.button.accept || choice.value === null) return null;
    value = choice.value;
    if (value.relpath) break;
    await showStoreError(trans.__('Cannot clone'), new Error(trans.__('Give a path.')), trans);
  }
  const name = lastSegment(value.relpath);
  return runClone(context, trans.__('Cloning %1…', value.relpath), () =>
    client.cloneFromFileSystem({
      relpath: value.relpath,
      target_path: name ? joinPath(value.targetDir, name) : null
    })
  );
}

/** Run one clone call with a progress notification; open the copy, or show the failure. */
async function runClone(
  context: ICloneContext,
  progress: string,
  call: () => Promise<ContentsModel>
): Promise<ContentsModel | null> {
  const { trans } = context;
  const model = await runWithProgress(
    {
      progress,
      done: cloned => trans.__('Cloned to %1', cloned.path),
      failed: trans.__('Clone failed'),
      errorTitle: trans.__('Cannot clone')
    },
    trans,
    call
  );
  if (!model) return null;
  await context.open(model.path);
  return model;
}
