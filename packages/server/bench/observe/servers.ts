/**
 * The processes of the observation benchmark: a sampler of a process's memory and CPU, and
 * `jupyter-store lab` archiving to MinIO with what its `GET api/store` and its log say.
 */
import { type IGatewayProcess, labDefaults, startGatewayProcess } from '../../test/support/gateway';
import type { IObjectServer } from '../../test/support/objectServers';
import { cleanupStep, log } from '../cleanup';
import { processCpuMs, readMemory } from '../cpu';
import { logLines } from '../harness';
import { latency } from '../stats';
import type { IProcessSamples, IStoreInfoCost, IStoreStatus } from './model';

/** This process's CPU time (user + system) since `start`, ms. */
export function cpuMsSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

/** Samples a process's RSS, peak and CPU every `intervalMs` until stopped (or gone). */
export class ProcessSampler {
  constructor(
    private readonly _pid: number,
    intervalMs: number
  ) {
    this._sample();
    this._timer = setInterval(() => this._sample(), intervalMs);
  }

  stop(): IProcessSamples {
    clearInterval(this._timer);
    this._sample();
    return { maxRss: this._maxRss, hwm: this._hwm, samples: this._samples, cpuMs: this._cpuMs };
  }

  private _sample(): void {
    try {
      const { rss, hwm } = readMemory(this._pid);
      const cpuMs = processCpuMs(this._pid);
      this._maxRss = Math.max(this._maxRss, rss);
      this._hwm = Math.max(this._hwm, hwm);
      if (cpuMs > 0) this._cpuMs = cpuMs;
      this._samples++;
    } catch {
      // gone
    }
  }

  private readonly _timer: NodeJS.Timeout;
  private _maxRss = 0;
  private _hwm = 0;
  private _samples = 0;
  private _cpuMs = 0;
}

// ---------------------------------------------------------------------------------------------
// The gateway

/** Start `jupyter-store lab` archiving to a bucket of MinIO; stopped at the end in any case. */
export async function startArchivingGateway(
  minio: IObjectServer,
  bucket: string,
  options: { rootDir?: string; logLevel: 'info' | 'debug'; nodeOptions?: string }
): Promise<{ gateway: IGatewayProcess; stop: () => Promise<void> }> {
  const gateway = await startGatewayProcess({
    rootDir: options.rootDir,
    args: [
      ...labDefaults(),
      '--log-level',
      options.logLevel,
      `--StoreSettings.object_endpoint_url=${minio.endpoint}`,
      `--StoreSettings.object_bucket=${bucket}`
    ],
    env: {
      NODE_OPTIONS: options.nodeOptions ?? '',
      STORE_OBJECT_ACCESS_KEY_ID: minio.accessKeyId,
      STORE_OBJECT_SECRET_ACCESS_KEY: minio.secretAccessKey,
      STORE_OBJECT_REGION_NAME: minio.region
    }
  });
  const stop = cleanupStep(async () => {
    const code = await gateway.stop('SIGTERM', 60_000);
    if (code !== 0)
      log(`a gateway exited with ${code}; its stderr:\n${gateway.stderr().slice(-3000)}`);
  });
  return { gateway, stop };
}

export async function storeStatus(gateway: IGatewayProcess): Promise<IStoreStatus> {
  const response = await fetch(gateway.url('api/store'), {
    headers: { Authorization: `token ${gateway.token}` },
    signal: AbortSignal.timeout(30_000)
  });
  const body = (await response.json()) as { archive: IStoreStatus | null };
  if (response.status !== 200 || body.archive === null) {
    throw new Error(`GET api/store answered ${response.status}: ${JSON.stringify(body)}`);
  }
  return body.archive;
}

/** Send `requests` `GET api/store` one after the other, idle gateway. */
export async function measureStoreInfo(
  gateway: IGatewayProcess,
  requests = 40
): Promise<IStoreInfoCost> {
  const times: number[] = [];
  let archived = 0;
  await storeStatus(gateway);
  const cpuStart = processCpuMs(gateway.record.pid);
  for (let i = 0; i < requests; i++) {
    const sent = performance.now();
    archived = (await storeStatus(gateway)).archived;
    times.push(performance.now() - sent);
  }
  const cpuMs = (processCpuMs(gateway.record.pid) - cpuStart) / requests;
  return { requests, latency: latency(times), cpuMs, archived };
}

/** Epoch ms of the first log line with this message, or NaN. */
export function loggedAt(gateway: IGatewayProcess, msg: string): number {
  const time = logLines(gateway, msg)[0]?.time;
  return typeof time === 'string' ? Date.parse(time) : NaN;
}
