import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { normalizeBaseUrl } from '../app';
import { describeExit, findJupyter, JupyterProcess } from '../gateway/jupyterProcess';
import { Lifecycle } from '../gateway/lifecycle';
import { createLogger, type Logger, type LogLevel } from '../gateway/logger';
import { jupyterRuntimeDir, removeRuntimeRecord } from '../gateway/runtimeRecord';
import type { Gateway } from '../gateway/gateway';
import { startGateway } from '../gateway/start';
import { parseUpstreamAddress, type UpstreamAddress } from '../gateway/upstream';
import {
  CONFIG_FILE_NAME,
  CREDENTIAL_SETTINGS,
  ENVIRONMENT_VARIABLES,
  loadStoreSettings,
  SettingsError,
  type StoreSettingName,
  type StoreSettings
} from '../settings';
import { UsageError } from '@jupyter-store/client';
import { isDirectory, isExecutableFile, isReadableFile } from '../fileChecks';

/**
 * The options of `lab` and `serve`, as the command line parses them (see `program.ts`, which
 * declares them): where the gateway listens and how it checks requests.
 */
export interface IGatewayOptions {
  ip: string;
  port: string;
  rootDir?: string;
  baseUrl: string;
  config?: string;
  allowRemoteAccess?: boolean;
  allowOrigin?: string;
  allowOriginPat?: string;
  disableCheckXsrf?: boolean;
  logLevel: LogLevel;
  token?: string;
  tokenFile?: string;
  /** The `--StoreSettings.<name>=<value>` arguments, by name. */
  storeSettings: Record<string, string>;
}

/** `lab`'s options. */
export interface ILabOptions extends IGatewayOptions {
  /** False with `--no-auth`. */
  auth: boolean;
  jupyter?: string;
  allowRoot?: boolean;
  upstreamTransport: 'unix' | 'tcp';
  /** The arguments after `--`, for `jupyter lab`. */
  jupyterArgs: string[];
}

/** `serve`'s options. */
export interface IServeOptions extends IGatewayOptions {
  upstream: string;
}

/**
 * `jupyter-store lab`.
 *
 * @returns 0 once the gateway runs (it exits when stopped), 1 when it could not start.
 * @throws UsageError naming the option whose value cannot be used.
 */
export async function runLab(options: ILabOptions): Promise<number> {
  const jupyterFlag = options.jupyter;
  // A path is resolved here: Jupyter runs with the root directory as its working directory.
  const jupyter =
    jupyterFlag === undefined
      ? findJupyter()
      : jupyterFlag.includes(path.sep)
        ? path.resolve(jupyterFlag)
        : jupyterFlag;
  const common = commonSettings(options, jupyter ? pythonPrefixOf(jupyter) : undefined);
  if (jupyter && jupyter.includes(path.sep) && !isExecutableFile(jupyter)) {
    throw new UsageError(`--jupyter: '${jupyter}' is not an executable file`);
  }
  if (!jupyter) {
    throw new UsageError(
      "--jupyter: no 'jupyter' on PATH and no project .venv; install JupyterLab or name it"
    );
  }
  const givenToken = tokenFromFlags(options);
  const token = !options.auth
    ? null
    : (givenToken ?? (process.env.JUPYTER_TOKEN || randomBytes(24).toString('hex')));

  const log = createLogger({ level: common.logLevel });
  warnAboutVisibleSecrets(log, options);
  return runWithOwnJupyter({
    common,
    log,
    jupyter: {
      jupyter,
      token,
      transport: options.upstreamTransport,
      allowRemoteAccess: common.allowRemoteAccess,
      disableCheckXsrf: common.disableCheckXsrf,
      allowRoot: Boolean(options.allowRoot),
      allowOrigin: common.allowOrigin,
      allowOriginPat: options.allowOriginPat,
      extraArgs: options.jupyterArgs
    },
    upstreamToken: token,
    recordToken: token ?? '',
    upstreamName: 'The Jupyter server'
  });
}

/** What {@link runWithOwnJupyter} needs. */
export interface IOwnJupyterOptions {
  readonly common: ICommonSettings;
  readonly log: Logger;
  /** How to start the server, besides what every such server gets (see the function). */
  readonly jupyter: Omit<
    JupyterProcess.IOptions,
    'rootDir' | 'baseUrl' | 'configFile' | 'labextensionsPaths' | 'pathPrepend' | 'log'
  >;
  /** The token with which the gateway asks the server about callers (null: none). */
  readonly upstreamToken: string | null;
  /** The token the runtime record and the banner carry ('' for none). */
  readonly recordToken: string;
  /** How the fatal log line names the server when it exits on its own. */
  readonly upstreamName: string;
  /** Called once the gateway runs, before it is announced. */
  readonly started?: (gateway: Gateway) => void;
}

/**
 * Run the gateway in front of a Jupyter server of its own (`lab`, `singleuser`): the server
 * started on a private address with the root directory, base URL and config of the gateway, the
 * bundled lab extension and the `jupyter store` command shim on its PATH; its runtime record
 * replaced by the gateway's (clients must find the gateway, not the hidden server); both stopped
 * together, and the gateway stopped with status 1 if the server exits on its own.
 *
 * @returns 0 once the gateway runs (it exits when stopped), 1 when it could not start.
 */
export async function runWithOwnJupyter(options: IOwnJupyterOptions): Promise<number> {
  const { common, log } = options;
  const shimDir = createCommandShim();
  let jupyterProcess: JupyterProcess | undefined;
  const gateway = await startGateway({
    ...common,
    log,
    startUpstream: async () => {
      jupyterProcess = await JupyterProcess.start({
        ...options.jupyter,
        rootDir: common.rootDir,
        baseUrl: common.baseUrl,
        configFile: common.configFile,
        labextensionsPaths: bundledLabextensions(),
        pathPrepend: [shimDir],
        log
      });
      return jupyterProcess.address;
    },
    upstreamToken: options.upstreamToken
  });
  if (!gateway || !jupyterProcess) {
    fs.rmSync(shimDir, { recursive: true, force: true });
    return 1;
  }
  const upstream = jupyterProcess;
  removeRuntimeRecord(common.runtimeDir, upstream.pid);
  options.started?.(gateway);
  const lifecycle = new Lifecycle({
    gateway,
    log,
    runtimeDir: common.runtimeDir,
    stopUpstream: async () => {
      await upstream.stop();
      fs.rmSync(shimDir, { recursive: true, force: true });
    }
  });
  lifecycle.announce({
    ...common,
    token: options.recordToken,
    upstream: upstream.address,
    upstreamPid: upstream.pid
  });
  void upstream.exited.then(exit => {
    if (lifecycle.stopping) return;
    log.fatal(
      { exit: describeExit(exit) },
      `${options.upstreamName} exited unexpectedly; the gateway stops too`
    );
    void lifecycle.stop(1);
  });
  return 0;
}

/**
 * `jupyter-store serve`.
 *
 * @returns 0 once the gateway runs (it exits when stopped), 1 when it could not start.
 * @throws UsageError naming the option whose value cannot be used.
 */
export async function runServe(options: IServeOptions): Promise<number> {
  const common = commonSettings(options, process.env.VIRTUAL_ENV);
  let upstream: UpstreamAddress;
  try {
    upstream = parseUpstreamAddress(options.upstream);
  } catch (error) {
    throw new UsageError(`--upstream: ${(error as Error).message}`);
  }
  const givenToken = tokenFromFlags(options);
  const log = createLogger({ level: common.logLevel });
  warnAboutVisibleSecrets(log, options);
  const gateway = await startGateway({
    ...common,
    log,
    startUpstream: () => Promise.resolve(upstream),
    upstreamToken: givenToken ?? process.env.JUPYTER_TOKEN ?? null
  });
  if (!gateway) return 1;
  const lifecycle = new Lifecycle({
    gateway,
    log,
    runtimeDir: common.runtimeDir,
    stopUpstream: () => Promise.resolve()
  });
  lifecycle.announce({ ...common, token: givenToken ?? '', upstream, upstreamPid: null });
  return 0;
}

/**
 * The token of `--token` or of `--token-file` (read now, without one trailing newline), or
 * undefined when neither is given.
 *
 * @throws UsageError when the file cannot be read, is empty or holds more than one line.
 */
function tokenFromFlags(options: IGatewayOptions): string | undefined {
  const file = options.tokenFile;
  if (file === undefined) return options.token;
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new UsageError(`--token-file: '${file}' cannot be read (${reason})`);
  }
  const token = text.replace(/\r?\n$/, '');
  if (token === '') throw new UsageError(`--token-file: '${file}' is empty`);
  if (/[\r\n]/.test(token)) {
    throw new UsageError(`--token-file: '${file}' holds more than one line`);
  }
  return token;
}

/**
 * One warning line when the token or a credential was given on the command line, which other
 * users of the machine can read (`ps`): it names the flags and where else to give them, never
 * their values.
 */
export function warnAboutVisibleSecrets(log: Logger, options: IGatewayOptions): void {
  const storeFlags = options.storeSettings;
  const flags: string[] = [];
  const instead: string[] = [];
  if (options.token !== undefined) {
    flags.push('--token');
    instead.push('--token-file or $JUPYTER_TOKEN for the token');
  }
  const credentials = CREDENTIAL_SETTINGS.filter(name => storeFlags[name] !== undefined);
  if (credentials.length) {
    const variables = Object.entries(ENVIRONMENT_VARIABLES)
      .filter(([, name]) => credentials.includes(name as StoreSettingName))
      .map(([variable]) => `$${variable}`);
    flags.push(...credentials.map(name => `--StoreSettings.${name}`));
    instead.push(`${[...variables, CONFIG_FILE_NAME].join(' or ')} for credentials`);
  }
  if (!flags.length) return;
  log.warn(
    { flags },
    `${flags.join(', ')} on the command line ${flags.length > 1 ? 'are' : 'is'} visible to ` +
      `other users in ps; use ${instead.join(', and ')}`
  );
}

/** The settings `lab` and `serve` share: the gateway's, and what only the command line needs. */
export interface ICommonSettings extends startGateway.ISettings {
  configFile: string | undefined;
  logLevel: LogLevel;
  runtimeDir: string;
}

export function commonSettings(
  options: IGatewayOptions,
  sysPrefix: string | undefined
): ICommonSettings {
  const { ip, baseUrl, logLevel } = options;
  const port = Number(options.port);
  if (!/^\d+$/.test(options.port) || port > 65535) {
    throw new UsageError(`--port: '${options.port}' is not a port number`);
  }
  const rootDir = path.resolve(options.rootDir ?? process.cwd());
  if (!isDirectory(rootDir)) throw new UsageError(`--root-dir: '${rootDir}' is not a directory`);
  if (!/^\/[^?#\s]*$/.test(baseUrl)) {
    throw new UsageError(`--base-url: '${baseUrl}' must be a path starting with /`);
  }
  const configFile = options.config;
  if (configFile !== undefined && !isReadableFile(configFile)) {
    throw new UsageError(`--config: '${configFile}' is not a readable file`);
  }
  let allowOriginPat: RegExp | null = null;
  const pattern = options.allowOriginPat;
  if (pattern !== undefined) {
    try {
      allowOriginPat = new RegExp(pattern);
    } catch {
      throw new UsageError(`--allow-origin-pat: '${pattern}' is not a regular expression`);
    }
  }
  let store: StoreSettings;
  try {
    store = loadStoreSettings({ flags: options.storeSettings, configFile, sysPrefix }).settings;
  } catch (error) {
    if (error instanceof SettingsError) throw new UsageError(error.message);
    throw error;
  }
  return {
    ip,
    port,
    rootDir,
    store,
    sysPrefix,
    baseUrl: normalizeBaseUrl(baseUrl),
    configFile: configFile === undefined ? undefined : path.resolve(configFile),
    allowRemoteAccess: Boolean(options.allowRemoteAccess) || !isLoopbackBinding(ip),
    allowOrigin: options.allowOrigin ?? '',
    allowOriginPat,
    disableCheckXsrf: Boolean(options.disableCheckXsrf),
    logLevel,
    runtimeDir: jupyterRuntimeDir()
  };
}

/**
 * The Python environment (`sys.prefix`) a `jupyter` executable belongs to: `<prefix>/bin/jupyter`
 * (symlinks resolved), so `<prefix>/etc/jupyter` is its environment config directory.
 */
export function pythonPrefixOf(jupyter: string): string | undefined {
  if (!jupyter.includes(path.sep)) return undefined;
  try {
    return path.dirname(path.dirname(fs.realpathSync(jupyter)));
  } catch {
    return undefined;
  }
}

/** Jupyter's rule for allow_remote_access: on unless bound to a loopback address. */
function isLoopbackBinding(ip: string): boolean {
  if (ip === 'localhost') return true;
  return /^127\.\d+\.\d+\.\d+$/.test(ip) || ip === '::1';
}

/**
 * A directory holding a `jupyter-store` command that runs this very CLI with this very Node, put
 * first on Jupyter's PATH so that kernels and terminals can run `jupyter store …`.
 */
function createCommandShim(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jupyter-store-bin-'));
  const script = `#!/bin/sh\nexec ${shellQuote(process.execPath)} ${shellQuote(path.join(__dirname, 'main.js'))} "$@"\n`;
  fs.writeFileSync(path.join(dir, 'jupyter-store'), script, { mode: 0o755 });
  return dir;
}

/** The prebuilt Lab extensions shipped with this package, if it has been built with them. */
function bundledLabextensions(): string[] {
  const dir = path.resolve(__dirname, '..', '..', 'labextensions');
  return isDirectory(dir) ? [dir] : [];
}

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
