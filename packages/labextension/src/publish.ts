import type { PublishResult } from '@jupyter-store/contract';
import { Clipboard, Dialog, showDialog } from '@jupyterlab/apputils';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';
import { runWithProgress, showStoreError } from './errors';
import { Dom, FormBody } from './forms';
import { joinKey, trimSlashes, type IStoreLayout, type StoreClient } from './storeClient';

/**
 * The body of the publish dialog: where the notebook goes, `s3://<bucket>/<published prefix>/`
 * followed by an editable path that defaults to the notebook's own.
 */
export class PublishForm extends FormBody<string> {
  constructor(options: PublishForm.IOptions) {
    super();
    const { trans, layout, path } = options;
    this.addClass('jp-store-PublishForm');
    const destination = Dom.element('div', 'jp-store-Destination');
    destination.appendChild(
      Dom.element('span', 'jp-store-Destination-label', trans.__('Destination'))
    );
    const prefix = `s3://${layout.bucket}/${layout.publishedPrefix ? `${layout.publishedPrefix}/` : ''}`;
    destination.appendChild(Dom.element('code', 'jp-store-Destination-prefix', prefix));
    this._path = Dom.textInput('path', path);
    this._path.setAttribute('aria-label', trans.__('Path below the published prefix'));
    destination.appendChild(this._path);
    this.node.appendChild(destination);
    this.node.appendChild(
      Dom.element(
        'p',
        'jp-store-Form-note',
        trans.__('Others can clone the published copy; publishing again adds a new version.')
      )
    );
    if (options.dirty) {
      this.node.appendChild(
        Dom.element(
          'p',
          'jp-store-Form-note',
          trans.__('The notebook has unsaved changes: it is saved first.')
        )
      );
    }
  }

  /** The path below the published prefix. */
  getValue(): string {
    return trimSlashes(this._path.value.trim());
  }

  private readonly _path: HTMLInputElement;
}

export namespace PublishForm {
  export interface IOptions {
    trans: TranslationBundle;
    layout: IStoreLayout;
    /** The default path: the notebook's own. */
    path: string;
    /** Whether the notebook has unsaved changes. */
    dirty: boolean;
  }
}

/**
 * Publish a notebook to `layout`'s published prefix: ask where (and, when a published copy exists there, whether to replace
 * it), save it if it is dirty, publish with a notification for progress, then show the result.
 *
 * @returns the result, or null when the user cancelled or it failed (the failure was shown).
 */
export async function publishNotebook(
  panel: NotebookPanel,
  client: StoreClient,
  layout: IStoreLayout,
  trans: TranslationBundle
): Promise<PublishResult | null> {
  const { context } = panel;
  await context.ready;
  let path = context.path;
  for (;;) {
    const form = new PublishForm({ trans, layout, path, dirty: context.model.dirty });
    const choice = await showDialog({
      title: trans.__('Publish notebook'),
      body: form,
      buttons: [
        Dialog.cancelButton({ label: trans.__('Cancel') }),
        Dialog.okButton({ label: trans.__('Publish') })
      ],
      focusNodeSelector: 'input[name="path"]'
    });
    if (!choice.button.accept || choice.value === null) return null;
    path = choice.value;
    if (path === '') {
      await showStoreError(
        trans.__('Cannot publish'),
        new Error(trans.__('The path is empty.')),
        trans
      );
      continue;
    }
    if (!path.endsWith('.ipynb')) {
      await showStoreError(
        trans.__('Cannot publish'),
        new Error(trans.__('The path must end in .ipynb: "%1".', path)),
        trans
      );
      continue;
    }
    break;
  }

  // A published copy there already? Replacing it is a new version, but say so first.
  try {
    const listing = await client.versionsPage(path);
    if (listing.published.versions.length > 0) {
      const latest = listing.published.versions[0];
      const replace = await showDialog({
        title: trans.__('Replace the published copy?'),
        body: trans.__(
          '%1 is already published (last on %2). Publishing replaces it for everyone who clones it from now on; earlier versions stay in the bucket.',
          `s3://${listing.object_bucket}/${listing.published.object_key}`,
          new Date(latest.last_modified).toLocaleString()
        ),
        buttons: [
          Dialog.cancelButton({ label: trans.__('Cancel') }),
          Dialog.warnButton({ label: trans.__('Replace') })
        ]
      });
      if (!replace.button.accept) return null;
    }
  } catch (error) {
    await showStoreError(trans.__('Cannot publish'), error, trans);
    return null;
  }

  const destination = `s3://${layout.bucket}/${joinKey(layout.publishedPrefix, path)}`;
  const result = await runWithProgress(
    {
      progress: trans.__('Publishing %1 to %2…', context.path, destination),
      done: published => trans.__('Published %1', published.object_path),
      failed: trans.__('Publishing %1 failed', context.path),
      errorTitle: trans.__('Cannot publish %1', context.path)
    },
    trans,
    async () => {
      // What is on screen is what gets published: save first, then send that same model.
      if (context.model.dirty) await context.save();
      return client.publish(path, context.model.toJSON());
    }
  );
  if (!result) return null;
  await showPublishResult(result, client, trans);
  return result;
}

/** The result: object path, version id, and a button that copies the clone link. */
async function showPublishResult(
  result: PublishResult,
  client: StoreClient,
  trans: TranslationBundle
): Promise<void> {
  const link = client.cloneLink(result.object_bucket, result.object_key);
  const body = new Widget();
  body.addClass('jp-store-PublishResult');
  const facts = Dom.element('dl', 'jp-store-Facts');
  const fact = (term: string, value: string, name: string): void => {
    facts.appendChild(Dom.element('dt', undefined, term));
    const data = Dom.element('dd');
    const code = Dom.element('code', undefined, value);
    code.dataset.storeField = name;
    data.appendChild(code);
    facts.appendChild(data);
  };
  fact(trans.__('Object'), result.object_path, 'object-path');
  fact(
    trans.__('Version'),
    result.object_version_id ?? trans.__('(unversioned bucket)'),
    'version-id'
  );
  body.node.appendChild(facts);

  const linkRow = Dom.element('div', 'jp-store-LinkRow');
  const linkInput = Dom.textInput('clone-link', link);
  linkInput.readOnly = true;
  linkInput.setAttribute('aria-label', trans.__('Clone link'));
  linkRow.appendChild(linkInput);
  const copy = Dom.element(
    'button',
    'jp-Button jp-mod-styled jp-mod-reject jp-store-CopyLink',
    trans.__('Copy clone link')
  );
  copy.type = 'button';
  const copied = Dom.element('span', 'jp-store-Copied');
  copied.setAttribute('role', 'status');
  copy.addEventListener('click', () => {
    Clipboard.copyToSystem(link);
    copied.textContent = trans.__('Copied');
  });
  linkRow.appendChild(copy);
  linkRow.appendChild(copied);
  body.node.appendChild(linkRow);
  body.node.appendChild(
    Dom.element(
      'p',
      'jp-store-Form-note',
      trans.__(
        'Anyone with access to this server who opens the link gets their own copy of the published notebook.'
      )
    )
  );
  await showDialog({
    title: trans.__('Published'),
    body,
    buttons: [Dialog.okButton({ label: trans.__('Close') })]
  });
}
