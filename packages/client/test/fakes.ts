/**
 * Small fakes for the client's unit specs: a fetch that answers from a table of routes and
 * records what it was sent, a store command run against it, a process table, and runtime
 * records.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runStoreCommand, type IStoreCommandIO } from '../src/commands/storeCommands';
import type { IProcessInfo, IProcessTable } from '../src/processTree';
import type { StoreClient } from '../src/storeClient';

/** One request the fake fetch received. */
export interface ISentRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: unknown;
}

/** An answer: a status and a JSON body (or text). */
export interface IFakeAnswer {
  status: number;
  body?: unknown;
  text?: string;
}

/**
 * A fetch answering `METHOD path` (the path below the origin, query included) from `routes`;
 * anything else is a 404 with Jupyter's error body.
 */
export function fakeFetch(routes: FakeRoutes): { fetch: typeof fetch; sent: ISentRequest[] } {
  const sent: ISentRequest[] = [];
  const fake = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(String(input));
    const headers = Object.fromEntries(
      Object.entries((init?.headers ?? {}) as Record<string, string>).map(([k, v]) => [
        k.toLowerCase(),
        v
      ])
    );
    const request: ISentRequest = {
      method: init?.method ?? 'GET',
      url: url.toString(),
      headers,
      body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined
    };
    sent.push(request);
    const route = routes[`${request.method} ${url.pathname}${url.search}`];
    const answer =
      typeof route === 'function'
        ? route(request)
        : (route ?? { status: 404, body: { message: 'Not Found', reason: null } });
    const text = answer.text ?? JSON.stringify(answer.body ?? null);
    return new Response(text, {
      status: answer.status,
      headers: { 'Content-Type': 'application/json' }
    });
  };
  return { fetch: fake as typeof fetch, sent };
}

/** The answers of a fake server, by `METHOD path`: fixed, or computed from the request. */
export type FakeRoutes = Record<string, IFakeAnswer | ((request: ISentRequest) => IFakeAnswer)>;

/** The server the commands of {@link runAgainstFake} are given. */
export const FAKE_SERVER = {
  url: 'http://127.0.0.1:8888/',
  token: 'secret',
  root_dir: '/srv/root'
};

/** What a store command printed, its exit status, and the requests it sent. */
export interface ICommandRun {
  status: number;
  stdout: string;
  stderr: string;
  sent: ISentRequest[];
}

/**
 * Run `jupyter store <name> <argv>` against a fake server answering `routes`, outside any
 * kernel, from `options.cwd` (default the server's root).
 */
export async function runAgainstFake(
  name: string,
  argv: string[],
  routes: FakeRoutes = {},
  options: { cwd?: string; client?: StoreClient.IOptions } = {}
): Promise<ICommandRun> {
  const { fetch, sent } = fakeFetch(routes);
  let stdout = '';
  let stderr = '';
  const io: IStoreCommandIO = {
    stdout: text => (stdout += text),
    stderr: text => (stderr += text),
    env: {},
    cwd: options.cwd ?? FAKE_SERVER.root_dir,
    client: { server: FAKE_SERVER, fetch, processTable: fakeProcessTable([]), ...options.client }
  };
  const status = await runStoreCommand(name, argv, io);
  return { status, stdout, stderr, sent };
}

/** A process table from a list of processes. */
export function fakeProcessTable(processes: IProcessInfo[]): IProcessTable {
  const byPid = new Map(processes.map(info => [info.pid, info]));
  return { read: pid => byPid.get(pid) };
}

/** A new, empty temporary directory. */
export function temporaryDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `client-${prefix}-`));
}

/** A record as the gateway writes it, with any field overridden. */
export function gatewayRecord(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    base_url: '/',
    hostname: '127.0.0.1',
    notebook_dir: '/srv/root',
    password: false,
    pid: 1000,
    port: 8888,
    root_dir: '/srv/root',
    secure: false,
    sock: '',
    token: 'gateway-token',
    upstream_pid: 1001,
    upstream_url: 'unix:/tmp/private/jupyter.sock',
    url: 'http://127.0.0.1:8888/',
    version: '0.1.0',
    ...overrides
  };
}

/** A record as Jupyter Server 2 writes it (no notebook_dir), with any field overridden. */
export function jupyterRecord(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    base_url: '/',
    hostname: 'localhost',
    password: false,
    pid: 2000,
    port: 8890,
    root_dir: '/home/user',
    secure: false,
    sock: '',
    token: 'jupyter-token',
    url: 'http://localhost:8890/',
    version: '2.21.1',
    ...overrides
  };
}

/** Write `jpserver-<pid>.json` (or another name) into `dir`. */
export function writeRecord(dir: string, record: Record<string, unknown>, name?: string): void {
  writeFileSync(join(dir, name ?? `jpserver-${String(record.pid)}.json`), JSON.stringify(record));
}

/** A notebook session as Jupyter's sessions API returns it. */
export function sessionModel(
  path: string,
  kernelId: string,
  type = 'notebook'
): Record<string, unknown> {
  const name = path.split('/').at(-1) as string;
  return {
    id: `session-${path}`,
    path,
    name,
    type,
    kernel: {
      id: kernelId,
      name: 'python3',
      last_activity: '2024-05-01T10:00:00.000000Z',
      execution_state: 'idle',
      connections: 1
    },
    ...(type === 'notebook' ? { notebook: { path, name } } : {})
  };
}
