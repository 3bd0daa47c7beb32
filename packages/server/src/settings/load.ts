import * as fs from 'node:fs';
import * as path from 'node:path';
import { jupyterConfigDir, jupyterDataDir, type IJupyterPathContext } from '../contents/trust';
import {
  CREDENTIAL_SETTINGS,
  STORE_SETTING_NAMES,
  StoreSettingsSchema,
  type StoreSettingName,
  type StoreSettings
} from './storeSettings';
import { SettingsError } from './settingsError';
import { fillWorkspacePrefix } from './workspacePrefix';

export { SettingsError } from './settingsError';
export { splitSettingsFlags } from './commandLine';

/** The file name looked for in every Jupyter config directory. */
export const CONFIG_FILE_NAME = 'jupyter_store_config.json';

/** Environment variables and the settings they set (the specification's list). */
export const ENVIRONMENT_VARIABLES: Readonly<Record<string, StoreSettingName>> = {
  STORE_OBJECT_ACCESS_KEY_ID: 'object_access_key_id',
  STORE_OBJECT_SECRET_ACCESS_KEY: 'object_secret_access_key',
  STORE_OBJECT_ENDPOINT_URL: 'object_endpoint_url',
  STORE_OBJECT_REGION_NAME: 'object_region_name',
  STORE_OBJECT_BUCKET: 'object_bucket'
};

/** Where settings come from, besides the defaults. */
export interface ISettingsSources extends IJupyterPathContext {
  /** `--StoreSettings.<name>=<value>` arguments already split off the command line. */
  flags?: Readonly<Record<string, string>>;
  /** A config file given with `--config` (JSON; a Python file is for Jupyter alone). */
  configFile?: string;
  /**
   * The Python environment Jupyter runs in (`sys.prefix`), whose `etc/jupyter` is the
   * "environment" config directory (`jupyter store enable --sys-prefix` writes there).
   */
  sysPrefix?: string;
  /**
   * Leave `{username}` in `workspace_prefix` (the credential service, which serves every user);
   * otherwise it is filled from `JUPYTERHUB_USER`.
   */
  keepWorkspaceTemplate?: boolean;
}

/** One layer of values and where they came from. */
interface ILayer {
  source: string;
  values: Record<string, unknown>;
}

/**
 * The Jupyter config directories, highest precedence first, as `jupyter_core.paths.
 * jupyter_config_path()` lists them: the user's, `$JUPYTER_CONFIG_PATH`, the environment's
 * (`<sys.prefix>/etc/jupyter`), then the system's.
 */
export function jupyterConfigPath(sources: ISettingsSources = {}): string[] {
  const env = sources.env ?? process.env;
  const dirs = [jupyterConfigDir(sources)];
  for (const dir of (env.JUPYTER_CONFIG_PATH ?? '').split(path.delimiter)) {
    if (dir) dirs.push(dir);
  }
  if (sources.sysPrefix) dirs.push(path.join(sources.sysPrefix, 'etc', 'jupyter'));
  dirs.push('/usr/local/etc/jupyter', '/etc/jupyter');
  return [...new Set(dirs)];
}

/**
 * Load `StoreSettings` from, highest precedence first: command-line flags, the `STORE_OBJECT_*`
 * environment variables, the `--config` file, then `jupyter_store_config.json` in each Jupyter
 * config directory. Defaults fill the rest.
 *
 * @throws SettingsError naming the first unusable field, where it came from and why.
 */
export function loadStoreSettings(sources: ISettingsSources = {}): {
  settings: StoreSettings;
  /** The source of each setting that did not keep its default. */
  origins: Partial<Record<StoreSettingName, string>>;
} {
  const env = sources.env ?? process.env;
  const layers: ILayer[] = [];
  for (const dir of [...jupyterConfigPath(sources)].reverse()) {
    const file = path.join(dir, CONFIG_FILE_NAME);
    const values = readConfigFile(file, false);
    if (values) layers.push({ source: file, values });
  }
  if (sources.configFile && path.extname(sources.configFile).toLowerCase() !== '.py') {
    const values = readConfigFile(sources.configFile, true);
    if (values) layers.push({ source: sources.configFile, values });
  }
  const fromEnvironment: Record<string, unknown> = {};
  for (const [variable, name] of Object.entries(ENVIRONMENT_VARIABLES)) {
    const value = env[variable];
    if (value !== undefined && value !== '') fromEnvironment[name] = value;
  }
  layers.push({ source: 'the environment', values: fromEnvironment });
  layers.push({ source: 'the command line', values: { ...sources.flags } });

  const merged: Record<string, unknown> = {};
  const origins: Partial<Record<StoreSettingName, string>> = {};
  for (const layer of layers) {
    for (const [name, value] of Object.entries(layer.values)) {
      if (!STORE_SETTING_NAMES.includes(name as StoreSettingName)) {
        throw new SettingsError(name, layer.source, 'is not a setting of jupyter-store');
      }
      merged[name] = value;
      origins[name as StoreSettingName] = layer.source;
    }
  }
  const parsed = StoreSettingsSchema.safeParse(merged);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = String(issue.path[0] ?? 'StoreSettings');
    const shown = CREDENTIAL_SETTINGS.includes(field as StoreSettingName)
      ? ''
      : describeValue(merged[field]);
    throw new SettingsError(
      field,
      origins[field as StoreSettingName] ?? 'the defaults',
      `${issue.message}${shown}`
    );
  }
  let workspacePrefix = parsed.data.workspace_prefix;
  if (!sources.keepWorkspaceTemplate) {
    try {
      workspacePrefix = fillWorkspacePrefix(workspacePrefix, env.JUPYTERHUB_USER);
    } catch (error) {
      const origin = origins.workspace_prefix ?? 'the defaults';
      throw new SettingsError('workspace_prefix', origin, (error as Error).message);
    }
  }
  const settings = { ...parsed.data, workspace_prefix: workspacePrefix };
  return { settings: withDefaultDirectories(settings, sources), origins };
}

/** The embedded store's and the journal's default places, in the Jupyter data directory. */
function withDefaultDirectories(
  settings: StoreSettings,
  context: IJupyterPathContext
): StoreSettings {
  const base = path.join(path.resolve(jupyterDataDir(context)), 'jupyter-store');
  return {
    ...settings,
    local_store_dir: settings.local_store_dir || path.join(base, 'objects'),
    journal_dir: settings.journal_dir || path.join(base, 'journal')
  };
}

/** The `StoreSettings` section of a JSON config file, or undefined when there is none. */
function readConfigFile(file: string, required: boolean): Record<string, unknown> | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if (!required && (error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new SettingsError('StoreSettings', file, `cannot be read: ${(error as Error).message}`);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new SettingsError(
      'StoreSettings',
      file,
      `is not valid JSON: ${(error as Error).message}`
    );
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    throw new SettingsError('StoreSettings', file, 'must hold a JSON object');
  }
  const section = (document as Record<string, unknown>).StoreSettings;
  if (section === undefined) return undefined;
  if (typeof section !== 'object' || section === null || Array.isArray(section)) {
    throw new SettingsError('StoreSettings', file, 'must be a JSON object of settings');
  }
  return section as Record<string, unknown>;
}

function describeValue(value: unknown): string {
  if (value === undefined) return '';
  const text = JSON.stringify(value);
  return `, not ${text.length > 80 ? `${text.slice(0, 77)}...` : text}`;
}
