/**
 * JupyterLab in a real browser, through the gateway: log in with the banner's token URL, create
 * a notebook from the Launcher, run a cell, save, and find the saved notebook (with its output)
 * on disk. Every request Lab makes goes through the gateway, so this is the end-to-end check
 * that the gateway's own contents API and its proxying of everything else (static files,
 * settings, sessions, the kernel websocket) together make a working Lab.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from '../support/browser';
import { labDefaults, startGatewayProcess, type IGatewayProcess } from '../support/gateway';
import { decodeV1 } from '../support/kernel';

/** Lab's first load (webpack chunks, settings, the kernel start) is slow on a small machine. */
const LAB_LOAD_MS = 90_000;
const KERNEL_READY_MS = 60_000;
const OUTPUT_MS = 30_000;
const SAVE_MS = 20_000;
/** How long to wait for Lab's "Rename file" question on the first save. */
const RENAME_DIALOG_MS = 10_000;

const SAVED_NAME = 'through-the-gateway.ipynb';

const CODE = 'print(6*7)';

interface IResponseRecord {
  method: string;
  url: string;
  status: number;
}

interface INotebookOnDisk {
  cells?: Array<{
    cell_type?: string;
    source?: string | string[];
    outputs?: Array<{ output_type?: string; text?: string | string[]; data?: unknown }>;
  }>;
}

let gateway: IGatewayProcess | undefined;
let browser: Browser | undefined;
let context: BrowserContext | undefined;

const pageErrors: string[] = [];
const consoleLines: string[] = [];
const responses: IResponseRecord[] = [];
const failedRequests: string[] = [];
const websockets: string[] = [];

beforeAll(async () => {
  // Start both at once: Jupyter's start-up and Chromium's do not depend on each other.
  const [started, launched] = await Promise.allSettled([
    startGatewayProcess({ args: [...labDefaults()] }),
    launchChromium()
  ]);
  if (started.status === 'fulfilled') gateway = started.value;
  if (launched.status === 'fulfilled') browser = launched.value;
  if (started.status === 'rejected') throw started.reason;
  if (launched.status === 'rejected') throw launched.reason;
}, 150_000);

afterAll(async () => {
  await context?.close().catch(() => undefined);
  await browser?.close().catch(() => undefined);
  await gateway?.stop();
}, 60_000);

/** Keep the last `max` entries of a diagnostics list. */
function keep(list: string[], entry: string, max = 60): void {
  list.push(entry);
  if (list.length > max) list.splice(0, list.length - max);
}

function tail(text: string, lines: number): string {
  return text.split('\n').slice(-lines).join('\n');
}

/** Hide the token in anything that ends up in an error message. */
function scrub(text: string): string {
  return gateway?.token ? text.split(gateway.token).join('<token>') : text;
}

/** Everything that helps to understand a failure, as one block of text. */
async function diagnostics(page: Page | undefined): Promise<string> {
  const parts: string[] = [];
  if (page && !page.isClosed()) {
    parts.push(`page URL: ${page.url()}`);
    const shot = join(tmpdir(), `browser-itest-${process.pid}-${Date.now()}.png`);
    try {
      await writeFile(shot, await page.screenshot({ fullPage: true, timeout: 10_000 }));
      parts.push(`screenshot: ${shot}`);
    } catch (error) {
      parts.push(`screenshot failed: ${(error as Error).message}`);
    }
  }
  parts.push(`page errors:\n${pageErrors.join('\n') || '(none)'}`);
  parts.push(`last console messages:\n${consoleLines.join('\n') || '(none)'}`);
  parts.push(`failed requests:\n${failedRequests.join('\n') || '(none)'}`);
  parts.push(`websockets:\n${websockets.join('\n') || '(none)'}`);
  const last = responses.slice(-30).map(r => `${r.status} ${r.method} ${r.url}`);
  parts.push(`last responses:\n${last.join('\n') || '(none)'}`);
  if (gateway) parts.push(`gateway stderr (tail):\n${tail(gateway.stderr(), 40)}`);
  return scrub(parts.join('\n\n'));
}

/** The `msg_type` of a kernel websocket frame: v1 binary protocol or legacy JSON text. */
function kernelMessageType(payload: string | Buffer): string | undefined {
  try {
    const header =
      typeof payload === 'string'
        ? (JSON.parse(payload) as { header?: { msg_type?: string } }).header
        : (decodeV1(payload).parts[0] as { msg_type?: string } | undefined);
    return header?.msg_type;
  } catch {
    return undefined;
  }
}

/** Reject after `ms` with a message naming what was awaited. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function outputText(output: { text?: string | string[]; data?: unknown }): string {
  const text = output.text ?? (output.data as Record<string, unknown> | undefined)?.['text/plain'];
  return Array.isArray(text) ? text.join('') : typeof text === 'string' ? text : '';
}

/**
 * Poll the served directory until a notebook there (`name`, or any) holds the cell and its `42`
 * output; returns its name. Files being rewritten may be read half-way through on other servers:
 * unparsable JSON just means "not yet".
 */
async function waitForSavedNotebook(
  rootDir: string,
  timeoutMs: number,
  name?: string
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let seen = `(no ${name ?? '.ipynb file'})`;
  for (;;) {
    const names = (await readdir(rootDir)).filter(n => (name ? n === name : n.endsWith('.ipynb')));
    for (const name of names) {
      let notebook: INotebookOnDisk;
      try {
        notebook = JSON.parse(await readFile(join(rootDir, name), 'utf8')) as INotebookOnDisk;
      } catch {
        continue;
      }
      seen = `${name}: ${JSON.stringify(notebook.cells ?? null).slice(0, 500)}`;
      const cell = notebook.cells?.find(c => c.cell_type === 'code');
      const source = Array.isArray(cell?.source) ? cell.source.join('') : cell?.source;
      if (source === CODE && cell?.outputs?.some(o => outputText(o).trim() === '42')) {
        return name;
      }
    }
    if (Date.now() > deadline) {
      throw new Error(
        `no notebook with ${CODE} and its output 42 in ${rootDir} after ${timeoutMs} ms; ` +
          `last seen: ${seen}; files: ${JSON.stringify(await readdir(rootDir))}`
      );
    }
    await new Promise(resolve => setTimeout(resolve, 250));
  }
}

describe('JupyterLab in Chromium through the gateway', () => {
  test('logs in with the token URL, runs a cell, saves the notebook to disk', async () => {
    if (!gateway || !browser) throw new Error('beforeAll did not start the gateway and browser');
    const gw = gateway;
    context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(30_000);
    page.on('pageerror', error => keep(pageErrors, error.stack ?? String(error), 20));
    page.on('console', message => keep(consoleLines, `[${message.type()}] ${message.text()}`));
    page.on('requestfailed', request => {
      // Lab aborts some requests on purpose (polls cut by a navigation); recorded, not failed.
      keep(failedRequests, `${request.method()} ${request.url()}: ${request.failure()?.errorText}`);
    });
    // Lab can run a cell only once its kernel connection is up: the kernel_info_reply on the
    // kernel websocket (through the gateway) is that moment. The toolbar's status reads "idle"
    // even before the session exists, so it alone is not enough.
    let kernelInfoReplied: () => void = () => undefined;
    const kernelConnected = new Promise<void>(resolve => (kernelInfoReplied = resolve));
    page.on('websocket', socket => {
      const path = new URL(socket.url()).pathname;
      keep(websockets, `open ${path}`, 20);
      socket.on('close', () => keep(websockets, `close ${path}`, 20));
      socket.on('socketerror', message => keep(websockets, `error ${path}: ${message}`, 20));
      if (!/\/api\/kernels\/[^/]+\/channels$/.test(path)) return;
      socket.on('framereceived', frame => {
        if (kernelMessageType(frame.payload) === 'kernel_info_reply') kernelInfoReplied();
      });
    });
    page.on('response', response => {
      const request = response.request();
      responses.push({ method: request.method(), url: response.url(), status: response.status() });
    });

    try {
      // As a user does: paste the URL the banner prints, token included.
      const labUrl = `${gw.url('lab')}?token=${encodeURIComponent(gw.token)}`;
      const first = await page.goto(labUrl, {
        waitUntil: 'domcontentloaded',
        timeout: LAB_LOAD_MS
      });
      expect(first?.status()).toBe(200);

      // Lab is up once its Launcher shows the kernel tiles (kernelspecs came through the gateway).
      await page
        .locator('.jp-Launcher')
        .first()
        .waitFor({ state: 'visible', timeout: LAB_LOAD_MS });
      const tile = page
        .locator('.jp-LauncherCard[data-category="Notebook"][title*="Python 3"]')
        .first();
      await tile.waitFor({ state: 'visible', timeout: LAB_LOAD_MS });
      await tile.click();

      // The new notebook: its panel, its kernel connected, and idle.
      const panel = page.locator('.jp-NotebookPanel:visible').first();
      await panel.waitFor({ state: 'visible', timeout: KERNEL_READY_MS });
      await within(kernelConnected, KERNEL_READY_MS, 'kernel_info_reply on the kernel websocket');
      await panel
        .locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]')
        .first()
        .waitFor({ state: 'attached', timeout: KERNEL_READY_MS });

      const cell = panel.locator('.jp-Notebook .jp-Cell').first();
      const editor = cell.locator('.jp-InputArea-editor .cm-content').first();
      await editor.waitFor({ state: 'visible' });
      await editor.click();
      await page.keyboard.type(CODE);
      // CodeMirror closes brackets itself and steps over the typed ')': the text must be exact.
      expect((await editor.innerText()).trim()).toBe(CODE);

      await page.keyboard.press('Shift+Enter');
      await cell
        .locator('.jp-OutputArea-output')
        .filter({ hasText: /^\s*42\s*$/ })
        .first()
        .waitFor({ state: 'visible', timeout: OUTPUT_MS });

      // Save from the keyboard; focus is in the notebook (Shift+Enter moved to a new cell).
      // Lab 4 asks for a name on the first save of an untitled notebook: give one. Lab then
      // saves and renames, both through the gateway's contents API.
      await page.keyboard.press('Control+s');
      const dialog = page
        .locator('.jp-Dialog')
        .filter({ has: page.locator('input') })
        .first();
      const asked = await dialog
        .waitFor({ state: 'visible', timeout: RENAME_DIALOG_MS })
        .then(() => true)
        .catch(() => false);
      let expectedName: string | undefined;
      if (asked) {
        await dialog.locator('input[type="text"], input:not([type])').first().fill(SAVED_NAME);
        await dialog.locator('button.jp-mod-accept').first().click();
        await dialog.waitFor({ state: 'hidden' });
        expectedName = SAVED_NAME;
      }
      const saved = await waitForSavedNotebook(gw.rootDir, SAVE_MS, expectedName);
      expect(saved).toMatch(/\.ipynb$/);
      // One notebook: a rename moved it, it did not leave the untitled one behind.
      const notebooks = (await readdir(gw.rootDir)).filter(n => n.endsWith('.ipynb'));
      expect(notebooks).toEqual([saved]);
    } catch (error) {
      // Jest prints the stack, which holds the message as it was when the error was made.
      const original = error as Error;
      const wrapped = new Error(
        `${scrub(original.message)}\n\n--- diagnostics ---\n${await diagnostics(page)}`
      );
      wrapped.stack = `${wrapped.message}\n${scrub(original.stack ?? '')}`;
      throw wrapped;
    }

    expect(pageErrors).toEqual([]);
    const origin = gw.origin;
    const throughGateway = responses.filter(r => r.url.startsWith(`${origin}/`));
    expect(throughGateway.length).toBeGreaterThan(0);
    // Lab probes files that may not exist (404 is its normal answer); nothing else may fail.
    const contents = throughGateway.filter(r => new URL(r.url).pathname.includes('/api/contents'));
    expect(contents.length).toBeGreaterThan(0);
    const badContents = contents.filter(r => !(r.status < 400 || r.status === 404));
    expect(badContents.map(r => `${r.status} ${r.method} ${scrub(r.url)}`)).toEqual([]);
    const bad = throughGateway.filter(
      r => r.status >= 500 || (r.status >= 400 && r.status !== 404)
    );
    expect(bad.map(r => `${r.status} ${r.method} ${scrub(r.url)}`)).toEqual([]);
  }, 180_000);
});
