import express, { type Express } from 'express';
import { ContentsManager } from './contents/manager';
import { contentsApi } from './contents/routes';
import {
  CachingSignatureStore,
  NotebookNotary,
  WorkerSignatureStore,
  jupyterDataDir
} from './contents/trust';
import * as path from 'node:path';
import { assemble } from './gateway/assemble';

/**
 * The jupyter-store HTTP application: for now the Jupyter-compatible contents API.
 *
 * #### Notes
 * The gateway (auth, proxying to Jupyter Server, the store API) mounts around this; on its own
 * the application answers without authentication and must only listen on loopback.
 */
export function createApp(options: App.IOptions): Express {
  const baseUrl = normalizeBaseUrl(options.baseUrl ?? '/');
  const manager =
    options.manager ??
    new ContentsManager({
      rootDir: options.rootDir,
      notary: createNotary(options.jupyterDataDir ?? jupyterDataDir()),
      ...options.contents
    });
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.locals.contentsManager = manager;
  app.locals.baseUrl = baseUrl;
  const contents = contentsApi({ manager, baseUrl });
  app.use(`${baseUrl}${contents.prefix}`, assemble(contents));
  return app;
}

export namespace App {
  export interface IOptions {
    /** The directory served, shared with Jupyter Server. */
    rootDir: string;
    /** Jupyter's base_url; default `/`. */
    baseUrl?: string;
    /** The Jupyter data directory holding the notary's secret and database. */
    jupyterDataDir?: string;
    /** Further contents-manager settings (hidden files, trash, globs). */
    contents?: Partial<Omit<ContentsManager.IOptions, 'rootDir' | 'notary'>>;
    /** A ready contents manager, instead of one built from the options. */
    manager?: ContentsManager;
  }
}

/** A base URL that starts and ends with `/`, as Jupyter requires. */
export function normalizeBaseUrl(baseUrl: string): string {
  const trimmed = baseUrl.replace(/^\/+|\/+$/g, '');
  return trimmed === '' ? '/' : `/${trimmed}/`;
}

/**
 * The notary of a long-running server: Jupyter's shared secret and database, with the database
 * kept off the request path (see CachingSignatureStore) and out of the server's thread (see
 * WorkerSignatureStore: SQLite's calls are synchronous and its commits wait for the disk, which
 * would stall the event loop). Nothing of SQLite loads before trust is consulted.
 */
export function createNotary(dataDir: string): NotebookNotary {
  const dbFile = path.join(dataDir, 'nbsignatures.db');
  const database = new WorkerSignatureStore({ dbFile });
  return new NotebookNotary({ dataDir, store: new CachingSignatureStore(database, dbFile) });
}
