/**
 * `PUT {base}api/store/publish/{path}` through an in-process gateway (the route is not wired into
 * the CLI yet): a real Gateway in front of a fake upstream that answers `api/me`, real archiving,
 * and the store API router with the publish route added, against the embedded store and MinIO.
 */
import { StoreInfoSchema, VersionListingSchema } from '@jupyter-store/contract';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { mkdtemp } from 'node:fs/promises';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PublishResultSchema } from '@jupyter-store/contract';
import { Archiving } from '../../src/archive/archiving';
import { runDisable, runEnable } from '../../src/cli/enableCommands';
import { Gateway } from '../../src/gateway/gateway';
import { createLogger } from '../../src/gateway/logger';
import { mountStoreApi } from '../../src/gateway/start';
import { StoreSettingsSchema } from '../../src/settings';
import { isPublishEnabled } from '../../src/settings/publishEnabled';
import { FakeUpstream } from '../support/fakeUpstream';
import { createVersionedBucket, startMinio, type IObjectServer } from '../support/objectServers';

jest.setTimeout(120_000);

const AUTH = { Authorization: 'token good' };
const BODY_LIMIT = 2 * 1024 * 1024;

/** A gateway serving the store API with publishing, and what the tests look at. */
interface IPublishGateway {
  readonly origin: string;
  readonly rootDir: string;
  readonly archiving: Archiving;
  close(): Promise<void>;
}

const cleanups: Array<() => Promise<void> | void> = [];

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function freshDir(name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `publish-${name}-`));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The store API as `startGateway` mounts it (`mountStoreApi`), behind Jupyter's auth. */
async function startPublishGateway(
  values: Record<string, unknown>,
  publishEnabled: () => boolean
): Promise<IPublishGateway> {
  const upstream = new FakeUpstream();
  const address = await upstream.listen({ port: 0 });
  const dir = await freshDir('gateway');
  mkdirSync(join(dir, 'root'));
  const settings = StoreSettingsSchema.parse({
    local_store_dir: join(dir, 'objects'),
    journal_dir: join(dir, 'journal'),
    ...values
  });
  const log = createLogger({ level: 'silent' });
  const gateway = new Gateway({
    rootDir: join(dir, 'root'),
    jupyterDataDir: join(dir, 'data'),
    upstream: address,
    log
  });
  const archiving = await Archiving.start(settings, gateway.manager, log);
  gateway.onShutdown(() => archiving.close());
  mountStoreApi(gateway, { archiving, publishEnabled, maxPublishBodyBytes: BODY_LIMIT });
  const { port } = await gateway.listen(0, '127.0.0.1');
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await gateway.close({ drainTimeoutMs: 1000 });
    await upstream.close();
  };
  cleanups.push(close);
  return { origin: `http://127.0.0.1:${port}`, rootDir: join(dir, 'root'), archiving, close };
}

interface IAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: () => Record<string, unknown>;
}

/** One request with the path sent exactly as given (fetch would resolve `..` and `%2e%2e`). */
function send(
  gateway: IPublishGateway,
  method: string,
  rawPath: string,
  body?: string | Buffer,
  headers: Record<string, string> = AUTH
): Promise<IAnswer> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${gateway.origin}/`,
      {
        method,
        path: `/${rawPath}`,
        headers: {
          ...headers,
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' })
        },
        timeout: 60_000
      },
      response => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            text,
            json: () => JSON.parse(text) as Record<string, unknown>
          });
        });
        response.on('error', reject);
      }
    );
    request.on('timeout', () => request.destroy(new Error(`${method} /${rawPath} timed out`)));
    request.on('error', reject);
    request.end(body);
  });
}

const publish = (gateway: IPublishGateway, path: string, body?: string | Buffer) =>
  send(gateway, 'PUT', `api/store/publish/${path}`, body);

/**
 * A notebook written as raw JSON text, because its bytes matter: `1.0` and `2.0` must stay floats
 * (as Python reads them), non-ASCII text must stay as is, and multi-line sources are split.
 */
const NOTEBOOK_TEXT = `{
  "cells": [
    {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": "# Títle ✓\\nsecond line\\n"},
    {"cell_type": "code", "execution_count": 1, "id": "calc", "metadata": {"custom": 1.0, "tags": []},
     "outputs": [{"output_type": "execute_result", "execution_count": 1,
                  "data": {"text/plain": "2.0"}, "metadata": {}}],
     "source": "1.0 + 1\\nprint('ü')"}
  ],
  "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
               "ratio": 2.0},
  "nbformat": 4,
  "nbformat_minor": 5
}`;

const notebookModel = (content: string = NOTEBOOK_TEXT) =>
  `{"type": "notebook", "format": "json", "content": ${content}}`;

/** A notebook built from cells, as JSON text. */
const notebookWith = (cells: unknown[], extra: Record<string, unknown> = {}) =>
  notebookModel(JSON.stringify({ cells, metadata: {}, nbformat: 4, nbformat_minor: 5, ...extra }));

const codeCell = (id: string, more: Record<string, unknown> = {}) => ({
  cell_type: 'code',
  id,
  metadata: {},
  execution_count: null,
  outputs: [],
  source: 'x = 1',
  ...more
});

async function publishedVersions(gateway: IPublishGateway, path: string) {
  const { store, bucket, settings } = gateway.archiving;
  return store.listVersions(bucket, `${settings.published_prefix}/${path}`);
}

describe.each(['embedded', 'minio'] as const)('publish with the %s store', kind => {
  let gateway: IPublishGateway;
  let minio: IObjectServer | undefined;
  let enabled = true;
  let bucket: string;

  beforeAll(async () => {
    let values: Record<string, unknown> = {};
    if (kind === 'minio') {
      minio = await startMinio();
      cleanups.push(() => minio?.dispose());
      await createVersionedBucket(minio, 'notebooks');
      values = {
        object_endpoint_url: minio.endpoint,
        object_bucket: 'notebooks',
        object_access_key_id: minio.accessKeyId,
        object_secret_access_key: minio.secretAccessKey,
        object_region_name: minio.region
      };
    }
    gateway = await startPublishGateway(values, () => enabled);
    bucket = kind === 'minio' ? 'notebooks' : 'jupyter-store';
  });

  afterEach(() => {
    enabled = true;
  });

  test('200: the four fields, and the object is the contents manager’s bytes for the notebook', async () => {
    const response = await publish(gateway, 'team%20a/report%20%C3%BC.ipynb', notebookModel());
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const result = PublishResultSchema.parse(response.json());
    expect(Object.keys(response.json()).sort()).toEqual([
      'object_bucket',
      'object_key',
      'object_path',
      'object_version_id'
    ]);
    expect(result).toEqual({
      object_bucket: bucket,
      object_key: 'published/team a/report ü.ipynb',
      object_version_id: expect.any(String),
      object_path: `s3://${bucket}/published/team a/report ü.ipynb`
    });

    // The same model saved through the contents API: the file on disk is the reference.
    const saved = await send(gateway, 'PUT', 'api/contents/reference.ipynb', notebookModel());
    expect(saved.status).toBe(201);
    const onDisk = readFileSync(join(gateway.rootDir, 'reference.ipynb'));

    const { store } = gateway.archiving;
    const object = await store.get(bucket, result.object_key, result.object_version_id!);
    expect(object.body.equals(onDisk)).toBe(true);
    expect(object.contentType).toBe('application/x-ipynb+json');
    const text = object.body.toString('utf8');
    expect(text).toContain('"ratio": 2.0');
    expect(text).toContain('"custom": 1.0');
    expect(text).toContain('"# Títle ✓\\n",');
    expect(text.endsWith('}\n')).toBe(true);
  });

  test('publishing again makes a new version; the versions listing shows both', async () => {
    const first = PublishResultSchema.parse(
      (await publish(gateway, 'twice.ipynb', notebookModel())).json()
    );
    const second = PublishResultSchema.parse(
      (await publish(gateway, 'twice.ipynb', notebookWith([codeCell('only')]))).json()
    );
    expect(second.object_version_id).not.toBe(first.object_version_id);
    expect(second.object_key).toBe(first.object_key);
    const listing = VersionListingSchema.parse(
      (await send(gateway, 'GET', 'api/store/versions/twice.ipynb')).json()
    );
    expect(listing.published.object_key).toBe('published/twice.ipynb');
    expect(listing.published.versions.map(v => v.object_version_id)).toEqual([
      second.object_version_id,
      first.object_version_id
    ]);
    const latest = await gateway.archiving.store.get(bucket, 'published/twice.ipynb');
    expect(JSON.parse(latest.body.toString('utf8')).cells[0].id).toBe('only');
  });

  test('403 while publishing is off, with the reason; feature detection agrees', async () => {
    let info = StoreInfoSchema.parse((await send(gateway, 'GET', 'api/store')).json());
    expect(info.features.publish_valid).toBe(true);
    enabled = false;
    const response = await publish(gateway, 'off.ipynb', notebookModel());
    expect(response.status).toBe(403);
    expect(response.json()).toEqual({
      message: expect.stringMatching(
        /^Publishing is disabled: .*`jupyter store enable --user` or `--sys-prefix`/
      ),
      reason: 'publish disabled'
    });
    info = StoreInfoSchema.parse((await send(gateway, 'GET', 'api/store')).json());
    expect(info.features.publish_valid).toBe(false);
    expect(info.reasons.publish_valid).toMatch(/jupyter store enable/);
    // Checked before the path and the body.
    expect((await publish(gateway, '..%2Fx.ipynb', '')).status).toBe(403);
    expect(await publishedVersions(gateway, 'off.ipynb')).toEqual([]);
  });

  test('needs Jupyter’s auth', async () => {
    const response = await send(gateway, 'PUT', 'api/store/publish/a.ipynb', notebookModel(), {});
    expect(response.status).toBe(403);
  });

  test.each(['GET', 'POST', 'DELETE'])('%s is 405', async method => {
    const response = await send(gateway, method, 'api/store/publish/a.ipynb');
    expect(response.status).toBe(405);
    expect(response.json().reason).toBe('method not allowed');
  });

  test.each([
    ['api/store/publish', 'empty path'],
    ['api/store/publish/', 'empty path'],
    ['api/store/publish//', 'empty path'],
    ['api/store/publish/../x.ipynb', 'invalid path'],
    ['api/store/publish/a/../../x.ipynb', 'invalid path'],
    ['api/store/publish/..%2Fx.ipynb', 'invalid path'],
    ['api/store/publish/%2E%2E/x.ipynb', 'invalid path'],
    ['api/store/publish/a%2F..%2Fb.ipynb', 'invalid path'],
    ['api/store/publish/./x.ipynb', 'invalid path'],
    ['api/store/publish/a//b.ipynb', 'invalid path'],
    ['api/store/publish/%2Fetc%2Fx.ipynb', 'absolute path'],
    ['api/store/publish//etc/x.ipynb', 'absolute path'],
    ['api/store/publish/C:%5Cx.ipynb', 'absolute path'],
    ['api/store/publish/.hidden.ipynb', 'hidden path'],
    ['api/store/publish/.git/x.ipynb', 'hidden path'],
    ['api/store/publish/a/.ipynb_checkpoints/x-checkpoint.ipynb', 'hidden path'],
    ['api/store/publish/%FF.ipynb', 'invalid path'],
    ['api/store/publish/a%00.ipynb', 'invalid path']
  ])('%s is 400 (%s)', async (rawPath, reason) => {
    const response = await send(gateway, 'PUT', rawPath, notebookModel());
    expect(response.status).toBe(400);
    expect(response.json()).toEqual({ message: expect.any(String), reason });
  });

  test.each([
    ['no body', undefined, 'empty model'],
    ['a blank body', ' \n', 'empty model'],
    ['{}', '{}', 'empty model'],
    ['a list', '[]', 'bad request'],
    ['a string', '"notebook"', 'bad request'],
    ['invalid JSON', '{"type": "notebook", ', 'bad request'],
    ['invalid UTF-8', Buffer.from([0x7b, 0xff, 0x7d]), 'bad request'],
    ['a byte-order mark', `\ufeff${notebookModel()}`, 'bad request']
  ])('%s is 400 (%s)', async (_what, body, reason) => {
    const response = await publish(gateway, 'body.ipynb', body);
    expect(response.status).toBe(400);
    expect(response.json()).toEqual({ message: expect.any(String), reason });
    expect(await publishedVersions(gateway, 'body.ipynb')).toEqual([]);
  });

  test('a body over the limit is 413', async () => {
    const padding = 'x'.repeat(BODY_LIMIT + 1024);
    const response = await publish(
      gateway,
      'big.ipynb',
      notebookWith([codeCell('a', { source: padding })])
    );
    expect(response.status).toBe(413);
    expect(response.json()).toEqual({
      message: 'The request body is too large',
      reason: 'entity.too.large'
    });
  });

  test.each([
    [
      'type file',
      'x.ipynb',
      '{"type": "file", "format": "text", "content": "x"}',
      /the model's type is 'file', not 'notebook'/
    ],
    ['type directory', 'x.ipynb', '{"type": "directory"}', /the model's type is 'directory'/],
    ['no type', 'x.ipynb', '{"content": {"cells": []}}', /the model has no type, not 'notebook'/],
    ['a .txt path', 'notes.txt', notebookModel(), /must end in \.ipynb, not "notes\.txt"/],
    ['a path without extension', 'dir/report', notebookModel(), /must end in \.ipynb/]
  ])('%s is 415', async (_what, path, body, message) => {
    const response = await publish(gateway, path, body);
    expect(response.status).toBe(415);
    const json = response.json();
    expect(json.reason).toBe('notebook required');
    expect(json.message).toMatch(/^Only notebooks can be published/);
    expect(json.message).toMatch(message);
  });

  test.each([
    ['no content', '{"type": "notebook"}'],
    ['null content', '{"type": "notebook", "content": null}'],
    ['empty content', '{"type": "notebook", "content": {}}']
  ])('%s is 422 (empty content)', async (_what, body) => {
    const response = await publish(gateway, 'empty.ipynb', body);
    expect(response.status).toBe(422);
    expect(response.json()).toEqual({
      message: 'Cannot publish empty contents',
      reason: 'empty content'
    });
  });

  test.each([
    ['a list', '{"type": "notebook", "content": []}', /not a list/],
    [
      'a string',
      `{"type": "notebook", "content": ${JSON.stringify(NOTEBOOK_TEXT)}}`,
      /not a string/
    ],
    ['no nbformat', '{"type": "notebook", "content": {"cells": []}}', /no 'nbformat' field/],
    [
      'nbformat 3',
      notebookModel('{"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": []}'),
      /only nbformat 4 notebooks can be published, not nbformat 3/
    ],
    [
      'a non-integer nbformat_minor',
      notebookModel('{"nbformat": 4, "nbformat_minor": "5", "metadata": {}, "cells": []}'),
      /nbformat cannot validate it/
    ],
    [
      'a code cell without outputs',
      notebookWith([
        { cell_type: 'markdown', id: 'md', metadata: {}, source: '' },
        { cell_type: 'code', id: 'calc', metadata: {}, execution_count: null, source: '' }
      ]),
      /^Cannot publish an invalid notebook: cell 2 of 2 \(index 1, id 'calc', a code cell\): 'outputs' is a required property\.\n\nNotebook validation failed: 'outputs' is a required property\n/
    ],
    [
      'a bad stream output',
      notebookWith([
        codeCell('out', { outputs: [{ output_type: 'stream', name: 'stdout', text: 5 }] })
      ]),
      /^Cannot publish an invalid notebook: cell 1 of 1 \(index 0, id 'out', a code cell\), at outputs\[0\]\.text: 5 is not valid under any of the given schemas\./
    ],
    [
      'an invalid cell id',
      notebookWith([codeCell('no spaces allowed')]),
      /cell 1 of 1 \(index 0, id 'no spaces allowed', a code cell\), at id: 'no spaces allowed' does not match/
    ],
    [
      'no notebook metadata',
      notebookModel('{"nbformat": 4, "nbformat_minor": 5, "cells": []}'),
      /^Cannot publish an invalid notebook: the notebook: 'metadata' is a required property\./
    ],
    [
      'bad kernelspec metadata',
      notebookWith([], { metadata: { kernelspec: { name: 1 } } }),
      /the notebook, at metadata\.kernelspec: 'display_name' is a required property\./
    ],
    [
      'an unknown top-level field',
      notebookWith([], { other_field: 1 }),
      /Additional properties are not allowed \('other_field' was unexpected\)/
    ]
  ])('%s is 422 with a readable message', async (_what, body, message) => {
    const response = await publish(gateway, 'invalid.ipynb', body);
    expect(response.status).toBe(422);
    const json = response.json();
    expect(json.reason).toBe('invalid notebook');
    expect(json.message).toMatch(message);
    expect(await publishedVersions(gateway, 'invalid.ipynb')).toEqual([]);
  });

  test('repeated cell ids are 422, naming each id and where it occurs', async () => {
    const response = await publish(
      gateway,
      'dupes.ipynb',
      notebookWith([codeCell('a'), codeCell('b'), codeCell('a'), codeCell('c'), codeCell('b')])
    );
    expect(response.status).toBe(422);
    expect(response.json()).toEqual({
      message:
        "Cannot publish a notebook whose cell ids are not unique: 'a' (cells at index 0, 2); " +
        "'b' (cells at index 1, 4). Give each cell its own id; saving the notebook through the " +
        'contents API (JupyterLab) repairs them.',
      reason: 'duplicate cell ids'
    });
    expect(await publishedVersions(gateway, 'dupes.ipynb')).toEqual([]);
  });

  test('a validation message about the whole notebook is cut short', async () => {
    const cells = Array.from({ length: 2000 }, (_, i) => codeCell(`c${i}`));
    const response = await publish(
      gateway,
      'long.ipynb',
      notebookModel(JSON.stringify({ cells, nbformat: 4, nbformat_minor: 5 }))
    );
    expect(response.status).toBe(422);
    const message = response.json().message as string;
    expect(message.length).toBeLessThan(3000);
    expect(message).toMatch(/… \(cut short\)$/);
  });

  test('a key longer than object storage allows is 400 from the store', async () => {
    const response = await publish(gateway, `${'n'.repeat(1100)}.ipynb`, notebookModel());
    expect(response.status).toBe(400);
    expect(response.json()).toEqual({
      message: 'An object key must be at most 1024 bytes long',
      reason: 'KeyTooLongError'
    });
  });
});

describe('publish: object-store failures', () => {
  let minio: IObjectServer;

  beforeAll(async () => {
    minio = await startMinio();
    cleanups.push(() => minio.dispose());
    await createVersionedBucket(minio, 'notebooks');
  });

  const s3Values = (more: Record<string, unknown> = {}) => ({
    object_endpoint_url: minio.endpoint,
    object_bucket: 'notebooks',
    object_access_key_id: minio.accessKeyId,
    object_secret_access_key: minio.secretAccessKey,
    // Archiving off: no bucket check at start, so the put itself meets the failure.
    workspace_prefix: '',
    ...more
  });

  test('a bucket that does not exist is 404', async () => {
    const gateway = await startPublishGateway(
      s3Values({ object_bucket: 'no-such-bucket' }),
      () => true
    );
    const response = await publish(gateway, 'a.ipynb', notebookModel());
    expect(response.status).toBe(404);
    expect(response.json()).toEqual({
      message: expect.stringMatching(/^The bucket "no-such-bucket" does not exist/),
      reason: 'NoSuchBucket'
    });
    await gateway.close();
  });

  test('a wrong secret key is 403, and the secret is not in the message', async () => {
    const gateway = await startPublishGateway(
      s3Values({ object_secret_access_key: 'wrong-secret-value' }),
      () => true
    );
    const response = await publish(gateway, 'a.ipynb', notebookModel());
    expect(response.status).toBe(403);
    expect(response.json().reason).toBe('SignatureDoesNotMatch');
    expect(response.text).not.toContain('wrong-secret-value');
    expect(response.text).not.toContain(minio.secretAccessKey);
    await gateway.close();
  });

  test('an unreachable store is 502', async () => {
    // A port held for the whole test by a listener that cuts every connection: a port merely
    // found free could be taken by another server meanwhile.
    const cutter = net.createServer(socket => socket.destroy());
    await new Promise<void>(resolve => cutter.listen(0, '127.0.0.1', resolve));
    const { port } = cutter.address() as net.AddressInfo;
    try {
      const gateway = await startPublishGateway(
        s3Values({ object_endpoint_url: `http://127.0.0.1:${port}`, object_timeout_seconds: 5 }),
        () => true
      );
      const response = await publish(gateway, 'a.ipynb', notebookModel());
      expect(response.status).toBe(502);
      expect(response.json().message).toMatch(/^Could not write/);
      await gateway.close();
    } finally {
      await new Promise(resolve => cutter.close(resolve));
    }
  });

  test('a store whose bucket check failed is 503 before anything is read', async () => {
    const gateway = await startPublishGateway(
      s3Values({ object_bucket: 'missing-bucket', workspace_prefix: 'workspace' }),
      () => true
    );
    const deadline = Date.now() + 20_000;
    while (gateway.archiving.features().features.store_valid && Date.now() < deadline) {
      await new Promise(resolve => setTimeout(resolve, 50));
    }
    expect(gateway.archiving.features().features.store_valid).toBe(false);
    const response = await publish(gateway, 'a.ipynb', notebookModel());
    expect(response.status).toBe(503);
    expect(response.json()).toEqual({
      message: expect.stringMatching(/^Object storage is not usable: /),
      reason: 'store unavailable'
    });
    await gateway.close();
  });

  test('an embedded store that cannot write is 502', async () => {
    const dir = await freshDir('blocked');
    writeFileSync(join(dir, 'file'), 'x');
    const gateway = await startPublishGateway(
      { local_store_dir: join(dir, 'file', 'objects'), workspace_prefix: '' },
      () => true
    );
    const response = await publish(gateway, 'a.ipynb', notebookModel());
    expect(response.status).toBe(502);
    expect(response.json().reason).toBe('ENOTDIR');
    await gateway.close();
  });

  test('an empty published_prefix is 403 with its reason', async () => {
    const gateway = await startPublishGateway({ published_prefix: '' }, () => true);
    const response = await publish(gateway, 'a.ipynb', notebookModel());
    expect(response.status).toBe(403);
    expect(response.json()).toEqual({
      message: 'Publishing is disabled: published_prefix is empty',
      reason: 'publish disabled'
    });
    await gateway.close();
  });
});

describe('publish: enabled and disabled by the CLI, without a restart', () => {
  test('jupyter store enable --user / disable --user switch the running route', async () => {
    const home = await freshDir('home');
    const env: NodeJS.ProcessEnv = {
      HOME: home,
      JUPYTER_CONFIG_DIR: join(home, '.jupyter'),
      PATH: ''
    };
    const gateway = await startPublishGateway({}, () => isPublishEnabled({ env }));
    const quiet = { env, write: () => undefined, findJupyter: () => null };
    expect((await publish(gateway, 'cli.ipynb', notebookModel())).status).toBe(403);
    runEnable({ user: true }, quiet);
    expect((await publish(gateway, 'cli.ipynb', notebookModel())).status).toBe(200);
    runDisable({ user: true }, quiet);
    expect((await publish(gateway, 'cli.ipynb', notebookModel())).status).toBe(403);
    await gateway.close();
  });
});
