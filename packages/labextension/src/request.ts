import { ErrorBodySchema } from '@jupyter-store/contract';
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { nullTranslator, type TranslationBundle } from '@jupyterlab/translation';
import { TRANSLATION_DOMAIN } from './tokens';

/** Something that validates a response body: the contract's zod schemas. */
export interface IResponseSchema<T> {
  safeParse(value: unknown): { success: true; data: T } | { success: false; error: unknown };
}

/**
 * A store API call that did not answer as expected: a network failure (`status` 0), an error
 * status with the gateway's `{"message", "reason"}`, or a body the contract does not accept.
 */
export class StoreRequestError extends Error {
  /**
   * @param status - the HTTP status, or 0 when no answer arrived.
   * @param message - the server's message, or a description of what went wrong.
   * @param reason - the server's `reason`, when it gave one.
   */
  constructor(
    readonly status: number,
    message: string,
    readonly reason: string | null = null
  ) {
    super(message);
    this.name = 'StoreRequestError';
  }
}

/** How long one store API call may take before it counts as failed. */
export const REQUEST_TIMEOUT_MS = 60_000;

/**
 * Call `{base}api/store/<endpoint>` (auth and XSRF as every JupyterLab request) and return the
 * body, checked against `schema`.
 *
 * @param endpoint - below `api/store`, already URL-encoded; '' for feature detection itself.
 * @param expectedStatus - the one status that means success.
 * @param trans - the translation of the messages this function writes itself.
 * @throws StoreRequestError on a network failure, any other status, or a body the schema refuses.
 */
export async function requestStoreApi<T>(
  settings: ServerConnection.ISettings,
  endpoint: string,
  init: RequestInit,
  schema: IResponseSchema<T>,
  expectedStatus = 200,
  trans: TranslationBundle = nullTranslator.load(TRANSLATION_DOMAIN)
): Promise<T> {
  const url =
    endpoint === ''
      ? URLExt.join(settings.baseUrl, 'api/store')
      : URLExt.join(settings.baseUrl, 'api/store', endpoint);
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), REQUEST_TIMEOUT_MS);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(
      url,
      { ...init, signal: timeout.signal },
      settings
    );
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new StoreRequestError(0, trans.__('The server could not be reached: %1', detail));
  } finally {
    clearTimeout(timer);
  }
  const text = await response.text();
  let body: unknown = undefined;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    // Not JSON: a proxy's HTML error page, say; the status tells the story.
  }
  if (response.status !== expectedStatus) {
    const error = ErrorBodySchema.safeParse(body);
    if (error.success) {
      throw new StoreRequestError(response.status, error.data.message, error.data.reason);
    }
    throw new StoreRequestError(
      response.status,
      `${response.status} ${response.statusText}`.trim(),
      null
    );
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new StoreRequestError(
      response.status,
      trans.__("The server's answer to %1 does not match the store API contract", url),
      'bad response'
    );
  }
  return parsed.data;
}
