/**
 * Security findings about the store API, against the gateway on real sockets (in-process, wired
 * as the CLI wires it, with a fake Jupyter Server for auth; and the spawned CLI for the setting)
 * and a real MinIO:
 *
 * - a clone, or a version read for restoring, never reads more than its byte cap, whatever HEAD
 *   said: when HEAD fails, when the object is replaced between HEAD and GET, and when the GET
 *   does not announce its length. A loopback proxy between the gateway and MinIO makes HEAD
 *   fail, runs the replacement at the moment HEAD has been answered, and counts the body bytes
 *   MinIO's answer delivered to the gateway: the read must stop near the cap, not at the end;
 * - version listings are paged (MinIO and the embedded store): every version once, in order,
 *   also while new versions are saved, and bad limits and forged tokens are 400;
 * - `clone_buckets` refuses other buckets with 403 before anything is asked of object storage.
 */
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  PutObjectCommand,
  type S3Client
} from '@aws-sdk/client-s3';
import {
  ErrorBodySchema,
  VersionListingSchema,
  type VersionListing
} from '@jupyter-store/contract';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Archiving } from '../../src/archive/archiving';
import { Gateway } from '../../src/gateway/gateway';
import { createLogger } from '../../src/gateway/logger';
import { mountStoreApi } from '../../src/gateway/start';
import { EMBEDDED_BUCKET, StoreSettingsSchema } from '../../src/settings';
import { FakeUpstream } from '../support/fakeUpstream';
import { startServeGateway, type IGatewayProcess } from '../support/gateway';
import {
  createVersionedBucket,
  s3ClientFor,
  startMinio,
  type IObjectServer
} from '../support/objectServers';

jest.setTimeout(180_000);

/** The clone cap of the in-process gateways: 1 MiB. */
const CAP = 1024 * 1024;

/** An object far over the cap: 48 MiB, so that reading it whole shows in the byte count. */
const BIG = 48 * 1024 * 1024;

/**
 * The most body bytes a capped read may have pulled from object storage: the cap, plus what
 * loopback socket buffers (a few MiB each way) and stream buffers take in before the abort
 * lands. A read to the end would be all of {@link BIG}.
 */
const MOST_RELAYED = 20 * 1024 * 1024;

const log = createLogger({ level: 'silent' });
const cleanups: Array<() => Promise<void>> = [];
let backend: FakeUpstream;
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'security-store-'));
  backend = new FakeUpstream();
  await backend.listen({ port: 0 });
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await backend?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// A loopback proxy in front of MinIO
// ---------------------------------------------------------------------------------------------

/** One request the proxy relayed (or answered itself). */
interface IProxied {
  readonly method: string;
  readonly bucket: string;
  readonly key: string;
  status?: number;
  /** The Content-Length MinIO announced. */
  announced?: number;
  /** Body bytes handed on to the gateway. */
  relayed: number;
  /** The gateway closed the connection before the body's end. */
  cut: boolean;
  /** Resolves once the answer to the gateway has ended or been cut. */
  settled: Promise<void>;
}

/**
 * A plain HTTP relay to MinIO on a loopback port. Requests go through unchanged (their Host is
 * the proxy's, which is what the client signed), with three hooks by `bucket/key`: answer HEAD
 * with a bodiless 403 itself, run something once HEAD has been answered by MinIO but before
 * that answer is passed on, and drop the Content-Length of GET answers (sent chunked instead).
 */
class S3Proxy {
  constructor(private readonly _target: IObjectServer) {
    this._server = http.createServer((request, response) => {
      void this._relay(request, response);
    });
  }

  /** Every request, in arrival order. */
  readonly records: IProxied[] = [];
  /** HEAD of these `bucket/key`s is answered 403 without a body, as a refusing server would. */
  readonly failHead = new Set<string>();
  /** GET answers of these `bucket/key`s do not announce their length. */
  readonly hideLength = new Set<string>();
  /** Run (once) between MinIO's HEAD answer for `bucket/key` and its relay. */
  readonly afterHead = new Map<string, () => Promise<void>>();

  async listen(): Promise<string> {
    await new Promise<void>(resolve => this._server.listen(0, '127.0.0.1', resolve));
    const { port } = this._server.address() as { port: number };
    return `http://127.0.0.1:${port}`;
  }

  async close(): Promise<void> {
    this._server.closeAllConnections();
    await new Promise<void>(resolve => this._server.close(() => resolve()));
  }

  /** The requests about one object. */
  about(bucket: string, key: string, method?: string): IProxied[] {
    return this.records.filter(
      each =>
        each.bucket === bucket &&
        each.key === key &&
        (method === undefined || each.method === method)
    );
  }

  private async _relay(
    request: http.IncomingMessage,
    response: http.ServerResponse
  ): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://proxy.invalid');
    const [bucket = '', ...rest] = url.pathname.replace(/^\//, '').split('/');
    const key = rest.map(decodeURIComponent).join('/');
    const record: IProxied = {
      method: request.method ?? 'GET',
      bucket: decodeURIComponent(bucket),
      key,
      relayed: 0,
      cut: false,
      settled: new Promise(resolve => response.once('close', () => resolve()))
    };
    this.records.push(record);
    const name = `${record.bucket}/${key}`;
    if (record.method === 'HEAD' && this.failHead.has(name)) {
      request.resume();
      record.status = 403;
      response.writeHead(403, { 'Content-Length': '0' });
      response.end();
      return;
    }
    const upstream = http.request({
      host: '127.0.0.1',
      port: this._target.port,
      method: record.method,
      path: request.url,
      headers: request.headers
    });
    response.on('close', () => {
      if (!response.writableFinished) {
        record.cut = true;
        upstream.destroy();
      }
    });
    upstream.on('error', () => response.destroy());
    upstream.on('response', answer => {
      void (async () => {
        record.status = answer.statusCode;
        const length = answer.headers['content-length'];
        record.announced = length === undefined ? undefined : Number(length);
        const hook = this.afterHead.get(name);
        if (record.method === 'HEAD' && hook) {
          this.afterHead.delete(name);
          await hook();
        }
        const headers = { ...answer.headers };
        if (record.method === 'GET' && this.hideLength.has(name)) delete headers['content-length'];
        response.writeHead(answer.statusCode ?? 502, headers);
        const counter = new Transform({
          transform(chunk: Buffer, _encoding, done) {
            record.relayed += chunk.length;
            done(null, chunk);
          }
        });
        await pipeline(answer, counter, response).catch(() => undefined);
      })();
    });
    request.pipe(upstream);
  }

  private readonly _server: http.Server;
}

// ---------------------------------------------------------------------------------------------
// Gateways
// ---------------------------------------------------------------------------------------------

interface IReply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

interface IEnv {
  archiving: Archiving;
  /** The contents root. */
  root: string;
  get(path: string): Promise<IReply>;
  post(path: string, body: unknown): Promise<IReply>;
}

/**
 * The gateway in-process with the store API as startGateway mounts it (mountStoreApi), a clone
 * cap of {@link CAP}, and these settings (a fresh embedded store and journal unless they say
 * otherwise).
 */
async function startEnv(settings: Record<string, unknown> = {}): Promise<IEnv> {
  const dir = await mkdtemp(join(scratch, 'env-'));
  const root = join(dir, 'root');
  for (const directory of [root, join(dir, 'data')]) await mkdir(directory);
  const gateway = new Gateway({
    rootDir: root,
    jupyterDataDir: join(dir, 'data'),
    upstream: backend.address!,
    log
  });
  const archiving = await Archiving.start(
    StoreSettingsSchema.parse({
      local_store_dir: join(dir, 'objects'),
      journal_dir: join(dir, 'journal'),
      ...settings
    }),
    gateway.manager,
    log,
    { backoff: { baseMs: 50, capMs: 500 } }
  );
  mountStoreApi(gateway, { archiving, log, publishEnabled: () => false, maxCloneBytes: CAP });
  const { port } = await gateway.listen(0, '127.0.0.1');
  cleanups.push(async () => {
    await gateway.close({ drainTimeoutMs: 100 });
    await archiving.close(2000);
  });
  const call = async (method: string, path: string, body?: unknown): Promise<IReply> => {
    const response = await fetch(`http://127.0.0.1:${port}/api/store/${path}`, {
      method,
      headers: { Authorization: 'token good', 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000)
    });
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = { text };
    }
    return { status: response.status, json };
  };
  return {
    archiving,
    root,
    get: path => call('GET', path),
    post: (path, body) => call('POST', path, body)
  };
}

/** Jupyter's error body with this status and reason, never a stack trace. */
function expectError(reply: IReply, status: number, reason: string): void {
  expect({ status: reply.status, body: reply.json }).toMatchObject({ status });
  const body = ErrorBodySchema.parse(reply.json);
  expect(body.reason).toBe(reason);
  expect(body.message).not.toMatch(/\n\s+at /);
}

/** Everything in the root, hidden files and reservations included. */
function rootEntries(env: IEnv): string[] {
  return readdirSync(env.root).sort();
}

/** A small notebook. */
function notebookBytes(text: string): Buffer {
  return Buffer.from(
    JSON.stringify({
      cells: [{ cell_type: 'markdown', id: 'c', metadata: {}, source: text }],
      metadata: {},
      nbformat: 4,
      nbformat_minor: 5
    })
  );
}

// ---------------------------------------------------------------------------------------------
// MinIO
// ---------------------------------------------------------------------------------------------

describe('the store API with MinIO behind a counting proxy', () => {
  let minio: IObjectServer;
  let s3: S3Client;
  let proxy: S3Proxy;
  let endpoint: string;
  let env: IEnv;
  let big: Buffer;
  const send = () => ({ abortSignal: AbortSignal.timeout(60_000) });
  const put = (bucket: string, key: string, body: Buffer) =>
    s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }), send());
  const settingsFor = (extra: Record<string, unknown> = {}) => ({
    object_endpoint_url: endpoint,
    object_bucket: 'archive',
    object_access_key_id: minio.accessKeyId,
    object_secret_access_key: minio.secretAccessKey,
    object_timeout_seconds: 30,
    ...extra
  });

  beforeAll(async () => {
    minio = await startMinio();
    cleanups.push(() => minio.dispose());
    s3 = s3ClientFor(minio);
    cleanups.push(async () => s3.destroy());
    await createVersionedBucket(minio, 'archive');
    await createVersionedBucket(minio, 'source');
    await createVersionedBucket(minio, 'allowed-src');
    await createVersionedBucket(minio, 'denied-src');
    // Not versioned: a put replaces the object in place, so HEAD and GET can see two objects.
    await s3.send(new CreateBucketCommand({ Bucket: 'plain' }), send());
    proxy = new S3Proxy(minio);
    endpoint = await proxy.listen();
    cleanups.push(() => proxy.close());
    env = await startEnv(settingsFor());
    big = randomBytes(BIG);
  });

  /** The one GET of the object, which must have been cut near the cap. */
  async function expectCappedGet(bucket: string, key: string): Promise<void> {
    const gets = proxy.about(bucket, key, 'GET');
    expect(gets).toHaveLength(1);
    const [get] = gets;
    // The gateway answers as it aborts; the proxy hears of the closed socket right after.
    await Promise.race([get.settled, new Promise(resolve => setTimeout(resolve, 10_000))]);
    expect(get.status).toBe(200);

    expect(get.cut).toBe(true);
    expect(get.relayed).toBeLessThan(MOST_RELAYED);
  }

  describe('a clone never reads more than its cap, whatever HEAD said', () => {
    test('HEAD fails, GET announces the length: 413 before the body is read', async () => {
      await put('source', 'head-fails/announced.bin', big);
      proxy.failHead.add('source/head-fails/announced.bin');
      const reply = await env.post('clone', {
        object_bucket: 'source',
        object_key: 'head-fails/announced.bin'
      });
      expectError(reply, 413, 'too large');
      expect(reply.json.message).toMatch(/s3:\/\/source\/head-fails\/announced\.bin/);
      expect(proxy.about('source', 'head-fails/announced.bin', 'HEAD')[0].status).toBe(403);
      await expectCappedGet('source', 'head-fails/announced.bin');
      expect(rootEntries(env)).toEqual([]);
    });

    test('HEAD fails, GET hides the length: the stream stops once past the cap (413)', async () => {
      await put('source', 'head-fails/chunked.bin', big);
      proxy.failHead.add('source/head-fails/chunked.bin');
      proxy.hideLength.add('source/head-fails/chunked.bin');
      const reply = await env.post('clone', {
        object_bucket: 'source',
        object_key: 'head-fails/chunked.bin',
        target_path: 'chunked.bin'
      });
      expectError(reply, 413, 'too large');
      const [get] = proxy.about('source', 'head-fails/chunked.bin', 'GET');
      // More than the cap reached the gateway (so the body itself was measured), far from all.
      expect(get.relayed).toBeGreaterThan(CAP);
      await expectCappedGet('source', 'head-fails/chunked.bin');
      expect(rootEntries(env)).toEqual([]);
    });

    test('the object is replaced by a larger one between HEAD and GET: 413, nothing written', async () => {
      const key = 'race/swapped.bin';
      await put('plain', key, randomBytes(1024));
      proxy.hideLength.add(`plain/${key}`);
      let swapped = false;
      proxy.afterHead.set(`plain/${key}`, async () => {
        await put('plain', key, big);
        swapped = true;
      });
      const reply = await env.post('clone', { object_bucket: 'plain', object_key: key });
      expectError(reply, 413, 'too large');
      expect(swapped).toBe(true);
      // HEAD truly said "small": the cap was passed by the GET alone.
      const [head] = proxy.about('plain', key, 'HEAD');
      expect(head).toMatchObject({ status: 200, announced: 1024 });
      await expectCappedGet('plain', key);
      expect(rootEntries(env)).toEqual([]);
    });

    test('the same routes clone what fits: at the cap exactly, HEAD failing, length hidden', async () => {
      const fits = randomBytes(CAP);
      await put('source', 'fits/exact.bin', fits);
      proxy.failHead.add('source/fits/exact.bin');
      proxy.hideLength.add('source/fits/exact.bin');
      const reply = await env.post('clone', {
        object_bucket: 'source',
        object_key: 'fits/exact.bin'
      });
      expect(reply.status).toBe(200);
      expect(reply.json).toMatchObject({ path: 'exact.bin', size: CAP });
      expect(rootEntries(env)).toEqual(['exact.bin']);
      await rm(join(env.root, 'exact.bin'));
    });

    test('reading a version for restoring goes through the same capped reader', async () => {
      const key = 'workspace/restore/big.ipynb';
      const written = await put('archive', key, big);
      proxy.failHead.add(`archive/${key}`);
      proxy.hideLength.add(`archive/${key}`);
      const reply = await env.get(
        `versions/restore/big.ipynb?object_version_id=${encodeURIComponent(written.VersionId!)}`
      );
      expectError(reply, 413, 'too large');
      await expectCappedGet('archive', key);
    });
  });

  describe('version listings page', () => {
    test('a listing with more versions than limit pages completely, in order, once', async () => {
      await pagingChecks(env, {
        put: async (key, body) => {
          await put('archive', key, body);
        },
        remove: async key => {
          await s3.send(new DeleteObjectCommand({ Bucket: 'archive', Key: key }), send());
        },
        bucket: 'archive'
      });
    });

    test('bad limits and forged tokens are 400', async () => {
      await badPageRequests(env);
      // A token of another gateway (another key, another bucket) for the same path.
      const other = await startEnv();
      await other.archiving.store.put(EMBEDDED_BUCKET, 'workspace/tokens.ipynb', Buffer.from('1'));
      await other.archiving.store.put(EMBEDDED_BUCKET, 'workspace/tokens.ipynb', Buffer.from('2'));
      const page = await other.get('versions/tokens.ipynb?limit=1');
      expect(page.status).toBe(200);
      expect(typeof page.json.next).toBe('string');
      expectError(
        await env.get(`versions/tokens.ipynb?next=${encodeURIComponent(page.json.next)}`),
        400,
        'invalid token'
      );
    });
  });

  describe('clone_buckets', () => {
    test('refuses another bucket with 403 before asking object storage, allows the listed ones', async () => {
      const limited = await startEnv(settingsFor({ clone_buckets: ['allowed-src'] }));
      await put('denied-src', 'secret.txt', Buffer.from('not for clones'));
      await put('allowed-src', 'shared.txt', Buffer.from('shared'));
      await put('archive', 'published/own.txt', Buffer.from('own bucket'));
      const before = proxy.records.length;

      const denied = await limited.post('clone', {
        object_bucket: 'denied-src',
        object_key: 'secret.txt'
      });
      expectError(denied, 403, 'bucket not allowed');
      expect(denied.json.message).toMatch(/denied-src/);
      expect(denied.json.message).toMatch(/clone_buckets/);
      // Not even a HEAD: the bucket was refused before object storage was asked.
      expect(proxy.records.slice(before).filter(each => each.bucket === 'denied-src')).toEqual([]);
      expect(rootEntries(limited)).toEqual([]);

      const allowed = await limited.post('clone', {
        object_bucket: 'allowed-src',
        object_key: 'shared.txt'
      });
      expect(allowed.status).toBe(200);
      expect(allowed.json).toMatchObject({ path: 'shared.txt', object_bucket: 'allowed-src' });
      // The configured bucket, where the versions are, stays allowed.
      const own = await limited.post('clone', {
        object_bucket: 'archive',
        object_key: 'published/own.txt'
      });
      expect(own.status).toBe(200);
      expect(rootEntries(limited)).toEqual(['own.txt', 'shared.txt']);

      // Unset (the default), any bucket the credentials can read is cloned, as before.
      const open = await env.post('clone', {
        object_bucket: 'denied-src',
        object_key: 'secret.txt'
      });
      expect(open.status).toBe(200);
      await rm(join(env.root, 'secret.txt'));
    });

    describe('through the CLI', () => {
      let upstream: FakeUpstream;
      let gateway: IGatewayProcess;

      beforeAll(async () => {
        ({ upstream, gateway } = await startServeGateway({
          args: [
            `--StoreSettings.object_endpoint_url=${minio.endpoint}`,
            '--StoreSettings.object_bucket=archive',
            '--StoreSettings.clone_buckets=allowed-src, source'
          ],
          env: {
            STORE_OBJECT_ACCESS_KEY_ID: minio.accessKeyId,
            STORE_OBJECT_SECRET_ACCESS_KEY: minio.secretAccessKey
          }
        }));
        cleanups.push(() => upstream.close());
        cleanups.push(async () => {
          await gateway.stop();
        });
        await put('source', 'cli.txt', Buffer.from('via the CLI'));
      });

      const clone = (bucket: string, key: string) =>
        fetch(gateway.url('api/store/clone'), {
          method: 'POST',
          headers: { Authorization: 'token good', 'Content-Type': 'application/json' },
          body: JSON.stringify({ object_bucket: bucket, object_key: key }),
          signal: AbortSignal.timeout(60_000)
        });

      test('the setting from the command line refuses the API call and the landing page', async () => {
        const denied = await clone('denied-src', 'secret.txt');
        expect(denied.status).toBe(403);
        expect(ErrorBodySchema.parse(await denied.json()).reason).toBe('bucket not allowed');
        const page = await fetch(
          gateway.url('store/clone?object_bucket=denied-src&object_key=secret.txt'),
          { headers: { Authorization: 'token good' }, signal: AbortSignal.timeout(60_000) }
        );
        expect(page.status).toBe(403);
        expect(page.headers.get('content-type')).toMatch(/^text\/html/);
        expect(await page.text()).toMatch(/clone_buckets/);
        const listed = await clone('source', 'cli.txt');
        expect(listed.status).toBe(200);
        expect(((await listed.json()) as { path: string }).path).toBe('cli.txt');
        const visible = readdirSync(gateway.rootDir).filter(name => !name.startsWith('.'));
        expect(visible).toEqual(['cli.txt']);
      });
    });
  });
});

// ---------------------------------------------------------------------------------------------
// The embedded store
// ---------------------------------------------------------------------------------------------

describe('the store API with the embedded store', () => {
  let env: IEnv;

  beforeAll(async () => {
    env = await startEnv();
  });

  test('a listing with more versions than limit pages completely, in order, once', async () => {
    await pagingChecks(env, {
      put: async (key, body) => {
        await env.archiving.store.put(EMBEDDED_BUCKET, key, body);
      },
      remove: async key => {
        await env.archiving.store.deleteObject(EMBEDDED_BUCKET, key);
      },
      bucket: EMBEDDED_BUCKET
    });
  });

  test('bad limits and forged tokens are 400', async () => {
    await badPageRequests(env);
  });

  test('a version over the cap is refused for restoring (413), one under it is read', async () => {
    const key = 'workspace/restore/large.ipynb';
    const large = await env.archiving.store.put(EMBEDDED_BUCKET, key, randomBytes(CAP + 1));
    expectError(
      await env.get(`versions/restore/large.ipynb?object_version_id=${large.versionId}`),
      413,
      'too large'
    );
    const small = await env.archiving.store.put(EMBEDDED_BUCKET, key, notebookBytes('small'));
    const reply = await env.get(
      `versions/restore/large.ipynb?object_version_id=${small.versionId}`
    );
    expect(reply.status).toBe(200);
    expect(JSON.stringify(reply.json.content)).toContain('small');
  });
});

// ---------------------------------------------------------------------------------------------
// Shared checks
// ---------------------------------------------------------------------------------------------

interface IWriter {
  put(key: string, body: Buffer): Promise<void>;
  remove(key: string): Promise<void>;
  bucket: string;
}

/** Every page of a listing, from the first, `limit` at a time; at most 100 pages. */
async function allPages(
  env: IEnv,
  path: string,
  limit: number,
  between?: (page: number) => Promise<void>
): Promise<VersionListing[]> {
  const pages: VersionListing[] = [];
  let next: string | null | undefined;
  do {
    const query = `limit=${limit}${next ? `&next=${encodeURIComponent(next)}` : ''}`;
    const reply = await env.get(`versions/${path}?${query}`);
    expect(reply.status).toBe(200);
    const page = VersionListingSchema.parse(reply.json);
    pages.push(page);
    next = page.next;
    if (next) await between?.(pages.length);
  } while (next && pages.length < 100);
  expect(next ?? null).toBeNull();
  return pages;
}

const ids = (pages: VersionListing[], copy: 'workspace' | 'published'): string[] =>
  pages.flatMap(page => page[copy].versions.map(version => version.object_version_id));

/**
 * A notebook with 23 archived versions (a delete marker among them), 5 published ones and a
 * neighbour key (`paged.ipynb.bak`) pages completely with limit 4, in the store's order, each
 * version once, no page over the limit and no empty last page; versions saved while paging
 * join neither later pages nor duplicates; a deleted notebook says so on its first page only.
 */
async function pagingChecks(env: IEnv, writer: IWriter): Promise<void> {
  const workspaceKey = 'workspace/team/paged.ipynb';
  for (let index = 1; index <= 23; index++) {
    await writer.put(workspaceKey, notebookBytes(`archived ${index}`));
    if (index === 12) await writer.remove(workspaceKey);
  }
  for (let index = 1; index <= 5; index++) {
    await writer.put('published/team/paged.ipynb', notebookBytes(`published ${index}`));
  }
  for (let index = 1; index <= 3; index++) {
    await writer.put('workspace/team/paged.ipynb.bak', notebookBytes(`neighbour ${index}`));
  }
  const store = env.archiving.store;
  const truth = (await store.listVersions(writer.bucket, workspaceKey)).map(v => v.versionId);
  const published = (await store.listVersions(writer.bucket, 'published/team/paged.ipynb')).map(
    v => v.versionId
  );
  expect(truth).toHaveLength(23);
  expect(published).toHaveLength(5);

  // The default limit holds everything: one page, as before paging.
  const whole = await env.get('versions/team/paged.ipynb');
  expect(whole.status).toBe(200);
  expect(whole.json.next).toBeNull();
  expect(
    whole.json.workspace.versions.map((v: { object_version_id: string }) => v.object_version_id)
  ).toEqual(truth);
  expect(whole.json.workspace.deleted).toBeNull();

  // Paged by 4 while a new version is saved after the first page.
  let added = false;
  const pages = await allPages(env, 'team/paged.ipynb', 4, async page => {
    if (page === 1) {
      await writer.put(workspaceKey, notebookBytes('saved while paging'));
      added = true;
    }
  });
  expect(added).toBe(true);
  expect(pages).toHaveLength(6);
  for (const page of pages) {
    expect(page.workspace.versions.length).toBeLessThanOrEqual(4);
    expect(page.published.versions.length).toBeLessThanOrEqual(4);
    expect(page.workspace.object_key).toBe(workspaceKey);
  }
  expect(pages.map(page => page.workspace.versions.length)).toEqual([4, 4, 4, 4, 4, 3]);
  expect(pages.map(page => page.published.versions.length)).toEqual([4, 1, 0, 0, 0, 0]);
  expect(ids(pages, 'workspace')).toEqual(truth);
  expect(new Set(ids(pages, 'workspace')).size).toBe(23);
  expect(ids(pages, 'published')).toEqual(published);
  expect(pages[0].workspace.versions[0].is_latest).toBe(true);
  expect(pages[0].workspace.deleted).toBeNull();
  expect(pages.slice(1).every(page => page.workspace.deleted === undefined)).toBe(true);

  // A fresh listing starts with the new version.
  const fresh = await allPages(env, 'team/paged.ipynb', 1000);
  expect(ids(fresh, 'workspace')).toHaveLength(24);
  expect(ids(fresh, 'workspace').slice(1)).toEqual(truth);

  // A deleted notebook: `deleted` on the first page, its versions on every page.
  for (let index = 1; index <= 3; index++) {
    await writer.put('workspace/gone.ipynb', notebookBytes(`gone ${index}`));
  }
  await writer.remove('workspace/gone.ipynb');
  const gone = await allPages(env, 'gone.ipynb', 2);
  expect(gone).toHaveLength(2);
  expect(gone[0].workspace.deleted).toMatchObject({ object_version_id: expect.any(String) });
  expect(ids(gone, 'workspace')).toHaveLength(3);
  expect(gone.flatMap(page => page.workspace.versions).some(v => v.is_latest)).toBe(false);
}

/** Limits out of range or malformed, and tokens that are not the gateway's for the path. */
async function badPageRequests(env: IEnv): Promise<void> {
  for (let index = 1; index <= 3; index++) {
    await env.archiving.store.put(
      env.archiving.bucket,
      'workspace/tokens.ipynb',
      notebookBytes(`t${index}`)
    );
    await env.archiving.store.put(
      env.archiving.bucket,
      'workspace/other.ipynb',
      notebookBytes(`o${index}`)
    );
  }
  for (const limit of ['0', '1001', '-1', '+5', ' 5', '05', '1.5', '1e2', 'ten', '']) {
    const reply = await env.get(`versions/tokens.ipynb?limit=${encodeURIComponent(limit)}`);
    expectError(reply, 400, 'bad request');
    expect(reply.json.message).toMatch(/limit/);
  }
  expect((await env.get('versions/tokens.ipynb?limit=1000')).status).toBe(200);

  const first = await env.get('versions/tokens.ipynb?limit=1');
  expect(first.status).toBe(200);
  const token = first.json.next as string;
  expect(typeof token).toBe('string');
  const [payload, mac] = token.split('.');
  const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as {
    w: string | null;
  };
  const forged = (changes: Record<string, unknown>) =>
    `${Buffer.from(JSON.stringify({ ...decoded, ...changes })).toString('base64url')}.${mac}`;
  const flipped = mac.slice(0, -2) + (mac.at(-2) === 'A' ? 'B' : 'A') + mac.at(-1);
  for (const bad of [
    '',
    'garbage',
    `${payload}.`,
    `${payload}.${flipped}`,
    forged({ w: 'another-version-id' }),
    forged({ w: null }),
    `${payload}.${mac}.${mac}`,
    'x'.repeat(10_000)
  ]) {
    const reply = await env.get(`versions/tokens.ipynb?next=${encodeURIComponent(bad)}`);
    expectError(reply, 400, 'invalid token');
  }
  // A good token of one path is refused for another.
  expectError(
    await env.get(`versions/other.ipynb?next=${encodeURIComponent(token)}`),
    400,
    'invalid token'
  );
  // And accepted for its own, with any limit.
  const second = await env.get(`versions/tokens.ipynb?limit=5&next=${encodeURIComponent(token)}`);
  expect(second.status).toBe(200);
  expect(second.json.workspace.versions).toHaveLength(2);
  expect(second.json.next).toBeNull();
}
