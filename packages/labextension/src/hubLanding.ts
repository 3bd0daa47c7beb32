import type { JupyterFrontEndPlugin } from '@jupyterlab/application';
import { PageConfig, URLExt } from '@jupyterlab/coreutils';
import { PLUGIN_ID } from './tokens';

/** The query parameter with which the gateway sends a clone link through JupyterLab. */
export const LANDING_PARAMETER = 'store-landing';

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
    if (target) window.location.replace(URLExt.join(PageConfig.getBaseUrl(), target));
  }
};

/**
 * The landing page named by `search` (a URL's query), relative to the base URL; null when
 * there is none or it is not one of the landing pages.
 */
export function landingTarget(search: string): string | null {
  const value = new URLSearchParams(search).get(LANDING_PARAMETER);
  if (!value || !/^store\/(clone|fs-clone)(\?|$)/.test(value)) return null;
  return value;
}
