/**
 * The benchmarks' HTTP client: one request, sent from a ready body and read to its last byte,
 * timed from the first byte sent to the last byte received; and, on top of it, a contents-API
 * client with one keep-alive connection per server.
 *
 * #### Notes
 * `fetch` (undici) costs more per request than `node:http`, and that client-side overhead would
 * blur the comparison of two fast servers; so the benchmarks use `node:http` directly.
 */
import {
  Agent,
  request,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type RequestOptions
} from 'node:http';

/** A response, fully read. */
export interface IBenchResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** The `Content-Length` the server announced, if any. */
  readonly contentLength: number | undefined;
  /** The body, or `undefined` when it was not kept (`keepBody: false`). */
  readonly body: Buffer | undefined;
  /** The number of body bytes received. */
  readonly bodyBytes: number;
  /** From the start of the request to the last byte of the response, in milliseconds. */
  readonly ms: number;
}

/** One request of {@link sendRequest}. */
export interface IBenchRequest {
  /** How to reach the server: host and port, or a unix socket (`socketPath`). */
  readonly connect: RequestOptions;
  readonly method: string;
  /** The request path with its query. */
  readonly path: string;
  readonly headers: OutgoingHttpHeaders;
  /** The agent whose connections to use (none: a connection of its own). */
  readonly agent?: Agent;
  /** A request that takes longer fails. */
  readonly timeoutMs: number;
  /** The body, already serialised. */
  readonly body?: Buffer;
  /** Keep the response body (default true); large bodies are only counted when false. */
  readonly keepBody?: boolean;
}

/**
 * Send one request and read the whole response.
 *
 * @throws (rejects) on a connection error, or when it takes more than `timeoutMs`.
 */
export function sendRequest(options: IBenchRequest): Promise<IBenchResponse> {
  const { method, path, timeoutMs } = options;
  const keepBody = options.keepBody ?? true;
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const req = request(
      {
        ...options.connect,
        method,
        path,
        headers: options.headers,
        agent: options.agent,
        timeout: timeoutMs
      },
      res => {
        const chunks: Buffer[] = [];
        let bodyBytes = 0;
        res.on('data', (chunk: Buffer) => {
          bodyBytes += chunk.length;
          if (keepBody) chunks.push(chunk);
        });
        res.on('error', reject);
        res.on('end', () => {
          const ms = Number(process.hrtime.bigint() - start) / 1e6;
          const length = res.headers['content-length'];
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            contentLength: length === undefined ? undefined : Number(length),
            body: keepBody ? Buffer.concat(chunks) : undefined,
            bodyBytes,
            ms
          });
        });
      }
    );
    req.on('timeout', () =>
      req.destroy(new Error(`${method} ${path} took more than ${timeoutMs} ms`))
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Options of {@link ContentsClient.send}. */
export interface ISendOptions {
  /** A JSON body, already serialised. */
  readonly body?: Buffer;
  /** Keep the response body (default true); large bodies are only counted when false. */
  readonly keepBody?: boolean;
}

/** One server's contents API as the benchmark sees it. */
export class ContentsClient {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });
  private readonly origin: URL;

  /**
   * @param baseUrl - `http://127.0.0.1:<port>/<base_url>`, ending in `/`.
   * @param headers - headers sent with every request (Jupyter's token).
   * @param timeoutMs - a request that takes longer fails the benchmark.
   */
  constructor(
    baseUrl: string,
    private readonly headers: Record<string, string>,
    private readonly timeoutMs = 180_000
  ) {
    this.origin = new URL(baseUrl);
  }

  /** The request path of an API path below `api/contents`, each segment percent-encoded. */
  contentsPath(apiPath: string, query = ''): string {
    const encoded = apiPath
      .split('/')
      .filter(part => part !== '')
      .map(encodeURIComponent)
      .join('/');
    const path = `${this.origin.pathname}api/contents${encoded === '' ? '' : `/${encoded}`}`;
    return query === '' ? path : `${path}?${query}`;
  }

  /**
   * Send one request and read the whole response.
   *
   * @param method - the HTTP method.
   * @param path - the request path with its query (see {@link contentsPath}).
   * @param options - body and whether to keep the response body.
   */
  send(method: string, path: string, options: ISendOptions = {}): Promise<IBenchResponse> {
    const headers: OutgoingHttpHeaders = { ...this.headers };
    if (options.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = options.body.length;
    }
    return sendRequest({
      connect: { host: this.origin.hostname, port: this.origin.port },
      method,
      path,
      headers,
      agent: this.agent,
      timeoutMs: this.timeoutMs,
      body: options.body,
      keepBody: options.keepBody
    });
  }

  /** Close the keep-alive connection. */
  close(): void {
    this.agent.destroy();
  }
}
