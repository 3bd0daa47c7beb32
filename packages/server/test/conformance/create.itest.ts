/**
 * Differential conformance: creation (upstream test_api.py's create tests), untitled naming,
 * uploads of text, base64, notebooks and directories, unicode and URL-special names, large files.
 */
import {
  checkCreated,
  conformanceSuite,
  contentsPath,
  expectedLocation,
  get,
  post,
  put
} from '../support/compare';
import { pseudoRandomBytes } from '../support/tree';

const env = conformanceSuite();

/** nbformat.v4.new_notebook() as JSON. */
const newNotebook = (): Record<string, unknown> => ({
  cells: [],
  metadata: {},
  nbformat: 4,
  nbformat_minor: 5
});

/** Python's base64.encodebytes: a newline after every 76 characters and at the end. */
function encodebytes(bytes: Buffer): string {
  const flat = bytes.toString('base64');
  let out = '';
  for (let i = 0; i < flat.length; i += 76) out += `${flat.slice(i, i + 76)}\n`;
  return out;
}

describe('create (test_api.py)', () => {
  test('test_create_untitled', async () => {
    checkCreated(env, await env.both(post('å b', { ext: '.ipynb' })), 'å b', 'Untitled.ipynb');
    checkCreated(env, await env.both(post('å b', { ext: '.ipynb' })), 'å b', 'Untitled1.ipynb');
    checkCreated(
      env,
      await env.both(post('foo/bar', { ext: '.ipynb' })),
      'foo/bar',
      'Untitled.ipynb'
    );
    checkCreated(env, await env.both(post('foo/bar')), 'foo/bar', 'untitled', 'file');
  });

  test('test_create_untitled_txt', async () => {
    checkCreated(
      env,
      await env.both(post('foo/bar', { ext: '.txt' })),
      'foo/bar',
      'untitled.txt',
      'file'
    );
    const { jupyter } = await env.both(get('foo/bar/untitled.txt'));
    expect(jupyter.json).toMatchObject({ type: 'file', format: 'text', content: '' });
  });

  test('test_upload', async () => {
    const r = await env.both(
      put('å b/Upload tést.ipynb', { content: newNotebook(), type: 'notebook' })
    );
    checkCreated(env, r, 'å b', 'Upload tést.ipynb');
  });

  test('test_mkdir_untitled', async () => {
    checkCreated(
      env,
      await env.both(post('å b', { type: 'directory' })),
      'å b',
      'Untitled Folder',
      'directory'
    );
    checkCreated(
      env,
      await env.both(post('å b', { type: 'directory' })),
      'å b',
      'Untitled Folder 1',
      'directory'
    );
    checkCreated(
      env,
      await env.both(post('foo/bar', { type: 'directory' })),
      'foo/bar',
      'Untitled Folder',
      'directory'
    );
  });

  test('test_mkdir', async () => {
    checkCreated(
      env,
      await env.both(put('å b/New ∂ir', { type: 'directory' })),
      'å b',
      'New ∂ir',
      'directory'
    );
  });

  test('test_mkdir_hidden_400', async () => {
    expect((await env.both(put('å b/.hidden', { type: 'directory' }))).jupyter.status).toBe(400);
  });

  test('test_upload_txt', async () => {
    const body = 'ünicode téxt';
    await env.both(put('å b/Upload tést.txt', { content: body, format: 'text', type: 'file' }));
    const { jupyter } = await env.both(get('å b/Upload tést.txt'));
    expect(jupyter.json).toMatchObject({
      type: 'file',
      format: 'text',
      path: 'å b/Upload tést.txt',
      content: body
    });
  });

  test('test_upload_txt_hidden', async () => {
    const model = { content: 'ünicode téxt', format: 'text', type: 'file' };
    expect((await env.both(put('.hidden/Upload tést.txt', model))).jupyter.status).toBe(400);
    expect(
      (await env.both(put('Upload tést.txt', { ...model, path: '.hidden/test.txt' }))).jupyter
        .status
    ).toBe(400);
    expect((await env.both(put('.hidden.txt', model))).jupyter.status).toBe(400);
    expect(
      (await env.both(put('Upload tést.txt', { ...model, path: '.hidden.txt' }))).jupyter.status
    ).toBe(400);
  });

  test('test_upload_b64', async () => {
    const body = Buffer.concat([Buffer.from([0xff]), Buffer.from('blob')]);
    await env.both(
      put('å b/Upload tést.blob', { content: encodebytes(body), format: 'base64', type: 'file' })
    );
    const { jupyter } = await env.both(get('å b/Upload tést.blob'));
    expect(jupyter.json).toMatchObject({
      type: 'file',
      path: 'å b/Upload tést.blob',
      format: 'base64'
    });
    expect(Buffer.from(String((jupyter.json as { content: string }).content), 'base64')).toEqual(
      body
    );
  });
});

describe('untitled naming', () => {
  test('files, notebooks, folders and compound extensions count up', async () => {
    await env.mkdirBoth('naming');
    const expected: Array<[unknown, string, string]> = [
      [{}, 'untitled', 'file'],
      [{}, 'untitled1', 'file'],
      [{ ext: '.txt' }, 'untitled.txt', 'file'],
      [{ ext: '.txt' }, 'untitled1.txt', 'file'],
      [{ type: 'notebook' }, 'Untitled.ipynb', 'notebook'],
      [{ type: 'notebook' }, 'Untitled1.ipynb', 'notebook'],
      [{ type: 'notebook', ext: '.ipynb' }, 'Untitled2.ipynb', 'notebook'],
      [{ type: 'directory' }, 'Untitled Folder', 'directory'],
      [{ type: 'directory' }, 'Untitled Folder 1', 'directory'],
      [{ type: 'directory' }, 'Untitled Folder 2', 'directory'],
      [{ ext: '.tar.gz' }, 'untitled.tar.gz', 'file'],
      [{ ext: '.tar.gz' }, 'untitled1.tar.gz', 'file'],
      [{ type: 'file', ext: '.py' }, 'untitled.py', 'file'],
      [{ type: 'file' }, 'untitled2', 'file'],
      // Unknown types fall back to file.
      [{ type: 'bogus' }, 'untitled3', 'file'],
      // An extension without its dot is appended as is.
      [{ ext: 'txt' }, 'untitledtxt', 'file'],
      [{ type: '' }, 'untitled4', 'file']
    ];
    for (const [body, name, type] of expected)
      checkCreated(env, await env.both(post('naming', body)), 'naming', name, type);
    await env.both(get('naming'));
  });

  test('the first free name is taken, gaps included', async () => {
    await env.mkdirBoth('gaps');
    await env.writeBoth('gaps/Untitled1.ipynb', '{}');
    await env.writeBoth('gaps/untitled.txt', '');
    await env.writeBoth('gaps/untitled2.txt', '');
    checkCreated(env, await env.both(post('gaps', { type: 'notebook' })), 'gaps', 'Untitled.ipynb');
    checkCreated(
      env,
      await env.both(post('gaps', { type: 'notebook' })),
      'gaps',
      'Untitled2.ipynb'
    );
    checkCreated(
      env,
      await env.both(post('gaps', { ext: '.txt' })),
      'gaps',
      'untitled1.txt',
      'file'
    );
    checkCreated(
      env,
      await env.both(post('gaps', { ext: '.txt' })),
      'gaps',
      'untitled3.txt',
      'file'
    );
    const del = await env.both({ method: 'DELETE', path: contentsPath('gaps/Untitled.ipynb') });
    expect(del.jupyter.status).toBe(204);
    checkCreated(env, await env.both(post('gaps', { type: 'notebook' })), 'gaps', 'Untitled.ipynb');
  });

  test('PUT without a body creates an untitled file in the directory', async () => {
    checkCreated(env, await env.both(put('foo')), 'foo', 'untitled', 'file');
    checkCreated(
      env,
      await env.both({ method: 'POST', path: contentsPath('foo') }),
      'foo',
      'untitled1',
      'file'
    );
    checkCreated(env, await env.both(post('', { type: 'notebook' })), '', 'Untitled.ipynb');
  });

  test('untitled in a missing directory, in a file, in a hidden directory', async () => {
    expect((await env.both(post('nope', { type: 'notebook' }))).jupyter.status).toBe(404);
    expect((await env.both(post('foo/a.txt', {}))).jupyter.status).toBe(400);
    expect((await env.both(post('foo/a.txt'))).jupyter.status).toBe(400);
    await env.both(post('.hidden', { type: 'notebook' }));
    await env.both(post('.hidden', { type: 'directory' }));
  });
});

describe('uploads', () => {
  test('PUT answers 201 for new items and 200 for existing files', async () => {
    const text = { type: 'file', format: 'text', content: 'one\r\ntwo\rthree\n' };
    // A missing parent directory: Jupyter fails with a 500 (FileNotFoundError), we answer a 4xx.
    expect((await env.both(put('up/new.txt', text))).jupyter.status).toBe(500);
    await env.mkdirBoth('up');
    expect((await env.both(put('up/new.txt', text))).jupyter.status).toBe(201);
    expect(
      (await env.both(put('up/new.txt', { ...text, content: 'changed' }))).jupyter.status
    ).toBe(200);
    expect(
      (await env.both(put('up/nb.ipynb', { type: 'notebook', content: newNotebook() }))).jupyter
        .status
    ).toBe(201);
    expect(
      (await env.both(put('up/nb.ipynb', { type: 'notebook', content: newNotebook() }))).jupyter
        .status
    ).toBe(200);
    // A directory that exists is "created" again.
    expect((await env.both(put('up', { type: 'directory' }))).jupyter.status).toBe(201);
    expect((await env.both(put('up/sub', { type: 'directory' }))).jupyter.status).toBe(201);
    expect((await env.both(put('up/sub', { type: 'directory' }))).jupyter.status).toBe(201);
    // A notebook model saved under a name that is not .ipynb, and a file model under .ipynb.
    expect(
      (await env.both(put('up/nb.json', { type: 'notebook', content: newNotebook() }))).jupyter
        .status
    ).toBe(201);
    await env.both(put('up/text.ipynb', { type: 'file', format: 'text', content: '{}' }));
    await env.both(get('up'));
    await env.both(get('up/nb.json'));
  });

  test('unicode, NFD and URL-special names round-trip with exact Location headers', async () => {
    const names = [
      "quote !'()*.txt",
      'amp & plus + semi ; eq = at @ dollar $ comma ,.txt',
      'hash # question ? percent %.txt',
      'emoji 😀 file.txt',
      'cafe\u0301 nfd.txt',
      'café nfc.txt',
      'ü.ipynb'
    ];
    for (const name of names) {
      const apiPath = `special ünï cødé/${name}`;
      const model = name.endsWith('.ipynb')
        ? { type: 'notebook', content: newNotebook() }
        : { type: 'file', format: 'text', content: `${name} ✓` };
      const r = await env.both(put(apiPath, model));
      expect(r.jupyter.headers.location).toBe(expectedLocation(env.jupyter.baseUrl, apiPath));
      await env.both(get(apiPath, 'hash=1'));
    }
    await env.both(get('special ünï cødé'));
  });

  test('base64 uploads with and without line breaks, and every byte value', async () => {
    const bytes = Buffer.from(Array.from({ length: 512 }, (_, i) => (i * 7) % 256));
    await env.mkdirBoth('b64');
    await env.both(
      put('b64/lines.bin', { type: 'file', format: 'base64', content: encodebytes(bytes) })
    );
    await env.both(
      put('b64/flat.bin', { type: 'file', format: 'base64', content: bytes.toString('base64') })
    );
    await env.both(put('b64/empty.bin', { type: 'file', format: 'base64', content: '' }));
    await env.both(get('b64/lines.bin'));
    await env.both(get('b64/empty.bin'));
    await env.both(get('b64'));
  });

  test('a 20 MB binary upload in one PUT', async () => {
    const bytes = pseudoRandomBytes(20 * 1024 * 1024, 42);
    const r = await env.both(
      put('big.bin', { type: 'file', format: 'base64', content: bytes.toString('base64') })
    );
    expect(r.jupyter.status).toBe(201);
    expect((await env.both(get('big.bin', 'content=0&hash=1'))).jupyter.json).toMatchObject({
      size: bytes.length,
      mimetype: 'application/octet-stream'
    });
  });
});
