/**
 * Measurement 1, bulk first start: `mc mirror` of the notebook tree, against `jupyter-store lab`
 * archiving the same tree from its first start, each timed until every key is present.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArchiveJournal } from '../../src/archive/journal';
import { REPO_ROOT } from '../../test/support/jupyterServer';
import {
  type IObjectServer,
  createVersionedBucket,
  mcBinary
} from '../../test/support/objectServers';
import { cleanupStep, log } from '../cleanup';
import { machineBusyMs, processCpuMs } from '../cpu';
import { ARCHIVING_ON_MESSAGE, sleep } from '../harness';
import { listKeys } from '../objects';
import { formatProfileSummary, summariseProfile, writeProfilerPreload } from '../profile';
import {
  BULK_TIMEOUT_MS,
  type IBulkResult,
  type IBulkRun,
  type IProcessSamples,
  type IStoreStatus,
  RSS_INTERVAL_MS,
  STATUS_INTERVAL_MS,
  WORKSPACE_PREFIX
} from './model';
import {
  ProcessSampler,
  cpuMsSince,
  loggedAt,
  measureStoreInfo,
  startArchivingGateway,
  storeStatus
} from './servers';
import { NotebookTree, checkSameFiles, filesUnder } from './tree';

/** `mc mirror` of the tree into a fresh bucket, timed from spawn to exit, then checked. */
async function mcMirrorRun(
  minio: IObjectServer,
  s3: S3Client,
  root: string,
  expected: readonly string[],
  bucket: string
): Promise<Omit<IBulkRun, 'round' | 'position'>> {
  await createVersionedBucket(minio, bucket);
  // Only the notebooks: nothing else (Jupyter's checkpoints, say) may have appeared in the root.
  checkSameFiles(filesUnder(root), expected, `the root before mc mirror`);
  const configDir = await mkdtemp(join(tmpdir(), 'bench-mc-'));
  try {
    const endpoint = new URL(minio.endpoint);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      MC_HOST_bench: `http://${minio.accessKeyId}:${minio.secretAccessKey}@${endpoint.host}`
    };
    const minioStart = processCpuMs(minio.pid);
    const machineStart = machineBusyMs();
    const clientStart = process.cpuUsage();
    const start = performance.now();
    const child = spawn(
      mcBinary(),
      ['--config-dir', configDir, 'mirror', '--quiet', '--no-color', `${root}/`, `bench/${bucket}`],
      { env, stdio: ['ignore', 'pipe', 'pipe'] }
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const sampler = new ProcessSampler(child.pid ?? -1, 50);
    const timer = setTimeout(() => child.kill('SIGKILL'), BULK_TIMEOUT_MS);
    const killChild = cleanupStep(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    const code = await new Promise<number | string>(resolve => {
      child.once('error', error => resolve(error.message));
      child.once('exit', (status, signal) => resolve(status ?? signal ?? -1));
    });
    const seconds = (performance.now() - start) / 1000;
    clearTimeout(timer);
    await killChild();
    const samples = sampler.stop();
    const minioCpuMs = processCpuMs(minio.pid) - minioStart;
    const machineMs = machineBusyMs() - machineStart;
    const clientCpuMs = cpuMsSince(clientStart);
    if (code !== 0) throw new Error(`mc mirror exited with ${code}: ${output.slice(-2000)}`);
    checkSameFiles(await listKeys(s3, bucket), expected, `mc mirror's bucket ${bucket}`);
    return {
      side: 'mc',
      pid: child.pid ?? -1,
      seconds,
      process: samples,
      minioCpuMs,
      machineMs,
      clientCpuMs
    };
  } finally {
    await rm(configDir, { recursive: true, force: true });
  }
}

/**
 * `jupyter-store lab` on the tree with a fresh journal and index, archiving to a fresh bucket:
 * timed from its spawn until every notebook is archived, then checked.
 */
async function gatewayFirstStartRun(
  minio: IObjectServer,
  s3: S3Client,
  root: string,
  expected: readonly string[],
  bucket: string,
  profileDir: string | undefined
): Promise<Omit<IBulkRun, 'round' | 'position'>> {
  await createVersionedBucket(minio, bucket);
  const nodeOptions =
    profileDir === undefined ? '' : `--require ${await writeProfilerPreload(profileDir)}`;
  const minioStart = processCpuMs(minio.pid);
  const machineStart = machineBusyMs();
  const clientStart = process.cpuUsage();
  const startEpoch = Date.now();
  const start = performance.now();
  const { gateway, stop } = await startArchivingGateway(minio, bucket, {
    rootDir: root,
    logLevel: 'info',
    nodeOptions
  });
  const sampler = new ProcessSampler(gateway.record.pid, RSS_INTERVAL_MS);
  // `GET api/store` costs the gateway more the more paths it archived (see the report), so it
  // is asked only when its journal holds no record: at the end, or when the scan lags.
  const journalDir = join(gateway.state.data, 'jupyter-store', 'journal');
  const journalled = (): Promise<number> => ArchiveJournal.pendingCount(journalDir);
  let firstJournalled = NaN;
  let done = NaN;
  let status: IStoreStatus | undefined;
  let statusCalls = 0;
  let samples: IProcessSamples;
  try {
    const deadline = start + BULK_TIMEOUT_MS;
    while (performance.now() < deadline) {
      const records = await journalled();
      if (records > 0 && Number.isNaN(firstJournalled)) firstJournalled = performance.now();
      if (records === 0) {
        status = await storeStatus(gateway);
        statusCalls++;
        if (status.archived >= expected.length && status.pending === 0) {
          done = performance.now();
          break;
        }
      }
      await sleep(STATUS_INTERVAL_MS);
    }
  } finally {
    // The samples end when the copy is done (or failed), before the gateway is stopped.
    samples = sampler.stop();
  }
  const minioCpuMs = processCpuMs(minio.pid) - minioStart;
  const machineMs = machineBusyMs() - machineStart;
  const clientCpuMs = cpuMsSince(clientStart);
  const jupyterCpuMs = processCpuMs(gateway.record.upstream_pid);
  const archivingEpoch = loggedAt(gateway, ARCHIVING_ON_MESSAGE);
  const storeInfoCost = Number.isNaN(done) ? undefined : await measureStoreInfo(gateway);
  await stop();
  if (Number.isNaN(done)) {
    throw new Error(
      `the gateway archived ${status?.archived ?? 0} of ${expected.length} notebooks in ` +
        `${BULK_TIMEOUT_MS / 1000} s; its log:\n${gateway.stderr().slice(-3000)}`
    );
  }
  const keys = (await listKeys(s3, bucket, `${WORKSPACE_PREFIX}/`)).map(key =>
    key.slice(WORKSPACE_PREFIX.length + 1)
  );
  checkSameFiles(keys, expected, `the gateway's bucket ${bucket}`);
  return {
    side: 'gateway',
    pid: gateway.record.pid,
    seconds: (done - start) / 1000,
    process: samples,
    minioCpuMs,
    machineMs,
    clientCpuMs,
    archivingAt: (archivingEpoch - startEpoch) / 1000,
    firstJournalledAt: (firstJournalled - start) / 1000,
    jupyterCpuMs,
    sources: status?.sources,
    statusCalls,
    storeInfoCost
  };
}

export async function measureBulk(
  minio: IObjectServer,
  s3: S3Client,
  tree: NotebookTree,
  runs: number,
  profile: boolean
): Promise<IBulkResult> {
  const root = await tree.dir();
  // Kept, as bench:archive keeps the "on" gateway's, for a closer look.
  const profileDir = profile
    ? join(tmpdir(), 'jupyter-store-bench-profiles', `observe-${Date.now()}`)
    : undefined;
  if (profileDir !== undefined) mkdirSync(profileDir, { recursive: true });
  const results: IBulkRun[] = [];
  for (let round = 1; round <= runs; round++) {
    const order: Array<'mc' | 'gateway'> = round % 2 === 1 ? ['mc', 'gateway'] : ['gateway', 'mc'];
    for (const [i, side] of order.entries()) {
      const bucket = `bulk-${side}-${round}`;
      const run =
        side === 'mc'
          ? await mcMirrorRun(minio, s3, root, tree.paths, bucket)
          : await gatewayFirstStartRun(minio, s3, root, tree.paths, bucket, profileDir);
      results.push({ ...run, round, position: i + 1 });
      log(
        `bulk round ${round} ${side}: ${run.seconds.toFixed(1)} s, peak RSS ` +
          `${(Math.max(run.process.maxRss, run.process.hwm) / 2 ** 20).toFixed(0)} MiB`
      );
    }
  }
  let summary: string | undefined;
  const last = results.filter(run => run.side === 'gateway').at(-1);
  if (profileDir !== undefined && last !== undefined) {
    // Only the gateway's own profile: Jupyter's children inherit NODE_OPTIONS too.
    const file = join(profileDir, `${last.pid}.cpuprofile`);
    if (existsSync(file)) {
      summary = `${file}\n\n${formatProfileSummary(await summariseProfile(file, REPO_ROOT))}`;
    } else log(`no ${file}: did the gateway exit cleanly?`);
  }
  return {
    notebooks: tree.paths.length,
    folders: tree.plan.folders,
    bytes: tree.bytes,
    runs: results,
    profile: summary
  };
}
