/**
 * The two ways to Jupyter (through the gateway, and straight to the upstream address of its
 * runtime record), and the proxied HTTP throughput measured over both.
 */
import type { IGatewayProcess } from '../../test/support/gateway';
import {
  type IHttpPlan,
  type IHttpTarget,
  type ILoadRound,
  type ILoadServer,
  httpGet,
  loadRound
} from '../load';
import { type IEndpoint, ROUTES, type Route } from './model';

/** The gateway itself, and the upstream from its runtime record. */
export function endpoints(gateway: IGatewayProcess): Record<Route, IEndpoint> {
  const { record, baseUrl } = gateway;
  const upstream = record.upstream_url;
  let direct: IEndpoint;
  if (upstream.startsWith('unix:')) {
    const socketPath = upstream.slice('unix:'.length);
    direct = {
      route: 'direct',
      connect: { socketPath },
      wsUrl: relative => `ws+unix:${socketPath}:${baseUrl}${relative}`
    };
  } else {
    const url = new URL(upstream);
    if (url.protocol !== 'http:') throw new Error(`unexpected upstream_url ${upstream}`);
    direct = {
      route: 'direct',
      connect: { host: url.hostname, port: Number(url.port) },
      wsUrl: relative => `ws://${url.host}${baseUrl}${relative}`
    };
  }
  return {
    direct,
    gateway: {
      route: 'gateway',
      connect: { host: '127.0.0.1', port: record.port },
      wsUrl: relative => `ws://127.0.0.1:${record.port}${baseUrl}${relative}`
    }
  };
}

/** Headers of every request, on both routes: the gateway keeps Host, so Jupyter sees the same. */
export function commonHeaders(gateway: IGatewayProcess): Record<string, string> {
  return {
    Host: `127.0.0.1:${gateway.record.port}`,
    Authorization: `token ${gateway.token}`
  };
}

// ---------------------------------------------------------------------------------------------
// HTTP

/** Find the JavaScript entry point the `/lab` page loads (a real static asset of Lab). */
export async function findLabAsset(
  gateway: IGatewayProcess,
  direct: IEndpoint
): Promise<{ path: string; bytes: number }> {
  const page = await httpGet(
    direct,
    `${gateway.baseUrl}lab`,
    commonHeaders(gateway),
    undefined,
    true
  );
  if (page.status !== 200) throw new Error(`GET ${gateway.baseUrl}lab answered ${page.status}`);
  const html = page.body?.toString('utf8') ?? '';
  const scripts = [...html.matchAll(/<script[^>]*\ssrc="([^"]+\.js(?:\?[^"]*)?)"/g)].map(match =>
    match[1].replace(/&amp;/g, '&')
  );
  const asset = scripts.find(src => src.startsWith(`${gateway.baseUrl}static/lab/`)) ?? scripts[0];
  if (asset === undefined)
    throw new Error(`no <script src> in the /lab page:\n${html.slice(0, 2000)}`);
  const answer = await httpGet(direct, asset, commonHeaders(gateway), undefined, false);
  if (answer.status !== 200) throw new Error(`GET ${asset} answered ${answer.status}`);
  return { path: asset, bytes: answer.bodyBytes };
}

export async function measureHttp(
  gateway: IGatewayProcess,
  points: Record<Route, IEndpoint>,
  target: IHttpTarget,
  plan: IHttpPlan
): Promise<Record<Route, ILoadRound[]>> {
  const rounds: Record<Route, ILoadRound[]> = { direct: [], gateway: [] };
  const server: ILoadServer = {
    headers: commonHeaders(gateway),
    pids: { gateway: gateway.record.pid, jupyter: gateway.record.upstream_pid }
  };
  for (const route of ROUTES) await loadRound(server, points[route], target, plan, plan.warmupMs);
  for (let round = 0; round < plan.rounds; round++) {
    const order = round % 2 === 0 ? ROUTES : [...ROUTES].reverse();
    for (const route of order) {
      rounds[route].push(await loadRound(server, points[route], target, plan, plan.roundMs));
    }
  }
  return rounds;
}
