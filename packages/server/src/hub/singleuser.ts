import * as os from 'node:os';
import * as path from 'node:path';
import { UsageError } from '@jupyter-store/client';
import {
  commonSettings,
  pythonPrefixOf,
  runWithOwnJupyter,
  warnAboutVisibleSecrets,
  type IGatewayOptions
} from '../cli/gatewayCommands';
import { isExecutableFile } from '../fileChecks';
import { findJupyter } from '../gateway/jupyterProcess';
import { createLogger, type LogLevel } from '../gateway/logger';
import { HubActivityReporter } from './activity';

/** `singleuser`'s options, as the command line parses them (see `cli/program.ts`). */
export interface ISingleuserOptions {
  rootDir?: string;
  config?: string;
  logLevel: LogLevel;
  /** The `jupyterhub-singleuser` executable; default found as `lab` finds `jupyter`. */
  jupyterhubSingleuser?: string;
  allowRoot?: boolean;
  upstreamTransport: 'unix' | 'tcp';
  /** Seconds between two activity reports to the Hub. */
  activityInterval: string;
  /** The `--StoreSettings.<name>=<value>` arguments, by name. */
  storeSettings: Record<string, string>;
  /** The arguments after `--`, for `jupyterhub-singleuser`. */
  jupyterArgs: string[];
}

/**
 * `jupyter-store singleuser`: the command of a JupyterHub spawner. It starts
 * `jupyterhub-singleuser` on a private socket (or loopback port) with the Hub's base URL and root
 * directory, and puts the gateway where the Hub expects the server (`$JUPYTERHUB_SERVICE_URL`).
 *
 * #### Notes
 * Everything the Hub says arrives in `JUPYTERHUB_*` variables, which the single-user server
 * inherits: it handles the Hub's OAuth login (its `oauth_callback` is proxied like any other
 * path) and answers the gateway's identity questions for the Hub's users, and the server's own
 * `$JUPYTERHUB_API_TOKEN` is the token with which the gateway asks it about itself. The gateway
 * reports the activity of the requests it answers itself ({@link HubActivityReporter}), which the
 * single-user server never sees. SIGTERM or SIGINT from the spawner stops the gateway, drains the
 * archive, stops the single-user server and exits 0, as `lab` does.
 *
 * @returns 0 once the gateway runs (it exits when stopped), 1 when it could not start.
 * @throws UsageError when the environment is not a Hub's or an option's value cannot be used.
 */
export async function runSingleuser(
  options: ISingleuserOptions,
  env: NodeJS.ProcessEnv = process.env
): Promise<number> {
  const hub = Private.hubEnvironment(env);
  const intervalSeconds = Number(options.activityInterval);
  if (!/^\d+(\.\d+)?$/.test(options.activityInterval) || intervalSeconds <= 0) {
    throw new UsageError(
      `--activity-interval: '${options.activityInterval}' is not a positive number of seconds`
    );
  }
  const executable = Private.singleuserExecutable(options.jupyterhubSingleuser, env);
  const gatewayOptions: IGatewayOptions = {
    ip: hub.ip,
    port: String(hub.port),
    rootDir: options.rootDir ?? hub.rootDir,
    baseUrl: hub.baseUrl,
    config: options.config,
    // The Hub's proxy sends the public Host; the single-user server accepts any too.
    allowRemoteAccess: true,
    logLevel: options.logLevel,
    storeSettings: options.storeSettings
  };
  const common = commonSettings(gatewayOptions, pythonPrefixOf(executable));
  const log = createLogger({ level: common.logLevel });
  warnAboutVisibleSecrets(log, gatewayOptions);
  return runWithOwnJupyter({
    common,
    log,
    jupyter: {
      jupyter: executable,
      command: [],
      // The Hub's identity provider authenticates, with the Hub's cookies and tokens.
      token: undefined,
      transport: options.upstreamTransport,
      allowRemoteAccess: true,
      disableCheckXsrf: false,
      allowRoot: Boolean(options.allowRoot),
      extraArgs: options.jupyterArgs,
      env: {
        // The single-user server would bind the gateway's address; our flags bind the private
        // one instead, and Jupyter Server takes a socket only with its default port, 8888.
        JUPYTERHUB_SERVICE_URL: `http://127.0.0.1:8888${common.baseUrl}`
      }
    },
    upstreamToken: hub.apiToken,
    // No token in the record or the banner: users log in through the Hub.
    recordToken: '',
    upstreamName: 'jupyterhub-singleuser',
    started: gateway => {
      if (!hub.activityUrl) {
        log.warn(
          'no $JUPYTERHUB_ACTIVITY_URL: saves and store requests are not reported to the Hub'
        );
        return;
      }
      const reporter = new HubActivityReporter({
        activityUrl: hub.activityUrl,
        apiToken: hub.apiToken,
        serverName: hub.serverName,
        intervalMs: intervalSeconds * 1000,
        log
      });
      gateway.onActivity(() => reporter.touch());
      gateway.onShutdown(() => reporter.close());
    }
  });
}

namespace Private {
  /** What the Hub tells its spawned server, through the environment. */
  export interface IHubEnvironment {
    ip: string;
    port: number;
    baseUrl: string;
    rootDir: string | undefined;
    apiToken: string;
    activityUrl: string | undefined;
    serverName: string;
  }

  /**
   * Read the Hub's variables as `jupyterhub-singleuser` does: where to listen from
   * `$JUPYTERHUB_SERVICE_URL` (no host means every interface), the base URL from
   * `$JUPYTERHUB_SERVICE_PREFIX`, the root directory from `$JUPYTERHUB_ROOT_DIR` (`~` expanded).
   */
  export function hubEnvironment(env: NodeJS.ProcessEnv): IHubEnvironment {
    const serviceUrl = env.JUPYTERHUB_SERVICE_URL;
    if (!serviceUrl) {
      throw new UsageError(
        '$JUPYTERHUB_SERVICE_URL is not set: `jupyter-store singleuser` is the command a ' +
          'JupyterHub spawner runs (use `jupyter-store lab` or `serve` otherwise)'
      );
    }
    let url: URL;
    try {
      // A spawner with an empty ip writes `http://:PORT/…`: every interface, as for Python.
      url = new URL(serviceUrl.replace(/^http:\/\/:/, 'http://0.0.0.0:'));
    } catch {
      throw new UsageError(`$JUPYTERHUB_SERVICE_URL: '${serviceUrl}' is not a URL`);
    }
    if (url.protocol !== 'http:') {
      throw new UsageError(
        `$JUPYTERHUB_SERVICE_URL: '${serviceUrl}' is not http:// (internal SSL is not supported)`
      );
    }
    const apiToken = env.JUPYTERHUB_API_TOKEN;
    if (!apiToken) throw new UsageError('$JUPYTERHUB_API_TOKEN is not set');
    const rootDir = env.JUPYTERHUB_ROOT_DIR;
    return {
      ip: url.hostname.replace(/^\[|\]$/g, '') || '0.0.0.0',
      port: url.port === '' ? 80 : Number(url.port),
      baseUrl: env.JUPYTERHUB_SERVICE_PREFIX || '/',
      rootDir: rootDir ? rootDir.replace(/^~(?=$|\/)/, os.homedir()) : undefined,
      apiToken,
      activityUrl: env.JUPYTERHUB_ACTIVITY_URL || undefined,
      serverName: env.JUPYTERHUB_SERVER_NAME ?? ''
    };
  }

  /** The `jupyterhub-singleuser` to run: the flag's (a path resolved now), else found. */
  export function singleuserExecutable(flag: string | undefined, env: NodeJS.ProcessEnv): string {
    const found =
      flag === undefined
        ? findJupyter(env, 'jupyterhub-singleuser')
        : flag.includes(path.sep)
          ? path.resolve(flag)
          : flag;
    if (!found) {
      throw new UsageError(
        "--jupyterhub-singleuser: no 'jupyterhub-singleuser' on PATH; install jupyterhub or name it"
      );
    }
    if (found.includes(path.sep) && !isExecutableFile(found)) {
      throw new UsageError(`--jupyterhub-singleuser: '${found}' is not an executable file`);
    }
    return found;
  }
}
