import * as fs from 'node:fs';
import * as path from 'node:path';
import { jupyterConfigPath, type ISettingsSources } from './load';

/**
 * Whether publishing is enabled: the counterpart of enabling a Jupyter server extension.
 *
 * Publishing is off until `jupyter store enable --user` (this user, every environment) or
 * `jupyter store enable --sys-prefix` (this Python environment only) writes
 *
 * ```
 * <config dir>/jupyter_store_config.d/publish.json   {"StoreExtension": {"publish_enabled": true}}
 * ```
 *
 * in that scope's Jupyter config directory; `jupyter store disable` removes the file again.
 *
 * #### Notes
 * - The file lives apart from `jupyter_store_config.json` and its `StoreSettings` section:
 *   publishing is switched on per scope like an extension, not configured like a setting, and
 *   settings validation (which refuses unknown `StoreSettings` fields) never sees it.
 * - Every directory of the Jupyter config path is read on every call (a few small files), so
 *   enabling or disabling takes effect at the next request, without a restart.
 * - Precedence is Jupyter's config precedence: the directories are read highest first (the user's,
 *   `$JUPYTER_CONFIG_PATH`, the environment's `<sys.prefix>/etc/jupyter`, the system's) and the
 *   first file that says anything decides. So publishing is on when some scope enables it and no
 *   scope of higher precedence turns it off. Only a hand-written `"publish_enabled": false` turns
 *   it off that way; `disable` removes its own file rather than writing `false`.
 * - A file that exists but cannot be read, is not JSON, or holds anything but a boolean decides
 *   too, as "off" (fail closed), and is reported in {@link IPublishEnablement.problems}. A file
 *   without the `StoreExtension.publish_enabled` key says nothing.
 */

/** The directory, inside a Jupyter config directory, that holds the switch. */
export const PUBLISH_CONFIG_DIR = 'jupyter_store_config.d';

/** The switch's file name inside {@link PUBLISH_CONFIG_DIR}. */
export const PUBLISH_CONFIG_NAME = 'publish.json';

/** The section of the file (a traitlets-style class name) and its key. */
export const PUBLISH_CONFIG_SECTION = 'StoreExtension';
export const PUBLISH_CONFIG_KEY = 'publish_enabled';

/** What one scope's file says. */
export interface IPublishSwitch {
  /** The file. */
  readonly file: string;
  /** Its value; undefined when the file says nothing (no such key). */
  readonly enabled: boolean | undefined;
  /** Why the file could not be used; it then counts as `false`. */
  readonly problem?: string;
}

/** The outcome over the whole Jupyter config path. */
export interface IPublishEnablement {
  readonly enabled: boolean;
  /** The file that decided, or null when none says anything (publishing is then off). */
  readonly decidedBy: string | null;
  /** Every switch file found, highest precedence first. */
  readonly switches: readonly IPublishSwitch[];
  /** Files that could not be used, each with its reason. */
  readonly problems: readonly string[];
}

/** `<configDir>/jupyter_store_config.d/publish.json`. */
export function publishConfigFile(configDir: string): string {
  return path.join(configDir, PUBLISH_CONFIG_DIR, PUBLISH_CONFIG_NAME);
}

/** Read one switch file; undefined when there is none. Never throws. */
export function readPublishSwitch(file: string): IPublishSwitch | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    return { file, enabled: false, problem: `cannot be read (${code ?? 'error'})` };
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    return { file, enabled: false, problem: 'is not valid JSON' };
  }
  if (!isObject(document)) return { file, enabled: false, problem: 'must hold a JSON object' };
  const section = document[PUBLISH_CONFIG_SECTION];
  if (section === undefined) return { file, enabled: undefined };
  if (!isObject(section)) {
    return { file, enabled: false, problem: `${PUBLISH_CONFIG_SECTION} must be a JSON object` };
  }
  const value = section[PUBLISH_CONFIG_KEY];
  if (value === undefined) return { file, enabled: undefined };
  if (typeof value !== 'boolean') {
    return {
      file,
      enabled: false,
      problem: `${PUBLISH_CONFIG_SECTION}.${PUBLISH_CONFIG_KEY} must be true or false`
    };
  }
  return { file, enabled: value };
}

/**
 * Whether publishing is enabled, which file decided, and what was wrong with any file (see the
 * module notes for the rules). Pass the same sources the settings were loaded from, so that the
 * environment directory (`sysPrefix`) is the one the gateway uses.
 */
export function publishEnablement(sources: ISettingsSources = {}): IPublishEnablement {
  const switches: IPublishSwitch[] = [];
  for (const dir of jupyterConfigPath(sources)) {
    const found = readPublishSwitch(publishConfigFile(dir));
    if (found) switches.push(found);
  }
  const deciding = switches.find(item => item.enabled !== undefined);
  return {
    enabled: deciding?.enabled === true,
    decidedBy: deciding?.file ?? null,
    switches,
    problems: switches.flatMap(item => (item.problem ? [`${item.file} ${item.problem}`] : []))
  };
}

/**
 * Is publishing enabled? Reads the config path on every call, so that the store API can pass
 * `() => isPublishEnabled(sources)` and pick up `jupyter store enable` without a restart.
 */
export function isPublishEnabled(sources: ISettingsSources = {}): boolean {
  return publishEnablement(sources).enabled;
}

/**
 * Write the switch file in `configDir` (creating its directories), atomically: a concurrent
 * reader sees the old file or the new one, never half of one.
 *
 * @returns the file written.
 * @throws Error naming the file when it cannot be written.
 */
export function writePublishSwitch(configDir: string, enabled = true): string {
  const file = publishConfigFile(configDir);
  const text = `${JSON.stringify({ [PUBLISH_CONFIG_SECTION]: { [PUBLISH_CONFIG_KEY]: enabled } }, null, 2)}\n`;
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(temporary, text, { mode: 0o644 });
    fs.renameSync(temporary, file);
  } catch (error) {
    try {
      fs.rmSync(temporary, { force: true });
    } catch {
      // nothing was written there
    }
    throw new Error(`cannot write ${file}: ${describeError(error)}`);
  }
  return file;
}

/**
 * Remove the switch file from `configDir`.
 *
 * @returns the file and whether it was there.
 * @throws Error naming the file when it exists but cannot be removed.
 */
export function removePublishSwitch(configDir: string): { file: string; removed: boolean } {
  const file = publishConfigFile(configDir);
  try {
    fs.unlinkSync(file);
    return { file, removed: true };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { file, removed: false };
    throw new Error(`cannot remove ${file}: ${describeError(error)}`);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describeError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  const message = error instanceof Error ? error.message : String(error);
  return code && !message.startsWith(code) ? `${code}: ${message}` : message;
}
