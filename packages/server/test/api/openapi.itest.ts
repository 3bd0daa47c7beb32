/**
 * The real gateway against `docs/store-api.openapi.yaml`: every route of the store API and its
 * landing pages is driven through the statuses that can be produced, and every answer must be
 * documented for its operation, with a body that validates (ajv, JSON Schema 2020-12) against
 * the documented schema for its status and content type. An undocumented status, content type
 * or field fails the test.
 *
 * - `jupyter-store lab` under `--base-url /jupyter/`, archiving to MinIO, with file-system
 *   cloning on: the 2xx answers, the 4xx answers of bad input, Jupyter's auth, cookie and XSRF
 *   checks, and at the end 502 once MinIO is stopped.
 * - `jupyter-store serve` in front of a stand-in for Jupyter (it answers `api/me`): one with no
 *   bucket configured (503s, 403 for file-system cloning), one with object cloning off (403),
 *   and 503 for every route once the stand-in is gone.
 */
import { DeleteObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { FakeUpstream } from '../support/fakeUpstream';
import { CLI, labDefaults, startGatewayProcess, type IGatewayProcess } from '../support/gateway';
import { REPO_ROOT } from '../support/jupyterServer';
import {
  createVersionedBucket,
  s3ClientFor,
  startMinio,
  type IObjectServer
} from '../support/objectServers';

jest.setTimeout(180_000);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

// ---------------------------------------------------------------------------------------------
// The document and the check of an answer against it
// ---------------------------------------------------------------------------------------------

const DOCUMENT_FILE = join(REPO_ROOT, 'docs', 'store-api.openapi.yaml');
const document: Json = parse(readFileSync(DOCUMENT_FILE, 'utf8'));

/** The node a local reference points to; throws when there is none. */
function resolvePointer(ref: string): Json {
  let node: Json = document;
  for (const raw of ref.replace(/^#\//, '').split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, key)) {
      throw new Error(`${ref} does not resolve in ${DOCUMENT_FILE}`);
    }
    node = node[key];
  }
  return node;
}

/** How deep a schema that holds itself is expanded: deeper than any notebook diff nests. */
const RECURSION_DEPTH = 12;

/**
 * The value with every `$ref` replaced by what it points to. A schema that holds itself (a diff
 * entry holds a diff) is expanded {@link RECURSION_DEPTH} levels deep, then left open.
 */
function inline(node: Json, depth: ReadonlyMap<string, number> = new Map()): Json {
  if (Array.isArray(node)) return node.map(item => inline(item, depth));
  if (node === null || typeof node !== 'object') return node;
  if (typeof node.$ref === 'string') {
    const { $ref, ...siblings } = node;
    const level = depth.get($ref) ?? 0;
    if (level >= RECURSION_DEPTH) return {};
    const deeper = new Map(depth).set($ref, level + 1);
    return { ...inline(resolvePointer($ref), deeper), ...inline(siblings, depth) };
  }
  return Object.fromEntries(
    Object.entries(node).map(([key, value]) => [key, inline(value, depth)])
  );
}

/**
 * The schema with every object closed (`unevaluatedProperties: false`) unless it says what
 * other keys may hold: the document keeps objects open for clients, because keys may be added,
 * but a live answer with a key the document does not name is an undocumented answer. Parts of
 * an `allOf` stay open; the object that combines them is closed.
 */
function closeObjects(schema: Json, allOfPart = false): Json {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return schema;
  const copy: Json = { ...schema };
  if (copy.properties) {
    copy.properties = Object.fromEntries(
      Object.entries(copy.properties).map(([key, value]) => [key, closeObjects(value)])
    );
  }
  if (copy.items) copy.items = closeObjects(copy.items);
  if (copy.additionalProperties && typeof copy.additionalProperties === 'object') {
    copy.additionalProperties = closeObjects(copy.additionalProperties);
  }
  for (const key of ['anyOf', 'oneOf']) {
    if (copy[key]) copy[key] = copy[key].map((part: Json) => closeObjects(part));
  }
  if (copy.allOf) copy.allOf = copy.allOf.map((part: Json) => closeObjects(part, true));
  const isObject =
    copy.type === 'object' || (Array.isArray(copy.type) && copy.type.includes('object'));
  if (
    isObject &&
    !allOfPart &&
    copy.additionalProperties === undefined &&
    copy.unevaluatedProperties === undefined
  ) {
    copy.unevaluatedProperties = false;
  }
  return copy;
}

const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
ajv.addFormat('date-time', {
  type: 'string',
  validate: value =>
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value) &&
    !Number.isNaN(Date.parse(value))
});
const validators = new Map<string, ValidateFunction>();

function validatorFor(key: string, schema: Json): ValidateFunction {
  let validate = validators.get(key);
  if (!validate) {
    validate = ajv.compile(closeObjects(inline(schema)));
    validators.set(key, validate);
  }
  return validate;
}

/** An answer as it came over the wire. */
interface IReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json(): any;
}

/** `METHOD template status` of every checked answer. */
const observed = new Set<string>();

/**
 * Fail unless the answer is documented for the operation: its status, its content type, its
 * required headers, and a body that validates against the schema for that status and type.
 */
function checkDocumented(method: string, template: string, reply: IReply): void {
  const where = `${method} ${template} → ${reply.status}`;
  const operation = document.paths[template]?.[method.toLowerCase()];
  if (!operation) throw new Error(`${method} ${template} is not a documented operation`);
  const reference = operation.responses[String(reply.status)];
  if (!reference) {
    throw new Error(
      `${where} is not documented (documented: ${Object.keys(operation.responses).join(', ')}); ` +
        `body: ${reply.text.slice(0, 500)}`
    );
  }
  const response = inline(reference);
  const contentType = reply.headers['content-type'];
  if (response.content) {
    if (contentType === undefined) throw new Error(`${where} has no Content-Type`);
    const mediaType = contentType.split(';', 1)[0].trim().toLowerCase();
    const media = response.content[mediaType];
    if (!media) {
      throw new Error(
        `${where}: Content-Type ${contentType} is not documented ` +
          `(documented: ${Object.keys(response.content).join(', ')})`
      );
    }
    let value: unknown = reply.text;
    if (mediaType === 'application/json') {
      try {
        value = JSON.parse(reply.text);
      } catch {
        throw new Error(`${where}: the body is not JSON: ${reply.text.slice(0, 500)}`);
      }
    }
    const validate = validatorFor(`${where} ${mediaType}`, media.schema);
    if (!validate(value)) {
      throw new Error(
        `${where}: the ${mediaType} body does not match the document: ` +
          `${ajv.errorsText(validate.errors)}; body: ${reply.text.slice(0, 500)}`
      );
    }
  } else if (reply.text !== '') {
    throw new Error(`${where}: a body where the document has none: ${reply.text.slice(0, 200)}`);
  }
  for (const [name, header] of Object.entries<Json>(response.headers ?? {})) {
    const value = reply.headers[name.toLowerCase()];
    if (value === undefined) {
      if (header.required) throw new Error(`${where}: the ${name} header is missing`);
      continue;
    }
    const validate = validatorFor(`${where} header ${name}`, header.schema);
    for (const one of Array.isArray(value) ? value : [value]) {
      if (!validate(one)) {
        throw new Error(
          `${where}: ${name} ${one} does not match: ${ajv.errorsText(validate.errors)}`
        );
      }
    }
  }
  observed.add(`${method} ${template} ${reply.status}`);
}

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

/** A gateway as the requests see it. */
interface ITarget {
  origin: string;
  baseUrl: string;
  /** The headers that authenticate by default. */
  auth: Record<string, string>;
}

interface IRequest {
  /** Below base_url, sent exactly as written (no `..` resolution, no re-encoding). */
  path: string;
  /** Replaces the default authentication headers; `{}` sends none. */
  auth?: Record<string, string>;
  headers?: Record<string, string>;
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as is. */
  body?: string | Buffer;
  /** Send this many bytes of spaces, in chunks, instead of a body (for the size limits). */
  streamBytes?: number;
}

/** Send a request and collect the answer (60 s at most). */
function send(target: ITarget, method: string, request: IRequest): Promise<IReply> {
  const body =
    request.json !== undefined ? Buffer.from(JSON.stringify(request.json)) : request.body;
  const headers: Record<string, string | number> = {
    ...(request.auth ?? target.auth),
    ...(request.json !== undefined ? { 'Content-Type': 'application/json' } : {}),
    ...request.headers
  };
  // Always a length: Node frames no body of a DELETE by default, and the bytes would be taken
  // for the next request.
  if (request.streamBytes !== undefined) headers['Content-Length'] = request.streamBytes;
  else if (body !== undefined) headers['Content-Length'] = Buffer.byteLength(body);
  return new Promise((resolve, reject) => {
    let answered = false;
    const outgoing = http.request(
      `${target.origin}/`,
      { method, path: `${target.baseUrl}${request.path}`, headers, timeout: 60_000 },
      response => {
        answered = true;
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            text,
            json: () => JSON.parse(text)
          });
        });
      }
    );
    outgoing.on('timeout', () =>
      outgoing.destroy(new Error(`${method} ${request.path} timed out`))
    );
    outgoing.on('error', error => {
      // A server may answer (413) and close before a large body is all sent.
      if (!answered) reject(error);
    });
    if (request.streamBytes === undefined) {
      outgoing.end(body);
      return;
    }
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    let left = request.streamBytes;
    const pump = (): void => {
      while (left > 0 && !answered && !outgoing.destroyed) {
        const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
        left -= piece.length;
        if (!outgoing.write(piece)) {
          outgoing.once('drain', pump);
          return;
        }
      }
      outgoing.end();
    };
    pump();
  });
}

/** Send a request to an operation of the document and check the answer against it. */
async function call(
  target: ITarget,
  method: string,
  template: string,
  request: IRequest
): Promise<IReply> {
  const reply = await send(target, method, request);
  checkDocumented(method, template, reply);
  return reply;
}

/** Jupyter's `{"message", "reason"}` with this status and reason. */
function expectError(reply: IReply, status: number, reason: string | RegExp): void {
  const body = reply.headers['content-type']?.startsWith('application/json')
    ? reply.json()
    : { html: reply.text.slice(0, 300) };
  expect({ status: reply.status, body }).toMatchObject({
    status,
    body: { reason: typeof reason === 'string' ? reason : expect.stringMatching(reason) }
  });
}

/** An HTML page with this status. */
function expectPage(reply: IReply, status: number): void {
  expect({ status: reply.status, type: reply.headers['content-type'] }).toEqual({
    status,
    type: expect.stringMatching(/^text\/html\b/)
  });
}

/** A valid notebook with these markdown cells. */
function notebook(...sources: string[]): Record<string, unknown> {
  return {
    cells: sources.map((source, index) => ({
      cell_type: 'markdown',
      id: `cell-${index}`,
      metadata: {},
      source
    })),
    metadata: {},
    nbformat: 4,
    nbformat_minor: 5
  };
}

/** `name=value` pairs of the Set-Cookie headers. */
function cookiesOf(headers: http.IncomingHttpHeaders): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const line of headers['set-cookie'] ?? []) {
    const [pair] = line.split(';');
    const index = pair.indexOf('=');
    cookies.set(pair.slice(0, index), pair.slice(index + 1));
  }
  return cookies;
}

const cookieHeader = (cookies: Map<string, string>): string =>
  [...cookies].map(([name, value]) => `${name}=${value}`).join('; ');

const FOREIGN_HOST = 'evil.example.com';
const FOREIGN_ORIGIN = 'http://elsewhere.example';

// ---------------------------------------------------------------------------------------------
// jupyter-store lab, archiving to MinIO
// ---------------------------------------------------------------------------------------------

describe('jupyter-store lab archiving to MinIO, under --base-url /jupyter/', () => {
  const BUCKET = 'notebooks';
  const SOURCES = 'sources';
  let minio: IObjectServer;
  let s3: S3Client;
  let gateway: IGatewayProcess;
  let main: ITarget;
  let scratch: string;
  /** fs_cloning_basedir: `shared/data.txt`, `shared/nb.ipynb`, `folder/`. */
  let basedir: string;
  /** Jupyter's login cookie and `_xsrf` cookie, from opening `lab?token=…`. */
  let cookies: Map<string, string>;
  let blobVersions: string[];
  const blobs = [randomBytes(3000), randomBytes(3000)];

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'openapi-itest-'));
    basedir = join(scratch, 'base');
    mkdirSync(join(basedir, 'shared'), { recursive: true });
    mkdirSync(join(basedir, 'folder'));
    mkdirSync(join(scratch, 'outside'));
    writeFileSync(join(basedir, 'shared', 'data.txt'), 'shared data\n');
    writeFileSync(join(basedir, 'shared', 'nb.ipynb'), JSON.stringify(notebook('shared')));
    writeFileSync(join(scratch, 'outside', 'secret.txt'), 'outside\n');

    minio = await startMinio();
    await createVersionedBucket(minio, BUCKET);
    await createVersionedBucket(minio, SOURCES);
    s3 = s3ClientFor(minio);
    blobVersions = [];
    for (const blob of blobs) {
      const put = await s3.send(
        new PutObjectCommand({ Bucket: SOURCES, Key: 'data/blob.bin', Body: blob }),
        { abortSignal: AbortSignal.timeout(30_000) }
      );
      blobVersions.push(put.VersionId!);
    }

    gateway = await startGatewayProcess({
      args: [
        ...labDefaults(),
        '--base-url',
        '/jupyter/',
        `--StoreSettings.object_endpoint_url=${minio.endpoint}`,
        `--StoreSettings.object_bucket=${BUCKET}`,
        `--StoreSettings.fs_cloning_basedir=${basedir}`,
        '--StoreSettings.object_timeout_seconds=5'
      ],
      env: {
        STORE_OBJECT_ACCESS_KEY_ID: minio.accessKeyId,
        STORE_OBJECT_SECRET_ACCESS_KEY: minio.secretAccessKey
      }
    });
    main = {
      origin: gateway.origin,
      baseUrl: gateway.baseUrl,
      auth: { Authorization: `token ${gateway.token}` }
    };
    expect(main.baseUrl).toBe('/jupyter/');
    const login = await send(main, 'GET', { path: `lab?token=${gateway.token}`, auth: {} });
    expect(login.status).toBe(200);
    cookies = cookiesOf(login.headers);
    expect([...cookies.keys()].some(name => name.startsWith('username-'))).toBe(true);
    expect(cookies.get('_xsrf')).toBeDefined();
  });

  afterAll(async () => {
    await gateway?.stop();
    s3?.destroy();
    await minio?.dispose();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  /** Authentication by the login cookie alone. */
  const cookieAuth = (): Record<string, string> => ({ Cookie: cookieHeader(cookies) });
  /** The login cookie with the XSRF token in the header, as JupyterLab sends writes. */
  const cookieWriteAuth = (): Record<string, string> => ({
    Cookie: cookieHeader(cookies),
    'X-XSRFToken': cookies.get('_xsrf')!
  });

  describe('GET api/store', () => {
    test('200 with a token in the header, in the query, or a login cookie', async () => {
      const byHeader = await call(main, 'GET', '/api/store', { path: 'api/store' });
      expect(byHeader.status).toBe(200);
      expect(byHeader.json()).toMatchObject({
        release: gateway.record.version,
        features: {
          store_valid: true,
          archive_valid: true,
          publish_valid: false,
          object_clone_valid: true,
          fs_clone_valid: true
        },
        archive: { last_error: null }
      });
      const byQuery = await call(main, 'GET', '/api/store', {
        path: `api/store?token=${gateway.token}`,
        auth: {}
      });
      expect(byQuery.status).toBe(200);
      const byCookie = await call(main, 'GET', '/api/store', {
        path: 'api/store',
        auth: cookieAuth()
      });
      expect(byCookie.status).toBe(200);
    });

    test('403 without authentication, or for a Host that is not local', async () => {
      expectError(
        await call(main, 'GET', '/api/store', { path: 'api/store', auth: {} }),
        403,
        'not authenticated'
      );
      expectError(
        await call(main, 'GET', '/api/store', {
          path: 'api/store',
          headers: { Host: FOREIGN_HOST }
        }),
        403,
        'host not allowed'
      );
    });

    test('404 for a cookie-authenticated call from another origin', async () => {
      const reply = await call(main, 'GET', '/api/store', {
        path: 'api/store',
        auth: cookieAuth(),
        headers: { Origin: FOREIGN_ORIGIN }
      });
      expectError(reply, 404, 'cross-origin request blocked');
    });
  });

  describe('other methods on api/store', () => {
    test.each(['POST', 'PUT', 'DELETE', 'PATCH'])(
      '405 for %s, with the Allow header',
      async method => {
        const reply = await call(main, method, '/api/store', { path: 'api/store', body: '{}' });
        expectError(reply, 405, 'method not allowed');
        expect(reply.headers.allow).toBe('GET, HEAD');
      }
    );
  });

  describe('GET api/store/versions/{path}', () => {
    test('200 lists every archived save, newest first', async () => {
      for (const text of ['first', 'second']) {
        const saved = await send(main, 'PUT', {
          path: 'api/contents/report.ipynb',
          json: { type: 'notebook', content: notebook(text) }
        });
        expect([200, 201]).toContain(saved.status);
      }
      const deadline = Date.now() + 30_000;
      let listing: Json;
      do {
        const reply = await call(main, 'GET', '/api/store/versions/{path}', {
          path: 'api/store/versions/report.ipynb'
        });
        expect(reply.status).toBe(200);
        listing = reply.json();
      } while (listing.workspace.versions.length < 2 && Date.now() < deadline);
      expect(listing).toMatchObject({
        path: 'report.ipynb',
        object_bucket: BUCKET,
        workspace: { object_key: 'workspace/report.ipynb' },
        published: { object_key: 'published/report.ipynb', versions: [] }
      });
      expect(listing.workspace.versions.map((version: Json) => version.is_latest)).toEqual([
        true,
        false
      ]);
      const never = await call(main, 'GET', '/api/store/versions/{path}', {
        path: 'api/store/versions/team/never-saved.ipynb'
      });
      expect(never.json().workspace.versions).toEqual([]);
      expect(never.json().next).toBeNull();
      // Paged: one version a page, the second page found by the first page's token.
      const first = await call(main, 'GET', '/api/store/versions/{path}', {
        path: 'api/store/versions/report.ipynb?limit=1'
      });
      expect(first.json().workspace.versions).toHaveLength(1);
      expect(first.json().next).toEqual(expect.any(String));
      const second = await call(main, 'GET', '/api/store/versions/{path}', {
        path: `api/store/versions/report.ipynb?limit=1&next=${encodeURIComponent(first.json().next)}`
      });
      expect(second.json().workspace.versions).toHaveLength(1);
      expect(second.json().workspace.versions[0].object_version_id).toBe(
        listing.workspace.versions[1].object_version_id
      );
      expect(second.json().next).toBeNull();
    });

    test('200 with the content of one version, archived or published', async () => {
      const listing = (
        await call(main, 'GET', '/api/store/versions/{path}', {
          path: 'api/store/versions/report.ipynb'
        })
      ).json();
      const older = listing.workspace.versions[1].object_version_id;
      const reply = await call(main, 'GET', '/api/store/versions/{path}', {
        path: `api/store/versions/report.ipynb?object_version_id=${encodeURIComponent(older)}`
      });
      expect(reply.status).toBe(200);
      expect(reply.json()).toMatchObject({
        path: 'report.ipynb',
        object_bucket: BUCKET,
        object_key: 'workspace/report.ipynb',
        object_version_id: older
      });
      expect(JSON.stringify(reply.json().content.cells)).toContain('first');
      expect(JSON.stringify(reply.json().content.cells)).not.toContain('second');
      const put = await s3.send(
        new PutObjectCommand({
          Bucket: BUCKET,
          Key: 'published/notes.ipynb',
          Body: JSON.stringify(notebook('published copy'))
        })
      );
      const published = await call(main, 'GET', '/api/store/versions/{path}', {
        path: `api/store/versions/notes.ipynb?copy=published&object_version_id=${put.VersionId}`
      });
      expect(published.status).toBe(200);
      expect(published.json().object_key).toBe('published/notes.ipynb');
      expect(JSON.stringify(published.json().content)).toContain('published copy');
    });

    test.each([
      ['object_version_id=', 400, 'bad request'],
      ['object_version_id=v&copy=elsewhere', 400, 'bad request'],
      ['object_version_id=not-a-version-id', 400, 'InvalidArgument'],
      ['object_version_id=00000000-0000-0000-0000-000000000000', 404, 'NoSuchVersion'],
      ['limit=0', 400, 'bad request'],
      ['limit=1001', 400, 'bad request'],
      ['next=not-a-token', 400, 'invalid token']
    ])('a version asked for with %s is %d (%s)', async (query, status, reason) => {
      const reply = await call(main, 'GET', '/api/store/versions/{path}', {
        path: `api/store/versions/report.ipynb?${query}`
      });
      expectError(reply, status, reason);
    });

    test('422 when the version asked for is not a notebook', async () => {
      const put = await s3.send(
        new PutObjectCommand({ Bucket: BUCKET, Key: 'workspace/odd.ipynb', Body: 'not json' })
      );
      const reply = await call(main, 'GET', '/api/store/versions/{path}', {
        path: `api/store/versions/odd.ipynb?object_version_id=${put.VersionId}`
      });
      expectError(reply, 422, 'not a notebook');
    });

    test.each([
      ['', 'empty path'],
      ['%2Fetc%2Fpasswd', 'absolute path'],
      ['a/../report.ipynb', 'invalid path'],
      ['a//report.ipynb', 'invalid path'],
      ['%FF.ipynb', 'invalid path'],
      ['.hidden/report.ipynb', 'hidden path']
    ])('400 for the path %j (%s)', async (path, reason) => {
      const reply = await call(main, 'GET', '/api/store/versions/{path}', {
        path: `api/store/versions/${path}`
      });
      expectError(reply, 400, reason);
    });

    test('403 without authentication', async () => {
      const reply = await call(main, 'GET', '/api/store/versions/{path}', {
        path: 'api/store/versions/report.ipynb',
        auth: {}
      });
      expectError(reply, 403, 'not authenticated');
    });

    test.each(['POST', 'PUT', 'DELETE', 'PATCH'])('405 for %s', async method => {
      const reply = await call(main, method, '/api/store/versions/{path}', {
        path: 'api/store/versions/report.ipynb',
        body: '{}'
      });
      expectError(reply, 405, 'method not allowed');
    });

    test('403 for a cookie-authenticated write without the XSRF token', async () => {
      const reply = await call(main, 'DELETE', '/api/store/versions/{path}', {
        path: 'api/store/versions/report.ipynb',
        auth: cookieAuth()
      });
      expectError(reply, 403, 'xsrf');
    });
  });

  describe('PUT api/store/publish/{path}', () => {
    const model = { type: 'notebook', content: notebook('published text') };
    const publish = (path: string, request: Omit<IRequest, 'path'> = { json: model }) =>
      call(main, 'PUT', '/api/store/publish/{path}', {
        path: `api/store/publish/${path}`,
        ...request
      });

    test('403 until publishing is enabled, then 200 with where it went', async () => {
      expectError(await publish('team/report.ipynb'), 403, 'publish disabled');
      const enabled = spawnSync(process.execPath, [CLI, 'enable', '--user'], {
        encoding: 'utf8',
        env: { ...process.env, JUPYTER_CONFIG_DIR: gateway.state.config },
        timeout: 30_000
      });
      expect(enabled.status).toBe(0);
      const reply = await publish('team/report.ipynb');
      expect(reply.status).toBe(200);
      expect(reply.json()).toMatchObject({
        object_bucket: BUCKET,
        object_key: 'published/team/report.ipynb',
        object_version_id: expect.any(String),
        object_path: `s3://${BUCKET}/published/team/report.ipynb`
      });
      const listing = await call(main, 'GET', '/api/store/versions/{path}', {
        path: 'api/store/versions/team/report.ipynb'
      });
      expect(listing.json().published.versions[0]).toMatchObject({
        object_version_id: reply.json().object_version_id,
        is_latest: true
      });
    });

    test('200 with a login cookie and the XSRF token, in the header or the query', async () => {
      const byHeader = await publish('cookie.ipynb', { json: model, auth: cookieWriteAuth() });
      expect(byHeader.status).toBe(200);
      const byQuery = await call(main, 'PUT', '/api/store/publish/{path}', {
        path: `api/store/publish/cookie.ipynb?_xsrf=${encodeURIComponent(cookies.get('_xsrf')!)}`,
        json: model,
        auth: cookieAuth()
      });
      expect(byQuery.status).toBe(200);
    });

    test('403 for a cookie-authenticated publish without the XSRF token, 404 from another origin', async () => {
      expectError(await publish('cookie.ipynb', { json: model, auth: cookieAuth() }), 403, 'xsrf');
      const foreign = await publish('cookie.ipynb', {
        json: model,
        auth: cookieWriteAuth(),
        headers: { Origin: FOREIGN_ORIGIN }
      });
      expectError(foreign, 404, 'cross-origin request blocked');
      expectError(
        await publish('cookie.ipynb', { json: model, auth: {} }),
        403,
        'not authenticated'
      );
    });

    test.each([
      ['', { json: model }, 'empty path'],
      ['.hidden/x.ipynb', { json: model }, 'hidden path'],
      ['a/../x.ipynb', { json: model }, 'invalid path'],
      ['%2e%2e/x.ipynb', { json: model }, 'invalid path'],
      ['x.ipynb', { body: '' }, 'empty model'],
      ['x.ipynb', { body: '  \n' }, 'empty model'],
      ['x.ipynb', { json: {} }, 'empty model'],
      ['x.ipynb', { body: 'not json' }, 'bad request'],
      ['x.ipynb', { json: [model] }, 'bad request']
    ])('400 for %j with %j (%s)', async (path, request, reason) => {
      expectError(await publish(path, request), 400, reason);
    });

    test('413 for a body over 100 MB', async () => {
      const reply = await publish('big.ipynb', {
        streamBytes: 100 * 1024 * 1024 + 1,
        headers: { 'Content-Type': 'application/json' }
      });
      expectError(reply, 413, 'entity.too.large');
    });

    test('415 for a model that is not a notebook, a path that is not .ipynb, an unknown encoding', async () => {
      expectError(
        await publish('x.ipynb', { json: { type: 'file', content: 'text' } }),
        415,
        'notebook required'
      );
      expectError(await publish('x.txt', { json: model }), 415, 'notebook required');
      const encoded = await publish('x.ipynb', {
        json: model,
        headers: { 'Content-Encoding': 'x-unknown' }
      });
      expectError(encoded, 415, 'encoding.unsupported');
    });

    test('422 for empty content, an invalid notebook, repeated cell ids', async () => {
      expectError(await publish('x.ipynb', { json: { type: 'notebook' } }), 422, 'empty content');
      expectError(
        await publish('x.ipynb', { json: { type: 'notebook', content: {} } }),
        422,
        'empty content'
      );
      expectError(
        await publish('x.ipynb', { json: { type: 'notebook', content: { nbformat: 3 } } }),
        422,
        'invalid notebook'
      );
      const broken = notebook('a');
      delete (broken.cells as Json[])[0].source;
      expectError(
        await publish('x.ipynb', { json: { type: 'notebook', content: broken } }),
        422,
        'invalid notebook'
      );
      const repeated = notebook('a', 'b');
      (repeated.cells as Json[])[1].id = 'cell-0';
      expectError(
        await publish('x.ipynb', { json: { type: 'notebook', content: repeated } }),
        422,
        'duplicate cell ids'
      );
    });

    test.each(['GET', 'POST', 'DELETE', 'PATCH'])('405 for %s', async method => {
      const reply = await call(main, method, '/api/store/publish/{path}', {
        path: 'api/store/publish/x.ipynb',
        body: method === 'GET' ? undefined : '{}'
      });
      expectError(reply, 405, 'method not allowed');
    });
  });

  describe('POST api/store/clone', () => {
    const clone = (request: Omit<IRequest, 'path'>) =>
      call(main, 'POST', '/api/store/clone', { path: 'api/store/clone', ...request });

    test('200 for the latest version and an exact old one, never overwriting', async () => {
      const latest = await clone({ json: { object_bucket: SOURCES, object_key: 'data/blob.bin' } });
      expect(latest.status).toBe(200);
      expect(latest.json()).toMatchObject({
        name: 'blob.bin',
        path: 'blob.bin',
        type: 'file',
        content: null,
        object_bucket: SOURCES,
        object_key: 'data/blob.bin',
        object_version_id: blobVersions[1],
        object_path: `s3://${SOURCES}/data/blob.bin`
      });
      expect(readFileSync(join(gateway.rootDir, 'blob.bin')).equals(blobs[1])).toBe(true);
      const old = await clone({
        json: {
          object_bucket: SOURCES,
          object_key: 'data/blob.bin',
          object_version_id: blobVersions[0],
          target_path: null
        }
      });
      expect(old.status).toBe(200);
      expect(old.json()).toMatchObject({ path: 'blob-1.bin', object_version_id: blobVersions[0] });
      expect(readFileSync(join(gateway.rootDir, 'blob-1.bin')).equals(blobs[0])).toBe(true);
    });

    test('200 for a published notebook, cloned as a notebook, with a login cookie and XSRF', async () => {
      const reply = await clone({
        json: {
          object_bucket: BUCKET,
          object_key: 'published/team/report.ipynb',
          target_path: 'from-published.ipynb'
        },
        auth: cookieWriteAuth()
      });
      expect(reply.status).toBe(200);
      expect(reply.json()).toMatchObject({ path: 'from-published.ipynb', type: 'notebook' });
    });

    test.each([
      [[1], /^bad request$/],
      [{ object_key: 'data/blob.bin' }, /^bad request$/],
      [{ object_bucket: '', object_key: 'data/blob.bin' }, /^bad request$/],
      [{ object_bucket: 5, object_key: 'data/blob.bin' }, /^bad request$/],
      [{ object_bucket: 'Not_A_Bucket', object_key: 'data/blob.bin' }, /^bad request$/],
      [
        { object_bucket: SOURCES, object_key: 'data/blob.bin', target_path: '../x.bin' },
        /^invalid path$/
      ],
      [
        { object_bucket: SOURCES, object_key: 'data/blob.bin', target_path: '.x.bin' },
        /^hidden path$/
      ],
      [{ object_bucket: SOURCES, object_key: 'data/', target_path: null }, /^bad request$/],
      [
        { object_bucket: SOURCES, object_key: 'data/blob.bin', object_version_id: 'not-a-version' },
        /^InvalidArgument$/
      ]
    ])('400 for %j', async (json, reason) => {
      expectError(await clone({ json }), 400, reason);
    });

    test('400 for a body that is not JSON', async () => {
      expectError(await clone({ body: '{"object_bucket":' }), 400, 'bad request');
    });

    test('403 without authentication, or with a cookie and no XSRF token', async () => {
      const json = { object_bucket: SOURCES, object_key: 'data/blob.bin' };
      expectError(await clone({ json, auth: {} }), 403, 'not authenticated');
      expectError(await clone({ json, auth: cookieAuth() }), 403, 'xsrf');
      expectError(await clone({ json, headers: { Host: FOREIGN_HOST } }), 403, 'host not allowed');
    });

    test('404 for a missing key or bucket, or a cookie call from another origin', async () => {
      expectError(
        await clone({ json: { object_bucket: SOURCES, object_key: 'data/missing.bin' } }),
        404,
        'NoSuchKey'
      );
      expectError(
        await clone({
          json: { object_bucket: 'no-such-bucket-here', object_key: 'data/blob.bin' }
        }),
        404,
        'NoSuchBucket'
      );
      const foreign = await clone({
        json: { object_bucket: SOURCES, object_key: 'data/blob.bin' },
        auth: cookieWriteAuth(),
        headers: { Origin: FOREIGN_ORIGIN }
      });
      expectError(foreign, 404, 'cross-origin request blocked');
    });

    test('409 when the directory of target_path does not exist', async () => {
      const reply = await clone({
        json: { object_bucket: SOURCES, object_key: 'data/blob.bin', target_path: 'no/dir.bin' }
      });
      expectError(reply, 409, 'missing parent directory');
    });

    test('413 for a body over 64 KiB, 415 for an unknown Content-Encoding', async () => {
      const big = await clone({
        json: { object_bucket: SOURCES, object_key: 'data/blob.bin', padding: 'x'.repeat(70_000) }
      });
      expectError(big, 413, 'entity.too.large');
      const encoded = await clone({
        json: { object_bucket: SOURCES, object_key: 'data/blob.bin' },
        headers: { 'Content-Encoding': 'x-unknown' }
      });
      expectError(encoded, 415, 'encoding.unsupported');
    });
  });

  describe('other methods on the clone routes', () => {
    test.each(['GET', 'PUT', 'DELETE', 'PATCH'])(
      '405 for %s, with the Allow header',
      async method => {
        const reply = await call(main, method, '/api/store/clone', {
          path: 'api/store/clone',
          body: '{}'
        });
        expectError(reply, 405, 'method not allowed');
        expect(reply.headers.allow).toBe('POST');
      }
    );

    test.each(['GET', 'PUT', 'DELETE', 'PATCH'])(
      '405 for %s, with the Allow header',
      async method => {
        const reply = await call(main, method, '/api/store/fs-clone', {
          path: 'api/store/fs-clone',
          body: '{}'
        });
        expectError(reply, 405, 'method not allowed');
        expect(reply.headers.allow).toBe('POST');
      }
    );
  });

  describe('POST api/store/fs-clone', () => {
    const fsClone = (request: Omit<IRequest, 'path'>) =>
      call(main, 'POST', '/api/store/fs-clone', { path: 'api/store/fs-clone', ...request });

    test('200 for a file and for a notebook below fs_cloning_basedir', async () => {
      const file = await fsClone({ json: { relpath: 'shared/data.txt' } });
      expect(file.status).toBe(200);
      expect(file.json()).toMatchObject({
        path: 'data.txt',
        type: 'file',
        relpath: 'shared/data.txt'
      });
      expect(readFileSync(join(gateway.rootDir, 'data.txt'), 'utf8')).toBe('shared data\n');
      const nb = await fsClone({
        json: { relpath: 'shared/nb.ipynb', target_path: 'from-fs.ipynb' },
        auth: cookieWriteAuth()
      });
      expect(nb.status).toBe(200);
      expect(nb.json()).toMatchObject({ path: 'from-fs.ipynb', type: 'notebook' });
    });

    test.each([
      [{}, 'bad request'],
      [{ relpath: '' }, 'bad request'],
      [{ relpath: '/etc/passwd' }, 'absolute path'],
      [{ relpath: 'shared/.secret' }, 'hidden path'],
      [{ relpath: 'folder' }, 'is a directory'],
      [{ relpath: 'shared/data.txt', target_path: '/abs.txt' }, 'absolute path']
    ])('400 for %j (%s)', async (json, reason) => {
      expectError(await fsClone({ json }), 400, reason);
    });

    test('403 without authentication, or with a cookie and no XSRF token', async () => {
      const json = { relpath: 'shared/data.txt' };
      expectError(await fsClone({ json, auth: {} }), 403, 'not authenticated');
      expectError(await fsClone({ json, auth: cookieAuth() }), 403, 'xsrf');
    });

    test('404 outside the base directory, for a missing file, from another origin', async () => {
      expectError(
        await fsClone({ json: { relpath: '../outside/secret.txt' } }),
        404,
        'outside base directory'
      );
      expectError(await fsClone({ json: { relpath: 'shared/missing.txt' } }), 404, 'not found');
      const foreign = await fsClone({
        json: { relpath: 'shared/data.txt' },
        auth: cookieWriteAuth(),
        headers: { Origin: FOREIGN_ORIGIN }
      });
      expectError(foreign, 404, 'cross-origin request blocked');
    });

    test('409 when the directory of target_path does not exist', async () => {
      const reply = await fsClone({
        json: { relpath: 'shared/data.txt', target_path: 'nowhere/data.txt' }
      });
      expectError(reply, 409, 'missing parent directory');
    });

    test('413 for a body over 64 KiB, 415 for an unknown Content-Encoding', async () => {
      const big = await fsClone({
        json: { relpath: 'shared/data.txt', padding: 'x'.repeat(70_000) }
      });
      expectError(big, 413, 'entity.too.large');
      const encoded = await fsClone({
        json: { relpath: 'shared/data.txt' },
        headers: { 'Content-Encoding': 'x-unknown' }
      });
      expectError(encoded, 415, 'encoding.unsupported');
    });
  });

  describe('landing pages', () => {
    const page = (
      template: '/store/clone' | '/store/fs-clone',
      query: string,
      request: Partial<IRequest> = {}
    ) => call(main, 'GET', template, { path: `${template.slice(1)}${query}`, ...request });

    test('GET store/clone: 200, a confirmation page whose script and stylesheet are served', async () => {
      const reply = await page(
        '/store/clone',
        `?object_bucket=${SOURCES}&object_key=data%2Fblob.bin`
      );
      expectPage(reply, 200);
      expect(reply.text).toContain('data/blob.bin');
      const assets = [...reply.text.matchAll(/(?:src|href)="(static\/[^"]+)"/g)].map(m => m[1]);
      expect(assets.some(asset => asset.endsWith('.js'))).toBe(true);
      expect(assets.some(asset => asset.endsWith('.css'))).toBe(true);
      for (const asset of assets) {
        const served = await call(main, 'GET', '/store/static/{file}', {
          path: `store/${asset}`,
          auth: {}
        });
        expect(served.status).toBe(200);
        expect(served.text.length).toBeGreaterThan(0);
      }
      const missing = await call(main, 'GET', '/store/static/{file}', {
        path: 'store/static/nothing-here.js',
        auth: {}
      });
      expect(missing.status).toBe(404);
      const versioned = await page(
        '/store/clone',
        `?object_bucket=${SOURCES}&object_key=data%2Fblob.bin&object_version_id=${blobVersions[0]}`
      );
      expectPage(versioned, 200);
      expect(versioned.text).toContain(blobVersions[0]);
    });

    test.each([
      ['/store/clone', `?object_bucket=${SOURCES}&object_key=data%2Fblob.bin`],
      ['/store/fs-clone', '?relpath=shared%2Fdata.txt']
    ] as const)(
      'GET %s: 302 to the login page, coming back here, when not logged in',
      async (template, query) => {
        const reply = await page(template, query, { auth: {} });
        expect(reply.status).toBe(302);
        const location = new URL(reply.headers.location!, main.origin);
        expect(location.origin).toBe(main.origin);
        expect(location.pathname).toBe(`${main.baseUrl}login`);
        const next = new URL(location.searchParams.get('next')!, main.origin);
        expect(next.origin).toBe(main.origin);
        expect(next.pathname).toBe(`${main.baseUrl}${template.slice(1)}`);
        expect([...next.searchParams]).toEqual([...new URLSearchParams(query)]);
      }
    );

    test.each([
      ['?object_key=data%2Fblob.bin'],
      [`?object_bucket=${SOURCES}`],
      ['?object_bucket=&object_key=data%2Fblob.bin'],
      [`?object_bucket=${SOURCES}&object_key=`],
      ['?object_bucket=Not_A_Bucket&object_key=data%2Fblob.bin']
    ])('GET store/clone%s: 400', async query => {
      expectPage(await page('/store/clone', query), 400);
    });

    test('GET store/clone: 403 for a Host that is not local', async () => {
      const reply = await page('/store/clone', `?object_bucket=${SOURCES}&object_key=k`, {
        headers: { Host: FOREIGN_HOST }
      });
      expectPage(reply, 403);
    });

    test('GET store/fs-clone: 200, a confirmation page', async () => {
      const reply = await page('/store/fs-clone', '?relpath=shared%2Fdata.txt');
      expectPage(reply, 200);
      expect(reply.text).toContain('shared/data.txt');
    });

    test.each([[''], ['?relpath='], ['?relpath=%2Fetc%2Fpasswd'], ['?relpath=folder']])(
      'GET store/fs-clone%s: 400',
      async query => {
        expectPage(await page('/store/fs-clone', query), 400);
      }
    );

    test.each([['?relpath=..%2Foutside%2Fsecret.txt'], ['?relpath=shared%2Fmissing.txt']])(
      'GET store/fs-clone%s: 404',
      async query => {
        expectPage(await page('/store/fs-clone', query), 404);
      }
    );

    test('GET store/fs-clone: 403 for a Host that is not local', async () => {
      const reply = await page('/store/fs-clone', '?relpath=shared%2Fdata.txt', {
        headers: { Host: FOREIGN_HOST }
      });
      expectPage(reply, 403);
    });
  });

  describe('the diff routes', () => {
    const getDiff = (query: string, request: Partial<IRequest> = {}) =>
      call(main, 'GET', '/api/store/diff/{path}', {
        path: `api/store/diff/${query}`,
        ...request
      });
    const postDiff = (request: Omit<IRequest, 'path'>) =>
      call(main, 'POST', '/api/store/diff', { path: 'api/store/diff', ...request });
    let older: string;
    let newer: string;

    beforeAll(async () => {
      for (const text of ['diff one', 'diff two']) {
        const saved = await send(main, 'PUT', {
          path: 'api/contents/diffed.ipynb',
          json: { type: 'notebook', content: notebook(text) }
        });
        expect([200, 201]).toContain(saved.status);
      }
      const deadline = Date.now() + 30_000;
      let ids: string[] = [];
      while (ids.length < 2 && Date.now() < deadline) {
        const listing = await send(main, 'GET', { path: 'api/store/versions/diffed.ipynb' });
        ids = listing.json().workspace.versions.map((version: Json) => version.object_version_id);
      }
      [newer, older] = ids;
      writeFileSync(join(gateway.rootDir, 'huge.ipynb'), '');
      truncateSync(join(gateway.rootDir, 'huge.ipynb'), 100 * 1024 * 1024 + 1);
    });

    test('200 for two versions, a version and the file, and an inline notebook', async () => {
      const versions = await getDiff(`diffed.ipynb?base=${older}&remote=${newer}`);
      expect(versions.status).toBe(200);
      expect(versions.json().diff).not.toEqual([]);
      const byDefault = await getDiff('diffed.ipynb', { auth: cookieAuth() });
      expect(byDefault.status).toBe(200);
      const inline = await postDiff({
        json: { path: 'diffed.ipynb', base: older, remote: notebook('unsaved') },
        auth: cookieWriteAuth()
      });
      expect(inline.status).toBe(200);
      expect(inline.json().remote_ref).toEqual({
        ref: null,
        source: 'inline',
        object_version_id: null
      });
    });

    test('400 for a bad ref, path or body', async () => {
      expectError(await getDiff('diffed.ipynb?base='), 400, 'bad request');
      expectError(await getDiff('.hidden/x.ipynb?base=current'), 400, 'hidden path');
      expectError(await postDiff({ body: 'not json' }), 400, 'bad request');
      expectError(await postDiff({ json: { base: 'current' } }), 400, 'bad request');
    });

    test('403 without authentication, or a cookie POST without the XSRF token', async () => {
      expectError(await getDiff('diffed.ipynb', { auth: {} }), 403, 'not authenticated');
      expectError(
        await postDiff({
          json: { base: notebook('a'), remote: notebook('b') },
          auth: cookieAuth()
        }),
        403,
        'xsrf'
      );
    });

    test('404 for a missing file or an unknown version', async () => {
      expectError(await getDiff('missing.ipynb?base=current'), 404, 'not found');
      expectError(
        await postDiff({
          json: { path: 'diffed.ipynb', base: '00000000-0000-0000-0000-000000000000' }
        }),
        404,
        'NoSuchVersion'
      );
    });

    test('413 for a file or a body over 100 MiB, 415 for an unknown encoding', async () => {
      expectError(await getDiff('huge.ipynb?base=current&remote=current'), 413, 'too large');
      const big = await postDiff({
        streamBytes: 100 * 1024 * 1024 + 1,
        headers: { 'Content-Type': 'application/json' }
      });
      expectError(big, 413, 'entity.too.large');
      const encoded = await postDiff({
        json: { base: notebook('a'), remote: notebook('b') },
        headers: { 'Content-Encoding': 'x-unknown' }
      });
      expectError(encoded, 415, 'encoding.unsupported');
    });

    test('422 for what is not a notebook', async () => {
      const put = await s3.send(
        new PutObjectCommand({ Bucket: BUCKET, Key: 'workspace/odd-diff.ipynb', Body: 'not json' })
      );
      expectError(await getDiff(`odd-diff.ipynb?base=${put.VersionId}`), 422, 'not a notebook');
      expectError(
        await postDiff({ json: { base: notebook('a'), remote: { cells: [] } } }),
        422,
        'not a notebook'
      );
    });

    test.each([
      ...['GET', 'PUT', 'DELETE', 'PATCH'].map(method => [method, '/api/store/diff', 'POST']),
      ...['POST', 'PUT', 'DELETE', 'PATCH'].map(method => [
        method,
        '/api/store/diff/{path}',
        'GET, HEAD'
      ])
    ])('405 for %s %s, with the Allow header', async (method, template, allow) => {
      const reply = await call(main, method, template, {
        path: template.replace('{path}', 'diffed.ipynb').slice(1),
        body: method === 'GET' ? undefined : '{}'
      });
      expectError(reply, 405, 'method not allowed');
      expect(reply.headers.allow).toBe(allow);
    });
  });

  // Last: it stops MinIO.
  describe('api/store/retention', () => {
    const retention = (method: string, request: Omit<IRequest, 'path'> = {}) =>
      call(main, method, '/api/store/retention', { path: 'api/store/retention', ...request });

    test('200 to read, set and clear the rule, with a token or a login cookie', async () => {
      expect((await retention('GET')).json()).toMatchObject({ prefix: 'workspace/', rule: null });
      const set = await retention('PUT', {
        json: { keep_newest: 2, noncurrent_days: 9 },
        auth: cookieWriteAuth()
      });
      expect(set.status).toBe(200);
      expect(set.json()).toMatchObject({ rule: { keep_newest: 2, noncurrent_days: 9 } });
      const cleared = await retention('DELETE');
      expect(cleared.status).toBe(200);
      expect(cleared.json()).toMatchObject({ rule: null });
    });

    test('400 for a bad body, 413 over 64 KiB, 415 for an unknown encoding', async () => {
      expectError(await retention('PUT', { json: { keep_newest: 1 } }), 400, 'bad request');
      expectError(await retention('PUT', { streamBytes: 70_000 }), 413, 'entity.too.large');
      expectError(
        await retention('PUT', {
          json: { keep_newest: 1, noncurrent_days: 1 },
          headers: { 'Content-Encoding': 'x-unknown' }
        }),
        415,
        'encoding.unsupported'
      );
    });

    test('403 without authentication or XSRF token, 404 from another origin', async () => {
      for (const method of ['GET', 'PUT', 'DELETE']) {
        expectError(await retention(method, { auth: {} }), 403, 'not authenticated');
        expectError(
          await retention(method, { auth: cookieAuth(), headers: { Origin: FOREIGN_ORIGIN } }),
          404,
          'cross-origin request blocked'
        );
      }
      expectError(await retention('PUT', { auth: cookieAuth(), json: {} }), 403, 'xsrf');
      expectError(await retention('DELETE', { auth: cookieAuth() }), 403, 'xsrf');
    });

    test.each(['POST', 'PATCH'])('405 for %s, with the Allow header', async method => {
      const reply = await retention(method, { body: '{}' });
      expectError(reply, 405, 'method not allowed');
      expect(reply.headers.allow).toBe('GET, PUT, DELETE, HEAD');
    });
  });

  describe('api/store/deleted and api/store/restore', () => {
    const deleted = (request: Omit<IRequest, 'path'> & { query?: string } = {}) =>
      call(main, 'GET', '/api/store/deleted', {
        path: `api/store/deleted${request.query ?? ''}`,
        ...request
      });
    const restore = (request: Omit<IRequest, 'path'> = {}) =>
      call(main, 'POST', '/api/store/restore', { path: 'api/store/restore', ...request });
    /** An archived version written straight to the bucket, as the archive writes one. */
    const archive = async (path: string) => {
      await s3.send(
        new PutObjectCommand({
          Bucket: BUCKET,
          Key: `workspace/${path}`,
          Body: JSON.stringify(notebook(path))
        }),
        { abortSignal: AbortSignal.timeout(30_000) }
      );
    };

    test('200 to list the deleted notebooks and to restore one, with a token or a login cookie', async () => {
      await archive('was-deleted.ipynb');
      await s3.send(
        new DeleteObjectCommand({ Bucket: BUCKET, Key: 'workspace/was-deleted.ipynb' }),
        { abortSignal: AbortSignal.timeout(30_000) }
      );
      const listed = await deleted({ auth: cookieAuth() });
      expect(listed.status).toBe(200);
      expect(listed.json()).toMatchObject({
        deleted: expect.arrayContaining([expect.objectContaining({ path: 'was-deleted.ipynb' })])
      });
      const restored = await restore({
        json: { path: 'was-deleted.ipynb' },
        auth: cookieWriteAuth()
      });
      expect(restored.status).toBe(200);
      expect(restored.json()).toMatchObject({
        path: 'was-deleted.ipynb',
        restored_from: { path: 'was-deleted.ipynb' }
      });
    });

    test('400 for a bad query or body, 404 without versions, 409 without the directory', async () => {
      expectError(await deleted({ query: '?limit=0' }), 400, 'bad request');
      expectError(await restore({ json: { path: '' } }), 400, 'bad request');
      expectError(await restore({ json: { path: 'never.ipynb' } }), 404, 'no versions');
      await archive('no-such-dir/a.ipynb');
      expectError(
        await restore({ json: { path: 'no-such-dir/a.ipynb' } }),
        409,
        'missing parent directory'
      );
      expectError(await restore({ streamBytes: 70_000 }), 413, 'entity.too.large');
      expectError(
        await restore({
          json: { path: 'never.ipynb' },
          headers: { 'Content-Encoding': 'x-unknown' }
        }),
        415,
        'encoding.unsupported'
      );
    });

    test('403 without authentication or XSRF token, 404 from another origin', async () => {
      expectError(await deleted({ auth: {} }), 403, 'not authenticated');
      expectError(await restore({ auth: {}, json: {} }), 403, 'not authenticated');
      expectError(await restore({ auth: cookieAuth(), json: {} }), 403, 'xsrf');
      for (const reply of [
        await deleted({ auth: cookieAuth(), headers: { Origin: FOREIGN_ORIGIN } }),
        await restore({ auth: cookieAuth(), headers: { Origin: FOREIGN_ORIGIN }, json: {} })
      ]) {
        expectError(reply, 404, 'cross-origin request blocked');
      }
    });

    test.each([
      ['/api/store/deleted', ['POST', 'PUT', 'DELETE', 'PATCH'], 'GET, HEAD'],
      ['/api/store/restore', ['GET', 'PUT', 'DELETE', 'PATCH'], 'POST']
    ] as const)(
      '405 for the other methods of %s, with the Allow header',
      async (route, methods, allow) => {
        for (const method of methods) {
          const reply = await call(main, method, route, { path: route.slice(1), body: '{}' });
          expectError(reply, 405, 'method not allowed');
          expect(reply.headers.allow).toBe(allow);
        }
      }
    );
  });

  describe('api/store/named/{path}', () => {
    const named = (method: string, path: string, request: Omit<IRequest, 'path'> = {}) =>
      call(main, method, '/api/store/named/{path}', {
        path: `api/store/named/${path}`,
        ...request
      });
    /** An archived version written straight to the bucket, as the archive writes one. */
    const archive = async (path: string): Promise<string> => {
      const put = await s3.send(
        new PutObjectCommand({
          Bucket: BUCKET,
          Key: `workspace/${path}`,
          Body: JSON.stringify(notebook(path))
        }),
        { abortSignal: AbortSignal.timeout(30_000) }
      );
      return put.VersionId!;
    };

    test('200 to name the newest version or the one given, list it, and remove the name', async () => {
      const first = await archive('labelled.ipynb');
      const newest = await archive('labelled.ipynb');
      const latest = await named('POST', 'labelled.ipynb', { json: { name: 'newest' } });
      expect(latest.status).toBe(200);
      expect(latest.json()).toMatchObject({
        object_version_id: newest,
        label: { name: 'newest', note: null }
      });
      const older = await named('POST', 'labelled.ipynb', {
        json: { name: 'older', note: 'a note', object_version_id: first },
        auth: cookieWriteAuth()
      });
      expect(older.status).toBe(200);
      const listing = await call(main, 'GET', '/api/store/versions/{path}', {
        path: 'api/store/versions/labelled.ipynb'
      });
      expect(listing.json().workspace.versions).toMatchObject([
        { object_version_id: newest, label: { name: 'newest' } },
        { object_version_id: first, label: { name: 'older', note: 'a note' } }
      ]);
      const removed = await named('DELETE', `labelled.ipynb?object_version_id=${first}`, {
        auth: cookieWriteAuth()
      });
      expect(removed.status).toBe(200);
      expect(removed.json()).toMatchObject({ object_version_id: first });
    });

    test('400 for a bad body or query, 404 without versions or name, 413, 415', async () => {
      const version = await archive('refused.ipynb');
      expectError(
        await named('POST', 'refused.ipynb', { json: { name: ' ' } }),
        400,
        'bad request'
      );
      expectError(
        await named('POST', 'refused.ipynb', {
          json: { name: '名'.repeat(100), note: '€'.repeat(200) }
        }),
        400,
        'label too long'
      );
      expectError(await named('DELETE', 'refused.ipynb'), 400, 'bad request');
      expectError(await named('POST', 'never.ipynb', { json: { name: 'x' } }), 404, 'no versions');
      expectError(
        await named('DELETE', `refused.ipynb?object_version_id=${version}`),
        404,
        'not named'
      );
      expectError(
        await named('POST', 'refused.ipynb', { streamBytes: 70_000 }),
        413,
        'entity.too.large'
      );
      expectError(
        await named('POST', 'refused.ipynb', {
          json: { name: 'x' },
          headers: { 'Content-Encoding': 'x-unknown' }
        }),
        415,
        'encoding.unsupported'
      );
    });

    test('403 without authentication or XSRF token, 404 from another origin', async () => {
      for (const method of ['POST', 'DELETE']) {
        const json = method === 'POST' ? { name: 'x' } : undefined;
        expectError(await named(method, 'a.ipynb', { auth: {}, json }), 403, 'not authenticated');
        expectError(await named(method, 'a.ipynb', { auth: cookieAuth(), json }), 403, 'xsrf');
        expectError(
          await named(method, 'a.ipynb', {
            auth: cookieAuth(),
            headers: { Origin: FOREIGN_ORIGIN },
            json
          }),
          404,
          'cross-origin request blocked'
        );
      }
    });

    test.each(['GET', 'PUT', 'PATCH'])('405 for %s, with the Allow header', async method => {
      const reply = await named(method, 'a.ipynb', { body: '{}' });
      expectError(reply, 405, 'method not allowed');
      expect(reply.headers.allow).toBe('POST, DELETE');
    });
  });

  describe('with object storage unreachable', () => {
    test('502 for versions, publish and clone', async () => {
      await minio.stop();
      expectError(
        await call(main, 'POST', '/api/store/named/{path}', {
          path: 'api/store/named/report.ipynb',
          json: { name: 'x', object_version_id: 'v1' }
        }),
        502,
        /./
      );
      expectError(
        await call(main, 'DELETE', '/api/store/named/{path}', {
          path: 'api/store/named/report.ipynb?object_version_id=v1'
        }),
        502,
        /./
      );
      for (const method of ['GET', 'PUT', 'DELETE']) {
        expectError(
          await call(main, method, '/api/store/retention', {
            path: 'api/store/retention',
            json: method === 'PUT' ? { keep_newest: 1, noncurrent_days: 1 } : undefined
          }),
          502,
          /./
        );
      }
      expectError(
        await call(main, 'GET', '/api/store/versions/{path}', {
          path: 'api/store/versions/report.ipynb'
        }),
        502,
        /./
      );
      expectError(
        await call(main, 'PUT', '/api/store/publish/{path}', {
          path: 'api/store/publish/x.ipynb',
          json: { type: 'notebook', content: notebook('x') }
        }),
        502,
        /./
      );
      expectError(
        await call(main, 'POST', '/api/store/clone', {
          path: 'api/store/clone',
          json: { object_bucket: SOURCES, object_key: 'data/blob.bin' }
        }),
        502,
        /./
      );
      expectError(
        await call(main, 'GET', '/api/store/diff/{path}', { path: 'api/store/diff/report.ipynb' }),
        502,
        /./
      );
      expectError(
        await call(main, 'GET', '/api/store/deleted', { path: 'api/store/deleted' }),
        502,
        /./
      );
      expectError(
        await call(main, 'POST', '/api/store/restore', {
          path: 'api/store/restore',
          json: { path: 'report.ipynb' }
        }),
        502,
        /./
      );
      expectError(
        await call(main, 'POST', '/api/store/diff', {
          path: 'api/store/diff',
          json: { path: 'report.ipynb' }
        }),
        502,
        /./
      );
    });
  });
});

// ---------------------------------------------------------------------------------------------
// jupyter-store serve in front of a stand-in for Jupyter
// ---------------------------------------------------------------------------------------------

describe('jupyter-store serve with features off', () => {
  let upstream: FakeUpstream;
  /** S3 mode with no bucket: object storage is not usable; no fs_cloning_basedir. */
  let storeless: IGatewayProcess;
  /** The embedded store with enable_object_cloning false. */
  let cloningOff: IGatewayProcess;
  let noStore: ITarget;
  let noCloning: ITarget;
  const auth = { Authorization: 'token good' };

  beforeAll(async () => {
    upstream = new FakeUpstream();
    const address = await upstream.listen({ port: 0 });
    if (address.kind !== 'tcp') throw new Error('the stand-in listens on TCP');
    const serve = (settings: string[]) =>
      startGatewayProcess({
        command: 'serve',
        args: ['--upstream', `http://127.0.0.1:${address.port}`, '--token', 'good', ...settings]
      });
    [storeless, cloningOff] = await Promise.all([
      serve(['--StoreSettings.object_endpoint_url=http://127.0.0.1:9']),
      serve(['--StoreSettings.enable_object_cloning=false'])
    ]);
    noStore = { origin: storeless.origin, baseUrl: storeless.baseUrl, auth };
    noCloning = { origin: cloningOff.origin, baseUrl: cloningOff.baseUrl, auth };
  });

  afterAll(async () => {
    await storeless?.stop();
    await cloningOff?.stop();
    await upstream?.close();
  });

  test('GET api/store: 200 with the features off, their reasons, and no archive', async () => {
    const reply = await call(noStore, 'GET', '/api/store', { path: 'api/store' });
    expect(reply.status).toBe(200);
    expect(reply.json()).toMatchObject({
      features: { store_valid: false, object_clone_valid: false, fs_clone_valid: false },
      reasons: { store_valid: expect.stringMatching(/object_bucket/) },
      archive: null
    });
    const other = await call(noCloning, 'GET', '/api/store', { path: 'api/store' });
    expect(other.json()).toMatchObject({
      features: { store_valid: true, object_clone_valid: false },
      reasons: { object_clone_valid: 'enable_object_cloning is false' }
    });
  });

  /** A request to each route that needs object storage. */
  const storeRoutes: Array<[string, string, IRequest]> = [
    ['GET', '/api/store/versions/{path}', { path: 'api/store/versions/a.ipynb' }],
    [
      'PUT',
      '/api/store/publish/{path}',
      { path: 'api/store/publish/a.ipynb', json: { type: 'notebook', content: notebook('a') } }
    ],
    [
      'POST',
      '/api/store/clone',
      { path: 'api/store/clone', json: { object_bucket: 'sources', object_key: 'a.ipynb' } }
    ],
    ['GET', '/api/store/diff/{path}', { path: 'api/store/diff/a.ipynb' }],
    [
      'POST',
      '/api/store/diff',
      { path: 'api/store/diff', json: { path: 'a.ipynb', base: 'v1', remote: notebook('a') } }
    ],
    ['GET', '/api/store/deleted', { path: 'api/store/deleted' }],
    ['POST', '/api/store/restore', { path: 'api/store/restore', json: { path: 'a.ipynb' } }],
    ['POST', '/api/store/named/{path}', { path: 'api/store/named/a.ipynb', json: { name: 'x' } }],
    ['DELETE', '/api/store/named/{path}', { path: 'api/store/named/a.ipynb?object_version_id=v1' }],
    ['GET', '/api/store/retention', { path: 'api/store/retention' }],
    [
      'PUT',
      '/api/store/retention',
      { path: 'api/store/retention', json: { keep_newest: 1, noncurrent_days: 1 } }
    ],
    ['DELETE', '/api/store/retention', { path: 'api/store/retention' }]
  ];

  test.each(storeRoutes)(
    '503 for %s %s when object storage is not usable',
    async (method, template, request) => {
      expectError(await call(noStore, method, template, request), 503, 'store unavailable');
    }
  );

  test('403 for a clone whose feature is off', async () => {
    expectError(
      await call(noCloning, 'POST', '/api/store/clone', {
        path: 'api/store/clone',
        json: { object_bucket: 'sources', object_key: 'a.ipynb' }
      }),
      403,
      'object cloning disabled'
    );
    expectError(
      await call(noStore, 'POST', '/api/store/fs-clone', {
        path: 'api/store/fs-clone',
        json: { relpath: 'a.ipynb' }
      }),
      403,
      'fs cloning disabled'
    );
  });

  test('landing pages: 503 when object storage is not usable, 403 when the feature is off', async () => {
    const query = '?object_bucket=sources&object_key=a.ipynb';
    expectPage(await call(noStore, 'GET', '/store/clone', { path: `store/clone${query}` }), 503);
    expectPage(await call(noCloning, 'GET', '/store/clone', { path: `store/clone${query}` }), 403);
    expectPage(
      await call(noStore, 'GET', '/store/fs-clone', { path: 'store/fs-clone?relpath=a.ipynb' }),
      403
    );
  });

  // Last: it stops the stand-in.
  test('503 for every route once Jupyter cannot be asked who the caller is', async () => {
    await upstream.close();
    // A token never seen before, so that no cached answer is used.
    const fresh = (n: number) => ({ Authorization: `token fresh-${n}` });
    const requests: Array<[string, string, IRequest]> = [
      ['GET', '/api/store', { path: 'api/store' }],
      ['GET', '/api/store/versions/{path}', { path: 'api/store/versions/a.ipynb' }],
      ['POST', '/api/store/versions/{path}', { path: 'api/store/versions/a.ipynb', body: '{}' }],
      ['PUT', '/api/store/publish/{path}', { path: 'api/store/publish/a.ipynb', body: '{}' }],
      ['GET', '/api/store/publish/{path}', { path: 'api/store/publish/a.ipynb' }],
      ['POST', '/api/store/clone', { path: 'api/store/clone', body: '{}' }],
      ['POST', '/api/store/fs-clone', { path: 'api/store/fs-clone', body: '{}' }]
    ];
    for (const [index, [method, template, request]] of requests.entries()) {
      const reply = await call(noStore, method, template, { ...request, auth: fresh(index) });
      expectError(reply, 503, 'upstream unavailable');
    }
    const query = '?object_bucket=sources&object_key=a.ipynb';
    const pages: Array<[string, string]> = [
      ['/store/clone', `store/clone${query}`],
      ['/store/fs-clone', 'store/fs-clone?relpath=a.ipynb']
    ];
    for (const [index, [template, path]] of pages.entries()) {
      expectPage(await call(noStore, 'GET', template, { path, auth: fresh(100 + index) }), 503);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Coverage of the document
// ---------------------------------------------------------------------------------------------

/**
 * What the tests above produced, operation by operation. Not produced here: 507 (a full disk),
 * and the 400/403/404 answers of object storage itself (a malformed key, a denied bucket, a
 * bucket removed after the check), which the clone and publish suites drive with their own
 * fakes.
 */
const EXPECTED_COVERAGE: Record<string, number[]> = {
  'GET /api/store': [200, 403, 404, 503],
  'POST /api/store': [405],
  'PUT /api/store': [405],
  'DELETE /api/store': [405],
  'PATCH /api/store': [405],
  'GET /api/store/versions/{path}': [200, 400, 403, 404, 422, 502, 503],
  'POST /api/store/versions/{path}': [405, 503],
  'PUT /api/store/versions/{path}': [405],
  'DELETE /api/store/versions/{path}': [403, 405],
  'PATCH /api/store/versions/{path}': [405],
  'PUT /api/store/publish/{path}': [200, 400, 403, 404, 413, 415, 422, 502, 503],
  'GET /api/store/publish/{path}': [405, 503],
  'POST /api/store/publish/{path}': [405],
  'DELETE /api/store/publish/{path}': [405],
  'PATCH /api/store/publish/{path}': [405],
  'POST /api/store/clone': [200, 400, 403, 404, 409, 413, 415, 502, 503],
  'POST /api/store/fs-clone': [200, 400, 403, 404, 409, 413, 415, 503],
  'GET /api/store/clone': [405],
  'PUT /api/store/clone': [405],
  'DELETE /api/store/clone': [405],
  'PATCH /api/store/clone': [405],
  'GET /api/store/fs-clone': [405],
  'PUT /api/store/fs-clone': [405],
  'DELETE /api/store/fs-clone': [405],
  'PATCH /api/store/fs-clone': [405],
  'GET /api/store/diff/{path}': [200, 400, 403, 404, 413, 422, 502, 503],
  'POST /api/store/diff/{path}': [405],
  'PUT /api/store/diff/{path}': [405],
  'DELETE /api/store/diff/{path}': [405],
  'PATCH /api/store/diff/{path}': [405],
  'POST /api/store/diff': [200, 400, 403, 404, 413, 415, 422, 502, 503],
  'GET /api/store/diff': [405],
  'PUT /api/store/diff': [405],
  'DELETE /api/store/diff': [405],
  'PATCH /api/store/diff': [405],
  // 409 (an empty workspace prefix) and 501 (versitygw): retention.itest.ts.
  'GET /api/store/retention': [200, 403, 404, 502, 503],
  'PUT /api/store/retention': [200, 400, 403, 404, 413, 415, 502, 503],
  'DELETE /api/store/retention': [200, 403, 404, 502, 503],
  'POST /api/store/retention': [405],
  'PATCH /api/store/retention': [405],
  // 507 (a full disk) is not produced here.
  'GET /api/store/deleted': [200, 400, 403, 404, 502, 503],
  'POST /api/store/deleted': [405],
  'PUT /api/store/deleted': [405],
  'DELETE /api/store/deleted': [405],
  'PATCH /api/store/deleted': [405],
  'POST /api/store/restore': [200, 400, 403, 404, 409, 413, 415, 502, 503],
  'GET /api/store/restore': [405],
  'PUT /api/store/restore': [405],
  'DELETE /api/store/restore': [405],
  'PATCH /api/store/restore': [405],
  'POST /api/store/named/{path}': [200, 400, 403, 404, 413, 415, 502, 503],
  'DELETE /api/store/named/{path}': [200, 400, 403, 404, 502, 503],
  'GET /api/store/named/{path}': [405],
  'PUT /api/store/named/{path}': [405],
  'PATCH /api/store/named/{path}': [405],
  'GET /store/clone': [200, 302, 400, 403, 503],
  'GET /store/fs-clone': [200, 302, 400, 403, 404, 503],
  'GET /store/static/{file}': [200, 404]
};

describe('coverage of the document', () => {
  test('every route was driven through each status it can be made to answer', () => {
    const expected = Object.entries(EXPECTED_COVERAGE).flatMap(([operation, statuses]) =>
      statuses.map(status => `${operation} ${status}`)
    );
    expect(expected.filter(entry => !observed.has(entry))).toEqual([]);
  });

  test('every documented operation is exercised', () => {
    const documented = Object.entries<Json>(document.paths).flatMap(([path, item]) =>
      ['get', 'put', 'post', 'delete', 'patch']
        .filter(method => item[method])
        .map(method => `${method.toUpperCase()} ${path}`)
    );
    expect(documented.sort()).toEqual(Object.keys(EXPECTED_COVERAGE).sort());
  });
});
