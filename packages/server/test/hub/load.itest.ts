/**
 * Many users saving at once through a real JupyterHub, archiving to a distributed MinIO (four
 * processes, two drives each, erasure-coded, versioned bucket) with one workspace prefix per
 * user, while one MinIO node is killed and started again: every save a user was told succeeded
 * is archived under that user's prefix, in save order, and each user's store API lists only
 * their own versions.
 *
 * #### Notes
 * Each user's server is `jupyter-store singleuser`; the users' gateways are shared out over the
 * four nodes, so the killed node is the endpoint of some gateways (their uploads fail until it
 * is back, and the journal keeps the saves) and a lost quarter of the drives for the others.
 * Coalescing is off (the default), and every save differs (its sequence number), so every save
 * is a version. Full size (20 users saving every 2 s for 2 minutes, the node down from 50 s to
 * 70 s): about three and a half minutes on a 2-core machine, servers started and archive read
 * back included. `npm run bench:hub` runs the same users and schedule to measure them.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { VersionListingSchema } from '@jupyter-store/contract';
import { startDistributedMinio, type IDistributedMinio } from '../support/distributedMinio';
import {
  acknowledged,
  archivedSaves,
  archiveProblems,
  now,
  runSaveSchedule,
  startLoadHub,
  type IArchivedSave,
  type ILoadHub,
  type ISaveOutcome
} from '../support/hubLoad';
import { createVersionedBucket, s3ClientFor } from '../support/objectServers';

/** Set-up, the run, the drain and the checks: under 10 minutes even on a busy machine. */
jest.setTimeout(9 * 60_000);

const BUCKET = 'hub-load';
const PATH = 'load.ipynb';
const USERS = Array.from({ length: 20 }, (_, index) => `load${index + 1}`);
const INTERVAL_MS = 2_000;
const DURATION_MS = 120_000;
/** The node killed, when, and for how long (the brief outage of one machine). */
const KILLED_NODE = 1;
const KILL_AT_MS = 50_000;
const DOWN_MS = 20_000;
/** How long the archive may take to catch up once the saves stop. */
const DRAIN_MS = 60_000;

let cluster: IDistributedMinio;
let s3: S3Client;
let load: ILoadHub;
let outcomes: ISaveOutcome[];
/** When the node was killed and when it was live again, and the Hub's log by then. */
let killedAt = 0;
let backAt = 0;
let outageLog = '';
const archived = new Map<string, IArchivedSave[]>();

beforeAll(async () => {
  cluster = await startDistributedMinio();
  await createVersionedBucket(cluster, BUCKET);
  s3 = s3ClientFor(cluster);
  load = await startLoadHub({ cluster, bucket: BUCKET, users: USERS });

  const node = cluster.nodes[KILLED_NODE];
  const outage = (async () => {
    await new Promise(resolve => setTimeout(resolve, KILL_AT_MS));
    await node.stop('SIGKILL');
    killedAt = now();
    await new Promise(resolve => setTimeout(resolve, DOWN_MS));
    await node.restart();
    backAt = now();
    // The gateways' output reaches the Hub's; read it before later lines push it out.
    outageLog = load.hub.log();
  })();
  outcomes = await runSaveSchedule({
    hub: load.hub,
    tokens: load.tokens,
    path: PATH,
    intervalMs: INTERVAL_MS,
    durationMs: DURATION_MS
  });
  await outage;
  await cluster.waitForQuorum();

  // The archive catches up: wait until each user's newest acknowledged save is a version.
  const deadline = Date.now() + DRAIN_MS;
  for (const user of USERS) {
    const last = Math.max(
      0,
      ...outcomes.filter(o => o.user === user && acknowledged(o)).map(o => o.seq)
    );
    for (;;) {
      const versions = await archivedSaves(s3, BUCKET, `workspace/${user}/`);
      archived.set(user, versions);
      if (versions.some(version => version.seq >= last) || Date.now() > deadline) break;
      await new Promise(resolve => setTimeout(resolve, 1_000));
    }
  }
});

afterAll(async () => {
  await load?.stop();
  s3?.destroy();
  await cluster?.dispose();
});

test('every user saved on schedule through the Hub, and the node outage was answered', () => {
  const expected = USERS.length * (DURATION_MS / INTERVAL_MS);
  // A save delayed by a slow one shifts the user's later saves: most still fit in the run.
  expect(outcomes.length).toBeGreaterThanOrEqual(expected * 0.8);
  const failed = outcomes.filter(outcome => !acknowledged(outcome));
  // Saves go to the server's disk, not to MinIO: a node outage must not fail them.
  expect(failed).toEqual([]);
});

test('the outage reached the archive: saves answered meanwhile, uploads retried', () => {
  const endpoint = cluster.nodes[KILLED_NODE].endpoint;
  const cutOff = USERS.filter(user => load.endpointOf[user] === endpoint);
  expect(cutOff.length).toBeGreaterThan(0);
  const meanwhile = outcomes.filter(
    o => cutOff.includes(o.user) && o.sentAt > killedAt && o.answeredAt < backAt
  );
  expect(meanwhile.length).toBeGreaterThanOrEqual(cutOff.length * 5);
  expect(meanwhile.filter(o => !acknowledged(o))).toEqual([]);
  // Their gateways could not reach the node, kept the saves in the journal and tried again.
  expect(outageLog).toContain('archive failed, retrying');
});

test('every acknowledged save is archived under its user’s prefix, in order', () => {
  const problems = USERS.flatMap(user =>
    archiveProblems(user, `workspace/${user}/${PATH}`, outcomes, archived.get(user) ?? [])
  );
  expect(problems).toEqual([]);
  for (const user of USERS) {
    const acked = outcomes.filter(o => o.user === user && acknowledged(o)).map(o => o.seq);
    expect(archived.get(user)?.map(version => version.seq)).toEqual(acked);
  }
});

test('each user’s store API lists exactly their own versions', async () => {
  for (const user of USERS) {
    const response = await fetch(
      `${load.hub.url}/user/${user}/api/store/versions/${PATH}?limit=1000`,
      { headers: { authorization: `token ${load.tokens.get(user)}` } }
    );
    expect(response.status).toBe(200);
    const listing = VersionListingSchema.parse(await response.json());
    expect(listing.workspace.object_key).toBe(`workspace/${user}/${PATH}`);
    expect(listing.next ?? null).toBeNull();
    // Newest first, as the bucket holds them.
    expect(listing.workspace.versions.map(version => version.object_version_id)).toEqual(
      (archived.get(user) ?? []).map(version => version.versionId).reverse()
    );
  }
});
