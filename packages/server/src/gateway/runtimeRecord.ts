import * as fs from 'node:fs';
import * as path from 'node:path';
import { ensureJupyterDir, jupyterDataDir, type IJupyterPathContext } from '../contents/trust';

/**
 * The record of a live server in the Jupyter runtime directory (`jpserver-<pid>.json`), with the
 * fields of the specification plus those Jupyter Server 2 adds. Tools that list running servers
 * (`jupyter server list`, editors, our client) read it.
 */
export interface ILiveServerRecord {
  base_url: string;
  hostname: string;
  /** The served directory, under the name classic Notebook servers used. */
  notebook_dir: string;
  /** Whether a password is configured (never the password). */
  password: boolean;
  pid: number;
  port: number;
  root_dir: string;
  secure: boolean;
  /** The unix socket the server listens on, or empty. */
  sock: string;
  token: string;
  /**
   * Where the Jupyter Server behind this gateway listens. A client that finds a record with this
   * URL (or this pid) prefers the gateway's record to it.
   */
  upstream_url: string;
  /** The pid of the Jupyter Server behind the gateway, when the gateway started it. */
  upstream_pid: number | null;
  url: string;
  version: string;
}

/**
 * `jupyter_core.paths.jupyter_runtime_dir()`: `$JUPYTER_RUNTIME_DIR`, else `runtime` in the
 * Jupyter data directory.
 */
export function jupyterRuntimeDir(context: IJupyterPathContext = {}): string {
  const env = context.env ?? process.env;
  if (env.JUPYTER_RUNTIME_DIR) return env.JUPYTER_RUNTIME_DIR;
  return path.join(jupyterDataDir(context), 'runtime');
}

/** The file name Jupyter Server gives a live server's record. */
export function recordFileName(pid: number): string {
  return `jpserver-${pid}.json`;
}

/**
 * Write the record as Jupyter writes it (sorted keys, two-space indent, mode 0600), atomically, so
 * that a reader never sees half a record.
 *
 * @returns the path written.
 */
export function writeRuntimeRecord(runtimeDir: string, record: ILiveServerRecord): string {
  ensureJupyterDir(runtimeDir);
  const file = path.join(runtimeDir, recordFileName(record.pid));
  const sorted = Object.fromEntries(
    Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  );
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, JSON.stringify(sorted, null, 2), { mode: 0o600 });
  fs.renameSync(temporary, file);
  return file;
}

/**
 * Remove the records a Jupyter Server wrote for itself (`jpserver-<pid>.json` and its
 * `-open.html`), if any. Missing files are fine: Jupyter tolerates them at exit too.
 */
export function removeRuntimeRecord(runtimeDir: string, pid: number): void {
  for (const name of [recordFileName(pid), `jpserver-${pid}-open.html`]) {
    try {
      fs.unlinkSync(path.join(runtimeDir, name));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
}
