/**
 * A plain JupyterLab from the project venv, without the gateway: its server has no store API.
 * Its own Jupyter directories, no token, no XSRF check (Galata's settings), loopback only.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, isolatedEnv, VENV_DIR } from '../../packages/server/test/support/jupyterServer';

export interface IPlainLab {
  /** `http://127.0.0.1:<port>/`. */
  readonly url: string;
  /** SIGTERM, SIGKILL after 20 s; removes its directories. */
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 120_000;

export async function startPlainLab(labArguments: string[]): Promise<IPlainLab> {
  const stateDir = await mkdtemp(join(tmpdir(), 'store-ui-plain-lab-'));
  const state = {
    home: join(stateDir, 'home'),
    config: join(stateDir, 'config'),
    data: join(stateDir, 'data'),
    runtime: join(stateDir, 'runtime')
  };
  const rootDir = join(stateDir, 'root');
  for (const dir of [...Object.values(state), rootDir]) await mkdir(dir, { recursive: true });
  const port = await freePort();
  const child = spawn(
    join(VENV_DIR, 'bin', 'jupyter'),
    [
      'lab',
      '--no-browser',
      '--ServerApp.ip=127.0.0.1',
      `--ServerApp.port=${port}`,
      '--ServerApp.port_retries=0',
      `--ServerApp.root_dir=${rootDir}`,
      '--IdentityProvider.token=',
      '--ServerApp.password=',
      '--ServerApp.disable_check_xsrf=True',
      '--ServerApp.allow_root=True',
      ...labArguments
    ],
    { cwd: rootDir, env: isolatedEnv(state), stdio: ['ignore', 'ignore', 'pipe'] }
  );
  let log = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString('utf8')).slice(-8000);
  });
  let exited = false;
  const exit = new Promise<void>(resolve =>
    child.once('exit', () => {
      exited = true;
      resolve();
    })
  );
  const url = `http://127.0.0.1:${port}/`;
  const stop = async (): Promise<void> => {
    if (!exited) child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const killed = new Promise<void>(resolve => {
      timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve();
      }, 20_000);
    });
    await Promise.race([exit, killed]);
    await exit;
    clearTimeout(timer);
    await rm(stateDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!exited && Date.now() < deadline) {
    try {
      const response = await fetch(`${url}api/status`, { signal: AbortSignal.timeout(2_000) });
      await response.arrayBuffer();
      if (response.ok) return { url, stop };
    } catch {
      // not listening yet
    }
    await new Promise(resolve => setTimeout(resolve, 250));
  }
  await stop();
  throw new Error(`The plain JupyterLab did not start on ${url}:\n${log}`);
}
