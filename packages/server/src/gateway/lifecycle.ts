import type * as net from 'node:net';
import * as os from 'node:os';
import { packageVersion } from '../version';
import type { Gateway } from './gateway';
import type { Logger } from './logger';
import { removeRuntimeRecord, writeRuntimeRecord, type ILiveServerRecord } from './runtimeRecord';
import { describeUpstream, type UpstreamAddress } from './upstream';

/**
 * Signals, the runtime record and the order of a graceful stop of a running gateway: the first
 * SIGINT or SIGTERM stops it gracefully, a second one exits at once.
 */
export class Lifecycle {
  constructor(options: Lifecycle.IOptions) {
    this._gateway = options.gateway;
    this._log = options.log;
    this._runtimeDir = options.runtimeDir;
    this._stopUpstream = options.stopUpstream;
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.on(signal, () => {
        if (this.stopping) {
          this._log.warn({ signal }, 'second signal: exiting now');
          process.exit(1);
        }
        this._log.info({ signal }, 'shutting down');
        void this.stop(0);
      });
    }
  }

  /** Whether a stop has begun (an upstream exiting then is expected, not a failure). */
  stopping = false;

  /** Write the runtime record, by which clients find the gateway, and print the banner. */
  announce(announcement: Lifecycle.IAnnouncement): void {
    const { ip, baseUrl, rootDir, token, upstream } = announcement;
    const address = this._gateway.server.address() as net.AddressInfo;
    const hostname = ip === '' ? 'localhost' : ip;
    const url = `http://${Private.displayHost(ip)}:${address.port}${baseUrl}`;
    const record: ILiveServerRecord = {
      base_url: baseUrl,
      hostname,
      notebook_dir: rootDir,
      password: false,
      pid: process.pid,
      port: address.port,
      root_dir: rootDir,
      secure: false,
      sock: '',
      token,
      upstream_url: describeUpstream(upstream),
      upstream_pid: announcement.upstreamPid,
      url,
      version: packageVersion()
    };
    this._recordWritten = true;
    writeRuntimeRecord(this._runtimeDir, record);
    this._log.info(
      { url, rootDir, upstream: describeUpstream(upstream), runtimeDir: this._runtimeDir },
      'jupyter-store is running'
    );
    const query = token ? `?token=${encodeURIComponent(token)}` : '';
    const urls = [`${url}lab${query}`];
    process.stdout.write(
      [
        `jupyter-store ${packageVersion()} is serving ${rootDir}`,
        '    Open JupyterLab with one of these URLs:',
        ...urls.map(line => `        ${line}`),
        '    Stop with Ctrl-C.',
        ''
      ].join('\n')
    );
  }

  /** Stop accepting, drain, flush pending work, stop the upstream, remove the record, exit. */
  async stop(exitCode: number): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this._recordWritten) removeRuntimeRecord(this._runtimeDir, process.pid);
    try {
      await this._gateway.close();
      await this._stopUpstream();
    } catch (error) {
      this._log.error({ err: (error as Error).message }, 'shutdown failed');
      exitCode = exitCode || 1;
    }
    this._log.info({ exitCode }, 'stopped');
    process.exit(exitCode);
  }

  private readonly _gateway: Gateway;
  private readonly _log: Logger;
  private readonly _runtimeDir: string;
  private readonly _stopUpstream: () => Promise<void>;
  private _recordWritten = false;
}

export namespace Lifecycle {
  export interface IOptions {
    /** The gateway, already listening. */
    gateway: Gateway;
    log: Logger;
    /** Jupyter's runtime directory, where the record is written. */
    runtimeDir: string;
    /** Stop what runs behind the gateway, once the gateway has closed. */
    stopUpstream: () => Promise<void>;
  }

  /** What the runtime record and the banner say. */
  export interface IAnnouncement {
    /** The address the gateway listens on, as given. */
    ip: string;
    /** Jupyter's base_url, normalized. */
    baseUrl: string;
    rootDir: string;
    /** The token clients give, or '' for none. */
    token: string;
    upstream: UpstreamAddress;
    /** The pid of the Jupyter Server started behind, or null when it was already running. */
    upstreamPid: number | null;
  }
}

namespace Private {
  /** The host part of the URLs shown, as Jupyter shows them. */
  export function displayHost(ip: string): string {
    if (ip === '' || ip === '0.0.0.0' || ip === '::') return os.hostname();
    return ip.includes(':') ? `[${ip}]` : ip;
  }
}
