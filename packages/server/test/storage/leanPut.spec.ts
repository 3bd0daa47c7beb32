/**
 * The lean put (`storage/leanPut.ts`): the request it builds is the SDK's own PutObject, minus the
 * SDK's bookkeeping headers, for path-style and virtual-hosted endpoints; and `S3ObjectStore.put`
 * falls back to the SDK's call on every failure, keeping its answers, retries and error kinds.
 */
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { HttpResponse } from '@smithy/core/transport';
import { createHash } from 'node:crypto';
import * as http from 'node:http';
import * as https from 'node:https';
import type * as net from 'node:net';
import { Readable } from 'node:stream';
import { LeanPut } from '../../src/storage/leanPut';
import { S3ObjectStore } from '../../src/storage/s3Store';
import { failure } from '../support/storeFailure';

const credentials = { accessKeyId: 'AKIDLEANPUTTEST', secretAccessKey: 'lean-put-secret' };
const sha256Hex = (body: Buffer) => createHash('sha256').update(body).digest('hex');
const body = Buffer.from('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}');
const metadata = { 'save-id': 'save-1', sha256: sha256Hex(body), writer: 'gateway' };

/** Keys whose URI encoding differs between naive and S3 encoders. */
const KEYS = [
  'plain/nb.ipynb',
  "dir/a b+c?d%e#f*(x)!'\u00e9.ipynb",
  '/leading/slash',
  'double//slash/',
  'dots/../and/./more'
];

/** Headers the SDK adds for its own bookkeeping, which the lean request leaves out. */
const SDK_ONLY = new Set([
  'amz-sdk-invocation-id',
  'amz-sdk-request',
  'user-agent',
  'x-amz-user-agent',
  'x-amz-date',
  'authorization',
  'expect'
]);

function comparable(request: { headers: Record<string, string | string[] | undefined> }) {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (!SDK_ONLY.has(name.toLowerCase()) && value !== undefined) {
      kept[name.toLowerCase()] = String(value);
    }
  }
  return kept;
}

/** The credential scope and signed header list of an Authorization header. */
function scopeOf(authorization: string | undefined) {
  const match = /Credential=([^,]+), SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(
    authorization ?? ''
  );
  expect(match).not.toBeNull();
  return { credential: match![1].replace(/\/\d{8}\//, '/DATE/'), signedHeaders: match![2] };
}

/** A lean put through `client`, with agents of its own and 1 s timeouts. */
function leanPutOf(client: S3Client, sendChecksum = true): LeanPut {
  return new LeanPut({
    client,
    httpAgent: new http.Agent(),
    httpsAgent: new https.Agent(),
    connectionTimeoutMs: 1000,
    requestTimeoutMs: 1000,
    sendChecksum
  });
}

describe('LeanPut#request() builds the PutObject the SDK would send', () => {
  /** The SDK's own signed request for a put, caught by a request handler that sends nothing. */
  async function sdkRequest(
    config: ConstructorParameters<typeof S3Client>[0],
    bucket: string,
    key: string,
    sendChecksum = true
  ) {
    let caught: { hostname: string; port?: number; path: string; protocol: string } & {
      headers: Record<string, string>;
      query: Record<string, unknown>;
    };
    const client = new S3Client({
      ...config,
      credentials,
      requestChecksumCalculation: sendChecksum ? 'WHEN_SUPPORTED' : 'WHEN_REQUIRED',
      requestHandler: {
        handle: async (request: typeof caught) => {
          caught = request;
          const response = new HttpResponse({
            statusCode: 200,
            headers: { 'x-amz-version-id': 'v1' },
            body: Readable.from([])
          });
          return { response };
        }
      }
    });
    // As the store does: the SHA-256 given is the signed payload hash.
    client.middlewareStack.add(
      next => async args => {
        (args.request as { headers: Record<string, string> }).headers['x-amz-content-sha256'] =
          sha256Hex(body);
        return next(args);
      },
      { step: 'build', name: 'testPayloadHash' }
    );
    await client.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: key,
        Body: body,
        ContentType: 'application/x-ipynb+json',
        Metadata: metadata,
        ...(sendChecksum
          ? { ChecksumSHA256: createHash('sha256').update(body).digest('base64') }
          : {})
      })
    );
    client.destroy();
    return caught!;
  }

  async function leanRequest(
    config: ConstructorParameters<typeof S3Client>[0],
    bucket: string,
    key: string,
    sendChecksum = true
  ) {
    const client = new S3Client({ ...config, credentials });
    const lean = leanPutOf(client, sendChecksum);
    const request = await lean.request({
      bucket,
      key,
      body,
      sha256: sha256Hex(body),
      contentType: 'application/x-ipynb+json',
      metadata
    });
    client.destroy();
    return request!;
  }

  const configs: [string, ConstructorParameters<typeof S3Client>[0], string, string][] = [
    [
      'path-style on a custom endpoint',
      { region: 'us-east-1', endpoint: 'http://127.0.0.1:9000', forcePathStyle: true },
      'bucket',
      '127.0.0.1:9000'
    ],
    [
      'virtual-hosted on AWS',
      { region: 'eu-west-1' },
      'bucket',
      'bucket.s3.eu-west-1.amazonaws.com'
    ],
    [
      'path-style on AWS for a bucket name with dots',
      { region: 'eu-west-1' },
      'my.bucket',
      's3.eu-west-1.amazonaws.com'
    ]
  ];

  for (const [name, config, bucket, host] of configs) {
    it(`with the same URL, headers and signature scope: ${name}`, async () => {
      for (const key of KEYS) {
        const sdk = await sdkRequest(config, bucket, key);
        const lean = await leanRequest(config, bucket, key);
        expect({ protocol: lean.protocol, hostname: lean.hostname, port: lean.port }).toEqual({
          protocol: sdk.protocol,
          hostname: sdk.hostname,
          port: sdk.port
        });
        expect(lean.path).toBe(sdk.path);
        // The SDK's only query parameter, `x-id=PutObject`, names the operation for its logs.
        expect(Object.keys(sdk.query)).toEqual(['x-id']);
        expect(lean.query).toEqual({});
        expect(comparable(lean)).toEqual(comparable(sdk));
        expect(lean.headers.host).toBe(host);
        const leanScope = scopeOf(lean.headers.authorization);
        const sdkScope = scopeOf(sdk.headers.authorization);
        expect(leanScope.credential).toBe(sdkScope.credential);
        // Every header sent is signed, as the SDK signs every header it sends.
        expect(leanScope.signedHeaders.split(';')).toEqual(
          Object.keys(lean.headers)
            .map(each => each.toLowerCase())
            .filter(each => each !== 'authorization')
            .sort()
        );
      }
    });
  }

  it('sends no checksum header with checksums only when required, only the payload hash', async () => {
    const config = { region: 'us-east-1', endpoint: 'http://127.0.0.1:9000', forcePathStyle: true };
    const sdk = await sdkRequest(config, 'bucket', 'k', false);
    const lean = await leanRequest(config, 'bucket', 'k', false);
    expect(comparable(lean)).toEqual(comparable(sdk));
    expect(lean.headers['x-amz-checksum-sha256']).toBeUndefined();
    expect(lean.headers['x-amz-content-sha256']).toBe(sha256Hex(body));
  });

  it('signs with the session token of the credentials from the client provider', async () => {
    let asked = 0;
    const client = new S3Client({
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:9000',
      forcePathStyle: true,
      credentials: async () => {
        asked++;
        return {
          ...credentials,
          sessionToken: 'session-token',
          expiration: new Date(Date.now() + 3600_000)
        };
      }
    });
    const lean = leanPutOf(client);
    const put = { bucket: 'b', key: 'k', body, sha256: sha256Hex(body), metadata: {} };
    const first = await lean.request(put);
    const second = await lean.request(put);
    client.destroy();
    // The client's memo holds credentials that are still valid: asked once for both.
    expect(asked).toBe(1);
    for (const request of [first!, second!]) {
      expect(request.headers['x-amz-security-token']).toBe('session-token');
      expect(scopeOf(request.headers.authorization).signedHeaders).toContain(
        'x-amz-security-token'
      );
    }
  });
});

describe('S3ObjectStore#put() with a SHA-256, against a scripted server', () => {
  /** What the server saw of each request, and whether it was the SDK's (it names its attempts). */
  interface ISeen {
    readonly method: string;
    readonly url: string;
    readonly headers: http.IncomingHttpHeaders;
    readonly body: Buffer;
    readonly bySdk: boolean;
  }
  type Answer = (seen: ISeen, response: http.ServerResponse) => void;
  let server: http.Server;
  let seen: ISeen[];
  let answer: Answer;
  const sockets = new Set<net.Socket>();

  const ok: Answer = (_, response) => {
    response.writeHead(200, { 'x-amz-version-id': `v${seen.length}`, ETag: '"etag"' });
    response.end();
  };
  const s3Error =
    (status: number, code: string): Answer =>
    (_, response) => {
      response.writeHead(status, { 'Content-Type': 'application/xml' });
      response.end(
        `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code>` +
          `<Message>scripted</Message><RequestId>r</RequestId></Error>`
      );
    };

  beforeAll(async () => {
    server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', chunk => chunks.push(chunk));
      request.on('end', () => {
        const one: ISeen = {
          method: request.method ?? '',
          url: request.url ?? '',
          headers: request.headers,
          body: Buffer.concat(chunks),
          bySdk: request.headers['amz-sdk-invocation-id'] !== undefined
        };
        seen.push(one);
        answer(one, response);
      });
    });
    server.on('connection', socket => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  });

  beforeEach(() => {
    seen = [];
    answer = ok;
  });

  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise(resolve => server?.close(resolve));
  });

  const open = (options: Partial<S3ObjectStore.IOptions> = {}) =>
    new S3ObjectStore({
      endpoint: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
      region: 'us-east-1',
      ...credentials,
      maxSockets: 2,
      maxAttempts: 2,
      ...options
    });

  async function withStore<T>(
    options: Partial<S3ObjectStore.IOptions>,
    use: (store: S3ObjectStore) => Promise<T>
  ): Promise<T> {
    const store = open(options);
    try {
      return await use(store);
    } finally {
      await store.close();
    }
  }

  const put = (store: S3ObjectStore, key = 'dir/nb.ipynb', bytes = body) =>
    store.put('bucket', key, bytes, {
      sha256: sha256Hex(bytes),
      contentType: 'application/x-ipynb+json',
      metadata: { 'Save-Id': 'save-1' }
    });

  it('sends one request without the SDK and answers its version id and ETag', async () => {
    const result = await withStore({}, store => put(store));
    expect(result).toEqual({ versionId: 'v1', etag: '"etag"' });
    expect(seen).toHaveLength(1);
    const [one] = seen;
    expect(one.bySdk).toBe(false);
    expect(one.method).toBe('PUT');
    expect(one.url).toBe('/bucket/dir/nb.ipynb');
    expect(one.body.equals(body)).toBe(true);
    expect(one.headers['x-amz-meta-save-id']).toBe('save-1');
    expect(one.headers['content-type']).toBe('application/x-ipynb+json');
    expect(one.headers['content-length']).toBe(String(body.length));
    expect(one.headers['x-amz-content-sha256']).toBe(sha256Hex(body));
  });

  it('answers a null version id when the server names none, as the SDK does', async () => {
    answer = (_, response) => {
      response.writeHead(200);
      response.end();
    };
    const lean = await withStore({}, store => put(store));
    const sdk = await withStore({ leanPuts: false }, store => put(store));
    expect(lean).toEqual(sdk);
    expect(lean.versionId).toBeNull();
    expect(seen.map(each => each.bySdk)).toEqual([false, true]);
  });

  it('reuses one kept-alive connection for put after put, shared with the SDK', async () => {
    const before = new Set(sockets);
    await withStore({}, async store => {
      for (let index = 0; index < 5; index++) await put(store, `k${index}`);
      await store.get('bucket', 'k0').catch(() => undefined);
    });
    const opened = [...sockets].filter(each => !before.has(each)).length;
    // The get's answer is not an object, so it fails; it still went over the same connection.
    expect(seen).toHaveLength(6);
    expect(opened).toBeLessThanOrEqual(1);
  });

  it('puts without a SHA-256 through the SDK, as before', async () => {
    await withStore({}, store => store.put('bucket', 'k', body));
    expect(seen.map(each => each.bySdk)).toEqual([true]);
  });

  it('falls back to the SDK after a server error, which then succeeds', async () => {
    answer = (one, response) => (one.bySdk ? ok : s3Error(500, 'InternalError'))(one, response);
    const result = await withStore({}, store => put(store));
    expect(result.versionId).toBe('v2');
    expect(seen.map(each => each.bySdk)).toEqual([false, true]);
    expect(seen[1].body.equals(seen[0].body)).toBe(true);
    expect(seen[1].url.split('?')[0]).toBe(seen[0].url);
  });

  it('keeps the error kinds and codes of the SDK call: access denied, missing bucket, slow down', async () => {
    const cases: [number, string, string][] = [
      [403, 'AccessDenied', 'access-denied'],
      [404, 'NoSuchBucket', 'not-found'],
      [503, 'SlowDown', 'unavailable'],
      [400, 'XAmzContentSHA256Mismatch', 'bad-request']
    ];
    for (const [status, code, kind] of cases) {
      seen = [];
      answer = s3Error(status, code);
      const error = await withStore({}, store => failure(put(store)));
      expect({ kind: error.kind, code: error.code, ambiguous: error.ambiguous }).toEqual({
        kind,
        code,
        ambiguous: false
      });
      // The lean attempt, then the SDK's own (503 is retried: maxAttempts 2).
      expect(seen.map(each => each.bySdk)).toEqual(
        status === 503 ? [false, true, true] : [false, true]
      );
    }
  });

  it('marks the failure ambiguous when the lean attempt may have been applied', async () => {
    answer = (one, response) =>
      (one.bySdk ? s3Error(403, 'AccessDenied') : s3Error(500, 'InternalError'))(one, response);
    const error = await withStore({}, store => failure(put(store)));
    expect(error.kind).toBe('access-denied');
    expect(error.ambiguous).toBe(true);
  });

  it('falls back to the SDK when the lean attempt times out', async () => {
    answer = (one, response) => {
      if (one.bySdk) ok(one, response);
      // Else no answer at all: the lean attempt's request timeout ends it.
    };
    const started = Date.now();
    const result = await withStore({ requestTimeoutMs: 300 }, store => put(store));
    expect(result.versionId).toBe('v2');
    expect(seen.map(each => each.bySdk)).toEqual([false, true]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('stops trying the lean request after three refusals in a row that the SDK got past', async () => {
    answer = (one, response) => (one.bySdk ? ok : s3Error(400, 'InvalidRequest'))(one, response);
    await withStore({}, async store => {
      for (let index = 0; index < 5; index++) await put(store);
    });
    expect(seen.map(each => each.bySdk)).toEqual([
      ...[false, true],
      ...[false, true],
      ...[false, true],
      true,
      true
    ]);
  });

  it('leaves a put after close() to the SDK, as before', async () => {
    const store = open();
    await put(store);
    await store.close();
    seen = [];
    await put(store).catch(() => undefined);
    expect(seen.filter(each => !each.bySdk)).toEqual([]);
  });
});
