import { hubLinkContextFromEnv, LANDING_PARAMETER } from '@jupyter-store/contract';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { UpstreamAuthUnavailable, type Authenticator, type IRequestChecks } from '../gateway/auth';
import {
  checkHost,
  decodeXsrfToken,
  newXsrfCookieValue,
  xsrfCookieValue
} from '../gateway/security';
import { requestQuery } from '../gateway/assemble';
import { httpErrors } from '../http/errorCatalogue';

/**
 * Guard a page as Jupyter guards its own pages: Host check (403), then authentication, sending
 * whoever is not logged in to `{base}login?next=<this page>`. The page's own POST is checked by
 * the API (XSRF and Origin), so GET needs no more. Sets an `_xsrf` cookie when there is none,
 * and `request.jupyterAuth` for the permission checks that follow.
 */
export function requirePageAuth(options: requirePageAuth.IOptions): RequestHandler {
  const { authenticator, checks, baseUrl } = options;
  const onHub = options.onHub ?? hubLinkContextFromEnv(process.env) !== null;
  return (request: Request, response: Response, next: NextFunction) => {
    if (!checkHost(request.headers.host, checks)) {
      next(httpErrors.hostNotAllowed('This Host is not allowed'));
      return;
    }
    authenticator.authenticate(request).then(
      authentication => {
        if (!authentication) {
          response.redirect(302, loginUrl(request, baseUrl, onHub));
          return;
        }
        request.jupyterAuth = authentication;
        const cookie = xsrfCookieValue(request.headers.cookie);
        if (cookie === undefined || !decodeXsrfToken(cookie)?.length) {
          // Path as Jupyter sets it, so that Jupyter's pages reuse this cookie, never add another.
          response.setHeader(
            'Set-Cookie',
            `_xsrf=${newXsrfCookieValue()}; Path=${baseUrl}; SameSite=Lax`
          );
        }
        next();
      },
      (error: unknown) =>
        next(
          error instanceof UpstreamAuthUnavailable
            ? httpErrors.upstreamUnavailable(error.message)
            : error
        )
    );
  };
}

/**
 * `{base}login?next=…` for this page. The query is re-encoded (a raw `:` in it would make
 * Jupyter's redirect check read it as a scheme) and a refused `token` is left out.
 *
 * On a JupyterHub, `{base}login` is a token form: the Hub's login (OAuth) starts only from a
 * page of the single-user server. So the way there is JupyterLab, `{base}lab?store-landing=
 * <this page, relative>`, whose page logs the visitor in and whose extension then opens this
 * page again (`hubLanding.ts` of the lab extension).
 */
function loginUrl(request: Request, baseUrl: string, onHub: boolean): string {
  const query = new URLSearchParams(requestQuery(request));
  query.delete('token');
  const page = `${request.originalUrl.split('?', 1)[0]}${query.size ? `?${query}` : ''}`;
  if (onHub && page.startsWith(baseUrl)) {
    return `${baseUrl}lab?${LANDING_PARAMETER}=${encodeURIComponent(page.slice(baseUrl.length))}`;
  }
  return `${baseUrl}login?next=${encodeURIComponent(page)}`;
}

export namespace requirePageAuth {
  export interface IOptions {
    /** Asks the upstream who the caller is. */
    readonly authenticator: Authenticator;
    /** The Host rules in force. */
    readonly checks: IRequestChecks;
    /** Jupyter's base_url, normalised (starts and ends with `/`): where the login page is. */
    readonly baseUrl: string;
    /** Whether Jupyter is a JupyterHub single-user server; default: the Hub's variables say so. */
    readonly onHub?: boolean;
  }
}
