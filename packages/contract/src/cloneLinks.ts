/**
 * Clone links: the URLs of the landing pages (`store/clone`, `store/fs-clone`) that people send
 * each other. One builder for every client, so that a link copied in JupyterLab and one printed
 * elsewhere lead to the same place.
 */

/** The landing pages a clone link may open, relative to a server's base URL. */
export type CloneLandingPage = 'store/clone' | 'store/fs-clone';

/**
 * What a single-user server of JupyterHub knows about its Hub: JupyterLab's page config
 * (`hubPrefix`, `hubHost`) or the spawner's environment (`$JUPYTERHUB_BASE_URL` + `hub/`,
 * `$JUPYTERHUB_HOST`).
 */
export interface IHubLinkContext {
  /** The Hub's own prefix, `/hub/` unless the Hub has a base URL. */
  readonly hubPrefix: string;
  /**
   * The Hub's origin when it is not the server's (JupyterHub with subdomains); empty when the
   * Hub and the server share one origin.
   */
  readonly hubHost: string;
}

/** What {@link cloneLinkUrl} needs. */
export interface ICloneLinkOptions {
  /** The absolute base URL of the server the link is copied from, `http://host/user/alice/`. */
  readonly serverUrl: string;
  /** The Hub the server runs under, or null off a Hub. */
  readonly hub: IHubLinkContext | null;
  readonly page: CloneLandingPage;
  /** The page's query parameters; undefined and empty values are left out. */
  readonly query: Readonly<Record<string, string | null | undefined>>;
}

/**
 * The URL of a landing page for whoever opens it.
 *
 * Off a Hub, the page of the server the link was copied from (`{base}store/clone?…`): whoever
 * can log in to that server clones into it. On a Hub, the server's URL names its owner
 * (`/user/alice/`), whom the recipient cannot log in as; the link goes through the Hub's
 * `user-redirect` instead (`<hub>/hub/user-redirect/store/clone?…`), which sends each person,
 * after the Hub's login and once their server runs, to the same page in their own default
 * server. A link copied in a named server (`/user/alice/work/`) leads to the recipient's default
 * server too: the recipient may have no server of that name, and `user-redirect` knows none.
 */
export function cloneLinkUrl(options: ICloneLinkOptions): string {
  const query = Object.entries(options.query)
    .filter((entry): entry is [string, string] => typeof entry[1] === 'string' && entry[1] !== '')
    .map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`)
    .join('&');
  const search = query === '' ? '' : `?${query}`;
  const server = new URL(options.serverUrl);
  if (!options.hub) {
    return `${new URL(options.page, Private.withSlash(server.href)).href}${search}`;
  }
  const origin = options.hub.hubHost ? Private.origin(options.hub.hubHost, server) : server.origin;
  const prefix = Private.withSlash(options.hub.hubPrefix || '/hub/');
  return `${origin}${prefix}user-redirect/${options.page}${search}`;
}

/**
 * The Hub of a single-user server, from the variables its spawner sets; null when they are not
 * a Hub's (no `$JUPYTERHUB_API_URL` nor `$JUPYTERHUB_BASE_URL`).
 */
export function hubLinkContextFromEnv(
  env: Readonly<Record<string, string | undefined>>
): IHubLinkContext | null {
  if (!env.JUPYTERHUB_BASE_URL && !env.JUPYTERHUB_API_URL) return null;
  const base = Private.withSlash(env.JUPYTERHUB_BASE_URL || '/');
  return { hubPrefix: `${base}hub/`, hubHost: env.JUPYTERHUB_HOST ?? '' };
}

namespace Private {
  /** The origin of `host`, which JupyterHub gives with its scheme (`https://hub.example.org`). */
  export function origin(host: string, server: URL): string {
    return new URL(host.includes('://') ? host : `${server.protocol}//${host}`).origin;
  }

  /** `path` ending with exactly one slash, starting with one. */
  export function withSlash(path: string): string {
    if (/^[a-z][a-z0-9+.-]*:/i.test(path)) return path.endsWith('/') ? path : `${path}/`;
    return `/${path.replace(/^\/+|\/+$/g, '')}/`.replace(/^\/\/$/, '/');
  }
}

/**
 * The query parameter with which the gateway sends a visitor of a landing page through
 * JupyterLab's page first, on a JupyterHub (whose login only the server's own pages start):
 * `{base}lab?store-landing=<the landing page below base, percent-encoded>`.
 */
export const LANDING_PARAMETER = 'store-landing';

/**
 * The landing page a JupyterLab URL's query (`search`) names in {@link LANDING_PARAMETER},
 * below the base URL; null when there is none or it is not exactly one of the two landing pages
 * with a query of its own, so that the parameter cannot lead anywhere else (no other path, no
 * `..`, no fragment).
 */
export function landingTarget(search: string): string | null {
  const value = new URLSearchParams(search).get(LANDING_PARAMETER);
  if (!value || !/^store\/(clone|fs-clone)(\?[^#]*)?$/.test(value)) return null;
  return value;
}
