/**
 * Jupyter data directory resolution, as `jupyter_core.paths.jupyter_data_dir()` (jupyter_core 5,
 * platformdirs 4) does it on each platform.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  ensureJupyterDir,
  envSet,
  jupyterConfigDir,
  jupyterDataDir,
  jupyterHomeDir
} from '../../src/contents/trust';

let tmp: string;
beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'trust-paths-')));
});
afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

const linux = (env: NodeJS.ProcessEnv) => ({ env, platform: 'linux' as const });

describe('jupyterDataDir', () => {
  it('takes a non-empty JUPYTER_DATA_DIR as it is', () => {
    expect(jupyterDataDir(linux({ JUPYTER_DATA_DIR: 'rel/data', HOME: '/h' }))).toBe('rel/data');
    expect(jupyterDataDir(linux({ JUPYTER_DATA_DIR: '', HOME: '/h' }))).toBe(
      '/h/.local/share/jupyter'
    );
  });

  it('uses XDG_DATA_HOME on Linux when non-empty, even relative', () => {
    expect(jupyterDataDir(linux({ XDG_DATA_HOME: '/xdg', HOME: '/h' }))).toBe('/xdg/jupyter');
    expect(jupyterDataDir(linux({ XDG_DATA_HOME: 'xdg', HOME: '/h' }))).toBe('xdg/jupyter');
    expect(jupyterDataDir(linux({ XDG_DATA_HOME: '', HOME: '/h' }))).toBe(
      '/h/.local/share/jupyter'
    );
  });

  it('resolves symlinks in the home directory as Path.resolve() does', () => {
    fs.mkdirSync(path.join(tmp, 'real'));
    fs.symlinkSync(path.join(tmp, 'real'), path.join(tmp, 'link'));
    expect(jupyterHomeDir(linux({ HOME: path.join(tmp, 'link') }))).toBe(path.join(tmp, 'real'));
    expect(jupyterDataDir(linux({ HOME: path.join(tmp, 'link', 'missing') }))).toBe(
      path.join(tmp, 'real', 'missing', '.local', 'share', 'jupyter')
    );
  });

  it('uses ~/Library/Jupyter on macOS, ignoring XDG', () => {
    expect(
      jupyterDataDir({ env: { HOME: '/Users/u', XDG_DATA_HOME: '/xdg' }, platform: 'darwin' })
    ).toBe('/Users/u/Library/Jupyter');
  });

  it('uses %APPDATA%\\jupyter on Windows, else the config dir', () => {
    const win = (env: NodeJS.ProcessEnv) => jupyterDataDir({ env, platform: 'win32' });
    expect(win({ APPDATA: 'C:\\Users\\u\\AppData\\Roaming', USERPROFILE: 'C:\\Users\\u' })).toBe(
      'C:\\Users\\u\\AppData\\Roaming\\jupyter'
    );
    expect(win({ USERPROFILE: 'C:\\Users\\u' })).toBe('C:\\Users\\u\\.jupyter\\data');
    expect(win({ HOMEDRIVE: 'D:', HOMEPATH: '\\home\\u' })).toBe('D:\\home\\u\\.jupyter\\data');
    expect(win({ JUPYTER_CONFIG_DIR: 'E:\\cfg', USERPROFILE: 'C:\\Users\\u' })).toBe(
      'E:\\cfg\\data'
    );
  });

  it('puts the Windows fallback under a per-process temp config dir with JUPYTER_NO_CONFIG', () => {
    const env = { JUPYTER_NO_CONFIG: '1', JUPYTER_CONFIG_DIR: 'E:\\ignored', USERPROFILE: 'C:\\u' };
    const first = jupyterConfigDir({ env, platform: 'win32' });
    expect(path.basename(first)).toMatch(/^jupyter-clean-cfg-/);
    expect(fs.statSync(first).isDirectory()).toBe(true);
    expect(jupyterConfigDir({ env, platform: 'linux' })).toBe(first);
    expect(jupyterDataDir({ env, platform: 'win32' })).toBe(path.win32.join(first, 'data'));
    // Elsewhere the data dir does not depend on the config dir.
    expect(jupyterDataDir(linux({ ...env, HOME: '/h' }))).toBe('/h/.local/share/jupyter');
    fs.rmSync(first, { recursive: true, force: true });
  });

  it('follows platformdirs with JUPYTER_PLATFORM_DIRS', () => {
    const on = { JUPYTER_PLATFORM_DIRS: '1', HOME: '/h' };
    expect(jupyterDataDir(linux(on))).toBe('/h/.local/share/jupyter');
    expect(jupyterDataDir(linux({ ...on, XDG_DATA_HOME: '/xdg' }))).toBe('/xdg/jupyter');
    // platformdirs ignores a relative XDG value.
    expect(jupyterDataDir(linux({ ...on, XDG_DATA_HOME: 'xdg' }))).toBe('/h/.local/share/jupyter');
    expect(jupyterDataDir({ env: on, platform: 'darwin' })).toBe(
      '/h/Library/Application Support/Jupyter'
    );
    expect(jupyterDataDir({ env: { ...on, XDG_DATA_HOME: '/xdg' }, platform: 'darwin' })).toBe(
      '/xdg/Jupyter'
    );
    expect(
      jupyterDataDir({ env: on, platform: 'darwin', pythonPrefix: '/opt/homebrew/opt/python' })
    ).toBe('/h/Library/Application Support/jupyter');
    expect(
      jupyterDataDir({
        env: { JUPYTER_PLATFORM_DIRS: 'yes', LOCALAPPDATA: 'C:\\L' },
        platform: 'win32'
      })
    ).toBe('C:\\L\\Jupyter');
    expect(jupyterConfigDir(linux({ ...on, XDG_CONFIG_HOME: '/cfg' }))).toBe('/cfg/jupyter');
    // "0", "off", "no"… switch it off.
    expect(
      jupyterDataDir({ env: { JUPYTER_PLATFORM_DIRS: 'off', HOME: '/h' }, platform: 'darwin' })
    ).toBe('/h/Library/Jupyter');
  });
});

describe('envSet', () => {
  it('treats only the false words as unset', () => {
    for (const value of ['no', 'N', 'false', 'OFF', '0', '0.0'])
      expect(envSet('X', { X: value })).toBe(false);
    for (const value of ['1', 'yes', '', 'anything']) expect(envSet('X', { X: value })).toBe(true);
    expect(envSet('X', {})).toBe(false);
    expect(envSet('X', {}, true)).toBe(true);
  });
});

describe('ensureJupyterDir', () => {
  it('creates missing levels private and refuses a file in the way', () => {
    const dir = path.join(tmp, 'a', 'b');
    ensureJupyterDir(dir);
    expect(fs.statSync(dir).mode & 0o077).toBe(0);
    ensureJupyterDir(dir);
    fs.writeFileSync(path.join(tmp, 'file'), '');
    expect(() => ensureJupyterDir(path.join(tmp, 'file'))).toThrow();
  });
});
