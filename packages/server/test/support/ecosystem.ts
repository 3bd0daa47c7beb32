/**
 * The ecosystem venv for the ecosystem tests, which run real Jupyter tools against the gateway:
 * `.venv-ecosystem` at the repository root, with Jupyter Server, JupyterLab and nbformat at the
 * versions of the project venv plus jupyter-collaboration (jupyter-server-ydoc), jupytext,
 * papermill, nbdime, JupyterHub, nbconvert and ipykernel, every package pinned in
 * `requirements-ecosystem.txt`. `scripts/setup.sh --ecosystem` (part of the README test command)
 * creates it; `scripts/start.sh` does not need it.
 *
 * A missing or outdated venv is an error, never a skip.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './jupyterServer';

/** Where `scripts/setup.sh --ecosystem` creates the ecosystem venv. */
export const ECOSYSTEM_VENV_DIR = join(REPO_ROOT, '.venv-ecosystem');

/** The pinned requirements of the ecosystem venv (a `pip freeze` lock). */
export const ECOSYSTEM_REQUIREMENTS = join(REPO_ROOT, 'requirements-ecosystem.txt');

/** The copy of the requirements that `scripts/setup.sh` writes once the install succeeded. */
const INSTALLED_MARKER = join(ECOSYSTEM_VENV_DIR, '.installed-requirements.txt');

const SET_UP =
  'run `bash scripts/setup.sh --ecosystem` (or the README test command, bash scripts/test.sh)';

/**
 * The absolute path of the ecosystem venv, after checking that its install finished and matches
 * `requirements-ecosystem.txt`.
 *
 * @throws if the venv is missing, half-installed or installed from other requirements, telling to
 *   run `bash scripts/setup.sh --ecosystem`.
 */
export function ecosystemVenv(): string {
  if (!existsSync(join(ECOSYSTEM_VENV_DIR, 'bin', 'python')) || !existsSync(INSTALLED_MARKER)) {
    throw new Error(
      `The ecosystem venv ${ECOSYSTEM_VENV_DIR} is missing or its install did not finish: ` +
        `${SET_UP}, which installs ${ECOSYSTEM_REQUIREMENTS} into it.`
    );
  }
  if (readFileSync(INSTALLED_MARKER, 'utf8') !== readFileSync(ECOSYSTEM_REQUIREMENTS, 'utf8')) {
    throw new Error(
      `The ecosystem venv ${ECOSYSTEM_VENV_DIR} was installed from other requirements than ` +
        `${ECOSYSTEM_REQUIREMENTS}: ${SET_UP} to update it.`
    );
  }
  return ECOSYSTEM_VENV_DIR;
}

/**
 * The absolute path of a command of the ecosystem venv, e.g. `ecosystemBin('jupyter')`,
 * `ecosystemBin('papermill')`, `ecosystemBin('python')`.
 *
 * @param name - a file name in the venv's `bin/` (no slash).
 * @throws if the venv is not ready (see {@link ecosystemVenv}) or has no such command.
 */
export function ecosystemBin(name: string): string {
  if (name === '' || name.includes('/')) {
    throw new Error(`ecosystemBin: ${JSON.stringify(name)} is not a command name`);
  }
  const binary = join(ecosystemVenv(), 'bin', name);
  if (!existsSync(binary)) {
    throw new Error(
      `The ecosystem venv has no ${binary}: is the package that provides it pinned in ` +
        `${ECOSYSTEM_REQUIREMENTS}? Then ${SET_UP}.`
    );
  }
  return binary;
}

/**
 * The arguments a test passes to `jupyter-store lab` so that it runs the ecosystem venv's
 * JupyterLab (with jupyter-collaboration, jupytext, nbdime), even as root: the counterpart of
 * `labDefaults()` in `gateway.ts`.
 *
 * @throws if the venv is not ready (see {@link ecosystemVenv}).
 */
export function ecosystemLabDefaults(): string[] {
  const args = ['--jupyter', ecosystemBin('jupyter')];
  if (process.getuid?.() === 0) args.push('--allow-root');
  return args;
}
