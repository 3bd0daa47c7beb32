import { FsCloneRequestSchema, ObjectCloneRequestSchema } from '@jupyter-store/contract';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Request, Response } from 'express';
import type { Archiving } from '../archive/archiving';
import { requestQuery, type ISurface, type Route } from '../gateway/assemble';
import type { Logger } from '../gateway/logger';
import { checkCloneBucket } from '../store/clone';
import { cloneTarget } from '../store/cloneTarget';
import { requireFeature, type StoreFeature } from '../store/features';
import { checkFsSourceIsFile, resolveFsSource } from '../store/fsClone';
import { checkStorePath } from '../store/paths';
import { validate } from '../store/requests';
import { clonePage, pageErrorHandler, sendPage } from './render';

/**
 * The clone landing pages under `{base}store`: `GET clone?object_bucket&object_key[&object_version_id]`
 * and `GET fs-clone?relpath`, with their script and stylesheet.
 *
 * #### Notes
 * A page only describes what would be cloned and asks for confirmation: nothing happens on GET.
 * Its Clone button posts to `{base}api/store/clone` (or `fs-clone`) with the XSRF header taken
 * from the `_xsrf` cookie (set by the page's guard when the browser has none yet), shows the
 * API's message on failure, and on success goes to `{base}lab/tree/<path>`, where JupyterLab
 * opens the file. Every URL in a page is relative, and every string from the request is
 * HTML-escaped.
 *
 * A page only leads to a clone, which needs `contents: write`: a page is refused without it,
 * before the user is asked anything. The parameters are checked on GET with the API's own
 * rules, so a bad link fails first too: 400 for a missing, empty or malformed parameter; 403
 * when the feature is off, when `clone_buckets` does not list the bucket, or when the fs-clone
 * source has more than one hard link; 404 when `relpath` is outside `fs_cloning_basedir` or
 * missing; 503 when object storage is unusable. Errors are HTML pages with the status. A caller
 * who is not logged in is sent to Jupyter's login page (see `pageAuth.ts`), which brings them
 * back here.
 */
export function clonePages(options: clonePages.IOptions): ISurface {
  const requires = (feature: StoreFeature) => ({
    requires: () => requireFeature({ archiving: options.archiving }, feature)
  });
  return {
    prefix: 'store',
    kind: 'pages',
    checkPath: checkStorePath,
    errorHandler: pageErrorHandler(options.log),
    routes: [
      ['GET', '/static/landing.js', Private.staticFile('landing.js'), 'none'],
      ['GET', '/static/landing.css', Private.staticFile('landing.css'), 'none'],
      ['GET', '/clone/', Private.withoutSlash, 'none'],
      ['GET', '/fs-clone/', Private.withoutSlash, 'none'],
      [
        'GET',
        '/clone',
        Private.objectClonePage(options.archiving),
        'contents:write',
        requires('object clone')
      ],
      [
        'GET',
        '/fs-clone',
        Private.fsClonePage(options.archiving),
        'contents:write',
        requires('fs clone')
      ]
    ]
  };
}

export namespace clonePages {
  /** What the landing pages need. */
  export interface IOptions {
    readonly archiving: Pick<Archiving, 'settings' | 'features' | 'bucket'>;
    /** Where unexpected failures of a page are logged. */
    readonly log?: Logger;
  }
}

namespace Private {
  /** The pages' script and stylesheet, shipped with the package. */
  const STATIC_DIR = path.resolve(__dirname, '..', '..', 'static');

  /** Serve a static file, read once, with its content type. */
  export function staticFile(name: 'landing.js' | 'landing.css'): Route.Handler {
    const type = name.endsWith('.js') ? 'text/javascript' : 'text/css';
    const body = readFileSync(path.join(STATIC_DIR, name));
    return (request, response) => {
      response.setHeader('Content-Type', `${type}; charset=utf-8`);
      response.setHeader('X-Content-Type-Options', 'nosniff');
      response.setHeader('Cache-Control', 'no-cache');
      response.end(request.method === 'HEAD' ? undefined : body);
    };
  }

  /** `clone/` would break the page's relative URLs: send it to `clone`, query kept. */
  export function withoutSlash(request: Request, response: Response): void {
    const name = request.path.replace(/\/+$/, '').slice(1);
    const query = request.originalUrl.includes('?')
      ? request.originalUrl.slice(request.originalUrl.indexOf('?'))
      : '';
    response.redirect(302, `../${name}${query}`);
  }

  /** `GET clone?object_bucket&object_key[&object_version_id]`. */
  export function objectClonePage(archiving: clonePages.IOptions['archiving']): Route.Handler {
    return (request, response) => {
      const query = queryArguments(request, ['object_bucket', 'object_key', 'object_version_id']);
      const clone = validate(ObjectCloneRequestSchema, query);
      checkCloneBucket(archiving, clone.object_bucket);
      const version = clone.object_version_id ?? null;
      sendPage(response, 200, {
        title: 'Clone from object storage',
        body: clonePage({
          api: '../api/store/clone',
          source: [
            ['Bucket', clone.object_bucket],
            ['Key', clone.object_key],
            ['Version', version ?? 'latest']
          ],
          fields: {
            object_bucket: clone.object_bucket,
            object_key: clone.object_key,
            ...(version === null ? {} : { object_version_id: version })
          },
          target: defaultTarget(clone.object_key, 'object_key')
        })
      });
    };
  }

  /** `GET fs-clone?relpath`. */
  export function fsClonePage(archiving: clonePages.IOptions['archiving']): Route.Handler {
    return async (request, response) => {
      const { relpath } = validate(FsCloneRequestSchema, queryArguments(request, ['relpath']));
      const source = await resolveFsSource(archiving.settings.fs_cloning_basedir, relpath);
      await checkFsSourceIsFile(source, relpath);
      sendPage(response, 200, {
        title: 'Clone from the file system',
        body: clonePage({
          api: '../api/store/fs-clone',
          source: [['Path', relpath]],
          fields: { relpath },
          target: defaultTarget(relpath, 'relpath')
        })
      });
    };
  }

  /**
   * The named query arguments, as tornado's `get_argument` reads them (the last of repeated
   * values). An empty `object_version_id` means "latest", as a link built with an empty version
   * means; every other empty value stays empty and is refused by the schema.
   */
  function queryArguments(request: Request, names: readonly string[]): Record<string, string> {
    const query = requestQuery(request);
    const values: Record<string, string> = {};
    for (const name of names) {
      const value = query.getAll(name).at(-1);
      if (value === undefined || (name === 'object_version_id' && value === '')) continue;
      values[name] = value;
    }
    return values;
  }

  /** The target a clone gets by default, or empty when the source names no file. */
  function defaultTarget(source: string, field: 'object_key' | 'relpath'): string {
    try {
      return cloneTarget(undefined, source, field);
    } catch {
      return '';
    }
  }
}
