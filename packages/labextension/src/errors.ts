import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';
import { errorMessage } from './format';
import { Dom } from './forms';
import { StoreRequestError } from './request';

/**
 * Show a failed store call in a dialog people can read: the server's message, with a long
 * explanation (an nbformat validation message, say) folded below its first paragraph.
 */
export async function showStoreError(
  title: string,
  error: unknown,
  trans: TranslationBundle
): Promise<void> {
  const body = new Widget();
  body.addClass('jp-store-Error');
  const message = errorMessage(error);
  const [summary, ...rest] = message.split('\n\n');
  body.node.appendChild(Dom.element('p', 'jp-store-Error-summary', summary));
  if (rest.length > 0) {
    const details = Dom.element('details', 'jp-store-Error-details');
    details.appendChild(Dom.element('summary', undefined, trans.__('Details')));
    details.appendChild(Dom.element('pre', undefined, rest.join('\n\n')));
    body.node.appendChild(details);
  }
  if (error instanceof StoreRequestError) {
    const status = error.reason
      ? trans.__('HTTP %1 (%2)', error.status, error.reason)
      : trans.__('HTTP %1', error.status);
    body.node.appendChild(Dom.element('p', 'jp-store-Error-status', status));
  }
  await showDialog({
    title,
    body,
    buttons: [Dialog.okButton({ label: trans.__('Close') })]
  });
}

/** What {@link runWithProgress} says along the way. */
export interface IProgressMessages<T> {
  /** The in-progress notification. */
  progress: string;
  /** The notification once it worked. */
  done: (result: T) => string;
  /** The notification when it failed; the first line of the error follows it. */
  failed: string;
  /** The title of the dialog that shows the failure in full. */
  errorTitle: string;
}

/**
 * Run a store call under an in-progress notification, which turns into success or failure; a
 * failure is also shown in full with {@link showStoreError}.
 *
 * @returns the call's result, or null when it failed (the user has been told).
 */
export async function runWithProgress<T>(
  messages: IProgressMessages<T>,
  trans: TranslationBundle,
  call: () => Promise<T>
): Promise<T | null> {
  const id = Notification.emit(messages.progress, 'in-progress', { autoClose: false });
  let result: T;
  try {
    result = await call();
  } catch (error) {
    Notification.update({
      id,
      message: trans.__('%1: %2', messages.failed, errorMessage(error).split('\n', 1)[0]),
      type: 'error',
      autoClose: 5000
    });
    await showStoreError(messages.errorTitle, error, trans);
    return null;
  }
  Notification.update({ id, message: messages.done(result), type: 'success', autoClose: 5000 });
  return result;
}
