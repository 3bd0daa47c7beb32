import { randomBytes } from 'node:crypto';
import {
  endpointUrl,
  ErrorBodySchema,
  SUCCESS_STATUS,
  type EndpointRequest,
  type EndpointResponse,
  type IEndpoint
} from '@jupyter-store/contract';
import { NetworkError, StoreError } from './errors';

export { encodeApiPath } from '@jupyter-store/contract';

/**
 * One server's HTTP API, authenticated as Jupyter's own clients are: the token in an
 * `Authorization` header and, for writes, an XSRF token sent both as the `_xsrf` cookie and the
 * `X-XSRFToken` header.
 *
 * #### Notes
 * Token-authenticated requests skip Jupyter's XSRF check, but a server without a token checks it
 * on every write. The check compares the header with the cookie (double submit), so a client
 * that is not a browser passes it by sending one value in both; a browser on another site cannot
 * set that cookie, which is what the check guards against.
 */
export class StoreConnection {
  constructor(options: StoreConnection.IOptions) {
    this.baseUrl = options.url.endsWith('/') ? options.url : `${options.url}/`;
    this._token = options.token;
    this._fetch = options.fetch ?? fetch;
    this.timeoutMs = options.timeoutMs ?? StoreConnection.DEFAULT_TIMEOUT_MS;
  }

  /** The server's URL with its base URL, ending in `/`. */
  readonly baseUrl: string;

  /** How long one request may take, in milliseconds. */
  readonly timeoutMs: number;

  /**
   * Call an endpoint of the store API as its descriptor says: its method and path, the query and
   * body given, and its one success status and response schema.
   *
   * @throws StoreError for any other status or an answer the schema refuses; NetworkError when
   *   the server does not answer in time.
   */
  call<E extends IEndpoint>(
    endpoint: E,
    request: EndpointRequest<E>
  ): Promise<EndpointResponse<E>> {
    return this.request(endpoint.method, endpointUrl(endpoint, request), {
      body: (request as { body?: unknown }).body,
      expect: SUCCESS_STATUS,
      schema: endpoint.response as StoreConnection.IRequestOptions<EndpointResponse<E>>['schema']
    });
  }

  /**
   * Send a request and return its parsed JSON body.
   *
   * @param method - the HTTP method.
   * @param relative - the path below the base URL, already percent-encoded (see
   *   {@link encodeApiPath}), optionally with a query.
   * @param options - the JSON body, the one status that counts as success, and the schema the
   *   answer must match.
   * @throws StoreError for any other status (with the server's message and reason) or an answer
   *   that does not match the schema; NetworkError when the server does not answer in time.
   */
  async request<T>(
    method: string,
    relative: string,
    options: StoreConnection.IRequestOptions<T>
  ): Promise<T> {
    const url = new URL(relative, this.baseUrl).toString();
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (this._token) headers.Authorization = `token ${this._token}`;
    if (!['GET', 'HEAD', 'OPTIONS'].includes(method)) {
      this._xsrf ??= randomBytes(16).toString('hex');
      headers.Cookie = `_xsrf=${this._xsrf}`;
      headers['X-XSRFToken'] = this._xsrf;
    }
    if (options.body !== undefined) headers['Content-Type'] = 'application/json';
    let response: Response;
    let text: string;
    try {
      response = await this._fetch(url, {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        redirect: 'manual',
        signal: AbortSignal.timeout(this.timeoutMs)
      });
      text = await response.text();
    } catch (error) {
      throw Private.networkError(error, method, url, this.timeoutMs);
    }
    if (response.status !== options.expect) {
      throw Private.statusError(response, text, url);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new StoreError(
        response.status,
        `${method} ${url} answered ${response.status} without a JSON body`,
        'invalid response',
        url
      );
    }
    const parsed = options.schema.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.map(String).join('.') || 'body';
      throw new StoreError(
        response.status,
        `${method} ${url} answered with an unexpected body (${where}: ${issue?.message}); ` +
          'is this a jupyter-store server of the same release?',
        'invalid response',
        url
      );
    }
    return parsed.data;
  }

  private readonly _token: string;
  private readonly _fetch: typeof fetch;
  private _xsrf: string | undefined;
}

export namespace StoreConnection {
  /** Where the server is and how to authenticate. */
  export interface IOptions {
    /** The server's URL including its base URL (a record's `url`). */
    url: string;
    /** The server's token; empty for a server without one. */
    token: string;
    /** The fetch to use; default the global one. */
    fetch?: typeof fetch;
    /** How long one request may take; default {@link DEFAULT_TIMEOUT_MS}. */
    timeoutMs?: number;
  }

  /** A request's body and what counts as its answer. */
  export interface IRequestOptions<T> {
    /** Sent as JSON when given. */
    body?: unknown;
    /** The one status that means success. */
    expect: number;
    /** The schema the JSON answer must match. */
    schema: {
      safeParse(
        value: unknown
      ):
        | { success: true; data: T }
        | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } };
    };
  }

  /** Two minutes: a publish uploads a whole notebook to object storage. */
  export const DEFAULT_TIMEOUT_MS = 120_000;
}

namespace Private {
  /** A status error with the server's `{"message", "reason"}` when the body has them. */
  export function statusError(response: Response, text: string, url: string): StoreError {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const parsed = ErrorBodySchema.safeParse(body);
    if (parsed.success) {
      return new StoreError(response.status, parsed.data.message, parsed.data.reason, url);
    }
    const reason =
      typeof body === 'object' &&
      body !== null &&
      typeof (body as { reason?: unknown }).reason === 'string'
        ? (body as { reason: string }).reason
        : null;
    const location = response.headers.get('location');
    const detail =
      response.status >= 300 && response.status < 400 && location
        ? ` (a redirect to ${location}: the server may want a login instead of a token)`
        : '';
    return new StoreError(
      response.status,
      `${url} answered ${response.status} ${response.statusText}${detail}`.trim(),
      reason,
      url
    );
  }

  /** Why no answer came, in words. */
  export function networkError(
    error: unknown,
    method: string,
    url: string,
    timeoutMs: number
  ): NetworkError {
    const name = (error as Error | undefined)?.name;
    if (name === 'TimeoutError' || name === 'AbortError') {
      return new NetworkError(`${method} ${url} got no answer within ${timeoutMs / 1000} s`, url, {
        cause: error
      });
    }
    const cause = (error as { cause?: { code?: string; message?: string } } | undefined)?.cause;
    const detail = cause?.code ?? cause?.message ?? (error as Error | undefined)?.message;
    return new NetworkError(
      `Cannot reach the server at ${url}${detail ? ` (${detail})` : ''}; is it still running?`,
      url,
      { cause: error }
    );
  }
}
