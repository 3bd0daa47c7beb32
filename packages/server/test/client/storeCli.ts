/**
 * Helpers of the client's integration specs: run `jupyter-store <command>` as a terminal would,
 * run code in a real kernel and collect what it prints, and set up notebooks and sessions
 * through the gateway.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { delimiter, join } from 'node:path';
import { CLI, type IGatewayProcess } from '../support/gateway';
import { VENV_DIR } from '../support/jupyterServer';
import { decodeV1, executeRequest, openKernelSocket, type IKernelSocket } from '../support/kernel';

/** What a command did. */
export interface ICommandResult {
  /** The exit status, or the signal's name if it was killed. */
  readonly status: number | string;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Run the built CLI (`node lib/cli/main.js <args>`) with `env` added to this process's
 * environment; killed after `timeoutMs`.
 */
export function runCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 60_000
): Promise<ICommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe']
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', error => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ status: code ?? signal ?? -1, stdout, stderr });
    });
  });
}

/**
 * The environment of a terminal on the gateway's machine: its Jupyter directories (so that the
 * runtime directory holds its record), and none of the kernel variables of this process.
 */
export function terminalEnv(gateway: IGatewayProcess): NodeJS.ProcessEnv {
  return {
    JUPYTER_RUNTIME_DIR: gateway.state.runtime,
    JUPYTER_CONFIG_DIR: gateway.state.config,
    JUPYTER_DATA_DIR: gateway.state.data,
    JPY_SESSION_NAME: '',
    JPY_PARENT_PID: ''
  };
}

/**
 * The PATH a user's Jupyter runs with: the project's venv first (as `scripts/start.sh` sets it),
 * so that `jupyter` is a command in kernels' shell escapes.
 */
export function pathWithVenv(): string {
  return [join(VENV_DIR, 'bin'), process.env.PATH ?? ''].join(delimiter);
}

/** A JSON request to the gateway with its token; returns the status and parsed body. */
export async function callGateway(
  gateway: IGatewayProcess,
  method: string,
  relative: string,
  body?: unknown
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(gateway.url(relative), {
    method,
    headers: {
      Authorization: `token ${gateway.token}`,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' })
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000)
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
}

/** A small valid notebook with one markdown cell. */
export function notebookWith(text: string): Record<string, unknown> {
  return {
    cells: [{ cell_type: 'markdown', id: 'only', metadata: {}, source: text }],
    metadata: {},
    nbformat: 4,
    nbformat_minor: 5
  };
}

/** Save a notebook through the gateway's contents API (so it is archived). */
export async function saveNotebook(
  gateway: IGatewayProcess,
  path: string,
  text: string
): Promise<void> {
  const saved = await callGateway(gateway, 'PUT', `api/contents/${path}`, {
    type: 'notebook',
    content: notebookWith(text)
  });
  if (saved.status !== 200 && saved.status !== 201) {
    throw new Error(`saving ${path} answered ${saved.status}: ${JSON.stringify(saved.body)}`);
  }
}

/** Create a directory through the gateway's contents API. */
export async function makeDirectory(gateway: IGatewayProcess, path: string): Promise<void> {
  const made = await callGateway(gateway, 'PUT', `api/contents/${path}`, { type: 'directory' });
  if (made.status !== 201 && made.status !== 200) {
    throw new Error(`creating ${path} answered ${made.status}`);
  }
}

/** A session as the sessions API returns it. */
export interface ISessionModel {
  id: string;
  path: string;
  kernel: { id: string };
}

/**
 * Open a notebook session as JupyterLab does (`POST api/sessions`): a new Python kernel, or the
 * kernel `kernelId` shared with another notebook.
 */
export async function openSession(
  gateway: IGatewayProcess,
  path: string,
  kernelId?: string
): Promise<ISessionModel> {
  const name = path.split('/').at(-1);
  const created = await callGateway(gateway, 'POST', 'api/sessions', {
    path,
    name,
    type: 'notebook',
    kernel: kernelId === undefined ? { name: 'python3' } : { id: kernelId }
  });
  if (created.status !== 201) {
    throw new Error(
      `POST api/sessions answered ${created.status}: ${JSON.stringify(created.body)}`
    );
  }
  return created.body as ISessionModel;
}

/** Connect to a kernel's websocket through the gateway. */
export function connectKernel(gateway: IGatewayProcess, kernelId: string): Promise<IKernelSocket> {
  const url = gateway
    .url(`api/kernels/${kernelId}/channels?session_id=${randomUUID()}`)
    .replace(/^http/, 'ws');
  return openKernelSocket(url, { Authorization: `token ${gateway.token}` });
}

/** What a cell printed. */
export interface ICellOutput {
  /** Everything on the `stdout` stream (a shell escape's output, both of its streams). */
  readonly stdout: string;
  readonly stderr: string;
  /** The error's name, when the cell raised one. */
  readonly error?: string;
}

/**
 * Run a cell and collect its stream output until the kernel is idle again (or `timeoutMs`
 * passes, which rejects).
 */
export function runCell(
  kernel: IKernelSocket,
  code: string,
  timeoutMs = 60_000
): Promise<ICellOutput> {
  const { socket } = kernel;
  const msgId = randomUUID();
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    let error: string | undefined;
    const timer = setTimeout(() => {
      socket.off('message', onMessage);
      reject(new Error(`the kernel did not finish ${JSON.stringify(code)} in ${timeoutMs} ms`));
    }, timeoutMs);
    const onMessage = (data: Buffer, isBinary: boolean): void => {
      if (!isBinary) return;
      const { channel, parts } = decodeV1(data);
      const header = parts[0] as { msg_type: string };
      const parent = parts[1] as { msg_id?: string };
      if (channel !== 'iopub' || parent.msg_id !== msgId) return;
      const content = parts[3] as {
        name?: string;
        text?: string;
        ename?: string;
        execution_state?: string;
      };
      if (header.msg_type === 'stream') {
        if (content.name === 'stderr') stderr += content.text ?? '';
        else stdout += content.text ?? '';
      } else if (header.msg_type === 'error') {
        error = content.ename;
      } else if (header.msg_type === 'status' && content.execution_state === 'idle') {
        clearTimeout(timer);
        socket.off('message', onMessage);
        resolve({ stdout, stderr, error });
      }
    };
    socket.on('message', onMessage);
    socket.send(executeRequest(code, msgId, randomUUID()));
  });
}

/**
 * Run a shell escape (`!…`) in the kernel: what it printed, and the exit status IPython kept in
 * `_exit_code`.
 */
export async function runShellEscape(
  kernel: IKernelSocket,
  command: string,
  timeoutMs = 60_000
): Promise<{ status: number; output: string }> {
  const cell = await runCell(kernel, `!${command}`, timeoutMs);
  if (cell.error) throw new Error(`!${command} raised ${cell.error}: ${cell.stderr}`);
  const status = Number(await kernel.execute('_exit_code', timeoutMs));
  // IPython runs shell escapes on a pseudo-terminal, which ends lines with \r\n.
  return { status, output: (cell.stdout + cell.stderr).replace(/\r\n/g, '\n') };
}

/** Poll `check` every 100 ms until it returns true; false after `timeoutMs`. */
export async function waitUntil(
  check: () => Promise<boolean>,
  timeoutMs = 30_000
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise(resolve => setTimeout(resolve, 100));
  }
  return check();
}
