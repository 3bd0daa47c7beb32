/** The build a benchmark runs first, so that the servers it starts run the code of the tree. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../test/support/jupyterServer';
import { log } from './cleanup';

/**
 * Build the packages (`tsc -b`), as `npm run build` does for the server: the gateways and
 * servers the benchmarks start run `lib/`, which would otherwise be whatever was built last.
 *
 * @throws when the build fails (the run stops before it measures stale code).
 */
export function build(): void {
  log('building (tsc -b)');
  const tsc = join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = spawnSync(process.execPath, [tsc, '-b'], { cwd: REPO_ROOT, stdio: 'inherit' });
  if (result.status !== 0)
    throw new Error('`tsc -b` failed: fix the build (npm run build), or pass --skip-build.');
}
