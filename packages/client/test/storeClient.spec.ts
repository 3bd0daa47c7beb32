import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StoreClient } from '../src/storeClient';
import { ServerNotFoundError, StoreError } from '../src/errors';
import {
  fakeFetch,
  fakeProcessTable,
  gatewayRecord,
  sessionModel,
  temporaryDir,
  writeRecord,
  type IFakeAnswer,
  type ISentRequest
} from './fakes';

const SERVER = { url: 'http://127.0.0.1:8888/', token: 'secret', root_dir: '/srv/root' };
const KERNEL = 'k-1';
const NOTEBOOK = { cells: [], metadata: {}, nbformat: 4, nbformat_minor: 5 };
const SAVED_AT = '2024-05-01T10:00:00.123456Z';

function contentsModel(path: string): Record<string, unknown> {
  return {
    name: path.split('/').at(-1),
    path,
    type: 'notebook',
    writable: true,
    created: SAVED_AT,
    last_modified: SAVED_AT,
    mimetype: null,
    content: NOTEBOOK,
    format: 'json',
    size: 72,
    hash: null,
    hash_algorithm: null
  };
}

function cloneModel(request: ISentRequest): IFakeAnswer {
  const body = request.body as Record<string, string>;
  const path = body.target_path ?? body.object_key.split('/').at(-1);
  return {
    status: 200,
    body: {
      ...contentsModel(path),
      content: null,
      object_bucket: body.object_bucket,
      object_key: body.object_key,
      object_version_id: body.object_version_id ?? 'v-latest',
      object_path: `s3://${body.object_bucket}/${body.object_key}`
    }
  };
}

function storeInfo(bucket: string | null): Record<string, unknown> {
  return {
    release: '0.1.0',
    features: {
      store_valid: true,
      archive_valid: true,
      publish_valid: true,
      object_clone_valid: true,
      fs_clone_valid: false
    },
    reasons: {},
    archive: null,
    object_bucket: bucket,
    workspace_prefix: 'workspace',
    published_prefix: 'published'
  };
}

function listing(path: string, bucket = 'server-bucket'): Record<string, unknown> {
  return {
    path,
    object_bucket: bucket,
    workspace: { object_key: `workspace/${path}`, versions: [] },
    published: { object_key: `published/${path}`, versions: [] }
  };
}

describe('StoreClient', () => {
  test('importing and constructing make no request and read no record', () => {
    const spy = jest.spyOn(globalThis, 'fetch');
    try {
      jest.isolateModules(() => {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const module = require('../src') as typeof import('../src');
        const client = new module.StoreClient({ runtimeDir: '/nonexistent/runtime' });
        expect(client.bucket).toBeUndefined();
      });
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });

  describe('#server()', () => {
    let runtimeDir: string;

    beforeEach(() => {
      runtimeDir = temporaryDir('runtime');
    });

    afterEach(() => {
      rmSync(runtimeDir, { recursive: true, force: true });
    });

    test('found by discovery at the first call', async () => {
      writeRecord(runtimeDir, gatewayRecord({ pid: process.pid }));
      const client = new StoreClient({ runtimeDir, env: {}, processTable: fakeProcessTable([]) });
      expect(await client.server()).toEqual({
        url: 'http://127.0.0.1:8888/',
        token: 'gateway-token',
        root_dir: '/srv/root'
      });
    });

    test('an address without a token takes the token of that server’s record', async () => {
      writeRecord(runtimeDir, gatewayRecord({ pid: process.pid }));
      const client = new StoreClient({
        runtimeDir,
        env: {},
        server: { url: 'http://localhost:8888' }
      });
      expect((await client.server()).token).toBe('gateway-token');
    });

    test('a record without a token (JupyterHub) authenticates with $JUPYTERHUB_API_TOKEN', async () => {
      writeRecord(runtimeDir, gatewayRecord({ pid: process.pid, token: '' }));
      const { fetch, sent } = fakeFetch({
        'GET /api/store': { status: 200, body: storeInfo(null) }
      });
      const client = new StoreClient({
        runtimeDir,
        env: { JUPYTERHUB_API_TOKEN: 'hub-token' },
        processTable: fakeProcessTable([]),
        fetch
      });
      expect((await client.server()).token).toBe('hub-token');
      await client.info();
      expect(sent[0].headers.authorization).toBe('token hub-token');
    });

    test('a record’s own token wins over $JUPYTERHUB_API_TOKEN', async () => {
      writeRecord(runtimeDir, gatewayRecord({ pid: process.pid }));
      const client = new StoreClient({
        runtimeDir,
        env: { JUPYTERHUB_API_TOKEN: 'hub-token' },
        processTable: fakeProcessTable([])
      });
      expect((await client.server()).token).toBe('gateway-token');
    });

    test('a record without a token and no $JUPYTERHUB_API_TOKEN sends none', async () => {
      writeRecord(runtimeDir, gatewayRecord({ pid: process.pid, token: '' }));
      const { fetch, sent } = fakeFetch({
        'GET /api/store': { status: 200, body: storeInfo(null) }
      });
      const client = new StoreClient({
        runtimeDir,
        env: {},
        processTable: fakeProcessTable([]),
        fetch
      });
      await client.info();
      expect(sent[0].headers.authorization).toBeUndefined();
    });

    test('a server on a unix socket only is refused with a reason', async () => {
      writeRecord(
        runtimeDir,
        gatewayRecord({
          pid: process.pid,
          port: 0,
          sock: '/run/j.sock',
          url: 'http+unix://%2Frun%2Fj.sock/'
        })
      );
      const client = new StoreClient({ runtimeDir, env: {}, processTable: fakeProcessTable([]) });
      await expect(client.server()).rejects.toThrow(
        `The server http+unix://%2Frun%2Fj.sock/ (pid ${process.pid}) listens on a unix socket only`
      );
    });

    test('no server running: every call rejects with ServerNotFoundError', async () => {
      const client = new StoreClient({ runtimeDir, env: {}, processTable: fakeProcessTable([]) });
      await expect(client.info()).rejects.toBeInstanceOf(ServerNotFoundError);
    });
  });

  describe('#info()', () => {
    test('parses feature detection with the contract schema', async () => {
      const info = {
        release: '0.1.0',
        features: {
          store_valid: true,
          archive_valid: true,
          publish_valid: false,
          object_clone_valid: true,
          fs_clone_valid: false
        },
        reasons: { publish_valid: 'off' },
        archive: null,
        object_bucket: 'server-bucket',
        workspace_prefix: 'workspace',
        published_prefix: 'published'
      };
      const { fetch, sent } = fakeFetch({ 'GET /api/store': { status: 200, body: info } });
      expect(await new StoreClient({ server: SERVER, fetch }).info()).toEqual(info);
      expect(sent[0].headers.authorization).toBe('token secret');
    });
  });

  describe('#cloneObject()', () => {
    const routes = {
      'POST /api/store/clone': cloneModel,
      'GET /api/store': { status: 200, body: storeInfo('server-bucket') }
    };

    test('the bucket given wins, and the target defaults to the server’s choice', async () => {
      const { fetch, sent } = fakeFetch(routes);
      const client = new StoreClient({ server: SERVER, fetch, bucket: 'client-bucket' });
      const model = await client.cloneObject({ bucket: 'given', key: 'published/a.ipynb' });
      expect(sent.map(r => r.body)).toEqual([
        { object_bucket: 'given', object_key: 'published/a.ipynb' }
      ]);
      expect(model).toMatchObject({ path: 'a.ipynb', object_path: 's3://given/published/a.ipynb' });
    });

    test('else the client’s default bucket', async () => {
      const { fetch, sent } = fakeFetch(routes);
      await new StoreClient({ server: SERVER, fetch, bucket: 'client-bucket' }).cloneObject({
        key: 'k'
      });
      expect((sent[0].body as Record<string, string>).object_bucket).toBe('client-bucket');
    });

    test('else the server’s own bucket, asked once', async () => {
      const { fetch, sent } = fakeFetch(routes);
      const client = new StoreClient({ server: SERVER, fetch });
      await client.cloneObject({ key: 'a.ipynb' });
      await client.cloneObject({ key: 'b.ipynb', versionId: 'v1', targetPath: '/dir/b.ipynb' });
      expect(sent.map(r => `${r.method} ${new URL(r.url).pathname}`)).toEqual([
        'GET /api/store',
        'POST /api/store/clone',
        'POST /api/store/clone'
      ]);
      expect(sent[2].body).toEqual({
        object_bucket: 'server-bucket',
        object_key: 'b.ipynb',
        object_version_id: 'v1',
        target_path: 'dir/b.ipynb'
      });
    });

    test('a server without a bucket asks for one', async () => {
      const { fetch, sent } = fakeFetch({
        'GET /api/store': { status: 200, body: storeInfo(null) }
      });
      await expect(
        new StoreClient({ server: SERVER, fetch }).cloneObject({ key: 'k' })
      ).rejects.toThrow('The server has no object_bucket configured');
      expect(sent.map(r => r.method)).toEqual(['GET']);
    });

    test('a server error is a StoreError with status, message and reason', async () => {
      const { fetch } = fakeFetch({
        'POST /api/store/clone': {
          status: 404,
          body: { message: 's3://b/missing does not exist', reason: 'NoSuchKey' }
        }
      });
      const error = await new StoreClient({ server: SERVER, fetch, bucket: 'b' })
        .cloneObject({ key: 'missing' })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreError);
      expect(error).toMatchObject({
        status: 404,
        reason: 'NoSuchKey',
        message: 's3://b/missing does not exist'
      });
    });
  });

  describe('#cloneFromFileSystem()', () => {
    test('sends relpath and the target', async () => {
      const { fetch, sent } = fakeFetch({
        'POST /api/store/fs-clone': request => ({
          status: 200,
          body: { ...contentsModel('copy.ipynb'), content: null, relpath: 'x/a.ipynb' },
          ...(request.body ? {} : { status: 400 })
        })
      });
      const model = await new StoreClient({ server: SERVER, fetch }).cloneFromFileSystem({
        relpath: 'x/a.ipynb',
        targetPath: 'copy.ipynb'
      });
      expect(sent[0].body).toEqual({ relpath: 'x/a.ipynb', target_path: 'copy.ipynb' });
      expect(model).toMatchObject({ path: 'copy.ipynb', relpath: 'x/a.ipynb' });
    });
  });

  describe('#publish()', () => {
    const published = {
      object_bucket: 'b',
      object_key: 'published/a/nb.ipynb',
      object_version_id: 'v9',
      object_path: 's3://b/published/a/nb.ipynb'
    };
    const routes = {
      'GET /api/contents/a/nb.ipynb?type=notebook&content=1': {
        status: 200,
        body: contentsModel('a/nb.ipynb')
      },
      'PUT /api/store/publish/a/nb.ipynb': { status: 200, body: published },
      'GET /api/sessions': { status: 200, body: [sessionModel('a/nb.ipynb', KERNEL)] }
    };

    test('publishes the saved copy of the path given, and says when it was saved', async () => {
      const { fetch, sent } = fakeFetch(routes);
      const result = await new StoreClient({ server: SERVER, fetch }).publish({
        path: 'a/nb.ipynb'
      });
      expect(sent.map(r => r.method)).toEqual(['GET', 'PUT']);
      expect(sent[1].body).toEqual({ type: 'notebook', format: 'json', content: NOTEBOOK });
      expect(result).toEqual({
        ...published,
        path: 'a/nb.ipynb',
        current_notebook: false,
        saved_at: SAVED_AT
      });
    });

    test('without a path, the current notebook', async () => {
      const runtime = temporaryDir('kernel');
      try {
        const connectionFile = join(runtime, `kernel-${KERNEL}.json`);
        writeFileSync(connectionFile, '{}');
        const { fetch } = fakeFetch(routes);
        const client = new StoreClient({
          server: SERVER,
          fetch,
          env: {},
          processTable: fakeProcessTable([
            { pid: 40, ppid: 30, argv: ['node'] },
            { pid: 30, ppid: 1, argv: ['python', '-f', connectionFile] }
          ]),
          startPid: 40
        });
        const result = await client.publish();
        expect(result).toMatchObject({ path: 'a/nb.ipynb', current_notebook: true });
      } finally {
        rmSync(runtime, { recursive: true, force: true });
      }
    });

    test('paths are encoded per segment', async () => {
      const { fetch, sent } = fakeFetch({});
      await new StoreClient({ server: SERVER, fetch })
        .publish({ path: 'a b/n#1.ipynb' })
        .catch(() => undefined);
      expect(new URL(sent[0].url).pathname).toBe('/api/contents/a%20b/n%231.ipynb');
    });
  });

  describe('#versions()', () => {
    const version = (id: string) => ({
      object_version_id: id,
      last_modified: '2024-05-01T00:00:00.000Z',
      size: 1,
      is_latest: id === 'w1'
    });

    test('lists the versions of the path given', async () => {
      const { fetch } = fakeFetch({
        'GET /api/store/versions/a/nb.ipynb': {
          status: 200,
          body: listing('a/nb.ipynb', 'b')
        }
      });
      const result = await new StoreClient({ server: SERVER, fetch }).versions('a/nb.ipynb');
      expect(result.workspace.object_key).toBe('workspace/a/nb.ipynb');
      expect(result.next).toBeNull();
    });

    test('follows next until the last page and joins the pages, in order', async () => {
      const page = (workspace: string[], published: string[], next: string | null) => {
        const base = listing('nb.ipynb') as {
          workspace: Record<string, unknown>;
          published: Record<string, unknown>;
        };
        return {
          status: 200,
          body: {
            ...base,
            workspace: { ...base.workspace, versions: workspace.map(version) },
            published: { ...base.published, versions: published.map(version) },
            next
          }
        };
      };
      const { fetch, sent } = fakeFetch({
        'GET /api/store/versions/nb.ipynb': page(['w1', 'w2'], ['p1'], 't.1'),
        'GET /api/store/versions/nb.ipynb?limit=1000&next=t.1': page(['w3'], ['p2'], 't.2'),
        'GET /api/store/versions/nb.ipynb?limit=1000&next=t.2': page(['w4'], [], null)
      });
      const result = await new StoreClient({ server: SERVER, fetch }).versions('nb.ipynb');
      expect(result.workspace.versions.map(each => each.object_version_id)).toEqual([
        'w1',
        'w2',
        'w3',
        'w4'
      ]);
      expect(result.published.versions.map(each => each.object_version_id)).toEqual(['p1', 'p2']);
      expect(result.next).toBeNull();
      expect(sent).toHaveLength(3);
    });

    test('a server that answers the same token twice is an error, not a loop', async () => {
      const looping = { status: 200, body: { ...listing('nb.ipynb'), next: 'same' } };
      const { fetch, sent } = fakeFetch({
        'GET /api/store/versions/nb.ipynb': looping,
        'GET /api/store/versions/nb.ipynb?limit=1000&next=same': looping
      });
      await expect(new StoreClient({ server: SERVER, fetch }).versions('nb.ipynb')).rejects.toThrow(
        /same page token twice/
      );
      expect(sent).toHaveLength(2);
    });

    test('#versionsPage() asks for one page with limit and next', async () => {
      const { fetch } = fakeFetch({
        'GET /api/store/versions/a%20b.ipynb?limit=5&next=x.y': {
          status: 200,
          body: { ...listing('a b.ipynb'), next: 'y.z' }
        }
      });
      const page = await new StoreClient({ server: SERVER, fetch }).versionsPage('a b.ipynb', {
        limit: 5,
        next: 'x.y'
      });
      expect(page.next).toBe('y.z');
    });
  });
});
