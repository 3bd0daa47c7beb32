import * as http from 'node:http';
import * as path from 'node:path';

/**
 * Where the Jupyter Server behind the gateway listens: a loopback TCP port, or a unix socket that
 * only the gateway's user can open.
 */
export type UpstreamAddress =
  | { readonly kind: 'tcp'; readonly host: string; readonly port: number }
  | { readonly kind: 'unix'; readonly socketPath: string };

/**
 * Parse `--upstream`: `http://HOST:PORT` or `unix:/absolute/path.sock`.
 *
 * #### Notes
 * Only the origin is accepted. The upstream serves the same `base_url` as the gateway (paths are
 * proxied unchanged), so a path here would be a misunderstanding rather than a prefix to strip.
 *
 * @throws Error with a sentence naming what is wrong.
 */
export function parseUpstreamAddress(spec: string): UpstreamAddress {
  if (spec.startsWith('unix:')) {
    const socketPath = spec.slice('unix:'.length);
    if (!path.isAbsolute(socketPath)) {
      throw new Error(`'${spec}' must name an absolute socket path, as in unix:/run/jupyter.sock`);
    }
    return { kind: 'unix', socketPath };
  }
  let url: URL;
  try {
    url = new URL(spec);
  } catch {
    throw new Error(`'${spec}' is neither an http:// URL nor unix:PATH`);
  }
  if (url.protocol !== 'http:') {
    throw new Error(`'${spec}' must use http:// (the upstream is local and unencrypted)`);
  }
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '') {
    throw new Error(
      `'${spec}' must be an origin only (http://HOST:PORT); the upstream's base_url is --base-url`
    );
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return { kind: 'tcp', host, port: url.port === '' ? 80 : Number(url.port) };
}

/** The address as a user reads it in logs: `http://127.0.0.1:8889` or `unix:/path`. */
export function describeUpstream(address: UpstreamAddress): string {
  if (address.kind === 'unix') return `unix:${address.socketPath}`;
  const host = address.host.includes(':') ? `[${address.host}]` : address.host;
  return `http://${host}:${address.port}`;
}

/** The part of `http.request` options that reaches this address. */
export function upstreamConnectOptions(address: UpstreamAddress): http.RequestOptions {
  return address.kind === 'unix'
    ? { socketPath: address.socketPath }
    : { host: address.host, port: address.port };
}

/** A small upstream response read whole: for the gateway's own sub-requests, never for proxying. */
export interface IUpstreamResponse {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

/**
 * Make one request to the upstream and read its (small) answer.
 *
 * #### Notes
 * Bounded in time and in size, because it runs on the request path of the gateway's own routes:
 * a hung or chatty upstream must turn into an error, not a stuck request.
 */
export function requestUpstream(
  address: UpstreamAddress,
  options: {
    method?: string;
    path: string;
    headers?: http.OutgoingHttpHeaders;
    timeoutMs?: number;
    maxBytes?: number;
    agent?: http.Agent;
    /** A small request body, sent whole. */
    body?: string | Buffer;
  }
): Promise<IUpstreamResponse> {
  const maxBytes = options.maxBytes ?? 1024 * 1024;
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        ...upstreamConnectOptions(address),
        method: options.method ?? 'GET',
        path: options.path,
        headers: options.headers,
        agent: options.agent,
        timeout: options.timeoutMs ?? 10_000
      },
      response => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) {
            request.destroy(new Error(`the upstream's answer exceeded ${maxBytes} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks)
          })
        );
        response.on('error', reject);
      }
    );
    request.on('timeout', () => request.destroy(new Error('the upstream did not answer in time')));
    request.on('error', reject);
    request.end(options.body);
  });
}
