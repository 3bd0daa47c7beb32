import {
  MAX_VERSION_NAME_CHARS,
  MAX_VERSION_NOTE_CHARS,
  type NamedVersion,
  type ObjectVersion
} from '@jupyter-store/contract';
import { Dialog, showDialog } from '@jupyterlab/apputils';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { TranslationBundle } from '@jupyterlab/translation';
import { runWithProgress } from './errors';
import { formatTime } from './format';
import { Dom, FormBody } from './forms';
import type { StoreClient } from './storeClient';

/**
 * Named versions in JupyterLab: File › Save Version… saves the notebook and names the version
 * that save archives; the versions panel shows names and notes, and names any archived version.
 * The name is kept by the server apart from the archive, so the version outlives retention.
 */

/** What the label dialog asks for. */
export interface ILabelInput {
  readonly name: string;
  /** Null when left empty. */
  readonly note: string | null;
}

/**
 * The body of the label dialog: a name (required) and a note. The dialog's OK button is
 * disabled while the name is blank, so an empty name is never sent.
 */
export class LabelForm extends FormBody<ILabelInput> {
  constructor(options: LabelForm.IOptions) {
    super();
    const { trans } = options;
    this.addClass('jp-store-LabelForm');
    this._name = Dom.textInput('name', options.name ?? '', trans.__('e.g. before refactor'));
    this._name.maxLength = MAX_VERSION_NAME_CHARS;
    this._name.required = true;
    this.node.appendChild(Dom.field(trans.__('Name'), this._name));
    this._note = Dom.element(
      'textarea',
      'jp-mod-styled jp-store-Field-input jp-store-LabelForm-note'
    );
    this._note.name = 'note';
    this._note.rows = 3;
    this._note.maxLength = MAX_VERSION_NOTE_CHARS;
    this._note.value = options.note ?? '';
    this._note.placeholder = trans.__('e.g. sent to reviewers');
    this.node.appendChild(
      Dom.field(
        trans.__('Note (optional)'),
        this._note,
        trans.__('At most %1 characters.', MAX_VERSION_NOTE_CHARS)
      )
    );
    if (options.explanation) {
      this.node.appendChild(Dom.element('p', 'jp-store-Form-note', options.explanation));
    }
    this._name.addEventListener('input', () => this._updateAccept());
  }

  getValue(): ILabelInput {
    const note = this._note.value.trim() === '' ? null : this._note.value;
    return { name: this._name.value.trim(), note };
  }

  protected override onAfterAttach(): void {
    this._updateAccept();
    this._name.focus();
  }

  /** OK is enabled only with a name; the dialog's footer is a sibling of this body. */
  private _updateAccept(): void {
    const dialog = this.node.closest('.jp-Dialog-content');
    const accept = dialog?.querySelector<HTMLButtonElement>('.jp-Dialog-button.jp-mod-accept');
    if (accept) accept.disabled = this._name.value.trim() === '';
  }

  private readonly _name: HTMLInputElement;
  private readonly _note: HTMLTextAreaElement;
}

export namespace LabelForm {
  export interface IOptions {
    trans: TranslationBundle;
    /** The name and note shown first (a version's current label). */
    name?: string;
    note?: string | null;
    /** A line below the fields: what happens on OK. */
    explanation?: string;
  }
}

/** Ask for a name and a note; null when cancelled. */
async function askForLabel(
  title: string,
  accept: string,
  options: LabelForm.IOptions
): Promise<ILabelInput | null> {
  const { trans } = options;
  const result = await showDialog({
    title,
    body: new LabelForm(options),
    focusNodeSelector: 'input[name="name"]',
    buttons: [
      Dialog.cancelButton({ label: trans.__('Cancel') }),
      Dialog.okButton({ label: accept })
    ]
  });
  if (!result.button.accept || result.value === null || result.value.name === '') return null;
  return result.value;
}

/**
 * File › Save Version…: ask for a name and a note, save the notebook, then name the version the
 * save archived (the server waits for it to reach the archive).
 *
 * @returns the named version, or null when cancelled or failed (the failure was shown).
 */
export async function saveVersion(
  panel: NotebookPanel,
  client: StoreClient,
  trans: TranslationBundle
): Promise<NamedVersion | null> {
  const { context } = panel;
  await context.ready;
  const label = await askForLabel(trans.__('Save Version'), trans.__('Save Version'), {
    trans,
    explanation: trans.__(
      'The notebook is saved, and the version saved gets this name. Named versions are kept when old versions are cleaned up.'
    )
  });
  if (label === null || panel.isDisposed) return null;
  const path = context.path;
  return runWithProgress(
    {
      progress: trans.__('Saving version "%1"…', label.name),
      done: () => trans.__('Saved version "%1" of %2', label.name, path),
      failed: trans.__('Saving the version failed'),
      errorTitle: trans.__('Cannot save the version')
    },
    trans,
    async () => {
      await context.save();
      return client.nameVersion(path, { name: label.name, note: label.note });
    }
  );
}

/**
 * The versions panel's "Name…": name (or rename) one archived version, of `path` (the path it
 * was archived under).
 *
 * @returns the named version, or null when cancelled or failed (the failure was shown).
 */
export async function nameArchivedVersion(
  path: string,
  version: ObjectVersion,
  client: StoreClient,
  trans: TranslationBundle
): Promise<NamedVersion | null> {
  const when = formatTime(version.last_modified);
  const label = await askForLabel(trans.__('Name the version of %1', when), trans.__('Name'), {
    trans,
    name: version.label?.name,
    note: version.label?.note,
    explanation: trans.__('Named versions are kept when old versions are cleaned up.')
  });
  if (label === null) return null;
  return runWithProgress(
    {
      progress: trans.__('Naming the version of %1…', when),
      done: () => trans.__('Named the version of %1 "%2"', when, label.name),
      failed: trans.__('Naming the version failed'),
      errorTitle: trans.__('Cannot name the version')
    },
    trans,
    () =>
      client.nameVersion(path, {
        name: label.name,
        note: label.note,
        object_version_id: version.object_version_id
      })
  );
}

/**
 * A named version's label for the versions panel: its name, prominent, and its note below;
 * null for a version without a name.
 */
export function labelElement(version: ObjectVersion, trans: TranslationBundle): HTMLElement | null {
  const { label } = version;
  if (!label) return null;
  const node = Dom.element('div', 'jp-store-VersionLabel');
  const name = Dom.element('span', 'jp-store-VersionLabel-name', label.name);
  name.title = trans.__('Named %1', formatTime(label.named_at));
  node.appendChild(name);
  if (label.note !== null) {
    node.appendChild(Dom.element('span', 'jp-store-VersionLabel-note', label.note));
  }
  return node;
}
