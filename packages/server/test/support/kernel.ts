/**
 * Talk to a Jupyter kernel over its websocket the way JupyterLab does: the
 * `v1.kernel.websocket.jupyter.org` subprotocol, whose frames are binary (a count, little-endian
 * 64-bit offsets, then the channel name and the JSON parts).
 */
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';

export const KERNEL_SUBPROTOCOL = 'v1.kernel.websocket.jupyter.org';

/** Encode a message for the v1 subprotocol. */
export function encodeV1(channel: string, parts: readonly unknown[]): Buffer {
  const chunks = [Buffer.from(channel, 'utf8'), ...parts.map(p => Buffer.from(JSON.stringify(p)))];
  const offsets: number[] = [8 * (1 + chunks.length + 1)];
  for (const chunk of chunks) offsets.push(offsets[offsets.length - 1] + chunk.length);
  const head = Buffer.alloc(8 * (1 + offsets.length));
  head.writeBigUInt64LE(BigInt(offsets.length), 0);
  offsets.forEach((offset, i) => head.writeBigUInt64LE(BigInt(offset), 8 * (i + 1)));
  return Buffer.concat([head, ...chunks]);
}

/** Decode a v1 frame into its channel and parsed JSON parts (header, parent, metadata, content). */
export function decodeV1(frame: Buffer): { channel: string; parts: unknown[] } {
  const count = Number(frame.readBigUInt64LE(0));
  const offsets = Array.from({ length: count }, (_, i) =>
    Number(frame.readBigUInt64LE(8 * (i + 1)))
  );
  const channel = frame.subarray(offsets[0], offsets[1]).toString('utf8');
  const parts: unknown[] = [];
  for (let i = 1; i < count - 1; i++) {
    const slice = frame.subarray(offsets[i], offsets[i + 1]);
    parts.push(i <= 4 ? JSON.parse(slice.toString('utf8')) : slice);
  }
  return { channel, parts };
}

/** An open kernel websocket with a helper that runs code and returns its `text/plain` result. */
export interface IKernelSocket {
  readonly socket: WebSocket;
  /** The subprotocol the server accepted. */
  readonly protocol: string;
  execute(code: string, timeoutMs?: number): Promise<string>;
  close(): Promise<void>;
}

/**
 * Open `api/kernels/<id>/channels` at `wsUrl` (a `ws://…` URL including base URL and any token
 * query) with the v1 subprotocol.
 */
export async function openKernelSocket(
  wsUrl: string,
  headers: Record<string, string> = {}
): Promise<IKernelSocket> {
  const socket = new WebSocket(wsUrl, [KERNEL_SUBPROTOCOL], { headers });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
    socket.once('unexpected-response', (_request, response) =>
      reject(new Error(`websocket refused with HTTP ${response.statusCode}`))
    );
  });
  const session = randomUUID();
  return {
    socket,
    protocol: socket.protocol,
    execute: (code, timeoutMs = 30_000) =>
      new Promise<string>((resolve, reject) => {
        const msgId = randomUUID();
        const timer = setTimeout(() => {
          socket.off('message', onMessage);
          reject(new Error(`no execute_result for ${JSON.stringify(code)} in ${timeoutMs} ms`));
        }, timeoutMs);
        const onMessage = (data: Buffer, isBinary: boolean): void => {
          if (!isBinary) return;
          const { channel, parts } = decodeV1(data);
          const header = parts[0] as { msg_type: string };
          const parent = parts[1] as { msg_id?: string };
          if (channel !== 'iopub' || parent.msg_id !== msgId) return;
          const content = parts[3] as { data?: Record<string, string>; ename?: string };
          if (header.msg_type === 'execute_result') {
            clearTimeout(timer);
            socket.off('message', onMessage);
            resolve(content.data?.['text/plain'] ?? '');
          } else if (header.msg_type === 'error') {
            clearTimeout(timer);
            socket.off('message', onMessage);
            reject(new Error(`kernel error ${content.ename}`));
          }
        };
        socket.on('message', onMessage);
        socket.send(executeRequest(code, msgId, session));
      }),
    close: () =>
      new Promise<void>(resolve => {
        if (socket.readyState === WebSocket.CLOSED) return resolve();
        socket.once('close', () => resolve());
        socket.close();
      })
  };
}

/** A v1-protocol `execute_request` frame for the shell channel, with the given message id. */
export function executeRequest(code: string, msgId: string, session: string): Buffer {
  const header = {
    msg_id: msgId,
    msg_type: 'execute_request',
    username: 'test',
    session,
    date: new Date().toISOString(),
    version: '5.3'
  };
  const content = {
    code,
    silent: false,
    store_history: false,
    user_expressions: {},
    allow_stdin: false,
    stop_on_error: true
  };
  return encodeV1('shell', [header, {}, {}, content]);
}

/** What {@link withKernel} needs of a server: its URLs and token. */
export interface IKernelHost {
  /** The URL of a path below the server's base URL. */
  url(relative: string): string;
  readonly token: string;
}

/**
 * Start a kernel through the server's REST API, open its websocket, use it, and shut it down.
 *
 * @throws when the server does not start the kernel (anything but 201).
 */
export async function withKernel<T>(
  host: IKernelHost,
  use: (kernel: IKernelSocket) => Promise<T>
): Promise<T> {
  const auth = { Authorization: `token ${host.token}` };
  const started = await fetch(host.url('api/kernels'), {
    method: 'POST',
    headers: { ...auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'python3' })
  });
  if (started.status !== 201) throw new Error(`POST api/kernels answered ${started.status}`);
  const { id } = (await started.json()) as { id: string };
  const wsUrl = host.url(`api/kernels/${id}/channels?session_id=test`).replace(/^http/, 'ws');
  const kernel = await openKernelSocket(wsUrl, auth);
  try {
    return await use(kernel);
  } finally {
    await kernel.close();
    await fetch(host.url(`api/kernels/${id}`), { method: 'DELETE', headers: auth });
  }
}
