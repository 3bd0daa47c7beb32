/**
 * Start our contents app (`createApp` from `packages/server/src/app.ts`) on 127.0.0.1 with a free
 * port, for the differential conformance suite and the benchmark.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp, type App } from '../../src/app';
import { normaliseBaseUrl } from './jupyterServer';

/**
 * Options passed to `createApp`: `rootDir`, `baseUrl` (default `/`), `jupyterDataDir` (the trust
 * notary's `nbsignatures.db` and `notebook_secret`) and `contents` (e.g. `allowHidden`).
 */
export type OurAppOptions = App.IOptions;

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

/**
 * Start our contents app on 127.0.0.1 with a free port.
 *
 * @param options - root directory, base URL, notary data directory, contents settings.
 * @returns a handle; always call `stop()` (e.g. in `afterAll`).
 */
export async function startOurServer(options: OurAppOptions): Promise<OurServerHandle> {
  const baseUrl = normaliseBaseUrl(options.baseUrl);
  const app = createApp({ ...options, baseUrl });
  const server: Server = createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
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
      stopped ??= new Promise<void>(resolve => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return stopped;
    }
  };
}
