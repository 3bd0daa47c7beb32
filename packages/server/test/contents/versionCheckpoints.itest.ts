/**
 * Archived versions as checkpoints (`versions_as_checkpoints`), against the real gateway
 * (`jupyter-store lab`) archiving to MinIO: the checkpoint listing of an archived notebook is its
 * newest archived versions with the ids the versions API lists, oldest first as Jupyter orders
 * checkpoints (JupyterLab reverses the list to offer the newest first); restoring one saves its
 * bytes as a new version; deleting one is refused; unknown ids are 404 as in Jupyter; the max is
 * respected; and with the setting off, or for a path the archive does not cover, checkpoints are
 * Jupyter's.
 */
import { GetObjectCommand, GetObjectTaggingCommand, type S3Client } from '@aws-sdk/client-s3';
import { ErrorBodySchema } from '@jupyter-store/contract';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startArchivingGateway, useObjectServer } from '../support/archivingLab';
import type { IGatewayProcess } from '../support/gateway';

jest.setTimeout(180_000);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** Jupyter's checkpoint time: ISO 8601 in UTC, microseconds when there are any. */
const JUPYTER_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z$/;

/** A notebook with one markdown cell. */
function notebook(text: string): Json {
  return {
    cells: [{ cell_type: 'markdown', id: 'text', metadata: {}, source: text }],
    metadata: {},
    nbformat: 4,
    nbformat_minor: 5
  };
}

/** A notebook whose output could run code: unsigned, it is untrusted. */
function htmlNotebook(text: string): Json {
  return {
    cells: [
      {
        cell_type: 'code',
        execution_count: 1,
        id: 'html',
        metadata: {},
        outputs: [
          {
            data: { 'text/html': `<b>${text}</b>`, 'text/plain': text },
            execution_count: 1,
            metadata: {},
            output_type: 'execute_result'
          }
        ],
        source: 'html()'
      }
    ],
    metadata: {},
    nbformat: 4,
    nbformat_minor: 5
  };
}

interface IReply {
  status: number;
  headers: Headers;
  body: Json;
}

/** Requests to one gateway, authenticated with its token. */
class Client {
  constructor(readonly gateway: IGatewayProcess) {}

  async call(method: string, relative: string, body?: unknown): Promise<IReply> {
    const response = await fetch(this.gateway.url(relative), {
      method,
      headers: {
        Authorization: `token ${this.gateway.token}`,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' })
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000)
    });
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      body: text === '' ? undefined : JSON.parse(text)
    };
  }

  async save(path: string, content: Json, type = 'notebook', format?: string): Promise<void> {
    const reply = await this.call('PUT', `api/contents/${path}`, { type, format, content });
    expect([200, 201]).toContain(reply.status);
  }

  /** The archived versions of a path, newest first, once there are at least `count`. */
  async versions(path: string, count: number): Promise<Json[]> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const reply = await this.call('GET', `api/store/versions/${path}`);
      expect(reply.status).toBe(200);
      const versions: Json[] = reply.body.workspace.versions;
      if (versions.length >= count || Date.now() > deadline) return versions;
      await new Promise(resolve => setTimeout(resolve, 200));
    }
  }

  /** Save each notebook in turn, each archived before the next is written. */
  async saveVersions(path: string, contents: Json[]): Promise<Json[]> {
    const before = (await this.call('GET', `api/store/versions/${path}`)).body.workspace.versions
      .length as number;
    for (const [index, content] of contents.entries()) {
      await this.save(path, content);
      await this.versions(path, before + index + 1);
    }
    const versions = await this.versions(path, before + contents.length);
    expect(versions).toHaveLength(before + contents.length);
    return versions;
  }

  checkpoints(path: string): Promise<IReply> {
    return this.call('GET', `api/contents/${path}/checkpoints`);
  }

  async content(path: string): Promise<Json> {
    const reply = await this.call('GET', `api/contents/${path}`);
    expect(reply.status).toBe(200);
    return reply.body.content;
  }
}

/** Jupyter's `{"message", "reason"}` with this status and reason. */
function expectError(reply: IReply, status: number, reason: string): void {
  expect({ status: reply.status, body: reply.body }).toEqual({
    status,
    body: { message: expect.any(String), reason }
  });
  expect(ErrorBodySchema.parse(reply.body).message.length).toBeGreaterThan(0);
}

/** The bytes of one archived version, read from the bucket. */
async function archivedBytes(
  s3: S3Client,
  bucket: string,
  path: string,
  versionId: string
): Promise<Buffer> {
  const object = await s3.send(
    new GetObjectCommand({ Bucket: bucket, Key: `workspace/${path}`, VersionId: versionId })
  );
  return Buffer.from(await object.Body!.transformToByteArray());
}

const NODE_CONTENTS = '--StoreSettings.contents_backend=node';

describe('archived versions as checkpoints, with MinIO', () => {
  const rig = useObjectServer({
    buckets: ['checkpoints-on', 'checkpoints-max', 'checkpoints-off']
  });

  describe('with the default settings', () => {
    let gateway: IGatewayProcess;
    let client: Client;
    const SAVES = [notebook('first'), notebook('second'), notebook('third')];
    /** The archived versions of `report.ipynb` after the three saves, newest first. */
    let versions: Json[];

    beforeAll(async () => {
      gateway = await startArchivingGateway(rig.server, 'checkpoints-on', {
        args: [NODE_CONTENTS]
      });
      client = new Client(gateway);
      versions = await client.saveVersions('report.ipynb', SAVES);
    });

    afterAll(async () => {
      await gateway?.stop();
    });

    test('the listing is the archived versions, oldest first, in Jupyter’s model', async () => {
      const reply = await client.checkpoints('report.ipynb');
      expect(reply.status).toBe(200);
      expect(reply.body).toHaveLength(3);
      expect(reply.body.map((checkpoint: Json) => checkpoint.id)).toEqual(
        versions.map(version => version.object_version_id).reverse()
      );
      for (const [index, checkpoint] of (reply.body as Json[]).reverse().entries()) {
        expect(Object.keys(checkpoint).sort()).toEqual(['id', 'last_modified']);
        expect(checkpoint.last_modified).toMatch(JUPYTER_TIME);
        expect(new Date(checkpoint.last_modified).getTime()).toBe(
          new Date(versions[index].last_modified).getTime()
        );
      }
    });

    test('creating a checkpoint answers the current archived version', async () => {
      const reply = await client.call('POST', 'api/contents/report.ipynb/checkpoints');
      expect(reply.status).toBe(201);
      const newest = (await client.versions('report.ipynb', 3))[0];
      expect(reply.body).toEqual({
        id: newest.object_version_id,
        last_modified: expect.stringMatching(JUPYTER_TIME)
      });
      expect(reply.headers.get('location')).toBe(
        `${gateway.baseUrl}api/contents/report.ipynb/checkpoints/${encodeURIComponent(newest.object_version_id)}`
      );
      // The version is labelled in the bucket; the one before is not.
      const tags = async (versionId: string) =>
        (
          await rig.s3.send(
            new GetObjectTaggingCommand({
              Bucket: 'checkpoints-on',
              Key: 'workspace/report.ipynb',
              VersionId: versionId
            })
          )
        ).TagSet;
      expect(await tags(newest.object_version_id)).toEqual([{ Key: 'label', Value: 'checkpoint' }]);
      expect(await tags(versions[1].object_version_id)).toEqual([]);
      // Asked again, the label is not doubled.
      expect((await client.call('POST', 'api/contents/report.ipynb/checkpoints')).body).toEqual(
        reply.body
      );
      expect(await tags(newest.object_version_id)).toHaveLength(1);
      // Jupyter's own copy is made as well, where Jupyter keeps it.
      const copy = join(gateway.rootDir, '.ipynb_checkpoints', 'report-checkpoint.ipynb');
      expect(JSON.parse(readFileSync(copy, 'utf8')).cells[0].source).toEqual(['third']);
    });

    test('restoring a version brings its bytes back and archives the restore', async () => {
      const oldest = versions[2].object_version_id as string;
      const restored = await client.call(
        'POST',
        `api/contents/report.ipynb/checkpoints/${encodeURIComponent(oldest)}`
      );
      expect(restored.status).toBe(204);
      expect((await client.content('report.ipynb')).cells[0].source).toBe('first');
      const onDisk = readFileSync(join(gateway.rootDir, 'report.ipynb'));
      const after = await client.versions('report.ipynb', 4);
      expect(after).toHaveLength(4);
      // The file holds the version's exact bytes, and so does the new version.
      const original = await archivedBytes(rig.s3, 'checkpoints-on', 'report.ipynb', oldest);
      expect(onDisk.equals(original)).toBe(true);
      const newest = await archivedBytes(
        rig.s3,
        'checkpoints-on',
        'report.ipynb',
        after[0].object_version_id
      );
      expect(newest.equals(original)).toBe(true);
      // The restore is a checkpoint in its turn.
      const listed = await client.checkpoints('report.ipynb');
      expect(listed.body.at(-1).id).toBe(after[0].object_version_id);
    });

    test('Jupyter’s own checkpoint id still restores its copy', async () => {
      const reply = await client.call('POST', 'api/contents/report.ipynb/checkpoints/checkpoint');
      expect(reply.status).toBe(204);
      expect((await client.content('report.ipynb')).cells[0].source).toBe('third');
    });

    test('an unknown id is 404, as Jupyter answers it', async () => {
      expectError(
        await client.call('POST', 'api/contents/report.ipynb/checkpoints/no-such-version'),
        404,
        'not found'
      );
      expectError(
        await client.call('DELETE', 'api/contents/report.ipynb/checkpoints/no-such-version'),
        404,
        'not found'
      );
      // A version of another notebook is no checkpoint of this one.
      const other = await client.saveVersions('other.ipynb', [notebook('other')]);
      expectError(
        await client.call(
          'POST',
          `api/contents/report.ipynb/checkpoints/${encodeURIComponent(other[0].object_version_id)}`
        ),
        404,
        'not found'
      );
    });

    test('an archived version cannot be deleted', async () => {
      const id = versions[1].object_version_id as string;
      const reply = await client.call(
        'DELETE',
        `api/contents/report.ipynb/checkpoints/${encodeURIComponent(id)}`
      );
      expectError(reply, 409, 'version checkpoint immutable');
      const listed = await client.checkpoints('report.ipynb');
      expect(listed.body.map((checkpoint: Json) => checkpoint.id)).toContain(id);
    });

    test('a restored notebook is as untrusted as the version was', async () => {
      const [untrusted] = await client.saveVersions('html.ipynb', [htmlNotebook('old')]);
      await client.saveVersions('html.ipynb', [notebook('new')]);
      const reply = await client.call(
        'POST',
        `api/contents/html.ipynb/checkpoints/${encodeURIComponent(untrusted.object_version_id)}`
      );
      expect(reply.status).toBe(204);
      const content = await client.content('html.ipynb');
      expect(content.cells[0].outputs[0].data['text/html']).toBe('<b>old</b>');
      expect(content.cells[0].metadata.trusted).toBe(false);
    });

    test('a path the archive does not cover has Jupyter’s one checkpoint', async () => {
      await client.save('notes.txt', 'plain text', 'file', 'text');
      expect((await client.checkpoints('notes.txt')).body).toEqual([]);
      const created = await client.call('POST', 'api/contents/notes.txt/checkpoints');
      expect(created.status).toBe(201);
      expect(created.body).toEqual({
        id: 'checkpoint',
        last_modified: expect.stringMatching(JUPYTER_TIME)
      });
      expect((await client.checkpoints('notes.txt')).body).toEqual([created.body]);
    });
  });

  describe('versions_as_checkpoints_max', () => {
    let gateway: IGatewayProcess;

    afterAll(async () => {
      await gateway?.stop();
    });

    test('the listing shows the newest max versions only', async () => {
      gateway = await startArchivingGateway(rig.server, 'checkpoints-max', {
        args: [NODE_CONTENTS, '--StoreSettings.versions_as_checkpoints_max=2']
      });
      const client = new Client(gateway);
      const versions = await client.saveVersions('report.ipynb', [
        notebook('first'),
        notebook('second'),
        notebook('third')
      ]);
      const reply = await client.checkpoints('report.ipynb');
      expect(reply.status).toBe(200);
      expect(reply.body.map((checkpoint: Json) => checkpoint.id)).toEqual(
        versions
          .slice(0, 2)
          .map(version => version.object_version_id)
          .reverse()
      );
    });
  });

  describe('with versions_as_checkpoints off', () => {
    let gateway: IGatewayProcess;

    afterAll(async () => {
      await gateway?.stop();
    });

    test('checkpoints are Jupyter’s: one copy, with the id "checkpoint"', async () => {
      gateway = await startArchivingGateway(rig.server, 'checkpoints-off', {
        args: [NODE_CONTENTS, '--StoreSettings.versions_as_checkpoints=false']
      });
      const client = new Client(gateway);
      await client.saveVersions('report.ipynb', [notebook('first'), notebook('second')]);
      // The first save of a notebook makes Jupyter's checkpoint, as Jupyter's save does.
      const listed = await client.checkpoints('report.ipynb');
      expect(listed.body).toEqual([
        { id: 'checkpoint', last_modified: expect.stringMatching(JUPYTER_TIME) }
      ]);
      const created = await client.call('POST', 'api/contents/report.ipynb/checkpoints');
      expect(created.status).toBe(201);
      expect(created.body.id).toBe('checkpoint');
      await client.save('report.ipynb', notebook('third'));
      const restored = await client.call(
        'POST',
        'api/contents/report.ipynb/checkpoints/checkpoint'
      );
      expect(restored.status).toBe(204);
      expect((await client.content('report.ipynb')).cells[0].source).toBe('second');
      const removed = await client.call(
        'DELETE',
        'api/contents/report.ipynb/checkpoints/checkpoint'
      );
      expect(removed.status).toBe(204);
      expect((await client.checkpoints('report.ipynb')).body).toEqual([]);
    });
  });
});
