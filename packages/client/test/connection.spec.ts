import { createServer, type Server } from 'node:http';
import { z } from 'zod';
import { encodeApiPath, StoreConnection } from '../src/connection';
import { NetworkError, StoreError } from '../src/errors';
import { fakeFetch } from './fakes';

const Answer = z.object({ ok: z.boolean() });

describe('StoreConnection', () => {
  describe('#request()', () => {
    test('sends the token, and on reads no XSRF token', async () => {
      const { fetch, sent } = fakeFetch({
        'GET /base/api/store': { status: 200, body: { ok: true } }
      });
      const connection = new StoreConnection({
        url: 'http://127.0.0.1:1/base/',
        token: 't',
        fetch
      });
      expect(await connection.request('GET', 'api/store', { expect: 200, schema: Answer })).toEqual(
        {
          ok: true
        }
      );
      expect(sent[0].headers.authorization).toBe('token t');
      expect(sent[0].headers.cookie).toBeUndefined();
      expect(sent[0].headers['x-xsrftoken']).toBeUndefined();
    });

    test('on writes, the same XSRF token as cookie and header, every time', async () => {
      const { fetch, sent } = fakeFetch({ 'POST /api/x': { status: 200, body: { ok: true } } });
      const connection = new StoreConnection({ url: 'http://127.0.0.1:1', token: '', fetch });
      await connection.request('POST', 'api/x', { body: { a: 1 }, expect: 200, schema: Answer });
      await connection.request('POST', 'api/x', { body: { a: 2 }, expect: 200, schema: Answer });
      const token = sent[0].headers['x-xsrftoken'];
      expect(token).toMatch(/^[0-9a-f]{32}$/);
      expect(sent[0].headers.cookie).toBe(`_xsrf=${token}`);
      expect(sent[1].headers['x-xsrftoken']).toBe(token);
      expect(sent[0].headers['content-type']).toBe('application/json');
      expect(sent[1].body).toEqual({ a: 2 });
    });

    test('no Authorization header for a server without a token', async () => {
      const { fetch, sent } = fakeFetch({ 'GET /api/x': { status: 200, body: { ok: true } } });
      await new StoreConnection({ url: 'http://127.0.0.1:1/', token: '', fetch }).request(
        'GET',
        'api/x',
        { expect: 200, schema: Answer }
      );
      expect(sent[0].headers.authorization).toBeUndefined();
    });

    test('another status is a StoreError with the server’s message and reason', async () => {
      const { fetch } = fakeFetch({
        'GET /api/x': { status: 403, body: { message: 'Publishing is disabled', reason: 'off' } }
      });
      const connection = new StoreConnection({ url: 'http://127.0.0.1:1/', token: 't', fetch });
      const error = await connection
        .request('GET', 'api/x', { expect: 200, schema: Answer })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreError);
      expect(error).toMatchObject({
        status: 403,
        message: 'Publishing is disabled',
        reason: 'off',
        url: 'http://127.0.0.1:1/api/x'
      });
    });

    test('an error without Jupyter’s body still says what came back', async () => {
      const { fetch } = fakeFetch({
        'GET /api/x': { status: 502, text: '<html>Bad gateway</html>' }
      });
      const error = await new StoreConnection({ url: 'http://127.0.0.1:1/', token: '', fetch })
        .request('GET', 'api/x', { expect: 200, schema: Answer })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ status: 502, reason: null });
      expect((error as Error).message).toMatch(/http:\/\/127\.0\.0\.1:1\/api\/x answered 502/);
    });

    test('the expected status with an unexpected body is a StoreError naming the field', async () => {
      const { fetch } = fakeFetch({ 'GET /api/x': { status: 200, body: { ok: 'yes' } } });
      const error = await new StoreConnection({ url: 'http://127.0.0.1:1/', token: '', fetch })
        .request('GET', 'api/x', { expect: 200, schema: Answer })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ status: 200, reason: 'invalid response' });
      expect((error as Error).message).toMatch(/unexpected body \(ok: /);
    });

    describe('without an answer', () => {
      let server: Server;
      let port: number;

      beforeAll(async () => {
        // Accepts connections and never answers.
        server = createServer(() => undefined);
        await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
        port = (server.address() as { port: number }).port;
      });

      afterAll(async () => {
        server.closeAllConnections();
        await new Promise(resolve => server.close(resolve));
      });

      test('a refused connection is a NetworkError', async () => {
        const closed = createServer();
        await new Promise<void>(resolve => closed.listen(0, '127.0.0.1', resolve));
        const closedPort = (closed.address() as { port: number }).port;
        await new Promise(resolve => closed.close(resolve));
        const error = await new StoreConnection({
          url: `http://127.0.0.1:${closedPort}/`,
          token: ''
        })
          .request('GET', 'api/store', { expect: 200, schema: Answer })
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(NetworkError);
        expect((error as Error).message).toMatch(/Cannot reach the server .*ECONNREFUSED/);
      });

      test('a server that does not answer in time is a NetworkError', async () => {
        const error = await new StoreConnection({
          url: `http://127.0.0.1:${port}/`,
          token: '',
          timeoutMs: 300
        })
          .request('GET', 'api/store', { expect: 200, schema: Answer })
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(NetworkError);
        expect((error as Error).message).toMatch(/no answer within 0.3 s/);
      });
    });
  });
});

describe('#encodeApiPath()', () => {
  test('encodes each segment and keeps the slashes', () => {
    expect(encodeApiPath('a b/c#d?.ipynb')).toBe('a%20b/c%23d%3F.ipynb');
    expect(encodeApiPath('ünï/x.ipynb')).toBe('%C3%BCn%C3%AF/x.ipynb');
  });
});
