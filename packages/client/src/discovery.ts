import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ServerNotFoundError } from './errors';
import { ancestry, procProcessTable, type IProcessTable } from './processTree';
import { parseLiveServerRecord, type ILiveServerRecord } from './records';

/**
 * Which servers are running, found as Jupyter's own `jupyter server list` finds them: from the
 * records that servers write into the Jupyter runtime directory.
 */

/** Where discovery looks, and how it tells that a process is alive. */
export interface IDiscoveryOptions {
  /** The runtime directory; default {@link jupyterRuntimeDir} of `env`. */
  runtimeDir?: string;
  /** The environment; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** The platform as Node names it; default `process.platform`. */
  platform?: NodeJS.Platform;
  /** Whether a pid is a live process; default {@link isProcessAlive}. */
  isAlive?: (pid: number) => boolean;
}

/**
 * `jupyter_core.paths.jupyter_runtime_dir()`: `$JUPYTER_RUNTIME_DIR`, else `runtime` in the
 * Jupyter data directory (`$JUPYTER_DATA_DIR`, else the platform's default).
 */
export function jupyterRuntimeDir(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform
): string {
  if (env.JUPYTER_RUNTIME_DIR) return env.JUPYTER_RUNTIME_DIR;
  const p = platform === 'win32' ? path.win32 : path.posix;
  return p.join(Private.jupyterDataDir(env, platform), 'runtime');
}

/**
 * Whether a process with this pid exists. A process of another user counts as alive (the signal
 * is refused, not undeliverable).
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Every live server record in the runtime directory, as written (hidden upstreams included),
 * ordered by pid.
 *
 * #### Notes
 * Files that are not server records (half-written, another program's) are skipped, and so are
 * records whose process is gone; unlike Jupyter, the client never deletes them.
 */
export function readLiveServerRecords(options: IDiscoveryOptions = {}): ILiveServerRecord[] {
  const runtimeDir = options.runtimeDir ?? jupyterRuntimeDir(options.env, options.platform);
  const isAlive = options.isAlive ?? isProcessAlive;
  let names: string[];
  try {
    names = fs.readdirSync(runtimeDir);
  } catch {
    return [];
  }
  const records: ILiveServerRecord[] = [];
  for (const name of names) {
    if (!/^(jp|nb)server-.+\.json$/.test(name)) continue;
    let value: unknown;
    try {
      value = JSON.parse(fs.readFileSync(path.join(runtimeDir, name), 'utf8'));
    } catch {
      continue;
    }
    const record = parseLiveServerRecord(value);
    if (record && isAlive(record.pid)) records.push(record);
  }
  return records.sort((a, b) => a.pid - b.pid);
}

/**
 * The live servers a client can use: every live record, except those of Jupyter Servers hidden
 * behind a jupyter-store gateway whose record is there too (the gateway is preferred).
 */
export function listRunningServers(options: IDiscoveryOptions = {}): ILiveServerRecord[] {
  const records = readLiveServerRecords(options);
  return records.filter(record => !records.some(gateway => isUpstreamOf(record, gateway)));
}

/**
 * Whether `upstream` is the Jupyter Server behind `gateway`: the gateway started it (its pid),
 * or the gateway forwards to its address.
 */
export function isUpstreamOf(upstream: ILiveServerRecord, gateway: ILiveServerRecord): boolean {
  if (upstream.pid === gateway.pid) return false;
  if (gateway.upstream_pid !== null && gateway.upstream_pid === upstream.pid) return true;
  const target = gateway.upstream_url;
  if (target === null) return false;
  if (target.startsWith('unix:')) {
    return upstream.sock !== '' && path.resolve(upstream.sock) === path.resolve(target.slice(5));
  }
  return Private.sameEndpoint(target, upstream.url);
}

/** How {@link findServer} chooses. */
export interface IFindServerOptions extends IDiscoveryOptions {
  /** The server's URL, when the caller names one. */
  url?: string;
  /** The process table to walk; default `/proc` (Linux). */
  processTable?: IProcessTable;
  /** The process whose ancestors are searched for a server; default this process. */
  startPid?: number;
}

/**
 * The server this code should talk to:
 *
 * 1. the one at `options.url`, when given;
 * 2. the server that runs the calling code: the first of this process's ancestors (a kernel's,
 *    a terminal's) that is a server in the runtime directory or the Jupyter Server hidden
 *    behind one, then `$JPY_PARENT_PID` (the server that started the kernel);
 * 3. the only server running.
 *
 * A gateway's record always wins over the record of the Jupyter Server behind it.
 *
 * @throws ServerNotFoundError when none is running, the URL matches none, or several are
 *   running and none of them runs this code.
 */
export function findServer(options: IFindServerOptions = {}): ILiveServerRecord {
  const env = options.env ?? process.env;
  const runtimeDir = options.runtimeDir ?? jupyterRuntimeDir(env, options.platform);
  const discovery = { ...options, env, runtimeDir };
  const records = readLiveServerRecords(discovery);
  const servers = records.filter(record => !records.some(other => isUpstreamOf(record, other)));
  const front = (record: ILiveServerRecord): ILiveServerRecord =>
    servers.find(gateway => isUpstreamOf(record, gateway)) ?? record;

  if (options.url !== undefined) {
    const named = records.find(record => Private.sameServerUrl(record.url, options.url as string));
    if (named) return front(named);
    throw new ServerNotFoundError(
      `No running server has the URL ${options.url} (in ${runtimeDir}); ` +
        "'jupyter store servers' lists the running ones",
      runtimeDir,
      servers.map(server => server.url)
    );
  }

  const pids = ancestry(options.startPid ?? process.pid, options.processTable ?? procProcessTable)
    .map(info => info.pid)
    .concat(/^\d+$/.test(env.JPY_PARENT_PID ?? '') ? [Number(env.JPY_PARENT_PID)] : []);
  for (const pid of pids) {
    const own = records.find(record => record.pid === pid);
    if (own) return front(own);
    const started = servers.find(record => record.upstream_pid === pid);
    if (started) return started;
  }

  if (servers.length === 1) return servers[0];
  if (servers.length === 0) {
    throw new ServerNotFoundError(
      `No Jupyter server is running: there is no live server record in ${runtimeDir}. ` +
        "Start one with 'jupyter-store lab', or set JUPYTER_RUNTIME_DIR to where it writes its record",
      runtimeDir
    );
  }
  throw new ServerNotFoundError(
    `${servers.length} Jupyter servers are running (${servers.map(s => s.url).join(', ')}) and ` +
      'none of them runs this process; name one with --url',
    runtimeDir,
    servers.map(server => server.url)
  );
}

namespace Private {
  /** jupyter_core's `jupyter_data_dir()`. */
  export function jupyterDataDir(env: NodeJS.ProcessEnv, platform: NodeJS.Platform): string {
    if (env.JUPYTER_DATA_DIR) return env.JUPYTER_DATA_DIR;
    const home = (platform === 'win32' ? env.USERPROFILE : env.HOME) || os.homedir();
    if (isSet(env.JUPYTER_PLATFORM_DIRS)) {
      if (platform === 'win32') {
        return path.win32.join(
          env.LOCALAPPDATA ?? path.win32.join(home, 'AppData', 'Local'),
          'Jupyter'
        );
      }
      const xdg = env.XDG_DATA_HOME ?? '';
      if (path.posix.isAbsolute(xdg)) return path.posix.join(xdg, 'jupyter');
      if (platform === 'darwin') {
        return path.posix.join(home, 'Library', 'Application Support', 'Jupyter');
      }
      return path.posix.join(home, '.local', 'share', 'jupyter');
    }
    if (platform === 'darwin') return path.posix.join(home, 'Library', 'Jupyter');
    if (platform === 'win32') {
      return env.APPDATA
        ? path.win32.join(env.APPDATA, 'jupyter')
        : path.win32.join(env.JUPYTER_CONFIG_DIR ?? path.win32.join(home, '.jupyter'), 'data');
    }
    return path.posix.join(
      env.XDG_DATA_HOME || path.posix.join(home, '.local', 'share'),
      'jupyter'
    );
  }

  /** jupyter_core's reading of a boolean environment variable. */
  function isSet(value: string | undefined): boolean {
    return (
      value !== undefined && !['no', 'n', 'false', 'off', '0', '0.0'].includes(value.toLowerCase())
    );
  }

  const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

  /** Same port, and the same host or two names of the loopback interface. */
  export function sameEndpoint(a: string, b: string): boolean {
    const first = parse(a);
    const second = parse(b);
    if (!first || !second) return false;
    if (portOf(first) !== portOf(second)) return false;
    if (first.hostname === second.hostname) return true;
    return isLoopback(first.hostname) && isLoopback(second.hostname);
  }

  /** The same endpoint and base URL (trailing slashes aside). */
  export function sameServerUrl(a: string, b: string): boolean {
    const first = parse(a);
    const second = parse(b);
    if (!first || !second || !sameEndpoint(a, b)) return false;
    return first.pathname.replace(/\/+$/, '') === second.pathname.replace(/\/+$/, '');
  }

  function isLoopback(hostname: string): boolean {
    return LOOPBACK.has(hostname) || /^127\.\d+\.\d+\.\d+$/.test(hostname);
  }

  function parse(url: string): URL | undefined {
    try {
      return new URL(url);
    } catch {
      return undefined;
    }
  }

  function portOf(url: URL): string {
    return url.port || (url.protocol === 'https:' ? '443' : '80');
  }
}
