/**
 * Start our contents app (`createApp` from `packages/server/src/app.ts`) on 127.0.0.1 with a free
 * port, for the differential conformance suite and the benchmark.
 */
import { existsSync } from 'node:fs';
import { createServer, type Server, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { normaliseBaseUrl } from './jupyterServer';

/** Options passed to `createApp`. */
export interface OurAppOptions {
  /** The contents root. */
  rootDir: string;
  /** The base URL; default `/`. */
  baseUrl?: string;
  /** The Jupyter data directory of the trust notary (`nbsignatures.db`, `notebook_secret`). */
  jupyterDataDir?: string;
}

/** A running instance of our contents app. */
export interface OurServerHandle {
  /** `http://127.0.0.1:<port>`, without the base URL. */
  readonly url: string;
  /** The base URL, with leading and trailing slash. */
  readonly baseUrl: string;
  /** The contents root. */
  readonly rootDir: string;
  /** The TCP port. */
  readonly port: number;
  /** The full URL of a path below the base URL. */
  api(relative: string): string;
  /** Close the listener and every open connection; idempotent. */
  stop(): Promise<void>;
}

/** Where the lead's `createApp` lives. */
export const APP_MODULE = resolve(__dirname, '..', '..', 'src', 'app.ts');

type CreateApp = (options: OurAppOptions) => RequestListener | Promise<RequestListener>;

/**
 * Load `createApp` from `src/app.ts`, waiting up to `waitMs` for the file to appear (it is being
 * written concurrently); throws with a clear message if it never does.
 */
export async function loadCreateApp(waitMs = 0): Promise<CreateApp> {
  const deadline = Date.now() + waitMs;
  while (!existsSync(APP_MODULE)) {
    if (Date.now() >= deadline) {
      throw new Error(`Our contents app is missing: ${APP_MODULE} does not exist (createApp(options) expected).`);
    }
    await new Promise((r) => setTimeout(r, 1_000));
  }
  // A computed path keeps this file compiling before app.ts exists; ts-jest compiles it on load.
  const modulePath = join(__dirname, '..', '..', 'src', 'app');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const loaded = require(modulePath) as { createApp?: unknown };
  if (typeof loaded.createApp !== 'function') {
    throw new Error(`${APP_MODULE} does not export a createApp function.`);
  }
  return loaded.createApp as CreateApp;
}

/**
 * Start our contents app on 127.0.0.1 with a free port.
 *
 * @param options - root directory, base URL, notary data directory.
 * @returns a handle; always call `stop()` (e.g. in `afterAll`).
 */
export async function startOurServer(options: OurAppOptions): Promise<OurServerHandle> {
  const createApp = await loadCreateApp();
  const baseUrl = normaliseBaseUrl(options.baseUrl);
  const app = await createApp({ ...options, baseUrl });
  const server: Server = createServer(app);
  await new Promise<void>((r, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => r());
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  let stopped: Promise<void> | undefined;
  return {
    url,
    baseUrl,
    rootDir: options.rootDir,
    port,
    api: (relative: string) => `${url}${baseUrl}${relative.replace(/^\/+/, '')}`,
    stop: () => {
      stopped ??= new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      });
      return stopped;
    }
  };
}
