/**
 * A real JupyterHub for the single-user tests: JupyterHub from the ecosystem venv, with
 * configurable-http-proxy from `node_modules/.bin`, on free loopback ports, its database,
 * cookie secret and configuration in a temporary directory. Users log in with
 * DummyAuthenticator's shared password; each user's server is `jupyter-store singleuser` (this
 * checkout's built CLI, with this Node) started by SimpleLocalProcessSpawner, which needs no
 * system users, in a home directory of its own below the Hub's directory. A service token with
 * the admin role lets the test start and stop servers and read users' activity.
 *
 * Every process dies with the harness: `stop()` shuts the Hub down, which stops the proxy and
 * every server, and kills them if they linger; the Hub, the proxy and each server also get a
 * parent-death signal (util-linux `setpriv`), so nothing survives the test process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as http from 'node:http';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ecosystemBin } from './ecosystem';
import { CLI } from './gateway';
import { freePort, REPO_ROOT } from './jupyterServer';
import { exitWithin, withParentDeathSignal } from './objectServers';

/** Options of {@link startHub}. */
export interface IHubOptions {
  /**
   * Arguments of `jupyter-store singleuser` for every user (`c.Spawner.args`); per-user
   * settings use the settings' own `{username}` placeholder.
   */
  singleuserArgs?: readonly string[];
  /** Environment of every single-user server (object-store settings, for example). */
  singleuserEnv?: Readonly<Record<string, string>>;
  /** More lines of `jupyterhub_config.py`, after the harness's own. */
  extraConfig?: string;
  /** How long the Hub may take to answer, in ms; default 60 s. */
  startTimeoutMs?: number;
  /** Forward the Hub's output to this process's stderr (debugging). */
  verbose?: boolean;
}

/** The `servers` entry of a user model, as the admin token sees it. */
export interface IHubServerModel {
  ready: boolean;
  pending: string | null;
  url: string;
  last_activity: string | null;
  /** The spawner's state: LocalProcessSpawner keeps the server's `pid`. */
  state?: { pid?: number };
}

/** The part of the Hub's user model that the tests read. */
export interface IHubUserModel {
  name: string;
  last_activity: string | null;
  servers: Record<string, IHubServerModel>;
}

/** A running Hub. */
export interface IHub {
  /** `http://127.0.0.1:<port>`: the Hub's proxy, the one public address. */
  readonly url: string;
  /** The password DummyAuthenticator accepts for every user. */
  readonly password: string;
  /** The admin service's token. */
  readonly adminToken: string;
  /** The Hub's temporary directory (database, config, users' homes). */
  readonly dir: string;
  /** A user's home directory (the server's current directory and `$HOME`). */
  homeOf(user: string): string;
  /** Call the Hub's REST API (`/hub/api/<path>`) with the admin token. */
  api(method: string, path: string, body?: unknown): Promise<Response>;
  /** Create the user if needed, start their default server and wait until the Hub says ready. */
  startServer(user: string, timeoutMs?: number): Promise<IHubServerModel>;
  /** Stop the user's default server through the Hub's API and wait until it has stopped. */
  stopServer(user: string, timeoutMs?: number): Promise<void>;
  /** The user's model, servers and their state included. */
  user(user: string): Promise<IHubUserModel>;
  /** Log in through the Hub's login form and open `/user/<name>/lab` (OAuth included). */
  login(user: string): Promise<HubBrowser>;
  /** The Hub's output so far. */
  log(): string;
  /** Shut the Hub, its proxy and every server down, then delete the directory. Idempotent. */
  stop(): Promise<void>;
}

/**
 * A client with a cookie jar, as a browser would hold it: cookies by path, redirects followed
 * by hand so that every `Set-Cookie` along the way is kept. It speaks `node:http` rather than
 * `fetch`, which always sends `Sec-Fetch-Mode: cors`: JupyterHub tells page views
 * (`navigate`) from scripts' requests by that header, and a script's cookie-authenticated GET
 * must carry the XSRF token.
 */
export class HubBrowser {
  constructor(readonly origin: string) {}

  /**
   * Send a request with the cookies that apply, following redirects up to `maxRedirects`
   * (default 10). `navigate` sends it as a page view; otherwise as a script's request, with the
   * XSRF cookie of the path as `X-XSRFToken`, as JupyterLab sends it.
   */
  async fetch(pathOrUrl: string, init: IBrowserRequest = {}): Promise<Response> {
    let url = new URL(pathOrUrl, this.origin);
    let method = init.method ?? 'GET';
    let body = init.body;
    for (let hop = 0; ; hop++) {
      const headers: Record<string, string> = {
        'sec-fetch-mode': init.navigate ? 'navigate' : 'cors',
        'sec-fetch-site': 'same-origin',
        ...init.headers
      };
      const cookie = this.cookieHeader(url.pathname);
      if (cookie) headers.cookie = cookie;
      const xsrf = this.cookie('_xsrf', url.pathname);
      if (!init.navigate && xsrf) headers['x-xsrftoken'] = xsrf;
      const response = await Private.request(url, method, headers, body);
      this._store(response, url.pathname);
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || !location) return response;
      if (hop >= (init.maxRedirects ?? 10)) return response;
      url = new URL(location, url);
      this.visited.push(url.pathname);
      // A redirect after a POST is a GET, as browsers do with 302 and 303.
      method = 'GET';
      body = undefined;
    }
  }

  /** Every path a redirect led to, in order. */
  readonly visited: string[] = [];

  /** The value of a cookie that applies to `path` (the most specific path first). */
  cookie(name: string, path = '/'): string | undefined {
    return this._applicable(path).find(entry => entry.name === name)?.value;
  }

  /** The `Cookie` header a browser sends to `path`. */
  cookieHeader(path: string): string {
    return this._applicable(path)
      .map(entry => `${entry.name}=${entry.value}`)
      .join('; ');
  }

  private _applicable(path: string): ICookie[] {
    return [...this._jar.values()]
      .filter(entry => path === entry.path || path.startsWith(entry.path.replace(/\/?$/, '/')))
      .sort((a, b) => b.path.length - a.path.length);
  }

  private _store(response: Response, requestPath: string): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';').map(part => part.trim());
      const equals = pair.indexOf('=');
      const name = pair.slice(0, equals);
      const value = pair.slice(equals + 1).replace(/^"|"$/g, '');
      let path = requestPath.replace(/[^/]*$/, '') || '/';
      let expired = false;
      for (const attribute of attributes) {
        const [key, ...rest] = attribute.split('=');
        const attributeValue = rest.join('=');
        if (key.toLowerCase() === 'path') path = attributeValue || '/';
        if (key.toLowerCase() === 'max-age' && Number(attributeValue) <= 0) expired = true;
        if (key.toLowerCase() === 'expires' && Date.parse(attributeValue) < Date.now()) {
          expired = true;
        }
      }
      const key = `${name}\0${path}`;
      if (expired) this._jar.delete(key);
      else this._jar.set(key, { name, value, path });
    }
  }

  private readonly _jar = new Map<string, ICookie>();
}

interface ICookie {
  name: string;
  value: string;
  path: string;
}

/** A request of {@link HubBrowser.fetch}. */
export interface IBrowserRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** A page view (`Sec-Fetch-Mode: navigate`) rather than a script's request. */
  navigate?: boolean;
  maxRedirects?: number;
}

namespace Private {
  /** One HTTP request with exactly these headers, its answer read whole. */
  export function request(
    url: URL,
    method: string,
    headers: Record<string, string>,
    body: string | undefined
  ): Promise<Response> {
    return new Promise((resolve, reject) => {
      const outgoing = http.request(url, { method, headers, timeout: 30_000 }, incoming => {
        const chunks: Buffer[] = [];
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
        incoming.on('error', reject);
        incoming.on('end', () => {
          const answer = new Headers();
          for (const [name, value] of Object.entries(incoming.headers)) {
            for (const item of Array.isArray(value) ? value : [value ?? '']) {
              answer.append(name, item);
            }
          }
          const status = incoming.statusCode ?? 0;
          const empty = status === 204 || status === 304;
          resolve(new Response(empty ? null : Buffer.concat(chunks), { status, headers: answer }));
        });
      });
      outgoing.on('timeout', () => outgoing.destroy(new Error(`${method} ${url} timed out`)));
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  }
}

/** The configurable-http-proxy that `npm install` put into `node_modules/.bin`. */
const CHP = join(REPO_ROOT, 'node_modules', '.bin', 'configurable-http-proxy');

/** Hubs not stopped yet; killed when this process exits. */
const liveHubs = new Set<{ child: ChildProcess; dir: string }>();
let exitHookInstalled = false;

const sleep = (ms: number): Promise<void> => new Promise(r => setTimeout(r, ms));

/**
 * Start a JupyterHub and wait until its API answers through its proxy.
 *
 * @throws if the ecosystem venv, the built CLI or the proxy is missing, or the Hub does not
 *   answer in time (with its log).
 */
export async function startHub(options: IHubOptions = {}): Promise<IHub> {
  const jupyterhub = ecosystemBin('jupyterhub');
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run 'npm run build' first`);
  if (!existsSync(CHP)) throw new Error(`${CHP} is missing: run 'npm ci' first`);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const hub of liveHubs) {
        hub.child.kill('SIGKILL');
        rmSync(hub.dir, { recursive: true, force: true });
      }
    });
  }
  const dir = await mkdtemp(join(tmpdir(), 'hub-'));
  await mkdir(join(dir, 'homes'));
  const password = randomBytes(12).toString('hex');
  const adminToken = randomBytes(24).toString('hex');
  const [port, hubPort, proxyApiPort] = await distinctFreePorts(3);
  const singleuser = [
    ...withParentDeathSignal([process.execPath, CLI, 'singleuser'], 'TERM'),
    ...(process.getuid?.() === 0 ? ['--allow-root'] : [])
  ];
  const configFile = join(dir, 'jupyterhub_config.py');
  await writeFile(
    configFile,
    hubConfig({
      dir,
      port,
      hubPort,
      proxyApiPort,
      password,
      adminToken,
      singleuser,
      singleuserArgs: options.singleuserArgs ?? [],
      singleuserEnv: options.singleuserEnv ?? {},
      proxy: withParentDeathSignal([CHP], 'KILL'),
      extra: options.extraConfig ?? ''
    })
  );
  const venvBin = dirname(jupyterhub);
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(JUPYTER|XDG|IPYTHON|PYTHON(PATH|HOME|STARTUP)|STORE_OBJECT_|AWS_)/.test(key)) continue;
    env[key] = value;
  }
  // The single-user servers inherit PATH: jupyterhub-singleuser, and this Node for the proxy.
  env.PATH = [venvBin, dirname(process.execPath), process.env.PATH ?? ''].join(':');
  env.HOME = dir;
  env.PYTHONUNBUFFERED = '1';
  const [command, ...args] = withParentDeathSignal(
    [jupyterhub, '--config', configFile, ...(options.verbose ? ['--debug'] : [])],
    'KILL'
  );
  const child = spawn(command, args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const entry = { child, dir };
  liveHubs.add(entry);
  const lines: string[] = [];
  const collect = (chunk: Buffer): void => {
    const text = chunk.toString('utf8');
    if (options.verbose) process.stderr.write(text);
    lines.push(...text.split('\n'));
    if (lines.length > 2000) lines.splice(0, lines.length - 2000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  let exited = false;
  const exit = new Promise<void>(resolve =>
    child.once('exit', () => {
      exited = true;
      resolve();
    })
  );
  const url = `http://127.0.0.1:${port}`;
  const log = (): string => lines.join('\n');

  const api = (method: string, path: string, body?: unknown): Promise<Response> =>
    fetch(`${url}/hub/api/${path.replace(/^\/+/, '')}`, {
      method,
      headers: {
        authorization: `token ${adminToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' })
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000)
    });

  const stop = async (): Promise<void> => {
    if (!liveHubs.has(entry)) return;
    liveHubs.delete(entry);
    if (!exited) {
      // The Hub stops every server (cleanup_servers) and its proxy before it exits.
      child.kill('SIGTERM');
      if (!(await exitWithin(exit, 60_000))) child.kill('SIGKILL');
      await exitWithin(exit, 10_000);
    }
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  };

  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  for (;;) {
    try {
      const response = await fetch(`${url}/hub/api/`, { signal: AbortSignal.timeout(2_000) });
      await response.arrayBuffer();
      if (response.status === 200) break;
    } catch {
      // not up yet
    }
    if (exited || Date.now() > deadline) {
      await stop();
      throw new Error(
        `JupyterHub ${exited ? 'exited' : 'did not answer'} at ${url}/hub/api/. Its log:\n${log()}`
      );
    }
    await sleep(200);
  }

  const user = async (name: string): Promise<IHubUserModel> => {
    const response = await api('GET', `users/${encodeURIComponent(name)}`);
    if (response.status !== 200) {
      throw new Error(`GET users/${name}: ${response.status} ${await response.text()}`);
    }
    return (await response.json()) as IHubUserModel;
  };

  /** Poll the user's model until `done`; fails saying `what` did not happen. */
  const waitFor = async (
    name: string,
    what: string,
    timeoutMs: number,
    done: (model: IHubUserModel) => boolean
  ): Promise<IHubUserModel> => {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const model = await user(name);
      if (done(model)) return model;
      if (Date.now() > end) {
        throw new Error(
          `${name}'s server ${what} within ${timeoutMs} ms: ${JSON.stringify(model)}\n${log()}`
        );
      }
      await sleep(250);
    }
  };

  return {
    url,
    password,
    adminToken,
    dir,
    homeOf: name => join(dir, 'homes', name),
    api,
    user,
    log,
    stop,
    async startServer(name, timeoutMs = 120_000) {
      const created = await api('POST', `users/${encodeURIComponent(name)}`);
      if (created.status !== 201 && created.status !== 409) {
        throw new Error(`POST users/${name}: ${created.status} ${await created.text()}`);
      }
      const started = await api('POST', `users/${encodeURIComponent(name)}/server`);
      if (started.status !== 201 && started.status !== 202) {
        throw new Error(
          `POST users/${name}/server: ${started.status} ${await started.text()}\n${log()}`
        );
      }
      const model = await waitFor(name, 'was not ready', timeoutMs, m =>
        Boolean(m.servers['']?.ready)
      );
      return model.servers[''];
    },
    async stopServer(name, timeoutMs = 60_000) {
      const response = await api('DELETE', `users/${encodeURIComponent(name)}/server`);
      if (response.status !== 204 && response.status !== 202) {
        throw new Error(`DELETE users/${name}/server: ${response.status} ${await response.text()}`);
      }
      await waitFor(name, 'did not stop', timeoutMs, m => m.servers[''] === undefined);
    },
    async login(name) {
      const browser = new HubBrowser(url);
      const form = await browser.fetch('/hub/login', { navigate: true });
      const html = await form.text();
      const xsrf =
        /name="_xsrf" value="([^"]+)"/.exec(html)?.[1] ?? browser.cookie('_xsrf', '/hub/');
      const next = `/user/${encodeURIComponent(name)}/lab`;
      const body = new URLSearchParams({
        username: name,
        password,
        ...(xsrf ? { _xsrf: xsrf } : {})
      });
      const landed = await browser.fetch(`/hub/login?next=${encodeURIComponent(next)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: body.toString(),
        navigate: true
      });
      await landed.arrayBuffer();
      if (landed.status !== 200 || !browser.visited.includes(next)) {
        throw new Error(
          `login as ${name} ended with ${landed.status} after ${browser.visited.join(' → ')}` +
            `\n${log()}`
        );
      }
      return browser;
    }
  };
}

/** The runtime records (`jpserver-<pid>.json`) below a user's home, parsed. */
export async function runtimeRecordsOf(
  home: string
): Promise<Array<{ pid: number; upstream_pid: number | null; base_url: string }>> {
  const dir = join(home, '.local', 'share', 'jupyter', 'runtime');
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const records = [];
  for (const name of names.filter(n => /^jpserver-\d+\.json$/.test(n))) {
    try {
      records.push(JSON.parse(await readFile(join(dir, name), 'utf8')));
    } catch {
      // being written or removed
    }
  }
  return records;
}

/** Whether a process with this id exists (and is not a zombie). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** `count` different free loopback ports. */
async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

/** A Python string literal (JSON's escapes are Python's, for what the harness writes). */
const py = (value: unknown): string => JSON.stringify(value);

function hubConfig(settings: {
  dir: string;
  port: number;
  hubPort: number;
  proxyApiPort: number;
  password: string;
  adminToken: string;
  singleuser: string[];
  singleuserArgs: readonly string[];
  singleuserEnv: Readonly<Record<string, string>>;
  proxy: string[];
  extra: string;
}): string {
  return `c = get_config()  # noqa
c.JupyterHub.ip = '127.0.0.1'
c.JupyterHub.port = ${settings.port}
c.JupyterHub.hub_ip = '127.0.0.1'
c.JupyterHub.hub_port = ${settings.hubPort}
c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:${settings.proxyApiPort}'
c.ConfigurableHTTPProxy.command = ${py(settings.proxy)}
c.ConfigurableHTTPProxy.should_start = True
c.JupyterHub.db_url = ${py(`sqlite:///${join(settings.dir, 'jupyterhub.sqlite')}`)}
c.JupyterHub.cookie_secret_file = ${py(join(settings.dir, 'jupyterhub_cookie_secret'))}
c.JupyterHub.pid_file = ${py(join(settings.dir, 'jupyterhub.pid'))}
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True
c.JupyterHub.authenticator_class = 'dummy'
c.DummyAuthenticator.password = ${py(settings.password)}
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = 'simple'
c.SimpleLocalProcessSpawner.home_dir_template = ${py(join(settings.dir, 'homes', '{username}'))}
c.Spawner.cmd = ${py(settings.singleuser)}
c.Spawner.default_url = '/lab'
c.Spawner.environment = ${py(settings.singleuserEnv)}
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 120
c.JupyterHub.services = [{'name': 'store-test-admin', 'api_token': ${py(settings.adminToken)}}]
c.JupyterHub.load_roles = [{'name': 'admin', 'services': ['store-test-admin']}]
c.Spawner.args = ${py(settings.singleuserArgs)}
${settings.extra}
`;
}

/**
 * A directory for `$JUPYTER_CONFIG_PATH` of the single-user servers: the ecosystem venv's
 * jupytext and collaboration extensions off, server and JupyterLab sides (they would make
 * Python's contents manager authoritative under `contents_backend auto`, and the gateway answers
 * saves itself), and with
 * `publish` publishing enabled as `jupyter store enable` would. The caller deletes it.
 */
export async function singleuserConfigDir(options: { publish?: boolean } = {}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'hub-singleuser-config-'));
  await writeFile(
    join(dir, 'jupyter_server_config.json'),
    JSON.stringify({
      ServerApp: {
        jpserver_extensions: Object.fromEntries(
          ['jupytext', 'jupyterlab_jupytext', 'jupyter_collaboration', 'jupyter_server_ydoc'].map(
            name => [name, false]
          )
        )
      }
    })
  );
  // Their JupyterLab halves too: without its server side, collaboration opens no document.
  await mkdir(join(dir, 'labconfig'));
  await writeFile(
    join(dir, 'labconfig', 'page_config.json'),
    JSON.stringify({
      disabledExtensions: Object.fromEntries(
        [
          '@jupyter/collaboration-extension',
          '@jupyter/docprovider-extension',
          'jupyterlab-jupytext'
        ].map(name => [name, true])
      )
    })
  );
  if (options.publish) {
    await mkdir(join(dir, 'jupyter_store_config.d'));
    await writeFile(
      join(dir, 'jupyter_store_config.d', 'publish.json'),
      JSON.stringify({ StoreExtension: { publish_enabled: true } })
    );
  }
  return dir;
}

/** What {@link credentialServiceConfig} needs. */
export interface ICredentialServiceOptions {
  /** The loopback port the service listens on. */
  port: number;
  endpoint: string;
  bucket: string;
  region: string;
  /** The long-lived key, which only the service gets. */
  accessKeyId: string;
  secretAccessKey: string;
  /** More `--StoreSettings.…` arguments of the service. */
  args?: readonly string[];
}

/** The name of the credential service in {@link credentialServiceConfig}. */
export const CREDENTIAL_SERVICE_NAME = 'jupyter-store-credentials';

/**
 * Lines of `jupyterhub_config.py` (for {@link IHubOptions.extraConfig}) that make
 * `jupyter-store credentials-service` a service the Hub starts and stops, as the deployment
 * guide configures it, and the URL the single-user servers take as `credentials_service_url`.
 */
export function credentialServiceConfig(options: ICredentialServiceOptions): {
  extraConfig: string;
  url: string;
} {
  const service = {
    name: CREDENTIAL_SERVICE_NAME,
    url: `http://127.0.0.1:${options.port}`,
    command: withParentDeathSignal(
      [
        process.execPath,
        CLI,
        'credentials-service',
        '--StoreSettings.workspace_prefix=workspace/{username}',
        `--StoreSettings.object_endpoint_url=${options.endpoint}`,
        `--StoreSettings.object_bucket=${options.bucket}`,
        `--StoreSettings.object_region_name=${options.region}`,
        ...(options.args ?? [])
      ],
      'TERM'
    ),
    environment: {
      STORE_OBJECT_ACCESS_KEY_ID: options.accessKeyId,
      STORE_OBJECT_SECRET_ACCESS_KEY: options.secretAccessKey
    }
  };
  return {
    extraConfig: `c.JupyterHub.services = c.JupyterHub.services + [${py(service)}]\n`,
    url: `http://127.0.0.1:${options.port}/services/${CREDENTIAL_SERVICE_NAME}/`
  };
}
