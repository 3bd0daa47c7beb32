import { doesIdentityRequireRefresh, memoizeIdentityProvider } from '@smithy/core';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@aws-sdk/types';
import { z } from 'zod';
import type { StoreSettings } from '../settings/storeSettings';
import { ObjectStoreError } from './objectStoreError';

/**
 * An AWS SDK credential provider for a single-user server on JupyterHub: short-lived
 * credentials, scoped to its user's prefixes, from the credential service
 * (`jupyter-store credentials-service`), which it asks with the server's own
 * `JUPYTERHUB_API_TOKEN`.
 *
 * #### Notes
 * The SDK's `memoizeIdentityProvider` keeps the credentials and fetches new ones, once for all
 * concurrent calls, when {@link fromHubCredentialsService.refreshTime} has come: by default at
 * 80% of their lifetime or five minutes before they expire, whichever is first. The provider is
 * marked memoized so that the S3 client does not wrap it once more in its own memo, which would
 * hold the credentials until five minutes before expiry whatever this one says.
 *
 * A refresh that fails while the credentials held are still valid keeps them, and tries again
 * after a few seconds; only when none are left does a call fail, with an `ObjectStoreError`:
 * `access-denied` when the service refuses the token, `unavailable` (which the archive retries)
 * when it cannot be reached or answers otherwise. Credentials are never logged or kept anywhere
 * but in this provider.
 */
export function fromHubCredentialsService(
  options: fromHubCredentialsService.IOptions
): AwsCredentialIdentityProvider {
  const now = options.now ?? Date.now;
  const refreshTimes = new WeakMap<object, number>();
  let held: AwsCredentialIdentity | undefined;
  const fetchCredentials = async (): Promise<AwsCredentialIdentity> => {
    const askedAt = now();
    try {
      const identity = await Private.ask(options);
      const expiresAt = identity.expiration?.getTime() ?? askedAt;
      refreshTimes.set(
        identity,
        fromHubCredentialsService.refreshTime(askedAt, expiresAt, options.refreshBeforeExpiryMs)
      );
      held = identity;
      return identity;
    } catch (error) {
      const expiresAt = held?.expiration?.getTime();
      if (held && expiresAt !== undefined && askedAt < expiresAt - Private.STILL_VALID_MS) {
        refreshTimes.set(held, askedAt + Private.RETRY_AFTER_MS);
        return held;
      }
      throw error;
    }
  };
  const provider = memoizeIdentityProvider(
    fetchCredentials,
    identity => now() >= (refreshTimes.get(identity) ?? 0),
    doesIdentityRequireRefresh
  ) as AwsCredentialIdentityProvider & { memoized?: boolean };
  provider.memoized = true;
  return provider;
}

export namespace fromHubCredentialsService {
  export interface IOptions {
    /** The credential service's URL (`credentials_service_url`); `credentials` is below it. */
    url: string;
    /** The single-user server's `JUPYTERHUB_API_TOKEN`. */
    token: string;
    /**
     * Ask for new credentials this long before the current ones expire; default: at 80% of
     * their lifetime or 5 minutes before expiry, whichever comes first.
     */
    refreshBeforeExpiryMs?: number;
    /** Longest a request to the service may take; default 10 s. */
    timeoutMs?: number;
    /** The clock, in ms since the epoch (tests); default `Date.now`. */
    now?: () => number;
  }

  /**
   * When credentials obtained at `obtainedAt` and expiring at `expiresAt` are replaced: at
   * `refreshBeforeExpiryMs` before expiry when given, else at the earlier of 80% of their
   * lifetime and 5 minutes before expiry; never before they were obtained.
   */
  export function refreshTime(
    obtainedAt: number,
    expiresAt: number,
    refreshBeforeExpiryMs?: number
  ): number {
    const lifetime = Math.max(0, expiresAt - obtainedAt);
    const at =
      refreshBeforeExpiryMs !== undefined
        ? expiresAt - refreshBeforeExpiryMs
        : Math.min(obtainedAt + lifetime * 0.8, expiresAt - Private.DEFAULT_MARGIN_MS);
    return Math.max(obtainedAt, at);
  }
}

/**
 * The provider the settings ask for: the credential service's when `credentials_service_url` is
 * set, else undefined (the static keys or the SDK's default chain).
 *
 * @throws Error when the service is set without `JUPYTERHUB_API_TOKEN` to ask it with, or
 * together with static keys.
 */
export function hubCredentialsFromSettings(
  settings: Pick<StoreSettings, 'credentials_service_url' | 'object_access_key_id'>,
  env: NodeJS.ProcessEnv = process.env
): AwsCredentialIdentityProvider | undefined {
  const url = settings.credentials_service_url;
  if (url === undefined) return undefined;
  if (settings.object_access_key_id !== undefined) {
    throw new Error(
      'credentials_service_url and object_access_key_id are both set: the keys would never be used'
    );
  }
  const token = env.JUPYTERHUB_API_TOKEN;
  if (!token) {
    throw new Error(
      'credentials_service_url is set, but JUPYTERHUB_API_TOKEN (with which the service is ' +
        'asked) is not: it is for the single-user servers of a JupyterHub'
    );
  }
  return fromHubCredentialsService({ url, token });
}

/** The service's answer to `POST credentials` (the credential service's own schema). */
export const HubCredentialsSchema = z.object({
  access_key_id: z.string().min(1),
  secret_access_key: z.string().min(1),
  session_token: z.string().min(1),
  /** ISO 8601. */
  expiration: z.iso.datetime({ offset: true })
});

/** The service's answer to `POST credentials`. */
export type HubCredentials = z.infer<typeof HubCredentialsSchema>;

namespace Private {
  /** The refresh margin of credentials whose lifetime is long enough. */
  export const DEFAULT_MARGIN_MS = 5 * 60_000;

  /** After a failed refresh, the held credentials are used for this long before a new try. */
  export const RETRY_AFTER_MS = 5_000;

  /** Held credentials count as valid (after a failed refresh) until this close to expiry. */
  export const STILL_VALID_MS = 30_000;

  /** One request to the service, its answer checked. */
  export async function ask(
    options: fromHubCredentialsService.IOptions
  ): Promise<AwsCredentialIdentity> {
    const url = new URL('credentials', options.url.endsWith('/') ? options.url : `${options.url}/`);
    const where = `the credential service at ${url.origin}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: { Authorization: `token ${options.token}`, Accept: 'application/json' },
        signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
        redirect: 'error'
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      const timedOut = (error as Error).name === 'TimeoutError';
      throw new ObjectStoreError(
        'unavailable',
        `Could not obtain object store credentials: ${where} ` +
          (timedOut ? 'did not answer in time' : 'could not be reached'),
        timedOut ? 'TimeoutError' : (cause ?? 'CredentialServiceUnreachable')
      );
    }
    const text = await response.text().catch(() => '');
    if (!response.ok) {
      const reason = reasonOf(text);
      const refused = response.status === 401 || response.status === 403;
      throw new ObjectStoreError(
        refused ? 'access-denied' : 'unavailable',
        `Could not obtain object store credentials: ${where} answered ${response.status}` +
          (reason ? ` (${reason})` : ''),
        refused ? 'CredentialServiceRefused' : `CredentialService${response.status}`
      );
    }
    let body: HubCredentials;
    try {
      body = HubCredentialsSchema.parse(JSON.parse(text));
    } catch {
      throw new ObjectStoreError(
        'unavailable',
        `Could not obtain object store credentials: ${where} sent an answer that is not credentials`,
        'CredentialServiceBadAnswer'
      );
    }
    return {
      accessKeyId: body.access_key_id,
      secretAccessKey: body.secret_access_key,
      sessionToken: body.session_token,
      expiration: new Date(body.expiration)
    };
  }

  /**
   * The `reason` of a `{message, reason}` answer, if it is one and reads like a reason (it goes
   * into our message, and the URL could lead to anything).
   */
  export function reasonOf(text: string): string | undefined {
    try {
      const reason = (JSON.parse(text) as { reason?: unknown }).reason;
      return typeof reason === 'string' && /^[\w .-]{1,64}$/.test(reason) ? reason : undefined;
    } catch {
      return undefined;
    }
  }
}
