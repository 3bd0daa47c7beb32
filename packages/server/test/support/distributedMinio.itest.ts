/**
 * The distributed MinIO of `distributedMinio.ts`: four nodes form one erasure-coded pool, every
 * node serves the whole namespace, and a versioned bucket keeps writing and reading every
 * version while one node is down and after it is back.
 */
import {
  GetObjectCommand,
  ListObjectVersionsCommand,
  PutObjectCommand,
  S3Client
} from '@aws-sdk/client-s3';
import { startDistributedMinio, type IDistributedMinio } from './distributedMinio';
import { createVersionedBucket } from './objectServers';

jest.setTimeout(180_000);

const BUCKET = 'cluster-notebooks';
const KEY = 'workspace/alice/a.ipynb';

let cluster: IDistributedMinio;
const clients: S3Client[] = [];

/**
 * A client of one node, path-style with the cluster's credentials, retrying as the gateway's
 * archive does: a node that has just come back answers 503 (SlowDown, SlowDownRead) for a
 * while after its health checks pass, until it has caught up with its peers, so a few SDK
 * attempts with backoff are not always enough.
 */
function clientOf(index: number): S3Client {
  clients[index] ??= new S3Client({
    endpoint: cluster.nodes[index].endpoint,
    region: cluster.region,
    forcePathStyle: true,
    maxAttempts: 10,
    credentials: { accessKeyId: cluster.accessKeyId, secretAccessKey: cluster.secretAccessKey }
  });
  return clients[index];
}

async function put(node: number, body: string): Promise<string> {
  const written = await clientOf(node).send(
    new PutObjectCommand({ Bucket: BUCKET, Key: KEY, Body: body })
  );
  expect(written.VersionId).toEqual(expect.any(String));
  return written.VersionId as string;
}

/** Every version's body through `node`, newest first, as the listing orders them. */
async function versionsThrough(node: number): Promise<Array<{ id: string; body: string }>> {
  const client = clientOf(node);
  const listed = await client.send(new ListObjectVersionsCommand({ Bucket: BUCKET, Prefix: KEY }));
  const versions = [];
  for (const version of listed.Versions ?? []) {
    const object = await client.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: KEY, VersionId: version.VersionId })
    );
    versions.push({ id: version.VersionId ?? '', body: await object.Body!.transformToString() });
  }
  return versions;
}

beforeAll(async () => {
  cluster = await startDistributedMinio();
  await createVersionedBucket(cluster, BUCKET);
});

afterAll(async () => {
  for (const client of clients) client?.destroy();
  await cluster?.dispose();
});

test('four nodes, eight drives, one namespace', async () => {
  expect(cluster.nodes).toHaveLength(4);
  expect(new Set(cluster.endpoints).size).toBe(4);
  expect(cluster.nodes.every(node => node.running)).toBe(true);
  const first = await put(0, 'v1');
  // Written through one node, read through another.
  expect(await versionsThrough(2)).toEqual([{ id: first, body: 'v1' }]);
});

test('versions are written and read while a node is down, and after it is back', async () => {
  const before = await versionsThrough(0);
  const down = cluster.nodes[1];
  await down.stop();
  expect(down.running).toBe(false);
  await expect(fetch(`${down.endpoint}/minio/health/live`)).rejects.toThrow();
  await cluster.waitForQuorum(cluster.nodes[0]);

  const whileDown = await put(2, 'written while node 1 was down');
  const seenWhileDown = await versionsThrough(3);
  expect(seenWhileDown).toEqual([
    { id: whileDown, body: 'written while node 1 was down' },
    ...before
  ]);

  await down.restart();
  await cluster.waitForQuorum(down);
  // The node that missed the write serves it, and takes new ones.
  expect(await versionsThrough(1)).toEqual(seenWhileDown);
  const after = await put(1, 'written after node 1 came back');
  expect(await versionsThrough(0)).toEqual([
    { id: after, body: 'written after node 1 came back' },
    ...seenWhileDown
  ]);
});
