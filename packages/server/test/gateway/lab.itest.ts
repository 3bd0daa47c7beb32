/**
 * The gateway in front of a real JupyterLab from PyPI, started by `jupyter-store lab` exactly as a
 * user starts it: routes, kernels over websockets, Jupyter's auth, base_url, both upstream
 * transports, `serve`, the runtime record and the lifecycle.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { labDefaults, startGatewayProcess, type IGatewayProcess } from '../support/gateway';
import { startJupyterServer } from '../support/jupyterServer';
import { withKernel } from '../support/kernel';

jest.setTimeout(180_000);

const NOTEBOOK = {
  type: 'notebook',
  content: {
    cells: [{ cell_type: 'code', source: '1+1', metadata: {}, outputs: [], execution_count: null }],
    metadata: {},
    nbformat: 4,
    nbformat_minor: 5
  }
};

/** A request straight to an upstream address (unix socket or TCP), bypassing the gateway. */
function requestDirect(
  upstreamUrl: string,
  path: string,
  headers: Record<string, string>
): Promise<{ status: number; body: string }> {
  const target = upstreamUrl.startsWith('unix:')
    ? { socketPath: upstreamUrl.slice('unix:'.length) }
    : { host: new URL(upstreamUrl).hostname, port: Number(new URL(upstreamUrl).port) };
  return new Promise((resolve, reject) => {
    const request = http.request({ ...target, path, headers }, response => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', chunk => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on('error', reject);
    request.end();
  });
}

/** `name=value` pairs from Set-Cookie headers, ready for a Cookie header. */
function cookiesOf(response: Response): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const line of response.headers.getSetCookie()) {
    const [pair] = line.split(';');
    const index = pair.indexOf('=');
    cookies.set(pair.slice(0, index), pair.slice(index + 1));
  }
  return cookies;
}

function cookieHeader(cookies: Map<string, string>): string {
  return [...cookies].map(([name, value]) => `${name}=${value}`).join('; ');
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('jupyter-store lab with a token, Jupyter on a unix socket', () => {
  let gateway: IGatewayProcess;

  beforeAll(async () => {
    gateway = await startGatewayProcess({ args: labDefaults() });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  test('the hidden Jupyter listens on a private unix socket', () => {
    expect(gateway.record.upstream_url).toMatch(/^unix:\/.+\.sock$/);
    const socketPath = gateway.record.upstream_url.slice('unix:'.length);
    expect(statSync(socketPath).mode & 0o777).toBe(0o600);
  });

  test('/lab loads through the gateway', async () => {
    const response = await fetch(gateway.url(`lab?token=${gateway.token}`));
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain('jupyter-config-data');
    expect(html).toContain('JupyterLab');
  });

  test('a notebook created through the gateway shows up for the upstream too', async () => {
    const auth = { Authorization: `token ${gateway.token}` };
    const put = await fetch(gateway.url('api/contents/made-here.ipynb'), {
      method: 'PUT',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify(NOTEBOOK)
    });
    expect(put.status).toBe(201);
    const direct = await requestDirect(
      gateway.record.upstream_url,
      '/api/contents/made-here.ipynb',
      auth
    );
    expect(direct.status).toBe(200);
    const model = JSON.parse(direct.body) as { content: { cells: Array<{ source: string }> } };
    expect(model.content.cells[0].source).toBe('1+1');
  });

  test('a kernel started through the gateway runs 1+1 over its websocket', async () => {
    await withKernel(gateway, async kernel => {
      expect(kernel.protocol).toBe('v1.kernel.websocket.jupyter.org');
      expect(await kernel.execute('1+1')).toBe('2');
      // Kernels find our command on their PATH, so `jupyter store …` works inside notebooks.
      const version = await kernel.execute(
        "import subprocess, sys; subprocess.run([sys.executable, '-m', 'jupyter', 'store', '--version'], capture_output=True, text=True).stdout.strip()"
      );
      expect(version).toBe(`'${gateway.record.version}'`);
    });
  });

  describe('auth on the gateway’s own routes is Jupyter’s', () => {
    const body = JSON.stringify({ type: 'file', format: 'text', content: 'x' });

    test('no credentials get 403 with a JSON body', async () => {
      const response = await fetch(gateway.url('api/contents'));
      expect(response.status).toBe(403);
      expect(response.headers.get('content-type')).toMatch(/application\/json/);
      const error = (await response.json()) as { message: string; reason: string };
      expect(error.reason).toBe('not authenticated');
    });

    test('a token in the Authorization header is accepted', async () => {
      const response = await fetch(gateway.url('api/contents'), {
        headers: { Authorization: `token ${gateway.token}` }
      });
      expect(response.status).toBe(200);
    });

    test('a token in the query is accepted', async () => {
      const response = await fetch(gateway.url(`api/contents?token=${gateway.token}`));
      expect(response.status).toBe(200);
    });

    test('a wrong token gets 403', async () => {
      const response = await fetch(gateway.url('api/contents'), {
        headers: { Authorization: 'token not-the-token' }
      });
      expect(response.status).toBe(403);
    });

    test('token-authenticated writes need no XSRF token, even cross-origin', async () => {
      const response = await fetch(gateway.url('api/contents/token-write.txt'), {
        method: 'PUT',
        headers: {
          Authorization: `token ${gateway.token}`,
          Origin: 'http://elsewhere.example',
          'Content-Type': 'application/json'
        },
        body
      });
      expect(response.status).toBe(201);
    });

    describe('after a cookie login', () => {
      let cookies: Map<string, string>;

      beforeAll(async () => {
        const login = await fetch(gateway.url(`lab?token=${gateway.token}`), {
          redirect: 'manual'
        });
        expect(login.status).toBe(200);
        cookies = cookiesOf(login);
      });

      test('Jupyter set a login cookie and an XSRF cookie through the gateway', () => {
        expect([...cookies.keys()].some(name => name.startsWith('username-'))).toBe(true);
        expect(cookies.get('_xsrf')).toMatch(/^2\|/);
      });

      test('reads need only the cookie', async () => {
        const response = await fetch(gateway.url('api/contents'), {
          headers: { Cookie: cookieHeader(cookies) }
        });
        expect(response.status).toBe(200);
      });

      test('a write without the XSRF token is refused, as Jupyter refuses it', async () => {
        const ours = await fetch(gateway.url('api/contents/cookie-write.txt'), {
          method: 'PUT',
          headers: { Cookie: cookieHeader(cookies), 'Content-Type': 'application/json' },
          body
        });
        expect(ours.status).toBe(403);
        expect(((await ours.json()) as { message: string }).message).toBe(
          "'_xsrf' argument missing from POST"
        );
        // The same request to a proxied route is refused by Jupyter itself.
        const theirs = await fetch(gateway.url('api/sessions'), {
          method: 'POST',
          headers: { Cookie: cookieHeader(cookies), 'Content-Type': 'application/json' },
          body: '{}'
        });
        expect(theirs.status).toBe(403);
      });

      test('a write with the XSRF token from the cookie succeeds', async () => {
        const response = await fetch(gateway.url('api/contents/cookie-write.txt'), {
          method: 'PUT',
          headers: {
            Cookie: cookieHeader(cookies),
            'X-XSRFToken': cookies.get('_xsrf') as string,
            'Content-Type': 'application/json'
          },
          body
        });
        expect(response.status).toBe(201);
      });

      test('a cross-origin cookie write is refused with 404', async () => {
        const response = await fetch(gateway.url('api/contents/cross.txt'), {
          method: 'PUT',
          headers: {
            Cookie: cookieHeader(cookies),
            'X-XSRFToken': cookies.get('_xsrf') as string,
            Origin: 'http://elsewhere.example',
            'Content-Type': 'application/json'
          },
          body
        });
        expect(response.status).toBe(404);
      });

      test('a mismatched XSRF token is refused', async () => {
        const response = await fetch(gateway.url('api/contents/bad-xsrf.txt'), {
          method: 'PUT',
          headers: {
            Cookie: cookieHeader(cookies),
            'X-XSRFToken': '2|00000000|00000000000000000000000000000000|1',
            'Content-Type': 'application/json'
          },
          body
        });
        expect(response.status).toBe(403);
      });
    });

    test('a non-local Host is refused', async () => {
      const response = await new Promise<number>((resolve, reject) => {
        const request = http.request(
          {
            host: '127.0.0.1',
            port: gateway.record.port,
            path: `/api/contents?token=${gateway.token}`,
            headers: { Host: 'evil.example' }
          },
          res => {
            res.resume();
            resolve(res.statusCode ?? 0);
          }
        );
        request.on('error', reject);
        request.end();
      });
      expect(response).toBe(403);
    });
  });

  test('the runtime record lists the gateway, sorted as Jupyter writes it, readable only by us', () => {
    const files = readdirSync(gateway.state.runtime).filter(name => /^jpserver-/.test(name));
    // Jupyter's own record was removed: clients find the gateway, not the hidden server.
    expect(files).toEqual([`jpserver-${gateway.child.pid}.json`]);
    const file = join(gateway.state.runtime, files[0]);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const record = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    expect(Object.keys(record)).toEqual([...Object.keys(record)].sort());
    expect(record).toMatchObject({
      base_url: '/',
      hostname: '127.0.0.1',
      notebook_dir: gateway.rootDir,
      root_dir: gateway.rootDir,
      password: false,
      pid: gateway.child.pid,
      port: gateway.record.port,
      secure: false,
      token: gateway.token,
      url: `http://127.0.0.1:${gateway.record.port}/`
    });
    expect(typeof record.version).toBe('string');
    expect(isAlive(record.upstream_pid as number)).toBe(true);
  });

  test('the banner shows the URL with its token', () => {
    expect(gateway.stdout()).toContain(
      `http://127.0.0.1:${gateway.record.port}/lab?token=${gateway.token}`
    );
  });

  test('the log never shows the token', () => {
    expect(gateway.stderr()).not.toContain(gateway.token);
    expect(gateway.stderr().length).toBeGreaterThan(0);
  });

  test('serve fronts the same Jupyter through its unix socket', async () => {
    const served = await startGatewayProcess({
      command: 'serve',
      rootDir: gateway.rootDir,
      args: ['--upstream', gateway.record.upstream_url, '--token', gateway.token]
    });
    try {
      const auth = { Authorization: `token ${gateway.token}` };
      const ours = await fetch(served.url('api/contents/made-here.ipynb'), { headers: auth });
      expect(ours.status).toBe(200);
      const theirs = await fetch(served.url('api/kernelspecs'), { headers: auth });
      expect(theirs.status).toBe(200);
      expect(served.record.upstream_url).toBe(gateway.record.upstream_url);
      expect(served.record.upstream_pid).toBeNull();
    } finally {
      expect(await served.stop()).toBe(0);
    }
  });
});

describe('jupyter-store lab under --base-url /user/alice/ with a TCP upstream', () => {
  let gateway: IGatewayProcess;

  beforeAll(async () => {
    gateway = await startGatewayProcess({
      args: [...labDefaults(), '--base-url', '/user/alice/', '--upstream-transport', 'tcp']
    });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  test('the upstream is a loopback port', () => {
    expect(gateway.record.upstream_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(gateway.record.base_url).toBe('/user/alice/');
    expect(gateway.record.url).toBe(`http://127.0.0.1:${gateway.record.port}/user/alice/`);
  });

  test('every kind of route works under the base URL', async () => {
    const auth = { Authorization: `token ${gateway.token}` };
    const lab = await fetch(gateway.url(`lab?token=${gateway.token}`));
    expect(lab.status).toBe(200);
    const put = await fetch(gateway.url('api/contents/alice.ipynb'), {
      method: 'PUT',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify(NOTEBOOK)
    });
    expect(put.status).toBe(201);
    expect(put.headers.get('location')).toBe('/user/alice/api/contents/alice.ipynb');
    const direct = await requestDirect(
      gateway.record.upstream_url,
      '/user/alice/api/contents/alice.ipynb',
      auth
    );
    expect(direct.status).toBe(200);
    const specs = await fetch(gateway.url('api/kernelspecs'), { headers: auth });
    expect(specs.status).toBe(200);
    const files = await fetch(gateway.url('files/alice.ipynb'), { headers: auth });
    expect(files.status).toBe(200);
    // Outside the base URL nothing is ours: Jupyter answers (404).
    const outside = await fetch(`${gateway.origin}/api/contents`, { headers: auth });
    expect(outside.status).toBe(404);
  });

  test('kernels run over the websocket under the base URL', async () => {
    expect(await withKernel(gateway, kernel => kernel.execute('1+1'))).toBe('2');
  });
});

describe('jupyter-store lab --no-auth (the UI tests’ mode)', () => {
  let gateway: IGatewayProcess;

  beforeAll(async () => {
    gateway = await startGatewayProcess({
      args: [...labDefaults(), '--no-auth', '--disable-check-xsrf']
    });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  test('the gateway follows Jupyter: no credentials needed, no token in the record', async () => {
    expect(gateway.record.token).toBe('');
    const read = await fetch(gateway.url('api/contents'));
    expect(read.status).toBe(200);
    const write = await fetch(gateway.url('api/contents/open.txt'), {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ type: 'file', format: 'text', content: 'x' })
    });
    expect(write.status).toBe(201);
    expect(gateway.stdout()).toContain(`http://127.0.0.1:${gateway.record.port}/lab\n`);
  });
});

describe('serve in front of a Jupyter Server that goes away', () => {
  test('proxied and own routes answer 503 JSON, and the gateway stays up', async () => {
    const rootDir = mkdtempSync(join(tmpdir(), 'serve-root-'));
    const jupyter = await startJupyterServer({ rootDir });
    const served = await startGatewayProcess({
      command: 'serve',
      rootDir: jupyter.rootDir,
      args: ['--upstream', jupyter.url, '--token', jupyter.token]
    });
    try {
      const auth = { Authorization: `token ${jupyter.token}` };
      expect((await fetch(served.url('api/kernelspecs'), { headers: auth })).status).toBe(200);
      await jupyter.stop();
      for (const path of ['api/kernelspecs', 'api/contents']) {
        const response = await fetch(served.url(path), {
          headers: { Authorization: 'token another-one' }
        });
        expect(response.status).toBe(503);
        expect(response.headers.get('content-type')).toMatch(/application\/json/);
        const error = (await response.json()) as { message: string; reason: string };
        expect(error.reason).toBe('upstream unavailable');
      }
      expect(served.child.exitCode).toBeNull();
    } finally {
      await jupyter.stop();
      expect(await served.stop()).toBe(0);
      rmSync(rootDir, { recursive: true, force: true });
    }
  });
});

describe('lifecycle', () => {
  test('SIGINT stops the gateway and its Jupyter, and removes the runtime record', async () => {
    const gateway = await startGatewayProcess({ args: labDefaults() });
    const upstreamPid = gateway.record.upstream_pid as number;
    const recordFile = join(gateway.state.runtime, `jpserver-${gateway.child.pid}.json`);
    const runtime = gateway.state.runtime;
    gateway.child.kill('SIGINT');
    const code = await gateway.exited;
    expect(code).toBe(0);
    expect(() => statSync(recordFile)).toThrow();
    expect(readdirSync(runtime).filter(name => name.startsWith('jpserver-'))).toEqual([]);
    expect(isAlive(upstreamPid)).toBe(false);
    await gateway.stop();
  });

  test('when Jupyter dies, the gateway says so and exits non-zero', async () => {
    const gateway = await startGatewayProcess({ args: labDefaults() });
    const recordFile = join(gateway.state.runtime, `jpserver-${gateway.child.pid}.json`);
    process.kill(gateway.record.upstream_pid as number, 'SIGKILL');
    const code = await gateway.exited;
    expect(code).toBe(1);
    expect(gateway.stderr()).toMatch(/The Jupyter server exited unexpectedly/);
    expect(() => statSync(recordFile)).toThrow();
    await gateway.stop();
  });
});
