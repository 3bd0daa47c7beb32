/**
 * The error catalogue and the error handler: one status per reason, every reason documented in
 * the OpenAPI document, and system and object-store errors answered by their tables without
 * leaking a stack or a path from outside the root.
 */
import { readFileSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Request, Response } from 'express';
import { parse } from 'yaml';
import { HttpError } from '../../src/errors';
import {
  errorCatalogue,
  httpErrors,
  isCatalogued,
  listErrors,
  type ErrorName
} from '../../src/http/errorCatalogue';
import { errnoError, errnoTable, errorHandler, objectStoreStatus } from '../../src/http/errors';
import { ObjectStoreError, type ObjectStoreErrorKind } from '../../src/storage/objectStore';

const OPENAPI = path.join(__dirname, '../../../../docs/store-api.openapi.yaml');

/** Where a system error claims to have failed: outside any root, never to be shown. */
const OUTSIDE = '/srv/outside-root/secret.ipynb';

interface IAnswer {
  status: number;
  body: { message: string; reason: string | null };
  logged: unknown[];
}

/** What the error handler answers for an error thrown by a route. */
function answer(error: unknown): IAnswer {
  const logged: unknown[] = [];
  let status = 0;
  let text = '';
  const res = {
    headersSent: false,
    status(code: number) {
      status = code;
      return res;
    },
    setHeader: () => res,
    end(chunk: string) {
      text = chunk;
      return res;
    }
  };
  errorHandler((_message, failure) => logged.push(failure))(
    error,
    {} as Request,
    res as unknown as Response,
    () => undefined
  );
  return { status, body: JSON.parse(text) as IAnswer['body'], logged };
}

/** A Node system error as `fs` throws it, its message and stack naming the OS path. */
function systemError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: failed, open '${OUTSIDE}'`), {
    code,
    errno: -1,
    syscall: 'open',
    path: OUTSIDE
  });
}

function expectNoLeak(body: IAnswer['body']): void {
  expect(body.message).not.toContain(OUTSIDE);
  expect(body.message).not.toContain('outside-root');
  expect(body.message).not.toMatch(/\n\s+at /);
}

describe('the catalogue', () => {
  test('each reason has one status, and each entry one name', () => {
    const entries = listErrors();
    expect(entries.map(entry => entry.name)).toEqual(Object.keys(errorCatalogue));
    const statuses = new Map<string, number[]>();
    for (const { reason, status } of entries) {
      statuses.set(reason, [...(statuses.get(reason) ?? []), status]);
    }
    const repeated = [...statuses].filter(([, found]) => found.length > 1);
    expect(repeated).toEqual([]);
    for (const { status } of entries) {
      expect(status >= 400 && status < 600).toBe(true);
    }
  });

  test('every reason appears in the OpenAPI document', () => {
    const document: unknown = parse(readFileSync(OPENAPI, 'utf8'));
    const strings: string[] = [];
    const walk = (value: unknown): void => {
      if (typeof value === 'string') strings.push(value.replace(/\s+/g, ' '));
      else if (Array.isArray(value)) value.forEach(walk);
      else if (typeof value === 'object' && value !== null) Object.values(value).forEach(walk);
    };
    walk(document);
    const missing = listErrors()
      .map(entry => entry.reason)
      .filter(reason => !strings.some(text => text === reason || text.includes(`\`${reason}\``)));
    expect(missing).toEqual([]);
  });

  test('a named constructor gives its entry, with the message and cause of the call', () => {
    const cause = new Error('inner');
    const error = httpErrors.notFound('No such directory: a/b', { cause });
    expect(error).toBeInstanceOf(HttpError);
    expect(error).toMatchObject({
      status: 404,
      reason: 'not found',
      message: 'No such directory: a/b'
    });
    expect(error.cause).toBe(cause);
    expect(isCatalogued(error, 'notFound')).toBe(true);
    expect(isCatalogued(error, 'badPath')).toBe(false);
    expect(isCatalogued(new Error('not found'), 'notFound')).toBe(false);
  });

  test.each(listErrors().map(entry => [entry.name, entry] as const))(
    '%s is answered with its status and reason',
    (name, entry) => {
      expect(answer(httpErrors[name as ErrorName]('Told by the route'))).toEqual({
        status: entry.status,
        body: { message: 'Told by the route', reason: entry.reason },
        logged: []
      });
    }
  );
});

describe('the errno table', () => {
  test.each(Object.keys(errnoTable))('%s is answered by its entry, naming no OS path', code => {
    const entry = errorCatalogue[errnoTable[code].error];
    const { status, body, logged } = answer(systemError(code));
    expect(status).toBe(entry.status);
    expect(body.reason).toBe(entry.reason);
    expect(body.message).not.toBe('');
    expectNoLeak(body);
    expect(logged).toEqual([]);
  });

  test('a real failure of fs is answered without its path', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'error-catalogue-'));
    try {
      const failure = await fs.readFile(path.join(dir, 'missing.ipynb')).catch(error => error);
      const { status, body } = answer(failure);
      expect(status).toBe(404);
      expect(body.reason).toBe('not found');
      expect(body.message).not.toContain(dir);
      expect(body.message).not.toMatch(/\n\s+at /);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  test('a call site names the API path and the action', () => {
    expect(errnoError(systemError('ENOSPC'), 'a/b.ipynb', 'saving')).toMatchObject({
      status: 507,
      reason: 'no space',
      message: 'No space left on the device while saving a/b.ipynb'
    });
    expect(errnoError(systemError('EACCES'), 'a/b.ipynb', 'reading')).toMatchObject({
      status: 403,
      reason: 'permission denied',
      message: 'Permission denied: a/b.ipynb'
    });
    expect(errnoError(systemError('EIO'), 'a/b.ipynb', 'reading')).toBeUndefined();
    expect(errnoError(new Error('no code'))).toBeUndefined();
  });

  test('a code missing from the table is an unhandled 500, logged, and says nothing more', () => {
    const failure = systemError('EIO');
    const { status, body, logged } = answer(failure);
    expect({ status, body }).toEqual({
      status: 500,
      body: { message: 'Unhandled error', reason: null }
    });
    expect(logged).toEqual([failure]);
  });
});

describe('the object-store mapping', () => {
  const kinds = Object.keys(objectStoreStatus) as ObjectStoreErrorKind[];

  test.each(kinds)('%s is answered with its status and the store code as reason', kind => {
    const error = new ObjectStoreError(
      kind,
      's3://bucket/key does not exist (SomeCode)',
      'SomeCode'
    );
    expect(answer(error)).toEqual({
      status: objectStoreStatus[kind],
      body: { message: 's3://bucket/key does not exist (SomeCode)', reason: 'SomeCode' },
      logged: []
    });
  });

  test('the statuses are those the README documents', () => {
    expect(objectStoreStatus).toEqual({
      'not-found': 404,
      'access-denied': 403,
      'bad-request': 400,
      'too-large': 413,
      unavailable: 502,
      'not-supported': 501
    });
  });
});

describe('body-parser errors', () => {
  test('keep their status and type, with a fixed message', () => {
    const tooLarge = Object.assign(new Error(`request entity too large: ${OUTSIDE}`), {
      status: 413,
      type: 'entity.too.large'
    });
    expect(answer(tooLarge)).toEqual({
      status: 413,
      body: { message: 'The request body is too large', reason: 'entity.too.large' },
      logged: []
    });
    const other = Object.assign(new Error('odd'), { status: 400 });
    expect(answer(other).body).toEqual({ message: 'Malformed request', reason: 'bad request' });
  });
});
