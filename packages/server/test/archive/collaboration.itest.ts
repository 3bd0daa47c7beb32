/**
 * Real-time collaboration's saves become versions, driven in Chromium as a person would: the
 * real `jupyter-store lab` CLI runs the ecosystem venv's JupyterLab with jupyter-collaboration
 * (jupyter-server-ydoc), archiving to a real MinIO.
 *
 * With collaboration the browser never `PUT`s an open notebook to the contents API: Ctrl+S is a
 * `save` message on the document's room websocket, and the server also autosaves
 * `document_save_delay` (1 s) after edits, both through Python's contents manager, which the
 * gateway never sees. Those saves reach the archive only through Jupyter's `contents_service`
 * events or the file-system watcher; this spec checks that both kinds arrive, as the bytes on
 * disk, once each, and that collaboration's hidden files (`.jupyter_ystore.db`, `.jupyter/`,
 * `.ipynb_checkpoints/`) never do.
 *
 * The steps are sequential tests sharing one browser page: each needs the ones before it.
 */
import {
  GetObjectCommand,
  ListObjectVersionsCommand,
  type DeleteMarkerEntry,
  type ObjectVersion,
  type S3Client
} from '@aws-sdk/client-s3';
import { StoreInfoSchema, type StoreInfo } from '@jupyter-store/contract';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Browser, BrowserContext, Page, Request, WebSocket } from 'playwright-core';
import { launchChromium } from '../support/browser';
import { ecosystemLabDefaults } from '../support/ecosystem';
import { startGatewayProcess, type IGatewayProcess } from '../support/gateway';
import {
  createVersionedBucket,
  s3ClientFor,
  startMinio,
  type IObjectServer
} from '../support/objectServers';

jest.setTimeout(180_000);

/** Lab's first load (webpack chunks, settings, the collaboration room, the kernel) is slow. */
const LAB_LOAD_MS = 90_000;
/** From Ctrl+S, or from the last keystroke before an autosave, to the version in MinIO. */
const VERSION_MS = 20_000;
/** From a version's arrival to the file on disk and the newest version being equal. */
const SETTLE_MS = 10_000;
/** The room's answer to a `save` message. */
const SAVE_REPLY_MS = 10_000;
/** How long the bucket must stay unchanged before it is checked for duplicates. */
const QUIET_MS = 3_000;
const QUIET_BOUND_MS = 30_000;

const BUCKET = 'collaboration';
const PREFIX = 'workspace';
const RUN = randomBytes(4).toString('hex');
const NAME = `collab-${RUN}.ipynb`;
const KEY = `${PREFIX}/${NAME}`;
/** Typed into the cell, then Ctrl+S. Plain Python without brackets or quotes: CodeMirror
 * closes those itself. */
const SAVE_MARKER = `ctrl_s_marker_${RUN} = 1`;
/** Typed on a new line, never saved by the browser: collaboration's autosave writes it. */
const AUTOSAVE_MARKER = `autosave_marker_${RUN} = 2`;

/** What the room websocket of the notebook carried. */
interface IRoomTraffic {
  /** `json:notebook:<file id>` */
  room: string;
  /** `save` messages the browser sent (Date.now() of each). */
  savesSent: number[];
  /** The room's JSON answers to them. */
  saveReplies: { responseTo?: number; status?: string; at: number }[];
}

interface IContext {
  minio: IObjectServer;
  client: S3Client;
  rootDir: string;
  gateway: IGatewayProcess;
  browser: Browser;
  context: BrowserContext;
  page: Page;
}

const started: Partial<IContext> = {};
let page: Page | undefined;
let room: IRoomTraffic | undefined;
/** When the first `kernel_info_reply` reached the page: Lab then writes `language_info`. */
let kernelInfoAt: number | undefined;
/** Set by each step that passed; a step needs the ones before it. */
const passed = new Set<string>();
/** Timings and evidence, printed after the run. */
const figures: Record<string, unknown> = {};

const pageErrors: string[] = [];
const consoleLines: string[] = [];
const websockets: string[] = [];
const failedRequests: string[] = [];
/** One request of the page to the contents API or the collaboration API. */
interface IApiRequest {
  /** Date.now() when sent. */
  at: number;
  method: string;
  path: string;
  query: string;
  status?: number;
  /** The `hash` of a `?hash=1` answer: what Lab compares with its own before saving. */
  hash?: string;
}
/** Every request the page made to the contents API or the collaboration API. */
const apiRequests: IApiRequest[] = [];

const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms));

function keep(list: string[], entry: string, max = 60): void {
  list.push(entry);
  if (list.length > max) list.splice(0, list.length - max);
}

function tail(text: string, lines: number): string {
  return text.split('\n').slice(-lines).join('\n');
}

/** Hide the token in anything that ends up in an error message. */
function scrub(text: string): string {
  const token = started.gateway?.token;
  return token ? text.split(token).join('<token>') : text;
}

/** An error that ends a {@link poll} at once (any other error of a probe means "not yet"). */
class Fatal extends Error {}

/**
 * Poll `probe` until it returns a value; throw after `timeoutMs` with `what` and the last state
 * `probe` described. Returns the value and how long it took.
 */
async function poll<T>(
  what: string,
  timeoutMs: number,
  probe: (note: (state: string) => void) => Promise<T | undefined>,
  intervalMs = 100
): Promise<{ value: T; ms: number }> {
  const startedAt = Date.now();
  let last = '(nothing observed)';
  const note = (state: string): void => {
    last = state;
  };
  for (;;) {
    let value: T | undefined;
    try {
      value = await probe(note);
    } catch (error) {
      if (error instanceof Fatal) throw error;
      last = `error: ${(error as Error).message}`;
    }
    if (value !== undefined) return { value, ms: Date.now() - startedAt };
    if (Date.now() - startedAt > timeoutMs) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${last}`);
    }
    await sleep(intervalMs);
  }
}

/** A step that cannot run because one it needs failed (reported there, with diagnostics). */
class EarlierStepFailed extends Error {}

function requireSteps(...steps: string[]): IContext {
  const missing = steps.filter(step => !passed.has(step));
  if (missing.length) throw new EarlierStepFailed(`an earlier step failed: ${missing.join(', ')}`);
  return started as IContext;
}

// ---------------------------------------------------------------------------------------------
// The bucket
// ---------------------------------------------------------------------------------------------

/** Every version and delete marker below `prefix`, in listing order (newest first per key). */
async function listAll(
  client: S3Client,
  prefix: string
): Promise<{ versions: ObjectVersion[]; deleteMarkers: DeleteMarkerEntry[] }> {
  const versions: ObjectVersion[] = [];
  const deleteMarkers: DeleteMarkerEntry[] = [];
  let keyMarker: string | undefined;
  let versionIdMarker: string | undefined;
  for (;;) {
    const listed = await client.send(
      new ListObjectVersionsCommand({
        Bucket: BUCKET,
        Prefix: prefix,
        KeyMarker: keyMarker,
        VersionIdMarker: versionIdMarker
      }),
      { abortSignal: AbortSignal.timeout(15_000) }
    );
    versions.push(...(listed.Versions ?? []));
    deleteMarkers.push(...(listed.DeleteMarkers ?? []));
    if (!listed.IsTruncated || listed.NextKeyMarker === undefined) break;
    keyMarker = listed.NextKeyMarker;
    versionIdMarker = listed.NextVersionIdMarker;
  }
  return { versions, deleteMarkers };
}

/** The versions of the notebook's key, newest first. */
async function notebookVersions(client: S3Client): Promise<ObjectVersion[]> {
  return (await listAll(client, KEY)).versions.filter(version => version.Key === KEY);
}

interface IFetchedVersion {
  versionId: string;
  etag: string;
  body: Buffer;
  /** Our object metadata (`writer` is the source that saw the change first). */
  metadata: Record<string, string>;
}

async function getVersion(
  client: S3Client,
  versionId: string | undefined
): Promise<IFetchedVersion> {
  const output = await client.send(
    new GetObjectCommand({ Bucket: BUCKET, Key: KEY, VersionId: versionId }),
    { abortSignal: AbortSignal.timeout(15_000) }
  );
  return {
    versionId: output.VersionId ?? '',
    etag: output.ETag ?? '',
    body: Buffer.from(await output.Body!.transformToByteArray()),
    metadata: output.Metadata ?? {}
  };
}

/** The newest version of the notebook, or undefined while there is none. */
async function newestVersion(client: S3Client): Promise<IFetchedVersion | undefined> {
  const versions = await notebookVersions(client);
  const newest = versions.find(version => version.IsLatest) ?? versions[0];
  return newest ? getVersion(client, newest.VersionId) : undefined;
}

function describeVersion(version: IFetchedVersion | undefined): string {
  if (!version) return '(no version)';
  return (
    `version ${version.versionId} (writer ${version.metadata.writer ?? '?'}, ` +
    `${version.body.length} bytes): ${JSON.stringify(version.body.toString('utf8').slice(0, 400))}`
  );
}

/** How long the notebook must have been left alone by collaboration before typing. */
const UNTOUCHED_MS = 2_000;

/**
 * Wait until collaboration has nothing left to save and the archive has caught up: the tab is
 * not dirty, the file was not written for {@link UNTOUCHED_MS} (twice `document_save_delay`), and
 * the newest version is the file. Opening the notebook changes it (the kernel's `language_info`,
 * nbformat's layout) and the room autosaves that; a Ctrl+S while Lab has not yet learnt the hash
 * of such an autosave meets Lab's "File Changed" dialog (an upstream race, jupyter-collaboration
 * #317; jupytext #1447), which is not what this spec is about.
 */
async function untouched(target: Page, client: S3Client, rootDir: string): Promise<number> {
  const diskPath = join(rootDir, NAME);
  const { ms } = await poll(
    'collaboration to leave the notebook alone',
    30_000,
    async note => {
      const dirty = await target.locator('.lm-TabBar-tab.jp-mod-dirty').count();
      // From the file's last write, or from the kernel's info if later: Lab puts the kernel's
      // language_info into the document then, and the room saves that a second later.
      const since = Math.max((await stat(diskPath)).mtimeMs, kernelInfoAt ?? Infinity);
      const quietMs = Date.now() - since;
      const disk = await readFile(diskPath);
      const newest = await newestVersion(client);
      const archived = newest?.body.equals(disk) ?? false;
      note(
        `dirty tabs ${dirty}; file unwritten for ${Math.round(quietMs)} ms; archived ${archived}`
      );
      return dirty === 0 && quietMs >= UNTOUCHED_MS && archived ? true : undefined;
    },
    250
  );
  return ms;
}

/** Whether the notebook on disk holds `marker` yet (to tell a missing save from a missing archive). */
async function diskState(rootDir: string, marker: string): Promise<string> {
  const disk = await readFile(join(rootDir, NAME)).catch(() => undefined);
  if (!disk) return 'the notebook is missing on disk';
  return disk.includes(marker) ? 'the marker is on disk' : 'the marker is NOT on disk';
}

/**
 * Wait until the newest version and the file on disk are the same bytes (a later autosave may
 * still be on its way when the first version with the marker arrives).
 */
async function newestEqualsDisk(client: S3Client, diskPath: string): Promise<IFetchedVersion> {
  const { value } = await poll(
    'the newest version to equal the file on disk',
    SETTLE_MS,
    async note => {
      const newest = await newestVersion(client);
      const disk = await readFile(diskPath);
      note(
        `disk ${JSON.stringify(disk.toString('utf8').slice(0, 400))}; newest ${describeVersion(newest)}`
      );
      return newest && newest.body.equals(disk) ? newest : undefined;
    },
    250
  );
  return value;
}

// ---------------------------------------------------------------------------------------------
// The gateway's status
// ---------------------------------------------------------------------------------------------

async function storeInfo(gateway: IGatewayProcess): Promise<StoreInfo> {
  const response = await fetch(gateway.url('api/store'), {
    headers: { Authorization: `token ${gateway.token}` },
    signal: AbortSignal.timeout(10_000)
  });
  if (response.status !== 200) {
    throw new Error(`GET api/store answered ${response.status}: ${await response.text()}`);
  }
  return StoreInfoSchema.parse(await response.json());
}

type Sources = NonNullable<NonNullable<StoreInfo['archive']>['sources']>;

async function sourceCounts(gateway: IGatewayProcess): Promise<Sources> {
  const info = await storeInfo(gateway);
  const sources = info.archive?.sources;
  if (!sources) throw new Error(`GET api/store has no archive sources: ${JSON.stringify(info)}`);
  return sources;
}

/** Versions made from changes seen by Jupyter's events or by the watcher. */
const otherWriters = (sources: Sources): number =>
  sources.events.archived + sources.watcher.archived;

// ---------------------------------------------------------------------------------------------
// The browser
// ---------------------------------------------------------------------------------------------

function payloadBuffer(payload: string | Buffer): Buffer {
  return typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
}

/** The browser's save request: a RAW message whose var-string is `save`, then a var-uint id. */
const SAVE_REQUEST = Buffer.from([4, ...Buffer.from('save', 'ascii')]);

function watchRoom(socket: WebSocket, roomName: string): IRoomTraffic {
  const traffic: IRoomTraffic = { room: roomName, savesSent: [], saveReplies: [] };
  socket.on('framesent', frame => {
    const bytes = payloadBuffer(frame.payload);
    if (bytes.length <= 16 && bytes.indexOf(SAVE_REQUEST) === 1) traffic.savesSent.push(Date.now());
  });
  socket.on('framereceived', frame => {
    const text = payloadBuffer(frame.payload).toString('latin1');
    if (!text.includes('"responseTo"')) return;
    try {
      const reply = JSON.parse(text.slice(text.indexOf('{'))) as {
        type?: string;
        responseTo?: number;
        status?: string;
      };
      if (reply.type === 'save') {
        traffic.saveReplies.push({
          responseTo: reply.responseTo,
          status: reply.status,
          at: Date.now()
        });
      }
    } catch {
      // not a JSON message
    }
  });
  return traffic;
}

/**
 * Lab shows things that can stand in the way: a kernel choice (accepted: the notebook names an
 * installed kernel) and the news question (answered No). A dialog about the file changing on
 * disk would mean that the archive wrote to the notebook: that fails the test.
 */
async function dismissInterruptions(target: Page): Promise<string[]> {
  const dismissed: string[] = [];
  for (let round = 0; round < 5; round++) {
    const dialog = target.locator('.jp-Dialog').first();
    if (!(await dialog.isVisible().catch(() => false))) break;
    const text = (await dialog.innerText().catch(() => '')).replace(/\s+/g, ' ').trim();
    if (/file changed|has changed on disk|overwrite|revert/i.test(text)) {
      throw new Fatal(`Lab says the notebook changed under it: ${text}`);
    }
    const button = /kernel/i.test(text)
      ? dialog.locator('button.jp-mod-accept').first()
      : dialog.locator('button.jp-mod-reject').first();
    if (await button.isVisible().catch(() => false)) await button.click({ timeout: 5_000 });
    else await target.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden', timeout: 5_000 }).catch(() => undefined);
    dismissed.push(text);
  }
  const news = target
    .locator('.Toastify__toast')
    .filter({ hasText: /news/i })
    .getByRole('button', { name: /^no$/i })
    .first();
  if (await news.isVisible().catch(() => false)) {
    await news.click({ timeout: 5_000 }).catch(() => undefined);
    dismissed.push('news toast');
  }
  return dismissed;
}

/** The CodeMirror editor of the notebook's first cell. */
function firstEditor(target: Page) {
  return target
    .locator('.jp-NotebookPanel:visible .jp-Notebook .jp-Cell')
    .first()
    .locator('.jp-InputArea-editor .cm-content')
    .first();
}

/** Click into the first cell, go to its end, and type `text` (on a new line with `newLine`). */
async function typeIntoFirstCell(target: Page, text: string, newLine: boolean): Promise<void> {
  await dismissInterruptions(target);
  const editor = firstEditor(target);
  await editor.waitFor({ state: 'visible' });
  await editor.click();
  await target.keyboard.press('Control+End');
  if (newLine) await target.keyboard.press('Enter');
  await target.keyboard.type(text);
  await poll(`the cell editor to show ${JSON.stringify(text)}`, 5_000, async note => {
    const shown = await editor.innerText();
    note(JSON.stringify(shown));
    return shown.includes(text) ? true : undefined;
  });
}

async function screenshot(target: Page, label: string): Promise<string> {
  const file = join(tmpdir(), `collaboration-itest-${process.pid}-${label}-${Date.now()}.png`);
  await writeFile(file, await target.screenshot({ fullPage: true, timeout: 10_000 }));
  return file;
}

/** Everything that helps to understand a failure, as one block of text. */
async function diagnostics(): Promise<string> {
  const parts: string[] = [];
  if (page && !page.isClosed()) {
    parts.push(`page URL: ${page.url()}`);
    try {
      parts.push(`screenshot: ${await screenshot(page, 'failure')}`);
    } catch (error) {
      parts.push(`screenshot failed: ${(error as Error).message}`);
    }
  }
  parts.push(`room: ${JSON.stringify(room ?? null)}`);
  parts.push(`page errors:\n${pageErrors.join('\n') || '(none)'}`);
  parts.push(`last console messages:\n${consoleLines.join('\n') || '(none)'}`);
  parts.push(`failed requests:\n${failedRequests.join('\n') || '(none)'}`);
  parts.push(`websockets:\n${websockets.join('\n') || '(none)'}`);
  const api = apiRequests
    .slice(-30)
    .map(
      r =>
        `${new Date(r.at).toISOString()} ${r.status ?? '…'} ${r.method} ${r.path}` +
        `${r.query.includes('hash=1') ? ` (hash=1 → ${r.hash ?? '?'})` : ''}`
    );
  parts.push(`contents and collaboration requests:\n${api.join('\n') || '(none)'}`);
  if (started.client) {
    try {
      const client = started.client;
      const versions = await notebookVersions(client);
      const fetched = await Promise.all(versions.map(v => getVersion(client, v.VersionId)));
      parts.push(
        `versions of ${KEY} (newest first):\n` +
          versions
            .map(
              (v, i) =>
                `${v.VersionId} ${v.ETag} ${v.Size} ${v.LastModified?.toISOString()} ` +
                `writer ${fetched[i].metadata.writer} sha256 ${fetched[i].metadata.sha256}`
            )
            .join('\n')
      );
    } catch (error) {
      parts.push(`listing failed: ${(error as Error).message}`);
    }
  }
  if (started.gateway) {
    parts.push(`gateway stderr (tail):\n${tail(started.gateway.stderr(), 60)}`);
  }
  return scrub(parts.join('\n\n'));
}

/** Run a step; on failure, rethrow with the diagnostics. */
async function step(name: string, body: () => Promise<void>): Promise<void> {
  try {
    await body();
    passed.add(name);
  } catch (error) {
    if (error instanceof EarlierStepFailed) throw error;
    const original = error as Error;
    const wrapped = new Error(
      `${scrub(original.message)}\n\n--- diagnostics ---\n${await diagnostics()}`
    );
    wrapped.stack = `${wrapped.message}\n${scrub(original.stack ?? '')}`;
    throw wrapped;
  }
}

/** A valid nbformat 4.5 notebook with one empty code cell, as Jupyter writes it. */
const INITIAL_NOTEBOOK =
  JSON.stringify(
    {
      cells: [
        {
          cell_type: 'code',
          execution_count: null,
          id: `cell-${RUN}`,
          metadata: {},
          outputs: [],
          source: []
        }
      ],
      metadata: {
        kernelspec: { display_name: 'Python 3 (ipykernel)', language: 'python', name: 'python3' },
        language_info: { name: 'python' }
      },
      nbformat: 4,
      nbformat_minor: 5
    },
    null,
    1
  ) + '\n';

/**
 * Lab's user settings, in the gateway's isolated Jupyter config directory: no news question, and
 * the frontend's own autosave timer (120 s) pushed out of the test's reach, so that every `save`
 * message the browser sends is a Ctrl+S. Autosave itself stays on: the room autosaves only while
 * some client's awareness state says `autosave: true` (jupyter_server_ydoc `rooms.py`).
 */
async function writeLabSettings(gateway: IGatewayProcess): Promise<void> {
  const settings: Record<string, unknown> = {
    '@jupyterlab/apputils-extension/notification.jupyterlab-settings': { fetchNews: 'false' },
    '@jupyterlab/docmanager-extension/plugin.jupyterlab-settings': {
      autosave: true,
      autosaveInterval: 3600
    }
  };
  for (const [file, value] of Object.entries(settings)) {
    const path = join(gateway.state.config, 'lab', 'user-settings', file);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, JSON.stringify(value));
  }
}

beforeAll(async () => {
  const [minio, rootDir] = await Promise.all([
    startMinio(),
    mkdtemp(join(tmpdir(), 'collaboration-root-'))
  ]);
  started.minio = minio;
  started.rootDir = rootDir;
  started.client = s3ClientFor(minio);
  await createVersionedBucket(minio, BUCKET);
  // In the root before the gateway starts: its first scan archives it.
  await writeFile(join(rootDir, NAME), INITIAL_NOTEBOOK);
  const [gateway, browser] = await Promise.allSettled([
    startGatewayProcess({
      rootDir,
      args: [
        ...ecosystemLabDefaults(),
        `--StoreSettings.object_endpoint_url=${minio.endpoint}`,
        `--StoreSettings.object_bucket=${BUCKET}`,
        '--StoreSettings.archive_retry_max_seconds=2'
      ],
      env: {
        STORE_OBJECT_ACCESS_KEY_ID: minio.accessKeyId,
        STORE_OBJECT_SECRET_ACCESS_KEY: minio.secretAccessKey
      }
    }),
    launchChromium()
  ]);
  if (gateway.status === 'fulfilled') started.gateway = gateway.value;
  if (browser.status === 'fulfilled') started.browser = browser.value;
  if (gateway.status === 'rejected') throw gateway.reason;
  if (browser.status === 'rejected') throw browser.reason;
  await writeLabSettings(gateway.value);
}, 150_000);

afterAll(async () => {
  await started.context?.close().catch(() => undefined);
  await started.browser?.close().catch(() => undefined);
  const code = await started.gateway?.stop('SIGTERM', 30_000);
  // A clean exit stopped Jupyter; otherwise its process group (detached) may still run.
  const upstreamPid = started.gateway?.record.upstream_pid;
  if (code !== undefined && code !== 0 && upstreamPid) {
    try {
      process.kill(-upstreamPid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  started.client?.destroy();
  await started.minio?.dispose();
  if (started.rootDir) await rm(started.rootDir, { recursive: true, force: true });
  console.log(
    `collaboration figures: ${JSON.stringify({ ...figures, gatewayExit: code }, null, 2)}`
  );
}, 90_000);

describe('real-time collaboration through the gateway, archived to MinIO', () => {
  test('the initial notebook is archived by the first scan', async () => {
    await step('initial', async () => {
      const { client, gateway, rootDir } = requireSteps();
      const { value: first, ms } = await poll('the first version', VERSION_MS, async note => {
        const newest = await newestVersion(client);
        note(describeVersion(newest));
        return newest;
      });
      expect(first.body.toString('utf8')).toBe(INITIAL_NOTEBOOK);
      expect(first.body.equals(await readFile(join(rootDir, NAME)))).toBe(true);
      figures.initialVersionMs = ms;
      figures.initialWriter = first.metadata.writer;
      const sources = await sourceCounts(gateway);
      expect(sources.gateway).toEqual({ seen: 0, archived: 0 });
    });
  });

  test('collaboration is active: RTC page config, collaborative session and room for the notebook', async () => {
    await step('collaboration', async () => {
      const { gateway, browser, rootDir } = requireSteps('initial');
      const context = (started.context = await browser.newContext({
        viewport: { width: 1400, height: 900 }
      }));
      const current = (page = started.page = await context.newPage());
      current.setDefaultTimeout(30_000);
      current.on('pageerror', error => keep(pageErrors, error.stack ?? String(error), 20));
      current.on('console', message => keep(consoleLines, `[${message.type()}] ${message.text()}`));
      current.on('requestfailed', request =>
        keep(
          failedRequests,
          `${request.method()} ${request.url()}: ${request.failure()?.errorText}`
        )
      );
      current.on('websocket', socket => {
        const path = new URL(socket.url()).pathname;
        keep(websockets, `open ${path}`, 20);
        socket.on('close', () => keep(websockets, `close ${path}`, 20));
        socket.on('socketerror', message => keep(websockets, `error ${path}: ${message}`, 20));
        const match = /\/api\/collaboration\/room\/(json:notebook:[0-9a-f-]+)$/.exec(path);
        // The first room of the notebook; a reconnection would be a second one (diagnostics).
        if (match && !room) room = watchRoom(socket, match[1]);
        if (/\/api\/kernels\/[^/]+\/channels$/.test(path)) {
          socket.on('framereceived', frame => {
            if (
              kernelInfoAt === undefined &&
              payloadBuffer(frame.payload).includes('kernel_info_reply')
            ) {
              kernelInfoAt = Date.now();
            }
          });
        }
      });
      const entries = new Map<Request, IApiRequest>();
      current.on('request', request => {
        const url = new URL(request.url());
        if (!/\/api\/(contents|collaboration)\//.test(url.pathname)) return;
        url.searchParams.delete('token');
        const entry: IApiRequest = {
          at: Date.now(),
          method: request.method(),
          path: url.pathname,
          query: url.search
        };
        apiRequests.push(entry);
        entries.set(request, entry);
      });
      current.on('response', response => {
        const entry = entries.get(response.request());
        if (!entry) return;
        entries.delete(response.request());
        entry.status = response.status();
        if (!entry.query.includes('hash=1')) return;
        response
          .json()
          .then((body: { hash?: string }) => (entry.hash = body.hash))
          .catch(() => undefined);
      });

      const openedAt = Date.now();
      const url = `${gateway.url(`lab/tree/${encodeURIComponent(NAME)}`)}?token=${encodeURIComponent(gateway.token)}`;
      const first = await current.goto(url, {
        waitUntil: 'domcontentloaded',
        timeout: LAB_LOAD_MS
      });
      expect(first?.status()).toBe(200);

      // 1. The page Lab was served: jupyter_server_ydoc put `disableRTC: false` into the page
      // config, and the collaboration and docprovider federated extensions are loaded.
      const pageConfig = JSON.parse(
        (await current.locator('#jupyter-config-data').textContent()) ?? '{}'
      ) as { disableRTC?: boolean; federated_extensions?: { name: string }[] };
      const extensions = (pageConfig.federated_extensions ?? []).map(extension => extension.name);
      expect(pageConfig.disableRTC).toBe(false);
      expect(extensions).toEqual(
        expect.arrayContaining([
          '@jupyter/docprovider-extension',
          '@jupyter/collaboration-extension'
        ])
      );

      // 2. Jupyter Server itself: the extensions it loaded, as jupyter-store's upstream
      // extension (`GET {base}api/store-upstream`, proxied by the gateway) lists them, include
      // jupyter_server_ydoc (the rooms) and jupyter_server_fileid (their ids), enabled. And the
      // contents backend the gateway chose (recorded: another spec's subject).
      const upstream = await fetch(gateway.url('api/store-upstream'), {
        headers: { Authorization: `token ${gateway.token}` },
        signal: AbortSignal.timeout(10_000)
      });
      const described = (await upstream.json()) as { extensions?: Record<string, boolean> };
      expect(upstream.status).toBe(200);
      expect(described.extensions).toMatchObject({
        jupyter_server_ydoc: true,
        jupyter_server_fileid: true
      });
      figures.contentsBackend = (await storeInfo(gateway)).contents_backend ?? null;

      // 3. The notebook and its editor are there.
      const editor = firstEditor(current);
      await editor.waitFor({ state: 'visible', timeout: LAB_LOAD_MS });
      figures.editorVisibleMs = Date.now() - openedAt;

      // 4. Lab asked the collaboration API for the document's session, and opened its room.
      const traffic = await poll('the notebook room websocket', LAB_LOAD_MS, () =>
        Promise.resolve(room)
      );
      const session = apiRequests.find(
        r => r.method === 'PUT' && r.path.endsWith(`/api/collaboration/session/${NAME}`)
      );
      expect(session?.status).toBeDefined();
      expect([200, 201]).toContain(session?.status);
      figures.room = traffic.value.room;

      // 5. The room's store exists in the root (the hidden files that must not be archived).
      await poll('.jupyter_ystore.db in the root', 10_000, async () =>
        existsSync(join(rootDir, '.jupyter_ystore.db')) ? true : undefined
      );

      // Ready to type: the kernel connected (its kernel_info_reply on the kernel websocket; the
      // room's autosave of its language_info then happens before the markers are typed),
      // interruptions dismissed, the editor editable, collaboration done saving.
      await poll('kernel_info_reply on the kernel websocket', LAB_LOAD_MS, () =>
        Promise.resolve(kernelInfoAt)
      );
      await current
        .locator('.jp-NotebookPanel:visible .jp-Notebook-ExecutionIndicator[data-status="idle"]')
        .first()
        .waitFor({ state: 'attached', timeout: LAB_LOAD_MS });
      figures.dismissed = await dismissInterruptions(current);
      await expect(editor.getAttribute('contenteditable')).resolves.toBe('true');
      figures.readyMs = Date.now() - openedAt;
      figures.untouchedAfterReadyMs = await untouched(current, started.client!, rootDir);
    });
  });

  test('Ctrl+S saves through the room, and the saved bytes become a version seen by events or the watcher', async () => {
    await step('ctrl-s', async () => {
      const { client, gateway, rootDir, page: current } = requireSteps('initial', 'collaboration');
      const traffic = room!;
      await typeIntoFirstCell(current, SAVE_MARKER, false);
      const before = await sourceCounts(gateway);
      const savesBefore = traffic.savesSent.length;
      const repliesBefore = traffic.saveReplies.length;

      const savedAt = Date.now();
      await current.keyboard.press('Control+s');

      // The save went over the room websocket, and the room answered it.
      const reply = await poll('the room to answer the save message', SAVE_REPLY_MS, async () => {
        // A "File Changed" dialog instead of a save fails here, at once.
        await dismissInterruptions(current);
        return traffic.saveReplies.length > repliesBefore
          ? traffic.saveReplies[repliesBefore]
          : undefined;
      });
      expect(traffic.savesSent.length).toBe(savesBefore + 1);
      expect(reply.value.status).not.toBe('failed');
      figures.saveReply = { status: reply.value.status, ms: reply.value.at - savedAt };

      const { value: version, ms } = await poll(
        `a version containing ${SAVE_MARKER}`,
        VERSION_MS,
        async note => {
          const newest = await newestVersion(client);
          note(`${describeVersion(newest)}; ${await diskState(rootDir, SAVE_MARKER)}`);
          return newest?.body.includes(SAVE_MARKER) ? newest : undefined;
        }
      );
      figures.saveToVersionMs = ms;
      figures.saveWriter = version.metadata.writer;
      // Not the gateway's save path: Jupyter's events or the watcher saw it first.
      expect(['events', 'watcher']).toContain(version.metadata.writer);

      const settled = await newestEqualsDisk(client, join(rootDir, NAME));
      expect(settled.body.includes(SAVE_MARKER)).toBe(true);
      // The notebook on disk is still valid nbformat 4 with the marker in its one cell.
      const notebook = JSON.parse(settled.body.toString('utf8')) as {
        nbformat: number;
        cells: { cell_type: string; source: string | string[] }[];
      };
      expect(notebook.nbformat).toBe(4);
      expect(notebook.cells).toHaveLength(1);
      const source = notebook.cells[0].source;
      expect(Array.isArray(source) ? source.join('') : source).toBe(SAVE_MARKER);

      // The product's own account agrees: events or watcher archived it, the gateway did not.
      const { value: after } = await poll('api/store to count the version', 5_000, async note => {
        const sources = await sourceCounts(gateway);
        note(JSON.stringify(sources));
        return otherWriters(sources) > otherWriters(before) ? sources : undefined;
      });
      expect(after.gateway).toEqual(before.gateway);
      expect(after.gateway.archived).toBe(0);
      figures.sourcesAfterSave = after;

      figures.screenshotAfterSave = await screenshot(current, 'saved');
    });
  });

  test('an edit left unsaved is autosaved by collaboration and becomes a newer version', async () => {
    await step('autosave', async () => {
      const { client, rootDir, page: current } = requireSteps('ctrl-s');
      const traffic = room!;
      const previous = await newestVersion(client);
      const savesBefore = traffic.savesSent.length;

      await typeIntoFirstCell(current, AUTOSAVE_MARKER, true);
      const typedAt = Date.now();
      const { value: version, ms } = await poll(
        `a newer version containing ${AUTOSAVE_MARKER}`,
        VERSION_MS,
        async note => {
          const newest = await newestVersion(client);
          note(`${describeVersion(newest)}; ${await diskState(rootDir, AUTOSAVE_MARKER)}`);
          return newest &&
            newest.versionId !== previous?.versionId &&
            newest.body.includes(AUTOSAVE_MARKER)
            ? newest
            : undefined;
        }
      );
      figures.autosaveToVersionMs = ms;
      figures.autosaveWriter = version.metadata.writer;
      expect(['events', 'watcher']).toContain(version.metadata.writer);
      expect(version.body.includes(SAVE_MARKER)).toBe(true);
      // Nobody asked: the browser sent no save message since the edit.
      expect(traffic.savesSent.length).toBe(savesBefore);
      expect(traffic.savesSent.filter(at => at >= typedAt)).toEqual([]);

      const settled = await newestEqualsDisk(client, join(rootDir, NAME));
      expect(settled.body.includes(AUTOSAVE_MARKER)).toBe(true);
    });
  });

  test('nothing was archived twice, nothing hidden was archived, the browser never PUT contents', async () => {
    await step('once', async () => {
      const { client, gateway, rootDir } = requireSteps('initial', 'autosave');
      // Quiet: nothing pending in the gateway, and the listing unchanged for QUIET_MS, so that a
      // late duplicate would be in the bucket before it is checked.
      let stableSince = Date.now();
      let lastListing = '';
      await poll(
        'the archive to go quiet',
        QUIET_BOUND_MS,
        async note => {
          const info = await storeInfo(gateway);
          const listing = JSON.stringify(
            (await listAll(client, `${PREFIX}/`)).versions.map(v => v.VersionId)
          );
          if (listing !== lastListing || (info.archive?.pending ?? 0) > 0) {
            lastListing = listing;
            stableSince = Date.now();
          }
          note(`pending ${info.archive?.pending}; listing ${listing}`);
          return Date.now() - stableSince >= QUIET_MS ? true : undefined;
        },
        250
      );

      const all = await listAll(client, `${PREFIX}/`);
      const keys = [...new Set(all.versions.map(version => version.Key ?? ''))];
      // Only the notebook: not `.jupyter_ystore.db`, `.jupyter/collaboration_sessions.json`,
      // `.ipynb_checkpoints/…` or Jupyter's `.~name` copies, which are all in the root.
      expect(keys).toEqual([KEY]);
      expect(keys.filter(key => key.split('/').some(part => part.startsWith('.')))).toEqual([]);
      expect(all.deleteMarkers.map(marker => marker.Key)).toEqual([]);
      expect(existsSync(join(rootDir, '.jupyter_ystore.db'))).toBe(true);
      figures.hiddenInRoot = (await readdir(rootDir)).filter(name => name.startsWith('.')).sort();

      // Consecutive versions never have the same content.
      const versions = all.versions.filter(version => version.Key === KEY);
      const bodies = await Promise.all(
        versions.map(version => getVersion(client, version.VersionId))
      );
      const repeats: string[] = [];
      for (let i = 1; i < bodies.length; i++) {
        const [newer, older] = [bodies[i - 1], bodies[i]];
        if (newer.etag === older.etag || newer.body.equals(older.body)) {
          repeats.push(`${older.versionId} then ${newer.versionId} (${newer.etag})`);
        }
      }
      expect(repeats).toEqual([]);
      // The initial notebook, the Ctrl+S and the autosave at least (collaboration also saves
      // the kernel's language_info, and may autosave while the markers are typed).
      expect(bodies.length).toBeGreaterThanOrEqual(3);
      expect(bodies.at(-1)!.body.toString('utf8')).toBe(INITIAL_NOTEBOOK);
      expect(bodies[0].body.equals(await readFile(join(rootDir, NAME)))).toBe(true);
      figures.versions = bodies
        .map(version => version.metadata.writer ?? '?')
        .reverse()
        .join(', ');

      // With collaboration, the browser saves through the room only.
      const puts = apiRequests.filter(r => r.method === 'PUT' && r.path.includes('/api/contents/'));
      expect(puts).toEqual([]);
      const sources = await sourceCounts(gateway);
      expect(sources.gateway.archived).toBe(0);
      figures.sourcesAtEnd = sources;
      figures.roomSaves = { sent: room?.savesSent.length, replies: room?.saveReplies };
    });
  });
});
