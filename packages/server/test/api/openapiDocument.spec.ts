/**
 * `docs/store-api.openapi.yaml` is what `npm run openapi` generates from the contract, and a
 * sound OpenAPI 3.1 document of what the store API serves: every `$ref` resolves, every
 * operation answers documented statuses with schemas that compile (ajv, JSON Schema 2020-12),
 * every reason of the error catalogue is listed, and the JSON routes it documents are exactly the
 * routes the store API router serves.
 */
import Ajv2020 from 'ajv/dist/2020';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { Archiving } from '../../src/archive/archiving';
import { Gateway } from '../../src/gateway/gateway';
import { createLogger } from '../../src/gateway/logger';
import { listErrors } from '../../src/http/errorCatalogue';
import { buildOpenApiDocument } from '../../src/openapi/document';
import { DOCUMENT_FILE, renderOpenApiDocument } from '../../src/openapi/write';
import { mountStoreApi } from '../../src/gateway/start';
import { StoreSettingsSchema } from '../../src/settings';
import { FakeUpstream } from '../support/fakeUpstream';
import { REPO_ROOT } from '../support/jupyterServer';

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const document: Json = parse(readFileSync(DOCUMENT_FILE, 'utf8'));

/** Every `[pointer, node]` of the document, depth first. */
function* walk(node: Json, pointer = '#'): Generator<[string, Json]> {
  yield [pointer, node];
  if (node === null || typeof node !== 'object') return;
  for (const [key, value] of Object.entries(node)) {
    yield* walk(value, `${pointer}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`);
  }
}

/** The node a local reference (`#/components/…`) points to, or undefined. */
function resolvePointer(ref: string): Json {
  if (!ref.startsWith('#/')) return undefined;
  let node: Json = document;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/** A Reference Object (or a schema that is only a `$ref`) followed to its target. */
function deref(node: Json): Json {
  let current = node;
  for (let hops = 0; current && typeof current.$ref === 'string'; hops++) {
    if (hops > 20) throw new Error(`reference loop at ${node.$ref}`);
    current = resolvePointer(current.$ref);
  }
  return current;
}

/** `[path, method, operation]` for every operation. */
function operations(): [string, string, Json][] {
  const found: [string, string, Json][] = [];
  for (const [path, item] of Object.entries<Json>(document.paths)) {
    for (const method of HTTP_METHODS) {
      if (item[method]) found.push([path, method, item[method]]);
    }
  }
  return found;
}

/** An ajv for OpenAPI 3.1 schemas: 2020-12, strict, with the document's schemas addressable. */
function createAjv(): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
  ajv.addFormat('date-time', {
    type: 'string',
    validate: value =>
      /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value) &&
      !Number.isNaN(Date.parse(value))
  });
  ajv.addSchema({ $id: SCHEMAS_ID, $defs: rewriteRefs(document.components.schemas) });
  return ajv;
}

const SCHEMAS_ID = 'urn:jupyter-store:openapi';

/** The schema with `#/components/schemas/X` made absolute, so ajv finds it in `$defs`. */
function rewriteRefs(schema: Json): Json {
  if (Array.isArray(schema)) return schema.map(rewriteRefs);
  if (schema === null || typeof schema !== 'object') return schema;
  const copy: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    copy[key] =
      key === '$ref' && typeof value === 'string'
        ? value.replace('#/components/schemas/', `${SCHEMAS_ID}#/$defs/`)
        : rewriteRefs(value);
  }
  return copy;
}

describe('the OpenAPI document', () => {
  test('is the one in docs/, which is what `npm run openapi` writes', () => {
    expect(DOCUMENT_FILE).toBe(join(REPO_ROOT, 'docs', 'store-api.openapi.yaml'));
    expect(readFileSync(DOCUMENT_FILE, 'utf8')).toBe(renderOpenApiDocument());
  });

  test('lists every reason of the error catalogue, with its status', () => {
    const reason = document.components.schemas.ErrorBody.properties.reason;
    const listed = reason.anyOf.find((alternative: Json) => Array.isArray(alternative.enum)).enum;
    const description: string = document.components.schemas.ErrorBody.description;
    const entries = listErrors();
    expect(entries.length).toBeGreaterThan(0);
    for (const entry of entries) {
      expect({ reason: entry.reason, listed: listed.includes(entry.reason) }).toEqual({
        reason: entry.reason,
        listed: true
      });
      const line = description.split('\n').find(text => text.startsWith(`- ${entry.status}: `));
      expect({ entry, line }).toEqual({
        entry,
        line: expect.stringContaining(`\`${entry.reason}\``)
      });
    }
    // A catalogue given to the builder is what it lists: nothing is listed from elsewhere.
    const built = buildOpenApiDocument({ errors: [{ status: 418, reason: 'teapot' }] });
    expect(built.components.schemas.ErrorBody.properties.reason.anyOf[0].enum).toEqual(['teapot']);
  });

  test('is OpenAPI 3.1 with the JSON Schema 2020-12 dialect, versioned as the release', () => {
    expect(document.openapi).toMatch(/^3\.1\.\d+$/);
    expect(document.jsonSchemaDialect).toBe('https://json-schema.org/draft/2020-12/schema');
    const serverPackage = JSON.parse(
      readFileSync(join(REPO_ROOT, 'packages', 'server', 'package.json'), 'utf8')
    ) as { version: string };
    expect(document.info).toMatchObject({
      title: expect.any(String),
      version: serverPackage.version
    });
    expect(typeof document.info.description).toBe('string');
  });

  test('every $ref resolves inside the document', () => {
    const broken: string[] = [];
    let count = 0;
    for (const [pointer, node] of walk(document)) {
      if (node && typeof node === 'object' && typeof node.$ref === 'string') {
        count++;
        if (resolvePointer(node.$ref) === undefined) broken.push(`${pointer}: ${node.$ref}`);
      }
    }
    expect(count).toBeGreaterThan(20);
    expect(broken).toEqual([]);
  });

  test('every operation has an id, a summary, known tags and documented statuses', () => {
    const tags = new Set((document.tags as Json[]).map(tag => tag.name));
    const ids = new Set<string>();
    for (const [path, method, operation] of operations()) {
      const where = `${method.toUpperCase()} ${path}`;
      expect({ where, id: typeof operation.operationId }).toEqual({ where, id: 'string' });
      expect(ids.has(operation.operationId)).toBe(false);
      ids.add(operation.operationId);
      expect({ where, summary: typeof operation.summary }).toEqual({ where, summary: 'string' });
      for (const tag of operation.tags ?? [])
        expect({ where, tag: tags.has(tag) }).toEqual({ where, tag: true });
      const statuses = Object.keys(operation.responses ?? {});
      expect({ where, statuses: statuses.length > 0 }).toEqual({ where, statuses: true });
      for (const status of statuses) {
        expect({ where, status }).toEqual({ where, status: expect.stringMatching(/^[1-5]\d\d$/) });
        const response = deref(operation.responses[status]);
        expect({ where, status, description: typeof response?.description }).toEqual({
          where,
          status,
          description: 'string'
        });
        for (const [mediaType, media] of Object.entries<Json>(response.content ?? {})) {
          expect({ where, status, mediaType, schema: media.schema !== undefined }).toEqual({
            where,
            status,
            mediaType,
            schema: true
          });
        }
      }
    }
    expect(ids.size).toBe(operations().length);
  });

  test('path parameters are exactly the template’s, and required', () => {
    for (const [path, method, operation] of operations()) {
      const item = document.paths[path];
      const declared = [...(item.parameters ?? []), ...(operation.parameters ?? [])]
        .map(deref)
        .filter(parameter => parameter.in === 'path');
      const inTemplate = [...path.matchAll(/\{([^}]+)\}/g)].map(match => match[1]);
      expect({ path, method, names: declared.map(parameter => parameter.name).sort() }).toEqual({
        path,
        method,
        names: inTemplate.sort()
      });
      for (const parameter of declared) expect(parameter.required).toBe(true);
    }
  });

  test('every security requirement names a defined scheme', () => {
    const schemes = new Set(Object.keys(document.components.securitySchemes));
    expect([...schemes].sort()).toEqual(
      ['loginCookie', 'token', 'tokenQuery', 'xsrfHeader', 'xsrfQuery'].sort()
    );
    const requirements: Json[] = [
      ...document.security,
      ...operations().flatMap(([, , operation]) => operation.security ?? [])
    ];
    for (const requirement of requirements) {
      for (const name of Object.keys(requirement)) expect(schemes.has(name)).toBe(true);
    }
  });

  test('writes accept a login cookie only together with an XSRF token', () => {
    for (const [path, method, operation] of operations()) {
      if (method === 'get' || method === 'head') continue;
      const requirements: Json[] = operation.security ?? document.security;
      for (const requirement of requirements) {
        if (!('loginCookie' in requirement)) continue;
        expect({
          path,
          method,
          xsrf: 'xsrfHeader' in requirement || 'xsrfQuery' in requirement
        }).toEqual({ path, method, xsrf: true });
      }
    }
  });

  test('every schema (responses, request bodies, parameters, headers) compiles with ajv 2020', () => {
    const ajv = createAjv();
    let compiled = 0;
    const compile = (where: string, schema: Json): void => {
      try {
        ajv.compile(rewriteRefs(schema));
      } catch (error) {
        throw new Error(`${where}: ${(error as Error).message}`);
      }
      compiled++;
    };
    for (const [path, method, operation] of operations()) {
      const where = `${method.toUpperCase()} ${path}`;
      for (const [status, reference] of Object.entries<Json>(operation.responses)) {
        const response = deref(reference);
        for (const [mediaType, media] of Object.entries<Json>(response.content ?? {})) {
          compile(`${where} ${status} ${mediaType}`, media.schema);
        }
        for (const [name, header] of Object.entries<Json>(response.headers ?? {})) {
          compile(`${where} ${status} header ${name}`, deref(header).schema);
        }
      }
      const body = deref(operation.requestBody);
      for (const [mediaType, media] of Object.entries<Json>(body?.content ?? {})) {
        compile(`${where} request ${mediaType}`, media.schema);
      }
      for (const parameter of [
        ...(document.paths[path].parameters ?? []),
        ...(operation.parameters ?? [])
      ]) {
        compile(`${where} parameter ${deref(parameter).name}`, deref(parameter).schema);
      }
    }
    expect(compiled).toBeGreaterThan(60);
  });

  test('a compiled response schema accepts a valid answer and refuses the rest', () => {
    const ajv = createAjv();
    const errorBody = ajv.compile(rewriteRefs({ $ref: '#/components/schemas/ErrorBody' }));
    expect(errorBody({ message: 'm', reason: null })).toBe(true);
    expect(errorBody({ message: 'm', reason: 'r' })).toBe(true);
    expect(errorBody({ message: 'm' })).toBe(false);
    expect(errorBody({ message: 1, reason: null })).toBe(false);
    const result = ajv.compile(rewriteRefs({ $ref: '#/components/schemas/ObjectCloneResult' }));
    const model = {
      name: 'a.ipynb',
      path: 'a.ipynb',
      type: 'notebook',
      writable: true,
      created: '2026-01-02T03:04:05.123456Z',
      last_modified: '2026-01-02T03:04:05Z',
      mimetype: null,
      content: null,
      format: null,
      size: 12,
      hash: null,
      hash_algorithm: null
    };
    const source = {
      object_bucket: 'b',
      object_key: 'k/a.ipynb',
      object_version_id: null,
      object_path: 's3://b/k/a.ipynb'
    };
    expect(result({ ...model, ...source })).toBe(true);
    expect(result(model)).toBe(false);
    expect(result({ ...model, ...source, created: 'yesterday' })).toBe(false);
    expect(result({ ...model, ...source, type: 'folder' })).toBe(false);
  });

  test('every error of the JSON API is {"message", "reason"}', () => {
    for (const [path, method, operation] of operations()) {
      if (!path.startsWith('/api/')) continue;
      for (const [status, reference] of Object.entries<Json>(operation.responses)) {
        if (Number(status) < 400) continue;
        const content = deref(reference).content;
        expect({ path, method, status, content }).toEqual({
          path,
          method,
          status,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } }
        });
      }
    }
  });

  test('landing pages answer HTML, and 302 with a Location, for every documented status', () => {
    for (const path of ['/store/clone', '/store/fs-clone']) {
      const operation = document.paths[path].get;
      const statuses = Object.keys(operation.responses).sort();
      expect(statuses).toEqual(
        path === '/store/clone'
          ? ['200', '302', '400', '403', '503']
          : ['200', '302', '400', '403', '404', '503']
      );
      for (const status of statuses) {
        const response = deref(operation.responses[status]);
        if (status === '302') {
          expect(deref(response.headers.Location).required).toBe(true);
        } else {
          expect(Object.keys(response.content)).toEqual(['text/html']);
        }
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------
// The documented routes against the router
// ---------------------------------------------------------------------------------------------

/** A regular expression for a documented path: `{path}` may be empty or hold slashes. */
function templatePattern(template: string): RegExp {
  const escaped = template
    .split(/\{[^}]+\}/)
    .map(part => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  if (escaped.length === 1) return new RegExp(`^${escaped[0]}/?$`);
  return new RegExp(`^${escaped[0].replace(/\/$/, '')}(?:/.*)?$`);
}

/** Requests that might reach a route: each documented one, and near misses that must not. */
const CANDIDATE_PATHS = [
  '/api/store',
  '/api/store/',
  '/api/store/versions/nb.ipynb',
  '/api/store/versions/team/nb.ipynb',
  '/api/store/versions',
  '/api/store/publish/nb.ipynb',
  '/api/store/publish/team/nb.ipynb',
  '/api/store/publish',
  '/api/store/clone',
  '/api/store/clone/',
  '/api/store/fs-clone',
  '/api/store/fs-clone/',
  '/api/store/diff',
  '/api/store/diff/',
  '/api/store/diff/nb.ipynb',
  '/api/store/diff/team/nb.ipynb',
  '/api/store/named/nb.ipynb',
  '/api/store/named/team/nb.ipynb',
  '/api/store/named',
  '/api/store/retention',
  '/api/store/retention/',
  '/api/store/deleted',
  '/api/store/deleted/',
  '/api/store/restore',
  '/api/store/restore/',
  // Not routes: the pre-2.3 publish route, paths below the clone routes, other guesses.
  '/api/store/published/nb.ipynb',
  '/api/store/clone/nb.ipynb',
  '/api/store/fs-clone/nb.ipynb',
  '/api/store/status',
  '/api/store/features',
  '/api/store/version',
  '/api/store/objects/nb.ipynb',
  '/api/store/retention/nb.ipynb',
  '/api/store/deleted/nb.ipynb',
  '/api/store/restore/nb.ipynb'
];

/** Methods a JSON route may be documented for; HEAD follows GET, OPTIONS is not an API call. */
const PROBED_METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'PATCH'];

describe('the documented JSON routes', () => {
  let upstream: FakeUpstream;
  let gateway: Gateway;
  let archiving: Archiving;
  let dir: string;
  let origin: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'openapi-spec-'));
    upstream = new FakeUpstream();
    const address = await upstream.listen({ port: 0 });
    const log = createLogger({ level: 'silent' });
    gateway = new Gateway({
      rootDir: await mkdtemp(join(dir, 'root-')),
      jupyterDataDir: join(dir, 'data'),
      upstream: address,
      log
    });
    archiving = await Archiving.start(
      StoreSettingsSchema.parse({
        local_store_dir: join(dir, 'objects'),
        journal_dir: join(dir, 'journal')
      }),
      gateway.manager,
      log
    );
    // As startGateway mounts it.
    mountStoreApi(gateway, { archiving, log, publishEnabled: () => false });
    const { port } = await gateway.listen(0, '127.0.0.1');
    origin = `http://127.0.0.1:${port}`;
  });

  afterAll(async () => {
    await gateway?.close({ drainTimeoutMs: 1000 });
    await archiving?.close(1000);
    await upstream?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Is this request answered by a route, rather than by the gateway's "no such route"? */
  async function served(method: string, path: string): Promise<boolean> {
    const response = await fetch(`${origin}${path}`, {
      method,
      headers: { Authorization: 'token good', 'Content-Type': 'application/json' },
      body: method === 'GET' ? undefined : '',
      signal: AbortSignal.timeout(30_000)
    });
    const text = await response.text();
    if (response.status !== 404) return true;
    return (JSON.parse(text) as { reason: unknown }).reason !== 'no such route';
  }

  test('are exactly the methods and paths the store API router serves', async () => {
    const templates = Object.keys(document.paths).filter(path => path.startsWith('/api/'));
    const documented = new Set<string>();
    for (const template of templates) {
      for (const method of PROBED_METHODS) {
        if (document.paths[template][method.toLowerCase()]) documented.add(`${method} ${template}`);
      }
    }
    const found = new Set<string>();
    for (const path of CANDIDATE_PATHS) {
      // A template without parameters first: `/api/store/diff` is not `/api/store/diff/{path}`.
      const template =
        templates.find(candidate => candidate === path.replace(/\/$/, '')) ??
        templates.find(candidate => templatePattern(candidate).test(path)) ??
        path;
      for (const method of PROBED_METHODS) {
        if (await served(method, path)) found.add(`${method} ${template}`);
      }
    }
    expect([...found].sort()).toEqual([...documented].sort());
  });

  test('every documented path is probed', () => {
    for (const template of Object.keys(document.paths).filter(path => path.startsWith('/api/'))) {
      expect({
        template,
        probed: CANDIDATE_PATHS.some(path => templatePattern(template).test(path))
      }).toEqual({ template, probed: true });
    }
  });
});
