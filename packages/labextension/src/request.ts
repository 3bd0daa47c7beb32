import {
  endpointUrl,
  ErrorBodySchema,
  SUCCESS_STATUS,
  type EndpointRequest,
  type EndpointResponse,
  type IEndpoint
} from '@jupyter-store/contract';
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { nullTranslator, type TranslationBundle } from '@jupyterlab/translation';
import { TRANSLATION_DOMAIN } from './tokens';

/**
 * A store API call that answered, but not as its endpoint promises: an error status with the
 * gateway's `{"message", "reason"}`, or a body the contract does not accept.
 *
 * #### Notes
 * A `ServerConnection.ResponseError`, as JupyterLab's own service calls raise, so code that
 * handles those handles this one; `message` and `reason` are the server's when it sent them.
 */
export class StoreRequestError extends ServerConnection.ResponseError {
  /**
   * @param response - the answer.
   * @param message - the server's message, or a description of what went wrong.
   * @param reason - the server's `reason`, when it gave one.
   */
  constructor(
    response: Response,
    message: string,
    readonly reason: string | null = null
  ) {
    super(response, message);
    this.name = 'StoreRequestError';
  }

  /** The HTTP status of the answer. */
  get status(): number {
    return this.response.status;
  }
}

/** How long one store API call may take before it counts as failed. */
export const REQUEST_TIMEOUT_MS = 60_000;

/**
 * Call an endpoint of the store API (auth and XSRF as every JupyterLab request) as its
 * descriptor says, and return the body, checked against the endpoint's response schema.
 *
 * @param request - the notebook path, query and body of the call.
 * @param trans - the translation of the messages this function writes itself.
 * @throws ServerConnection.NetworkError when no answer arrived (in time); StoreRequestError on
 *   any status but the endpoint's success, or a body its schema refuses.
 */
export async function requestEndpoint<E extends IEndpoint>(
  settings: ServerConnection.ISettings,
  endpoint: E,
  request: EndpointRequest<E>,
  trans: TranslationBundle = nullTranslator.load(TRANSLATION_DOMAIN)
): Promise<EndpointResponse<E>> {
  const url = URLExt.join(settings.baseUrl, endpointUrl(endpoint, request));
  const body = (request as { body?: unknown }).body;
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), REQUEST_TIMEOUT_MS);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(
      url,
      {
        method: endpoint.method,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: timeout.signal
      },
      settings
    );
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new ServerConnection.NetworkError(
      new TypeError(trans.__('The server could not be reached: %1', detail))
    );
  } finally {
    clearTimeout(timer);
  }
  const text = await response.text();
  let parsedBody: unknown = undefined;
  try {
    parsedBody = text === '' ? undefined : JSON.parse(text);
  } catch {
    // Not JSON: a proxy's HTML error page, say; the status tells the story.
  }
  if (response.status !== SUCCESS_STATUS) {
    const error = ErrorBodySchema.safeParse(parsedBody);
    if (error.success) {
      throw new StoreRequestError(response, error.data.message, error.data.reason);
    }
    throw new StoreRequestError(response, `${response.status} ${response.statusText}`.trim());
  }
  const parsed = endpoint.response.safeParse(parsedBody);
  if (!parsed.success) {
    throw new StoreRequestError(
      response,
      trans.__("The server's answer to %1 does not match the store API contract", url),
      'bad response'
    );
  }
  return parsed.data as EndpointResponse<E>;
}
