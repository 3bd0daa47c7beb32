/**
 * Kernel execute round trips over the kernel websocket, through the gateway and direct, in
 * alternating blocks.
 */
import { randomUUID } from 'node:crypto';
import type { IGatewayProcess } from '../../test/support/gateway';
import {
  type IKernelSocket,
  decodeV1,
  encodeV1,
  openKernelSocket
} from '../../test/support/kernel';
import { REQUEST_TIMEOUT_MS, httpGet } from '../load';
import { commonHeaders } from './http';
import { EXPRESSION, type IEndpoint, type IKernelPlan, ROUTES, type Route } from './model';

/** Start a kernel through the gateway; returns its id. */
export async function startKernel(
  gateway: IGatewayProcess,
  points: Record<Route, IEndpoint>
): Promise<string> {
  const answer = await httpGet(
    points.gateway,
    `${gateway.baseUrl}api/kernels`,
    { ...commonHeaders(gateway), 'Content-Type': 'application/json' },
    undefined,
    true,
    'POST',
    Buffer.from(JSON.stringify({ name: 'python3' }))
  );
  if (answer.status !== 201) {
    throw new Error(`POST api/kernels answered ${answer.status}: ${answer.body?.toString('utf8')}`);
  }
  const id = (JSON.parse(answer.body?.toString('utf8') ?? '{}') as { id?: unknown }).id;
  if (typeof id !== 'string') throw new Error('POST api/kernels gave no kernel id');
  return id;
}

/** The times of one execute: to its `execute_result`, and to the kernel's `idle` status. */
interface IRoundTrip {
  readonly resultMs: number;
  readonly idleMs: number;
}

/**
 * Send one `execute_request` and time it; resolves once the result, the idle status and the
 * reply have all arrived, so that no work of this request overlaps the next.
 */
function executeOnce(kernel: IKernelSocket, session: string): Promise<IRoundTrip> {
  const { socket } = kernel;
  const msgId = randomUUID();
  const frame = encodeV1('shell', [
    {
      msg_id: msgId,
      msg_type: 'execute_request',
      username: 'bench',
      session,
      date: new Date().toISOString(),
      version: '5.3'
    },
    {},
    {},
    {
      code: EXPRESSION,
      silent: false,
      store_history: false,
      user_expressions: {},
      allow_stdin: false,
      stop_on_error: true
    }
  ]);
  return new Promise((resolve, reject) => {
    let resultMs: number | undefined;
    let idleMs: number | undefined;
    let replied = false;
    const finish = (error?: Error): void => {
      clearTimeout(timer);
      socket.off('message', onMessage);
      socket.off('close', onClose);
      if (error !== undefined) reject(error);
      else resolve({ resultMs: resultMs ?? NaN, idleMs: idleMs ?? NaN });
    };
    const onClose = (): void => finish(new Error('the kernel websocket closed during an execute'));
    const onMessage = (data: Buffer, isBinary: boolean): void => {
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      if (!isBinary) return;
      const { channel, parts } = decodeV1(data);
      if ((parts[1] as { msg_id?: string }).msg_id !== msgId) return;
      const type = (parts[0] as { msg_type: string }).msg_type;
      const content = parts[3] as Record<string, unknown>;
      if (channel === 'iopub') {
        if (type === 'execute_result') {
          const text = (content.data as Record<string, string> | undefined)?.['text/plain'];
          if (text !== '2') return finish(new Error(`${EXPRESSION} gave ${String(text)}`));
          resultMs = ms;
        } else if (type === 'error') {
          return finish(new Error(`the kernel raised ${String(content.ename)}`));
        } else if (type === 'status' && content.execution_state === 'idle') {
          idleMs = ms;
        }
      } else if (channel === 'shell' && type === 'execute_reply') {
        if (content.status !== 'ok') {
          return finish(new Error(`execute_reply status ${String(content.status)}`));
        }
        replied = true;
      }
      if (idleMs !== undefined && replied) {
        finish(
          resultMs === undefined ? new Error(`no execute_result for ${EXPRESSION}`) : undefined
        );
      }
    };
    const timer = setTimeout(
      () => finish(new Error(`an execute took more than ${REQUEST_TIMEOUT_MS} ms`)),
      REQUEST_TIMEOUT_MS
    );
    socket.on('message', onMessage);
    socket.once('close', onClose);
    const start = process.hrtime.bigint();
    socket.send(frame);
  });
}

/** Open a kernel websocket on one route, run `warmup` unrecorded executes, then `count`. */
async function kernelBlock(
  gateway: IGatewayProcess,
  endpoint: IEndpoint,
  kernelId: string,
  warmup: number,
  count: number
): Promise<IRoundTrip[]> {
  const kernel = await openKernelSocket(
    endpoint.wsUrl(`api/kernels/${kernelId}/channels`),
    commonHeaders(gateway)
  );
  try {
    const session = randomUUID();
    for (let i = 0; i < warmup; i++) await executeOnce(kernel, session);
    const trips: IRoundTrip[] = [];
    for (let i = 0; i < count; i++) trips.push(await executeOnce(kernel, session));
    return trips;
  } finally {
    await kernel.close();
  }
}

export async function measureKernel(
  gateway: IGatewayProcess,
  points: Record<Route, IEndpoint>,
  kernelId: string,
  plan: IKernelPlan
): Promise<Record<Route, { result: number[]; idle: number[] }>> {
  const samples: Record<Route, { result: number[]; idle: number[] }> = {
    direct: { result: [], idle: [] },
    gateway: { result: [], idle: [] }
  };
  // The first execute on a new kernel waits for it to be ready: allow it time, unrecorded.
  const first = await openKernelSocket(
    points.gateway.wsUrl(`api/kernels/${kernelId}/channels`),
    commonHeaders(gateway)
  );
  try {
    const answer = await first.execute(EXPRESSION, 60_000);
    if (answer !== '2') throw new Error(`${EXPRESSION} gave ${answer}`);
  } finally {
    await first.close();
  }
  for (const route of ROUTES) await kernelBlock(gateway, points[route], kernelId, plan.warmup, 0);
  for (let block = 0; block < plan.blocks; block++) {
    const order = block % 2 === 0 ? ROUTES : [...ROUTES].reverse();
    for (const route of order) {
      const trips = await kernelBlock(
        gateway,
        points[route],
        kernelId,
        plan.blockWarmup,
        plan.perBlock
      );
      for (const trip of trips) {
        samples[route].result.push(trip.resultMs);
        samples[route].idle.push(trip.idleMs);
      }
    }
  }
  return samples;
}
