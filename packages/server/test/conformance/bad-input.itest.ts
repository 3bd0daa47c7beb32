/**
 * Differential conformance: bad input. Malformed JSON, bodies that are not objects, wrong field
 * types, missing fields, unknown `type` values, overlong names, invalid UTF-8 and NUL bytes in
 * paths, encoded traversal, odd query strings, pathological JSON.
 *
 * Where Jupyter answers a 4xx, we must answer the same status; where Jupyter fails with a 500, we
 * must answer a 4xx (INTENTIONAL_DEVIATIONS "jupyter-5xx"); our errors are always JSON
 * {"message", "reason"}, never a stack trace; nothing is written outside the root.
 */
import { conformanceSuite, contentsPath, patch, post, put, type Req } from '../support/compare';

const env = conformanceSuite();

const raw = (
  method: Req['method'],
  path: string,
  body: string | Buffer,
  contentType = 'application/json'
): Req => ({
  method,
  path,
  body,
  headers: { 'Content-Type': contentType }
});
const text = (content: unknown): Record<string, unknown> => ({
  type: 'file',
  format: 'text',
  content
});
const emptyNotebook = { cells: [], metadata: {}, nbformat: 4, nbformat_minor: 5 };

/**
 * Send each case to both servers (the harness compares the answers and checks ours), then check
 * Jupyter's statuses against the documented ones, all at once.
 */
async function run(cases: Array<[string, Req, number]>): Promise<void> {
  const seen: Array<[string, number]> = [];
  for (const [label, req] of cases) seen.push([label, (await env.both(req)).jupyter.status]);
  expect(seen).toEqual(cases.map(([label, , status]) => [label, status]));
}

describe('bodies', () => {
  test('malformed JSON and bodies that are not objects', async () => {
    let n = 0;
    /** A fresh target per case, so that one case's file does not change the next one's answer. */
    const p = (): string => contentsPath(`bad${++n}.txt`);
    await run([
      ['PUT {bad', raw('PUT', p(), '{bad'), 400],
      [
        'PUT trailing comma',
        raw('PUT', p(), '{"type": "file", "format": "text", "content": "x",}'),
        400
      ],
      ['PUT truncated', raw('PUT', p(), '{"type": "file", "format": "te'), 400],
      [
        'PUT invalid UTF-8',
        raw('PUT', p(), Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d])),
        500
      ],
      [
        'PUT BOM',
        raw(
          'PUT',
          p(),
          Buffer.concat([
            Buffer.from([0xef, 0xbb, 0xbf]),
            Buffer.from('{"type":"file","format":"text","content":"x"}')
          ])
        ),
        400
      ],
      ['PUT []', raw('PUT', p(), '[]'), 404],
      ['PUT [1]', raw('PUT', p(), '[1]'), 500],
      ['PUT "str"', raw('PUT', p(), '"str"'), 500],
      ['PUT 5', raw('PUT', p(), '5'), 500],
      ['PUT true', raw('PUT', p(), 'true'), 500],
      ['PUT null', raw('PUT', p(), 'null'), 404],
      ['POST {bad', raw('POST', contentsPath('foo'), '{bad'), 400],
      ['POST [1]', raw('POST', contentsPath('foo'), '[1]'), 500],
      ['POST "x"', raw('POST', contentsPath('foo'), '"x"'), 500],
      ['PATCH {bad', raw('PATCH', contentsPath('foo/a.txt'), '{bad'), 400],
      ['PATCH [1]', raw('PATCH', contentsPath('foo/a.txt'), '[1]'), 500],
      ['PATCH null', raw('PATCH', contentsPath('foo/a.txt'), 'null'), 400],
      [
        'PUT text/plain content type',
        raw('PUT', p(), '{"type":"file","format":"text","content":"x"}', 'text/plain'),
        201
      ]
    ]);
  });

  test('wrong field types', async () => {
    await run([
      ['content 5', put('w1.txt', text(5)), 400],
      ['content null', put('w2.txt', text(null)), 400],
      ['content object', put('w3.txt', text({ a: 1 })), 400],
      ['format 5', put('w4.txt', { type: 'file', format: 5, content: 'x' }), 400],
      ['base64 content 5', put('w5.bin', { type: 'file', format: 'base64', content: 5 }), 400],
      ['type 5', put('w6.txt', { type: 5, format: 'text', content: 'x' }), 201],
      ['notebook content "str"', put('w7.ipynb', { type: 'notebook', content: 'str' }), 500],
      ['notebook content []', put('w8.ipynb', { type: 'notebook', content: [] }), 500],
      ['notebook content 5', put('w9.ipynb', { type: 'notebook', content: 5 }), 500],
      ['notebook content {}', put('w10.ipynb', { type: 'notebook', content: {} }), 500],
      [
        'notebook nbformat "4"',
        put('w11.ipynb', { type: 'notebook', content: { ...emptyNotebook, nbformat: '4' } }),
        500
      ],
      // Jupyter saves notebooks that fail validation (with a message).
      [
        'notebook cells {}',
        put('w12.ipynb', { type: 'notebook', content: { ...emptyNotebook, cells: {} } }),
        201
      ],
      [
        'notebook cell 5',
        put('w13.ipynb', { type: 'notebook', content: { ...emptyNotebook, cells: [5] } }),
        500
      ],
      [
        'notebook source 5',
        put('w14.ipynb', {
          type: 'notebook',
          content: {
            ...emptyNotebook,
            cells: [{ cell_type: 'markdown', id: 'a', metadata: {}, source: 5 }]
          }
        }),
        201
      ],
      ['rename path 5', patch('foo/a.txt', { path: 5 }), 500],
      ['rename path null', patch('foo/a.txt', { path: null }), 500],
      // "" is the root, which exists.
      ['rename path ""', patch('foo/a.txt', { path: '' }), 409],
      ['rename path []', patch('foo/a.txt', { path: ['x'] }), 500],
      ['copy_from 5', post('foo', { copy_from: 5 }), 500],
      ['copy_from {}', post('foo', { copy_from: {} }), 201],
      ['ext 5', post('foo', { ext: 5 }), 500],
      ['type 5 (POST)', post('foo', { type: 5 }), 201],
      ['chunk "1"', put('c1.txt', { ...text('x'), chunk: '1' }), 201],
      ['chunk 1.5', put('c2.txt', { ...text('x'), chunk: 1.5 }), 201],
      ['chunk true', put('c3.txt', { ...text('x'), chunk: true }), 201],
      ['chunk null', put('c4.txt', { ...text('x'), chunk: null }), 201]
    ]);
    await env.both({ method: 'GET', path: contentsPath('') });
  });

  test('missing fields and unknown type values', async () => {
    await run([
      // A new file without content is created empty; an existing one is not saved.
      ['no content, new', put('m1.txt', { type: 'file', format: 'text' }), 201],
      ['no content, existing', put('foo/a.txt', { type: 'file', format: 'text' }), 400],
      ['no format, new', put('m2.txt', { type: 'file', content: 'x' }), 400],
      ['no format, existing', put('foo/a.txt', { type: 'file', content: 'x' }), 400],
      // A new item without a type gets one from its name; an existing one is not saved.
      ['no type, new', put('m3.txt', { format: 'text', content: 'x' }), 201],
      ['no type, existing', put('foo/b.txt', { format: 'text', content: 'x' }), 400],
      ['no notebook content', put('m4.ipynb', { type: 'notebook' }), 201],
      ['empty object (untitled in a file path)', put('m5.txt', {}), 404],
      ['empty object in a directory', put('foo', {}), 201],
      ['PATCH {}', patch('foo/a.txt', {}), 200],
      ['unknown type', put('u1.txt', { type: 'bogus', format: 'text', content: 'x' }), 201],
      [
        'unknown type, base64',
        put('u2.bin', { type: 'BOGUS', format: 'base64', content: 'AAEC' }),
        201
      ],
      ['type Notebook (case)', put('u3.ipynb', { type: 'Notebook', content: emptyNotebook }), 400],
      ['unknown format', put('u4.txt', { type: 'file', format: 'json', content: 'x' }), 400],
      [
        'directory with content',
        put('u5', { type: 'directory', content: 'x', format: 'text' }),
        201
      ],
      ['POST unknown type', post('foo', { type: 'bogus', ext: '.txt' }), 201],
      [
        'lone surrogate text',
        raw('PUT', contentsPath('s1.txt'), '{"type":"file","format":"text","content":"a\\ud800b"}'),
        400
      ],
      [
        'lone surrogate notebook',
        raw(
          'PUT',
          contentsPath('s2.ipynb'),
          '{"type":"notebook","content":{"cells":[],"metadata":{"x":"\\udc00"},"nbformat":4,"nbformat_minor":5}}'
        ),
        500
      ],
      [
        'deep nesting',
        raw(
          'PUT',
          contentsPath('deep.ipynb'),
          `{"type":"notebook","content":{"cells":[],"metadata":{"x":${'['.repeat(100_000)}${']'.repeat(100_000)}},"nbformat":4,"nbformat_minor":5}}`
        ),
        400
      ],
      ['invalid base64', put('b1.bin', { type: 'file', format: 'base64', content: '@@@' }), 201],
      [
        'non-UTF-8 text via base64 read as text',
        { method: 'GET', path: contentsPath('latin1.txt'), query: 'format=text' },
        400
      ]
    ]);
  });
});

describe('paths', () => {
  test('overlong names and paths', async () => {
    const long = 'x'.repeat(252);
    const tooLong = 'x'.repeat(256);
    const multibyte = 'é'.repeat(128);
    const deep = Array.from({ length: 300 }, () => 'd'.repeat(20)).join('/');
    await run([
      ['255-byte name', put(`${long}.tx`, text('ok')), 201],
      ['256-byte name PUT', put(`${tooLong}.txt`, text('x')), 500],
      ['256-byte name GET', { method: 'GET', path: contentsPath(`${tooLong}.txt`) }, 500],
      ['256-byte name DELETE', { method: 'DELETE', path: contentsPath(`${tooLong}.txt`) }, 500],
      ['256-byte name mkdir', put(tooLong, { type: 'directory' }), 500],
      ['256 UTF-8 bytes (128 é)', put(`${multibyte}`, text('x')), 500],
      ['rename to a 256-byte name', patch('foo/a.txt', { path: `foo/${tooLong}` }), 500],
      ['copy to a 256-byte name', post(`foo/${tooLong}`, { copy_from: 'foo/a.txt' }), 500],
      ['6000-byte path GET', { method: 'GET', path: contentsPath(deep) }, 500],
      ['6000-byte path PUT', put(deep, text('x')), 500]
    ]);
  });

  test('invalid UTF-8, NUL bytes and encoded traversal in paths', async () => {
    await run([
      ['GET %ff', { method: 'GET', path: 'api/contents/%ff' }, 400],
      ['PUT %ff', { method: 'PUT', path: 'api/contents/foo/%ff.txt', json: text('x') }, 400],
      ['DELETE %c3%28', { method: 'DELETE', path: 'api/contents/%c3%28' }, 400],
      [
        'PATCH %ed%a0%80',
        { method: 'PATCH', path: 'api/contents/%ed%a0%80', json: { path: 'x.txt' } },
        400
      ],
      [
        'POST overlong dot %c0%ae',
        { method: 'POST', path: 'api/contents/%c0%ae%c0%ae', json: {} },
        400
      ],
      ['checkpoints %ff', { method: 'POST', path: 'api/contents/%ff/checkpoints' }, 400],
      ['trust %ff', { method: 'POST', path: 'api/contents/%ff.ipynb/trust' }, 400],
      ['GET %00', { method: 'GET', path: 'api/contents/%00' }, 404],
      ['PUT %00', { method: 'PUT', path: 'api/contents/foo/a%00.txt', json: text('x') }, 404],
      ['POST %00', { method: 'POST', path: 'api/contents/foo%00', json: {} }, 404],
      ['copy_from NUL', post('foo', { copy_from: '\u0000' }), 404],
      ['rename to NUL', patch('foo/a.txt', { path: '\u0000' }), 404],
      ['body path NUL', put('ok.txt', { ...text('x'), path: 'a\u0000b' }), 404],
      ['GET %2e%2e', { method: 'GET', path: 'api/contents/%2e%2e/outside/secret.txt' }, 404],
      ['PUT %2e%2e', { method: 'PUT', path: 'api/contents/%2e%2e/evil.txt', json: text('x') }, 404],
      [
        'PUT %2e%2e%2f',
        { method: 'PUT', path: 'api/contents/foo%2f%2e%2e%2f%2e%2e%2fevil.txt', json: text('x') },
        404
      ],
      ['DELETE %2e%2e', { method: 'DELETE', path: 'api/contents/%2e%2e/foo' }, 404],
      ['copy_from ../', post('foo', { copy_from: '../outside/secret.txt' }), 404],
      ['rename to ../', patch('foo/a.txt', { path: '../evil.txt' }), 404]
    ]);
  });

  test('odd query strings', async () => {
    await run([
      [
        'repeated type',
        { method: 'GET', path: contentsPath('foo/a.ipynb'), query: 'type=directory&type=notebook' },
        200
      ],
      [
        'repeated content',
        { method: 'GET', path: contentsPath('foo/a.txt'), query: 'content=1&content=0' },
        200
      ],
      ['format %ff', { method: 'GET', path: contentsPath('foo/a.txt'), query: 'format=%ff' }, 400],
      ['type %00', { method: 'GET', path: contentsPath('foo'), query: 'type=%00' }, 400],
      ['hash 2', { method: 'GET', path: contentsPath('foo/a.txt'), query: 'hash=2' }, 400],
      [
        'content true',
        { method: 'GET', path: contentsPath('foo/a.txt'), query: 'content=true' },
        400
      ],
      [
        'empty parameter names',
        { method: 'GET', path: contentsPath('foo/a.txt'), query: '&&=&content=0' },
        200
      ]
    ]);
  });
});
