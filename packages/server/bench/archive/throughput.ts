/**
 * Measurement 1, sustained archive throughput: bursts of saves through the gateways (archiving
 * on and off) and to plain Jupyter Server, beside the same bytes written with `PutObject`.
 */
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import type { IObjectServer } from '../../test/support/objectServers';
import { log } from '../cleanup';
import { runConcurrent } from '../harness';
import { objectKeyOf, readObject, versionCounts } from '../objects';
import { ContentsSaver, PathLocks, SaveClient, Workload, nextId, pathName } from '../saves';
import { formatRate } from '../stats';
import { type IPids, cpuNow, cpuSince, threadsCpuMs, threadsCpuSince } from './cpu';
import {
  BUCKET,
  type IPlainJupyter,
  type IThroughputPlan,
  type IThroughputResult,
  type IThroughputRound,
  RAW_PREFIX,
  REQUEST_TIMEOUT_MS,
  type ThroughputKind,
  WORKSPACE_PREFIX
} from './model';

/**
 * Check that each key gained exactly the expected number of versions, and that its latest
 * version is the last save sent to it.
 */
async function checkVersions(
  client: S3Client,
  prefix: string,
  before: ReadonlyMap<string, number>,
  added: ReadonlyMap<string, number>,
  lastIds: ReadonlyMap<string, string>,
  what: string
): Promise<Map<string, number>> {
  const after = await versionCounts(client, BUCKET, prefix);
  for (const [key, count] of added) {
    const expected = (before.get(key) ?? 0) + count;
    if (after.get(key) !== expected) {
      throw new Error(`${what}: ${key} has ${after.get(key) ?? 0} versions, expected ${expected}`);
    }
  }
  await runConcurrent(lastIds.size, 8, async index => {
    const [key, id] = [...lastIds.entries()][index];
    const body = await readObject(client, BUCKET, key);
    if (!body.includes(id)) {
      throw new Error(`${what}: the latest version of ${key} is not the last save (${id})`);
    }
  });
  return after;
}

// ---------------------------------------------------------------------------------------------
// Measurement 1: sustained throughput

/**
 * One burst of saves through a gateway: with archiving on, timed until its journal is empty and
 * checked in MinIO; with archiving off, timed until the last save is answered.
 */
async function saveRound(
  saver: ContentsSaver,
  kind: 'archive' | 'off' | 'jupyter',
  workload: Workload,
  s3: S3Client,
  plan: IThroughputPlan,
  count: number,
  pids: IPids
): Promise<IThroughputRound> {
  const archiving = kind === 'archive';
  const prefix = objectKeyOf(WORKSPACE_PREFIX, 'tp/');
  const before = archiving ? await versionCounts(s3, BUCKET, prefix) : new Map<string, number>();
  const ids = Array.from({ length: count }, () => nextId('tp'));
  const bodies = ids.map(id => workload.putBody(id));
  const added = new Map<string, number>();
  const lastIds = new Map<string, string>();
  for (let i = 0; i < count; i++) {
    const key = objectKeyOf(WORKSPACE_PREFIX, pathName('tp', i, plan.paths));
    added.set(key, (added.get(key) ?? 0) + 1);
    lastIds.set(key, ids[i]);
  }
  const locks = new PathLocks();
  const latencies: number[] = [];
  const cpuStart = cpuNow(pids);
  const threadsStart = threadsCpuMs(pids.gateway);
  const start = performance.now();
  await runConcurrent(count, plan.concurrency, async i => {
    const path = pathName('tp', i, plan.paths);
    const { value } = await locks.run(path, () => saver.save(path, bodies[i]));
    latencies.push(value);
  });
  const answered = performance.now();
  const drained = archiving ? await (saver as SaveClient).drained(2) : answered;
  const cpu = cpuSince(pids, cpuStart);
  const threads = [...threadsCpuSince(pids.gateway, threadsStart)]
    .filter(([, ms]) => ms > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([name, ms]) => `${name} ${Math.round((ms * 1000) / count)} µs`);
  log(`throughput ${kind}: gateway CPU per save by thread: ${threads.join(', ')}`);
  if (archiving) await checkVersions(s3, prefix, before, added, lastIds, 'archive round');
  return {
    kind,
    count,
    seconds: (drained - start) / 1000,
    requestSeconds: (answered - start) / 1000,
    latencies,
    cpu
  };
}

/** The same bodies written with PutObject from this process. */
async function rawRound(
  writer: S3Client,
  s3: S3Client,
  workload: Workload,
  plan: IThroughputPlan,
  count: number,
  pids: IPids
): Promise<IThroughputRound> {
  const prefix = `${RAW_PREFIX}/tp/`;
  const before = await versionCounts(s3, BUCKET, prefix);
  const puts = Array.from({ length: count }, (_, i) => {
    const id = nextId('rw');
    const body = workload.diskBody(id);
    return {
      id,
      key: objectKeyOf(RAW_PREFIX, pathName('tp', i, plan.paths)),
      body,
      sha256: createHash('sha256').update(body).digest('hex')
    };
  });
  const added = new Map<string, number>();
  const lastIds = new Map<string, string>();
  for (const put of puts) {
    added.set(put.key, (added.get(put.key) ?? 0) + 1);
    lastIds.set(put.key, put.id);
  }
  const locks = new PathLocks();
  const latencies: number[] = [];
  const cpuStart = cpuNow(pids);
  const start = performance.now();
  await runConcurrent(count, plan.concurrency, async i => {
    const put = puts[i];
    await locks.run(put.key, async () => {
      const sent = performance.now();
      const output = await writer.send(
        new PutObjectCommand({
          Bucket: BUCKET,
          Key: put.key,
          Body: put.body,
          ContentType: 'application/x-ipynb+json',
          Metadata: { 'save-id': put.id, sha256: put.sha256 }
        }),
        { abortSignal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }
      );
      latencies.push(performance.now() - sent);
      if (output.VersionId === undefined) throw new Error(`PutObject ${put.key}: no version id`);
    });
  });
  const done = performance.now();
  const cpu = cpuSince(pids, cpuStart);
  await checkVersions(s3, prefix, before, added, lastIds, 'raw round');
  return {
    kind: 'raw',
    count,
    seconds: (done - start) / 1000,
    requestSeconds: (done - start) / 1000,
    latencies,
    cpu
  };
}

export async function measureThroughput(
  savers: { on: SaveClient; off: SaveClient | undefined; jupyter: IPlainJupyter | undefined },
  workload: Workload,
  s3: S3Client,
  writer: S3Client,
  minio: IObjectServer,
  plan: IThroughputPlan
): Promise<IThroughputResult> {
  const kinds: ThroughputKind[] = ['archive', 'raw'];
  if (savers.off !== undefined) kinds.push('off');
  if (savers.jupyter !== undefined) kinds.push('jupyter');
  const once = (kind: ThroughputKind, count: number): Promise<IThroughputRound> => {
    if (kind === 'raw') {
      return rawRound(writer, s3, workload, plan, count, { gateway: undefined, minio: minio.pid });
    }
    if (kind === 'jupyter') {
      const jupyter = savers.jupyter;
      if (jupyter === undefined) throw new Error('no plain Jupyter Server');
      const pids: IPids = { gateway: jupyter.server.pid, minio: minio.pid };
      return saveRound(jupyter.saver, kind, workload, s3, plan, count, pids);
    }
    const saver = kind === 'off' ? savers.off : savers.on;
    if (saver === undefined) throw new Error('no gateway with archiving off');
    const pids: IPids = { gateway: saver.gateway.record.pid, minio: minio.pid };
    return saveRound(saver, kind, workload, s3, plan, count, pids);
  };
  log(`throughput: warm-up, ${plan.warmup} of each (${kinds.join(', ')})`);
  for (const kind of kinds) await once(kind, plan.warmup);
  const rounds: IThroughputRound[] = [];
  for (let round = 0; round < plan.rounds; round++) {
    // Each kind goes first in turn.
    const order = kinds.map((_, i) => kinds[(i + round) % kinds.length]);
    for (const kind of order) {
      const result = await once(kind, plan.saves);
      rounds.push(result);
      log(
        `throughput round ${round + 1} ${kind}: ${formatRate(result.count / result.seconds)}/s ` +
          `(${result.seconds.toFixed(2)} s; other processes ${(result.cpu.others / (result.seconds * 1000)).toFixed(2)} cores)`
      );
    }
  }
  return { plan, rounds };
}
