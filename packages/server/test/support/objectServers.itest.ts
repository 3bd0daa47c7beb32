/**
 * The real S3 servers of `objectServers.ts`: both start, a versioned bucket keeps every version,
 * a restart keeps the data at the same endpoint, and `stop()` frees the port.
 */
import {
  GetObjectCommand,
  ListObjectVersionsCommand,
  PutObjectCommand,
  type S3Client
} from '@aws-sdk/client-s3';
import { createServer } from 'node:net';
import {
  createVersionedBucket,
  s3ClientFor,
  startObjectServerOfKind,
  type IObjectServer,
  type ObjectServerKind
} from './objectServers';

/** Whether something can listen on 127.0.0.1:`port` now. */
function canListen(port: number): Promise<boolean> {
  return new Promise(resolve => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function getText(client: S3Client, bucket: string, key: string, versionId?: string) {
  const res = await client.send(
    new GetObjectCommand({ Bucket: bucket, Key: key, VersionId: versionId })
  );
  return res.Body!.transformToString('utf-8');
}

describe.each<ObjectServerKind>(['minio', 'versitygw'])('%s', kind => {
  let server: IObjectServer;
  let client: S3Client;
  const bucket = 'notebooks';
  const key = 'dir/a.ipynb';

  beforeAll(async () => {
    server = await startObjectServerOfKind(kind);
    client = s3ClientFor(server);
  });

  afterAll(async () => {
    client?.destroy();
    await server?.dispose();
  });

  it('runs on loopback with the documented handle', () => {
    expect(server.kind).toBe(kind);
    expect(server.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.region).toBe('us-east-1');
    expect(server.running).toBe(true);
    expect(server.pid).toEqual(expect.any(Number));
  });

  it('keeps every version in a versioned bucket', async () => {
    await createVersionedBucket(server, bucket);
    const first = await client.send(
      new PutObjectCommand({ Bucket: bucket, Key: key, Body: Buffer.from('first') })
    );
    const second = await client.send(
      new PutObjectCommand({ Bucket: bucket, Key: key, Body: Buffer.from('second') })
    );
    expect(first.VersionId).toBeTruthy();
    expect(second.VersionId).toBeTruthy();
    expect(second.VersionId).not.toBe(first.VersionId);

    const listed = await client.send(
      new ListObjectVersionsCommand({ Bucket: bucket, Prefix: key })
    );
    const ids = (listed.Versions ?? []).filter(v => v.Key === key).map(v => v.VersionId);
    expect(new Set(ids)).toEqual(new Set([first.VersionId, second.VersionId]));

    expect(await getText(client, bucket, key)).toBe('second');
    expect(await getText(client, bucket, key, first.VersionId)).toBe('first');
  });

  it('answers a malformed VersionId with InvalidArgument (400)', async () => {
    const error = await getText(client, bucket, key, 'not a version id!').then(
      () => undefined,
      (e: unknown) => e as { name?: string; $metadata?: { httpStatusCode?: number } }
    );
    expect(error).toBeDefined();
    expect(error?.name === 'InvalidArgument' || error?.$metadata?.httpStatusCode === 400).toBe(
      true
    );
  });

  it('keeps its data across stop() and restart() at the same endpoint', async () => {
    const endpoint = server.endpoint;
    await server.stop();
    expect(server.running).toBe(false);
    expect(server.pid).toBeUndefined();
    // Refused while down; the SDK's own retries make this take a moment.
    await expect(getText(client, bucket, key)).rejects.toBeDefined();
    await server.restart();
    expect(server.endpoint).toBe(endpoint);
    expect(await getText(client, bucket, key)).toBe('second');
    const listed = await client.send(
      new ListObjectVersionsCommand({ Bucket: bucket, Prefix: key })
    );
    expect(listed.Versions ?? []).toHaveLength(2);
  });

  it('hangs while paused and answers again after resume()', async () => {
    server.pause();
    try {
      const res = await fetch(`${server.endpoint}/`, { signal: AbortSignal.timeout(500) }).then(
        () => 'answered',
        (e: Error) => e.name
      );
      expect(res).toBe('TimeoutError');
    } finally {
      server.resume();
    }
    expect(await getText(client, bucket, key)).toBe('second');
  });

  it('frees its port on stop()', async () => {
    const port = server.port;
    expect(await canListen(port)).toBe(false);
    await server.stop();
    expect(await canListen(port)).toBe(true);
  });
});
