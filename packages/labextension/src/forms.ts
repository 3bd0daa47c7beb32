import type { Dialog } from '@jupyterlab/apputils';
import { refreshIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

/** Small DOM helpers shared by the dialogs and panels (plain DOM: no framework needed). */
export namespace Dom {
  /** An element with a class and optional text. */
  export function element<K extends keyof HTMLElementTagNameMap>(
    tag: K,
    className?: string,
    text?: string
  ): HTMLElementTagNameMap[K] {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  /**
   * A text button: its visible label stays its accessible name, `title` says more in a tooltip,
   * and `data-action` names what it does (for tests). When `onClick` returns a promise the
   * button is disabled until it settles, so that a second click does not run it twice.
   */
  export function button(
    className: string,
    label: string,
    options: { action: string; title: string; onClick: () => void | Promise<unknown> }
  ): HTMLButtonElement {
    const node = element('button', className, label);
    node.type = 'button';
    node.dataset.action = options.action;
    node.title = options.title;
    node.addEventListener('click', () => {
      const running = options.onClick();
      if (!running) return;
      node.disabled = true;
      void running.finally(() => {
        node.disabled = false;
      });
    });
    return node;
  }

  /**
   * A minimal button with JupyterLab's refresh icon: `title` is its tooltip, `label` what it
   * refreshes for screen readers ("Refresh the versions").
   */
  export function refreshButton(
    title: string,
    label: string,
    onClick: () => void
  ): HTMLButtonElement {
    const button = element('button', 'jp-Button jp-mod-minimal jp-store-IconButton');
    button.type = 'button';
    button.title = title;
    button.setAttribute('aria-label', label);
    refreshIcon.element({ container: button, elementSize: 'normal' });
    button.addEventListener('click', onClick);
    return button;
  }

  /** A labelled text input: `<label>Label <input></label>`, with an optional hint below. */
  export function field(
    label: string,
    input: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement,
    hint?: string
  ): HTMLLabelElement {
    const row = element('label', 'jp-store-Field');
    row.appendChild(element('span', 'jp-store-Field-label', label));
    row.appendChild(input);
    if (hint) row.appendChild(element('span', 'jp-store-Field-hint', hint));
    return row;
  }

  /** A text input in JupyterLab's style. */
  export function textInput(name: string, value = '', placeholder = ''): HTMLInputElement {
    const input = element('input', 'jp-mod-styled jp-store-Field-input');
    input.type = 'text';
    input.name = name;
    input.value = value;
    input.placeholder = placeholder;
    input.spellcheck = false;
    input.autocomplete = 'off';
    return input;
  }
}

/**
 * A dialog body made of form fields; `getValue()` reads them when the dialog closes.
 */
export abstract class FormBody<T> extends Widget implements Dialog.IBodyWidget<T> {
  constructor() {
    super({ node: document.createElement('form') });
    this.addClass('jp-store-Form');
    // Enter accepts the dialog (its own key handler); the form must not submit the page.
    this.node.addEventListener('submit', event => event.preventDefault());
  }

  /** The values the user entered. */
  abstract getValue(): T;
}
