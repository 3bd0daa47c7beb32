import {
  addStoreCommands,
  CommandLine,
  processIO,
  type IStoreCommandIO
} from '@jupyter-store/client';
import { Command, Option, type ParseOptionsResult } from 'commander';
import { LOG_LEVELS } from '../gateway/logLevels';
import { splitSettingsFlags } from '../settings/commandLine';
import { packageVersion } from '../version';
import type * as EnableCommands from './enableCommands';
import type * as GatewayCommands from './gatewayCommands';
import type * as SingleuserCommand from '../hub/singleuser';
import type * as CredentialsCommand from '../hub/credentialsCommand';

/**
 * The `jupyter-store` command line: `lab` and `serve` (the gateway), `singleuser` (the gateway
 * as a JupyterHub spawner's command), `enable` and `disable` (publishing), and the client's
 * store commands. It declares every command and option, so that help and usage errors need
 * nothing else; the server's code behind `lab`, `serve`, `singleuser`, `enable` and `disable`
 * is loaded only when one of them runs, so that the store commands, which a kernel runs often,
 * start without it.
 *
 * @returns the exit status (see {@link CommandLine.run}).
 */
export function runJupyterStore(
  argv: readonly string[],
  options: runJupyterStore.IOptions = {}
): Promise<number> {
  const io = options.io ?? processIO();
  const line = new CommandLine(io);
  const program = createProgram(line, io, options);
  // With no command at all, the help.
  return line.run(program, argv.length ? argv : ['--help']);
}

export namespace runJupyterStore {
  export interface IOptions {
    /** Where the commands write, and what the store commands see; default this process's. */
    io?: IStoreCommandIO;
    /** How `enable` and `disable` find `jupyter`; default as `lab` does. */
    findJupyter?: EnableCommands.IEnableContext['findJupyter'];
    /** The modules of the server's commands; default loaded on demand. */
    modules?: Partial<IServerCommands>;
  }

  /** The modules that implement the server's commands. */
  export interface IServerCommands {
    gateway(): Promise<typeof GatewayCommands>;
    enable(): Promise<typeof EnableCommands>;
    singleuser(): Promise<typeof SingleuserCommand>;
    credentials(): Promise<typeof CredentialsCommand>;
  }
}

type IServerCommands = runJupyterStore.IServerCommands;

/** Where the server's commands come from when they run. */
const SERVER_COMMANDS: IServerCommands = {
  gateway: () => import('./gatewayCommands.js'),
  enable: () => import('./enableCommands.js'),
  singleuser: () => import('../hub/singleuser.js'),
  credentials: () => import('../hub/credentialsCommand.js')
};

/** The program, every command reporting through `line`. */
function createProgram(
  line: CommandLine,
  io: IStoreCommandIO,
  options: runJupyterStore.IOptions
): Command {
  const modules = { ...SERVER_COMMANDS, ...options.modules };
  const program = line
    .configure(new Command('jupyter-store'), 'jupyter-store')
    .usage('<command> [options]')
    .description('The jupyter-store gateway, and its store commands (also: jupyter store …).')
    .version(packageVersion(), '--version', 'show the version')
    // The program's own options come before the command: the command's are its own.
    .enablePositionalOptions()
    .addHelpText('after', "\nRun 'jupyter-store <command> --help' for a command's options.");

  const lab = Private.gatewayCommand(line, 'lab', { passthrough: true })
    .summary('start JupyterLab behind the jupyter-store gateway')
    .usage('[options] [-- extra jupyter lab arguments]')
    .description(Private.LAB_DESCRIPTION)
    .addOption(
      new Option(
        '--token <T>',
        'the token to require (default: $JUPYTER_TOKEN, else a new random one); visible in ps'
      ).conflicts(['tokenFile', 'auth'])
    )
    .addOption(
      new Option(
        '--token-file <FILE>',
        'read the token from FILE (one trailing newline dropped) instead of --token'
      ).conflicts('auth')
    )
    .option('--no-auth', 'no authentication at all (Jupyter with an empty token)')
    .option(
      '--jupyter <PATH>',
      "the jupyter executable (default: 'jupyter' on PATH, else the project's .venv)"
    )
    .option('--allow-root', 'let Jupyter run as root (it refuses otherwise)')
    .addOption(
      new Option(
        '--upstream-transport <KIND>',
        'how the gateway reaches Jupyter: unix (a private socket) or tcp (loopback)'
      )
        .choices(['unix', 'tcp'])
        .default('unix')
    )
    .addHelpText('after', `\n${Private.SETTINGS_NOTE}\n\n${Private.LAB_NOTE}`);
  lab.action(async () => {
    const { runLab } = await modules.gateway();
    line.status = await runLab({
      ...lab.opts<Omit<GatewayCommands.ILabOptions, 'storeSettings' | 'jupyterArgs'>>(),
      storeSettings: lab.storeSettings,
      jupyterArgs: lab.jupyterArgs
    });
  });

  const serve = Private.gatewayCommand(line, 'serve', { passthrough: false })
    .summary('put the gateway in front of a Jupyter Server that is already running')
    .usage('--upstream URL|unix:PATH [options]')
    .description(Private.SERVE_DESCRIPTION)
    .requiredOption(
      '--upstream <URL>',
      'the running Jupyter Server: http://HOST:PORT or unix:/path/to.sock'
    )
    .addOption(
      new Option(
        '--token <T>',
        "the upstream's token, shown in the banner and the runtime record (auth always asks the upstream)"
      ).conflicts('tokenFile')
    )
    .option(
      '--token-file <FILE>',
      'read that token from FILE (one trailing newline dropped) instead of --token'
    )
    .addHelpText('after', `\n${Private.SETTINGS_NOTE}`);
  serve.action(async () => {
    const { runServe } = await modules.gateway();
    line.status = await runServe({
      ...serve.opts<Omit<GatewayCommands.IServeOptions, 'storeSettings'>>(),
      storeSettings: serve.storeSettings
    });
  });

  const singleuser = Private.singleuserCommand(line);
  singleuser.action(async () => {
    const { runSingleuser } = await modules.singleuser();
    line.status = await runSingleuser({
      ...singleuser.opts<
        Omit<SingleuserCommand.ISingleuserOptions, 'storeSettings' | 'jupyterArgs'>
      >(),
      storeSettings: singleuser.storeSettings,
      jupyterArgs: singleuser.jupyterArgs
    });
  });

  const credentials = Private.credentialsServiceCommand(line);
  credentials.action(async () => {
    const { runCredentialsService } = await modules.credentials();
    line.status = await runCredentialsService({
      ...credentials.opts<Omit<CredentialsCommand.ICredentialsServiceOptions, 'storeSettings'>>(),
      storeSettings: credentials.storeSettings
    });
  });

  const context = {
    env: io.env,
    write: (text: string) => io.stdout(text),
    findJupyter: options.findJupyter
  };
  /** `enable` or `disable`, running what `choose` picks of the enable commands' module. */
  const scope = (
    name: string,
    summary: string,
    description: string,
    choose: (commands: typeof EnableCommands) => typeof EnableCommands.runEnable
  ): Command => {
    const command = Private.scopeCommand(line, name).summary(summary).description(description);
    return command.action(async () => {
      const run = choose(await modules.enable());
      run(command.opts<EnableCommands.IScopeOptions>(), context);
    });
  };
  const enable = scope(
    'enable',
    'enable publishing: --user (everywhere) or --sys-prefix (this environment)',
    Private.ENABLE_DESCRIPTION,
    commands => commands.runEnable
  );
  const disable = scope(
    'disable',
    "take back 'enable' for --user or --sys-prefix",
    Private.DISABLE_DESCRIPTION,
    commands => commands.runDisable
  );

  for (const command of [lab, serve, singleuser, credentials, enable, disable]) {
    program.addCommand(command);
  }
  addStoreCommands(program, line, io);
  return program;
}

namespace Private {
  /**
   * `lab` or `serve`: a command that also takes Jupyter's `--StoreSettings.<name>=<value>` (any
   * setting, by name), and with `passthrough` hands what follows `--` to `jupyter lab`.
   */
  export class GatewayCommand extends Command {
    constructor(name: string, options: { passthrough: boolean }) {
      super(name);
      this._passthrough = options.passthrough;
    }

    /** The `--StoreSettings.<name>=<value>` arguments, by name. */
    storeSettings: Record<string, string> = {};

    /** What followed `--`. */
    jupyterArgs: string[] = [];

    override parseOptions(argv: string[]): ParseOptionsResult {
      const end = this._passthrough ? argv.indexOf('--') : -1;
      this.jupyterArgs = end < 0 ? [] : argv.slice(end + 1);
      const split = splitSettingsFlags(end < 0 ? argv : argv.slice(0, end));
      this.storeSettings = split.flags;
      return super.parseOptions(split.rest);
    }

    private readonly _passthrough: boolean;
  }

  /** A gateway command with the options `lab` and `serve` share. */
  export function gatewayCommand(
    line: CommandLine,
    name: string,
    options: { passthrough: boolean }
  ): GatewayCommand {
    return line
      .configure(new GatewayCommand(name, options), 'jupyter-store')
      .option('--ip <ADDR>', 'address to listen on', '127.0.0.1')
      .option('--port <N>', 'port to listen on (0 picks a free one)', '8888')
      .option(
        '--root-dir <DIR>',
        'directory to serve, shared with Jupyter (default: the current directory)'
      )
      .option('--base-url <URL>', "Jupyter's base_url", '/')
      .option('--config <FILE>', 'a Jupyter config file (JSON or Python)')
      .option(
        '--allow-remote-access',
        'accept any Host header (default: only when listening on a non-loopback address)'
      )
      .option(
        '--allow-origin <ORIGIN>',
        "Jupyter's allow_origin: an origin allowed cross-origin access, or '*'"
      )
      .option(
        '--allow-origin-pat <REGEX>',
        "Jupyter's allow_origin_pat: a regular expression for such origins"
      )
      .option(
        '--disable-check-xsrf',
        'skip the XSRF check, as Jupyter does with disable_check_xsrf (tests without auth only)'
      )
      .addOption(
        new Option('--log-level <LEVEL>', 'how much the gateway logs')
          .choices(LOG_LEVELS)
          .default('info')
      );
  }

  /**
   * `singleuser`, the command of a JupyterHub spawner: where it listens, its base URL and its
   * root directory come from the Hub's `JUPYTERHUB_*` variables.
   */
  export function singleuserCommand(line: CommandLine): GatewayCommand {
    return line
      .configure(new GatewayCommand('singleuser', { passthrough: true }), 'jupyter-store')
      .summary('run as a JupyterHub single-user server: jupyterhub-singleuser behind the gateway')
      .usage('[options] [-- extra jupyterhub-singleuser arguments]')
      .description(SINGLEUSER_DESCRIPTION)
      .option(
        '--root-dir <DIR>',
        'directory to serve (default: $JUPYTERHUB_ROOT_DIR, else the current directory)'
      )
      .option('--config <FILE>', 'a Jupyter config file (JSON or Python)')
      .option(
        '--jupyterhub-singleuser <PATH>',
        "the jupyterhub-singleuser executable (default: the one on PATH, else the project's .venv)"
      )
      .option('--allow-root', 'let the single-user server run as root (it refuses otherwise)')
      .addOption(
        new Option(
          '--upstream-transport <KIND>',
          'how the gateway reaches the single-user server: unix (a private socket) or tcp'
        )
          .choices(['unix', 'tcp'])
          .default('unix')
      )
      .option(
        '--activity-interval <SECONDS>',
        'the shortest time between two reports to the Hub of activity the gateway answered',
        '30'
      )
      .addOption(
        new Option('--log-level <LEVEL>', 'how much the gateway logs')
          .choices(LOG_LEVELS)
          .default('info')
      )
      .addHelpText('after', `\n${SETTINGS_NOTE}`);
  }

  /**
   * `credentials-service`, a JupyterHub-managed service that gives single-user servers
   * short-lived credentials scoped to their user's prefixes.
   */
  export function credentialsServiceCommand(line: CommandLine): GatewayCommand {
    return line
      .configure(new GatewayCommand('credentials-service', { passthrough: false }), 'jupyter-store')
      .summary("run JupyterHub's credential service: per-user short-lived S3 credentials")
      .description(CREDENTIALS_DESCRIPTION)
      .option('--url <URL>', 'where to listen (default: $JUPYTERHUB_SERVICE_URL)')
      .option('--config <FILE>', 'a JSON config file with StoreSettings')
      .addOption(
        new Option('--log-level <LEVEL>', 'how much the service logs')
          .choices(LOG_LEVELS)
          .default('info')
      )
      .addHelpText('after', `\n${SETTINGS_NOTE}`);
  }

  /** `enable` or `disable`, with exactly one scope. */
  export function scopeCommand(line: CommandLine, name: string): Command {
    return line
      .configure(new Command(name), 'jupyter-store')
      .usage('--user|--sys-prefix [options]')
      .addOption(
        new Option(
          '--user',
          'for this user, in every environment (the Jupyter config directory)'
        ).conflicts('sysPrefix')
      )
      .option('--sys-prefix', "for this Python environment only ('<sys.prefix>/etc/jupyter')")
      .addOption(
        new Option(
          '--jupyter <PATH>',
          'with --sys-prefix: the jupyter executable whose environment is meant'
        ).conflicts('sysPrefixDir')
      )
      .option('--sys-prefix-dir <DIR>', "with --sys-prefix: the environment's sys.prefix itself")
      .addHelpText('after', `\n${SCOPES_NOTE}`);
  }

  export const LAB_DESCRIPTION = `Start JupyterLab behind the jupyter-store gateway. Jupyter listens on a private unix socket (or a loopback port); the gateway answers the contents API itself and passes everything else through, so every save goes through jupyter-store.`;

  export const SINGLEUSER_DESCRIPTION = `Run as a JupyterHub single-user server (c.Spawner.cmd = ['jupyter-store', 'singleuser']). It starts jupyterhub-singleuser on a private unix socket (or a loopback port) and listens where the Hub expects the server ($JUPYTERHUB_SERVICE_URL), with the Hub's base URL ($JUPYTERHUB_SERVICE_PREFIX) and root directory ($JUPYTERHUB_ROOT_DIR). The Hub's login passes through; the gateway reports the activity of the requests it answers to the Hub.`;

  export const CREDENTIALS_DESCRIPTION = `Run as a JupyterHub service (an entry of c.JupyterHub.services with this command and a url). POST {prefix}credentials with a single-user server's JUPYTERHUB_API_TOKEN answers short-lived S3 credentials (STS AssumeRole) whose session policy allows only that user's prefixes; single-user servers ask for them with the credentials_service_url setting. The long-lived credentials are this service's own (STORE_OBJECT_* variables or settings) and are never passed on.`;

  export const LAB_NOTE = `If Jupyter exits, the gateway stops too, with a non-zero exit status: run it under a
supervisor (systemd, a container runtime) to restart both.`;

  export const SERVE_DESCRIPTION = `Front a Jupyter Server that is already running (a JupyterHub single-user server, for example). It must use the same root_dir and base_url, and be reachable only by the gateway.`;

  export const SETTINGS_NOTE = `Settings: --StoreSettings.<name>=<value> for any setting of the README's configuration
section (they beat STORE_OBJECT_* variables and jupyter_store_config.json files).
Other users can read a command line (ps): give the token with --token-file or $JUPYTER_TOKEN,
and credentials with STORE_OBJECT_* variables or a jupyter_store_config.json file.`;

  export const ENABLE_DESCRIPTION = `Enable publishing (PUT {base}api/store/publish/<path>), which is off by default. Writes <config dir>/jupyter_store_config.d/publish.json with {"StoreExtension": {"publish_enabled": true}} in the Jupyter config directory of the scope. A running jupyter-store picks it up at its next request; no restart is needed.`;

  export const DISABLE_DESCRIPTION = `Take back 'jupyter-store enable': removes <config dir>/jupyter_store_config.d/publish.json from the Jupyter config directory of the scope. Publishing stays on if another scope still enables it; the command says which.`;

  export const SCOPES_NOTE = `Exactly one of --user and --sys-prefix is required. --sys-prefix means the Python
environment of --sys-prefix-dir DIR if given, else of the jupyter executable ('--jupyter PATH',
else 'jupyter' on PATH, else the project's .venv, as 'jupyter-store lab' finds it; its sys.prefix
is taken as the directory above the one holding it, symlinks resolved), else $VIRTUAL_ENV.`;
}
