/**
 * The set-up writes `jupyter-store` beside the venv's `jupyter`, so `.venv/bin/jupyter store …`
 * works from a shell whose PATH has neither (JupyterLab's terminals run a login shell, which
 * resets PATH).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageVersion } from '../../src/version';
import { VENV_DIR } from '../support/jupyterServer';

test('.venv/bin/jupyter store runs the CLI with a bare PATH', () => {
  const wrapper = join(VENV_DIR, 'bin', 'jupyter-store');
  expect(existsSync(wrapper)).toBe(true);
  const result = spawnSync(join(VENV_DIR, 'bin', 'jupyter'), ['store', '--version'], {
    env: { HOME: process.env.HOME ?? '/', PATH: '/usr/bin:/bin' },
    encoding: 'utf8',
    timeout: 60_000
  });
  expect({ status: result.status, stdout: result.stdout, stderr: result.stderr }).toEqual({
    status: 0,
    stdout: `${packageVersion()}\n`,
    stderr: ''
  });
});
