/**
 * The attacks a security review found the gateway already resisting, kept as a table so that
 * they keep holding: path traversal in every encoding, Host headers of DNS rebinding, cross-site
 * forms without the XSRF token, request smuggling, script in the landing pages and open
 * redirects. Against the real `jupyter-store lab` (token auth, a real Jupyter Server behind it)
 * archiving to MinIO, with an fs-clone base directory beside a secret file.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import * as http from 'node:http';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { useArchivingLab } from '../support/archivingLab';
import type { IGatewayProcess } from '../support/gateway';

jest.setTimeout(120_000);

const BUCKET = 'held-attacks';
/** Text of a file outside the root and the base directory; no answer may ever contain it. */
const SECRET = 'outside-secret-7c1f2a';

let gateway: IGatewayProcess;
let work: string;
let port: number;

const lab = useArchivingLab({
  bucket: BUCKET,
  gateway: async () => {
    work = await mkdtemp(join(tmpdir(), 'held-attacks-'));
    await mkdir(join(work, 'root'), { recursive: true });
    await mkdir(join(work, 'base'), { recursive: true });
    await writeFile(join(work, 'secret.txt'), SECRET);
    await writeFile(join(work, 'base', 'lesson.ipynb'), '{}');
    return {
      rootDir: join(work, 'root'),
      args: [`--StoreSettings.fs_cloning_basedir=${join(work, 'base')}`]
    };
  }
});

beforeAll(() => {
  gateway = lab.gateway;
  port = Number(new URL(gateway.origin).port);
});

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

interface IReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** One request with the path sent exactly as written (no normalisation, no encoding). */
function request(options: {
  method?: string;
  path: string;
  headers?: http.OutgoingHttpHeaders;
  body?: string;
}): Promise<IReply> {
  return new Promise((resolve, reject) => {
    const sent = http.request(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'GET',
        path: options.path,
        headers: { host: `127.0.0.1:${port}`, ...options.headers },
        agent: false
      },
      response => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            text: Buffer.concat(chunks).toString('utf8')
          })
        );
        response.on('error', reject);
      }
    );
    sent.on('error', reject);
    sent.end(options.body);
  });
}

/** Raw bytes on a fresh connection; resolves with everything the gateway wrote before closing. */
function rawExchange(bytes: string, waitMs = 3000): Promise<string> {
  return new Promise((resolve, reject) => {
    let received = '';
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes));
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(received);
    }, waitMs);
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    });
    socket.on('error', error => {
      clearTimeout(timer);
      if (received) resolve(received);
      else reject(error);
    });
  });
}

const token = (): http.OutgoingHttpHeaders => ({ authorization: `token ${gateway.token}` });

/** A login cookie and the `_xsrf` cookie, as a browser holds them after opening Lab. */
async function browserCookies(): Promise<string> {
  const page = await request({ path: `/lab?token=${gateway.token}` });
  expect(page.status).toBe(200);
  const cookies = (page.headers['set-cookie'] ?? []).map(line => line.split(';', 1)[0]);
  expect(cookies.some(c => c.startsWith('_xsrf='))).toBe(true);
  expect(cookies.some(c => c.startsWith('username-'))).toBe(true);
  return cookies.join('; ');
}

function expectJsonError(reply: IReply): void {
  expect(reply.status).toBeGreaterThanOrEqual(400);
  expect(reply.status).toBeLessThan(500);
  expect(reply.text).not.toContain(SECRET);
  expect(reply.text).not.toMatch(/root:x?:0:0/);
}

describe('path traversal', () => {
  test.each([
    ['api/contents/..%2F..%2Fsecret.txt'],
    ['api/contents/%2e%2e/%2e%2e/secret.txt'],
    ['api/contents/%2E%2E%2F%2E%2E%2Fsecret.txt'],
    ['api/contents/..%252F..%252Fsecret.txt'],
    ['api/contents/..%5C..%5Csecret.txt'],
    ['api/contents/%c0%ae%c0%ae/%c0%ae%c0%ae/secret.txt'],
    ['api/contents/..;/..;/secret.txt'],
    ['api/contents/x/../../secret.txt'],
    ['api/contents/%2F..%2F..%2Fsecret.txt'],
    ['api/contents/secret.txt%00.ipynb'],
    ['api/contents/..%2F..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd'],
    ['api/store/versions/..%2F..%2Fsecret.txt'],
    ['api/contents/..%2Fsecret.txt/checkpoints'],
    ['files/..%2F..%2Fsecret.txt'],
    ['api/contents/../../secret.txt']
  ])('GET %s reads nothing outside the root', async path => {
    const reply = await request({ path: `/${path}`, headers: token() });
    expectJsonError(reply);
  });

  test.each([
    ['../secret.txt'],
    ['..%2Fsecret.txt'],
    ['/etc/passwd'],
    [`${'../'.repeat(8)}etc/passwd`]
  ])('fs-clone of %s copies nothing from outside the base directory', async relpath => {
    const reply = await request({
      method: 'POST',
      path: '/api/store/fs-clone',
      headers: { ...token(), 'content-type': 'application/json' },
      body: JSON.stringify({ relpath, target_path: 'stolen.txt' })
    });
    expectJsonError(reply);
    const listing = await request({ path: '/api/contents', headers: token() });
    expect(listing.text).not.toContain('stolen');
  });

  test.each([['../outside.txt'], ['..%2Foutside.txt'], ['a/../../outside.txt']])(
    'PUT %s writes nothing outside the root',
    async name => {
      const reply = await request({
        method: 'PUT',
        path: `/api/contents/${name}`,
        headers: { ...token(), 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'file', format: 'text', content: 'x' })
      });
      expectJsonError(reply);
      await expect(
        request({ path: '/api/contents/outside.txt', headers: token() })
      ).resolves.toMatchObject({ status: 404 });
    }
  );
});

describe('Host headers (DNS rebinding)', () => {
  test.each([
    ['evil.example', '/api/contents'],
    ['evil.example:8888', '/api/store'],
    ['127.0.0.1.evil.example', '/api/contents'],
    ['localhost.evil.example', '/api/store/versions/x.ipynb'],
    ['evil.example', '/api/kernels'],
    ['[::ffff:127.0.0.1]', '/api/contents']
  ])('Host %s on %s is refused', async (host, path) => {
    const reply = await request({ path, headers: { ...token(), host } });
    expect(reply.status).toBe(403);
  });
});

describe('cross-site forms without the XSRF token', () => {
  test.each([
    ['/api/contents', 'application/x-www-form-urlencoded', 'type=notebook'],
    ['/api/contents', 'text/plain', '{"type":"notebook"}'],
    ['/api/contents/x.ipynb/checkpoints', 'text/plain', ''],
    ['/api/store/clone', 'text/plain', `{"object_bucket":"${BUCKET}","object_key":"a.ipynb"}`],
    ['/api/store/fs-clone', 'multipart/form-data; boundary=x', '--x\r\n\r\n--x--'],
    ['/api/store/publish/x.ipynb', 'text/plain', '{}']
  ])('POST %s as %s with only the cookies is refused', async (path, type, body) => {
    const cookie = await browserCookies();
    const sameSite = await request({
      method: 'POST',
      path,
      headers: { cookie, 'content-type': type },
      body
    });
    expect(sameSite.status).toBe(403);
    const crossSite = await request({
      method: 'POST',
      path,
      headers: { cookie, 'content-type': type, origin: 'http://evil.example' },
      body
    });
    expect([403, 404]).toContain(crossSite.status);
    const forged = await request({
      method: 'POST',
      path: `${path}?_xsrf=2|00000000|00000000000000000000000000000000|1`,
      headers: { cookie, 'content-type': type },
      body
    });
    expect(forged.status).toBe(403);
    const listing = await request({ path: '/api/contents', headers: token() });
    expect(JSON.parse(listing.text).content).toEqual([]);
  });
});

describe('request smuggling', () => {
  const smuggled = `GET /api/contents/smuggled HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n\r\n`;
  test.each([
    [
      'Content-Length with Transfer-Encoding',
      'POST /api/contents HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nContent-Length: 5\r\n' +
        `Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n${smuggled}`
    ],
    [
      'two different Content-Lengths',
      'POST /api/contents HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nContent-Length: 0\r\n' +
        `Content-Length: ${smuggled.length}\r\n\r\n${smuggled}`
    ],
    [
      'an obfuscated Transfer-Encoding',
      'POST /api/kernels HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nTransfer-Encoding: chunked\r\n' +
        `Transfer-Encoding: x\r\n\r\n0\r\n\r\n${smuggled}`
    ],
    [
      'a space before the colon',
      'POST /api/kernels HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nContent-Length : 0\r\n' +
        `\r\n${smuggled}`
    ]
  ])('%s is a 400 and the hidden request is never answered', async (_name, bytes) => {
    const answer = await rawExchange(bytes.replaceAll('PORT', String(port)));
    const statusLines = answer.match(/^HTTP\/1\.[01] \d{3}/gm) ?? [];
    expect(statusLines).toEqual(['HTTP/1.1 400']);
  });
});

describe('landing pages', () => {
  test.each([
    ['<script>alert(1)</script>.ipynb', '<script>alert(1)'],
    ['"><img src=x onerror=alert(1)>.ipynb', '<img src=x'],
    ["'onmouseover='alert(1)'.ipynb", "'onmouseover='"],
    ['</title><script>alert(1)</script>', '</title><script>']
  ])('object_key %s stays text', async (key, raw) => {
    const reply = await request({
      path: `/store/clone?object_bucket=${BUCKET}&object_key=${encodeURIComponent(key)}`,
      headers: token()
    });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toMatch(/^text\/html/);
    expect(reply.headers['content-security-policy']).toMatch(/script-src/);
    expect(reply.text).not.toContain(raw);
  });

  test.each([
    ['/store/clone/?object_bucket=b&next=//evil.example'],
    ['/store/clone/?x=http://evil.example'],
    ['/store/fs-clone/?relpath=//evil.example/x'],
    ['/store/clone//evil.example/'],
    ['/store//clone/?a=b']
  ])('%s never redirects off the site', async path => {
    const reply = await request({ path, headers: token() });
    const location = reply.headers.location;
    if (location !== undefined) {
      expect(location).not.toMatch(/^(?:[a-z][a-z0-9+.-]*:)?[/\\]{2}/i);
      expect(new URL(location, gateway.origin + path).origin).toBe(gateway.origin);
    } else {
      expect(reply.status).toBeGreaterThanOrEqual(400);
    }
  });

  test('a visitor who is not logged in goes to the login page of this site only', async () => {
    const reply = await request({
      path: `/store/clone?object_bucket=${BUCKET}&object_key=a.ipynb&next=https://evil.example`
    });
    expect(reply.status).toBe(302);
    const location = new URL(reply.headers.location ?? '', gateway.origin);
    expect(location.origin).toBe(gateway.origin);
    expect(location.pathname).toBe('/login');
    const next = location.searchParams.get('next') ?? '';
    expect(next.startsWith('/store/clone?')).toBe(true);
    expect(new URL(next, gateway.origin).origin).toBe(gateway.origin);
  });
});
