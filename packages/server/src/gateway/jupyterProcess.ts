import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { ENVIRONMENT_VARIABLES } from '../settings/load';
import type { Logger } from './logger';
import { scrubUrl } from './logger';
import { requestUpstream, type UpstreamAddress } from './upstream';

/** How a Jupyter process ended. */
export interface IExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/**
 * A JupyterLab server started by the gateway as its upstream: bound to a unix socket (mode 0600)
 * or to a free loopback port, sharing the gateway's root_dir, base_url and token.
 *
 * #### Notes
 * The process runs in its own process group, so a Ctrl-C in the terminal reaches only the
 * gateway, which then drains its requests before it stops Jupyter (SIGTERM, which makes Jupyter
 * shut its kernels down; SIGKILL to the group after a grace period).
 */
export class JupyterProcess {
  private constructor(
    child: ChildProcess,
    readonly address: UpstreamAddress,
    private readonly _scratchDir: string,
    private readonly _log: Logger,
    private readonly _state: { stopping: boolean }
  ) {
    this.pid = child.pid as number;
    this.exited = new Promise(resolve => {
      child.once('exit', (code, signal) => {
        this._exit = { code, signal };
        fs.rmSync(this._scratchDir, { recursive: true, force: true });
        resolve(this._exit);
      });
    });
    // If the gateway itself dies without a graceful stop, Jupyter must not outlive it.
    this._onProcessExit = () => {
      if (!this._exit) killQuietly(this.pid, 'SIGTERM');
    };
    process.once('exit', this._onProcessExit);
  }

  /**
   * Start `jupyter lab` (or the executable with `command`) and wait until it answers
   * `GET {base}api`.
   *
   * @throws Error when the executable cannot start, exits early or is not ready in time.
   */
  static async start(options: JupyterProcess.IOptions): Promise<JupyterProcess> {
    const scratchDir = fs.mkdtempSync(path.join(os.tmpdir(), 'jupyter-store-'));
    fs.chmodSync(scratchDir, 0o700);
    const address: UpstreamAddress =
      options.transport === 'tcp'
        ? { kind: 'tcp', host: '127.0.0.1', port: await freeLoopbackPort() }
        : { kind: 'unix', socketPath: path.join(scratchDir, 'jupyter.sock') };
    const args = [...(options.command ?? ['lab']), ...jupyterArguments(options, address)];
    // Kernels and terminals inherit this environment: it has none of our credentials.
    const env = jupyterEnvironment({ ...process.env, ...options.env });
    if (options.pathPrepend?.length) {
      env.PATH = [...options.pathPrepend, env.PATH ?? ''].join(path.delimiter);
    }
    // The token is in neither the command line (`ps`) nor the environment (kernels): it is in a
    // private config file, first on the config path, which is deleted once Jupyter has started.
    const privateConfig = options.token ? writeTokenConfig(scratchDir, options.token) : undefined;
    const configPath = privateConfig ? [privateConfig.dir] : [];
    // Our server extension, which tells the gateway what this server loads (contents_backend
    // auto); as it loads, it removes its entries and the private config directory from its
    // environment, so kernels never see them.
    if (fs.existsSync(path.join(UPSTREAM_EXTENSION_DIR, 'jupyter_store_upstream'))) {
      env.PYTHONPATH = [UPSTREAM_EXTENSION_DIR, env.PYTHONPATH]
        .filter(Boolean)
        .join(path.delimiter);
      configPath.push(path.join(UPSTREAM_EXTENSION_DIR, 'config'));
      if (privateConfig) env[PRIVATE_CONFIG_VARIABLE] = privateConfig.dir;
    }
    if (configPath.length) {
      env.JUPYTER_CONFIG_PATH = [...configPath, env.JUPYTER_CONFIG_PATH]
        .filter(Boolean)
        .join(path.delimiter);
    }
    const child = spawn(options.jupyter, args, {
      cwd: options.rootDir,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe']
    });
    const startError = new Promise<Error>(resolve => child.once('error', resolve));
    const log = options.log.child({ component: 'jupyter' });
    const state = { stopping: false };
    relayOutput(child, log, options.token, () => state.stopping);
    const started = await Promise.race([
      startError,
      new Promise<'spawned'>(resolve => child.once('spawn', () => resolve('spawned')))
    ]);
    if (started instanceof Error) {
      fs.rmSync(scratchDir, { recursive: true, force: true });
      throw new Error(`cannot run '${options.jupyter}': ${started.message}`);
    }
    const jupyter = new JupyterProcess(child, address, scratchDir, options.log, state);
    try {
      await jupyter._waitUntilReady(options.baseUrl, options.readyTimeoutMs ?? 120_000);
    } catch (error) {
      await jupyter.stop(5000);
      throw error;
    } finally {
      // Jupyter read its configuration before it answered: nothing it starts can read the file.
      if (privateConfig) fs.rmSync(privateConfig.file, { force: true });
    }
    return jupyter;
  }

  /** The process id of `jupyter lab` (the launcher execs, so this is the server's own pid). */
  readonly pid: number;
  /** Resolves when the process has ended, however it ended. */
  readonly exited: Promise<IExit>;

  /** Has the process ended? */
  get running(): boolean {
    return this._exit === undefined;
  }

  /**
   * Stop Jupyter: SIGTERM (it shuts its kernels and terminals down), then SIGKILL to its whole
   * process group after `graceMs`.
   */
  async stop(graceMs = 20_000): Promise<IExit> {
    process.off('exit', this._onProcessExit);
    if (this._exit) return this._exit;
    this._state.stopping = true;
    killQuietly(this.pid, 'SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const forced = new Promise<'timeout'>(resolve => {
      timer = setTimeout(() => resolve('timeout'), graceMs);
    });
    if ((await Promise.race([this.exited, forced])) === 'timeout') {
      this._log.warn({ pid: this.pid, graceMs }, 'Jupyter did not stop in time; killing it');
      killQuietly(-this.pid, 'SIGKILL');
    }
    clearTimeout(timer);
    return this.exited;
  }

  private async _waitUntilReady(baseUrl: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this._exit) {
        throw new Error(
          `Jupyter exited during start-up (${describeExit(this._exit)}); its messages are above`
        );
      }
      try {
        const answer = await requestUpstream(this.address, {
          path: `${baseUrl}api`,
          timeoutMs: 2000
        });
        if (answer.status === 200) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        throw new Error(`Jupyter did not answer within ${Math.round(timeoutMs / 1000)} s`);
      }
      await new Promise(resolve => setTimeout(resolve, 100));
    }
  }

  private _exit: IExit | undefined;
  private readonly _onProcessExit: () => void;
}

export namespace JupyterProcess {
  export interface IOptions {
    /** The `jupyter` executable. */
    jupyter: string;
    rootDir: string;
    /** Normalised base_url. */
    baseUrl: string;
    /**
     * The shared token, or null for a server without authentication; undefined leaves
     * authentication to the server's own identity provider (a JupyterHub single-user server).
     */
    token: string | null | undefined;
    /** The arguments between the executable and ours; default `['lab']`. */
    command?: readonly string[];
    /** `unix` (default): a socket only this user can open; `tcp`: a free loopback port. */
    transport: 'unix' | 'tcp';
    /** `ServerApp.allow_remote_access`, matching the gateway's own binding. */
    allowRemoteAccess: boolean;
    /** `ServerApp.disable_check_xsrf` (only with no authentication). */
    disableCheckXsrf: boolean;
    /** `ServerApp.allow_origin`. */
    allowOrigin?: string;
    /** `ServerApp.allow_origin_pat`, as the user wrote it (a Python regular expression). */
    allowOriginPat?: string;
    /** `ServerApp.allow_root`: Jupyter refuses to run as root without it. */
    allowRoot?: boolean;
    /** A Jupyter config file (`--config`). */
    configFile?: string;
    /** Directories with prebuilt Lab extensions to load (`LabApp.extra_labextensions_path`). */
    labextensionsPaths?: readonly string[];
    /** Directories put first on the server's (and so its kernels') PATH. */
    pathPrepend?: readonly string[];
    /** Arguments passed to `jupyter lab` after ours. */
    extraArgs?: readonly string[];
    env?: NodeJS.ProcessEnv;
    readyTimeoutMs?: number;
    log: Logger;
  }
}

/**
 * Variables of the gateway's environment that Jupyter never gets, and so neither do its kernels
 * and terminals: the `STORE_OBJECT_*` settings (credentials, and the endpoint and bucket, which
 * nothing on Jupyter's side reads), and the token's sources (Jupyter gets the token otherwise).
 * Everything else stays, the user's own `AWS_*` variables included.
 */
export function isGatewayOnlyVariable(name: string): boolean {
  return (
    name.startsWith('STORE_OBJECT_') ||
    Object.hasOwn(ENVIRONMENT_VARIABLES, name) ||
    TOKEN_VARIABLES.includes(name)
  );
}

/** The environment Jupyter starts with: `base` without {@link isGatewayOnlyVariable}s. */
export function jupyterEnvironment(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(base)) {
    if (!isGatewayOnlyVariable(name)) env[name] = value;
  }
  return env;
}

/**
 * Write `IdentityProvider.token` into `jupyter_config.json` in a new directory `config` of
 * `parent` (mode 0700, the file 0600). Jupyter reads `jupyter_config` from every directory of
 * its config path even when `--config` names another file; first on `JUPYTER_CONFIG_PATH`, this
 * one beats any other `jupyter_config` file, while `jupyter_server_config` files, `--config` and
 * the command line still beat it, as they beat `$JUPYTER_TOKEN`.
 */
export function writeTokenConfig(parent: string, token: string): { dir: string; file: string } {
  const dir = path.join(parent, 'config');
  fs.mkdirSync(dir, { mode: 0o700 });
  const file = path.join(dir, 'jupyter_config.json');
  fs.writeFileSync(file, JSON.stringify({ IdentityProvider: { token } }), {
    mode: 0o600,
    flag: 'wx'
  });
  return { dir, file };
}

/** The `jupyter lab` arguments that make it a hidden upstream of the gateway. */
export function jupyterArguments(
  options: Pick<
    JupyterProcess.IOptions,
    | 'rootDir'
    | 'baseUrl'
    | 'token'
    | 'allowRemoteAccess'
    | 'disableCheckXsrf'
    | 'allowOrigin'
    | 'allowOriginPat'
    | 'allowRoot'
    | 'configFile'
    | 'labextensionsPaths'
    | 'extraArgs'
  >,
  address: UpstreamAddress
): string[] {
  const args = [
    '--no-browser',
    `--ServerApp.root_dir=${options.rootDir}`,
    `--ServerApp.base_url=${options.baseUrl}`,
    `--ServerApp.allow_remote_access=${options.allowRemoteAccess ? 'True' : 'False'}`
  ];
  if (address.kind === 'unix') {
    args.push(`--ServerApp.sock=${address.socketPath}`, '--ServerApp.sock_mode=0600');
  } else {
    args.push(
      `--ServerApp.ip=${address.host}`,
      `--ServerApp.port=${address.port}`,
      '--ServerApp.port_retries=0'
    );
  }
  if (options.allowRoot) args.push('--ServerApp.allow_root=True');
  if (options.token === null) args.push('--IdentityProvider.token=');
  if (options.disableCheckXsrf) args.push('--ServerApp.disable_check_xsrf=True');
  if (options.allowOrigin) args.push(`--ServerApp.allow_origin=${options.allowOrigin}`);
  if (options.allowOriginPat) args.push(`--ServerApp.allow_origin_pat=${options.allowOriginPat}`);
  if (options.configFile) args.push(`--config=${options.configFile}`);
  // One flag per directory: traitlets appends repeated flags to a list, while a bracketed value
  // would be read as one path.
  for (const dir of options.labextensionsPaths ?? []) {
    args.push(`--LabApp.extra_labextensions_path=${dir}`);
  }
  args.push(...(options.extraArgs ?? []));
  return args;
}

/**
 * The `jupyter` (or another executable of Jupyter's, such as `jupyterhub-singleuser`) to run: the
 * first on PATH, else the one in the project's own virtual environment (`.venv` at the root of a
 * checkout), else null.
 */
export function findJupyter(env: NodeJS.ProcessEnv = process.env, name = 'jupyter'): string | null {
  const candidates = (env.PATH ?? '')
    .split(path.delimiter)
    .filter(Boolean)
    .map(dir => path.join(dir, name));
  candidates.push(path.resolve(__dirname, '..', '..', '..', '..', '.venv', 'bin', name));
  for (const candidate of candidates) {
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // not there
    }
  }
  return null;
}

/** A free TCP port on 127.0.0.1, found by binding port 0 and letting it go. */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** "exit code 1" or "signal SIGKILL". */
export function describeExit(exit: IExit): string {
  return exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`;
}

/** Where Jupyter would look for a token; the gateway gives it one in a config file instead. */
const TOKEN_VARIABLES: readonly string[] = ['JUPYTER_TOKEN', 'JUPYTER_TOKEN_FILE'];

/** Names the private config directory for the extension to take off `JUPYTER_CONFIG_PATH`. */
const PRIVATE_CONFIG_VARIABLE = 'JUPYTER_STORE_PRIVATE_CONFIG_DIR';

/** Jupyter's log prefix: `[I 2026-11-22 10:00:00.000 ServerApp] message`. */
/** The Python side of this package: the `jupyter_store_upstream` server extension. */
const UPSTREAM_EXTENSION_DIR = path.resolve(__dirname, '..', '..', 'python');

const JUPYTER_LOG_LINE = /^\[([DIWEC]) [^\]]*\]\s?(.*)$/;
/** The prefix of kernels and other traitlets apps: `[IPKernelApp] WARNING | message`. */
const APP_LOG_LINE = /^\[[\w.]+\] (DEBUG|INFO|WARNING|ERROR|CRITICAL) \| (.*)$/;

/**
 * Relay Jupyter's output into our log. Its info messages describe the hidden server (its own
 * URL, its own banner), so they go to debug; its warnings and errors keep their level, except
 * while we stop it (Jupyter reports the SIGTERM we sent as critical). Lines without a prefix
 * (tracebacks) continue the previous message's level. Tokens are scrubbed.
 */
function relayOutput(
  child: ChildProcess,
  log: Logger,
  token: string | null | undefined,
  stopping: () => boolean
): void {
  let level: 'debug' | 'warn' | 'error' | 'fatal' = 'debug';
  const levels = { D: 'debug', I: 'debug', W: 'warn', E: 'error', C: 'fatal' } as const;
  const relay = (line: string): void => {
    let text = scrubUrl(line);
    if (token) text = text.split(token).join('<redacted>');
    const match = JUPYTER_LOG_LINE.exec(text) ?? APP_LOG_LINE.exec(text);
    if (match) {
      level = levels[match[1][0] as keyof typeof levels];
      text = match[2];
    }
    if (text.trim() === '') return;
    if (stopping() && level !== 'debug') log.info(text);
    else log[level](text);
  };
  for (const stream of [child.stdout, child.stderr]) {
    if (stream) readline.createInterface({ input: stream, crlfDelay: Infinity }).on('line', relay);
  }
}

function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}
