/**
 * Driving JupyterLab in Chromium as a person would, behind the real gateway, for the specs that
 * run the ecosystem venv's Lab (jupyter-collaboration, jupytext): open a page with the banner's
 * token URL and record what it does (page errors, console, websockets, contents and
 * collaboration requests, the traffic of each collaboration room, the kernel's first
 * `kernel_info_reply`), dismiss what Lab puts in the way, type into cells, use the file browser
 * (Rename, Open With), and wait for Lab and collaboration to leave a notebook alone.
 *
 * Also what such specs check afterwards: the history of a key in a versioned bucket (versions
 * with their bytes and delete markers), and the gateway's `GET api/store`.
 *
 * Every wait is bounded, and fails with what was seen last.
 */
import {
  GetObjectCommand,
  ListObjectVersionsCommand,
  type DeleteMarkerEntry,
  type ObjectVersion,
  type S3Client
} from '@aws-sdk/client-s3';
import { StoreInfoSchema, type StoreInfo } from '@jupyter-store/contract';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type {
  Browser,
  BrowserContext,
  Locator,
  Page,
  Request,
  WebSocket as PageWebSocket
} from 'playwright-core';
import type { IGatewayProcess } from './gateway';

// ---------------------------------------------------------------------------------------------
// Waiting
// ---------------------------------------------------------------------------------------------

export const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms));

/** An error that ends a {@link poll} at once (any other error of a probe means "not yet"). */
export class Fatal extends Error {}

/**
 * Poll `probe` until it returns a value other than undefined; throw after `timeoutMs` with
 * `what` and the last state `probe` described with `note`. Returns the value and how long it
 * took.
 */
export async function poll<T>(
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

/** The last `lines` lines of `text`. */
export function tail(text: string, lines: number): string {
  return text.split('\n').slice(-lines).join('\n');
}

// ---------------------------------------------------------------------------------------------
// Lab's settings
// ---------------------------------------------------------------------------------------------

/**
 * Lab's user settings, in the gateway's isolated Jupyter config directory (read by Lab when a
 * page loads): no news question, and the frontend's own autosave timer pushed out of a test's
 * reach (an hour), so that every `save` message a browser sends on a room is a Ctrl+S.
 * Autosave itself stays on: a collaboration room autosaves only while some client's awareness
 * says `autosave: true` (jupyter_server_ydoc `rooms.py`). `extra` adds or replaces files
 * (`<plugin id>.jupyterlab-settings` → value).
 */
export async function writeLabSettings(
  gateway: IGatewayProcess,
  extra: Record<string, unknown> = {}
): Promise<void> {
  const settings: Record<string, unknown> = {
    '@jupyterlab/apputils-extension/notification.jupyterlab-settings': { fetchNews: 'false' },
    '@jupyterlab/docmanager-extension/plugin.jupyterlab-settings': {
      autosave: true,
      autosaveInterval: 3600
    },
    ...extra
  };
  for (const [file, value] of Object.entries(settings)) {
    const path = join(gateway.state.config, 'lab', 'user-settings', file);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, JSON.stringify(value));
  }
}

// ---------------------------------------------------------------------------------------------
// A recorded Lab page
// ---------------------------------------------------------------------------------------------

/** One request of the page to the contents API or the collaboration API. */
export interface IApiRequest {
  /** Date.now() when sent. */
  at: number;
  method: string;
  /** The URL path, without the token. */
  path: string;
  query: string;
  status?: number;
  /** The `hash` of a `?hash=1` answer: what Lab compares with its own before saving. */
  hash?: string;
}

/** What the websocket of one collaboration room carried. */
export interface IRoomTraffic {
  /** `json:notebook:<file id>` */
  room: string;
  /** `save` messages the browser sent (Date.now() of each). */
  savesSent: number[];
  /** The room's JSON answers to them (`status` is `success`, `skipped` or `failed`). */
  saveReplies: { responseTo?: number; status?: string; at: number }[];
}

function payloadBuffer(payload: string | Buffer): Buffer {
  return typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
}

/** The browser's save request: a RAW message whose var-string is `save`, then a var-uint id. */
const SAVE_REQUEST = Buffer.from([4, ...Buffer.from('save', 'ascii')]);

/** Record the `save` messages sent on a room's websocket and the room's answers. */
export function watchRoom(socket: PageWebSocket, roomName: string): IRoomTraffic {
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

function keep(list: string[], entry: string, max = 60): void {
  list.push(entry);
  if (list.length > max) list.splice(0, list.length - max);
}

/**
 * A browser context with one Lab page, opened with the token URL the banner prints, and
 * everything it did, for the assertions and for the diagnostics of a failure.
 */
export class LabPage {
  private constructor(
    readonly label: string,
    readonly gateway: IGatewayProcess,
    readonly context: BrowserContext,
    readonly page: Page
  ) {
    page.on('pageerror', error => keep(this.pageErrors, error.stack ?? String(error), 20));
    page.on('console', message => keep(this.consoleLines, `[${message.type()}] ${message.text()}`));
    page.on('requestfailed', request =>
      keep(
        this.failedRequests,
        `${request.method()} ${request.url()}: ${request.failure()?.errorText}`
      )
    );
    page.on('websocket', socket => {
      const path = new URL(socket.url()).pathname;
      keep(this.websockets, `open ${path}`, 30);
      socket.on('close', () => keep(this.websockets, `close ${path}`, 30));
      socket.on('socketerror', message => keep(this.websockets, `error ${path}: ${message}`, 30));
      const match = /\/api\/collaboration\/room\/(json:notebook:[0-9a-f-]+)$/.exec(path);
      // The first socket of each room; a reconnection would be a second one (diagnostics).
      if (match && !this.rooms.has(match[1])) this.rooms.set(match[1], watchRoom(socket, match[1]));
      if (/\/api\/kernels\/[^/]+\/channels$/.test(path)) {
        socket.on('framereceived', frame => {
          if (
            this.kernelInfoAt === undefined &&
            payloadBuffer(frame.payload).includes('kernel_info_reply')
          ) {
            this.kernelInfoAt = Date.now();
          }
        });
      }
    });
    const entries = new Map<Request, IApiRequest>();
    page.on('request', request => {
      const url = new URL(request.url());
      if (!/\/api\/(contents|collaboration)\//.test(url.pathname)) return;
      url.searchParams.delete('token');
      const entry: IApiRequest = {
        at: Date.now(),
        method: request.method(),
        path: url.pathname,
        query: url.search
      };
      this.apiRequests.push(entry);
      entries.set(request, entry);
    });
    page.on('response', response => {
      const entry = entries.get(response.request());
      if (!entry) return;
      entries.delete(response.request());
      entry.status = response.status();
      const session = /\/api\/collaboration\/session\/(.+)$/.exec(entry.path);
      if (entry.method === 'PUT' && session) {
        response
          .json()
          .then((body: { fileId?: string }) => {
            if (body.fileId) this.fileIds.set(decodeURIComponent(session[1]), body.fileId);
          })
          .catch(() => undefined);
      }
      if (!entry.query.includes('hash=1')) return;
      response
        .json()
        .then((body: { hash?: string }) => (entry.hash = body.hash))
        .catch(() => undefined);
    });
  }

  /**
   * A new browser context and page on `relative` (below the base URL, e.g. `lab` or
   * `lab/tree/a.ipynb`), with the token in the URL as the banner prints it. Waits for the
   * document only: see {@link waitForNotebook} and {@link waitForFileBrowser}.
   */
  static async open(
    browser: Browser,
    gateway: IGatewayProcess,
    relative: string,
    options: { label?: string; timeoutMs?: number } = {}
  ): Promise<LabPage> {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(20_000);
      const lab = new LabPage(options.label ?? relative, gateway, context, page);
      lab.openedAt = Date.now();
      const url = `${gateway.url(relative)}?token=${encodeURIComponent(gateway.token)}`;
      const first = await page.goto(url, {
        waitUntil: 'domcontentloaded',
        timeout: options.timeoutMs ?? 60_000
      });
      if (first?.status() !== 200) {
        throw new Error(`GET ${relative} answered ${first?.status()} to the browser`);
      }
      return lab;
    } catch (error) {
      await context.close().catch(() => undefined);
      throw error;
    }
  }

  /** Date.now() when the page was opened. */
  openedAt = 0;
  /** When the first `kernel_info_reply` reached the page: Lab then writes `language_info`. */
  kernelInfoAt: number | undefined;
  readonly pageErrors: string[] = [];
  readonly consoleLines: string[] = [];
  readonly websockets: string[] = [];
  readonly failedRequests: string[] = [];
  /** Every request of the page to the contents API or the collaboration API. */
  readonly apiRequests: IApiRequest[] = [];
  /** Collaboration rooms by name (`json:notebook:<file id>`), as the page opened them. */
  readonly rooms = new Map<string, IRoomTraffic>();
  /** File ids by path, from the page's `PUT api/collaboration/session/<path>` answers. */
  readonly fileIds = new Map<string, string>();

  /** The room of the document opened at `path` (its session's file id), once it is open. */
  roomOf(path: string): IRoomTraffic | undefined {
    const fileId = this.fileIds.get(path);
    return fileId === undefined ? undefined : this.rooms.get(`json:notebook:${fileId}`);
  }

  /** Save a full-page screenshot in the temporary directory; returns its path. */
  async screenshot(label: string): Promise<string> {
    const safe = `${this.label}-${label}`.replace(/[^\w.-]+/g, '_');
    const file = join(tmpdir(), `lab-${process.pid}-${safe}-${Date.now()}.png`);
    await writeFile(file, await this.page.screenshot({ fullPage: true, timeout: 10_000 }));
    return file;
  }

  /** Everything that helps to understand a failure, as one block of text (token hidden). */
  async diagnostics(): Promise<string> {
    const parts: string[] = [`--- page ${this.label} ---`];
    if (!this.page.isClosed()) {
      parts.push(`page URL: ${this.page.url()}`);
      try {
        parts.push(`screenshot: ${await this.screenshot('failure')}`);
      } catch (error) {
        parts.push(`screenshot failed: ${(error as Error).message}`);
      }
      const dialogs = await this.page
        .locator('.jp-Dialog')
        .allInnerTexts()
        .catch(() => []);
      parts.push(`dialogs: ${JSON.stringify(dialogs)}`);
    }
    parts.push(`rooms: ${JSON.stringify([...this.rooms.values()])}`);
    parts.push(`file ids: ${JSON.stringify(Object.fromEntries(this.fileIds))}`);
    parts.push(`page errors:\n${this.pageErrors.join('\n') || '(none)'}`);
    parts.push(`last console messages:\n${this.consoleLines.slice(-30).join('\n') || '(none)'}`);
    parts.push(`failed requests:\n${this.failedRequests.join('\n') || '(none)'}`);
    parts.push(`websockets:\n${this.websockets.join('\n') || '(none)'}`);
    const api = this.apiRequests
      .slice(-30)
      .map(
        r =>
          `${new Date(r.at).toISOString()} ${r.status ?? '…'} ${r.method} ${r.path}` +
          `${r.query.includes('hash=1') ? ` (hash=1 → ${r.hash ?? '?'})` : ''}`
      );
    parts.push(`contents and collaboration requests:\n${api.join('\n') || '(none)'}`);
    return scrub(parts.join('\n\n'), this.gateway.token);
  }

  async close(): Promise<void> {
    await this.context.close().catch(() => undefined);
  }
}

/**
 * The URL (below the base URL) of Lab in its own workspace, on `path` if given: a page opened
 * there restores none of the tabs that another page left open in the default workspace (Lab
 * would reopen those, with their kernels and rooms, and probe those that are gone).
 */
export function labPath(workspace: string, path?: string): string {
  const base = `lab/workspaces/${encodeURIComponent(workspace)}`;
  return path === undefined
    ? base
    : `${base}/tree/${path.split('/').map(encodeURIComponent).join('/')}`;
}

/** Hide a token in anything that ends up in an error message. */
export function scrub(text: string, token: string | undefined): string {
  return token ? text.split(token).join('<token>') : text;
}

/**
 * Run `body`; if it fails, rethrow with the diagnostics of the pages, what `more` adds (e.g. the
 * versions in the bucket) and the tail of the gateway's log (its own and Jupyter's lines); the
 * whole log is kept in a temporary file.
 */
export async function withDiagnostics<T>(
  gateway: IGatewayProcess | undefined,
  pages: () => readonly (LabPage | undefined)[],
  body: () => Promise<T>,
  more?: () => Promise<string>
): Promise<T> {
  try {
    return await body();
  } catch (error) {
    const parts: string[] = [];
    for (const lab of pages()) {
      if (lab) parts.push(await lab.diagnostics().catch(e => `diagnostics failed: ${String(e)}`));
    }
    if (more) parts.push(await more().catch(e => `diagnostics failed: ${String(e)}`));
    const token = gateway?.token;
    if (gateway) {
      const log = join(tmpdir(), `lab-${process.pid}-gateway-${Date.now()}.log`);
      await writeFile(log, scrub(`${gateway.stderr()}\n--- stdout ---\n${gateway.stdout()}`, token))
        .then(() => parts.push(`gateway log (stderr, then stdout): ${log}`))
        .catch(e => parts.push(`could not keep the gateway log: ${String(e)}`));
      parts.push(`gateway stderr (tail):\n${tail(gateway.stderr(), 80)}`);
    }
    const original = error as Error;
    const wrapped = new Error(
      `${scrub(original.message, token)}\n\n--- diagnostics ---\n${scrub(parts.join('\n\n'), token)}`
    );
    wrapped.stack = `${wrapped.message}\n${scrub(original.stack ?? '', token)}`;
    throw wrapped;
  }
}

// ---------------------------------------------------------------------------------------------
// What Lab puts in the way
// ---------------------------------------------------------------------------------------------

/**
 * Dismiss what Lab shows that can stand in the way: a kernel choice (accepted: the default
 * kernel) and the news question (answered No); any other dialog is rejected (or escaped). A
 * dialog about the file changing on disk means that someone else wrote the document behind
 * Lab's back: that throws {@link Fatal}. Returns the texts of what was dismissed.
 */
export async function dismissInterruptions(page: Page): Promise<string[]> {
  const dismissed: string[] = [];
  for (let round = 0; round < 5; round++) {
    const dialog = page.locator('.jp-Dialog').first();
    if (!(await dialog.isVisible().catch(() => false))) break;
    const text = (await dialog.innerText().catch(() => '')).replace(/\s+/g, ' ').trim();
    if (/file changed|has changed on disk|overwrite|revert/i.test(text)) {
      throw new Fatal(`Lab says the document changed under it: ${text}`);
    }
    const button = /kernel/i.test(text)
      ? dialog.locator('button.jp-mod-accept').first()
      : dialog.locator('button.jp-mod-reject').first();
    if (await button.isVisible().catch(() => false)) await button.click({ timeout: 5_000 });
    else await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden', timeout: 5_000 }).catch(() => undefined);
    dismissed.push(text);
  }
  const news = page
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

/** The visible text of every dialog Lab shows now. */
export async function dialogTexts(page: Page): Promise<string[]> {
  const texts = await page
    .locator('.jp-Dialog')
    .allInnerTexts()
    .catch(() => [] as string[]);
  return texts.map(text => text.replace(/\s+/g, ' ').trim());
}

// ---------------------------------------------------------------------------------------------
// Notebooks
// ---------------------------------------------------------------------------------------------

/** The visible notebook panel (the current tab's). */
export function notebookPanel(page: Page): Locator {
  return page.locator('.jp-NotebookPanel:visible').first();
}

/** The CodeMirror editor of cell `index` of the visible notebook. */
export function cellEditor(page: Page, index: number): Locator {
  return notebookPanel(page)
    .locator('.jp-Notebook .jp-Cell')
    .nth(index)
    .locator('.jp-InputArea-editor .cm-content')
    .first();
}

/**
 * Click into cell `index`, go to its end, and type `text` (on a new line with `newLine`), as a
 * person does; wait until the editor shows it (at most `timeoutMs`, 10 s unless given). Use text
 * without brackets or quotes: CodeMirror closes those itself.
 */
export async function typeIntoCell(
  page: Page,
  index: number,
  text: string,
  options: { newLine?: boolean; delayMs?: number; timeoutMs?: number } = {}
): Promise<void> {
  await dismissInterruptions(page);
  const editor = cellEditor(page, index);
  // Bounded by the page's default timeout (20 s as LabPage.open sets it).
  await editor.waitFor({ state: 'visible' });
  await editor.click();
  await page.keyboard.press('Control+End');
  if (options.newLine) await page.keyboard.press('Enter');
  await page.keyboard.type(text, { delay: options.delayMs });
  const shownWithin = options.timeoutMs ?? 10_000;
  await poll(`cell ${index} to show ${JSON.stringify(text)}`, shownWithin, async note => {
    const shown = await editor.innerText();
    note(JSON.stringify(shown));
    return shown.includes(text) ? true : undefined;
  });
}

/** The texts of the visible notebook's cells. */
export async function cellTexts(page: Page): Promise<string[]> {
  return notebookPanel(page).locator('.jp-Notebook .jp-Cell .jp-InputArea-editor').allInnerTexts();
}

/**
 * Wait until the visible notebook is ready to be typed into: its first cell's editor is shown
 * and editable, and, where asked, its collaboration room is open (`roomFor`, the path it was
 * opened at) and its kernel connected (the first `kernel_info_reply`, then the execution
 * indicator idle). Lab's questions (kernel, news) are dismissed on the way.
 *
 * @returns ms from the page's opening.
 */
export async function waitForNotebook(
  lab: LabPage,
  options: { roomFor?: string; kernel?: boolean; timeoutMs?: number } = {}
): Promise<number> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const { page } = lab;
  await poll(
    'the notebook editor',
    timeoutMs,
    async note => {
      await dismissInterruptions(page);
      const visible = await cellEditor(page, 0).isVisible();
      note(`editor visible ${visible}; dialogs ${JSON.stringify(await dialogTexts(page))}`);
      return visible ? true : undefined;
    },
    250
  );
  const roomPath = options.roomFor;
  if (roomPath !== undefined) {
    await poll(`the collaboration room of ${roomPath}`, 20_000, async note => {
      note(
        `file ids ${JSON.stringify(Object.fromEntries(lab.fileIds))}; rooms ${[...lab.rooms.keys()]}`
      );
      return lab.roomOf(roomPath);
    });
  }
  if (options.kernel) {
    await poll(
      'kernel_info_reply on the kernel websocket',
      timeoutMs,
      async () => {
        await dismissInterruptions(page);
        return lab.kernelInfoAt;
      },
      250
    );
    await notebookPanel(page)
      .locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]')
      .first()
      .waitFor({ state: 'attached', timeout: 20_000 });
  }
  await dismissInterruptions(page);
  await poll('the first cell to be editable', 20_000, async () =>
    (await cellEditor(page, 0).getAttribute('contenteditable')) === 'true' ? true : undefined
  );
  return Date.now() - lab.openedAt;
}

/** How long a notebook must have been left alone before a test types into it. */
export const UNTOUCHED_MS = 2_000;

/**
 * Wait until nothing is left to save: no tab of any of `labs` is dirty, the file at `diskPath`
 * was not written for {@link UNTOUCHED_MS} (twice collaboration's `document_save_delay`),
 * counting from the kernel's info too (Lab puts the kernel's `language_info` into the document
 * then, and the room saves that a second later), and `archived()` says the archive caught up.
 * Opening a notebook changes it (the kernel's `language_info`, nbformat's layout) and the room
 * autosaves that; a Ctrl+S while Lab has not yet learnt the hash of such an autosave meets Lab's
 * "File Changed" dialog (an upstream race, jupyter-collaboration #317; jupytext #1447), which is
 * not what these specs are about.
 *
 * @returns ms waited.
 */
export async function waitUntilLeftAlone(
  labs: readonly LabPage[],
  diskPath: string,
  archived: () => Promise<boolean>,
  timeoutMs = 20_000
): Promise<number> {
  const { ms } = await poll(
    `Lab and collaboration to leave ${diskPath} alone`,
    timeoutMs,
    async note => {
      let dirty = 0;
      for (const lab of labs) {
        await dismissInterruptions(lab.page);
        dirty += await lab.page.locator('.lm-TabBar-tab.jp-mod-dirty').count();
      }
      const kernelInfo = Math.max(0, ...labs.map(lab => lab.kernelInfoAt ?? 0));
      const since = Math.max((await stat(diskPath)).mtimeMs, kernelInfo);
      const quietMs = Date.now() - since;
      const caughtUp = await archived();
      note(
        `dirty tabs ${dirty}; file unwritten for ${Math.round(quietMs)} ms; archived ${caughtUp}`
      );
      return dirty === 0 && quietMs >= UNTOUCHED_MS && caughtUp ? true : undefined;
    },
    250
  );
  return ms;
}

/**
 * Press Ctrl+S in the page and wait for the room of `path` (the path the document was opened
 * at) to answer that save message; a dialog instead (File Changed) fails at once.
 *
 * @returns the room's answer and ms from the key press.
 */
export async function saveThroughRoom(
  lab: LabPage,
  path: string,
  timeoutMs = 20_000
): Promise<{ status?: string; ms: number }> {
  const room = lab.roomOf(path);
  if (!room) throw new Error(`no collaboration room was opened for ${path}`);
  const repliesBefore = room.saveReplies.length;
  const sentBefore = room.savesSent.length;
  const pressedAt = Date.now();
  await lab.page.keyboard.press('Control+s');
  const { value } = await poll(
    `the room of ${path} to answer the save message`,
    timeoutMs,
    async note => {
      await dismissInterruptions(lab.page);
      note(
        `sent ${room.savesSent.length - sentBefore}; replies ${JSON.stringify(room.saveReplies)}`
      );
      return room.saveReplies.length > repliesBefore ? room.saveReplies[repliesBefore] : undefined;
    }
  );
  return { status: value.status, ms: value.at - pressedAt };
}

// ---------------------------------------------------------------------------------------------
// The file browser
// ---------------------------------------------------------------------------------------------

/** The file browser's entry named `name` (in the directory it shows). */
export function fileBrowserItem(page: Page, name: string): Locator {
  return page
    .locator('.jp-DirListing-item')
    .filter({
      has: page.locator('.jp-DirListing-itemText', {
        hasText: new RegExp(`^${escapeRegExp(name)}$`)
      })
    })
    .first();
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Wait until the file browser lists `name` (refreshing it is Lab's business: it polls). */
export async function waitForFileBrowserItem(page: Page, name: string, timeoutMs = 20_000) {
  await poll(`the file browser to list ${name}`, timeoutMs, async note => {
    await dismissInterruptions(page);
    const names = await page.locator('.jp-DirListing-item .jp-DirListing-itemText').allInnerTexts();
    note(`listed ${JSON.stringify(names)}`);
    return names.map(n => n.trim()).includes(name) ? true : undefined;
  });
}

/** Right-click `name` in the file browser and click the context menu's item `label`. */
async function contextMenu(page: Page, name: string, path: RegExp[]): Promise<void> {
  await dismissInterruptions(page);
  await waitForFileBrowserItem(page, name);
  await fileBrowserItem(page, name).click({ button: 'right', timeout: 20_000 });
  for (const [i, label] of path.entries()) {
    const item = page.locator('.lm-Menu .lm-Menu-item').filter({ hasText: label }).first();
    await item.waitFor({ state: 'visible', timeout: 10_000 });
    if (i < path.length - 1) await item.hover({ timeout: 10_000 });
    else await item.click({ timeout: 10_000 });
  }
}

/**
 * Rename a file as a person does in the file browser: right-click it, Rename, select the whole
 * name, type the new one, Enter. Waits until Lab is done with it: the file browser, once the
 * contents API answered, refreshes its listing, then selects the renamed item and gives it the
 * keyboard focus (`DirListing._doRename`); typing into a notebook before that loses the keys
 * typed after that moment to the file browser.
 */
export async function renameInFileBrowser(page: Page, from: string, to: string): Promise<void> {
  await contextMenu(page, from, [/^Rename/]);
  const input = page.locator('.jp-DirListing-editor');
  await input.waitFor({ state: 'visible', timeout: 10_000 });
  await page.keyboard.press('Control+a');
  await page.keyboard.type(to);
  await page.keyboard.press('Enter');
  await input.waitFor({ state: 'hidden', timeout: 20_000 });
  await poll(`the file browser to select and focus ${to}`, 20_000, async note => {
    await dismissInterruptions(page);
    const item = fileBrowserItem(page, to);
    const state = (await item.count())
      ? await item.evaluate(node => ({
          selected: node.classList.contains('jp-mod-selected'),
          focused: node.contains(node.ownerDocument.activeElement)
        }))
      : undefined;
    note(`${to}: ${JSON.stringify(state ?? 'not listed')}`);
    return state?.selected && state.focused ? true : undefined;
  });
}

/** Right-click `name` in the file browser, then Open With → `factory` (e.g. `Jupytext Notebook`). */
export async function openWithInFileBrowser(page: Page, name: string, factory: string) {
  await contextMenu(page, name, [/^Open With/, new RegExp(`^${escapeRegExp(factory)}\\b`)]);
}

/** The labels of the dock panel's tabs. */
export async function tabTitles(page: Page): Promise<string[]> {
  const titles = await page
    .locator('.lm-DockPanel .lm-TabBar-tab .lm-TabBar-tabLabel')
    .allInnerTexts();
  return titles.map(title => title.trim());
}

// ---------------------------------------------------------------------------------------------
// The archive
// ---------------------------------------------------------------------------------------------

/** Every version and delete marker below `prefix`, in listing order (newest first per key). */
export async function listAllVersions(
  client: S3Client,
  bucket: string,
  prefix: string
): Promise<{ versions: ObjectVersion[]; deleteMarkers: DeleteMarkerEntry[] }> {
  const versions: ObjectVersion[] = [];
  const deleteMarkers: DeleteMarkerEntry[] = [];
  let keyMarker: string | undefined;
  let versionIdMarker: string | undefined;
  for (;;) {
    const listed = await client.send(
      new ListObjectVersionsCommand({
        Bucket: bucket,
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

/** One entry of a key's history: a version with its bytes, or a delete marker (`body` null). */
export interface IHistoryEntry {
  versionId: string;
  /** The version's ETag as listed; empty for a delete marker. */
  etag: string;
  isLatest: boolean;
  lastModified: number;
  /** The version's bytes; null for a delete marker. */
  body: Buffer | null;
  /** Our object metadata (`writer`, `renamed-from`, …); empty for a delete marker. */
  metadata: Record<string, string>;
}

/** The bytes and our object metadata of one version of `key`. */
async function fetchVersion(
  client: S3Client,
  bucket: string,
  key: string,
  versionId: string | undefined
): Promise<{ body: Buffer; metadata: Record<string, string> }> {
  const object = await client.send(
    new GetObjectCommand({ Bucket: bucket, Key: key, VersionId: versionId }),
    { abortSignal: AbortSignal.timeout(15_000) }
  );
  return {
    body: Buffer.from(await object.Body!.transformToByteArray()),
    metadata: object.Metadata ?? {}
  };
}

/**
 * The newest version of exactly `key` with its bytes (the latest one, or the first listed when a
 * delete marker is the latest), delete markers aside; undefined while the key has no version.
 * One listing and one GET, for a poll.
 */
export async function newestVersion(
  client: S3Client,
  bucket: string,
  key: string
): Promise<(IHistoryEntry & { body: Buffer }) | undefined> {
  const versions = (await listAllVersions(client, bucket, key)).versions.filter(v => v.Key === key);
  const newest = versions.find(version => version.IsLatest) ?? versions[0];
  if (!newest) return undefined;
  return {
    versionId: newest.VersionId ?? '',
    etag: newest.ETag ?? '',
    isLatest: newest.IsLatest ?? false,
    lastModified: newest.LastModified?.getTime() ?? 0,
    ...(await fetchVersion(client, bucket, key, newest.VersionId))
  };
}

/** Every version and delete marker of exactly `key`, newest first, with the versions' bytes. */
export async function keyHistory(
  client: S3Client,
  bucket: string,
  key: string
): Promise<IHistoryEntry[]> {
  const listed = await listAllVersions(client, bucket, key);
  const items = [
    ...listed.versions
      .filter(v => v.Key === key)
      .map(v => ({ item: v, marker: false, etag: v.ETag ?? '' })),
    ...listed.deleteMarkers
      .filter(m => m.Key === key)
      .map(m => ({ item: m, marker: true, etag: '' }))
  ];
  // Newest first; the listing's own order breaks ties within a millisecond (versions and
  // markers are listed apart, so the latest one goes first among equals).
  items.sort(
    (a, b) =>
      (b.item.LastModified?.getTime() ?? 0) - (a.item.LastModified?.getTime() ?? 0) ||
      Number(b.item.IsLatest ?? false) - Number(a.item.IsLatest ?? false)
  );
  const entries: IHistoryEntry[] = [];
  for (const { item, marker, etag } of items) {
    const fetched = marker
      ? { body: null, metadata: {} }
      : await fetchVersion(client, bucket, key, item.VersionId);
    entries.push({
      versionId: item.VersionId ?? '',
      etag,
      isLatest: item.IsLatest ?? false,
      lastModified: item.LastModified?.getTime() ?? 0,
      ...fetched
    });
  }
  return entries;
}

/**
 * Consecutive versions (newest first) that hold the same bytes or have the same ETag, described;
 * [] when none.
 */
export function repeatedVersions(entries: readonly IHistoryEntry[]): string[] {
  const repeats: string[] = [];
  for (let i = 1; i < entries.length; i++) {
    const [newer, older] = [entries[i - 1], entries[i]];
    if (newer.body && older.body && (newer.etag === older.etag || newer.body.equals(older.body))) {
      repeats.push(
        `${older.versionId} then ${newer.versionId} (${newer.etag}, ${newer.body.length} bytes)`
      );
    }
  }
  return repeats;
}

/**
 * One line per entry, for messages: id, writer, size, and the first `chars` characters of the
 * bytes.
 */
export function describeHistory(entries: readonly IHistoryEntry[], chars = 200): string {
  if (!entries.length) return '(no versions)';
  return entries
    .map(entry =>
      entry.body === null
        ? `${entry.versionId} delete marker${entry.isLatest ? ' (latest)' : ''}`
        : `${entry.versionId} writer ${entry.metadata.writer ?? '?'} ${entry.body.length} bytes: ` +
          JSON.stringify(entry.body.toString('utf8').slice(0, chars))
    )
    .join('\n');
}

// ---------------------------------------------------------------------------------------------
// The gateway's status
// ---------------------------------------------------------------------------------------------

/** `GET {base}api/store` with the token, validated with the contract's schema. */
export async function storeInfo(gateway: IGatewayProcess): Promise<StoreInfo> {
  const response = await fetch(gateway.url('api/store'), {
    headers: { Authorization: `token ${gateway.token}` },
    signal: AbortSignal.timeout(10_000)
  });
  if (response.status !== 200) {
    throw new Error(`GET api/store answered ${response.status}: ${await response.text()}`);
  }
  return StoreInfoSchema.parse(await response.json());
}

/**
 * Wait until the archive is quiet: nothing pending in the gateway and the bucket's listing
 * below `prefix` unchanged for `quietMs`, so that a late duplicate would be there to be seen.
 *
 * @returns ms waited.
 */
export async function waitForQuietArchive(
  gateway: IGatewayProcess,
  client: S3Client,
  bucket: string,
  prefix: string,
  options: { quietMs?: number; timeoutMs?: number } = {}
): Promise<number> {
  const quietMs = options.quietMs ?? 3_000;
  let stableSince = Date.now();
  let lastListing = '';
  const { ms } = await poll(
    'the archive to go quiet',
    options.timeoutMs ?? 20_000,
    async note => {
      const info = await storeInfo(gateway);
      const listed = await listAllVersions(client, bucket, prefix);
      const listing = JSON.stringify([
        listed.versions.map(v => v.VersionId),
        listed.deleteMarkers.map(m => m.VersionId)
      ]);
      const pending = info.archive?.pending ?? 0;
      if (listing !== lastListing || pending > 0) {
        lastListing = listing;
        stableSince = Date.now();
      }
      note(`pending ${pending}; listing ${listing}`);
      return Date.now() - stableSince >= quietMs ? true : undefined;
    },
    250
  );
  return ms;
}
