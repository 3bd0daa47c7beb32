import express from 'express';
import type { AddressInfo } from 'node:net';
import type { Authenticator } from '../../src/gateway/auth';
import { DEFAULT_REQUEST_CHECKS } from '../../src/gateway/auth';
import { requirePageAuth } from '../../src/pages/pageAuth';

/** Where a page view with no credential is sent, with or without a Hub. */
async function loginLocation(onHub: boolean | undefined, path: string): Promise<string | null> {
  const nobody = { authenticate: async () => null } as unknown as Authenticator;
  const app = express();
  app.use(
    requirePageAuth({
      authenticator: nobody,
      checks: DEFAULT_REQUEST_CHECKS,
      baseUrl: '/user/bob/',
      onHub
    })
  );
  app.use((_request, response) => response.status(200).send('page'));
  const server = app.listen(0, '127.0.0.1');
  await new Promise(resolve => server.once('listening', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { redirect: 'manual' });
    await response.arrayBuffer();
    expect(response.status).toBe(302);
    return response.headers.get('location');
  } finally {
    await new Promise(resolve => server.close(resolve));
  }
}

describe('requirePageAuth', () => {
  const page = '/user/bob/store/clone?object_bucket=b&object_key=published%2Fa.ipynb&token=x';

  it("sends a visitor who is not logged in to Jupyter's login page", async () => {
    expect(await loginLocation(false, page)).toBe(
      `/user/bob/login?next=${encodeURIComponent(
        '/user/bob/store/clone?object_bucket=b&object_key=published%2Fa.ipynb'
      )}`
    );
  });

  it('on a Hub, sends them through JupyterLab, which comes back to the page', async () => {
    expect(await loginLocation(true, page)).toBe(
      `/user/bob/lab?store-landing=${encodeURIComponent(
        'store/clone?object_bucket=b&object_key=published%2Fa.ipynb'
      )}`
    );
  });

  it("tells a Hub by the spawner's variables when not told", async () => {
    const saved = { ...process.env };
    try {
      delete process.env.JUPYTERHUB_API_URL;
      delete process.env.JUPYTERHUB_BASE_URL;
      expect(await loginLocation(undefined, page)).toMatch(/^\/user\/bob\/login\?next=/);
      process.env.JUPYTERHUB_API_URL = 'http://127.0.0.1:8081/hub/api';
      expect(await loginLocation(undefined, page)).toMatch(/^\/user\/bob\/lab\?store-landing=/);
    } finally {
      process.env = saved;
    }
  });
});
