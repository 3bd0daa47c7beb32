/** The servers of the save measurements: the gateways ("on", "off", "debug") and plain Jupyter Server. */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type IGatewayProcess, labDefaults, startGatewayProcess } from '../../test/support/gateway';
import { REPO_ROOT, startJupyterServer } from '../../test/support/jupyterServer';
import type { IObjectServer } from '../../test/support/objectServers';
import { cleanups, log } from '../cleanup';
import { ARCHIVING_ON_MESSAGE, waitForLogLine } from '../harness';
import { writeProfilerPreload } from '../profile';
import { ContentsSaver } from '../saves';
import { writeSpanPreload } from '../spans';
import { BUCKET, type IPlainJupyter } from './model';

export type GatewayRole = 'on' | 'off' | 'debug';

/** Start one gateway archiving to MinIO (or not, for "off"), and check what its log says. */
export async function startGateway(
  role: GatewayRole,
  minio: IObjectServer,
  profileDir: string | undefined,
  spansDir: string | undefined
): Promise<IGatewayProcess> {
  const args = [
    ...labDefaults(),
    '--log-level',
    role === 'debug' ? 'debug' : 'info',
    `--StoreSettings.object_endpoint_url=${minio.endpoint}`,
    `--StoreSettings.object_bucket=${BUCKET}`
  ];
  if (role === 'off') args.push('--StoreSettings.workspace_prefix=');
  const preloads: string[] = [];
  if (profileDir !== undefined && role !== 'debug') {
    // Both gateways, so that the "on" profile can be read against the "off" one (its file is
    // left beside the other; the summary is the "on" gateway's).
    await mkdir(profileDir, { recursive: true });
    preloads.push(`--require ${await writeProfilerPreload(profileDir)}`);
  }
  if (spansDir !== undefined && role !== 'debug') {
    await mkdir(spansDir, { recursive: true });
    preloads.push(
      `--require ${await writeSpanPreload(spansDir, join(REPO_ROOT, 'packages', 'server', 'lib'))}`
    );
  }
  // A/B runs: a preload of one's own for the "on" gateway (a variant of the code under test).
  const extra = process.env.BENCH_ARCHIVE_ON_PRELOAD;
  if (extra !== undefined && extra !== '' && role === 'on') preloads.push(`--require ${extra}`);
  const nodeOptions = preloads.join(' ');
  const gateway = await startGatewayProcess({
    args,
    env: {
      NODE_OPTIONS: nodeOptions,
      STORE_OBJECT_ACCESS_KEY_ID: minio.accessKeyId,
      STORE_OBJECT_SECRET_ACCESS_KEY: minio.secretAccessKey,
      STORE_OBJECT_REGION_NAME: minio.region
    }
  });
  let stopped = false;
  cleanups.push(async () => {
    if (stopped) return;
    stopped = true;
    const code = await gateway.stop('SIGTERM', 60_000);
    if (code !== 0)
      log(`the ${role} gateway exited with ${code}; its stderr:\n${gateway.stderr()}`);
  });
  const expected = role === 'off' ? 'archiving is off' : ARCHIVING_ON_MESSAGE;
  const line = await waitForLogLine(gateway, expected);
  if (role === 'off') log(`off gateway: archiving is off (${String(line.reason)})`);
  log(`${role} gateway on port ${gateway.record.port} (pid ${gateway.record.pid})`);
  return gateway;
}

/**
 * Start plain Jupyter Server (the venv's, default contents manager, no gateway, no archiving)
 * on its own root with the benchmark's directories: the reference the saves are compared with.
 */
export async function startPlainJupyter(sockets: number): Promise<IPlainJupyter> {
  const base = await mkdtemp(join(tmpdir(), 'jupyter-store-bench-plain-'));
  cleanups.push(() => rm(base, { recursive: true, force: true }));
  const rootDir = join(base, 'root');
  for (const dir of ['tp', 'onoff']) await mkdir(join(rootDir, dir), { recursive: true });
  const server = await startJupyterServer({ rootDir, stateDir: join(base, 'state') });
  const saver = new ContentsSaver(
    { port: server.port, baseUrl: server.baseUrl, token: server.token },
    'plain Jupyter Server',
    sockets
  );
  // Cleanups run last-in first-out: the client, then the server, then its directory.
  cleanups.push(() => server.stop());
  cleanups.push(async () => saver.close());
  return { server, saver };
}
