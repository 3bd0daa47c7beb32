/**
 * Our side of the contents benchmark: the built `createApp` as a process of its own, and how its
 * memory is read.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO_ROOT } from '../../test/support/jupyterServer';
import { sleep } from '../harness';

/** A child environment without anything that would point at the developer's Jupyter. */
function isolatedEnv(stateDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(JUPYTER|XDG|IPYTHON|NODE_OPTIONS$)/.test(key)) env[key] = value;
  }
  const home = join(stateDir, 'home');
  return {
    ...env,
    HOME: home,
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_CACHE_HOME: join(home, '.cache'),
    JUPYTER_CONFIG_DIR: join(stateDir, 'config'),
    JUPYTER_DATA_DIR: join(stateDir, 'data'),
    JUPYTER_RUNTIME_DIR: join(stateDir, 'runtime')
  };
}

/**
 * Our contents API alone, from the built `createApp`, as a process of its own on a loopback port
 * (the contents API has no authentication of its own: the gateway guards it in the product).
 */
const CONTENTS_SERVER = `
const { createApp } = require(${JSON.stringify(join(REPO_ROOT, 'packages', 'server', 'lib', 'app.js'))});
const app = createApp({ rootDir: process.argv[1] });
const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write('http://127.0.0.1:' + server.address().port + '/api/contents\\n');
});
process.once('SIGTERM', () => {
  server.close(() => app.locals.contentsManager.close().finally(() => process.exit(0)));
  server.closeIdleConnections();
});
`;

/** Our server, started from the built library as its own process. */
interface IOurServer {
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

export async function startOurServer(
  rootDir: string,
  stateDir: string,
  profileDir?: string
): Promise<IOurServer> {
  const app = join(REPO_ROOT, 'packages', 'server', 'lib', 'app.js');
  if (!existsSync(app)) throw new Error(`${app} is missing: run \`npm run build\` first.`);
  for (const dir of ['home', 'config', 'data', 'runtime'])
    await mkdir(join(stateDir, dir), { recursive: true });
  const nodeFlags = profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`];
  const child: ChildProcess = spawn(
    process.execPath,
    [...nodeFlags, '-e', CONTENTS_SERVER, rootDir],
    { cwd: rootDir, env: isolatedEnv(stateDir), stdio: ['ignore', 'pipe', 'pipe'] }
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
    if (output.length > 20_000) output = output.slice(-20_000);
  });
  let exitCode: number | null | undefined;
  const exited = new Promise<void>(resolve =>
    child.once('exit', code => {
      exitCode = code;
      resolve();
    })
  );
  const stop = async (): Promise<void> => {
    if (exitCode !== undefined) return;
    child.kill('SIGTERM');
    const graceMs = profileDir === undefined ? 10_000 : 60_000;
    if ((await Promise.race([exited.then(() => 'exited'), sleep(graceMs)])) !== 'exited') {
      child.kill('SIGKILL');
      await Promise.race([exited, sleep(5_000)]);
    }
  };
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && exitCode === undefined) {
    const match = /(http:\/\/127\.0\.0\.1:\d+\/\S*?)api\/contents/.exec(output);
    if (match !== null) return { url: match[1], pid: child.pid ?? -1, stop };
    await sleep(50);
  }
  await stop();
  throw new Error(
    `our server (node ${app}'s createApp) did not print its URL within 30 s` +
      `${exitCode !== undefined ? ` (it exited with ${exitCode})` : ''}. Its output:\n${output}`
  );
}

/** Reset a process's VmHWM to its current RSS (Linux `clear_refs` 5); false if not allowed. */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}
