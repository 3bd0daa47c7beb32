/**
 * The save measurements of `npm run bench:archive` (throughput, latency, on/off): MinIO, the
 * servers, the workload, the measurements selected, and their report.
 */
import { S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IGatewayProcess } from '../../test/support/gateway';
import { REPO_ROOT } from '../../test/support/jupyterServer';
import {
  createVersionedBucket,
  pinnedObjectServers,
  s3ClientFor,
  startMinio
} from '../../test/support/objectServers';
import { cleanups, log } from '../cleanup';
import { DOCS_FILE, writeGeneratedSection } from '../docs';
import { formatProfileSummary, summariseProfile } from '../profile';
import { SaveClient, Workload, nextId } from '../saves';
import { formatSpans, readSpans } from '../spans';
import { otherLoad } from './cpu';
import { measureLatency } from './latency';
import {
  BUCKET,
  type ILatencyResult,
  type IOnOffResult,
  type IPlainJupyter,
  type IRunResult,
  type IThroughputResult,
  NOTEBOOK_BYTES,
  REQUEST_TIMEOUT_MS,
  plans
} from './model';
import { measureOnOff } from './onoff';
import { SAVE_PHASES, options, phases, writeDocs } from './options';
import { SAVES_SECTION, report } from './report';
import { type GatewayRole, startGateway, startPlainJupyter } from './servers';
import { measureThroughput } from './throughput';

/** The measurements of this file; resolves with whether their targets were met. */
export async function runSaves(command: string): Promise<boolean> {
  const started = Date.now();
  const plan = plans(options.quick);
  const otherCoresBefore = await otherLoad(2_000, { gateway: undefined, minio: undefined });
  log(`other processes used ${otherCoresBefore.toFixed(2)} cores over the last 2 s`);

  log('starting MinIO');
  const minio = await startMinio();
  cleanups.push(() => minio.dispose());
  await createVersionedBucket(minio, BUCKET);
  const s3 = s3ClientFor(minio);
  cleanups.push(async () => s3.destroy());
  // The raw writer is configured as the gateway's store is: keep-alive, as many sockets as the
  // concurrency (max_threads), the SDK's default checksums and retries.
  const writer = new S3Client({
    endpoint: minio.endpoint,
    region: minio.region,
    forcePathStyle: true,
    credentials: { accessKeyId: minio.accessKeyId, secretAccessKey: minio.secretAccessKey },
    maxAttempts: 3,
    requestHandler: new NodeHttpHandler({
      httpAgent: { keepAlive: true, maxSockets: plan.throughput.concurrency },
      connectionTimeout: 5_000,
      requestTimeout: REQUEST_TIMEOUT_MS
    })
  });
  cleanups.push(async () => writer.destroy());

  const profileDir = options.profile
    ? join(tmpdir(), 'jupyter-store-bench-profiles', `archive-${Date.now()}`)
    : undefined;
  const spansDir = options.spans
    ? join(tmpdir(), 'jupyter-store-bench-spans', `archive-${Date.now()}`)
    : undefined;
  const roles: GatewayRole[] = [];
  if (phases.includes('throughput') || phases.includes('onoff')) roles.push('on', 'off');
  if (phases.includes('latency')) roles.push('debug');
  log(`starting jupyter-store lab: ${roles.join(', ')}`);
  const gateways = new Map<GatewayRole, IGatewayProcess>();
  await Promise.all(
    roles.map(async role =>
      gateways.set(role, await startGateway(role, minio, profileDir, spansDir))
    )
  );
  const savers = new Map<GatewayRole, SaveClient>();
  for (const [role, gateway] of gateways) {
    const saver = new SaveClient(gateway, `${role} gateway`, plan.throughput.concurrency);
    savers.set(role, saver);
    cleanups.push(async () => saver.close());
  }
  let jupyter: IPlainJupyter | undefined;
  if (phases.includes('throughput') || phases.includes('onoff')) {
    jupyter = await startPlainJupyter(plan.throughput.concurrency);
    log(`plain Jupyter Server on port ${jupyter.server.port} (pid ${jupyter.server.pid})`);
  }
  const saver = (role: GatewayRole): SaveClient => {
    const found = savers.get(role);
    if (found === undefined) throw new Error(`no ${role} gateway`);
    return found;
  };

  // One save to learn the bytes a save writes (the raw bodies), and that the journal is where
  // the benchmark looks for it.
  const workload = new Workload(NOTEBOOK_BYTES);
  {
    const probe = saver(roles[0]);
    const id = nextId('pr');
    await mkdir(join(probe.gateway.rootDir, 'probe'), { recursive: true });
    await probe.save('probe/nb.ipynb', workload.putBody(id));
    await workload.learnDiskBytes(join(probe.gateway.rootDir, 'probe', 'nb.ipynb'), id);
    if (!existsSync(probe.journalDir)) throw new Error(`no journal at ${probe.journalDir}`);
    await probe.drained();
  }
  for (const gateway of gateways.values()) {
    for (const dir of ['tp', 'lat', 'onoff']) {
      await mkdir(join(gateway.rootDir, dir), { recursive: true });
    }
  }

  let throughput: IThroughputResult | undefined;
  let latencyResult: ILatencyResult | undefined;
  let onoff: IOnOffResult | undefined;
  if (phases.includes('throughput')) {
    const t = Date.now();
    throughput = await measureThroughput(
      { on: saver('on'), off: savers.get('off'), jupyter },
      workload,
      s3,
      writer,
      minio,
      plan.throughput
    );
    log(`throughput: ${((Date.now() - t) / 1000).toFixed(1)} s`);
  }
  if (phases.includes('onoff')) {
    const t = Date.now();
    onoff = await measureOnOff(
      { on: saver('on'), off: saver('off'), jupyter },
      workload,
      minio,
      plan.onoff
    );
    log(`save latency on/off: ${((Date.now() - t) / 1000).toFixed(1)} s`);
  }
  if (phases.includes('latency')) {
    const t = Date.now();
    latencyResult = await measureLatency(saver('debug'), workload, s3, minio, plan.latency);
    log(`save-to-archived latency: ${((Date.now() - t) / 1000).toFixed(1)} s`);
  }

  const result: IRunResult = {
    notebookBytes: workload.diskBytes,
    putBodyBytes: workload.putBytes,
    minioVersion: pinnedObjectServers().MINIO_VERSION ?? 'unknown',
    endpoint: minio.endpoint,
    otherCoresBefore,
    throughput,
    latency: latencyResult,
    onoff
  };
  const { text, allMet } = report(result, command, (Date.now() - started) / 1000);
  process.stdout.write(`\n${text}\n`);
  if (writeDocs(SAVE_PHASES)) {
    writeGeneratedSection(SAVES_SECTION, text);
    log(`wrote ${DOCS_FILE}`);
  }

  if (spansDir !== undefined) {
    for (const role of ['on', 'off'] as const) {
      const gateway = gateways.get(role);
      if (gateway === undefined) continue;
      await gateway.stop('SIGTERM', 60_000);
      const file = join(spansDir, `${gateway.record.pid}.spans.json`);
      if (!existsSync(file)) {
        log(`no ${file}: did the ${role} gateway exit cleanly?`);
        continue;
      }
      process.stdout.write(
        `\n${formatSpans(await readSpans(file), `### Save spans of the "${role}" gateway (${file})`)}\n`
      );
    }
  }
  if (profileDir !== undefined) {
    const on = gateways.get('on');
    if (on !== undefined) {
      await on.stop('SIGTERM', 60_000);
      const file = join(profileDir, `${on.record.pid}.cpuprofile`);
      if (!readdirSync(profileDir).includes(`${on.record.pid}.cpuprofile`)) {
        log(`no ${file}: did the gateway exit cleanly?`);
      } else {
        const summary = await summariseProfile(file, REPO_ROOT);
        process.stdout.write(
          `\n### CPU profile of the "on" gateway (${file})\n\n${formatProfileSummary(summary)}\n`
        );
      }
    }
  }
  return allMet;
}
