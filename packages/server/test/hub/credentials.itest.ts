/**
 * The JupyterHub credential service against a real MinIO (STS AssumeRole with a session policy)
 * and a stand-in for the Hub's API: whose token is whose, what the minted credentials may and
 * may not do, their refresh by the single-user side's provider, and a gateway that archives
 * with them.
 */
import {
  GetObjectCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  PutObjectCommand,
  S3Client
} from '@aws-sdk/client-s3';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/gateway/logger';
import { CredentialService } from '../../src/hub/credentialService';
import { loadStoreSettings } from '../../src/settings';
import { fromHubCredentialsService } from '../../src/storage/hubCredentials';
import { S3ObjectStore } from '../../src/storage/s3Store';
import { startArchivingGateway, useObjectServer } from '../support/archivingLab';
import { CLI, type IGatewayProcess } from '../support/gateway';

jest.setTimeout(180_000);

const BUCKET = 'notebooks';

/** The scopes JupyterHub gives a single-user server's token (the `server` role). */
function serverScopes(user: string): string[] {
  return [
    `access:servers!server=${user}/`,
    `read:users:name!user=${user}`,
    `users:activity!user=${user}`
  ];
}

/** What the stand-in Hub answers to `GET /hub/api/user`, by token. */
const HUB_TOKENS: Record<string, { kind: string; name: string; scopes: string[] }> = {
  'alice-server-token': { kind: 'user', name: 'alice', scopes: serverScopes('alice') },
  'bob-server-token': { kind: 'user', name: 'bob', scopes: serverScopes('bob') },
  // A token alice made herself: her own scopes, which name her servers as `!user=`.
  'alice-own-token': {
    kind: 'user',
    name: 'alice',
    scopes: ['access:servers!user=alice', 'read:users!user=alice', 'users:activity!user=alice']
  },
  'service-token': { kind: 'service', name: 'announcements', scopes: [] },
  'star-server-token': { kind: 'user', name: 'st*r', scopes: serverScopes('st*r') }
};

/** A loopback stand-in for the Hub's API: `GET /hub/api/user` per token, 403 for others. */
class FakeHub {
  asked = 0;
  url = '';

  async start(): Promise<void> {
    this._server = http.createServer((request, response) => {
      const token = /^token (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
      const model = token === undefined ? undefined : HUB_TOKENS[token];
      if (request.method !== 'GET' || request.url !== '/hub/api/user') {
        response.writeHead(404).end();
        return;
      }
      this.asked++;
      if (!model) {
        response.writeHead(403, { 'Content-Type': 'application/json' });
        response.end(JSON.stringify({ status: 403, message: 'Forbidden' }));
        return;
      }
      response.writeHead(200, { 'Content-Type': 'application/json' });
      response.end(JSON.stringify({ ...model, token_id: 'a1', session_id: null }));
    });
    await new Promise<void>(resolve => this._server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this._server.address() as AddressInfo).port}/hub/api`;
  }

  async stop(): Promise<void> {
    this._server?.closeAllConnections();
    await new Promise<void>(resolve => this._server?.close(() => resolve()));
  }

  private _server: http.Server | undefined;
}

describe('the credential service on MinIO', () => {
  const rig = useObjectServer({ buckets: [BUCKET] });
  const hub = new FakeHub();
  const logLines: string[] = [];
  let home: string;
  let services: CredentialService[] = [];

  /** Start a service with these settings flags besides the shared ones; its URL. */
  async function startService(flags: Record<string, string> = {}): Promise<string> {
    const { settings } = loadStoreSettings({
      env: {
        HOME: home,
        JUPYTER_CONFIG_DIR: join(home, 'config'),
        JUPYTER_DATA_DIR: join(home, 'data'),
        STORE_OBJECT_ACCESS_KEY_ID: rig.server.accessKeyId,
        STORE_OBJECT_SECRET_ACCESS_KEY: rig.server.secretAccessKey
      },
      flags: {
        object_endpoint_url: rig.server.endpoint,
        object_bucket: BUCKET,
        workspace_prefix: 'workspace/{username}',
        credentials_duration_seconds: '900',
        ...flags
      },
      keepWorkspaceTemplate: true
    });
    const service = new CredentialService({
      settings,
      hubApiUrl: hub.url,
      servicePrefix: '/services/credentials/',
      log: createLogger({ level: 'debug', destination: { write: line => logLines.push(line) } })
    });
    services.push(service);
    const port = await service.listen(0, '127.0.0.1');
    return `http://127.0.0.1:${port}/services/credentials/`;
  }

  /** POST credentials with `token` (none: no header). */
  async function ask(url: string, token?: string, method = 'POST'): Promise<Response> {
    return fetch(new URL('credentials', url), {
      method,
      headers: token === undefined ? {} : { Authorization: `token ${token}` }
    });
  }

  /** An S3 client with the credentials minted for `token`. */
  async function clientFor(url: string, token: string): Promise<S3Client> {
    const response = await ask(url, token);
    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, string>;
    return new S3Client({
      endpoint: rig.server.endpoint,
      region: rig.server.region,
      forcePathStyle: true,
      maxAttempts: 1,
      credentials: {
        accessKeyId: body.access_key_id,
        secretAccessKey: body.secret_access_key,
        sessionToken: body.session_token
      }
    });
  }

  /** The S3 error code of a refused call, or 'allowed'. */
  async function outcome(call: Promise<unknown>): Promise<string> {
    try {
      await call;
      return 'allowed';
    } catch (error) {
      return (error as { name: string }).name;
    }
  }

  let serviceUrl: string;
  let alice: S3Client;

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'credentials-'));
    await hub.start();
    const put = (Key: string) =>
      rig.s3.send(new PutObjectCommand({ Bucket: BUCKET, Key, Body: `{"key":"${Key}"}` }));
    await put('workspace/bob/secret.ipynb');
    await put('published/shared.ipynb');
    await put('top-level.ipynb');
    serviceUrl = await startService();
    alice = await clientFor(serviceUrl, 'alice-server-token');
  });

  afterAll(async () => {
    alice?.destroy();
    await Promise.all(services.map(service => service.close()));
    services = [];
    await hub.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('answers credentials that expire, never to be cached', async () => {
    const before = Date.now();
    const response = await ask(serviceUrl, 'alice-server-token');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = (await response.json()) as Record<string, string>;
    expect(Object.keys(body).sort()).toEqual([
      'access_key_id',
      'expiration',
      'secret_access_key',
      'session_token'
    ]);
    expect(body.access_key_id).not.toBe(rig.server.accessKeyId);
    const lifetime = Date.parse(body.expiration) - before;
    expect(lifetime).toBeGreaterThan(800_000);
    expect(lifetime).toBeLessThanOrEqual(901_000);
  });

  it('lets alice write, read and list her own workspace', async () => {
    const Key = 'workspace/alice/notes/a.ipynb';
    await alice.send(new PutObjectCommand({ Bucket: BUCKET, Key, Body: '{"a":1}' }));
    const read = await alice.send(new GetObjectCommand({ Bucket: BUCKET, Key }));
    expect(await read.Body?.transformToString()).toBe('{"a":1}');
    const listed = await alice.send(
      new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'workspace/alice/' })
    );
    expect(listed.Contents?.map(object => object.Key)).toEqual([Key]);
    const versions = await alice.send(
      new ListObjectVersionsCommand({ Bucket: BUCKET, Prefix: Key })
    );
    expect(versions.Versions).toHaveLength(1);
    await alice.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: 'named/workspace/alice/notes/a.ipynb/v1',
        Body: '{}'
      })
    );
  });

  it("refuses alice bob's workspace and the bucket's root", async () => {
    expect(
      await outcome(
        alice.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'workspace/bob/secret.ipynb' }))
      )
    ).toBe('AccessDenied');
    expect(
      await outcome(
        alice.send(
          new PutObjectCommand({ Bucket: BUCKET, Key: 'workspace/bob/x.ipynb', Body: '{}' })
        )
      )
    ).toBe('AccessDenied');
    expect(
      await outcome(
        alice.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'workspace/bob/' }))
      )
    ).toBe('AccessDenied');
    expect(
      await outcome(
        alice.send(new ListObjectVersionsCommand({ Bucket: BUCKET, Prefix: 'workspace/' }))
      )
    ).toBe('AccessDenied');
    expect(await outcome(alice.send(new ListObjectsV2Command({ Bucket: BUCKET })))).toBe(
      'AccessDenied'
    );
    // "workspace/alice" without its slash would also match "workspace/alice2/…".
    expect(
      await outcome(
        alice.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'workspace/alice' }))
      )
    ).toBe('AccessDenied');
    expect(
      await outcome(alice.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'top-level.ipynb' })))
    ).toBe('AccessDenied');
  });

  it('lets alice read published notebooks, and not publish while publishing is off', async () => {
    const read = await alice.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: 'published/shared.ipynb' })
    );
    expect(await read.Body?.transformToString()).toBe('{"key":"published/shared.ipynb"}');
    expect(
      await outcome(
        alice.send(
          new PutObjectCommand({ Bucket: BUCKET, Key: 'published/mine.ipynb', Body: '{}' })
        )
      )
    ).toBe('AccessDenied');
  });

  it('lets users publish when credentials_allow_publish is on', async () => {
    const url = await startService({ credentials_allow_publish: 'true' });
    const client = await clientFor(url, 'alice-server-token');
    try {
      expect(
        await outcome(
          client.send(
            new PutObjectCommand({ Bucket: BUCKET, Key: 'published/mine.ipynb', Body: '{}' })
          )
        )
      ).toBe('allowed');
    } finally {
      client.destroy();
    }
  });

  it.each([
    ['an unknown token', 'no-such-token', 403, 'not authenticated'],
    ['no token at all', undefined, 403, 'not authenticated'],
    ["a user's own token", 'alice-own-token', 403, 'not a server token'],
    ["a service's token", 'service-token', 403, 'not a server token'],
    ['a user name with a wildcard', 'star-server-token', 403, 'user name refused']
  ])('refuses %s', async (_what, token, status, reason) => {
    const response = await ask(serviceUrl, token);
    expect(response.status).toBe(status);
    expect(await response.json()).toEqual({ message: expect.any(String), reason });
  });

  it('answers only POST, and only at credentials', async () => {
    const get = await ask(serviceUrl, 'alice-server-token', 'GET');
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const other = await fetch(new URL('other', serviceUrl), { method: 'POST' });
    expect(other.status).toBe(404);
    expect(((await other.json()) as { reason: string }).reason).toBe('no such route');
  });

  it('is 503 when the Hub cannot be asked', async () => {
    const { settings } = loadStoreSettings({
      env: { HOME: home, JUPYTER_CONFIG_DIR: join(home, 'config'), JUPYTER_DATA_DIR: home },
      flags: {
        object_endpoint_url: rig.server.endpoint,
        object_bucket: BUCKET,
        workspace_prefix: 'workspace/{username}'
      },
      keepWorkspaceTemplate: true
    });
    const service = new CredentialService({
      settings,
      hubApiUrl: 'http://127.0.0.1:1/hub/api',
      log: createLogger({ level: 'fatal', destination: { write: () => undefined } })
    });
    services.push(service);
    const port = await service.listen(0, '127.0.0.1');
    const response = await ask(`http://127.0.0.1:${port}/`, 'alice-server-token');
    expect(response.status).toBe(503);
    expect(((await response.json()) as { reason: string }).reason).toBe('hub unavailable');
  });

  it('refreshes short credentials through the provider, and the store keeps working', async () => {
    const before = hub.asked;
    // 900 s is the shortest lifetime MinIO issues; refreshing 898 s before expiry means 2 s after.
    const credentials = fromHubCredentialsService({
      url: serviceUrl,
      token: 'alice-server-token',
      refreshBeforeExpiryMs: 898_000
    });
    const store = new S3ObjectStore({
      endpoint: rig.server.endpoint,
      region: rig.server.region,
      credentials,
      headBucket: false,
      maxSockets: 4
    });
    try {
      expect(await store.checkBucket(BUCKET)).toEqual({ versioning: 'Enabled' });
      const first = await credentials();
      await store.put(BUCKET, 'workspace/alice/refresh.ipynb', Buffer.from('{"n":1}'));
      expect((await credentials()).accessKeyId).toBe(first.accessKeyId);
      await new Promise(resolve => setTimeout(resolve, 2500));
      await store.put(BUCKET, 'workspace/alice/refresh.ipynb', Buffer.from('{"n":2}'));
      const second = await credentials();
      expect(second.accessKeyId).not.toBe(first.accessKeyId);
      expect(hub.asked - before).toBe(2);
      const versions = await store.listVersions(BUCKET, 'workspace/alice/refresh.ipynb');
      expect(versions).toHaveLength(2);
      await expect(store.get(BUCKET, 'workspace/bob/secret.ipynb')).rejects.toMatchObject({
        kind: 'access-denied'
      });
    } finally {
      await store.close();
    }
  });

  it('is refused by the store as access-denied when the service refuses the token', async () => {
    const store = new S3ObjectStore({
      endpoint: rig.server.endpoint,
      region: rig.server.region,
      credentials: fromHubCredentialsService({ url: serviceUrl, token: 'alice-own-token' }),
      headBucket: false,
      maxSockets: 1
    });
    try {
      await expect(store.checkBucket(BUCKET)).rejects.toMatchObject({
        kind: 'access-denied',
        code: 'CredentialServiceRefused'
      });
    } finally {
      await store.close();
    }
  });

  it('logs the user and never a token, key or secret', async () => {
    const response = await ask(serviceUrl, 'bob-server-token');
    const body = (await response.json()) as Record<string, string>;
    const log = logLines.join('');
    expect(log).toContain('"user":"bob"');
    expect(log).toContain('credentials issued');
    for (const secret of [
      body.access_key_id,
      body.secret_access_key,
      body.session_token,
      rig.server.secretAccessKey,
      rig.server.accessKeyId,
      'bob-server-token',
      'alice-server-token'
    ]) {
      expect(log).not.toContain(secret);
    }
  });

  describe('jupyter-store credentials-service', () => {
    /** Run the command as JupyterHub would, with `flags`. */
    function runCommand(flags: string[]): ChildProcessWithoutNullStreams {
      return spawn(process.execPath, [CLI, 'credentials-service', ...flags], {
        env: {
          PATH: process.env.PATH,
          HOME: home,
          JUPYTER_CONFIG_DIR: join(home, 'config'),
          JUPYTER_DATA_DIR: join(home, 'data'),
          JUPYTERHUB_API_URL: hub.url,
          JUPYTERHUB_SERVICE_URL: 'http://127.0.0.1:0',
          JUPYTERHUB_SERVICE_PREFIX: '/services/credentials/',
          JUPYTERHUB_API_TOKEN: 'the-service-own-token',
          STORE_OBJECT_ACCESS_KEY_ID: rig.server.accessKeyId,
          STORE_OBJECT_SECRET_ACCESS_KEY: rig.server.secretAccessKey,
          STORE_OBJECT_ENDPOINT_URL: rig.server.endpoint,
          STORE_OBJECT_BUCKET: BUCKET
        }
      });
    }

    /** Everything the process writes to stderr until it exits. */
    function collect(child: ChildProcessWithoutNullStreams): { text: () => string } {
      let text = '';
      child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
      return { text: () => text };
    }

    it('listens where JupyterHub says and mints credentials, until SIGTERM', async () => {
      const child = runCommand(['--StoreSettings.workspace_prefix=workspace/{username}']);
      const output = collect(child);
      try {
        const deadline = Date.now() + 30_000;
        let port: number | undefined;
        while (port === undefined && Date.now() < deadline && child.exitCode === null) {
          const line = output
            .text()
            .split('\n')
            .find(entry => entry.includes('credential service listening'));
          if (line) port = (JSON.parse(line) as { port: number }).port;
          else await new Promise(resolve => setTimeout(resolve, 100));
        }
        expect(port).toBeDefined();
        const response = await ask(
          `http://127.0.0.1:${port}/services/credentials/`,
          'alice-server-token'
        );
        expect(response.status).toBe(200);
        expect(output.text()).not.toContain(rig.server.secretAccessKey);
      } finally {
        const exited = new Promise(resolve => child.once('exit', resolve));
        child.kill('SIGTERM');
        expect(await exited).toBe(0);
      }
    });

    it('refuses a workspace prefix that every user would share (exit status 2)', async () => {
      const child = runCommand(['--StoreSettings.workspace_prefix=workspace']);
      const output = collect(child);
      const status = await new Promise(resolve => child.once('exit', resolve));
      expect(status).toBe(2);
      expect(output.text()).toContain('workspace_prefix must hold {username}');
    });
  });

  describe('a gateway with per-user credentials', () => {
    let gateway: IGatewayProcess | undefined;

    afterAll(async () => {
      await gateway?.stop();
    });

    it("archives a save under alice's prefix", async () => {
      gateway = await startArchivingGateway(rig.server, BUCKET, {
        args: [
          '--StoreSettings.workspace_prefix=workspace/{username}',
          `--StoreSettings.credentials_service_url=${serviceUrl}`
        ],
        env: {
          STORE_OBJECT_ACCESS_KEY_ID: '',
          STORE_OBJECT_SECRET_ACCESS_KEY: '',
          JUPYTERHUB_USER: 'alice',
          JUPYTERHUB_API_TOKEN: 'alice-server-token'
        }
      });
      const notebook = {
        type: 'notebook',
        content: { cells: [], metadata: {}, nbformat: 4, nbformat_minor: 5 }
      };
      const saved = await fetch(gateway.url('api/contents/hub.ipynb'), {
        method: 'PUT',
        headers: { Authorization: `token ${gateway.token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(notebook)
      });
      expect(saved.status).toBe(201);
      const deadline = Date.now() + 30_000;
      let keys: (string | undefined)[] = [];
      while (Date.now() < deadline) {
        const listed = await rig.s3.send(
          new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'workspace/alice/hub' })
        );
        keys = listed.Contents?.map(object => object.Key) ?? [];
        if (keys.length > 0) break;
        await new Promise(resolve => setTimeout(resolve, 250));
      }
      expect(keys).toEqual(['workspace/alice/hub.ipynb']);
      const info = await fetch(gateway.url('api/store'), {
        headers: { Authorization: `token ${gateway.token}` }
      });
      expect(((await info.json()) as { workspace_prefix?: string }).workspace_prefix).toBe(
        'workspace/alice'
      );
      // The listing reads both copies' versions: alice's archive and the published prefix.
      const versions = await fetch(gateway.url('api/store/versions/hub.ipynb'), {
        headers: { Authorization: `token ${gateway.token}` }
      });
      expect(versions.status).toBe(200);
      const listing = (await versions.json()) as {
        workspace: { object_key: string; versions: unknown[] };
      };
      expect(listing.workspace.object_key).toBe('workspace/alice/hub.ipynb');
      expect(listing.workspace.versions).toHaveLength(1);
      expect(gateway.stderr()).not.toContain('alice-server-token');
    });
  });
});
