/**
 * The diff API (`GET {base}api/store/diff/{path}`, `POST {base}api/store/diff`) and
 * `jupyter store diff`, against the real gateway (`jupyter-store lab`) archiving to MinIO: every
 * answer's diff, applied to its base with the diff engine's `patch`, gives exactly the other
 * side's notebook, and every bad input gets its 4xx with `{message, reason}`.
 */
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import {
  ErrorBodySchema,
  NotebookDiffSchema,
  PublishResultSchema,
  VersionListingSchema,
  type NotebookDiff
} from '@jupyter-store/contract';
import { patch, type JSONValue } from '@jupyter-store/diff';
import { spawnSync } from 'node:child_process';
import { mkdirSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FakeUpstream } from '../support/fakeUpstream';
import { useArchivingLab } from '../support/archivingLab';
import { CLI, startServeGateway, type IGatewayProcess } from '../support/gateway';
import { runCli, terminalEnv } from '../client/storeCli';

jest.setTimeout(180_000);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const BUCKET = 'diff-bucket';
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/** A notebook as nbformat reads it back (sources and texts as strings, ids set). */
function notebook(cells: Json[], metadata: Json = {}): Json {
  return { cells, metadata, nbformat: 4, nbformat_minor: 5 };
}

const markdown = (id: string, source: string): Json => ({
  cell_type: 'markdown',
  id,
  metadata: {},
  source
});

const code = (id: string, source: string, outputs: Json[] = [], count: number | null = null) => ({
  cell_type: 'code',
  execution_count: count,
  id,
  metadata: {},
  outputs,
  source
});

const stream = (text: string): Json => ({ name: 'stdout', output_type: 'stream', text });

const image = (): Json => ({
  data: { 'image/png': PNG, 'text/plain': '<Figure size 1x1>' },
  metadata: {},
  output_type: 'display_data'
});

/** Three saves of one notebook: edits, an insertion, new outputs, then a deletion and a move. */
const SAVES: Json[] = [
  notebook([
    markdown('title', '# Report\n\nFirst draft.'),
    code('load', 'x = 1\nprint(x)', [stream('1\n')], 1),
    code('plot', 'plot(x)', [], null)
  ]),
  notebook(
    [
      markdown('title', '# Report\n\nSecond draft, with a plot.'),
      code('load', 'x = 2\nprint(x)', [stream('2\n')], 2),
      markdown('note', 'A note on the plot.'),
      code('plot', 'plot(x)', [image()], 3)
    ],
    { kernelspec: { display_name: 'Python 3', language: 'python', name: 'python3' } }
  ),
  notebook(
    [
      code('plot', 'plot(x)', [image()], 3),
      markdown('title', '# Report\n\nSecond draft, with a plot.'),
      code('load', 'x = 2\nprint(x)', [stream('2\n')], 2)
    ],
    { kernelspec: { display_name: 'Python 3', language: 'python', name: 'python3' } }
  )
];

/** The notebook saved last, with an edit not saved: what a browser would send. */
const UNSAVED = notebook(
  [
    code('plot', 'plot(x, color="red")', [], null),
    markdown('title', '# Report\n\nSecond draft, with a plot.'),
    code('load', 'x = 2\nprint(x)', [stream('2\n')], 2)
  ],
  SAVES[2].metadata
);

/** An answer as it came over the wire. */
interface IReply {
  status: number;
  body: Json;
}

/** The diff applied to its base: the remote notebook. */
function patched(answer: NotebookDiff): JSONValue {
  return patch(answer.base as JSONValue, answer.diff as Parameters<typeof patch>[1]);
}

describe('the diff API and jupyter store diff, with MinIO', () => {
  const lab = useArchivingLab({ bucket: BUCKET });
  let s3: S3Client;
  let gateway: IGatewayProcess;
  /** The archived versions of `report.ipynb`, oldest first. */
  let versions: string[];
  let publishedVersion: string;

  const auth = (): Record<string, string> => ({ Authorization: `token ${gateway.token}` });

  async function call(method: string, relative: string, body?: unknown): Promise<IReply> {
    const response = await fetch(gateway.url(relative), {
      method,
      headers: { ...auth(), ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000)
    });
    const text = await response.text();
    return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
  }

  /** `GET api/store/diff/<path>` with these query parameters, parsed by the contract. */
  async function getDiff(path: string, query: Record<string, string> = {}): Promise<NotebookDiff> {
    const search = new URLSearchParams(query).toString();
    const reply = await call('GET', `api/store/diff/${path}${search ? `?${search}` : ''}`);
    expect({ status: reply.status, body: reply.body }).toMatchObject({ status: 200 });
    return NotebookDiffSchema.parse(reply.body);
  }

  async function postDiff(body: unknown): Promise<NotebookDiff> {
    const reply = await call('POST', 'api/store/diff', body);
    expect({ status: reply.status, body: reply.body }).toMatchObject({ status: 200 });
    return NotebookDiffSchema.parse(reply.body);
  }

  /** Jupyter's `{"message", "reason"}` with this status and reason. */
  function expectError(reply: IReply, status: number, reason: string | RegExp): void {
    expect({ status: reply.status, body: reply.body }).toEqual({
      status,
      body: {
        message: expect.any(String),
        reason: typeof reason === 'string' ? reason : expect.stringMatching(reason)
      }
    });
    expect(ErrorBodySchema.parse(reply.body).message.length).toBeGreaterThan(0);
  }

  async function save(path: string, content: Json): Promise<void> {
    const reply = await call('PUT', `api/contents/${path}`, { type: 'notebook', content });
    expect([200, 201]).toContain(reply.status);
  }

  /** The archived versions of a path, oldest first, once there are at least `count`. */
  async function archivedVersions(path: string, count: number): Promise<string[]> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const reply = await call('GET', `api/store/versions/${path}`);
      const listing = VersionListingSchema.parse(reply.body);
      const ids = listing.workspace.versions.map(version => version.object_version_id);
      if (ids.length >= count || Date.now() > deadline) return ids.reverse();
      await new Promise(resolve => setTimeout(resolve, 200));
    }
  }

  beforeAll(async () => {
    ({ s3, gateway } = lab);
    for (const content of SAVES) {
      await save('report.ipynb', content);
      // One version a save: each is archived before the next is written.
      await archivedVersions('report.ipynb', SAVES.indexOf(content) + 1);
    }
    versions = await archivedVersions('report.ipynb', SAVES.length);
    expect(versions).toHaveLength(SAVES.length);

    const enabled = spawnSync(process.execPath, [CLI, 'enable', '--user'], {
      encoding: 'utf8',
      env: { ...process.env, JUPYTER_CONFIG_DIR: gateway.state.config },
      timeout: 30_000
    });
    expect(enabled.status).toBe(0);
    const published = await call('PUT', 'api/store/publish/report.ipynb', {
      type: 'notebook',
      content: SAVES[1]
    });
    expect(published.status).toBe(200);
    publishedVersion = PublishResultSchema.parse(published.body).object_version_id!;
  });

  describe('GET api/store/diff/{path}', () => {
    test('between two archived versions: the diff turns the base into the remote', async () => {
      const answer = await getDiff('report.ipynb', { base: versions[0], remote: versions[1] });
      expect(answer.path).toBe('report.ipynb');
      expect(answer.base).toEqual(SAVES[0]);
      expect(patched(answer)).toEqual(SAVES[1]);
      expect(answer.base_ref).toEqual({
        ref: versions[0],
        source: 'workspace',
        object_version_id: versions[0]
      });
      expect(answer.remote_ref).toEqual({
        ref: versions[1],
        source: 'workspace',
        object_version_id: versions[1]
      });
      // Cells are aligned, not replaced: the edited cells are patched in place.
      const cells = answer.diff.find(entry => entry.key === 'cells');
      expect(cells?.op).toBe('patch');
      const changed = cells?.op === 'patch' ? cells.diff.filter(entry => entry.op === 'patch') : [];
      expect(changed.map(entry => entry.key)).toEqual([0, 1, 2]);
    });

    test('between a version and the file on disk, the default remote', async () => {
      const answer = await getDiff('report.ipynb', { base: versions[0] });
      expect(answer.remote_ref).toEqual({
        ref: 'current',
        source: 'current',
        object_version_id: null
      });
      expect(patched(answer)).toEqual(SAVES[2]);
      const reversed = await getDiff('report.ipynb', { base: 'current', remote: versions[1] });
      expect(reversed.base).toEqual(SAVES[2]);
      expect(patched(reversed)).toEqual(SAVES[1]);
    });

    test('by default, the newest archived version against the file on disk: equal', async () => {
      const answer = await getDiff('report.ipynb');
      expect(answer.diff).toEqual([]);
      expect(answer.base).toEqual(SAVES[2]);
      expect(answer.base_ref).toEqual({
        ref: versions[2],
        source: 'workspace',
        object_version_id: versions[2]
      });
      expect(answer.remote_ref.source).toBe('current');
    });

    test('a published version, by published:<version id>', async () => {
      const answer = await getDiff('report.ipynb', {
        base: `published:${publishedVersion}`,
        remote: versions[0]
      });
      expect(answer.base_ref).toEqual({
        ref: `published:${publishedVersion}`,
        source: 'published',
        object_version_id: publishedVersion
      });
      expect(answer.base).toEqual(SAVES[1]);
      expect(patched(answer)).toEqual(SAVES[0]);
    });

    test('a repeated parameter counts by its last value', async () => {
      const reply = await call(
        'GET',
        `api/store/diff/report.ipynb?base=nonsense&base=${versions[1]}&remote=${versions[1]}`
      );
      expect(reply.status).toBe(200);
      expect(reply.body.diff).toEqual([]);
    });
  });

  describe('POST api/store/diff', () => {
    test('a version against unsaved work given inline', async () => {
      const answer = await postDiff({ path: 'report.ipynb', base: versions[2], remote: UNSAVED });
      expect(answer.remote_ref).toEqual({ ref: null, source: 'inline', object_version_id: null });
      expect(answer.base).toEqual(SAVES[2]);
      expect(patched(answer)).toEqual(UNSAVED);
    });

    test('two inline notebooks, without a path; sources as lists of lines', async () => {
      const asLines = {
        ...SAVES[1],
        cells: SAVES[1].cells.map((cell: Json) => ({
          ...cell,
          source: cell.source.split(/(?<=\n)/)
        }))
      };
      const answer = await postDiff({ base: SAVES[0], remote: asLines });
      expect(answer.path).toBeNull();
      expect(answer.base_ref.source).toBe('inline');
      expect(patched(answer)).toEqual(SAVES[1]);
    });

    test('defaults as GET: the newest archived version against the file on disk', async () => {
      const answer = await postDiff({ path: 'report.ipynb', base: null });
      expect(answer.diff).toEqual([]);
      expect(answer.base_ref.object_version_id).toBe(versions[2]);
      expect(answer.remote_ref.source).toBe('current');
    });

    test('a trailing slash answers the same', async () => {
      const reply = await call('POST', 'api/store/diff/', { base: SAVES[0], remote: SAVES[0] });
      expect(reply.status).toBe(200);
      expect(reply.body.diff).toEqual([]);
    });
  });

  describe('errors', () => {
    beforeAll(async () => {
      await s3.send(
        new PutObjectCommand({ Bucket: BUCKET, Key: 'workspace/odd.ipynb', Body: 'not json' })
      );
      writeFileSync(join(gateway.rootDir, 'notes.txt'), 'plain text\n');
      mkdirSync(join(gateway.rootDir, 'folder'));
      // Sparse: its size is over the limit without writing 100 MiB.
      writeFileSync(join(gateway.rootDir, 'huge.ipynb'), '');
      truncateSync(join(gateway.rootDir, 'huge.ipynb'), 100 * 1024 * 1024 + 1);
    });

    test('422 for a version, a file, a directory or an inline value that is not a notebook', async () => {
      const odd = await s3.send(
        new PutObjectCommand({ Bucket: BUCKET, Key: 'workspace/odd.ipynb', Body: '[1, 2]' })
      );
      expectError(
        await call('GET', `api/store/diff/odd.ipynb?base=${odd.VersionId}&remote=${odd.VersionId}`),
        422,
        'not a notebook'
      );
      for (const path of ['notes.txt', 'folder']) {
        expectError(
          await call('GET', `api/store/diff/${path}?base=current&remote=current`),
          422,
          'not a notebook'
        );
      }
      for (const remote of [{ cells: 'none' }, { nbformat: 3 }, {}]) {
        expectError(
          await call('POST', 'api/store/diff', { base: SAVES[0], remote }),
          422,
          'not a notebook'
        );
      }
    });

    test('404 for an unknown version, a missing file, a path never archived', async () => {
      expectError(
        await call('GET', 'api/store/diff/report.ipynb?base=00000000-0000-0000-0000-000000000000'),
        404,
        'NoSuchVersion'
      );
      expectError(
        await call('GET', `api/store/diff/missing.ipynb?base=${versions[0]}`),
        404,
        /^NoSuch(Key|Version)$/
      );
      expectError(await call('GET', 'api/store/diff/missing.ipynb?base=current'), 404, 'not found');
      expectError(await call('GET', 'api/store/diff/never.ipynb'), 404, 'no versions');
    });

    test.each([
      ['base=', 'bad request'],
      ['base=published%3A', 'bad request'],
      [`base=${'v'.repeat(1025)}`, 'bad request'],
      ['base=not-a-version-id', 'InvalidArgument']
    ])('400 for the ref in %s', async (query, reason) => {
      expectError(await call('GET', `api/store/diff/report.ipynb?${query}`), 400, reason);
    });

    test.each([
      ['%2Fetc%2Fpasswd', 'absolute path'],
      ['a//report.ipynb', 'invalid path'],
      ['%FF.ipynb', 'invalid path'],
      ['.hidden/report.ipynb', 'hidden path']
    ])('400 for the path %j', async (path, reason) => {
      expectError(await call('GET', `api/store/diff/${path}?base=current`), 400, reason);
    });

    test.each([
      ['not json', 'bad request'],
      ['', 'bad request'],
      [[1], 'bad request'],
      [{ base: 5, remote: SAVES[0] }, 'bad request'],
      [{ base: '', remote: SAVES[0] }, 'bad request'],
      [{ base: 'current', remote: SAVES[0] }, 'bad request'],
      [{ remote: SAVES[0] }, 'bad request'],
      [{ path: 7, base: 'current' }, 'bad request'],
      [{ path: '.hidden/report.ipynb', base: 'current' }, 'hidden path']
    ])('400 for the body %j', async (body, reason) => {
      const sent = typeof body === 'string' ? body : JSON.stringify(body);
      expectError(await call('POST', 'api/store/diff', sent), 400, reason);
    });

    // A request body over the limit (413, `entity.too.large`) is driven in openapi.itest.ts.
    test('413 for a file over 100 MiB', async () => {
      expectError(
        await call('GET', 'api/store/diff/huge.ipynb?base=current&remote=current'),
        413,
        'too large'
      );
    });

    test('403 without authentication, 405 for other methods', async () => {
      const anonymous = await fetch(gateway.url('api/store/diff/report.ipynb'));
      expect(anonymous.status).toBe(403);
      const put = await call('PUT', 'api/store/diff/report.ipynb', {});
      expectError(put, 405, 'method not allowed');
      // `diff` and `diff/` are the POST route: no path, so nothing to GET.
      for (const relative of ['api/store/diff', 'api/store/diff/']) {
        expectError(await call('GET', relative), 405, 'method not allowed');
      }
    });
  });

  describe('jupyter store diff', () => {
    const diffCommand = (...args: string[]) => runCli(['diff', ...args], terminalEnv(gateway));

    test('exit 1 and a readable diff when the notebooks differ', async () => {
      const result = await diffCommand('report.ipynb', versions[0], versions[1]);
      expect({ status: result.status, stderr: result.stderr }).toEqual({ status: 1, stderr: '' });
      const lines = result.stdout.split('\n');
      expect(lines[0]).toBe(`--- report.ipynb (archived version ${versions[0]})`);
      expect(lines[1]).toBe(`+++ report.ipynb (archived version ${versions[1]})`);
      expect(result.stdout).toContain('cell 0 (markdown) changed:');
      expect(result.stdout).toContain('  -First draft.');
      expect(result.stdout).toContain('  +Second draft, with a plot.');
      expect(result.stdout).toContain('cell 1 (code) changed:');
      expect(result.stdout).toContain('  -x = 1');
      expect(result.stdout).toContain('  +x = 2');
      expect(result.stdout).toContain('  execution_count: 1 → 2');
      expect(result.stdout).toContain('cell 2 (markdown) added:\n  +A note on the plot.');
      expect(result.stdout).toContain('outputs changed: 1 added (image/png, text/plain)');
      expect(result.stdout).toContain('notebook metadata changed: kernelspec (added)');
    });

    test('cells removed and moved, against the file on disk (the default remote)', async () => {
      const result = await diffCommand('report.ipynb', versions[1]);
      expect(result.status).toBe(1);
      expect(result.stdout).toContain('+++ report.ipynb (current file)');
      expect(result.stdout).toContain('cell 2 (markdown) removed:\n  -A note on the plot.');
    });

    test('exit 0 when they are equal', async () => {
      const result = await diffCommand('report.ipynb', versions[2], 'current');
      expect(result.status).toBe(0);
      expect(result.stdout).toBe(
        `No differences between report.ipynb (archived version ${versions[2]}) and ` +
          'report.ipynb (current file).\n'
      );
      expect((await diffCommand('report.ipynb')).status).toBe(0);
    });

    test('--json prints the server’s answer, whose diff turns the base into the remote', async () => {
      const result = await diffCommand(
        'report.ipynb',
        `published:${publishedVersion}`,
        versions[2],
        '--json'
      );
      expect(result.status).toBe(1);
      const answer = NotebookDiffSchema.parse(JSON.parse(result.stdout));
      expect(answer.base).toEqual(SAVES[1]);
      expect(patched(answer)).toEqual(SAVES[2]);
    });

    test('exit 2 with the server’s message for a bad ref, and for bad usage', async () => {
      const unknown = await diffCommand('report.ipynb', '00000000-0000-0000-0000-000000000000');
      expect(unknown.status).toBe(2);
      expect(unknown.stderr).toMatch(/^jupyter-store diff: .*NoSuchVersion.*\(HTTP 404\)\n$/);
      const notebookless = await diffCommand('notes.txt', 'current');
      expect(notebookless.status).toBe(2);
      expect(notebookless.stderr).toContain('HTTP 422, not a notebook');
      const usage = await diffCommand();
      expect(usage.status).toBe(2);
      expect(usage.stderr).toBe(
        "jupyter-store diff: missing required argument 'path' (see --help)\n"
      );
    });
  });
});

describe('the diff API when object storage is not usable', () => {
  let upstream: FakeUpstream;
  let gateway: IGatewayProcess;

  beforeAll(async () => {
    ({ upstream, gateway } = await startServeGateway({
      args: ['--StoreSettings.object_endpoint_url=http://127.0.0.1:9']
    }));
    writeFileSync(join(gateway.rootDir, 'a.ipynb'), JSON.stringify(SAVES[0]));
  });

  afterAll(async () => {
    await gateway?.stop();
    await upstream?.close();
  });

  test('503 for a ref that reads the store; the file on disk and inline notebooks still diff', async () => {
    const headers = { Authorization: 'token good', 'Content-Type': 'application/json' };
    for (const query of ['', '?base=v1', '?base=published:v1']) {
      const response = await fetch(gateway.url(`api/store/diff/a.ipynb${query}`), { headers });
      expect({ status: response.status, body: await response.json() }).toEqual({
        status: 503,
        body: {
          message: expect.stringMatching(/Object storage is not usable/),
          reason: 'store unavailable'
        }
      });
    }
    const current = await fetch(gateway.url('api/store/diff/a.ipynb?base=current'), { headers });
    expect(current.status).toBe(200);
    const answer = NotebookDiffSchema.parse(await current.json());
    expect(answer.diff).toEqual([]);
    const inline = await fetch(gateway.url('api/store/diff'), {
      method: 'POST',
      headers,
      body: JSON.stringify({ path: 'a.ipynb', base: 'current', remote: SAVES[1] })
    });
    expect(inline.status).toBe(200);
    expect(patched(NotebookDiffSchema.parse(await inline.json()))).toEqual(SAVES[1]);
  });
});
