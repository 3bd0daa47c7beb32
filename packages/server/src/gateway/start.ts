import * as net from 'node:net';
import { Archiving } from '../archive/archiving';
import type { StoreSettings } from '../settings';
import { clonePages } from '../pages/routes';
import { isPublishEnabled } from '../settings/publishEnabled';
import { storeApi } from '../store/routes';
import {
  askUpstreamWhatItLoads,
  ContentsEventEmitter,
  decideContentsBackend
} from './contentsBackend';
import { Gateway } from './gateway';
import type { Logger } from './logger';
import type { UpstreamAddress } from './upstream';

/**
 * Build and start a whole jupyter-store: the gateway bound first (a busy port fails in a moment,
 * not after Jupyter's start-up), then the upstream started or found, the contents backend
 * chosen, archiving started with its object store, the store routes mounted, and the gateway
 * listening. Returns null after logging why when any of it fails, having released what it took.
 */
export async function startGateway(options: startGateway.IOptions): Promise<Gateway | null> {
  const { log, upstreamToken } = options;
  try {
    await Private.checkAddressFree(options.ip, options.port);
  } catch (error) {
    log.fatal(
      { ip: options.ip, port: options.port, err: (error as Error).message },
      'cannot listen'
    );
    return null;
  }
  let upstream: UpstreamAddress;
  try {
    upstream = await options.startUpstream();
  } catch (error) {
    log.fatal({ err: (error as Error).message }, 'cannot start the Jupyter server');
    return null;
  }
  const setting = options.store.contents_backend;
  const contents = decideContentsBackend(
    setting,
    setting === 'auto'
      ? await askUpstreamWhatItLoads({ upstream, baseUrl: options.baseUrl, token: upstreamToken })
      : 'not asked'
  );
  log.info({ backend: contents.backend, setting, reason: contents.reason }, 'contents backend');
  const gateway = new Gateway({
    rootDir: options.rootDir,
    baseUrl: options.baseUrl,
    upstream,
    contentsBackend: contents.backend,
    checks: {
      allowRemoteAccess: options.allowRemoteAccess,
      allowOrigin: options.allowOrigin,
      allowOriginPat: options.allowOriginPat,
      disableCheckXsrf: options.disableCheckXsrf
    },
    log
  });
  // Overlaps archiving's start, so that the first save after "ready" costs what a later one does.
  const prepared = Promise.all([
    gateway.manager.prepare(),
    gateway.authenticator.prepare(upstreamToken)
  ]);
  try {
    const archiving = await Archiving.start(options.store, gateway.manager, log, {
      upstream: { address: upstream, baseUrl: options.baseUrl, token: upstreamToken },
      relayedSaves:
        contents.backend === 'jupyter' ? hook => gateway.addRelayedSaveHook(hook) : undefined
    });
    // Python-side listeners (file ids, collaboration rooms) hear of our own changes too.
    const events = new ContentsEventEmitter({
      manager: gateway.manager,
      upstream,
      baseUrl: options.baseUrl,
      token: upstreamToken,
      agent: gateway.proxy.agent,
      log
    });
    gateway.onShutdown(() => events.close());
    gateway.onShutdown(() => archiving.close());
    mountStoreApi(gateway, {
      archiving,
      log,
      contentsBackend: contents,
      publishEnabled: () => isPublishEnabled({ sysPrefix: options.sysPrefix })
    });
    gateway.serve(clonePages({ archiving, log }));
  } catch (error) {
    log.fatal({ err: (error as Error).message }, 'cannot start archiving');
    await gateway.close({ drainTimeoutMs: 0 });
    return null;
  }
  await prepared;
  try {
    await gateway.listen(options.port, options.ip);
  } catch (error) {
    log.fatal(
      { ip: options.ip, port: options.port, err: (error as Error).message },
      'cannot listen'
    );
    await gateway.close({ drainTimeoutMs: 0 });
    return null;
  }
  return gateway;
}

export namespace startGateway {
  /** Where the gateway listens, what it serves and how it checks requests. */
  export interface ISettings {
    /** The store's settings (object store, journal, contents backend…). */
    store: StoreSettings;
    /** The Python environment whose `etc/jupyter` says whether publishing is enabled. */
    sysPrefix: string | undefined;
    /** The address to listen on. */
    ip: string;
    /** The port to listen on; 0 picks a free one. */
    port: number;
    /** The directory served, shared with the Jupyter Server behind. */
    rootDir: string;
    /** Jupyter's base_url, normalized (leading and trailing slash). */
    baseUrl: string;
    /** Accept any Host header. */
    allowRemoteAccess: boolean;
    /** Jupyter's allow_origin. */
    allowOrigin: string;
    /** Jupyter's allow_origin_pat. */
    allowOriginPat: RegExp | null;
    /** Skip the XSRF check. */
    disableCheckXsrf: boolean;
  }

  export interface IOptions extends ISettings {
    log: Logger;
    /**
     * Start the Jupyter Server behind, or find the running one; called once the port is known
     * to be free.
     */
    startUpstream: () => Promise<UpstreamAddress>;
    /** The upstream's token, with which the gateway asks it about itself; null for none. */
    upstreamToken: string | null;
  }
}

/**
 * Mount the store API under `{base}api/store`, with the gateway's contents manager as where
 * clones are written.
 */
export function mountStoreApi(gateway: Gateway, options: mountStoreApi.IOptions): void {
  gateway.serve(storeApi({ ...options, manager: gateway.manager }));
}

export namespace mountStoreApi {
  export type IOptions = Omit<storeApi.IOptions, 'manager'>;
}

namespace Private {
  /** Fail fast when the address is taken, before a Jupyter start-up that takes seconds. */
  export function checkAddressFree(ip: string, port: number): Promise<void> {
    if (port === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const probe = net.createServer();
      probe.once('error', reject);
      probe.listen(port, ip, () => probe.close(() => resolve()));
    });
  }
}
