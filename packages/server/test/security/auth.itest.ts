/**
 * Authentication and authorization findings, against the real `jupyter-store lab` with a real
 * Jupyter Server behind it and the embedded object store:
 *
 * - With `--no-auth`, Jupyter has no token, so no request is token-authenticated: a `?token=` or
 *   an Authorization header does not lift the Origin and XSRF checks, and a cross-origin write
 *   gets Jupyter's 404, on the contents API, trust and clone, with either contents backend. The
 *   same writes from the page's own origin, with the XSRF token, go through.
 * - Jupyter's `Authorizer` decides what the gateway's own routes allow: with one that allows only
 *   `read` (a Python module on PYTHONPATH, named by `c.ServerApp.authorizer_class` in a config
 *   file), reading works and every write (contents, publish, clone, fs-clone, the clone landing
 *   pages) is a 403, with either contents backend; with Jupyter's default authorizer the same
 *   writes succeed, a token-authenticated one even from another origin.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newXsrfCookieValue } from '../../src/gateway/security';
import { CLI, labDefaults, startGatewayProcess, type IGatewayProcess } from '../support/gateway';

jest.setTimeout(240_000);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

interface IReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json(): Json;
}

/** One request to the gateway, the path sent as given (`relative` is below the base URL). */
function send(
  gateway: IGatewayProcess,
  method: string,
  relative: string,
  options: { headers?: http.OutgoingHttpHeaders; body?: unknown } = {}
): Promise<IReply> {
  const body =
    options.body === undefined
      ? undefined
      : typeof options.body === 'string'
        ? options.body
        : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const request = http.request(
      gateway.url(relative),
      { method, headers: options.headers, timeout: 60_000 },
      response => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            text,
            json: () => JSON.parse(text) as Json
          });
        });
        response.on('error', reject);
      }
    );
    request.on('timeout', () => request.destroy(new Error(`${method} ${relative} timed out`)));
    request.on('error', reject);
    request.end(body);
  });
}

/** A notebook whose code cell has an output, so that its trust shows in `metadata.trusted`. */
const NOTEBOOK = {
  cells: [
    {
      cell_type: 'code',
      id: 'c1',
      execution_count: 1,
      metadata: {},
      outputs: [{ output_type: 'stream', name: 'stdout', text: 'hi\n' }],
      source: 'print("hi")'
    }
  ],
  metadata: {},
  nbformat: 4,
  nbformat_minor: 5
};

/** The request of a page on another site: a "simple" POST, which a browser sends unasked. */
const CROSS_SITE = { Origin: 'http://evil.example', 'Content-Type': 'text/plain' };

/** Turn publishing on for this gateway (`jupyter-store enable --user` in its config dir). */
function enablePublishing(gateway: IGatewayProcess): void {
  const enabled = spawnSync(process.execPath, [CLI, 'enable', '--user'], {
    encoding: 'utf8',
    env: { ...process.env, JUPYTER_CONFIG_DIR: gateway.state.config },
    timeout: 30_000
  });
  expect(enabled.stderr).toBe('');
  expect(enabled.status).toBe(0);
}

/** The visible entries of the served directory (a save adds `.ipynb_checkpoints`). */
function rootEntries(gateway: IGatewayProcess): string[] {
  return readdirSync(gateway.rootDir)
    .filter(name => !name.startsWith('.'))
    .sort();
}

const running: IGatewayProcess[] = [];
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'security-auth-'));
});

afterAll(async () => {
  await Promise.all(running.splice(0).map(gateway => gateway.stop()));
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

async function start(args: string[], env?: NodeJS.ProcessEnv): Promise<IGatewayProcess> {
  const gateway = await startGatewayProcess({ args: [...labDefaults(), ...args], env });
  running.push(gateway);
  return gateway;
}

// ---------------------------------------------------------------------------------------------
// Finding 1: --no-auth plus any token switched off the Origin and XSRF checks
// ---------------------------------------------------------------------------------------------

describe('--no-auth: a token does not make a request token-authenticated', () => {
  const gateways: Record<'node' | 'jupyter', IGatewayProcess> = {} as never;

  beforeAll(async () => {
    [gateways.node, gateways.jupyter] = await Promise.all([
      start(['--no-auth', '--StoreSettings.contents_backend=node']),
      start(['--no-auth', '--StoreSettings.contents_backend=jupyter'])
    ]);
  });

  test.each(['node', 'jupyter'] as const)(
    'contents backend %s: cross-origin POSTs with ?token= or Authorization get 404, as from Jupyter',
    async backend => {
      const gateway = gateways[backend];
      expect(gateway.token).toBe('');
      const info = await send(gateway, 'GET', 'api/store');
      expect(info.json().contents_backend).toMatchObject({ backend });
      await writeFile(join(gateway.rootDir, 'nb.ipynb'), JSON.stringify(NOTEBOOK));
      const trusted = async (): Promise<unknown> => {
        const model = await send(gateway, 'GET', 'api/contents/nb.ipynb');
        expect(model.status).toBe(200);
        return model.json().content.cells[0].metadata.trusted;
      };
      expect(await trusted()).toBe(false);

      // From the gateway's own origin, with the XSRF token, writes work: publish, so that the
      // clone below has a source.
      const xsrf = newXsrfCookieValue();
      const sameSite = {
        Origin: gateway.origin,
        'Content-Type': 'application/json',
        Cookie: `_xsrf=${xsrf}`,
        'X-XSRFToken': xsrf
      };
      enablePublishing(gateway);
      const published = await send(gateway, 'PUT', 'api/store/publish/nb.ipynb', {
        headers: sameSite,
        body: { type: 'notebook', content: NOTEBOOK }
      });
      expect(published.status).toBe(200);
      const source = {
        object_bucket: published.json().object_bucket,
        object_key: published.json().object_key
      };
      const before = rootEntries(gateway);
      expect(before).toEqual(['nb.ipynb']);

      // The attacks: a page on another site posts with a made-up token.
      const attacks: Array<[string, http.OutgoingHttpHeaders, unknown]> = [];
      for (const [query, credential] of [
        ['?token=x', {}],
        ['', { Authorization: 'token x' }]
      ] as const) {
        const headers = { ...CROSS_SITE, ...credential };
        attacks.push(
          [`api/contents/${query}`, headers, { type: 'notebook' }],
          [`api/contents/nb.ipynb/trust${query}`, headers, undefined],
          [`api/store/clone${query}`, headers, source]
        );
      }
      for (const [path, headers, body] of attacks) {
        const reply = await send(gateway, 'POST', path, { headers, body });
        expect({ path, headers, status: reply.status }).toEqual({ path, headers, status: 404 });
        // Ours say why; Jupyter's own (contents with the jupyter backend) say nothing more.
        if (path.startsWith('api/store/') || backend === 'node') {
          expect(reply.json()).toEqual({
            message: 'Not Found',
            reason: 'cross-origin request blocked'
          });
        }
      }
      // A cross-origin read with a token is refused as well.
      const read = await send(gateway, 'GET', 'api/contents?token=x', { headers: CROSS_SITE });
      expect(read.status).toBe(404);
      // Same origin but no XSRF token: a made-up token does not stand in for it.
      const noXsrf = await send(gateway, 'POST', 'api/store/clone?token=x', {
        headers: { Origin: gateway.origin, 'Content-Type': 'text/plain' },
        body: source
      });
      expect(noXsrf.status).toBe(403);
      expect(noXsrf.json().reason).toBe('xsrf');
      expect(rootEntries(gateway)).toEqual(before);
      expect(existsSync(join(gateway.rootDir, '.ipynb_checkpoints'))).toBe(false);
      expect(await trusted()).toBe(false);

      // The same requests from the gateway's own origin with the XSRF token go through.
      const trust = await send(gateway, 'POST', 'api/contents/nb.ipynb/trust?token=x', {
        headers: sameSite
      });
      expect(trust.status).toBe(201);
      expect(await trusted()).toBe(true);
      const cloned = await send(gateway, 'POST', 'api/store/clone?token=x', {
        headers: sameSite,
        body: source
      });
      expect(cloned.status).toBe(200);
      expect(cloned.json().path).toBe('nb-1.ipynb');
      expect(rootEntries(gateway)).toEqual(['nb-1.ipynb', 'nb.ipynb']);
    }
  );
});

// ---------------------------------------------------------------------------------------------
// Finding 2: Jupyter's Authorizer was ignored
// ---------------------------------------------------------------------------------------------

describe("Jupyter's Authorizer decides the gateway's own routes", () => {
  let readOnly: IGatewayProcess;
  let readOnlyJupyter: IGatewayProcess;
  let allowAll: IGatewayProcess;
  /** The fs-clone base directory, holding `lesson.ipynb`. */
  let basedir: string;

  beforeAll(async () => {
    const python = join(scratch, 'python');
    await mkdir(python);
    await writeFile(
      join(python, 'readonly_authorizer.py'),
      [
        'from jupyter_server.auth import Authorizer',
        '',
        '',
        'class ReadOnlyAuthorizer(Authorizer):',
        '    """Allows reading, and nothing else."""',
        '',
        '    def is_authorized(self, handler, user, action, resource):',
        '        return action == "read"',
        ''
      ].join('\n')
    );
    const config = join(scratch, 'readonly_config.py');
    await writeFile(
      config,
      'c.ServerApp.authorizer_class = "readonly_authorizer.ReadOnlyAuthorizer"\n'
    );
    basedir = join(scratch, 'base');
    await mkdir(basedir);
    await writeFile(join(basedir, 'lesson.ipynb'), JSON.stringify(NOTEBOOK));
    const common = [`--StoreSettings.fs_cloning_basedir=${basedir}`];
    const env = { PYTHONPATH: python };
    [readOnly, readOnlyJupyter, allowAll] = await Promise.all([
      start([...common, '--config', config, '--StoreSettings.contents_backend=node'], env),
      start([...common, '--config', config, '--StoreSettings.contents_backend=jupyter'], env),
      start([...common, '--StoreSettings.contents_backend=node'])
    ]);
    for (const gateway of [readOnly, readOnlyJupyter, allowAll]) {
      enablePublishing(gateway);
      await writeFile(join(gateway.rootDir, 'existing.txt'), 'keep me\n');
      await writeFile(join(gateway.rootDir, 'nb.ipynb'), JSON.stringify(NOTEBOOK));
    }
  });

  const auth = (gateway: IGatewayProcess) => ({
    Authorization: `token ${gateway.token}`,
    'Content-Type': 'application/json'
  });

  /** The writes a read-only user must not make, each with the status a permitted one gets. */
  function writes(): Array<[method: string, path: string, body: unknown, allowed: number]> {
    return [
      ['PUT', 'api/contents/new.txt', { type: 'file', format: 'text', content: 'x' }, 201],
      ['POST', 'api/contents/', { type: 'notebook' }, 201],
      ['PATCH', 'api/contents/existing.txt', { path: 'renamed.txt' }, 200],
      ['POST', 'api/contents/nb.ipynb/checkpoints', undefined, 201],
      ['POST', 'api/contents/nb.ipynb/trust', undefined, 201],
      ['DELETE', 'api/contents/nb.ipynb', undefined, 204]
    ];
  }

  /** Publish, clone (of a published copy) and fs-clone: 403 with reason `not authorized`. */
  async function expectStoreWritesRefused(gateway: IGatewayProcess): Promise<void> {
    const refused = [
      await send(gateway, 'PUT', 'api/store/publish/nb.ipynb', {
        headers: auth(gateway),
        body: { type: 'notebook', content: NOTEBOOK }
      }),
      await send(gateway, 'POST', 'api/store/clone', {
        headers: auth(gateway),
        body: { object_bucket: 'jupyter-store', object_key: 'published/nb.ipynb' }
      }),
      await send(gateway, 'POST', 'api/store/fs-clone', {
        headers: auth(gateway),
        body: { relpath: 'lesson.ipynb' }
      })
    ];
    for (const reply of refused) {
      expect(reply.status).toBe(403);
      expect(reply.json()).toEqual({
        message: 'User is not authorized to write on resource: contents.',
        reason: 'not authorized'
      });
    }
    // Nothing was published.
    const versions = await send(gateway, 'GET', 'api/store/versions/nb.ipynb', {
      headers: auth(gateway)
    });
    expect(versions.status).toBe(200);
    expect(versions.json().published.versions).toEqual([]);
    // The landing pages, which lead only to a clone, are refused too (an HTML error page).
    for (const page of [
      'store/fs-clone?relpath=lesson.ipynb',
      'store/clone?object_bucket=jupyter-store&object_key=published/nb.ipynb'
    ]) {
      const reply = await send(gateway, 'GET', page, { headers: auth(gateway) });
      expect(reply.status).toBe(403);
      expect(reply.headers['content-type']).toMatch(/^text\/html/);
      expect(reply.text).toContain('User is not authorized to write on resource: contents.');
    }
    // Reading the store is allowed.
    const info = await send(gateway, 'GET', 'api/store', { headers: auth(gateway) });
    expect(info.status).toBe(200);
  }

  test('read-only authorizer: Jupyter refuses to start a kernel, so it is in force', async () => {
    for (const gateway of [readOnly, readOnlyJupyter]) {
      const kernel = await send(gateway, 'POST', 'api/kernels', {
        headers: auth(gateway),
        body: { name: 'python3' }
      });
      expect(kernel.status).toBe(403);
    }
  });

  test('read-only authorizer, our contents API: reads pass, every write is a 403', async () => {
    const gateway = readOnly;
    const before = rootEntries(gateway);
    const listing = await send(gateway, 'GET', 'api/contents', { headers: auth(gateway) });
    expect(listing.status).toBe(200);
    expect(
      listing
        .json()
        .content.map((entry: Json) => entry.name)
        .sort()
    ).toEqual(before);
    const file = await send(gateway, 'GET', 'api/contents/existing.txt', {
      headers: auth(gateway)
    });
    expect(file.status).toBe(200);
    expect(file.json().content).toBe('keep me\n');
    for (const [method, path, body] of writes()) {
      const reply = await send(gateway, method, path, { headers: auth(gateway), body });
      expect({ method, path, status: reply.status }).toEqual({ method, path, status: 403 });
      expect(reply.json()).toEqual({
        message: 'User is not authorized to write on resource: contents.',
        reason: 'not authorized'
      });
    }
    await expectStoreWritesRefused(gateway);
    expect(rootEntries(gateway)).toEqual(before);
    expect(existsSync(join(gateway.rootDir, '.ipynb_checkpoints'))).toBe(false);
  });

  test('read-only authorizer, contents_backend jupyter: Jupyter refuses, and so do we', async () => {
    const gateway = readOnlyJupyter;
    const info = await send(gateway, 'GET', 'api/store', { headers: auth(gateway) });
    expect(info.json().contents_backend).toMatchObject({ backend: 'jupyter' });
    const before = rootEntries(gateway);
    const file = await send(gateway, 'GET', 'api/contents/existing.txt', {
      headers: auth(gateway)
    });
    expect(file.status).toBe(200);
    for (const [method, path, body] of writes()) {
      const reply = await send(gateway, method, path, { headers: auth(gateway), body });
      expect({ method, path, status: reply.status }).toEqual({ method, path, status: 403 });
    }
    await expectStoreWritesRefused(gateway);
    expect(rootEntries(gateway)).toEqual(before);
  });

  test("Jupyter's default authorizer: the same writes succeed, token ones even cross-origin", async () => {
    const gateway = allowAll;
    for (const [method, path, body, allowed] of writes()) {
      const reply = await send(gateway, method, path, { headers: auth(gateway), body });
      expect({ method, path, status: reply.status }).toEqual({ method, path, status: allowed });
    }
    // Jupyter exempts a token-authenticated request from the Origin and XSRF checks.
    const crossSite = await send(gateway, 'PUT', 'api/contents/cross.txt', {
      headers: { ...auth(gateway), ...CROSS_SITE },
      body: { type: 'file', format: 'text', content: 'x' }
    });
    expect(crossSite.status).toBe(201);

    await writeFile(join(gateway.rootDir, 'nb.ipynb'), JSON.stringify(NOTEBOOK));
    const published = await send(gateway, 'PUT', 'api/store/publish/nb.ipynb', {
      headers: auth(gateway),
      body: { type: 'notebook', content: NOTEBOOK }
    });
    expect(published.status).toBe(200);
    const source = {
      object_bucket: published.json().object_bucket,
      object_key: published.json().object_key
    };
    expect(source).toEqual({ object_bucket: 'jupyter-store', object_key: 'published/nb.ipynb' });
    const page = await send(
      gateway,
      'GET',
      `store/clone?object_bucket=${source.object_bucket}&object_key=${source.object_key}`,
      { headers: auth(gateway) }
    );
    expect(page.status).toBe(200);
    const cloned = await send(gateway, 'POST', 'api/store/clone', {
      headers: auth(gateway),
      body: source
    });
    expect(cloned.status).toBe(200);
    expect(cloned.json().path).toBe('nb-1.ipynb');
    const fsCloned = await send(gateway, 'POST', 'api/store/fs-clone', {
      headers: auth(gateway),
      body: { relpath: 'lesson.ipynb' }
    });
    expect(fsCloned.status).toBe(200);
    expect(fsCloned.json().path).toBe('lesson.ipynb');
    expect(rootEntries(gateway)).toEqual(
      expect.arrayContaining(['cross.txt', 'lesson.ipynb', 'nb-1.ipynb', 'new.txt', 'renamed.txt'])
    );
  });
});
