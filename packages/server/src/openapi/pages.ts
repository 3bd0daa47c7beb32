/**
 * The parts of the OpenAPI document that no zod schema of the contract describes, written out:
 * how callers authenticate, the path parameters, and the HTML landing pages behind clone links
 * (which people open in a browser, so no client calls them).
 */

/** An OpenAPI object, as it goes into the document. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type OpenApiObject = Record<string, any>;

/** Jupyter's ways of authenticating, as the gateway checks them. */
export const SECURITY_SCHEMES: OpenApiObject = {
  token: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description:
      "Jupyter's token in the Authorization header: `Authorization: token <token>` (`bearer` " +
      'works too). A token-authenticated request needs no XSRF token and may come from any ' +
      'origin.'
  },
  tokenQuery: {
    type: 'apiKey',
    in: 'query',
    name: 'token',
    description:
      "Jupyter's token as the query parameter `token` (it wins over the Authorization " +
      'header). It ends up in logs and browser history; prefer the header.'
  },
  loginCookie: {
    type: 'apiKey',
    in: 'cookie',
    name: 'username-127-0-0-1-8888',
    description:
      "Jupyter's login cookie, set by Jupyter's login page (or by opening `lab?token=…`). Its " +
      'name is `username-<host>-<port>` with dots and colons written as `-`, so the name shown ' +
      'is the one for `127.0.0.1:8888`. A cookie-authenticated request must come from the ' +
      "server's own origin (or one allowed by `--allow-origin`), else 404; one that changes " +
      'something also needs the XSRF token (`xsrfHeader` or `xsrfQuery`).'
  },
  xsrfHeader: {
    type: 'apiKey',
    in: 'header',
    name: 'X-XSRFToken',
    description:
      'The value of the `_xsrf` cookie that Jupyter (or a landing page) set, repeated in the ' +
      '`X-XSRFToken` header (`X-CSRFToken` works too), as tornado checks it; the `_xsrf` ' +
      'cookie must be sent as well. Only for cookie-authenticated PUT, POST, DELETE and PATCH; ' +
      'a missing or mismatched token is 403 with reason `xsrf`.'
  },
  xsrfQuery: {
    type: 'apiKey',
    in: 'query',
    name: '_xsrf',
    description: 'The same XSRF token as the query parameter `_xsrf` instead of the header.'
  }
};

/** Who may read: a token, or a login cookie. */
export function readSecurity(): OpenApiObject[] {
  return [{ token: [] }, { tokenQuery: [] }, { loginCookie: [] }];
}

/** Who may write: a token, or a login cookie with the XSRF token. */
export function writeSecurity(): OpenApiObject[] {
  return [
    { token: [] },
    { tokenQuery: [] },
    { loginCookie: [], xsrfHeader: [] },
    { loginCookie: [], xsrfQuery: [] }
  ];
}

/** The notebook-server paths that store API routes take. */
export const PATH_PARAMETERS: OpenApiObject = {
  NotebookPath: {
    name: 'path',
    in: 'path',
    required: true,
    description:
      "The notebook's path in the Jupyter server, relative to its root, as the contents API " +
      'names it (`team/report.ipynb`). It may contain `/`; each segment is percent-encoded as ' +
      'in a contents-API URL. Refused with 400 when empty, absolute, hidden or with `.` or ' +
      '`..` segments.',
    schema: { type: 'string' }
  },
  PublishPath: {
    name: 'path',
    in: 'path',
    required: true,
    description:
      'Where to publish, relative to `published_prefix`: the notebook goes to the key ' +
      '`<published_prefix>/<path>`. It must end in `.ipynb`, may contain `/` (each segment ' +
      'percent-encoded), and is refused when empty, absolute, hidden or with `.` or `..` ' +
      'segments. It need not be where the notebook lives in the server.',
    schema: { type: 'string' }
  }
};

/** A complete HTML document. */
export const HTML_PAGE_SCHEMA: OpenApiObject = {
  type: 'string',
  description: 'A complete HTML document.',
  pattern: '^<!DOCTYPE html>'
};

/** The answers of the landing pages that the two pages share. */
export const PAGE_RESPONSES: OpenApiObject = {
  LandingPage: {
    description:
      'The confirmation page. When the browser has no `_xsrf` cookie yet, one is set, so that ' +
      "the page's POST can send the XSRF header.",
    headers: {
      'Set-Cookie': {
        description: '`_xsrf=<token>; Path=<base_url>; SameSite=Lax`, only when none was sent.',
        schema: { type: 'string' }
      }
    },
    content: { 'text/html': { schema: { $ref: '#/components/schemas/HtmlPage' } } }
  },
  LoginRedirect: {
    description:
      "The caller is not logged in: the browser is sent to Jupyter's login page, which brings " +
      'it back to this page (query kept, a refused `token` left out) after login. On a ' +
      "JupyterHub single-user server, where Jupyter's login page is a token form, it is sent " +
      "to JupyterLab instead, whose page runs the Hub's login and whose extension then opens " +
      'this page again.',
    headers: {
      Location: {
        required: true,
        description:
          '`<base_url>login?next=<this page, percent-encoded>`; on a JupyterHub ' +
          '`<base_url>lab?store-landing=<this page below base_url, percent-encoded>`.',
        schema: { type: 'string', pattern: 'login\\?next=|lab\\?store-landing=' }
      }
    },
    content: {
      'text/plain': { schema: { type: 'string' } },
      'text/html': { schema: { type: 'string' } }
    }
  }
};

/** An HTML answer of a landing page. */
function htmlPage(description: string): OpenApiObject {
  return {
    description,
    content: { 'text/html': { schema: { $ref: '#/components/schemas/HtmlPage' } } }
  };
}

/** A query parameter of a landing page. */
function queryParameter(
  name: string,
  required: boolean,
  description: string,
  schema: OpenApiObject
): OpenApiObject {
  return { name, in: 'query', required, description, schema };
}

/** The landing pages and their assets, by path. */
export function landingPagePaths(): OpenApiObject {
  return {
    '/store/clone': {
      get: {
        tags: ['landing pages'],
        operationId: 'objectCloneLandingPage',
        summary: 'Landing page of a clone link from object storage',
        description: `An HTML page that shows the bucket, the key and the version to be cloned, proposes a
target path, and asks for confirmation. Opening it changes nothing: only its **Clone**
button posts to \`api/store/clone\` (with the XSRF header from the \`_xsrf\` cookie, which
the page sets when the browser has none). On success the browser goes to
\`lab/tree/<path>\`; on failure the page shows the API's message.

The parameters are checked with the API's own rules before anything is shown, so a bad
link fails at once. Every URL in the page is relative. \`store/clone/\` redirects (302)
here, query kept.
`,
        parameters: [
          queryParameter(
            'object_bucket',
            true,
            'The bucket to clone from (a valid S3 bucket name).',
            {
              type: 'string',
              minLength: 1,
              maxLength: 255
            }
          ),
          queryParameter('object_key', true, 'The key of the object to clone.', {
            type: 'string',
            minLength: 1,
            maxLength: 1024
          }),
          queryParameter(
            'object_version_id',
            false,
            'A version of the object; left out or empty for the latest.',
            { type: 'string', maxLength: 1024 }
          )
        ],
        responses: {
          '200': { $ref: '#/components/responses/LandingPage' },
          '302': { $ref: '#/components/responses/LoginRedirect' },
          '400': htmlPage(
            'A parameter is missing, empty or malformed (an invalid bucket name, an over-long ' +
              'value): an HTML page that says which.'
          ),
          '403': htmlPage(
            'Cloning from object storage is off (`enable_object_cloning` is false), ' +
              '`clone_buckets` does not list `object_bucket`, or the Host is not allowed: an ' +
              'HTML page that says why.'
          ),
          '503': htmlPage(
            'Object storage is not usable (no bucket configured, or the bucket check failed), ' +
              'or Jupyter Server could not be asked who the caller is: an HTML page that says why.'
          )
        }
      }
    },
    '/store/fs-clone': {
      get: {
        tags: ['landing pages'],
        operationId: 'fsCloneLandingPage',
        summary: 'Landing page of a clone link from the file system',
        description: `An HTML page that shows the file below \`fs_cloning_basedir\` to be cloned, proposes a
target path and asks for confirmation; its **Clone** button posts to
\`api/store/fs-clone\`. Otherwise as \`GET store/clone\`. The file must exist inside the
base directory before the page is shown.
`,
        parameters: [
          queryParameter('relpath', true, "The file's path relative to `fs_cloning_basedir`.", {
            type: 'string',
            minLength: 1,
            maxLength: 4096
          })
        ],
        responses: {
          '200': { $ref: '#/components/responses/LandingPage' },
          '302': { $ref: '#/components/responses/LoginRedirect' },
          '400': htmlPage(
            '`relpath` is missing, empty or malformed (absolute, hidden, a directory, not a ' +
              'regular file): an HTML page that says which.'
          ),
          '403': htmlPage(
            'Cloning from the file system is off (`fs_cloning_basedir` unset or not a ' +
              'directory), the Host is not allowed, or the file cannot be read: an HTML page ' +
              'that says why.'
          ),
          '404': htmlPage(
            '`relpath` leads outside the base directory or does not exist: an HTML page that ' +
              'says which.'
          ),
          '503': htmlPage(
            'Jupyter Server could not be asked who the caller is: an HTML page that says so.'
          )
        }
      }
    },
    '/store/static/{file}': {
      get: {
        tags: ['landing pages'],
        operationId: 'landingPageAsset',
        summary: "The landing pages' script and stylesheet",
        description:
          'The files the landing pages load (`static/landing.js`, `static/landing.css`, ' +
          'relative to the page). They hold nothing private and are served without ' +
          'authentication.',
        security: [],
        parameters: [
          {
            name: 'file',
            in: 'path',
            required: true,
            description: 'The file name.',
            schema: { type: 'string', examples: ['landing.js', 'landing.css'] }
          }
        ],
        responses: {
          '200': {
            description: 'The file.',
            content: {
              'text/javascript': { schema: { type: 'string' } },
              'text/css': { schema: { type: 'string' } }
            }
          },
          '404': {
            description: 'There is no such file (reason `no such route`).',
            content: {
              'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } }
            }
          }
        }
      }
    }
  };
}
