import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { normalizeBaseUrl } from '../app';
import {
  ContentsEventEmitter,
  askUpstreamWhatItLoads,
  decideContentsBackend
} from '../gateway/contentsBackend';
import { Gateway } from '../gateway/gateway';
import { describeExit, findJupyter, JupyterProcess } from '../gateway/jupyterProcess';
import { createLogger, LOG_LEVELS, type Logger, type LogLevel } from '../gateway/logger';
import {
  jupyterRuntimeDir,
  removeRuntimeRecord,
  writeRuntimeRecord,
  type ILiveServerRecord
} from '../gateway/runtimeRecord';
import { describeUpstream, parseUpstreamAddress, type UpstreamAddress } from '../gateway/upstream';
import { createLandingRouter } from '../api/landing';
import { createStoreApiRouter } from '../api/storeApi';
import { Archiving } from '../archive/archiving';
import {
  CONFIG_FILE_NAME,
  CREDENTIAL_SETTINGS,
  ENVIRONMENT_VARIABLES,
  loadStoreSettings,
  SettingsError,
  splitSettingsFlags,
  type StoreSettingName,
  type StoreSettings
} from '../settings';
import { isPublishEnabled } from '../settings/publishEnabled';
import { packageVersion } from '../version';
import { describeFlags, parseFlags, UsageError, type FlagSpec } from './flags';
import { isDirectory, isExecutableFile, isReadableFile } from '../fileChecks';

/** Flags shared by `lab` and `serve`: where the gateway listens and how it checks requests. */
const COMMON_FLAGS: FlagSpec = {
  ip: { type: 'string', help: 'address to listen on (default: 127.0.0.1)', value: 'ADDR' },
  port: {
    type: 'string',
    help: 'port to listen on (default: 8888; 0 picks a free one)',
    value: 'N'
  },
  'root-dir': {
    type: 'string',
    help: 'directory to serve, shared with Jupyter (default: the current directory)',
    value: 'DIR'
  },
  'base-url': { type: 'string', help: "Jupyter's base_url (default: /)", value: 'URL' },
  config: { type: 'string', help: 'a Jupyter config file (JSON or Python)', value: 'FILE' },
  'allow-remote-access': {
    type: 'boolean',
    help: 'accept any Host header (default: only when listening on a non-loopback address)'
  },
  'allow-origin': {
    type: 'string',
    help: "Jupyter's allow_origin: an origin allowed cross-origin access, or '*'",
    value: 'ORIGIN'
  },
  'allow-origin-pat': {
    type: 'string',
    help: "Jupyter's allow_origin_pat: a regular expression for such origins",
    value: 'REGEX'
  },
  'disable-check-xsrf': {
    type: 'boolean',
    help: 'skip the XSRF check, as Jupyter does with disable_check_xsrf (tests without auth only)'
  },
  'log-level': {
    type: 'string',
    help: `one of ${LOG_LEVELS.join(', ')} (default: info)`,
    value: 'LEVEL'
  },
  help: { type: 'boolean', short: 'h', help: 'show this help' }
};

const LAB_FLAGS: FlagSpec = {
  ...COMMON_FLAGS,
  token: {
    type: 'string',
    help: 'the token to require (default: $JUPYTER_TOKEN, else a new random one); visible in ps',
    value: 'T'
  },
  'token-file': {
    type: 'string',
    help: 'read the token from FILE (one trailing newline dropped) instead of --token',
    value: 'FILE'
  },
  'no-auth': { type: 'boolean', help: 'no authentication at all (Jupyter with an empty token)' },
  jupyter: {
    type: 'string',
    help: "the jupyter executable (default: 'jupyter' on PATH, else the project's .venv)",
    value: 'PATH'
  },
  'allow-root': { type: 'boolean', help: 'let Jupyter run as root (it refuses otherwise)' },
  'upstream-transport': {
    type: 'string',
    help: 'how the gateway reaches Jupyter: unix (a private socket, default) or tcp (loopback)',
    value: 'KIND'
  }
};

const SERVE_FLAGS: FlagSpec = {
  ...COMMON_FLAGS,
  upstream: {
    type: 'string',
    help: 'the running Jupyter Server: http://HOST:PORT or unix:/path/to.sock (required)',
    value: 'URL'
  },
  token: {
    type: 'string',
    help: "the upstream's token, shown in the banner and the runtime record (auth always asks the upstream)",
    value: 'T'
  },
  'token-file': {
    type: 'string',
    help: 'read that token from FILE (one trailing newline dropped) instead of --token',
    value: 'FILE'
  }
};

export const LAB_USAGE = `Usage: jupyter-store lab [options] [-- extra jupyter lab arguments]

Start JupyterLab behind the jupyter-store gateway. Jupyter listens on a private unix socket
(or a loopback port); the gateway answers the contents API itself and passes everything else
through, so every save goes through jupyter-store.

Options:
${describeFlags(LAB_FLAGS)}
Settings: --StoreSettings.<name>=<value> for any setting of the README's configuration
section (they beat STORE_OBJECT_* variables and jupyter_store_config.json files).
Other users can read a command line (ps): give the token with --token-file or $JUPYTER_TOKEN,
and credentials with STORE_OBJECT_* variables or a jupyter_store_config.json file.

If Jupyter exits, the gateway stops too, with a non-zero exit status: run it under a
supervisor (systemd, a container runtime) to restart both.
`;

export const SERVE_USAGE = `Usage: jupyter-store serve --upstream URL|unix:PATH [options]

Front a Jupyter Server that is already running (a JupyterHub single-user server, for example).
It must use the same root_dir and base_url, and be reachable only by the gateway.

Options:
${describeFlags(SERVE_FLAGS)}
Settings: --StoreSettings.<name>=<value> for any setting of the README's configuration
section (they beat STORE_OBJECT_* variables and jupyter_store_config.json files).
Other users can read a command line (ps): give the token with --token-file or $JUPYTER_TOKEN,
and credentials with STORE_OBJECT_* variables or a jupyter_store_config.json file.
`;

/** `jupyter-store lab`. */
export async function runLab(argv: readonly string[]): Promise<void> {
  const separator = argv.indexOf('--');
  const extraArgs = separator >= 0 ? argv.slice(separator + 1) : [];
  const split = splitSettingsFlags(separator >= 0 ? argv.slice(0, separator) : argv);
  const { values } = parseFlags(split.rest, LAB_FLAGS);
  if (values.help) {
    process.stdout.write(LAB_USAGE);
    return;
  }
  const jupyterFlag = values.jupyter as string | undefined;
  // A path is resolved here: Jupyter runs with the root directory as its working directory.
  const jupyter =
    jupyterFlag === undefined
      ? findJupyter()
      : jupyterFlag.includes(path.sep)
        ? path.resolve(jupyterFlag)
        : jupyterFlag;
  const common = commonSettings(values, split.flags, jupyter ? pythonPrefixOf(jupyter) : undefined);
  for (const flag of ['token', 'token-file']) {
    if (values['no-auth'] && values[flag] !== undefined) {
      throw new UsageError(`--${flag} and --no-auth cannot be combined`);
    }
  }
  const transport = (values['upstream-transport'] as string | undefined) ?? 'unix';
  if (transport !== 'unix' && transport !== 'tcp') {
    throw new UsageError(`--upstream-transport: '${transport}' is neither unix nor tcp`);
  }
  if (jupyter && jupyter.includes(path.sep) && !isExecutableFile(jupyter)) {
    throw new UsageError(`--jupyter: '${jupyter}' is not an executable file`);
  }
  if (!jupyter) {
    throw new UsageError(
      "--jupyter: no 'jupyter' on PATH and no project .venv; install JupyterLab or name it"
    );
  }
  const givenToken = tokenFromFlags(values);
  const token = values['no-auth']
    ? null
    : (givenToken ?? (process.env.JUPYTER_TOKEN || randomBytes(24).toString('hex')));

  const log = createLogger({ level: common.logLevel });
  warnAboutVisibleSecrets(log, values, split.flags);
  const shimDir = createCommandShim();
  let jupyterProcess: JupyterProcess | undefined;
  const gateway = await startGateway(
    common,
    log,
    async () => {
      jupyterProcess = await JupyterProcess.start({
        jupyter,
        rootDir: common.rootDir,
        baseUrl: common.baseUrl,
        token,
        transport,
        allowRemoteAccess: common.allowRemoteAccess,
        disableCheckXsrf: common.disableCheckXsrf,
        allowRoot: Boolean(values['allow-root']),
        allowOrigin: common.allowOrigin,
        allowOriginPat: values['allow-origin-pat'] as string | undefined,
        configFile: common.configFile,
        labextensionsPaths: bundledLabextensions(),
        pathPrepend: [shimDir],
        extraArgs,
        log
      });
      return jupyterProcess.address;
    },
    token
  );
  if (!gateway || !jupyterProcess) {
    fs.rmSync(shimDir, { recursive: true, force: true });
    process.exitCode = 1;
    return;
  }
  const upstream = jupyterProcess;
  // Jupyter wrote its own record; clients must find the gateway, not the hidden server.
  removeRuntimeRecord(common.runtimeDir, upstream.pid);
  const lifecycle = new Lifecycle(gateway, log, common.runtimeDir, async () => {
    await upstream.stop();
    fs.rmSync(shimDir, { recursive: true, force: true });
  });
  lifecycle.announce(common, token ?? '', upstream.address, upstream.pid);
  void upstream.exited.then(exit => {
    if (lifecycle.stopping) return;
    log.fatal(
      { exit: describeExit(exit) },
      'The Jupyter server exited unexpectedly; the gateway stops too'
    );
    void lifecycle.stop(1);
  });
}

/** `jupyter-store serve`. */
export async function runServe(argv: readonly string[]): Promise<void> {
  const split = splitSettingsFlags(argv);
  const { values } = parseFlags(split.rest, SERVE_FLAGS);
  if (values.help) {
    process.stdout.write(SERVE_USAGE);
    return;
  }
  const common = commonSettings(values, split.flags, process.env.VIRTUAL_ENV);
  if (values.upstream === undefined) throw new UsageError('--upstream is required');
  let upstream: UpstreamAddress;
  try {
    upstream = parseUpstreamAddress(values.upstream as string);
  } catch (error) {
    throw new UsageError(`--upstream: ${(error as Error).message}`);
  }
  const givenToken = tokenFromFlags(values);
  const log = createLogger({ level: common.logLevel });
  warnAboutVisibleSecrets(log, values, split.flags);
  const gateway = await startGateway(
    common,
    log,
    () => Promise.resolve(upstream),
    givenToken ?? process.env.JUPYTER_TOKEN ?? null
  );
  if (!gateway) {
    process.exitCode = 1;
    return;
  }
  const lifecycle = new Lifecycle(gateway, log, common.runtimeDir, () => Promise.resolve());
  lifecycle.announce(common, givenToken ?? '', upstream, null);
}

/**
 * The token of `--token` or of `--token-file` (read now, without one trailing newline), or
 * undefined when neither is given.
 *
 * @throws UsageError when both are given, or the file cannot be read, is empty or holds more
 *   than one line.
 */
function tokenFromFlags(values: Record<string, string | boolean | undefined>): string | undefined {
  const file = values['token-file'] as string | undefined;
  if (file === undefined) return values.token as string | undefined;
  if (values.token !== undefined) {
    throw new UsageError('--token and --token-file cannot be combined');
  }
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
function warnAboutVisibleSecrets(
  log: Logger,
  values: Record<string, string | boolean | undefined>,
  storeFlags: Record<string, string>
): void {
  const flags: string[] = [];
  const instead: string[] = [];
  if (values.token !== undefined) {
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

interface ICommonSettings {
  store: StoreSettings;
  /** The Python environment whose `etc/jupyter` is the environment config directory. */
  sysPrefix: string | undefined;
  ip: string;
  port: number;
  rootDir: string;
  baseUrl: string;
  configFile: string | undefined;
  allowRemoteAccess: boolean;
  allowOrigin: string;
  allowOriginPat: RegExp | null;
  disableCheckXsrf: boolean;
  logLevel: LogLevel;
  runtimeDir: string;
}

function commonSettings(
  values: Record<string, string | boolean | undefined>,
  storeFlags: Record<string, string>,
  sysPrefix: string | undefined
): ICommonSettings {
  const ip = (values.ip as string | undefined) ?? '127.0.0.1';
  const port = values.port === undefined ? 8888 : Number(values.port);
  if (!/^\d+$/.test(String(values.port ?? '8888')) || port > 65535) {
    throw new UsageError(`--port: '${values.port}' is not a port number`);
  }
  const rootDir = path.resolve((values['root-dir'] as string | undefined) ?? process.cwd());
  if (!isDirectory(rootDir)) throw new UsageError(`--root-dir: '${rootDir}' is not a directory`);
  const baseUrlFlag = values['base-url'] as string | undefined;
  if (baseUrlFlag !== undefined && !/^\/[^?#\s]*$/.test(baseUrlFlag)) {
    throw new UsageError(`--base-url: '${baseUrlFlag}' must be a path starting with /`);
  }
  const configFile = values.config as string | undefined;
  if (configFile !== undefined && !isReadableFile(configFile)) {
    throw new UsageError(`--config: '${configFile}' is not a readable file`);
  }
  const logLevel = ((values['log-level'] as string | undefined) ?? 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new UsageError(`--log-level: '${logLevel}' is not one of ${LOG_LEVELS.join(', ')}`);
  }
  let allowOriginPat: RegExp | null = null;
  const pattern = values['allow-origin-pat'] as string | undefined;
  if (pattern !== undefined) {
    try {
      allowOriginPat = new RegExp(pattern);
    } catch {
      throw new UsageError(`--allow-origin-pat: '${pattern}' is not a regular expression`);
    }
  }
  let store: StoreSettings;
  try {
    store = loadStoreSettings({ flags: storeFlags, configFile, sysPrefix }).settings;
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
    baseUrl: normalizeBaseUrl(baseUrlFlag ?? '/'),
    configFile: configFile === undefined ? undefined : path.resolve(configFile),
    allowRemoteAccess: Boolean(values['allow-remote-access']) || !isLoopbackBinding(ip),
    allowOrigin: (values['allow-origin'] as string | undefined) ?? '',
    allowOriginPat,
    disableCheckXsrf: Boolean(values['disable-check-xsrf']),
    logLevel,
    runtimeDir: jupyterRuntimeDir()
  };
}

/**
 * Bind the gateway first (a busy port fails in a moment, not after Jupyter's start-up), then
 * start or find the upstream. Returns null after logging why when either fails.
 */
async function startGateway(
  common: ICommonSettings,
  log: Logger,
  startUpstream: () => Promise<UpstreamAddress>,
  upstreamToken: string | null
): Promise<Gateway | null> {
  try {
    await checkAddressFree(common.ip, common.port);
  } catch (error) {
    log.fatal({ ip: common.ip, port: common.port, err: (error as Error).message }, 'cannot listen');
    return null;
  }
  let upstream: UpstreamAddress;
  try {
    upstream = await startUpstream();
  } catch (error) {
    log.fatal({ err: (error as Error).message }, 'cannot start the Jupyter server');
    return null;
  }
  const setting = common.store.contents_backend;
  const contents = decideContentsBackend(
    setting,
    setting === 'auto'
      ? await askUpstreamWhatItLoads({ upstream, baseUrl: common.baseUrl, token: upstreamToken })
      : 'not asked'
  );
  log.info({ backend: contents.backend, setting, reason: contents.reason }, 'contents backend');
  const gateway = new Gateway({
    rootDir: common.rootDir,
    baseUrl: common.baseUrl,
    upstream,
    contentsBackend: contents.backend,
    checks: {
      allowRemoteAccess: common.allowRemoteAccess,
      allowOrigin: common.allowOrigin,
      allowOriginPat: common.allowOriginPat,
      disableCheckXsrf: common.disableCheckXsrf
    },
    log
  });
  // Overlaps archiving's start, so that the first save after "ready" costs what a later one does.
  const prepared = Promise.all([
    gateway.manager.prepare(),
    gateway.authenticator.prepare(upstreamToken)
  ]);
  try {
    const archiving = await Archiving.start(common.store, gateway.manager, log, {
      upstream: { address: upstream, baseUrl: common.baseUrl, token: upstreamToken },
      relayedSaves:
        contents.backend === 'jupyter' ? hook => gateway.addRelayedSaveHook(hook) : undefined
    });
    // Python-side listeners (file ids, collaboration rooms) hear of our own changes too.
    const events = new ContentsEventEmitter({
      manager: gateway.manager,
      upstream,
      baseUrl: common.baseUrl,
      token: upstreamToken,
      agent: gateway.proxy.agent,
      log
    });
    gateway.onShutdown(() => events.close());
    gateway.onShutdown(() => archiving.close());
    gateway.mount(
      'api/store',
      createStoreApiRouter({
        archiving,
        manager: gateway.manager,
        log,
        contentsBackend: contents,
        publishEnabled: () => isPublishEnabled({ sysPrefix: common.sysPrefix })
      })
    );
    gateway.mount(
      'store',
      createLandingRouter({
        archiving,
        authenticator: gateway.authenticator,
        checks: gateway.checks,
        baseUrl: gateway.baseUrl,
        log
      }),
      { public: true }
    );
  } catch (error) {
    log.fatal({ err: (error as Error).message }, 'cannot start archiving');
    await gateway.close({ drainTimeoutMs: 0 });
    return null;
  }
  await prepared;
  try {
    await gateway.listen(common.port, common.ip);
  } catch (error) {
    log.fatal({ ip: common.ip, port: common.port, err: (error as Error).message }, 'cannot listen');
    await gateway.close({ drainTimeoutMs: 0 });
    return null;
  }
  return gateway;
}

/** Fail fast when the address is taken, before a Jupyter start-up that takes seconds. */
function checkAddressFree(ip: string, port: number): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(port, ip, () => probe.close(() => resolve()));
  });
}

/** Signals, the runtime record and the order of a graceful stop. */
class Lifecycle {
  constructor(
    private readonly _gateway: Gateway,
    private readonly _log: Logger,
    private readonly _runtimeDir: string,
    private readonly _stopUpstream: () => Promise<void>
  ) {
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

  stopping = false;

  /** Write the runtime record and print the banner. */
  announce(
    common: ICommonSettings,
    token: string,
    upstream: UpstreamAddress,
    upstreamPid: number | null
  ): void {
    const address = this._gateway.server.address() as net.AddressInfo;
    const hostname = common.ip === '' ? 'localhost' : common.ip;
    const urlHost = displayHost(common.ip);
    const url = `http://${urlHost}:${address.port}${common.baseUrl}`;
    const record: ILiveServerRecord = {
      base_url: common.baseUrl,
      hostname,
      notebook_dir: common.rootDir,
      password: false,
      pid: process.pid,
      port: address.port,
      root_dir: common.rootDir,
      secure: false,
      sock: '',
      token,
      upstream_url: describeUpstream(upstream),
      upstream_pid: upstreamPid,
      url,
      version: packageVersion()
    };
    this._recordWritten = true;
    writeRuntimeRecord(this._runtimeDir, record);
    this._log.info(
      {
        url,
        rootDir: common.rootDir,
        upstream: describeUpstream(upstream),
        runtimeDir: this._runtimeDir
      },
      'jupyter-store is running'
    );
    const query = token ? `?token=${encodeURIComponent(token)}` : '';
    const urls = [`${url}lab${query}`];
    process.stdout.write(
      [
        `jupyter-store ${packageVersion()} is serving ${common.rootDir}`,
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

  private _recordWritten = false;
}

/**
 * The Python environment (`sys.prefix`) a `jupyter` executable belongs to: `<prefix>/bin/jupyter`
 * (symlinks resolved), so `<prefix>/etc/jupyter` is its environment config directory.
 */
function pythonPrefixOf(jupyter: string): string | undefined {
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

/** The host part of the URLs shown, as Jupyter shows them. */
function displayHost(ip: string): string {
  if (ip === '' || ip === '0.0.0.0' || ip === '::') return os.hostname();
  return ip.includes(':') ? `[${ip}]` : ip;
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
