/**
 * The README's main job with no configuration: `jupyter-store lab` archives every notebook save
 * to the embedded store, byte for byte and in order.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EMBEDDED_BUCKET } from '../../src/settings';
import { LocalObjectStore } from '../../src/storage/localStore';
import { labDefaults, startGatewayProcess, type IGatewayProcess } from '../support/gateway';

jest.setTimeout(120_000);

describe('jupyter-store lab with no object-storage settings', () => {
  let gateway: IGatewayProcess;

  beforeAll(async () => {
    gateway = await startGatewayProcess({ args: labDefaults() });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  test('every notebook save becomes a version in the embedded store, byte for byte', async () => {
    const saved: Buffer[] = [];
    for (let i = 0; i < 5; i++) {
      const response = await fetch(gateway.url('api/contents/nb.ipynb'), {
        method: 'PUT',
        headers: { Authorization: `token ${gateway.token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({
          type: 'notebook',
          content: {
            cells: [{ cell_type: 'markdown', source: `save ${i}`, metadata: {}, id: `c${i}` }],
            metadata: {},
            nbformat: 4,
            nbformat_minor: 5
          }
        })
      });
      expect(response.status).toBe(i === 0 ? 201 : 200);
      saved.push(readFileSync(join(gateway.rootDir, 'nb.ipynb')));
    }
    // A plain file is not a notebook: not archived.
    const file = await fetch(gateway.url('api/contents/notes.txt'), {
      method: 'PUT',
      headers: { Authorization: `token ${gateway.token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ type: 'file', format: 'text', content: 'x' })
    });
    expect(file.status).toBe(201);

    const store = new LocalObjectStore({
      root: join(gateway.state.data, 'jupyter-store', 'objects')
    });
    try {
      const deadline = Date.now() + 30_000;
      let versions = await store.listVersions(EMBEDDED_BUCKET, 'workspace/nb.ipynb');
      while (versions.length < 5 && Date.now() < deadline) {
        await new Promise(resolve => setTimeout(resolve, 100));
        versions = await store.listVersions(EMBEDDED_BUCKET, 'workspace/nb.ipynb');
      }
      expect(versions).toHaveLength(5);
      // Newest first: the last save is the latest version.
      const bodies = await Promise.all(
        versions.map(
          async version =>
            (await store.get(EMBEDDED_BUCKET, 'workspace/nb.ipynb', version.versionId)).body
        )
      );
      expect(bodies.reverse()).toEqual(saved);
      expect(versions[0].isLatest).toBe(true);
      await expect(store.listVersions(EMBEDDED_BUCKET, 'workspace/notes.txt')).resolves.toEqual([]);
    } finally {
      await store.close();
    }
  });
});
