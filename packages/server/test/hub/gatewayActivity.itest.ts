/**
 * The gateway's activity hook, which `jupyter-store singleuser` reports to JupyterHub: it counts
 * the authenticated requests the gateway answered itself, as Jupyter counts its API requests,
 * and nothing the upstream answers (which counts those itself).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Gateway } from '../../src/gateway/gateway';
import { createLogger } from '../../src/gateway/logger';
import { FakeUpstream } from '../support/fakeUpstream';

let dir: string;
let backend: FakeUpstream;
let gateway: Gateway;
let origin: string;
let activity: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gateway-activity-'));
  backend = new FakeUpstream();
  const upstream = await backend.listen({ port: 0 });
  gateway = new Gateway({
    rootDir: await mkdtemp(join(dir, 'root-')),
    jupyterDataDir: await mkdtemp(join(dir, 'data-')),
    upstream,
    log: createLogger({ level: 'silent' })
  });
  gateway.onActivity(() => activity++);
  const { port } = await gateway.listen(0, '127.0.0.1');
  origin = `http://127.0.0.1:${port}`;
});

beforeEach(() => {
  activity = 0;
});

afterAll(async () => {
  await gateway?.close({ drainTimeoutMs: 100 });
  await backend?.close();
  await rm(dir, { recursive: true, force: true });
});

async function get(path: string, token?: string): Promise<number> {
  const response = await fetch(`${origin}${path}`, {
    headers: token ? { authorization: `token ${token}` } : {}
  });
  await response.arrayBuffer();
  // The hook runs once the answer is sent: let the 'finish' event pass.
  await new Promise(resolve => setImmediate(resolve));
  return response.status;
}

test('an authenticated request the gateway answers is activity', async () => {
  expect(await get('/api/contents', 'good')).toBe(200);
  expect(activity).toBe(1);
  expect(await get('/api/contents/missing.ipynb', 'good')).toBe(404);
  expect(activity).toBe(2);
});

test('no_track_activity in the query is not activity, as in Jupyter', async () => {
  expect(await get('/api/contents?no_track_activity=1', 'good')).toBe(200);
  expect(activity).toBe(0);
});

test('a refused request is not activity', async () => {
  expect(await get('/api/contents', 'bad')).toBe(403);
  expect(await get('/api/contents')).toBe(403);
  expect(activity).toBe(0);
});

test('a request passed to the upstream is not reported by the gateway', async () => {
  expect(await get('/lab', 'good')).toBe(200);
  expect(backend.requests.some(request => request.url === '/lab')).toBe(true);
  expect(activity).toBe(0);
});
