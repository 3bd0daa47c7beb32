/**
 * The gateway's authentication and authorization rules against a stand-in for Jupyter's
 * `api/me`: when a request counts as token-authenticated (Jupyter's `get_user_token`: the server
 * requires a token and this is it), what the upstream's `Authorizer` allows, that identity and
 * permissions come from one cached question per credential, and the Express guards built on them.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { HttpError } from '../../src/errors';
import {
  ASKED_PERMISSIONS,
  Authenticator,
  DEFAULT_REQUEST_CHECKS,
  isAuthorized,
  requireJupyterAuth,
  requirePermission,
  type IAuthentication
} from '../../src/gateway/auth';
import { createLogger } from '../../src/gateway/logger';
import { errorHandler } from '../../src/http/errors';
import { FAKE_IDENTITY, FakeUpstream } from '../support/fakeUpstream';

const log = createLogger({ level: 'silent' });
const HOST = '127.0.0.1:8888';

let upstream: FakeUpstream;

beforeEach(async () => {
  upstream = new FakeUpstream();
  await upstream.listen({ port: 0 });
});

afterEach(async () => {
  await upstream.close();
});

function authenticator(ttlMs?: number): Authenticator {
  return new Authenticator({ upstream: upstream.address!, baseUrl: '/', ttlMs, log });
}

/** A request as the gateway receives it: only the URL and headers matter. */
function request(url: string, headers: http.IncomingHttpHeaders = {}): http.IncomingMessage {
  return { url, headers: { host: HOST, ...headers } } as unknown as http.IncomingMessage;
}

describe('token-authenticated, as Jupyter decides it', () => {
  test('a server that requires a token: its token, in the query or the header, is one', async () => {
    const auth = authenticator();
    for (const asked of [
      request('/api/contents?token=good'),
      request('/api/contents', { authorization: 'token good' }),
      request('/api/contents', { authorization: 'Bearer good' })
    ]) {
      expect(await auth.authenticate(asked)).toEqual({
        identity: FAKE_IDENTITY,
        tokenAuthenticated: true,
        permissions: { contents: ['read', 'write'] }
      });
    }
  });

  test('a wrong token is not one; the cookie still authenticates the request', async () => {
    const auth = authenticator();
    expect(await auth.authenticate(request('/api/contents?token=bad'))).toBeNull();
    expect(
      await auth.authenticate(request('/api/contents?token=bad', { cookie: 'login=ok' }))
    ).toMatchObject({ identity: FAKE_IDENTITY, tokenAuthenticated: false });
    expect(await auth.authenticate(request('/api/contents', { cookie: 'login=ok' }))).toMatchObject(
      { tokenAuthenticated: false }
    );
  });

  test('a server without a token (it answers anonymous callers): no token counts', async () => {
    upstream.anonymous = true;
    const auth = authenticator();
    for (const asked of [
      request('/api/contents/?token=x'),
      request('/api/contents/', { authorization: 'token x' }),
      request('/api/contents/?token=good'),
      request('/api/contents/', { authorization: 'token good', cookie: 'login=ok' })
    ]) {
      expect(await auth.authenticate(asked)).toEqual({
        identity: FAKE_IDENTITY,
        tokenAuthenticated: false,
        permissions: { contents: ['read', 'write'] }
      });
    }
  });

  test('one question per credential and Host gives identity and permissions, cached', async () => {
    const auth = authenticator();
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        auth.authenticate(request('/', { authorization: 'token good' }))
      )
    );
    expect(results.every(result => result?.tokenAuthenticated)).toBe(true);
    // The token's question, and the anonymous one that shows the server requires a token.
    expect(upstream.meHits).toBe(2);
    for (let i = 0; i < 5; i++) {
      expect(await auth.authenticate(request('/', { cookie: 'login=ok' }))).not.toBeNull();
      expect(await auth.authenticate(request('/?token=good'))).not.toBeNull();
    }
    expect(upstream.meHits).toBe(3);
    // The anonymous answer is per Host, as Jupyter's answers may be.
    await auth.authenticate(request('/', { authorization: 'token good', host: 'localhost:1' }));
    expect(upstream.meHits).toBe(5);
  });

  test('#prepare() asks the upstream once and keeps nothing a request could use', async () => {
    const auth = authenticator();
    await auth.prepare('good');
    expect(upstream.meHits).toBe(1);
    await auth.prepare(null);
    expect(upstream.meHits).toBe(2);
    // Nothing was cached: the first request asks its own two questions.
    expect(
      (await auth.authenticate(request('/', { authorization: 'token good' })))?.identity
    ).toEqual(FAKE_IDENTITY);
    expect(upstream.meHits).toBe(4);
  });

  test('#prepare() never fails, even when the upstream cannot be reached', async () => {
    const auth = authenticator();
    await upstream.close();
    await expect(auth.prepare('good')).resolves.toBeUndefined();
    await upstream.listen({ port: 0 });
  });

  test('a changed answer is seen once the cached one has expired', async () => {
    const auth = authenticator(50);
    const asked = request('/', { authorization: 'token good' });
    expect((await auth.authenticate(asked))?.tokenAuthenticated).toBe(true);
    upstream.anonymous = true;
    // Still cached: the upstream is not asked again yet.
    expect((await auth.authenticate(asked))?.tokenAuthenticated).toBe(true);
    await new Promise(resolve => setTimeout(resolve, 80));
    expect((await auth.authenticate(asked))?.tokenAuthenticated).toBe(false);
  });
});

describe("permissions from Jupyter's Authorizer", () => {
  test('only the actions the authorizer allows are granted', async () => {
    upstream.authorize = (resource, action) => resource === 'contents' && action === 'read';
    const auth = authenticator();
    const result = await auth.authenticate(request('/', { authorization: 'token good' }));
    expect(result?.permissions).toEqual({ contents: ['read'] });
    expect(isAuthorized(result!, 'contents', 'read')).toBe(true);
    expect(isAuthorized(result!, 'contents', 'write')).toBe(false);
    expect(isAuthorized(undefined, 'contents', 'read')).toBe(false);
  });

  test('an answer without usable permissions grants nothing; extra ones are ignored', async () => {
    const answers: unknown[] = [];
    const server = http.createServer((req, res) => {
      if (!req.headers.authorization) {
        res.writeHead(403).end('{}');
        return;
      }
      answers.push(new URL(req.url!, 'http://x.invalid').searchParams.get('permissions'));
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(bodies[req.headers.authorization]));
    });
    const bodies: Record<string, unknown> = {
      'token a': { identity: { username: 'a' } },
      'token b': { identity: { username: 'b' }, permissions: { contents: 'write' } },
      'token c': {
        identity: { username: 'c' },
        permissions: { contents: ['write', 'execute'], kernels: ['execute'], updatable_fields: [] }
      },
      'token d': { identity: { username: 'd' }, permissions: null }
    };
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
    try {
      const auth = new Authenticator({
        upstream: { kind: 'tcp', host: '127.0.0.1', port: (server.address() as AddressInfo).port },
        baseUrl: '/',
        log
      });
      const permissionsOf = async (token: string) =>
        (await auth.authenticate(request('/', { authorization: `token ${token}` })))?.permissions;
      expect(await permissionsOf('a')).toEqual({});
      expect(await permissionsOf('b')).toEqual({});
      expect(await permissionsOf('c')).toEqual({ contents: ['write'] });
      expect(await permissionsOf('d')).toEqual({});
      // Every question asked for the permissions the routes check.
      expect(answers).toEqual(new Array(4).fill(JSON.stringify(ASKED_PERMISSIONS)));
    } finally {
      await new Promise<void>(resolve => server.close(() => resolve()));
    }
  });
});

describe('guards', () => {
  function withPermissions(actions: string[], method = 'GET'): express.Request {
    const jupyterAuth: IAuthentication = {
      identity: FAKE_IDENTITY,
      tokenAuthenticated: true,
      permissions: { contents: actions as ('read' | 'write')[] }
    };
    return { method, jupyterAuth } as unknown as express.Request;
  }

  /** What a guard passes to `next`: undefined to go on, else the error. */
  function run(guard: express.RequestHandler, req: express.Request): unknown {
    let passed: unknown = 'not called';
    void guard(req, {} as express.Response, (error?: unknown) => (passed = error));
    return passed;
  }

  test('requirePermission refuses with 403 "not authorized" unless the action is granted', () => {
    const write = requirePermission('contents', 'write');
    expect(run(write, withPermissions(['read', 'write']))).toBeUndefined();
    const refused = run(write, withPermissions(['read']));
    expect(refused).toBeInstanceOf(HttpError);
    expect(refused).toMatchObject({
      status: 403,
      reason: 'not authorized',
      message: 'User is not authorized to write on resource: contents.'
    });
    expect(run(write, { method: 'GET' } as express.Request)).toMatchObject({ status: 403 });
  });

  test('over HTTP: cross-origin writes with a token the server does not require are refused', async () => {
    const app = express();
    const auth = authenticator();
    app.use(
      requireJupyterAuth(auth, DEFAULT_REQUEST_CHECKS),
      requirePermission('contents', 'write'),
      (_req, res) => void res.status(201).json({ done: true })
    );
    app.use(errorHandler());
    const server = app.listen(0, '127.0.0.1');
    await new Promise<void>(resolve => server.once('listening', resolve));
    const port = (server.address() as AddressInfo).port;
    const post = async (query: string) => {
      const response = await fetch(`http://127.0.0.1:${port}/api/contents/${query}`, {
        method: 'POST',
        headers: { Origin: 'http://evil.example', 'Content-Type': 'text/plain' },
        body: '{}'
      });
      return { status: response.status, body: (await response.json()) as unknown };
    };
    try {
      // The server requires a token: its token lifts the Origin check, another does not help.
      expect(await post('?token=good')).toEqual({ status: 201, body: { done: true } });
      expect((await post('?token=x')).status).toBe(403);
      // The server requires none: any token is ignored, the Origin check applies (404).
      upstream.anonymous = true;
      auth.clear();
      for (const query of ['?token=x', '?token=good']) {
        expect(await post(query)).toEqual({
          status: 404,
          body: { message: 'Not Found', reason: 'cross-origin request blocked' }
        });
      }
      // An authorizer that allows only reading: the write is refused although authenticated.
      upstream.anonymous = false;
      upstream.authorize = (_resource, action) => action === 'read';
      auth.clear();
      expect(await post('?token=good')).toEqual({
        status: 403,
        body: {
          message: 'User is not authorized to write on resource: contents.',
          reason: 'not authorized'
        }
      });
    } finally {
      await new Promise<void>(resolve => server.close(() => resolve()));
    }
  });
});
