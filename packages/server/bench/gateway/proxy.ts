/**
 * One configuration of the proxy phase: `jupyter-store lab` with one upstream transport, the
 * kernel round trips and the HTTP throughput measured through it and direct.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { labDefaults, startGatewayProcess } from '../../test/support/gateway';
import { cleanups, log } from '../cleanup';
import { type IHttpTarget, type ILoadRound, cpuNow, cpuSince, httpGet, otherLoad } from '../load';
import { writeProfilerPreload } from '../profile';
import { commonHeaders, endpoints, findLabAsset, measureHttp } from './http';
import { measureKernel, startKernel } from './kernel';
import { type IConfigResult, type Route, type Transport, plans } from './model';
import { options } from './options';

export async function runConfiguration(
  transport: Transport,
  profileDir: string | undefined
): Promise<IConfigResult> {
  const plan = plans(options.quick);
  const otherCoresBefore = await otherLoad(2_000);
  log(`other processes used ${otherCoresBefore.toFixed(2)} cores over the last 2 s`);
  log(`starting jupyter-store lab --upstream-transport ${transport}`);
  let nodeOptions = '';
  if (profileDir !== undefined) {
    const dir = join(profileDir, transport);
    await mkdir(dir, { recursive: true });
    nodeOptions = `--require ${await writeProfilerPreload(dir)}`;
  }
  const gateway = await startGatewayProcess({
    args: [...labDefaults(), '--upstream-transport', transport, '--log-level', 'warn'],
    env: { NODE_OPTIONS: nodeOptions }
  });
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    const code = await gateway.stop('SIGTERM', 60_000);
    if (code !== 0) log(`the gateway exited with ${code}; its stderr:\n${gateway.stderr()}`);
  };
  cleanups.push(stop);
  try {
    log(`gateway on port ${gateway.record.port}, upstream ${gateway.record.upstream_url}`);
    const expectedPrefix = transport === 'unix' ? 'unix:' : 'http://';
    if (!gateway.record.upstream_url.startsWith(expectedPrefix)) {
      throw new Error(
        `--upstream-transport ${transport} gave upstream ${gateway.record.upstream_url}`
      );
    }
    const points = endpoints(gateway);

    const asset = await findLabAsset(gateway, points.direct);
    const targets: IHttpTarget[] = [
      {
        id: 'asset',
        label: `static asset ${asset.path.split('?')[0].replace(gateway.baseUrl, '')}`,
        path: asset.path,
        bytes: asset.bytes
      },
      {
        id: 'kernelspecs',
        label: 'api/kernelspecs',
        path: `${gateway.baseUrl}api/kernelspecs`,
        bytes: 0
      }
    ];

    log('starting a kernel (POST api/kernels through the gateway)');
    const kernelId = await startKernel(gateway, points);
    let started = Date.now();
    log('measuring kernel execute round trips');
    const pids = { gateway: gateway.record.pid, jupyter: gateway.record.upstream_pid };
    const cpuStart = cpuNow(pids);
    const kernel = await measureKernel(gateway, points, kernelId, plan.kernel);
    const otherCoresKernel = cpuSince(pids, cpuStart).others / (Date.now() - started);
    log(`kernel round trips: ${((Date.now() - started) / 1000).toFixed(1)} s`);

    const http: Array<{ target: IHttpTarget; rounds: Record<Route, ILoadRound[]> }> = [];
    for (const target of targets) {
      if (target.bytes === 0) {
        const probe = await httpGet(
          points.direct,
          target.path,
          commonHeaders(gateway),
          undefined,
          false
        );
        if (probe.status !== 200) throw new Error(`GET ${target.path} answered ${probe.status}`);
        target.bytes = probe.bodyBytes;
      }
      started = Date.now();
      log(
        `measuring HTTP throughput: ${target.label} (${target.bytes.toLocaleString('en-US')} bytes)`
      );
      http.push({ target, rounds: await measureHttp(gateway, points, target, plan.http) });
      log(`${target.label}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
    return {
      transport,
      upstreamUrl: gateway.record.upstream_url,
      gatewayPid: gateway.record.pid,
      otherCoresBefore,
      otherCoresKernel,
      kernel,
      http
    };
  } finally {
    await stop();
  }
}
