import { AssumeRoleCommand, STSClient, type STSClientConfig } from '@aws-sdk/client-sts';
import * as http from 'node:http';
import type * as net from 'node:net';
import { HttpError } from '../errors';
import type { Logger } from '../gateway/logger';
import { httpErrors, unhandledError } from '../http/errorCatalogue';
import type { StoreSettings } from '../settings/storeSettings';
import type { HubCredentials } from '../storage/hubCredentials';
import { checkPolicySettings, PolicyError, roleSessionName, sessionPolicy } from './policy';

/**
 * The JupyterHub service that gives each single-user server short-lived S3 credentials scoped
 * to its own user's prefixes: the one place where the long-lived credentials live.
 *
 * #### Notes
 * `POST {prefix}credentials` with `Authorization: token <JUPYTERHUB_API_TOKEN of a server>`:
 * the Hub says whose token it is (`GET {hub api}/user` with that token, which every token may
 * ask about itself), only a server's token is accepted (its scopes hold
 * `access:servers!server=<user>/…`, which a user's own tokens have as `!user=`), and STS
 * `AssumeRole` mints credentials whose session policy is {@link sessionPolicy} of that user.
 * The answer is `{access_key_id, secret_access_key, session_token, expiration}`, never cached
 * (`Cache-Control: no-store`). Refusals are `{message, reason}` (see the error catalogue).
 * Logs name the user, never a token or a key.
 */
export class CredentialService {
  constructor(options: CredentialService.IOptions) {
    const { settings } = options;
    checkPolicySettings({
      bucket: settings.object_bucket,
      workspaceTemplate: settings.workspace_prefix,
      namedPrefix: settings.named_prefix,
      publishedPrefix: settings.published_prefix
    });
    this._settings = settings;
    this._roleArn = roleArnOf(settings);
    this._hubApiUrl = options.hubApiUrl.replace(/\/+$/, '');
    this._prefix = Private.normalizePrefix(options.servicePrefix ?? '/');
    this._log = options.log;
    this._sts = options.sts ?? new STSClient(stsConfigOf(settings));
    this.server = http.createServer((request, response) => {
      void this._handle(request, response);
    });
  }

  /** The HTTP server; listen with {@link listen}. */
  readonly server: http.Server;

  /** Listen on `port` of `host`; resolves with the port (0 picks a free one). */
  listen(port: number, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve((this.server.address() as net.AddressInfo).port);
      });
    });
  }

  /** Stop listening and close the STS client. */
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>(resolve => this.server.close(() => resolve()));
    this._sts.destroy();
  }

  private async _handle(request: http.IncomingMessage, response: http.ServerResponse) {
    const startedAt = process.hrtime.bigint();
    // The body is never read: nothing in it is used.
    request.resume();
    let status = 200;
    let user: string | undefined;
    try {
      const path = new URL(request.url ?? '/', 'http://service').pathname;
      if (path !== '/credentials' && path !== `${this._prefix}credentials`) {
        throw httpErrors.noSuchRoute(`No route ${path} in the credential service`);
      }
      if (request.method !== 'POST') {
        response.setHeader('Allow', 'POST');
        throw httpErrors.methodNotAllowed(`${request.method} is not allowed here; use POST`);
      }
      const token = Private.tokenOf(request.headers.authorization);
      user = await this._serverUser(token);
      const credentials = await this._mint(user);
      Private.send(response, 200, credentials);
      this._log.info({ user, expiration: credentials.expiration }, 'credentials issued');
    } catch (error) {
      const answer = error instanceof HttpError ? error : Private.unexpected(error, this._log);
      status = answer.status;
      Private.send(response, status, { message: answer.message, reason: answer.reason });
    }
    const entry = {
      method: request.method,
      path: new URL(request.url ?? '/', 'http://service').pathname,
      status,
      user,
      ms: Number(process.hrtime.bigint() - startedAt) / 1e6
    };
    if (status >= 500) this._log.error(entry, 'request failed');
    else if (status >= 400) this._log.warn(entry, 'request refused');
    else this._log.debug(entry, 'request');
  }

  /**
   * The name of the user whose single-user server `token` belongs to.
   *
   * @throws HttpError 403 `not authenticated` for a token the Hub does not know, 403 `not a
   * server token` for any other token, 503 `hub unavailable` when the Hub cannot be asked.
   */
  private async _serverUser(token: string): Promise<string> {
    let response: Response;
    try {
      response = await fetch(`${this._hubApiUrl}/user`, {
        headers: { Authorization: `token ${token}`, Accept: 'application/json' },
        signal: AbortSignal.timeout(Private.HUB_TIMEOUT_MS),
        redirect: 'error'
      });
    } catch (error) {
      this._log.error({ err: (error as Error).message }, 'cannot reach the Hub API');
      throw httpErrors.hubUnavailable('The Hub could not be asked who the token belongs to');
    }
    const text = await response.text().catch(() => '');
    if (response.status === 401 || response.status === 403) {
      throw httpErrors.notAuthenticated('The Hub does not know this token');
    }
    if (!response.ok) {
      this._log.error({ status: response.status }, 'the Hub API answered with an error');
      throw httpErrors.hubUnavailable(`The Hub answered ${response.status}`);
    }
    let model: Private.IHubIdentity;
    try {
      model = JSON.parse(text) as Private.IHubIdentity;
    } catch {
      throw httpErrors.hubUnavailable('The Hub answered with something other than JSON');
    }
    const name = model?.name;
    if (model?.kind !== 'user' || typeof name !== 'string' || !Private.isServerToken(model, name)) {
      throw httpErrors.notAServerToken(
        "Credentials are only for single-user servers: use the server's JUPYTERHUB_API_TOKEN"
      );
    }
    return name;
  }

  /** New credentials for `user` (policy, STS). */
  private async _mint(user: string): Promise<HubCredentials> {
    let policy: sessionPolicy.IPolicy;
    try {
      policy = sessionPolicy({
        bucket: this._settings.object_bucket,
        username: user,
        workspaceTemplate: this._settings.workspace_prefix,
        namedPrefix: this._settings.named_prefix,
        publishedPrefix: this._settings.published_prefix,
        allowPublish: this._settings.credentials_allow_publish
      });
    } catch (error) {
      if (error instanceof PolicyError) throw httpErrors.userNameRefused(error.message);
      throw error;
    }
    let output;
    try {
      output = await this._sts.send(
        new AssumeRoleCommand({
          RoleArn: this._roleArn,
          RoleSessionName: roleSessionName(user),
          DurationSeconds: this._settings.credentials_duration_seconds,
          Policy: JSON.stringify(policy)
        })
      );
    } catch (error) {
      // The code and status only: a message can quote the access key id.
      const { name, $metadata } = error as {
        name?: string;
        $metadata?: { httpStatusCode?: number };
      };
      this._log.error({ user, code: name, status: $metadata?.httpStatusCode }, 'AssumeRole failed');
      throw httpErrors.credentialsUnavailable(
        `The object store did not issue credentials (${name ?? 'error'})`
      );
    }
    const issued = output.Credentials;
    if (
      !issued?.AccessKeyId ||
      !issued.SecretAccessKey ||
      !issued.SessionToken ||
      !issued.Expiration
    ) {
      throw httpErrors.credentialsUnavailable(
        'The object store answered AssumeRole without credentials'
      );
    }
    return {
      access_key_id: issued.AccessKeyId,
      secret_access_key: issued.SecretAccessKey,
      session_token: issued.SessionToken,
      expiration: issued.Expiration.toISOString()
    };
  }

  private readonly _settings: StoreSettings;
  private readonly _roleArn: string;
  private readonly _hubApiUrl: string;
  private readonly _prefix: string;
  private readonly _log: Logger;
  private readonly _sts: STSClient;
}

export namespace CredentialService {
  export interface IOptions {
    /**
     * The settings, with `workspace_prefix` still a template (`keepWorkspaceTemplate`): the
     * bucket, the prefixes, the endpoint and long-lived keys, `credentials_*`.
     */
    settings: StoreSettings;
    /** The Hub's API (`JUPYTERHUB_API_URL`, e.g. `http://127.0.0.1:8081/hub/api`). */
    hubApiUrl: string;
    /** The service's prefix behind the Hub's proxy (`JUPYTERHUB_SERVICE_PREFIX`); default `/`. */
    servicePrefix?: string;
    log: Logger;
    /** The STS client (tests); default one built from the settings. */
    sts?: STSClient;
  }
}

/**
 * The role to assume: `credentials_role_arn`; with an S3-compatible endpoint (MinIO, which
 * ignores it) a placeholder when unset.
 *
 * @throws PolicyError `settings` when AWS would need it and it is unset.
 */
export function roleArnOf(
  settings: Pick<StoreSettings, 'credentials_role_arn' | 'object_endpoint_url'>
): string {
  if (settings.credentials_role_arn !== '') return settings.credentials_role_arn;
  if (settings.object_endpoint_url === undefined) {
    throw new PolicyError('settings', 'credentials_role_arn must name the role to assume on AWS');
  }
  return 'arn:aws:iam::000000000000:role/jupyter-store';
}

/** The STS client's configuration: the object store's endpoint, region and long-lived keys. */
export function stsConfigOf(settings: StoreSettings): STSClientConfig {
  const config: STSClientConfig = { region: settings.object_region_name, maxAttempts: 3 };
  if (settings.object_endpoint_url !== undefined) config.endpoint = settings.object_endpoint_url;
  if (
    settings.object_access_key_id !== undefined &&
    settings.object_secret_access_key !== undefined
  ) {
    config.credentials = {
      accessKeyId: settings.object_access_key_id,
      secretAccessKey: settings.object_secret_access_key
    };
  }
  return config;
}

namespace Private {
  /** What `GET {hub api}/user` answers (the fields read). */
  export interface IHubIdentity {
    kind?: string;
    name?: unknown;
    scopes?: unknown;
  }

  /** How long the Hub may take to say whose a token is. */
  export const HUB_TIMEOUT_MS = 10_000;

  /**
   * Whether the token's scopes are a single-user server's: `access:servers!server=<name>/…`
   * (the `server` role's scopes, for the server's own user).
   */
  export function isServerToken(model: IHubIdentity, name: string): boolean {
    const scopes = Array.isArray(model.scopes) ? model.scopes : [];
    return scopes.some(
      scope => typeof scope === 'string' && scope.startsWith(`access:servers!server=${name}/`)
    );
  }

  /** The token of `Authorization: token …` (or `Bearer …`). */
  export function tokenOf(header: string | undefined): string {
    const match = /^(?:token|bearer)\s+(\S+)\s*$/i.exec(header ?? '');
    if (!match) {
      throw httpErrors.notAuthenticated(
        "Send the single-user server's JUPYTERHUB_API_TOKEN as Authorization: token …"
      );
    }
    return match[1];
  }

  /** `/services/name/` from whatever JupyterHub gave: a leading and a trailing slash. */
  export function normalizePrefix(prefix: string): string {
    const trimmed = prefix.replace(/^\/+|\/+$/g, '');
    return trimmed === '' ? '/' : `/${trimmed}/`;
  }

  /** A JSON answer that no one may cache. */
  export function send(response: http.ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    response.writeHead(status, {
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(text),
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff'
    });
    response.end(text);
  }

  /** A 500 that says nothing; the error goes to the log. */
  export function unexpected(error: unknown, log: Logger): HttpError {
    log.error({ err: (error as Error)?.message }, 'unexpected error');
    return unhandledError();
  }
}
