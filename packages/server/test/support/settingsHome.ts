import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A new temporary home, with Jupyter's user config and data directories below it: settings
 * loaded with its `env` read no file of the user or the machine running the tests. The caller
 * removes `home` afterwards.
 */
export function temporarySettingsHome(): { home: string; env: NodeJS.ProcessEnv } {
  const home = mkdtempSync(join(tmpdir(), 'settings-'));
  return {
    home,
    env: {
      HOME: home,
      JUPYTER_CONFIG_DIR: join(home, 'user'),
      JUPYTER_DATA_DIR: join(home, 'data')
    }
  };
}
