/**
 * `jupyter-store singleuser` as the spawner's command of a real JupyterHub, archiving to a real
 * MinIO with one workspace prefix per user: the Hub's login (OAuth through the gateway), saves
 * through the Hub's proxy archived under the user's prefix, users kept apart, activity the
 * gateway answered reported to the Hub, and a stop through the Hub's API that leaves nothing
 * running.
 */
import { ListObjectVersionsCommand, type S3Client } from '@aws-sdk/client-s3';
import { StoreInfoSchema, VersionListingSchema } from '@jupyter-store/contract';
import { rm } from 'node:fs/promises';
import {
  HubBrowser,
  processAlive,
  runtimeRecordsOf,
  singleuserConfigDir,
  startHub,
  type IBrowserRequest,
  type IHub
} from '../support/hub';
import { markdownNotebookModel } from '../support/notebookSaves';
import {
  createVersionedBucket,
  s3ClientFor,
  startMinio,
  type IObjectServer
} from '../support/objectServers';

jest.setTimeout(240_000);

const BUCKET = 'hub-notebooks';
const USERS = ['alice', 'bob'] as const;
type User = (typeof USERS)[number];

let minio: IObjectServer;
let s3: S3Client;
let hub: IHub;
let configDir: string | undefined;
const browsers = {} as Record<User, HubBrowser>;

beforeAll(async () => {
  configDir = await singleuserConfigDir();
  minio = await startMinio();
  await createVersionedBucket(minio, BUCKET);
  s3 = s3ClientFor(minio);
  hub = await startHub({
    singleuserArgs: [
      `--StoreSettings.object_endpoint_url=${minio.endpoint}`,
      `--StoreSettings.object_bucket=${BUCKET}`,
      '--StoreSettings.workspace_prefix=workspace/{username}',
      '--activity-interval=2'
    ],
    singleuserEnv: {
      STORE_OBJECT_ACCESS_KEY_ID: minio.accessKeyId,
      STORE_OBJECT_SECRET_ACCESS_KEY: minio.secretAccessKey,
      STORE_OBJECT_REGION_NAME: minio.region,
      // Only the gateway reports activity: the single-user server's own reports are off, and
      // the Hub does not poll the proxy's route activity during the test.
      JUPYTERHUB_ACTIVITY_INTERVAL: '0',
      JUPYTER_CONFIG_PATH: configDir
    },
    extraConfig: 'c.JupyterHub.last_activity_interval = 3600\n'
  });
  await Promise.all(USERS.map(user => hub.startServer(user)));
  for (const user of USERS) browsers[user] = await hub.login(user);
});

afterAll(async () => {
  await hub?.stop();
  s3?.destroy();
  await minio?.dispose();
  if (configDir) await rm(configDir, { recursive: true, force: true });
});

/** A request as JupyterLab in `user`'s logged-in browser sends it (its XSRF token included). */
function send(user: User, path: string, init: IBrowserRequest = {}): Promise<Response> {
  return browsers[user].fetch(`/user/${user}/${path}`, { ...init, maxRedirects: 0 });
}

async function save(user: User, path: string, text: string): Promise<void> {
  const response = await send(user, `api/contents/${path}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(markdownNotebookModel(text))
  });
  expect([200, 201]).toContain(response.status);
  await response.arrayBuffer();
}

/** The archived versions of `path` that `user`'s gateway lists, waiting for `count`. */
async function versionsOf(user: User, path: string, count: number) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const response = await send(user, `api/store/versions/${path}`);
    expect(response.status).toBe(200);
    const listing = VersionListingSchema.parse(await response.json());
    if (listing.workspace.versions.length >= count || Date.now() > deadline) return listing;
    await new Promise(resolve => setTimeout(resolve, 250));
  }
}

async function keysUnder(prefix: string): Promise<string[]> {
  const listed = await s3.send(new ListObjectVersionsCommand({ Bucket: BUCKET, Prefix: prefix }));
  return (listed.Versions ?? []).map(version => version.Key ?? '');
}

test('the Hub logs each user in through the gateway, OAuth callback included', () => {
  for (const user of USERS) {
    expect(browsers[user].visited).toContain(`/user/${user}/oauth_callback`);
    expect(browsers[user].visited.at(-1)).toBe(`/user/${user}/lab`);
    expect(browsers[user].cookie(`jupyterhub-user-${user}`, `/user/${user}/`)).toBeDefined();
  }
});

test('the gateway answers the store API at /user/<name>/api/store', async () => {
  const response = await send('alice', 'api/store');
  expect(response.status).toBe(200);
  const info = StoreInfoSchema.parse(await response.json());
  expect(info.features.archive_valid).toBe(true);
  expect(info.object_bucket).toBe(BUCKET);
  // The single-user server runs Jupyter's stock contents manager: the gateway answers saves.
  const { backend, reason } = info.contents_backend ?? {};
  expect({ backend, reason }).toEqual({ backend: 'node', reason: expect.any(String) });
});

test('a save through the Hub is archived under its user’s prefix, apart from others', async () => {
  await save('alice', 'alice-notes.ipynb', 'by alice');
  await save('bob', 'bob-notes.ipynb', 'by bob');
  await save('bob', 'shared-name.ipynb', 'bob’s copy');

  const alice = await versionsOf('alice', 'alice-notes.ipynb', 1);
  expect(alice.workspace.object_key).toBe('workspace/alice/alice-notes.ipynb');
  expect(alice.workspace.versions).toHaveLength(1);
  expect(await versionsOf('bob', 'bob-notes.ipynb', 1)).toMatchObject({
    workspace: { object_key: 'workspace/bob/bob-notes.ipynb' }
  });
  await versionsOf('bob', 'shared-name.ipynb', 1);

  expect(await keysUnder('workspace/alice/')).toEqual(['workspace/alice/alice-notes.ipynb']);
  expect((await keysUnder('workspace/bob/')).sort()).toEqual([
    'workspace/bob/bob-notes.ipynb',
    'workspace/bob/shared-name.ipynb'
  ]);
  // The same path in alice's server lists alice's (absent) copy, never bob's.
  const sameName = await send('alice', 'api/store/versions/shared-name.ipynb');
  expect(sameName.status).toBe(200);
  expect(VersionListingSchema.parse(await sameName.json()).workspace.versions).toEqual([]);
});

test('a user cannot reach another user’s store API', async () => {
  const browser = browsers.bob;
  const response = await browser.fetch('/user/alice/api/store', { maxRedirects: 0 });
  await response.arrayBuffer();
  expect(response.status).toBe(403);
});

test('activity the gateway answered itself reaches the Hub', async () => {
  const before = (await hub.user('alice')).servers[''].last_activity;
  expect(before).not.toBeNull();
  const savedAt = new Date();
  await save('alice', 'activity.ipynb', 'keeps alice active');
  const deadline = Date.now() + 20_000;
  let after = before;
  while (Date.now() < deadline) {
    after = (await hub.user('alice')).servers[''].last_activity;
    if (after !== null && Date.parse(after) >= savedAt.getTime() - 5) break;
    await new Promise(resolve => setTimeout(resolve, 250));
  }
  expect(Date.parse(after ?? '')).toBeGreaterThan(Date.parse(before ?? ''));
  expect(Date.parse(after ?? '')).toBeGreaterThanOrEqual(savedAt.getTime() - 5);
});

test('stopping the server through the Hub stops the gateway and the single-user server', async () => {
  const model = await hub.user('bob');
  const gatewayPid = model.servers[''].state?.pid;
  expect(gatewayPid).toEqual(expect.any(Number));
  const records = await runtimeRecordsOf(hub.homeOf('bob'));
  const record = records.find(r => r.base_url === '/user/bob/');
  expect(record).toBeDefined();
  const upstreamPid = record?.upstream_pid as number;
  expect(processAlive(upstreamPid)).toBe(true);

  await hub.stopServer('bob');
  const deadline = Date.now() + 30_000;
  while ((processAlive(gatewayPid!) || processAlive(upstreamPid)) && Date.now() < deadline) {
    await new Promise(resolve => setTimeout(resolve, 200));
  }
  expect(processAlive(gatewayPid!)).toBe(false);
  expect(processAlive(upstreamPid)).toBe(false);
  // The gateway removed its runtime record, as a clean stop does.
  expect(await runtimeRecordsOf(hub.homeOf('bob'))).toEqual([]);
});
