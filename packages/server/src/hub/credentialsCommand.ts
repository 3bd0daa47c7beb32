import { UsageError } from '@jupyter-store/client';
import { createLogger, type LogLevel } from '../gateway/logger';
import { loadStoreSettings, redactSettings, SettingsError, type StoreSettings } from '../settings';
import { CredentialService } from './credentialService';
import { PolicyError } from './policy';

/** The options of `jupyter-store credentials-service`. */
export interface ICredentialsServiceOptions {
  /** Where to listen; default `$JUPYTERHUB_SERVICE_URL`. */
  url?: string;
  /** A JSON config file with `StoreSettings`. */
  config?: string;
  logLevel?: LogLevel;
  /** `--StoreSettings.<name>=<value>` arguments, by name. */
  storeSettings: Record<string, string>;
}

/**
 * Run the credential service as JupyterHub starts a managed service: its URL from
 * `JUPYTERHUB_SERVICE_URL`, the Hub's API from `JUPYTERHUB_API_URL`, its prefix behind the
 * proxy from `JUPYTERHUB_SERVICE_PREFIX`. It runs until SIGINT or SIGTERM.
 *
 * @returns 0 once listening; a usage error (status 2) for settings that cannot scope
 * credentials to one user, or a missing URL.
 */
export async function runCredentialsService(
  options: ICredentialsServiceOptions,
  env: NodeJS.ProcessEnv = process.env
): Promise<number> {
  const listenUrl = Private.url('--url', options.url ?? env.JUPYTERHUB_SERVICE_URL);
  const hubApiUrl = env.JUPYTERHUB_API_URL;
  if (!hubApiUrl) {
    throw new UsageError('JUPYTERHUB_API_URL is not set: run this as a JupyterHub service');
  }
  Private.url('JUPYTERHUB_API_URL', hubApiUrl);
  let settings: StoreSettings;
  try {
    settings = loadStoreSettings({
      flags: options.storeSettings,
      configFile: options.config,
      keepWorkspaceTemplate: true,
      env
    }).settings;
  } catch (error) {
    if (error instanceof SettingsError) throw new UsageError(error.message);
    throw error;
  }
  const log = createLogger({ level: options.logLevel ?? 'info' }).child({
    component: 'credentials'
  });
  let service: CredentialService;
  try {
    service = new CredentialService({
      settings,
      hubApiUrl,
      servicePrefix: env.JUPYTERHUB_SERVICE_PREFIX,
      log
    });
  } catch (error) {
    if (error instanceof PolicyError) throw new UsageError(`StoreSettings: ${error.message}`);
    throw error;
  }
  const host = listenUrl.hostname.replace(/^\[|\]$/g, '');
  const port = await service.listen(Number(listenUrl.port || 80), host);
  log.info(
    { settings: redactSettings(settings), host, port, hub: hubApiUrl },
    'credential service listening'
  );
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log.info({ signal }, 'shutting down');
      void service.close().then(() => process.exit(0));
    });
  }
  return 0;
}

namespace Private {
  /** An http URL, or a usage error naming where it came from. */
  export function url(what: string, value: string | undefined): URL {
    if (!value) {
      throw new UsageError(`${what}: no URL to listen on (JupyterHub sets JUPYTERHUB_SERVICE_URL)`);
    }
    let parsed: URL;
    try {
      parsed = new URL(value);
    } catch {
      throw new UsageError(`${what}: '${value}' is not a URL`);
    }
    if (parsed.protocol !== 'http:') {
      throw new UsageError(`${what}: '${value}' must be an http:// URL (TLS is the proxy's)`);
    }
    return parsed;
  }
}
