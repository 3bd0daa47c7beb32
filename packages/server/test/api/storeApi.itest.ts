/**
 * The store API's feature detection and version listing through the gateway, with the embedded
 * store (the main command's default).
 */
import { spawnSync } from 'node:child_process';
import {
  PublishResultSchema,
  StoreInfoSchema,
  VersionListingSchema
} from '@jupyter-store/contract';
import { CLI, labDefaults, startGatewayProcess, type IGatewayProcess } from '../support/gateway';
import { saveMarkdownNotebook } from '../support/notebookSaves';

jest.setTimeout(120_000);

describe('store API with the embedded store', () => {
  let gateway: IGatewayProcess;
  const auth = (): Record<string, string> => ({ Authorization: `token ${gateway.token}` });

  beforeAll(async () => {
    gateway = await startGatewayProcess({ args: labDefaults() });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  async function save(path: string, text: string): Promise<void> {
    const status = await saveMarkdownNotebook(gateway, path, text);
    expect(status >= 200 && status < 300).toBe(true);
  }

  test('GET api/store reports the release, the features with reasons and the archive', async () => {
    const response = await fetch(gateway.url('api/store'), { headers: auth() });
    expect(response.status).toBe(200);
    const info = StoreInfoSchema.parse(await response.json());
    expect(info.release).toBe(gateway.record.version);
    expect(info.features).toEqual({
      store_valid: true,
      archive_valid: true,
      publish_valid: false,
      object_clone_valid: true,
      fs_clone_valid: false
    });
    expect(info.reasons.publish_valid).toMatch(/jupyter store enable/);
    expect(info.reasons.fs_clone_valid).toMatch(/fs_cloning_basedir/);
    expect(info.archive).toMatchObject({ pending: 0, last_error: null });
  });

  test('GET api/store needs Jupyter’s auth', async () => {
    const response = await fetch(gateway.url('api/store'));
    expect(response.status).toBe(403);
  });

  test('versions lists every archived save of a path, newest first', async () => {
    for (let i = 0; i < 3; i++) await save('v.ipynb', `v${i}`);
    let listing: ReturnType<typeof VersionListingSchema.parse> | undefined;
    const deadline = Date.now() + 20_000;
    do {
      const response = await fetch(gateway.url('api/store/versions/v.ipynb'), { headers: auth() });
      expect(response.status).toBe(200);
      listing = VersionListingSchema.parse(await response.json());
    } while (listing.workspace.versions.length < 3 && Date.now() < deadline);
    expect(listing.path).toBe('v.ipynb');
    expect(listing.object_bucket).toBe('jupyter-store');
    expect(listing.workspace.object_key).toBe('workspace/v.ipynb');
    expect(listing.workspace.versions).toHaveLength(3);
    expect(listing.workspace.versions.map(v => v.is_latest)).toEqual([true, false, false]);
    const times = listing.workspace.versions.map(v => v.last_modified);
    expect([...times].sort().reverse()).toEqual(times);
    expect(listing.published).toEqual({ object_key: 'published/v.ipynb', versions: [] });
    const info = StoreInfoSchema.parse(
      await (await fetch(gateway.url('api/store'), { headers: auth() })).json()
    );
    expect(info.archive?.archived).toBeGreaterThanOrEqual(3);
    expect(info.archive?.last_archived_at).not.toBeNull();
  });

  test('jupyter store enable --user turns publishing on without a restart', async () => {
    const notebook = {
      type: 'notebook',
      content: {
        cells: [{ cell_type: 'markdown', id: 'p', metadata: {}, source: 'shared' }],
        metadata: {},
        nbformat: 4,
        nbformat_minor: 5
      }
    };
    const publish = () =>
      fetch(gateway.url('api/store/publish/team/report.ipynb'), {
        method: 'PUT',
        headers: { ...auth(), 'Content-Type': 'application/json' },
        body: JSON.stringify(notebook)
      });
    expect((await publish()).status).toBe(403);
    const enabled = spawnSync(process.execPath, [CLI, 'enable', '--user'], {
      encoding: 'utf8',
      env: { ...process.env, JUPYTER_CONFIG_DIR: gateway.state.config },
      timeout: 30_000
    });
    expect(enabled.status).toBe(0);
    const response = await publish();
    expect(response.status).toBe(200);
    const result = PublishResultSchema.parse(await response.json());
    expect(result).toMatchObject({
      object_bucket: 'jupyter-store',
      object_key: 'published/team/report.ipynb',
      object_path: 's3://jupyter-store/published/team/report.ipynb'
    });
    const info = StoreInfoSchema.parse(
      await (await fetch(gateway.url('api/store'), { headers: auth() })).json()
    );
    expect(info.features.publish_valid).toBe(true);
    const disabled = spawnSync(process.execPath, [CLI, 'disable', '--user'], {
      encoding: 'utf8',
      env: { ...process.env, JUPYTER_CONFIG_DIR: gateway.state.config },
      timeout: 30_000
    });
    expect(disabled.status).toBe(0);
    expect((await publish()).status).toBe(403);

    // The published copy can be cloned back, by its exact version, beside the original.
    const cloned = await fetch(gateway.url('api/store/clone'), {
      method: 'POST',
      headers: { ...auth(), 'Content-Type': 'application/json' },
      body: JSON.stringify({
        object_bucket: result.object_bucket,
        object_key: result.object_key,
        object_version_id: result.object_version_id
      })
    });
    expect(cloned.status).toBe(200);
    const model = (await cloned.json()) as {
      path: string;
      type: string;
      object_version_id: string;
    };
    expect(model).toMatchObject({
      path: 'report.ipynb',
      type: 'notebook',
      object_version_id: result.object_version_id
    });
  });

  test.each([
    ['..%2Fsecret.ipynb', 'invalid path'],
    ['a%2F..%2Fb.ipynb', 'invalid path'],
    ['%2Fetc%2Fpasswd', 'absolute path'],
    ['.hidden/a.ipynb', 'hidden path'],
    ['a/.ipynb_checkpoints/a-checkpoint.ipynb', 'hidden path'],
    ['', 'empty path'],
    ['%FF.ipynb', 'invalid path']
  ])('versions of %j is refused with 400 (%s)', async (path, reason) => {
    const response = await fetch(`${gateway.url('api/store/versions/')}${path}`, {
      headers: auth()
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { reason: string }).reason).toBe(reason);
  });
});
