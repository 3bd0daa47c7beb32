/**
 * Measurement 2, save-to-archived latency: a paced stream of saves, each timed until a listing
 * of its key shows its version, with the gateway's own breakdown from its debug log.
 */
import { type ObjectVersion, S3Client } from '@aws-sdk/client-s3';
import type { IObjectServer } from '../../test/support/objectServers';
import { log } from '../cleanup';
import { logLines, runConcurrent } from '../harness';
import { VersionPoller, listVersions, objectKeyOf, readObject, versionCounts } from '../objects';
import { ARCHIVE_TIMEOUT_MS, type IPacedSave, SaveClient, Workload, pacedStream } from '../saves';
import { type IPids, cpuNow, cpuSince } from './cpu';
import { BUCKET, type ILatencyResult, type IPlans, WORKSPACE_PREFIX } from './model';

/** Measurement 2: save-to-archived latency, on the debug gateway. */
export async function measureLatency(
  saver: SaveClient,
  workload: Workload,
  s3: S3Client,
  minio: IObjectServer,
  plan: IPlans['latency']
): Promise<ILatencyResult> {
  const pids: IPids = { gateway: saver.gateway.record.pid, minio: minio.pid };
  const dir = 'lat';
  log(`latency: warm-up, ${plan.warmup} saves`);
  await pacedStream(saver, workload, dir, plan, plan.warmup);
  await saver.drained();
  const prefix = objectKeyOf(WORKSPACE_PREFIX, `${dir}/`);
  const before = await versionCounts(s3, BUCKET, prefix);
  const sentPerKey = new Map<string, number>();
  const poller = new VersionPoller(s3, BUCKET, plan.pollMs, ARCHIVE_TIMEOUT_MS);
  const seen: Array<Promise<void>> = [];
  log(
    `latency: ${plan.saves} saves at ${plan.rate}/s over ${plan.paths} paths, polling every ${plan.pollMs} ms`
  );
  poller.start();
  const cpuStart = cpuNow(pids);
  const start = performance.now();
  let saves: IPacedSave[];
  try {
    saves = await pacedStream(saver, workload, dir, plan, plan.saves, save => {
      const key = objectKeyOf(WORKSPACE_PREFIX, save.path);
      const nth = (sentPerKey.get(key) ?? 0) + 1;
      sentPerKey.set(key, nth);
      seen.push(
        poller.expect(key, (before.get(key) ?? 0) + nth).then(at => {
          save.seenAt = at;
        })
      );
    });
    await Promise.all(seen);
  } finally {
    await poller.stop();
  }
  const seconds = (performance.now() - start) / 1000;
  const cpu = cpuSince(pids, cpuStart);
  await saver.drained();

  // Match versions to saves (the k-th new version of a key is the k-th save to it) and check.
  const versions = await listVersions(s3, BUCKET, prefix);
  const byKey = new Map<string, ObjectVersion[]>();
  for (const version of versions) {
    if (version.Key === undefined) continue;
    byKey.set(version.Key, [...(byKey.get(version.Key) ?? []), version]);
  }
  const savesByKey = new Map<string, IPacedSave[]>();
  for (const save of saves) {
    const key = objectKeyOf(WORKSPACE_PREFIX, save.path);
    savesByKey.set(key, [...(savesByKey.get(key) ?? []), save]);
  }
  const checks: Array<{ key: string; save: IPacedSave; versionId: string }> = [];
  for (const [key, list] of savesByKey) {
    const all = byKey.get(key) ?? [];
    if (all.length !== (before.get(key) ?? 0) + list.length) {
      throw new Error(`latency: ${key} has ${all.length} versions, expected more`);
    }
    // Newest first: the newest list.length versions, oldest of them first.
    const newest = all.slice(0, list.length).reverse();
    list.forEach((save, k) => {
      const versionId = newest[k].VersionId;
      if (versionId === undefined) throw new Error(`latency: a version of ${key} has no id`);
      save.versionId = versionId;
      checks.push({ key, save, versionId });
    });
  }
  await runConcurrent(checks.length, 8, async index => {
    const { key, save, versionId } = checks[index];
    if (!(await readObject(s3, BUCKET, key, versionId)).includes(save.id)) {
      throw new Error(`latency: version ${versionId} of ${key} is not save ${save.id}`);
    }
  });

  // The gateway's own account of each archive (debug log).
  const byVersion = new Map(saves.map(save => [save.versionId, save]));
  const queuedMs: number[] = [];
  const uploadMs: number[] = [];
  let logMatched = 0;
  for (const entry of logLines(saver.gateway, 'archived')) {
    if (typeof entry.versionId !== 'string' || !byVersion.has(entry.versionId)) continue;
    logMatched++;
    queuedMs.push(Number(entry.queuedMs));
    uploadMs.push(Number(entry.uploadMs));
  }
  return {
    plan,
    saves,
    pollRtts: poller.rtts,
    queuedMs,
    uploadMs,
    logMatched,
    cpu,
    seconds
  };
}
