/**
 * A lean HTTP/1.1 client for the contents benchmark: one keep-alive connection per server,
 * bodies sent from ready buffers, responses timed until their last byte.
 *
 * #### Notes
 * `fetch` (undici) costs more per request than `node:http`, and that client-side overhead would
 * blur the comparison of two fast servers; so the benchmark uses `node:http` directly.
 */
import { Agent, request, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';

/** A response, fully read. */
export interface IBenchResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** The body, or `undefined` when it was not kept (`keepBody: false`). */
  readonly body: Buffer | undefined;
  /** The number of body bytes received. */
  readonly bodyBytes: number;
  /** From the start of the request to the last byte of the response, in milliseconds. */
  readonly ms: number;
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
    const keepBody = options.keepBody ?? true;
    return new Promise((resolve, reject) => {
      const start = process.hrtime.bigint();
      const req = request(
        {
          host: this.origin.hostname,
          port: this.origin.port,
          method,
          path,
          headers,
          agent: this.agent,
          timeout: this.timeoutMs
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
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: keepBody ? Buffer.concat(chunks) : undefined,
              bodyBytes,
              ms
            });
          });
        }
      );
      req.on('timeout', () =>
        req.destroy(new Error(`${method} ${path} took more than ${this.timeoutMs} ms`))
      );
      req.on('error', reject);
      req.end(options.body);
    });
  }

  /** Close the keep-alive connection. */
  close(): void {
    this.agent.destroy();
  }
}
