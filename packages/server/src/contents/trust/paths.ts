import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * Where Jupyter keeps its per-user data (`notebook_secret`, `nbsignatures.db`), resolved the way
 * `jupyter_core.paths.jupyter_data_dir()` resolves it, so that the gateway and the Jupyter Server
 * it fronts share one notary secret and one signature database without any configuration.
 */

/** What the resolution depends on; every field defaults to this process's own value. */
export interface IJupyterPathContext {
  /** The environment; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** The platform as Node names it; default `process.platform`. */
  platform?: NodeJS.Platform;
  /**
   * Python's `sys.prefix`, only consulted on macOS: a Homebrew Python (`/opt/homebrew…`) makes
   * platformdirs use `jupyter` instead of `Jupyter`. Unknown by default, which means not Homebrew.
   */
  pythonPrefix?: string;
}

/**
 * `jupyter_core.paths.envset`: is the variable set to anything but a "false" word
 * (`no`, `n`, `false`, `off`, `0`, `0.0`, any case)? Unset gives `fallback`.
 */
export function envSet(
  name: string,
  env: NodeJS.ProcessEnv = process.env,
  fallback = false
): boolean {
  const value = env[name];
  if (value === undefined) return fallback;
  return !['no', 'n', 'false', 'off', '0', '0.0'].includes(value.toLowerCase());
}

/**
 * The home directory as `jupyter_core.paths.get_home_dir()` finds it: `~` expanded (on POSIX
 * `$HOME` when set, even if empty, else the password database; on Windows `%USERPROFILE%`, else
 * `%HOMEDRIVE%%HOMEPATH%`), then made absolute with symlinks resolved as far as the path exists.
 */
export function jupyterHomeDir(context: IJupyterPathContext = {}): string {
  const env = context.env ?? process.env;
  const platform = context.platform ?? process.platform;
  let home: string;
  if (platform === 'win32') {
    home =
      env.USERPROFILE ??
      (env.HOMEPATH !== undefined ? (env.HOMEDRIVE ?? '') + env.HOMEPATH : os.homedir());
  } else {
    home = env.HOME ?? os.userInfo().homedir;
  }
  return resolveLoosely(home, pathFor(platform));
}

/**
 * `jupyter_core.paths.jupyter_config_dir()`: `$JUPYTER_CONFIG_DIR`, or with `$JUPYTER_NO_CONFIG` a
 * throw-away temporary directory (one per process, as Python makes one per process), or the
 * platformdirs config dir with `$JUPYTER_PLATFORM_DIRS`, else `~/.jupyter`.
 */
export function jupyterConfigDir(context: IJupyterPathContext = {}): string {
  const env = context.env ?? process.env;
  const platform = context.platform ?? process.platform;
  if (env.JUPYTER_NO_CONFIG) return cleanConfigDir();
  if (env.JUPYTER_CONFIG_DIR) return env.JUPYTER_CONFIG_DIR;
  if (envSet('JUPYTER_PLATFORM_DIRS', env)) {
    return platformUserDir('config', env, platform, context.pythonPrefix);
  }
  return pathFor(platform).join(jupyterHomeDir(context), '.jupyter');
}

/**
 * `jupyter_core.paths.jupyter_data_dir()`: `$JUPYTER_DATA_DIR` when non-empty; with
 * `$JUPYTER_PLATFORM_DIRS` the platformdirs user data dir; otherwise `~/Library/Jupyter` on macOS,
 * `%APPDATA%\jupyter` on Windows (or `<config dir>\data` without `%APPDATA%`, which is where
 * `$JUPYTER_NO_CONFIG` matters), and `$XDG_DATA_HOME/jupyter` or `~/.local/share/jupyter` elsewhere.
 *
 * #### Notes
 * Like Python, this only computes the path; {@link ensureJupyterDir} creates it. A relative
 * `$JUPYTER_DATA_DIR` is returned as given, so it means the same only if both processes share a
 * working directory.
 */
export function jupyterDataDir(context: IJupyterPathContext = {}): string {
  const env = context.env ?? process.env;
  const platform = context.platform ?? process.platform;
  const p = pathFor(platform);
  if (env.JUPYTER_DATA_DIR) return env.JUPYTER_DATA_DIR;
  if (envSet('JUPYTER_PLATFORM_DIRS', env)) {
    return platformUserDir('data', env, platform, context.pythonPrefix);
  }
  const home = jupyterHomeDir(context);
  if (platform === 'darwin') return p.join(home, 'Library', 'Jupyter');
  if (platform === 'win32') {
    if (env.APPDATA) return resolveLoosely(p.join(env.APPDATA, 'jupyter'), p);
    return p.join(jupyterConfigDir(context), 'data');
  }
  // Python tests XDG_DATA_HOME for truthiness only here, so a relative value is accepted.
  const xdg = env.XDG_DATA_HOME || p.join(home, '.local', 'share');
  return p.join(xdg, 'jupyter');
}

/**
 * Create a Jupyter directory as `jupyter_core`'s `ensure_dir_exists(d, mode=0o700)` does: missing
 * levels are made with mode 0700 (less the umask), an existing directory is left as it is, and a
 * non-directory in the way is an error.
 */
export function ensureJupyterDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!fs.statSync(dir).isDirectory()) {
    throw new Error(`${JSON.stringify(dir)} exists but is not a directory`);
  }
}

let cleanConfigDirPath: string | undefined;

/** Python keeps one `jupyter-clean-cfg-*` temp dir per process; so do we. */
function cleanConfigDir(): string {
  cleanConfigDirPath ??= fs.mkdtempSync(path.join(os.tmpdir(), 'jupyter-clean-cfg-'));
  return cleanConfigDirPath;
}

function pathFor(platform: NodeJS.Platform): path.PlatformPath {
  return platform === 'win32' ? path.win32 : path.posix;
}

/**
 * Python's `Path.resolve()` (non-strict): absolute, with symlinks resolved for the part of the path
 * that exists and the rest appended. Only meaningful on the platform we run on.
 */
function resolveLoosely(target: string, p: path.PlatformPath = path): string {
  const absolute = p.resolve(target);
  const rest: string[] = [];
  let current = absolute;
  for (;;) {
    try {
      return p.join(fs.realpathSync.native(current), ...rest.reverse());
    } catch {
      const parent = p.dirname(current);
      if (parent === current) return absolute;
      rest.push(p.basename(current));
      current = parent;
    }
  }
}

/**
 * The platformdirs (4.x) `user_data_dir` / `user_config_dir` for app `jupyter`, without author or
 * version, as `JUPYTER_PLATFORM_DIRS=1` selects them.
 */
function platformUserDir(
  kind: 'data' | 'config',
  env: NodeJS.ProcessEnv,
  platform: NodeJS.Platform,
  pythonPrefix: string | undefined
): string {
  if (platform === 'win32') {
    // platformdirs asks the shell for the folder; the environment variable names the same place.
    const override = (env.WIN_PD_OVERRIDE_LOCAL_APPDATA ?? '').trim();
    const base = /^(?:[A-Za-z]:[\\/]|\\\\[^\\]+\\[^\\]+)/.test(override)
      ? override
      : (env.LOCALAPPDATA ??
        path.win32.join(jupyterHomeDir({ env, platform }), 'AppData', 'Local'));
    return path.win32.join(path.win32.normalize(base), 'Jupyter');
  }
  const appName =
    platform === 'darwin' && !(pythonPrefix ?? '').startsWith('/opt/homebrew')
      ? 'Jupyter'
      : 'jupyter';
  // platformdirs honours only absolute XDG values, on macOS as well as on Linux.
  const xdg = env[kind === 'data' ? 'XDG_DATA_HOME' : 'XDG_CONFIG_HOME'] ?? '';
  if (path.posix.isAbsolute(xdg)) return path.posix.join(xdg, appName);
  const home = platformdirsHome(env);
  // On macOS platformdirs puts data and config in the same place.
  if (platform === 'darwin')
    return path.posix.join(home, 'Library', 'Application Support', appName);
  return path.posix.join(home, kind === 'data' ? '.local/share' : '.config', appName);
}

/** platformdirs expands `~` itself: `$HOME` when absolute, else the password database; no realpath. */
function platformdirsHome(env: NodeJS.ProcessEnv): string {
  const home = env.HOME;
  if (home !== undefined && path.posix.isAbsolute(home)) return home;
  return os.userInfo().homedir.replace(/\/+$/, '') || '/';
}
