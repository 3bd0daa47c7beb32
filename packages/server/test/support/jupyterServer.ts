/**
 * Start and stop a real Jupyter Server 2 from the project's Python venv, on loopback, for the
 * differential conformance suite, the benchmark and the gateway tests.
 *
 * Every server gets its own configuration, data, runtime and home directories, so the trash
 * (send2trash writes to `$HOME/.local/share/Trash`), the notary database and its secret belong to
 * one test run and never touch the developer's own Jupyter.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** The repository root (this file lives in `packages/server/test/support`). */
export const REPO_ROOT = resolve(__dirname, '..', '..', '..', '..');

/** The project venv that the test command creates. */
export const VENV_DIR = join(REPO_ROOT, '.venv');

/** Options of {@link startJupyterServer}. */
export interface JupyterServerOptions {
  /** The directory Jupyter serves (`--ServerApp.root_dir`); it must exist. */
  rootDir: string;
  /** `--ServerApp.base_url`; defaults to `/`. A missing leading or trailing slash is added. */
  baseUrl?: string;
  /**
   * A directory for the isolated `JUPYTER_CONFIG_DIR`, `JUPYTER_DATA_DIR`, `JUPYTER_RUNTIME_DIR`
   * and `HOME`; a new temporary directory when omitted (removed again by `stop()`). Put it on the
   * same file system as `rootDir` so that deletions go to this home's trash.
   */
  stateDir?: string;
  /** Extra `--Class.trait=value` arguments. */
  extraArgs?: string[];
  /** How long to wait for `GET /api/status`, in ms; default 60 s. */
  startTimeoutMs?: number;
  /** Forward the server's stderr to this process's stderr (debugging). */
  verbose?: boolean;
}

/** A running Jupyter Server. */
export interface JupyterServerHandle {
  /** `http://127.0.0.1:<port>`, without the base URL. */
  readonly url: string;
  /** The base URL, with leading and trailing slash (`/` by default). */
  readonly baseUrl: string;
  /** The token; send it as `Authorization: token <token>`. */
  readonly token: string;
  /** The served root directory (real path). */
  readonly rootDir: string;
  /** `JUPYTER_DATA_DIR`: holds `nbsignatures.db` and `notebook_secret`. */
  readonly dataDir: string;
  /** The isolated `HOME`; the trash is under `<home>/.local/share/Trash`. */
  readonly homeDir: string;
  /** The TCP port. */
  readonly port: number;
  /** The server process id. */
  readonly pid: number;
  /** Headers that authenticate a request (`Authorization: token …`). */
  readonly authHeaders: Record<string, string>;
  /** The full URL of a path below the base URL, e.g. `api(‘api/contents/foo’)`. */
  api(relative: string): string;
  /** The last lines the server wrote on stderr (for error messages). */
  log(): string;
  /** SIGTERM, wait for the exit (SIGKILL after `killAfterMs`, default 10 s); idempotent. */
  stop(killAfterMs?: number): Promise<void>;
}

/**
 * Find the Python interpreter of the project venv, or throw with a message that says how to
 * create it. The suite fails (never skips) without it.
 */
export function findVenvPython(venvDir: string = VENV_DIR): string {
  const python = join(venvDir, 'bin', 'python');
  if (!existsSync(python) || !existsSync(join(venvDir, 'bin', 'jupyter-server'))) {
    throw new Error(
      `No Jupyter Server in the project venv ${venvDir}: ${python} or ${join(venvDir, 'bin', 'jupyter-server')} ` +
        'is missing. Create it with the README test command (it installs jupyter_server and jupyterlab ' +
        'into .venv); the differential conformance suite cannot run without a real Jupyter Server.'
    );
  }
  return python;
}

/** Ask the kernel for a free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/** Normalise a base URL to `/x/y/`. */
export function normaliseBaseUrl(baseUrl: string | undefined): string {
  const trimmed = (baseUrl ?? '/').replace(/^\/+|\/+$/g, '');
  return trimmed === '' ? '/' : `/${trimmed}/`;
}

const sleep = (ms: number): Promise<void> => new Promise(r => setTimeout(r, ms));

/** Environment for a child: the caller's, minus anything that would point Jupyter elsewhere. */
export function isolatedEnv(state: {
  home: string;
  config: string;
  data: string;
  runtime: string;
}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(JUPYTER|XDG|IPYTHON|PYTHON(PATH|HOME|STARTUP))/.test(key)) continue;
    env[key] = value;
  }
  return {
    ...env,
    HOME: state.home,
    XDG_DATA_HOME: join(state.home, '.local', 'share'),
    XDG_CONFIG_HOME: join(state.home, '.config'),
    XDG_CACHE_HOME: join(state.home, '.cache'),
    JUPYTER_CONFIG_DIR: state.config,
    JUPYTER_DATA_DIR: state.data,
    JUPYTER_RUNTIME_DIR: state.runtime,
    JUPYTER_PLATFORM_DIRS: '0',
    IPYTHONDIR: join(state.home, '.ipython'),
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONUNBUFFERED: '1'
  };
}

/**
 * Start a Jupyter Server on 127.0.0.1 with a free port and a random token, and wait until
 * `GET {base}api/status` answers 200.
 *
 * @param options - root directory, base URL and isolation directory.
 * @returns a handle; always call `stop()` (e.g. in `afterAll`).
 * @throws if the venv is missing or the server does not come up in time (with its log).
 */
export async function startJupyterServer(
  options: JupyterServerOptions
): Promise<JupyterServerHandle> {
  const python = findVenvPython();
  const rootDir = await realpath(options.rootDir);
  const baseUrl = normaliseBaseUrl(options.baseUrl);
  const ownState = options.stateDir === undefined;
  const stateDir = options.stateDir ?? (await mkdtemp(join(tmpdir(), 'jupyter-state-')));
  const state = {
    home: join(stateDir, 'home'),
    config: join(stateDir, 'config'),
    data: join(stateDir, 'data'),
    runtime: join(stateDir, 'runtime')
  };
  for (const dir of Object.values(state)) await mkdir(dir, { recursive: true });
  const token = randomBytes(24).toString('hex');
  const timeoutMs = options.startTimeoutMs ?? 60_000;

  let lastError: Error | undefined;
  // The free port may be taken between the probe and the bind; try a few ports.
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const args = [
      '-m',
      'jupyter_server',
      '--ServerApp.ip=127.0.0.1',
      `--ServerApp.port=${port}`,
      '--ServerApp.port_retries=0',
      `--ServerApp.root_dir=${rootDir}`,
      `--ServerApp.base_url=${baseUrl}`,
      `--IdentityProvider.token=${token}`,
      '--ServerApp.open_browser=False',
      '--ServerApp.allow_root=True',
      '--ServerApp.log_level=WARN',
      ...(options.extraArgs ?? [])
    ];
    const child = spawn(python, args, {
      cwd: rootDir,
      env: isolatedEnv(state),
      stdio: ['ignore', 'pipe', 'pipe']
    });
    const logLines: string[] = [];
    const collect = (chunk: Buffer): void => {
      const text = chunk.toString('utf8');
      if (options.verbose) process.stderr.write(text);
      logLines.push(...text.split('\n'));
      if (logLines.length > 200) logLines.splice(0, logLines.length - 200);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    const exited = new Promise<number | null>(r => child.once('exit', code => r(code)));
    let hasExited = false;
    void exited.then(() => {
      hasExited = true;
    });

    const url = `http://127.0.0.1:${port}`;
    const handle: JupyterServerHandle = {
      url,
      baseUrl,
      token,
      rootDir,
      dataDir: state.data,
      homeDir: state.home,
      port,
      pid: child.pid ?? -1,
      authHeaders: { Authorization: `token ${token}` },
      api: (relative: string) => `${url}${baseUrl}${relative.replace(/^\/+/, '')}`,
      log: () => logLines.join('\n'),
      stop: (killAfterMs = 10_000) =>
        stopChild(child, exited, () => hasExited, killAfterMs, ownState ? stateDir : undefined)
    };

    const deadline = Date.now() + timeoutMs;
    let up = false;
    while (Date.now() < deadline && !hasExited) {
      try {
        const res = await fetch(handle.api('api/status'), {
          headers: handle.authHeaders,
          signal: AbortSignal.timeout(2_000)
        });
        await res.arrayBuffer();
        if (res.status === 200) {
          up = true;
          break;
        }
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    if (up) return handle;
    await handle.stop(2_000);
    lastError = new Error(
      `Jupyter Server (${python} -m jupyter_server, port ${port}) did not answer GET ${baseUrl}api/status ` +
        `within ${timeoutMs} ms${hasExited ? ' (it exited)' : ''}. Its log:\n${handle.log()}`
    );
    if (!/address already in use|Errno 98/i.test(handle.log())) break;
  }
  throw lastError ?? new Error('Jupyter Server did not start');
}

/** Wait for the exit promise, at most `ms`; the timer never outlives the wait. */
async function exitWithin(
  exited: Promise<number | null>,
  ms: number
): Promise<'exited' | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>(r => {
    timer = setTimeout(() => r('timeout'), ms);
  });
  try {
    return await Promise.race([exited.then(() => 'exited' as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function stopChild(
  child: ChildProcess,
  exited: Promise<number | null>,
  hasExited: () => boolean,
  killAfterMs: number,
  removeDir: string | undefined
): Promise<void> {
  if (!hasExited()) {
    child.kill('SIGTERM');
    if ((await exitWithin(exited, killAfterMs)) === 'timeout' && !hasExited()) {
      child.kill('SIGKILL');
      await exitWithin(exited, 5_000);
    }
  }
  if (removeDir !== undefined) await rm(removeDir, { recursive: true, force: true });
}
