/**
 * Real S3 servers for the object-storage tests: MinIO and versitygw, each on a free loopback port
 * with its own temporary directory, started from the binaries that `scripts/setup.sh
 * --object-servers` (part of the README test command) builds with `go install` at the versions
 * pinned in `scripts/object-servers.env`, cached outside the repo; the MinIO client `mc` too
 * ({@link mcBinary}).
 *
 * A missing binary is an error, never a skip. Every server process is killed by `stop()` and, as a
 * safety net, when this process exits; where util-linux `setpriv` exists, the kernel also kills it
 * if this process dies without running its exit handlers (parent-death signal).
 */
import {
  CreateBucketCommand,
  GetBucketVersioningCommand,
  PutBucketVersioningCommand,
  S3Client
} from '@aws-sdk/client-s3';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, REPO_ROOT } from './jupyterServer';

export type ObjectServerKind = 'minio' | 'versitygw';

/** A running (or stopped, restartable) S3 server. */
export interface IObjectServer {
  readonly kind: ObjectServerKind;
  /** `http://127.0.0.1:<port>`; the same across `stop()` / `restart()`. */
  readonly endpoint: string;
  readonly port: number;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly region: 'us-east-1';
  /**
   * The server's own temporary directory: the objects are below it (`data/`, and for versitygw
   * the old versions in `versions/`). Kept by `stop()`, removed by `dispose()`.
   */
  readonly dataDir: string;
  /** The current server process id, undefined while stopped. */
  readonly pid: number | undefined;
  /** True between a successful start and `stop()` (also while paused). */
  readonly running: boolean;
  /** The last lines the server wrote (for error messages). */
  log(): string;
  /**
   * Stop the server (SIGTERM, SIGKILL after `killAfterMs`, default 10 s) and wait for its exit;
   * the port is free when this resolves. Data is kept, so `restart()` brings it back. Idempotent.
   */
  stop(signal?: NodeJS.Signals, killAfterMs?: number): Promise<void>;
  /**
   * Start the server again (stopping it first if it runs) at the same endpoint with the same data
   * and credentials, and wait until it is healthy. For outage tests: `stop()`, then `restart()`.
   */
  restart(): Promise<void>;
  /** SIGSTOP the server: connections hang instead of being refused (a stalled server). */
  pause(): void;
  /** SIGCONT after `pause()`. */
  resume(): void;
  /** Stop the server and delete its directory; the handle is unusable afterwards. */
  dispose(): Promise<void>;
}

/** What a client needs of a server: where it is and how to sign in (a cluster has one too). */
export type IS3Access = Pick<
  IObjectServer,
  'kind' | 'endpoint' | 'accessKeyId' | 'secretAccessKey' | 'region'
>;

/**
 * The flags and environment that make `jupyter-store lab|serve` archive to `server`'s `bucket`
 * (credentials through `STORE_OBJECT_*`, never on the command line).
 */
export function archiveSettings(
  server: IS3Access,
  bucket: string
): { args: string[]; env: NodeJS.ProcessEnv } {
  return {
    args: [
      `--StoreSettings.object_endpoint_url=${server.endpoint}`,
      `--StoreSettings.object_bucket=${bucket}`
    ],
    env: {
      STORE_OBJECT_ACCESS_KEY_ID: server.accessKeyId,
      STORE_OBJECT_SECRET_ACCESS_KEY: server.secretAccessKey,
      STORE_OBJECT_REGION_NAME: server.region
    }
  };
}

/** Options of {@link startMinio} and {@link startVersitygw}. */
export interface IObjectServerOptions {
  /** How long to wait for the health endpoint on each start, in ms; default 30 s. */
  startTimeoutMs?: number;
  /** Forward the server's output to this process's stderr (debugging). */
  verbose?: boolean;
}

/** The file that pins the server versions for `scripts/setup.sh` and for this module. */
export const OBJECT_SERVERS_ENV = join(REPO_ROOT, 'scripts', 'object-servers.env');

/** `NAME=value` pairs of `scripts/object-servers.env`. */
export function pinnedObjectServers(): Record<string, string> {
  const pins: Record<string, string> = {};
  for (const line of readFileSync(OBJECT_SERVERS_ENV, 'utf8').split('\n')) {
    const match = /^([A-Z][A-Z0-9_]*)=(\S*)\s*$/.exec(line);
    if (match) pins[match[1]] = match[2];
  }
  return pins;
}

/** `bin/` of the cache, resolved exactly as `scripts/setup.sh` does (empty variables = unset). */
export function objectServerCacheBin(env: NodeJS.ProcessEnv = process.env): string {
  const cache =
    env.JUPYTER_STORE_CACHE ||
    join(env.XDG_CACHE_HOME || join(env.HOME || homedir(), '.cache'), 'jupyter-store');
  return join(cache, 'bin');
}

/**
 * The cached binary of a server at its pinned version.
 *
 * @throws if it is missing, telling how to build it.
 */
export function objectServerBinary(kind: ObjectServerKind): string {
  return cachedBinary(kind, kind === 'minio' ? 'MINIO_VERSION' : 'VERSITYGW_VERSION');
}

/**
 * The cached MinIO client `mc` at its pinned version (`MC_VERSION`), which `scripts/setup.sh
 * --object-servers` builds beside the servers.
 *
 * @throws if it is missing, telling how to build it.
 */
export function mcBinary(): string {
  return cachedBinary('mc', 'MC_VERSION');
}

/** `<cache>/bin/<name>-<pinned version>`; throws if it is not pinned or not built. */
function cachedBinary(name: string, versionKey: string): string {
  const version = pinnedObjectServers()[versionKey];
  if (!version) throw new Error(`${OBJECT_SERVERS_ENV} does not pin a ${name} version`);
  const binary = join(objectServerCacheBin(), `${name}-${version}`);
  if (!existsSync(binary)) {
    throw new Error(
      `${binary} is missing: run the README test command (bash scripts/test.sh), whose ` +
        `'scripts/setup.sh --object-servers' builds ${name} ${version} with Go into that cache ` +
        '(JUPYTER_STORE_CACHE, else $XDG_CACHE_HOME/jupyter-store, else ~/.cache/jupyter-store).'
    );
  }
  return binary;
}

/** Every server child that is alive; killed when this process exits. */
const liveChildren = new Set<ChildProcess>();
/** Directories of servers not disposed yet; removed when this process exits. */
const liveDirs = new Set<string>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of liveChildren) child.kill('SIGKILL');
    for (const dir of liveDirs) {
      try {
        rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
      } catch {
        // best effort: a temporary directory
      }
    }
  });
}

/** With `setpriv --pdeathsig`, the kernel kills the server if this process dies abruptly. */
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find(path => existsSync(path));

/**
 * `command` (program first) run so that the kernel sends it `signal` when the process that
 * started it dies, where `setpriv` exists; `command` itself otherwise.
 */
export function withParentDeathSignal(
  command: readonly string[],
  signal: 'KILL' | 'TERM'
): string[] {
  return SETPRIV ? [SETPRIV, '--pdeathsig', signal, '--', ...command] : [...command];
}

const sleep = (ms: number): Promise<void> => new Promise(r => setTimeout(r, ms));

/** Wait for the exit promise, at most `ms`; the timer never outlives the wait. */
export async function exitWithin(exited: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>(r => {
    timer = setTimeout(() => r(false), ms);
  });
  try {
    return await Promise.race([exited.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The caller's environment minus what would configure these servers behind our back. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(MINIO_|VGW_|ROOT_|AWS_|LOGFILE$|WEBHOOK$)/.test(key)) continue;
    env[key] = value;
  }
  return env;
}

interface IServerSpec {
  kind: ObjectServerKind;
  binary: string;
  /** Create the directories below `dir`; runs once. */
  prepare(dir: string): Promise<void>;
  args(dir: string, port: number): string[];
  env(accessKeyId: string, secretAccessKey: string): NodeJS.ProcessEnv;
  healthPath: string;
}

const ACCESS_KEY_ID = 'testadmin';

async function startObjectServer(
  spec: IServerSpec,
  options: IObjectServerOptions
): Promise<IObjectServer> {
  installExitHook();
  const timeoutMs = options.startTimeoutMs ?? 30_000;
  const dir = await mkdtemp(join(tmpdir(), `${spec.kind}-`));
  liveDirs.add(dir);
  await spec.prepare(dir);
  const secretAccessKey = randomBytes(16).toString('hex');
  const env = { ...cleanEnv(), ...spec.env(ACCESS_KEY_ID, secretAccessKey) };

  let port = 0;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let hasExited = true;
  let paused = false;
  let disposed = false;
  const logLines: string[] = [];
  const log = (): string => logLines.join('\n');

  const stop = async (signal: NodeJS.Signals = 'SIGTERM', killAfterMs = 10_000): Promise<void> => {
    const current = child;
    if (!current) return;
    if (!hasExited) {
      current.kill(signal);
      // A stopped process only acts on SIGTERM once continued.
      if (paused) current.kill('SIGCONT');
      if (!(await exitWithin(exited, killAfterMs))) current.kill('SIGKILL');
      // SIGKILL cannot be ignored; bounded anyway.
      if (!(await exitWithin(exited, 10_000))) {
        throw new Error(`${spec.kind} (pid ${current.pid}) did not exit after SIGKILL`);
      }
    }
    paused = false;
    child = undefined;
  };

  /** Spawn at `port` and wait for health; false if it exited early (port taken, say). */
  const launch = async (): Promise<boolean> => {
    const args = spec.args(dir, port);
    const [command, argv] = SETPRIV
      ? [SETPRIV, ['--pdeathsig', 'KILL', '--', spec.binary, ...args]]
      : [spec.binary, args];
    const proc = spawn(command, argv, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const collect = (chunk: Buffer): void => {
      const text = chunk.toString('utf8');
      if (options.verbose) process.stderr.write(text);
      logLines.push(...text.split('\n'));
      if (logLines.length > 200) logLines.splice(0, logLines.length - 200);
    };
    proc.stdout?.on('data', collect);
    proc.stderr?.on('data', collect);
    child = proc;
    hasExited = false;
    liveChildren.add(proc);
    exited = new Promise<void>(resolve => {
      proc.once('error', error => {
        logLines.push(`spawn error: ${error.message}`);
        resolve();
      });
      proc.once('exit', (code, signal) => {
        logLines.push(`[${spec.kind} exited: ${signal ?? code}]`);
        resolve();
      });
    }).then(() => {
      hasExited = true;
      liveChildren.delete(proc);
    });

    const url = `http://127.0.0.1:${port}${spec.healthPath}`;
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && !hasExited) {
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
        await res.arrayBuffer();
        if (res.status === 200) return true;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    if (hasExited) return false;
    await stop('SIGKILL');
    throw new Error(
      `${spec.kind} (${spec.binary} ${args.join(' ')}) did not answer GET ${url} within ` +
        `${timeoutMs} ms. Its log:\n${log()}`
    );
  };

  /** Start at the current port, retrying a bounded number of times if the server exits early. */
  const startAt = async (freshPortOnFailure: boolean): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      if (await launch()) return;
      await stop();
      if (attempt >= 5) break;
      if (freshPortOnFailure) port = await freePort();
      else await sleep(200 * attempt); // the old process's port may not be free yet
    }
    throw new Error(`${spec.kind} exited while starting on port ${port}. Its log:\n${log()}`);
  };

  port = await freePort();
  try {
    await startAt(true);
  } catch (error) {
    liveDirs.delete(dir);
    await rm(dir, { recursive: true, force: true });
    throw error;
  }

  const server: IObjectServer = {
    kind: spec.kind,
    get endpoint() {
      return `http://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    accessKeyId: ACCESS_KEY_ID,
    secretAccessKey,
    region: 'us-east-1',
    dataDir: dir,
    get pid() {
      return child && !hasExited ? child.pid : undefined;
    },
    get running() {
      return child !== undefined && !hasExited;
    },
    log,
    stop,
    async restart() {
      if (disposed) throw new Error(`this ${spec.kind} server was disposed`);
      await stop();
      await startAt(false);
    },
    pause() {
      if (!child || hasExited) throw new Error(`${spec.kind} is not running`);
      child.kill('SIGSTOP');
      paused = true;
    },
    resume() {
      if (!child || hasExited) throw new Error(`${spec.kind} is not running`);
      child.kill('SIGCONT');
      paused = false;
    },
    async dispose() {
      disposed = true;
      await stop('SIGKILL');
      liveDirs.delete(dir);
      await rm(dir, { recursive: true, force: true });
    }
  };
  return server;
}

/**
 * Start MinIO (single node, single drive: versioning works) on a free loopback port.
 *
 * @throws if the binary is missing (run the test command) or MinIO does not become healthy.
 */
export async function startMinio(options: IObjectServerOptions = {}): Promise<IObjectServer> {
  return startObjectServer(
    {
      kind: 'minio',
      binary: objectServerBinary('minio'),
      prepare: async dir => {
        await mkdir(join(dir, 'data'));
        await mkdir(join(dir, 'certs'));
      },
      // --certs-dir: otherwise MinIO creates ~/.minio/certs in the real home.
      args: (dir, port) => [
        'server',
        join(dir, 'data'),
        '--address',
        `127.0.0.1:${port}`,
        '--certs-dir',
        join(dir, 'certs'),
        '--quiet'
      ],
      env: (accessKeyId, secretAccessKey) => ({
        MINIO_ROOT_USER: accessKeyId,
        MINIO_ROOT_PASSWORD: secretAccessKey,
        // Otherwise the web console listens on a random port.
        MINIO_BROWSER: 'off',
        MINIO_UPDATE: 'off'
      }),
      healthPath: '/minio/health/live'
    },
    options
  );
}

/**
 * Start versitygw with its posix backend (versioning on, old versions in `versions/`) on a free
 * loopback port.
 *
 * @throws if the binary is missing (run the test command) or versitygw does not become healthy.
 */
export async function startVersitygw(options: IObjectServerOptions = {}): Promise<IObjectServer> {
  return startObjectServer(
    {
      kind: 'versitygw',
      binary: objectServerBinary('versitygw'),
      prepare: async dir => {
        await mkdir(join(dir, 'data'));
        await mkdir(join(dir, 'versions'));
      },
      // Global flags go before the backend name `posix`.
      args: (dir, port) => [
        '--port',
        `127.0.0.1:${port}`,
        '--health',
        '/health',
        '--quiet',
        'posix',
        '--versioning-dir',
        join(dir, 'versions'),
        join(dir, 'data')
      ],
      env: (accessKeyId, secretAccessKey) => ({
        ROOT_ACCESS_KEY: accessKeyId,
        ROOT_SECRET_KEY: secretAccessKey
      }),
      healthPath: '/health'
    },
    options
  );
}

/** Start a server of the given kind. */
export function startObjectServerOfKind(
  kind: ObjectServerKind,
  options: IObjectServerOptions = {}
): Promise<IObjectServer> {
  return kind === 'minio' ? startMinio(options) : startVersitygw(options);
}

/** An S3 client for the server (path-style, static credentials); `destroy()` it when done. */
export function s3ClientFor(server: IS3Access): S3Client {
  return new S3Client({
    endpoint: server.endpoint,
    region: server.region,
    forcePathStyle: true,
    credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey }
  });
}

/**
 * Create a bucket with versioning enabled, and check that the server says it is enabled.
 *
 * @throws if the server refuses or does not report `Status: Enabled`.
 */
export async function createVersionedBucket(server: IS3Access, name: string): Promise<void> {
  const client = s3ClientFor(server);
  try {
    const send = { abortSignal: AbortSignal.timeout(15_000) };
    await client.send(new CreateBucketCommand({ Bucket: name }), send);
    await client.send(
      new PutBucketVersioningCommand({
        Bucket: name,
        VersioningConfiguration: { Status: 'Enabled' }
      }),
      send
    );
    const versioning = await client.send(new GetBucketVersioningCommand({ Bucket: name }), send);
    if (versioning.Status !== 'Enabled') {
      throw new Error(
        `${server.kind} bucket ${name}: GetBucketVersioning says ${String(versioning.Status)}, ` +
          'not Enabled'
      );
    }
  } finally {
    client.destroy();
  }
}
