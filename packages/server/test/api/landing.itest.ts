/**
 * The clone landing pages `GET {base}store/clone` and `GET {base}store/fs-clone`, served by the
 * real `jupyter-store lab` (token auth on, a base URL) archiving to MinIO: statuses and headers
 * over HTTP, then the whole browser flow in Chromium: log in through Jupyter's login page, land
 * on the page, click Clone and arrive in JupyterLab with the file open; a failing clone shows
 * its error on the page; hostile parameters stay text.
 */
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { useArchivingLab } from '../support/archivingLab';
import type { IGatewayProcess } from '../support/gateway';

jest.setTimeout(180_000);

const BUCKET = 'landing-bucket';
const BASE = '/jl/';
/** Lab's first load is slow on a small machine. */
const LAB_LOAD_MS = 90_000;

let gateway: IGatewayProcess;
let browser: Browser | undefined;
/** A temporary directory with the fs-clone base (`base/`) and a file outside it. */
let work: string;

/** Versions of `shared/analysis.ipynb`, oldest first. */
const versions: { id: string; bytes: Buffer }[] = [];

function notebook(marker: string): Buffer {
  return Buffer.from(
    JSON.stringify({
      cells: [
        {
          cell_type: 'markdown',
          id: 'intro',
          metadata: {},
          source: [`# ${marker}`]
        }
      ],
      metadata: {},
      nbformat: 4,
      nbformat_minor: 5
    }),
    'utf8'
  );
}

/**
 * Two versions of `shared/analysis.ipynb` and a CSV file in the bucket, and the fs-clone base
 * beside a file outside it, before the gateway starts.
 */
async function seed(s3: S3Client): Promise<void> {
  for (const marker of ['first version', 'second version']) {
    const bytes = notebook(marker);
    const put = await s3.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: 'shared/analysis.ipynb', Body: bytes })
    );
    versions.push({ id: put.VersionId!, bytes });
  }
  await s3.send(
    new PutObjectCommand({ Bucket: BUCKET, Key: 'data/table.csv', Body: 'a,b\n1,2\n' })
  );

  work = await mkdtemp(join(tmpdir(), 'landing-'));
  await mkdir(join(work, 'base', 'course'), { recursive: true });
  await writeFile(join(work, 'base', 'course', 'lesson.ipynb'), notebook('lesson'));
  await writeFile(join(work, 'secret.txt'), 'outside the base\n');
  await symlink(join(work, 'secret.txt'), join(work, 'base', 'escape.txt'));
}

const lab = useArchivingLab({
  bucket: BUCKET,
  browser: true,
  gateway: async ({ s3 }) => {
    await seed(s3);
    return {
      args: ['--base-url', BASE, `--StoreSettings.fs_cloning_basedir=${join(work, 'base')}`]
    };
  }
});

beforeAll(() => {
  ({ gateway, browser } = lab);
});

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

/** A landing-page URL below the base URL, with its query. */
function pageUrl(route: 'clone' | 'fs-clone', query: Record<string, string>): string {
  return `${gateway.url(`store/${route}`)}?${new URLSearchParams(query)}`;
}

async function get(
  url: string,
  headers: Record<string, string> = { authorization: `token ${gateway.token}` }
): Promise<Response> {
  return fetch(url, { headers, redirect: 'manual' });
}

function rootEntries(): string[] {
  return readdirSync(gateway.rootDir).sort();
}

// ---------------------------------------------------------------------------------------------
// Over HTTP
// ---------------------------------------------------------------------------------------------

describe('landing pages over HTTP', () => {
  test('an unauthenticated visit is sent to the login page, which brings it back', async () => {
    const url = pageUrl('clone', { object_bucket: BUCKET, object_key: 'a:b/c d.ipynb' });
    const response = await get(url, {});
    expect(response.status).toBe(302);
    const location = response.headers.get('location')!;
    expect(location.startsWith(`${BASE}login?next=`)).toBe(true);
    const next = decodeURIComponent(location.slice(`${BASE}login?next=`.length));
    // The query is re-encoded: no raw ':' for Jupyter's redirect check to take for a scheme.
    expect(next).toBe(`${BASE}store/clone?object_bucket=${BUCKET}&object_key=a%3Ab%2Fc+d.ipynb`);
    expect(next.includes(':')).toBe(false);
  });

  test('a wrong token in the query is not carried into the login redirect', async () => {
    const url = pageUrl('clone', { object_bucket: BUCKET, object_key: 'k', token: 'wrong' });
    const response = await get(url, {});
    expect(response.status).toBe(302);
    expect(decodeURIComponent(response.headers.get('location')!)).not.toContain('token');
  });

  test('the page describes the clone, with relative URLs and strict headers, and does nothing', async () => {
    const before = rootEntries();
    const response = await get(
      pageUrl('clone', {
        object_bucket: BUCKET,
        object_key: 'shared/analysis.ipynb',
        object_version_id: versions[0].id
      })
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = response.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('referrer-policy')).toBe('same-origin');
    const html = await response.text();
    expect(html).toContain('<code>shared/analysis.ipynb</code>');
    expect(html).toContain(`<code>${versions[0].id}</code>`);
    expect(html).toContain('data-api="../api/store/clone"');
    expect(html).toContain('data-lab="../lab/tree/"');
    expect(html).toContain('value="analysis.ipynb"');
    expect(html).toContain('src="static/landing.js"');
    // Every URL in the page is relative: nothing starts with '/' or names a host.
    expect(html).not.toMatch(/(?:src|href|data-api|data-lab)="(?:\/|https?:)/);
    // A browser without the _xsrf cookie gets one, in tornado's format, at Jupyter's path.
    const cookie = response.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^_xsrf=2\|[0-9a-f]{8}\|[0-9a-f]{32}\|\d+; Path=\/jl\/; SameSite=Lax$/);
    expect(rootEntries()).toEqual(before);
  });

  test('an existing _xsrf cookie is kept', async () => {
    const response = await get(pageUrl('clone', { object_bucket: BUCKET, object_key: 'x.ipynb' }), {
      authorization: `token ${gateway.token}`,
      cookie: '_xsrf=2|01020304|0a0b0c0d0e0f101112131415161718191a|1700000000'
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('set-cookie')).toBeNull();
  });

  test('untrusted strings are escaped in text and in attribute values', async () => {
    const hostile = `"><script>alert(1)</script><img src=x onerror='alert(2)'>&amp;.ipynb`;
    const response = await get(pageUrl('clone', { object_bucket: BUCKET, object_key: hostile }));
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).not.toContain('<script>alert');
    expect(html).not.toContain('<img src=x');
    expect(html).toContain(
      '&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&#39;alert(2)&#39;&gt;&amp;amp;.ipynb'
    );
  });

  test.each([
    [{ object_key: 'k' }, 400, 'object_bucket is required'],
    [{ object_bucket: BUCKET }, 400, 'object_key is required'],
    [{ object_bucket: '', object_key: 'k' }, 400, 'object_bucket must not be empty'],
    [{ object_bucket: BUCKET, object_key: '' }, 400, 'object_key must not be empty'],
    [{ object_bucket: 'Not_A_Bucket', object_key: 'k' }, 400, 'is not a valid bucket name'],
    [{ object_bucket: BUCKET, object_key: 'k'.repeat(1025) }, 400, 'at most 1024 characters']
  ])('GET store/clone with %j is %d: %s', async (query, status, message) => {
    const response = await get(pageUrl('clone', query as Record<string, string>));
    expect(response.status).toBe(status);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await response.text();
    expect(html).toContain('<h1>Cannot clone</h1>');
    expect(html).toContain(message);
    expect(html).toContain(`HTTP ${status}`);
  });

  test('an empty object_version_id means the latest version', async () => {
    const response = await get(
      pageUrl('clone', { object_bucket: BUCKET, object_key: 'k.ipynb', object_version_id: '' })
    );
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain('<code>latest</code>');
    expect(html).not.toContain('name="object_version_id"');
  });

  test.each([
    [{}, 400, 'relpath is required'],
    [{ relpath: '' }, 400, 'relpath must not be empty'],
    [{ relpath: '/etc/passwd' }, 400, 'relpath must be relative'],
    [{ relpath: '.hidden/x.ipynb' }, 400, 'has a hidden component'],
    [{ relpath: 'course' }, 400, 'is a directory'],
    [{ relpath: '../secret.txt' }, 404, 'outside the root cloning directory'],
    [{ relpath: 'course/../../secret.txt' }, 404, 'outside the root cloning directory'],
    [{ relpath: 'escape.txt' }, 404, 'outside the root cloning directory'],
    [{ relpath: 'course/missing.ipynb' }, 404, 'does not exist']
  ])('GET store/fs-clone with %j is %d: %s', async (query, status, message) => {
    const response = await get(pageUrl('fs-clone', query as Record<string, string>));
    expect(response.status).toBe(status);
    const html = await response.text();
    expect(html).toContain(message);
    // The page never names a real path of the server.
    expect(html).not.toContain(work);
  });

  test('GET store/fs-clone for a file below the base shows the relpath only', async () => {
    const response = await get(pageUrl('fs-clone', { relpath: 'course/lesson.ipynb' }));
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain('<code>course/lesson.ipynb</code>');
    expect(html).toContain('data-api="../api/store/fs-clone"');
    expect(html).toContain('value="lesson.ipynb"');
    expect(html).not.toContain(work);
  });

  test('a Host that Jupyter would refuse gets 403', async () => {
    // fetch cannot send another Host; a plain request can.
    const url = new URL(pageUrl('clone', { object_bucket: BUCKET, object_key: 'k' }));
    const reply = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = http.get(
        url,
        { headers: { authorization: `token ${gateway.token}`, host: 'attacker.example' } },
        response => {
          let body = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (body += chunk));
          response.on('end', () => resolve({ status: response.statusCode!, body }));
        }
      );
      request.on('error', reject);
    });
    expect(reply.status).toBe(403);
    expect(reply.body).toContain('This Host is not allowed');
  });

  test('a trailing slash is sent to the page itself, query kept', async () => {
    const response = await get(`${gateway.url('store/clone/')}?object_bucket=b&object_key=k`);
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('../clone?object_bucket=b&object_key=k');
  });

  test('the script and stylesheet are served; other static names are not', async () => {
    const script = await get(gateway.url('store/static/landing.js'), {});
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await script.text()).toContain("getElementById('clone-form')");
    const style = await get(gateway.url('store/static/landing.css'), {});
    expect(style.status).toBe(200);
    expect(style.headers.get('content-type')).toBe('text/css; charset=utf-8');
    for (const name of ['..%2Fpackage.json', 'index.html', '%2e%2e']) {
      const other = await get(gateway.url(`store/static/${name}`), {});
      expect(other.status).toBe(404);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// In Chromium
// ---------------------------------------------------------------------------------------------

describe('landing pages in Chromium', () => {
  let context: BrowserContext;
  let page: Page;
  const pageErrors: string[] = [];
  /** Dialogs other than JupyterLab's "leave the page?" question. */
  const dialogs: string[] = [];

  beforeAll(async () => {
    context = await browser!.newContext();
  });

  // A fresh tab per test: leaving JupyterLab would first ask "leave the page?".
  beforeEach(async () => {
    await page?.close({ runBeforeUnload: false });
    page = await context.newPage();
    page.on('pageerror', error => pageErrors.push(error.message));
    page.on('dialog', dialog => {
      if (dialog.type() !== 'beforeunload') dialogs.push(dialog.message());
      void dialog.dismiss();
    });
  });

  afterAll(async () => {
    await context?.close();
  });

  /** JupyterLab is at `lab/tree/<path>` with the document's tab open and current. */
  async function expectOpenInLab(path: string): Promise<void> {
    await page.waitForURL(url => url.pathname === `${BASE}lab/tree/${path}`, {
      timeout: LAB_LOAD_MS
    });
    await page
      .locator('.jp-mod-current[role="tab"]', { hasText: path.split('/').at(-1) })
      .waitFor({ state: 'visible', timeout: LAB_LOAD_MS });
  }

  test('log in, confirm, and land in JupyterLab with the exact version open', async () => {
    const url = pageUrl('clone', {
      object_bucket: BUCKET,
      object_key: 'shared/analysis.ipynb',
      object_version_id: versions[0].id
    });
    await page.goto(url);
    // Not logged in: Jupyter's login page, which returns to the landing page.
    await page.waitForURL(current => current.pathname === `${BASE}login`);
    await page.locator('#password_input').fill(gateway.token);
    await page.locator('#login_submit').click();
    await page.waitForURL(current => current.pathname === `${BASE}store/clone`);
    expect(await page.locator('#target_path').inputValue()).toBe('analysis.ipynb');
    // Nothing was cloned by showing the page.
    expect(existsSync(join(gateway.rootDir, 'analysis.ipynb'))).toBe(false);

    await page.locator('#clone-button').click();
    await expectOpenInLab('analysis.ipynb');
    const cloned = readFileSync(join(gateway.rootDir, 'analysis.ipynb'));
    expect(JSON.parse(cloned.toString('utf8')).cells[0].source).toEqual(
      JSON.parse(versions[0].bytes.toString('utf8')).cells[0].source
    );
  });

  test('cloning again keeps the first copy and opens the numbered one', async () => {
    await page.goto(
      pageUrl('clone', { object_bucket: BUCKET, object_key: 'shared/analysis.ipynb' })
    );
    await page.locator('#clone-button').click();
    await expectOpenInLab('analysis-1.ipynb');
    const latest = JSON.parse(readFileSync(join(gateway.rootDir, 'analysis-1.ipynb'), 'utf8'));
    expect(latest.cells[0].source).toEqual(['# second version']);
  });

  test('an edited target path is used', async () => {
    await mkdir(join(gateway.rootDir, 'inbox'));
    await page.goto(pageUrl('clone', { object_bucket: BUCKET, object_key: 'data/table.csv' }));
    await page.locator('#target_path').fill('inbox/numbers.csv');
    await page.locator('#clone-button').click();
    await expectOpenInLab('inbox/numbers.csv');
    expect(readFileSync(join(gateway.rootDir, 'inbox', 'numbers.csv'), 'utf8')).toBe('a,b\n1,2\n');
  });

  test('a clone from the file system lands in JupyterLab too', async () => {
    await page.goto(pageUrl('fs-clone', { relpath: 'course/lesson.ipynb' }));
    await page.locator('#clone-button').click();
    await expectOpenInLab('lesson.ipynb');
    // A notebook is saved as a notebook (Jupyter's on-disk format), so compare the content.
    const read = (file: string) => JSON.parse(readFileSync(file, 'utf8'));
    expect(read(join(gateway.rootDir, 'lesson.ipynb'))).toEqual(
      read(join(work, 'base', 'course', 'lesson.ipynb'))
    );
  });

  test('a failing clone shows its error on the page and stays there', async () => {
    await page.goto(
      pageUrl('clone', { object_bucket: BUCKET, object_key: 'shared/never-written.ipynb' })
    );
    const before = rootEntries();
    await page.locator('#clone-button').click();
    const error = page.locator('#clone-error');
    await error.waitFor({ state: 'visible', timeout: 30_000 });
    const text = await error.innerText();
    expect(text).toContain('HTTP 404');
    expect(text).toContain('never-written.ipynb');
    expect(new URL(page.url()).pathname).toBe(`${BASE}store/clone`);
    // The button works again, so the user can change the target and retry.
    expect(await page.locator('#clone-button').isDisabled()).toBe(false);
    expect(rootEntries()).toEqual(before);
  });

  test('a bad target path shows the API message', async () => {
    await page.goto(pageUrl('clone', { object_bucket: BUCKET, object_key: 'data/table.csv' }));
    await page.locator('#target_path').fill('no-such-dir/table.csv');
    await page.locator('#clone-button').click();
    const error = page.locator('#clone-error');
    await error.waitFor({ state: 'visible', timeout: 30_000 });
    expect(await error.innerText()).toContain('HTTP 409');
    expect(await error.innerText()).toContain('does not exist');
  });

  test('hostile parameters are shown as text and run nothing', async () => {
    const hostile = `<img src=x onerror="window.pwned=1;alert(1)">.ipynb`;
    await page.goto(pageUrl('clone', { object_bucket: BUCKET, object_key: hostile }));
    await expect(page.locator('dl.source dd').nth(1).innerText()).resolves.toBe(hostile);
    expect(await page.evaluate(() => (globalThis as { pwned?: number }).pwned)).toBe(undefined);
    expect(dialogs).toEqual([]);
  });

  test('an error page is visible when the link is broken', async () => {
    const response = await page.goto(pageUrl('fs-clone', { relpath: '../secret.txt' }));
    expect(response!.status()).toBe(404);
    await expect(page.locator('.error[role="alert"]').innerText()).resolves.toContain(
      'outside the root cloning directory'
    );
  });

  test('no page errors along the way', () => {
    expect(pageErrors).toEqual([]);
  });
});
