/**
 * Measurement 3, observed write → version listed: a kernel rewrites notebooks through the
 * gateway's root, each write timed until a listing of its key shows the version holding it.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { openKernelSocket } from '../../test/support/kernel';
import { type IObjectServer, createVersionedBucket } from '../../test/support/objectServers';
import { log } from '../cleanup';
import { logLines, sleep } from '../harness';
import { generateNotebook } from '../notebook';
import { VersionPoller, listVersions, objectKeyOf, readObject } from '../objects';
import {
  ID_LENGTH,
  ID_PLACEHOLDER,
  type IObservedResult,
  type IObservedWrite,
  type IPlans,
  OBSERVED_TIMEOUT_MS,
  WORKSPACE_PREFIX
} from './model';
import { measureStoreInfo, startArchivingGateway, storeStatus } from './servers';

/** The Python that defines the kernel's writer: the notebook template and `_bench_write`. */
function kernelSetupCode(template: string): string {
  return [
    'import base64, time',
    `_bench_template = base64.b64decode(${JSON.stringify(Buffer.from(template).toString('base64'))}).decode('utf-8')`,
    'def _bench_write(path, write_id):',
    `    data = _bench_template.replace(${JSON.stringify(ID_PLACEHOLDER)}, write_id)`,
    "    with open(path, 'w', encoding='utf-8') as f:",
    '        f.write(data)',
    '    return time.time()',
    "'ready'"
  ].join('\n');
}

export async function measureObserved(
  minio: IObjectServer,
  s3: S3Client,
  plan: IPlans['observed']
): Promise<IObservedResult> {
  const bucket = 'observed';
  await createVersionedBucket(minio, bucket);
  const { gateway, stop } = await startArchivingGateway(minio, bucket, { logLevel: 'debug' });
  try {
    const dir = 'kw';
    mkdirSync(join(gateway.rootDir, dir));
    const headers = { Authorization: `token ${gateway.token}` };
    const started = await fetch(gateway.url('api/kernels'), {
      method: 'POST',
      headers: { ...headers, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'python3' }),
      signal: AbortSignal.timeout(60_000)
    });
    const { id: kernelId } = (await started.json()) as { id?: string };
    if (started.status !== 201 || typeof kernelId !== 'string') {
      throw new Error(`POST api/kernels answered ${started.status}`);
    }
    const kernel = await openKernelSocket(
      gateway.url(`api/kernels/${kernelId}/channels`).replace(/^http/, 'ws'),
      headers
    );
    try {
      const notebook = JSON.parse(
        generateNotebook(20 * 1024, 0x0b5).diskBytes.toString('utf8')
      ) as {
        metadata: Record<string, unknown>;
      };
      notebook.metadata.jupyter_store_bench = { write_id: ID_PLACEHOLDER };
      const template = JSON.stringify(notebook, null, 1) + '\n';
      if ((await kernel.execute(kernelSetupCode(template), 60_000)) !== "'ready'") {
        throw new Error('the kernel did not define the writer');
      }
      const poller = new VersionPoller(s3, bucket, plan.pollMs, OBSERVED_TIMEOUT_MS, Date.now);
      let counter = 0;
      const nextWriteId = (): string => `kw${String(++counter).padStart(ID_LENGTH - 2, '0')}`;
      const pathOf = (i: number): string => `${dir}/nb-${i % plan.paths}.ipynb`;
      const write = async (path: string, writeId: string): Promise<{ at: number; ms: number }> => {
        const sent = performance.now();
        const result = await kernel.execute(
          `_bench_write(${JSON.stringify(join(gateway.rootDir, path))}, ${JSON.stringify(writeId)})`
        );
        const at = Number(result) * 1000;
        if (!Number.isFinite(at)) throw new Error(`the kernel's write answered ${result}`);
        return { at, ms: performance.now() - sent };
      };
      poller.start();
      const expected = new Map<string, number>();
      const waits: Array<Promise<void>> = [];
      let timedOut = 0;
      const expect = (path: string): void => {
        const key = objectKeyOf(WORKSPACE_PREFIX, path);
        const count = (expected.get(key) ?? 0) + 1;
        expected.set(key, count);
        waits.push(
          poller.expect(key, count).then(
            () => undefined,
            () => void timedOut++
          )
        );
      };
      // Warm-up: one write per path (creates the files and their first versions).
      log(`observed writes: warm-up, ${plan.paths} writes`);
      for (let i = 0; i < plan.paths; i++) {
        await write(pathOf(i), nextWriteId());
        expect(pathOf(i));
      }
      await Promise.all(waits.splice(0));
      const warmupTimedOut = timedOut;
      timedOut = 0;
      if (warmupTimedOut > 0)
        throw new Error(`${warmupTimedOut} warm-up writes were never archived`);
      await sleep(1000);

      log(
        `observed writes: ${plan.writes} kernel writes over ${plan.paths} paths, one every ` +
          `${plan.intervalMs} ms, polling every ${plan.pollMs} ms`
      );
      const writes: IObservedWrite[] = [];
      const executeMs: number[] = [];
      const start = performance.now();
      try {
        for (let i = 0; i < plan.writes; i++) {
          await sleep(start + i * plan.intervalMs - performance.now());
          const entry: IObservedWrite = {
            index: i,
            path: pathOf(i),
            id: nextWriteId(),
            writtenAt: NaN
          };
          const { at, ms } = await write(entry.path, entry.id);
          entry.writtenAt = at;
          executeMs.push(ms);
          writes.push(entry);
          expect(entry.path);
        }
        await Promise.all(waits);
      } finally {
        await poller.stop();
      }

      // Which version holds which write: read every version back.
      const byId = new Map(writes.map(entry => [entry.id, entry]));
      const versions = await listVersions(s3, bucket, `${WORKSPACE_PREFIX}/${dir}/`);
      await Promise.all(
        versions.map(async version => {
          if (version.Key === undefined || version.VersionId === undefined) return;
          const body = (await readObject(s3, bucket, version.Key, version.VersionId)).toString(
            'utf8'
          );
          const match = /"write_id": "([^"]{16})"/.exec(body);
          const entry = match ? byId.get(match[1]) : undefined;
          if (entry === undefined) return;
          entry.versionId = version.VersionId;
          entry.seenAt = poller.firstSeen.get(version.VersionId);
        })
      );
      const byVersion = new Map(writes.map(entry => [entry.versionId, entry]));
      for (const line of logLines(gateway, 'archived')) {
        const entry = byVersion.get(line.versionId as string);
        if (entry === undefined || typeof line.time !== 'string') continue;
        entry.archivedAt = Date.parse(line.time);
        entry.queuedMs = Number(line.queuedMs);
        entry.uploadMs = Number(line.uploadMs);
      }
      const status = await storeStatus(gateway);
      const storeInfoCost = await measureStoreInfo(gateway);
      await fetch(gateway.url(`api/kernels/${kernelId}`), {
        method: 'DELETE',
        headers,
        signal: AbortSignal.timeout(30_000)
      }).then(response => response.arrayBuffer());
      return {
        plan,
        notebookBytes: Buffer.byteLength(template),
        writes,
        unobserved: writes.filter(entry => entry.versionId === undefined).length,
        timedOut,
        pollRtts: poller.rtts,
        executeMs,
        sources: status.sources,
        watcher: status.observation.watcher.mode,
        storeInfoCost
      };
    } finally {
      await kernel.close();
    }
  } finally {
    await stop();
  }
}
