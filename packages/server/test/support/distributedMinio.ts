/**
 * MinIO in distributed mode on loopback: four server processes, each on its own port with its
 * own console port and two drives of its own, forming one erasure-coded pool of eight drives
 * (MinIO's default parity for eight drives, EC:4, so the cluster keeps reading and writing with
 * one node, two drives, down). For the tests that need a store which survives a node outage, and
 * the load tests that want a server closer to production than one process on one drive.
 *
 * Same binary, pins and clean-up rules as `objectServers.ts`: a missing binary is an error,
 * `dispose()` kills every node and deletes the drives, and every node also dies with this
 * process (exit hook, and a parent-death signal where `setpriv` exists).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './jupyterServer';
import {
  cleanEnv,
  exitWithin,
  objectServerBinary,
  withParentDeathSignal,
  type IS3Access
} from './objectServers';

/** One server process of the cluster. */
export interface IMinioNode {
  /** 0 to 3. */
  readonly index: number;
  /** `http://127.0.0.1:<port>`, the same across `stop()` / `restart()`. */
  readonly endpoint: string;
  /** The process id, undefined while stopped. */
  readonly pid: number | undefined;
  readonly running: boolean;
  /**
   * Stop the node (SIGKILL by default: a node that fails, rather than one shut down) and wait
   * for its exit; its drives are kept. Idempotent.
   */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Start the node again with the same drives, and wait until it is live. */
  restart(): Promise<void>;
}

/** A running cluster; any node's endpoint serves the whole bucket namespace. */
export interface IDistributedMinio extends IS3Access {
  /** The first node's endpoint (`endpoints[0]`). */
  readonly endpoint: string;
  readonly endpoints: readonly string[];
  readonly nodes: readonly IMinioNode[];
  /** The cluster's temporary directory: `node<i>/drive<j>` below it. */
  readonly dataDir: string;
  /**
   * Wait until `node` (default the first running one) reports that the cluster has write and
   * read quorum (`GET /minio/health/cluster` and `…/cluster/read` answer 200).
   *
   * @throws when it does not within `timeoutMs` (default 60 s), with the nodes' logs.
   */
  waitForQuorum(node?: IMinioNode, timeoutMs?: number): Promise<void>;
  /** The last lines every node wrote, by node. */
  log(): string;
  /** Kill every node and delete the drives; the handle is unusable afterwards. */
  dispose(): Promise<void>;
}

/** Options of {@link startDistributedMinio}. */
export interface IDistributedMinioOptions {
  /** Server processes; default 4. */
  nodes?: number;
  /** Drives per process; default 2. */
  drivesPerNode?: number;
  /** How long the cluster may take to form, in ms; default 90 s. */
  startTimeoutMs?: number;
  /** Forward the nodes' output to this process's stderr (debugging). */
  verbose?: boolean;
  /** More environment of every node (`MINIO_PROMETHEUS_AUTH_TYPE`, say). */
  env?: Readonly<Record<string, string>>;
}

/** Every node alive in this process; killed when it exits. */
const liveNodes = new Set<ChildProcess>();
const liveDirs = new Set<string>();
let exitHookInstalled = false;

const sleep = (ms: number): Promise<void> => new Promise(r => setTimeout(r, ms));

/**
 * Start a distributed MinIO cluster on loopback and wait until it has write quorum.
 *
 * #### Notes
 * Every node gets the same list of every drive of the cluster, one `http://127.0.0.1:<port>/<dir>`
 * argument per drive; MinIO serves the drives whose port is its own `--address` and reaches the
 * others over the network. No ellipses (`{1...n}`): each argument with ellipses would be a pool of
 * its own, and one host's ports are not a range.
 */
export async function startDistributedMinio(
  options: IDistributedMinioOptions = {}
): Promise<IDistributedMinio> {
  const binary = objectServerBinary('minio');
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const child of liveNodes) child.kill('SIGKILL');
      for (const dir of liveDirs) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    });
  }
  const nodeCount = options.nodes ?? 4;
  const drives = options.drivesPerNode ?? 2;
  const dir = await mkdtemp(join(tmpdir(), 'minio-cluster-'));
  liveDirs.add(dir);
  const ports: number[] = [];
  while (ports.length < nodeCount * 2) {
    const port = await freePort();
    if (!ports.includes(port)) ports.push(port);
  }
  const apiPorts = ports.slice(0, nodeCount);
  const consolePorts = ports.slice(nodeCount);
  const driveUrls: string[] = [];
  for (let node = 0; node < nodeCount; node++) {
    for (let drive = 1; drive <= drives; drive++) {
      const path = join(dir, `node${node}`, `drive${drive}`);
      await mkdir(path, { recursive: true });
      driveUrls.push(`http://127.0.0.1:${apiPorts[node]}${path}`);
    }
  }
  const accessKeyId = 'testadmin';
  const secretAccessKey = randomBytes(16).toString('hex');
  const env: NodeJS.ProcessEnv = {
    ...cleanEnv(),
    MINIO_ROOT_USER: accessKeyId,
    MINIO_ROOT_PASSWORD: secretAccessKey,
    MINIO_UPDATE: 'off',
    // The drives share the machine's root file system, which MinIO refuses in distributed
    // mode unless told this is a test set-up.
    MINIO_CI_CD: 'on',
    ...options.env
  };
  const logs: string[][] = apiPorts.map(() => []);
  const log = (): string =>
    logs.map((lines, index) => `--- node ${index}\n${lines.join('\n')}`).join('\n');

  const nodes = apiPorts.map((port, index): IMinioNode & { start(): Promise<void> } => {
    let child: ChildProcess | undefined;
    let exited: Promise<void> = Promise.resolve();
    let hasExited = true;
    const endpoint = `http://127.0.0.1:${port}`;
    const node = {
      index,
      endpoint,
      get pid() {
        return child && !hasExited ? child.pid : undefined;
      },
      get running() {
        return child !== undefined && !hasExited;
      },
      async start(): Promise<void> {
        const [command, ...args] = withParentDeathSignal(
          [
            binary,
            'server',
            '--address',
            `127.0.0.1:${port}`,
            '--console-address',
            `127.0.0.1:${consolePorts[index]}`,
            '--certs-dir',
            join(dir, `node${index}`, 'certs'),
            '--quiet',
            ...driveUrls
          ],
          'KILL'
        );
        const proc = spawn(command, args, {
          cwd: dir,
          // In a container MinIO takes every loopback endpoint for another host's until told
          // which one is its own.
          env: { ...env, _MINIO_SERVER_LOCAL: `127.0.0.1:${port}` },
          stdio: ['ignore', 'pipe', 'pipe']
        });
        const collect = (chunk: Buffer): void => {
          const text = chunk.toString('utf8');
          if (options.verbose) process.stderr.write(`[minio ${index}] ${text}`);
          logs[index].push(...text.split('\n'));
          if (logs[index].length > 200) logs[index].splice(0, logs[index].length - 200);
        };
        proc.stdout?.on('data', collect);
        proc.stderr?.on('data', collect);
        child = proc;
        hasExited = false;
        liveNodes.add(proc);
        exited = new Promise<void>(resolve => {
          proc.once('error', error => {
            logs[index].push(`spawn error: ${error.message}`);
            resolve();
          });
          proc.once('exit', (code, signal) => {
            logs[index].push(`[exited: ${signal ?? code}]`);
            resolve();
          });
        }).then(() => {
          hasExited = true;
          liveNodes.delete(proc);
        });
        await waitFor(`${endpoint}/minio/health/live`, options.startTimeoutMs ?? 90_000, () =>
          hasExited ? `node ${index} exited` : undefined
        );
      },
      async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
        const current = child;
        if (!current || hasExited) return;
        current.kill(signal);
        if (!(await exitWithin(exited, 10_000))) current.kill('SIGKILL');
        if (!(await exitWithin(exited, 10_000))) {
          throw new Error(`MinIO node ${index} (pid ${current.pid}) did not exit`);
        }
      },
      async restart(): Promise<void> {
        await node.stop();
        await node.start();
      }
    };
    return node;
  });

  /** Poll `url` until 200; `failed` names a reason to stop early. */
  async function waitFor(
    url: string,
    timeoutMs: number,
    failed: () => string | undefined
  ): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const reason = failed();
      if (reason) throw new Error(`MinIO cluster: ${reason}. Logs:\n${log()}`);
      try {
        const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
        await response.arrayBuffer();
        if (response.status === 200) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        throw new Error(
          `MinIO cluster: GET ${url} not 200 within ${timeoutMs} ms. Logs:\n${log()}`
        );
      }
      await sleep(200);
    }
  }

  const cluster: IDistributedMinio = {
    kind: 'minio',
    endpoint: nodes[0].endpoint,
    endpoints: nodes.map(node => node.endpoint),
    nodes,
    accessKeyId,
    secretAccessKey,
    region: 'us-east-1',
    dataDir: dir,
    async waitForQuorum(node, timeoutMs = 60_000) {
      const asked = node ?? nodes.find(candidate => candidate.running);
      if (!asked) throw new Error('MinIO cluster: no node is running');
      const failed = (): string | undefined =>
        asked.running ? undefined : `node ${asked.index} is not running`;
      await waitFor(`${asked.endpoint}/minio/health/cluster`, timeoutMs, failed);
      await waitFor(`${asked.endpoint}/minio/health/cluster/read`, timeoutMs, failed);
    },
    log,
    async dispose() {
      await Promise.all(nodes.map(node => node.stop()));
      liveDirs.delete(dir);
      await rm(dir, { recursive: true, force: true, maxRetries: 3 });
    }
  };
  try {
    // The nodes wait for each other to format the drives: start them together.
    await Promise.all(nodes.map(node => node.start()));
    await cluster.waitForQuorum(nodes[0], options.startTimeoutMs ?? 90_000);
  } catch (error) {
    await cluster.dispose();
    throw error;
  }
  return cluster;
}
