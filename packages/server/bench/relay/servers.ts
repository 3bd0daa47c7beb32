/**
 * The sides of the relayed contents phase: plain JupyterLab and the gateways, started, and
 * checked to be what they say (backend, archiving, who answers a save, every save archived).
 */
import {
  StoreInfoSchema,
  VersionContentSchema,
  VersionListingSchema
} from '@jupyter-store/contract';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { labDefaults, startGatewayProcess } from '../../test/support/gateway';
import { VENV_DIR, freePort, isolatedEnv } from '../../test/support/jupyterServer';
import type { IObjectServer } from '../../test/support/objectServers';
import { cleanupStep, log } from '../cleanup';
import { ARCHIVING_ON_MESSAGE, sleep, waitForLogLine } from '../harness';
import { type IHttpEndpoint, httpGet } from '../load';
import { writeProfilerPreload } from '../profile';
import { ContentsSaver, type IPacedSave, SaveClient, Workload, nextId } from '../saves';
import {
  type ContentsSide,
  type IContentsServer,
  type ISideCheck,
  MINIO_BUCKET,
  PROFILED_SIDES,
  SAVE_SOCKETS,
  SIDES
} from './model';
import { writeTimingPreload } from './timings';

/**
 * Plain JupyterLab from the project venv, as a user starts it (`jupyter lab`, default log level)
 * and as the gateway starts its own (with isolated Jupyter directories and the token in the
 * environment), but on a loopback port and with no gateway in front.
 */
export async function startPlain(): Promise<IContentsServer> {
  const stateDir = await mkdtemp(join(tmpdir(), 'bench-plain-'));
  cleanupStep(() => rm(stateDir, { recursive: true, force: true }));
  const state = {
    home: join(stateDir, 'home'),
    config: join(stateDir, 'config'),
    data: join(stateDir, 'data'),
    runtime: join(stateDir, 'runtime')
  };
  const rootDir = join(stateDir, 'root');
  for (const dir of [...Object.values(state), rootDir]) await mkdir(dir, { recursive: true });
  const port = await freePort();
  const token = randomBytes(24).toString('hex');
  const args = [
    'lab',
    '--no-browser',
    '--ServerApp.ip=127.0.0.1',
    `--ServerApp.port=${port}`,
    '--ServerApp.port_retries=0',
    `--ServerApp.root_dir=${rootDir}`
  ];
  if (process.getuid?.() === 0) args.push('--allow-root');
  const child = spawn(join(VENV_DIR, 'bin', 'jupyter'), args, {
    cwd: rootDir,
    env: { ...isolatedEnv(state), JUPYTER_TOKEN: token },
    stdio: ['ignore', 'pipe', 'pipe']
  });
  let output = '';
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-20_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let exited = false;
  const exit = new Promise<void>(resolve =>
    child.once('exit', () => {
      exited = true;
      resolve();
    })
  );
  const stop = cleanupStep(async () => {
    if (exited) return;
    child.kill('SIGTERM');
    if ((await Promise.race([exit.then(() => 'exited'), sleep(20_000)])) !== 'exited') {
      child.kill('SIGKILL');
      await exit;
    }
  });
  const endpoint: IHttpEndpoint = {
    route: SIDES.plain.label,
    connect: { host: '127.0.0.1', port }
  };
  const headers = { Authorization: `token ${token}` };
  const deadline = Date.now() + 120_000;
  for (;;) {
    const answer = await httpGet(endpoint, '/api', headers, undefined, false).catch(() => null);
    if (answer?.status === 200) break;
    if (exited || Date.now() > deadline) {
      await stop();
      throw new Error(
        `jupyter lab did not answer GET /api${exited ? ' (it exited)' : ''}:\n${output}`
      );
    }
    await sleep(100);
  }
  return {
    side: 'plain',
    rootDir,
    baseUrl: '/',
    saver: new ContentsSaver({ port, baseUrl: '/', token }, SIDES.plain.label, SAVE_SOCKETS),
    gateway: undefined,
    archiving: false,
    endpoint,
    load: { headers, pids: { gateway: -1, jupyter: child.pid ?? -1 } },
    upstream: `http://127.0.0.1:${port}`,
    stop
  };
}

export async function startGateway(
  side: Exclude<ContentsSide, 'plain'>,
  minio: IObjectServer | undefined,
  dirs: { readonly timings: string; readonly profile: string | undefined }
): Promise<IContentsServer> {
  const args = [
    ...labDefaults(),
    `--StoreSettings.contents_backend=${side === 'node' ? 'node' : 'jupyter'}`
  ];
  const env: NodeJS.ProcessEnv = { NODE_OPTIONS: '' };
  if (side === 'relayOff') args.push('--StoreSettings.workspace_prefix=');
  if (side === 'relayMinio') {
    if (minio === undefined) throw new Error('no MinIO');
    args.push(
      `--StoreSettings.object_endpoint_url=${minio.endpoint}`,
      `--StoreSettings.object_bucket=${MINIO_BUCKET}`
    );
    env.STORE_OBJECT_ACCESS_KEY_ID = minio.accessKeyId;
    env.STORE_OBJECT_SECRET_ACCESS_KEY = minio.secretAccessKey;
    env.STORE_OBJECT_REGION_NAME = minio.region;
  }
  const preloads: string[] = [];
  if (side !== 'node') preloads.push(await writeTimingPreload(dirs.timings));
  if (PROFILED_SIDES.includes(side) && dirs.profile !== undefined) {
    await mkdir(dirs.profile, { recursive: true });
    preloads.push(await writeProfilerPreload(dirs.profile));
  }
  env.NODE_OPTIONS = preloads.map(file => `--require ${file}`).join(' ');
  const gateway = await startGatewayProcess({ args, env });
  const stop = cleanupStep(async () => {
    const code = await gateway.stop('SIGTERM', 60_000);
    if (code !== 0) log(`${SIDES[side].tag} exited with ${code}; its stderr:\n${gateway.stderr()}`);
  });
  const archiving = side !== 'relayOff';
  await waitForLogLine(gateway, archiving ? ARCHIVING_ON_MESSAGE : 'archiving is off');
  const { record } = gateway;
  const saver = new SaveClient(gateway, SIDES[side].label, SAVE_SOCKETS);
  return {
    side,
    rootDir: gateway.rootDir,
    baseUrl: gateway.baseUrl,
    saver,
    gateway: saver,
    archiving,
    endpoint: { route: SIDES[side].label, connect: { host: '127.0.0.1', port: record.port } },
    load: {
      headers: { Authorization: `token ${gateway.token}` },
      pids: {
        gateway: record.pid,
        jupyter: record.upstream_pid,
        store: side === 'relayMinio' ? minio?.pid : undefined
      }
    },
    upstream: record.upstream_url,
    stop
  };
}

/** `GET {base}api/store` of a gateway. */
async function storeInfo(
  server: IContentsServer
): Promise<ReturnType<typeof StoreInfoSchema.parse>> {
  const answer = await httpGet(
    server.endpoint,
    `${server.baseUrl}api/store`,
    server.load.headers,
    undefined,
    true
  );
  if (answer.status !== 200)
    throw new Error(`${server.side}: GET api/store answered ${answer.status}`);
  return StoreInfoSchema.parse(JSON.parse(answer.body?.toString('utf8') ?? ''));
}

/** GET a JSON answer of a gateway's store API, parsed. */
async function storeGet(server: IContentsServer, relative: string): Promise<unknown> {
  const answer = await httpGet(
    server.endpoint,
    `${server.baseUrl}${relative}`,
    server.load.headers,
    undefined,
    true
  );
  if (answer.status !== 200) {
    throw new Error(
      `${server.side}: GET ${relative} answered ${answer.status}: ${answer.body?.toString('utf8').slice(0, 300)}`
    );
  }
  return JSON.parse(answer.body?.toString('utf8') ?? '') as unknown;
}

/**
 * Check that a side is what it says: the backend and archiving its `GET api/store` reports, and
 * who answered a probe save (Jupyter's Tornado, or the gateway itself).
 */
export async function checkSide(server: IContentsServer, workload: Workload): Promise<ISideCheck> {
  const { side } = server;
  let backend = '–';
  if (server.gateway !== undefined) {
    const info = await storeInfo(server);
    const expected = side === 'node' ? 'node' : 'jupyter';
    if (info.contents_backend?.backend !== expected) {
      throw new Error(
        `${SIDES[side].tag}: GET api/store says contents_backend ${JSON.stringify(info.contents_backend)}, not ${expected}`
      );
    }
    if ((info.archive !== null) !== server.archiving) {
      throw new Error(
        `${SIDES[side].tag}: archiving is ${info.archive === null ? 'off' : 'on'}, expected the contrary`
      );
    }
    backend = `${info.contents_backend.backend} (${info.contents_backend.reason})`;
  }
  const probe = await httpGet(
    server.endpoint,
    `${server.baseUrl}api/contents/probe/nb.ipynb`,
    { ...server.load.headers, 'Content-Type': 'application/json' },
    undefined,
    true,
    'PUT',
    workload.putBody(nextId('pr'))
  );
  if (probe.status !== 201) {
    throw new Error(
      `${SIDES[side].tag}: the probe save answered ${probe.status}: ${probe.body?.toString('utf8').slice(0, 300)}`
    );
  }
  const serverHeader = String(probe.headers.server ?? '(none)');
  const byJupyter = serverHeader.startsWith('TornadoServer');
  if (byJupyter !== (side !== 'node')) {
    throw new Error(`${SIDES[side].tag}: a save was answered by Server: ${serverHeader}`);
  }
  return { side, backend, server: serverHeader, answerBytes: probe.bodyBytes };
}

/**
 * After the rounds: every save to an archiving gateway became a version (per path, as many
 * versions as saves, the latest holding the last save's id), nothing is pending, and the
 * gateway counted every save as its own.
 */
export async function checkArchive(
  server: IContentsServer,
  saves: readonly IPacedSave[],
  probes: number
): Promise<NonNullable<ISideCheck['archive']>> {
  const perPath = new Map<string, { count: number; lastId: string }>();
  for (const save of saves) {
    perPath.set(save.path, { count: (perPath.get(save.path)?.count ?? 0) + 1, lastId: save.id });
  }
  await server.gateway?.drained();
  let versions = 0;
  let latestMatching = 0;
  for (const [path, { count, lastId }] of perPath) {
    const listing = VersionListingSchema.parse(
      await storeGet(server, `api/store/versions/${path}`)
    );
    const found = listing.workspace.versions;
    versions += found.length;
    if (found.length !== count) {
      log(
        `${SIDES[server.side].tag}: ${path} has ${found.length} versions, ${count} saves were sent`
      );
    }
    const latest = found[0]?.object_version_id;
    if (latest === undefined) continue;
    const content = VersionContentSchema.parse(
      await storeGet(
        server,
        `api/store/versions/${path}?object_version_id=${encodeURIComponent(latest)}`
      )
    ).content as { metadata?: { jupyter_store_bench?: { save_id?: string } } };
    if (content.metadata?.jupyter_store_bench?.save_id === lastId) latestMatching++;
  }
  const info = await storeInfo(server);
  const gatewaySeen = (info.archive?.sources?.gateway.seen ?? 0) - probes;
  return {
    saves: saves.length,
    versions,
    latestMatching,
    paths: perPath.size,
    gatewaySeen,
    pending: info.archive?.pending ?? NaN
  };
}
