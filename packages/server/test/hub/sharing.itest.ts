/**
 * Sharing a notebook on a real JupyterHub, in Chromium: alice logs in through the Hub's login
 * page, edits and saves a notebook in JupyterLab (our extension loaded by `jupyter-store
 * singleuser`), publishes it and copies the clone link, which goes through the Hub's
 * `user-redirect`; bob opens that link, logs in, starts his server, and the landing page of his
 * own server clones the notebook into it, where JupyterLab opens it. A real MinIO behind both.
 *
 * A jest suite rather than a ui-tests spec: the Hub, its proxy and the users' servers come from
 * the Hub harness of these tests (`support/hub.ts`), and the UI tests' global set-up starts a
 * gateway of its own that this test has no use for.
 */
import { GetObjectCommand, ListObjectVersionsCommand, type S3Client } from '@aws-sdk/client-s3';
import { VersionListingSchema } from '@jupyter-store/contract';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from '../support/browser';
import { singleuserConfigDir, startHub, type IHub } from '../support/hub';
import {
  createVersionedBucket,
  s3ClientFor,
  startMinio,
  type IObjectServer
} from '../support/objectServers';

jest.setTimeout(360_000);

const BUCKET = 'hub-sharing';
const NOTEBOOK = 'alice-report.ipynb';
/** How long a page may take to appear: a server's start included, on a loaded machine. */
const PAGE_TIMEOUT = 120_000;

let minio: IObjectServer;
let s3: S3Client;
let hub: IHub;
let configDir: string | undefined;
let browser: Browser;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  configDir = await singleuserConfigDir({ publish: true });
  minio = await startMinio();
  await createVersionedBucket(minio, BUCKET);
  s3 = s3ClientFor(minio);
  hub = await startHub({
    singleuserArgs: [
      `--StoreSettings.object_endpoint_url=${minio.endpoint}`,
      `--StoreSettings.object_bucket=${BUCKET}`,
      '--StoreSettings.workspace_prefix=workspace/{username}'
    ],
    singleuserEnv: {
      STORE_OBJECT_ACCESS_KEY_ID: minio.accessKeyId,
      STORE_OBJECT_SECRET_ACCESS_KEY: minio.secretAccessKey,
      STORE_OBJECT_REGION_NAME: minio.region,
      JUPYTER_CONFIG_PATH: configDir
    }
  });
  // Alice's notebook, there before her server starts; she edits it in JupyterLab.
  await mkdir(hub.homeOf('alice'), { recursive: true });
  await writeFile(
    join(hub.homeOf('alice'), NOTEBOOK),
    JSON.stringify({
      cells: [
        {
          cell_type: 'code',
          execution_count: null,
          id: 'c1',
          metadata: {},
          outputs: [],
          source: 'x = 1'
        }
      ],
      metadata: {
        kernelspec: { display_name: 'Python 3', language: 'python', name: 'python3' }
      },
      nbformat: 4,
      nbformat_minor: 5
    })
  );
  browser = await launchChromium();
});

afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => undefined);
  await browser?.close();
  await hub?.stop();
  s3?.destroy();
  await minio?.dispose();
  if (configDir) await rm(configDir, { recursive: true, force: true });
});

/** A fresh browser profile, with the clipboard open to pages of the Hub. */
async function newPage(): Promise<Page> {
  const context = await browser.newContext();
  contexts.push(context);
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: hub.url });
  const page = await context.newPage();
  page.setDefaultTimeout(PAGE_TIMEOUT);
  return page;
}

/**
 * Fill the Hub's login form on `page`, send it, and start the server where the Hub asks: for a
 * URL of a server that does not run, it either offers to start it (`/user/<name>/…`: no
 * implicit spawn by default) or starts it (`user-redirect`), then goes on to the URL.
 */
async function logInAndStart(page: Page, user: string): Promise<void> {
  await page.locator('#username_input').fill(user);
  await page.locator('#password_input').fill(hub.password);
  await page.locator('#login_submit').click();
  const start = page.locator('#start');
  const offered = start.waitFor().then(
    () => true,
    () => false
  );
  const arrived = page
    .waitForURL(url => url.pathname.startsWith(`/user/${user}/`))
    .then(
      () => false,
      () => false
    );
  if (await Promise.race([offered, arrived])) await start.click();
}

/** Wait until `user`'s file `name` holds `text`. */
async function waitForFile(user: string, name: string, text: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  let content = '';
  while (Date.now() < deadline) {
    content = await readFile(join(hub.homeOf(user), name), 'utf8').catch(() => '');
    if (content.includes(text)) return;
    await new Promise(resolve => setTimeout(resolve, 250));
  }
  expect(content).toContain(text);
}

/** The archived versions of `key`, waiting until there are at least `count`. */
async function versionsOf(key: string, count: number): Promise<string[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const listed = await s3.send(new ListObjectVersionsCommand({ Bucket: BUCKET, Prefix: key }));
    const ids = (listed.Versions ?? [])
      .filter(version => version.Key === key)
      .map(version => version.VersionId ?? '');
    if (ids.length >= count || Date.now() > deadline) return ids;
    await new Promise(resolve => setTimeout(resolve, 250));
  }
}

/** Wait until the newest version of `key` holds `text`. */
async function waitForObject(key: string, text: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  let content = '';
  while (Date.now() < deadline) {
    try {
      const object = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
      content = (await object.Body?.transformToString()) ?? '';
      if (content.includes(text)) return;
    } catch {
      // not archived yet
    }
    await new Promise(resolve => setTimeout(resolve, 250));
  }
  expect({ key, content }).toEqual({ key, content: expect.stringContaining(text) });
}

/** A token of `user`'s for the Hub's proxy, from the Hub's API. */
async function tokenOf(user: string): Promise<string> {
  const created = await hub.api('POST', `users/${user}/tokens`, { note: 'sharing test' });
  expect(created.status).toBe(201);
  return ((await created.json()) as { token: string }).token;
}

test("a published notebook's link clones it into the recipient's own server", async () => {
  // Alice: the Hub's login page, her server starts, JupyterLab opens her notebook.
  const alice = await newPage();
  await alice.goto(
    `${hub.url}/hub/login?next=${encodeURIComponent(`/user/alice/lab/tree/${NOTEBOOK}`)}`
  );
  await logInAndStart(alice, 'alice');
  await alice.waitForURL(`${hub.url}/user/alice/lab/tree/${NOTEBOOK}`);
  const editor = alice.locator('.jp-NotebookPanel .jp-Cell .cm-content').first();
  await editor.click();
  await alice.keyboard.press('End');
  await alice.keyboard.type('  # shared by alice');
  await alice.keyboard.press('Control+s');
  await waitForFile('alice', NOTEBOOK, 'x = 1  # shared by alice');
  await waitForObject(`workspace/alice/${NOTEBOOK}`, '# shared by alice');

  // Publish from the notebook's toolbar: the button is there because the Hub's JupyterLab
  // loaded the extension and the server said publishing is on.
  await alice.locator('.jp-NotebookPanel-toolbar [data-command="jupyter-store:publish"]').click();
  await alice.locator('.jp-Dialog').getByRole('button', { name: 'Publish' }).click();
  // The publish dialog closes as the result opens: wait for the result, not the moment between.
  const result = alice.locator('.jp-Dialog', {
    has: alice.locator('.jp-Dialog-header', { hasText: 'Published' })
  });
  await result.waitFor();
  await expect(result.locator('.jp-Dialog-header').textContent()).resolves.toBe('Published');
  await result.getByRole('button', { name: 'Copy clone link' }).click();
  await result.locator('.jp-store-Copied', { hasText: 'Copied' }).waitFor();
  const link = String(await alice.evaluate('navigator.clipboard.readText()'));
  expect(await result.locator('input[name="clone-link"]').inputValue()).toBe(link);
  expect(link).toBe(
    `${hub.url}/hub/user-redirect/store/clone?object_bucket=${BUCKET}` +
      `&object_key=${encodeURIComponent(`published/${NOTEBOOK}`)}`
  );
  await result.getByRole('button', { name: 'Close' }).click();

  // Bob, in a fresh browser with no server running: the link leads to the Hub's login, to the
  // start of his server, through his server's own login (JupyterLab's page, which the
  // extension leaves for the landing page), to the landing page of his server, not alice's.
  expect((await hub.user('bob').catch(() => null))?.servers[''] ?? null).toBeNull();
  const bob = await newPage();
  const visited: string[] = [];
  bob.on('framenavigated', frame => {
    if (frame === bob.mainFrame()) visited.push(new URL(frame.url()).pathname);
  });
  await bob.goto(link);
  await logInAndStart(bob, 'bob');
  await bob.waitForURL(url => url.pathname === '/user/bob/store/clone');
  expect(visited).toContain('/hub/login');
  expect(visited).toContain('/user/bob/lab');
  expect(visited.some(path => path.startsWith('/user/alice/'))).toBe(false);
  expect(new URL(bob.url()).searchParams.get('object_key')).toBe(`published/${NOTEBOOK}`);
  await expect(bob.locator('#target_path').inputValue()).resolves.toBe(NOTEBOOK);
  await bob.locator('#clone-button').click();
  await bob.waitForURL(`${hub.url}/user/bob/lab/tree/${NOTEBOOK}`);
  await bob
    .locator('.jp-NotebookPanel .jp-Cell .cm-content', { hasText: '# shared by alice' })
    .waitFor();

  // The copy is bob's: in his home, archived under his prefix; alice's home is as it was.
  const cloned = JSON.parse(await readFile(join(hub.homeOf('bob'), NOTEBOOK), 'utf8')) as {
    cells: { source: string | string[] }[];
  };
  expect([cloned.cells[0].source].flat().join('')).toBe('x = 1  # shared by alice');
  expect((await readdir(hub.homeOf('alice'))).filter(name => name.endsWith('.ipynb'))).toEqual([
    NOTEBOOK
  ]);
  expect(existsSync(join(hub.homeOf('alice'), 'alice-report-1.ipynb'))).toBe(false);
  await waitForObject(`workspace/bob/${NOTEBOOK}`, '# shared by alice');

  // Bob's listing of the notebook: his own archived versions, none of alice's.
  const bobToken = await tokenOf('bob');
  const listed = await fetch(`${hub.url}/user/bob/api/store/versions/${NOTEBOOK}`, {
    headers: { Authorization: `token ${bobToken}` },
    signal: AbortSignal.timeout(30_000)
  });
  expect(listed.status).toBe(200);
  const listing = VersionListingSchema.parse(await listed.json());
  expect(listing.workspace.object_key).toBe(`workspace/bob/${NOTEBOOK}`);
  const bobVersions = await versionsOf(`workspace/bob/${NOTEBOOK}`, 1);
  const aliceVersions = await versionsOf(`workspace/alice/${NOTEBOOK}`, 1);
  const ids = listing.workspace.versions.map(version => version.object_version_id);
  expect(ids.length).toBeGreaterThan(0);
  expect(ids.every(id => bobVersions.includes(id))).toBe(true);
  expect(ids.some(id => aliceVersions.includes(id))).toBe(false);
});
