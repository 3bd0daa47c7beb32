import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  fromHubCredentialsService,
  hubCredentialsFromSettings
} from '../../src/storage/hubCredentials';
import { ObjectStoreError } from '../../src/storage/objectStoreError';

const MINUTE = 60_000;
const T0 = Date.parse('2030-01-01T00:00:00Z');

/**
 * A loopback stand-in for the credential service: each answer is what `reply` says, and every
 * request is recorded.
 */
class FakeService {
  requests: { method?: string; url?: string; authorization?: string }[] = [];
  /** Lifetime of the next credentials, from the fake clock. */
  lifetimeMs = 60 * MINUTE;
  /** The clock the answers' expirations are computed from. */
  clock = T0;
  /** Set to answer with an error status and body instead. */
  failure: { status: number; body: string } | undefined;
  url = '';

  async start(): Promise<void> {
    this._server = http.createServer((request, response) => {
      this.requests.push({
        method: request.method,
        url: request.url,
        authorization: request.headers.authorization
      });
      if (this.failure) {
        response.writeHead(this.failure.status, { 'Content-Type': 'application/json' });
        response.end(this.failure.body);
        return;
      }
      const serial = this.requests.length;
      response.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
      response.end(
        JSON.stringify({
          access_key_id: `AKIA${serial}`,
          secret_access_key: `secret${serial}`,
          session_token: `session${serial}`,
          expiration: new Date(this.clock + this.lifetimeMs).toISOString()
        })
      );
    });
    await new Promise<void>(resolve => this._server?.listen(0, '127.0.0.1', resolve));
    const { port } = this._server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}/services/credentials/`;
  }

  async stop(): Promise<void> {
    this._server?.closeAllConnections();
    await new Promise<void>(resolve =>
      this._server ? this._server.close(() => resolve()) : resolve()
    );
  }

  private _server: http.Server | undefined;
}

describe('fromHubCredentialsService', () => {
  let service: FakeService;

  beforeEach(async () => {
    service = new FakeService();
    await service.start();
  });

  afterEach(async () => {
    await service.stop();
  });

  /** A provider on the fake clock of the service. */
  function provider(options: Partial<fromHubCredentialsService.IOptions> = {}) {
    return fromHubCredentialsService({
      url: service.url,
      token: 'server-token',
      now: () => service.clock,
      ...options
    });
  }

  it("posts to the service's credentials with the server's token", async () => {
    const identity = await provider()();
    expect(service.requests).toEqual([
      {
        method: 'POST',
        url: '/services/credentials/credentials',
        authorization: 'token server-token'
      }
    ]);
    expect(identity).toEqual({
      accessKeyId: 'AKIA1',
      secretAccessKey: 'secret1',
      sessionToken: 'session1',
      expiration: new Date(T0 + 60 * MINUTE)
    });
  });

  it('asks once for concurrent calls, and keeps the credentials while they are fresh', async () => {
    const credentials = provider();
    const first = await Promise.all([credentials(), credentials(), credentials()]);
    expect(new Set(first.map(identity => identity.accessKeyId))).toEqual(new Set(['AKIA1']));
    service.clock = T0 + 30 * MINUTE;
    expect((await credentials()).accessKeyId).toBe('AKIA1');
    expect(service.requests).toHaveLength(1);
  });

  it('refreshes an hour-long credential at 80% of its lifetime', async () => {
    const credentials = provider();
    await credentials();
    service.clock = T0 + 48 * MINUTE - 1;
    expect((await credentials()).accessKeyId).toBe('AKIA1');
    service.clock = T0 + 48 * MINUTE;
    expect((await credentials()).accessKeyId).toBe('AKIA2');
    expect(service.requests).toHaveLength(2);
  });

  it('refreshes a 15-minute credential 5 minutes before it expires', async () => {
    service.lifetimeMs = 15 * MINUTE;
    const credentials = provider();
    await credentials();
    service.clock = T0 + 10 * MINUTE - 1;
    expect((await credentials()).accessKeyId).toBe('AKIA1');
    service.clock = T0 + 10 * MINUTE;
    expect((await credentials()).accessKeyId).toBe('AKIA2');
  });

  it('follows a refresh margin when given one', async () => {
    const credentials = provider({ refreshBeforeExpiryMs: 59 * MINUTE });
    await credentials();
    service.clock = T0 + MINUTE - 1;
    expect((await credentials()).accessKeyId).toBe('AKIA1');
    service.clock = T0 + MINUTE;
    expect((await credentials()).accessKeyId).toBe('AKIA2');
  });

  it('is marked memoized, so that the S3 client does not hold the credentials longer', () => {
    expect((provider() as { memoized?: boolean }).memoized).toBe(true);
  });

  it('keeps valid credentials when a refresh fails, and tries again a few seconds later', async () => {
    const credentials = provider();
    await credentials();
    service.clock = T0 + 50 * MINUTE;
    service.failure = { status: 503, body: '{"message":"down","reason":"hub unavailable"}' };
    expect((await credentials()).accessKeyId).toBe('AKIA1');
    expect(service.requests).toHaveLength(2);
    service.clock += 1000;
    expect((await credentials()).accessKeyId).toBe('AKIA1');
    expect(service.requests).toHaveLength(2);
    service.clock += 5000;
    service.failure = undefined;
    expect((await credentials()).accessKeyId).toBe('AKIA3');
  });

  it('fails once the credentials held are about to expire and no new ones come', async () => {
    const credentials = provider();
    await credentials();
    service.clock = T0 + 60 * MINUTE - 10_000;
    service.failure = { status: 503, body: '' };
    await expect(credentials()).rejects.toMatchObject({ kind: 'unavailable' });
  });

  it('is access-denied when the service refuses the token, with its reason', async () => {
    service.failure = {
      status: 403,
      body: JSON.stringify({ message: 'no', reason: 'not a server token' })
    };
    const error = await provider()().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ObjectStoreError);
    expect(error).toMatchObject({ kind: 'access-denied', code: 'CredentialServiceRefused' });
    expect((error as Error).message).toContain('403 (not a server token)');
    expect((error as Error).message).not.toContain('server-token');
  });

  it('is unavailable (and so retried) when the service fails', async () => {
    service.failure = { status: 500, body: 'oops' };
    await expect(provider()()).rejects.toMatchObject({
      kind: 'unavailable',
      code: 'CredentialService500'
    });
  });

  it('is unavailable when the service answers something other than credentials', async () => {
    service.failure = { status: 200, body: '{"access_key_id":"x"}' };
    await expect(provider()()).rejects.toMatchObject({
      kind: 'unavailable',
      code: 'CredentialServiceBadAnswer'
    });
  });

  it('is unavailable when the service cannot be reached', async () => {
    const url = service.url;
    await service.stop();
    const error = await fromHubCredentialsService({ url, token: 't' })().catch(
      (caught: unknown) => caught
    );
    expect(error).toMatchObject({ kind: 'unavailable', code: 'ECONNREFUSED' });
    expect((error as Error).message).toContain('could not be reached');
  });
});

describe('fromHubCredentialsService.refreshTime', () => {
  it('is the earlier of 80% of the lifetime and 5 minutes before expiry', () => {
    expect(fromHubCredentialsService.refreshTime(0, 60 * MINUTE)).toBe(48 * MINUTE);
    expect(fromHubCredentialsService.refreshTime(0, 15 * MINUTE)).toBe(10 * MINUTE);
    expect(fromHubCredentialsService.refreshTime(0, 12 * 60 * MINUTE)).toBe(576 * MINUTE);
    // 20% of 20 minutes is less than 5 minutes: the 5 minutes win.
    expect(fromHubCredentialsService.refreshTime(0, 20 * MINUTE)).toBe(15 * MINUTE);
  });

  it('is never before the credentials were obtained', () => {
    expect(fromHubCredentialsService.refreshTime(1000, 2000)).toBe(1000);
    expect(fromHubCredentialsService.refreshTime(1000, 2000, 5000)).toBe(1000);
  });
});

describe('hubCredentialsFromSettings', () => {
  const url = 'http://127.0.0.1:10101/';

  it('is none without credentials_service_url', () => {
    expect(
      hubCredentialsFromSettings(
        { credentials_service_url: undefined, object_access_key_id: undefined },
        {}
      )
    ).toBeUndefined();
  });

  it("needs the single-user server's JUPYTERHUB_API_TOKEN", () => {
    expect(() =>
      hubCredentialsFromSettings(
        { credentials_service_url: url, object_access_key_id: undefined },
        {}
      )
    ).toThrow(/JUPYTERHUB_API_TOKEN/);
    expect(
      typeof hubCredentialsFromSettings(
        { credentials_service_url: url, object_access_key_id: undefined },
        { JUPYTERHUB_API_TOKEN: 'x' }
      )
    ).toBe('function');
  });

  it('refuses static keys besides the service', () => {
    expect(() =>
      hubCredentialsFromSettings(
        { credentials_service_url: url, object_access_key_id: 'AKIA' },
        { JUPYTERHUB_API_TOKEN: 'x' }
      )
    ).toThrow(/both set/);
  });
});
