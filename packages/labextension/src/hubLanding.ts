import type { JupyterFrontEndPlugin } from '@jupyterlab/application';
import { landingTarget } from '@jupyter-store/contract';
import { PageConfig } from '@jupyterlab/coreutils';
import { PLUGIN_ID } from './tokens';

/**
 * Back to a clone landing page after a JupyterHub login. On a Hub, the landing page cannot
 * start the single-user server's own login (the Hub's OAuth, which only the server's pages
 * start), so the gateway sends a visitor who is not logged in to
 * `{base}lab?store-landing=store/clone%3F…`: JupyterLab's page logs them in and loads, and this
 * plugin then goes on to the landing page. Only the two landing pages of this server are
 * accepted, so the parameter cannot send anyone elsewhere.
 */
export const hubLandingPlugin: JupyterFrontEndPlugin<void> = {
  id: `${PLUGIN_ID.split(':')[0]}:hub-landing`,
  description: 'Opens the clone landing page a JupyterHub login interrupted (jupyter-store).',
  autoStart: true,
  activate: (): void => {
    const target = landingTarget(window.location.search);
    // Appended, not joined: a path join would resolve `..` inside the query too.
    if (target) window.location.replace(`${PageConfig.getBaseUrl().replace(/\/?$/, '/')}${target}`);
  }
};
