/**
 * Start the real `jupyter-store` CLI (the built `lib/cli/main.js`) as a child process, with its
 * own Jupyter home, config, data and runtime directories, and wait until its runtime record
 * appears: that record is how every test and benchmark learns the gateway's port and token.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ILiveServerRecord } from '../../src/gateway/runtimeRecord';
import { FakeUpstream } from './fakeUpstream';
import { isolatedEnv, REPO_ROOT, VENV_DIR } from './jupyterServer';

/** The built CLI; the test command builds it before jest runs. */
export const CLI = join(REPO_ROOT, 'packages', 'server', 'lib', 'cli', 'main.js');

/** The record `jpserver-<pid>.json` that the gateway writes. */
export type IGatewayRecord = ILiveServerRecord;

export interface IGatewayProcessOptions {
  /** `lab` (default) or `serve`. */
  command?: 'lab' | 'serve';
  /**
   * The program and its first arguments, before the command: an installed `jupyter-store`, or
   * `[jupyter, 'store']`. Default: this checkout's built CLI with this Node. The runtime record is
   * looked for under the pid of the process started, so the program must exec the gateway in
   * place (the pip-installed command and `jupyter store` do).
   */
  program?: readonly string[];
  /** Flags after the command; `--port 0 --root-dir …` are added unless given. */
  args?: string[];
  /** Served directory; a new temporary one by default (removed by `stop()`). */
  rootDir?: string;
  /** Extra environment. */
  env?: NodeJS.ProcessEnv;
  /** How long to wait for the runtime record; default 120 s. */
  startTimeoutMs?: number;
}

export interface IGatewayProcess {
  readonly child: ChildProcess;
  readonly record: IGatewayRecord;
  /** `http://127.0.0.1:<port>` (no base URL). */
  readonly origin: string;
  readonly baseUrl: string;
  readonly token: string;
  readonly rootDir: string;
  /** The isolated Jupyter directories, shared with the Jupyter the gateway starts. */
  readonly state: { home: string; config: string; data: string; runtime: string };
  /** `origin + baseUrl + relative`. */
  url(relative: string): string;
  /** Everything the process wrote so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or signal name) when the process has ended. */
  readonly exited: Promise<number | string>;
  /**
   * When the Jupyter the gateway started began, as the kernel counts it (`/proc/<pid>/stat`),
   * read once the record is written; undefined without an upstream or off Linux.
   */
  readonly upstreamStart: string | undefined;
  /** Send a signal and wait for the exit (SIGKILL after `killAfterMs`); idempotent. */
  stop(signal?: NodeJS.Signals, killAfterMs?: number): Promise<number | string>;
}

/** The arguments a test passes to `lab` so that it runs from the project venv, even as root. */
export function labDefaults(): string[] {
  const args = ['--jupyter', join(VENV_DIR, 'bin', 'jupyter')];
  if (process.getuid?.() === 0) args.push('--allow-root');
  return args;
}

/**
 * Run `jupyter-store lab|serve` and wait for its runtime record.
 *
 * @throws with the process's output if it exits or does not write its record in time.
 */
export async function startGatewayProcess(
  options: IGatewayProcessOptions = {}
): Promise<IGatewayProcess> {
  const program = options.program ?? [process.execPath, CLI];
  if (!options.program && !existsSync(CLI)) {
    throw new Error(`${CLI} is missing: run 'npm run build' first`);
  }
  const stateDir = await mkdtemp(join(tmpdir(), 'gateway-state-'));
  const state = {
    home: join(stateDir, 'home'),
    config: join(stateDir, 'config'),
    data: join(stateDir, 'data'),
    runtime: join(stateDir, 'runtime')
  };
  for (const dir of Object.values(state)) await mkdir(dir, { recursive: true });
  const ownRoot = options.rootDir === undefined;
  const rootDir = await realpath(
    options.rootDir ?? (await mkdtemp(join(tmpdir(), 'gateway-root-')))
  );
  const command = options.command ?? 'lab';
  const args = [...(options.args ?? [])];
  const separator = args.indexOf('--');
  const flags = separator >= 0 ? args.slice(0, separator) : args;
  const extra = separator >= 0 ? args.slice(separator) : [];
  if (!flags.includes('--port')) flags.push('--port', '0');
  if (!flags.includes('--root-dir')) flags.push('--root-dir', rootDir);
  if (!flags.includes('--ip')) flags.push('--ip', '127.0.0.1');
  const child = spawn(program[0], [...program.slice(1), command, ...flags, ...extra], {
    cwd: rootDir,
    env: { ...isolatedEnv(state), ...options.env },
    stdio: ['ignore', 'pipe', 'pipe']
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const exited = new Promise<number | string>(resolve =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1))
  );
  let hasExited = false;
  let stopping = false;
  void exited.then(code => {
    hasExited = true;
    // A gateway that ends while a test still uses it crashed: show why in the test's output.
    if (!stopping && record) {
      console.error(
        `jupyter-store ${command} exited (${code}) before it was stopped.\nstderr (end):\n${err.slice(-4000)}`
      );
    }
  });

  const recordFile = join(state.runtime, `jpserver-${child.pid}.json`);
  const deadline = Date.now() + (options.startTimeoutMs ?? 120_000);
  let record: IGatewayRecord | undefined;
  while (!hasExited && Date.now() < deadline) {
    if (existsSync(recordFile)) {
      try {
        record = JSON.parse(readFileSync(recordFile, 'utf8')) as IGatewayRecord;
        break;
      } catch {
        // being written
      }
    }
    await new Promise(resolve => setTimeout(resolve, 100));
  }
  const stop = async (signal: NodeJS.Signals = 'SIGTERM', killAfterMs = 30_000) => {
    stopping = true;
    if (!hasExited) child.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>(resolve => {
      timer = setTimeout(() => resolve('timeout'), killAfterMs);
    });
    if ((await Promise.race([exited, timeout])) === 'timeout') child.kill('SIGKILL');
    clearTimeout(timer);
    const code = await exited;
    await rm(stateDir, { recursive: true, force: true });
    if (ownRoot) await rm(rootDir, { recursive: true, force: true });
    return code;
  };
  if (!record) {
    await stop('SIGKILL');
    throw new Error(
      `jupyter-store ${command} did not write ${recordFile}${hasExited ? ' (it exited)' : ''}.\n` +
        `stdout:\n${out}\nstderr:\n${err}`
    );
  }
  const origin = `http://127.0.0.1:${record.port}`;
  const found = record;
  return {
    child,
    record: found,
    origin,
    baseUrl: found.base_url,
    token: found.token,
    rootDir,
    state,
    url: relative => `${origin}${found.base_url}${relative.replace(/^\/+/, '')}`,
    stdout: () => out,
    stderr: () => err,
    exited,
    upstreamStart: found.upstream_pid ? processStart(found.upstream_pid) : undefined,
    stop
  };
}

/**
 * When a process began, in clock ticks since boot (field 22 of `/proc/<pid>/stat`): with the pid,
 * it names one process even after the pid is reused. Undefined when it is gone or off Linux.
 */
export function processStart(pid: number): string | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces: count from after it.
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

/**
 * SIGKILL the process group of the Jupyter the gateway started: Jupyter runs detached, in a group
 * of its own, so that a gateway that crashed or was killed leaves it running.
 */
export function killUpstreamGroup(gateway: IGatewayProcess): void {
  const pid = gateway.record.upstream_pid;
  if (!pid) return;
  // Once that Jupyter has ended, its pid (and so its group id) may belong to another test's
  // Jupyter: pids wrap around within one run of the suite. Kill only the group it still leads.
  if (gateway.upstreamStart === undefined || processStart(pid) !== gateway.upstreamStart) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/**
 * Stop the gateway (see {@link IGatewayProcess.stop}); if it did not exit cleanly (a clean exit
 * stops Jupyter), {@link killUpstreamGroup}.
 *
 * @returns the gateway's exit code (or signal name).
 */
export async function stopGatewayAndJupyter(
  gateway: IGatewayProcess,
  killAfterMs?: number
): Promise<number | string> {
  const code = await gateway.stop('SIGTERM', killAfterMs);
  if (code !== 0) killUpstreamGroup(gateway);
  return code;
}

/**
 * `jupyter-store serve` in front of a new {@link FakeUpstream} on a loopback port, with the token
 * `good` (which the stand-in accepts) and `options.args` after those flags: the CLI's gateway
 * without a Jupyter Server. Stop the gateway, then close the stand-in.
 */
export async function startServeGateway(
  options: Omit<IGatewayProcessOptions, 'command'> = {}
): Promise<{ upstream: FakeUpstream; gateway: IGatewayProcess }> {
  const upstream = new FakeUpstream();
  try {
    const address = await upstream.listen({ port: 0 });
    if (address.kind !== 'tcp') throw new Error('the stand-in listens on TCP');
    const gateway = await startGatewayProcess({
      ...options,
      command: 'serve',
      args: [
        '--upstream',
        `http://127.0.0.1:${address.port}`,
        '--token',
        'good',
        ...(options.args ?? [])
      ]
    });
    return { upstream, gateway };
  } catch (error) {
    await upstream.close();
    throw error;
  }
}
