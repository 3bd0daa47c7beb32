/**
 * Differential conformance: hidden files (test_regression_is_hidden, with allow_hidden on and
 * off), every way out of the root (test_manager.py's test_escape_root, percent-encoded `..`,
 * absolute paths, NUL, backslashes, symlinks that lead outside) and permission errors
 * (test_manager.py's test_403).
 *
 * Our sandbox (the parent of our root) is checked after every test by the harness: nothing may be
 * written or changed outside our root.
 */
import { execFileSync } from 'node:child_process';
import { chmod } from 'node:fs/promises';
import { join } from 'node:path';
import {
  conformanceSuite,
  contentsPath,
  del,
  expectedLocation,
  get,
  patch,
  post,
  put,
  type Conformance,
  type Req
} from '../support/compare';

const text = (content: string): Record<string, string> => ({
  type: 'file',
  format: 'text',
  content
});

type Model = Record<string, unknown>;

/** Send each request to both; return Jupyter's statuses labelled, for one `toEqual` at the end. */
async function statuses(
  env: Conformance,
  steps: Array<[string, Req]>
): Promise<Array<[string, number]>> {
  const seen: Array<[string, number]> = [];
  for (const [label, req] of steps) seen.push([label, (await env.both(req)).jupyter.status]);
  return seen;
}

describe('hidden files, allow_hidden=False (default)', () => {
  const env = conformanceSuite();

  test('test_regression_is_hidden: the same sequence is refused when hidden files are not allowed', async () => {
    const seen = await statuses(env, [
      ['GET .hidden', get('.hidden')],
      ['copy in .hidden', post('.hidden', { copy_from: '.hidden/visible.txt' })],
      ['DELETE copy', del('.hidden/visible-Copy1.txt')],
      ['PUT .hidden/new.txt', put('.hidden/new.txt', text('foo'))]
    ]);
    expect(seen).toEqual([
      ['GET .hidden', 404],
      ['copy in .hidden', 400],
      ['DELETE copy', 400],
      ['PUT .hidden/new.txt', 400]
    ]);
  });

  test('hidden names anywhere in the path, in bodies, and hide_globs', async () => {
    const seen = await statuses(env, [
      ['GET nested hidden', get('foo/.secret/x.txt')],
      ['PUT nested hidden', put('foo/.secret.txt', text('x'))],
      ['PUT dir hidden', put('foo/.dir', { type: 'directory' })],
      ['PATCH into hidden', patch('foo/a.txt', { path: 'foo/.a.txt' })],
      ['PATCH from hidden', patch('.hidden.txt', { path: 'unhidden.txt' })],
      ['copy from hidden', post('foo', { copy_from: '.hidden.txt' })],
      ['DELETE hidden', del('.hidden/visible.txt')],
      ['GET checkpoints dir', get('.ipynb_checkpoints')],
      ['GET a glob', get('globs/mod.pyc')],
      ['GET a glob dir', get('globs/__pycache__')],
      ['PUT a glob', put('globs/new.pyc', text('x'))]
    ]);
    expect(seen).toEqual([
      ['GET nested hidden', 404],
      ['PUT nested hidden', 400],
      ['PUT dir hidden', 400],
      ['PATCH into hidden', 400],
      ['PATCH from hidden', 400],
      ['copy from hidden', 400],
      ['DELETE hidden', 400],
      ['GET checkpoints dir', 404],
      ['GET a glob', 200],
      ['GET a glob dir', 200],
      ['PUT a glob', 201]
    ]);
    await env.both(get('globs'));
  });
});

describe('hidden files, allow_hidden=True', () => {
  const env = conformanceSuite({
    jupyterArgs: ['--ContentsManager.allow_hidden=True'],
    ourContents: { allowHidden: true }
  });

  test('test_regression_is_hidden', async () => {
    const listing = await env.both(get('.hidden'));
    expect(listing.jupyter.status).toBe(200);
    const copy = await env.both(post('.hidden', { copy_from: '.hidden/visible.txt' }));
    expect(copy.jupyter.status).toBe(201);
    expect(copy.jupyter.headers.location).toBe(
      expectedLocation(env.jupyter.baseUrl, '.hidden/visible-Copy1.txt')
    );
    expect(copy.jupyter.json).toMatchObject({
      name: 'visible-Copy1.txt',
      path: '.hidden/visible-Copy1.txt',
      type: 'file'
    });
    expect((await env.both(del('.hidden/visible-Copy1.txt'))).jupyter.status).toBe(204);
    const created = await env.both(put('.hidden/new.txt', text('foo')));
    expect(created.jupyter.status).toBe(201);
    expect(created.jupyter.json).toMatchObject({
      name: 'new.txt',
      path: '.hidden/new.txt',
      type: 'file'
    });
  });

  test('hidden entries are listed and served; hide_globs still apply', async () => {
    const root = await env.both(get(''));
    const names = ((root.jupyter.json as Model).content as Model[]).map(m => m.name);
    expect(names).toContain('.hidden');
    expect(names).toContain('.hidden.txt');
    await env.both(get('.hidden.txt'));
    await env.both(get('globs'));
    await env.both(patch('.hidden.txt', { path: '.hidden/moved.txt' }));
    await env.both(del('.hidden'));
  });
});

describe('escaping the root', () => {
  const env = conformanceSuite();

  test('test_escape_root', async () => {
    const seen = await statuses(env, [
      ['GET ..', { method: 'GET', path: 'api/contents/..' }],
      ['GET foo/../../../bar', { method: 'GET', path: 'api/contents/foo/../../../bar' }],
      ['DELETE ../foo', { method: 'DELETE', path: 'api/contents/../foo' }],
      ['PATCH ../foo', { method: 'PATCH', path: 'api/contents/../foo', json: { path: '../bar' } }],
      ['PUT ../foo', { method: 'PUT', path: 'api/contents/../foo', json: text('') }]
    ]);
    expect(seen).toEqual([
      ['GET ..', 404],
      ['GET foo/../../../bar', 404],
      ['DELETE ../foo', 404],
      ['PATCH ../foo', 404],
      ['PUT ../foo', 404]
    ]);
  });

  test('percent-encoded dot segments and slashes', async () => {
    const paths = [
      '%2e%2e',
      '%2E%2E',
      '%2e%2e/bar',
      '%2e%2e/outside/secret.txt',
      'foo/%2e%2e/%2e%2e/bar',
      'foo/%2E./%2e%2E/bar',
      '..%2fbar',
      '%2e%2e%2fbar',
      'foo%2f..%2f..%2fbar',
      'foo%2F%2E%2E%2F%2E%2E%2Fbar',
      '%252e%252e/bar',
      '.%2e/bar',
      'foo/./../../bar'
    ];
    for (const p of paths) {
      await env.both({ method: 'GET', path: `api/contents/${p}` });
      await env.both({ method: 'PUT', path: `api/contents/${p}`, json: text('escaped') });
      await env.both({ method: 'DELETE', path: `api/contents/${p}` });
      await env.both({ method: 'POST', path: `api/contents/${p}`, json: { type: 'directory' } });
      await env.both({ method: 'PATCH', path: `api/contents/${p}`, json: { path: 'inside.txt' } });
      await env.both({ method: 'POST', path: `api/contents/${p}/checkpoints` });
    }
  });

  test('paths in bodies: rename targets and copy sources outside the root', async () => {
    const seen = await statuses(env, [
      ['rename to ../', patch('foo/a.txt', { path: '../escaped.txt' })],
      ['rename to foo/../../', patch('foo/a.txt', { path: 'foo/../../escaped.txt' })],
      ['rename to /abs', patch('foo/a.txt', { path: '/tmp/escaped.txt' })],
      ['copy from ../foo', post('ordering', { copy_from: '../foo' })],
      ['copy from ../outside/secret.txt', post('ordering', { copy_from: '../outside/secret.txt' })],
      ['copy from /etc/passwd', post('ordering', { copy_from: '/etc/passwd' })],
      ['copy to ..', post('..', { copy_from: 'foo/a.txt' })],
      ['PUT body path ../', put('ok.txt', { ...text('x'), path: '../x.txt' })]
    ]);
    expect(seen).toEqual([
      ['rename to ../', 404],
      ['rename to foo/../../', 404],
      ['rename to /abs', 404],
      ['copy from ../foo', 404],
      ['copy from ../outside/secret.txt', 404],
      ['copy from /etc/passwd', 404],
      ['copy to ..', 404],
      ['PUT body path ../', 404]
    ]);
  });

  test('absolute paths, NUL bytes, backslashes, drive letters', async () => {
    const seen = await statuses(env, [
      ['GET //etc/passwd', { method: 'GET', path: 'api/contents//etc/passwd' }],
      ['GET %2fetc%2fpasswd', { method: 'GET', path: 'api/contents/%2fetc%2fpasswd' }],
      ['PUT %2ftmp%2fx', { method: 'PUT', path: 'api/contents/%2ftmp%2fx.txt', json: text('x') }],
      ['GET NUL', { method: 'GET', path: 'api/contents/foo%00/a.txt' }],
      ['PUT NUL', { method: 'PUT', path: 'api/contents/a%00b.txt', json: text('x') }],
      ['DELETE NUL', { method: 'DELETE', path: 'api/contents/foo/a.txt%00' }],
      ['PATCH to NUL', patch('foo/a.txt', { path: 'foo/a\u0000b.txt' })],
      ['copy from NUL', post('foo', { copy_from: 'foo/a.txt\u0000' })],
      ['GET ..\\foo', { method: 'GET', path: 'api/contents/..%5cfoo' }],
      ['PUT ..\\foo', { method: 'PUT', path: 'api/contents/..%5cfoo', json: text('x') }],
      ['GET C:\\', { method: 'GET', path: 'api/contents/C:%5cWindows' }]
    ]);
    expect(seen).toEqual([
      ['GET //etc/passwd', 404],
      ['GET %2fetc%2fpasswd', 404],
      // Jupyter strips the leading slash: tmp/x.txt inside the root, whose parent is missing (500).
      ['PUT %2ftmp%2fx', 500],
      ['GET NUL', 404],
      ['PUT NUL', 404],
      ['DELETE NUL', 404],
      ['PATCH to NUL', 404],
      ['copy from NUL', 404],
      ['GET ..\\foo', 404],
      ['PUT ..\\foo', 400],
      ['GET C:\\', 404]
    ]);
  });

  test('symlinks that lead outside the root: Jupyter follows them, we refuse them', async () => {
    const steps: Array<[string, Req]> = [
      ['GET file link', get('links/outside.txt')],
      ['GET dir link', get('links/outside-dir')],
      ['GET through dir link', get('links/outside-dir/secret.txt')],
      ['PUT file link', put('links/outside.txt', text('overwritten through the link'))],
      ['PUT through dir link', put('links/outside-dir/new.txt', text('created through the link'))],
      ['mkdir through dir link', put('links/outside-dir/newdir', { type: 'directory' })],
      ['untitled through dir link', post('links/outside-dir', { type: 'notebook' })],
      ['copy from file link', post('links', { copy_from: 'links/outside.txt' })],
      ['copy into dir link', post('links/outside-dir', { copy_from: 'foo/a.txt' })],
      [
        'checkpoint of file link',
        { method: 'POST', path: contentsPath('links/outside.txt', 'checkpoints') }
      ],
      [
        'rename through dir link',
        patch('links/outside-dir/secret.txt', { path: 'links/outside-stolen.txt' })
      ],
      ['rename file link', patch('links/outside.txt', { path: 'links/outside-renamed.txt' })],
      ['DELETE through dir link', del('links/outside-dir/secret.txt')],
      ['DELETE dir link', del('links/outside-dir')]
    ];
    for (const [label, req] of steps) {
      const { ours } = await env.both(req);
      if (ours.status < 400 || ours.status >= 500) {
        env.problem(
          `${label}: ours answered ${ours.status}; a path through a symlink leading outside must get a 4xx`
        );
      }
    }
    // The listing of links/ never shows the links that lead outside, on our side.
    const { ours } = await env.both(get('links'));
    const names = ((ours.json as Model).content as Model[]).map(m => String(m.name));
    expect(names.filter(n => n.startsWith('outside'))).toEqual([]);
    expect(names).toContain('inside.txt');
  });
});

describe('permission errors (test_403)', () => {
  const env = conformanceSuite();
  const isRoot = process.getuid?.() === 0;

  /** Make a path unwritable on both sides: `chattr +i` as root (root ignores modes), else chmod. */
  async function lock(rel: string, dir: boolean): Promise<void> {
    for (const side of ['jupyter', 'ours'] as const) {
      const p = join(env.root(side), rel);
      if (isRoot) {
        try {
          execFileSync('chattr', ['+i', p], { stdio: 'pipe' });
        } catch (error) {
          throw new Error(
            `test_403 runs as root and needs "chattr +i" (e2fsprogs, on ext4/xfs/btrfs) to make ${p} unwritable: ${String(error)}`
          );
        }
      } else {
        await chmod(p, dir ? 0o555 : 0o444);
      }
    }
  }
  async function unlock(rel: string, dir: boolean): Promise<void> {
    for (const side of ['jupyter', 'ours'] as const) {
      const p = join(env.root(side), rel);
      if (isRoot) execFileSync('chattr', ['-i', p], { stdio: 'pipe' });
      else await chmod(p, dir ? 0o755 : 0o644);
    }
  }

  test('saving an unwritable file answers 403', async () => {
    await lock('foo/a.txt', false);
    await lock('foo/a.ipynb', false);
    try {
      const seen = await statuses(env, [
        ['GET', get('foo/a.txt', 'content=0')],
        ['PUT text', put('foo/a.txt', text("don't care"))],
        [
          'PUT notebook',
          put('foo/a.ipynb', {
            type: 'notebook',
            content: { cells: [], metadata: {}, nbformat: 4, nbformat_minor: 5 }
          })
        ],
        [
          'chunk 1',
          put('foo/a.txt', { type: 'file', format: 'base64', chunk: 1, content: 'AAEC' })
        ],
        [
          'chunk 2',
          put('foo/a.txt', { type: 'file', format: 'base64', chunk: 2, content: 'AAEC' })
        ],
        ['listing', get('foo')]
      ]);
      expect(seen).toEqual([
        ['GET', 200],
        ['PUT text', 403],
        ['PUT notebook', 403],
        ['chunk 1', 403],
        ['chunk 2', 403],
        ['listing', 200]
      ]);
    } finally {
      await unlock('foo/a.txt', false);
      await unlock('foo/a.ipynb', false);
    }
  });

  test('creating, renaming and deleting in an unwritable directory', async () => {
    await lock('ordering', true);
    try {
      const seen = await statuses(env, [
        ['PUT new file', put('ordering/new.txt', text('x'))],
        ['untitled', post('ordering', { type: 'notebook' })],
        ['mkdir', put('ordering/sub', { type: 'directory' })],
        ['copy in', post('ordering', { copy_from: 'foo/a.txt' })],
        ['rename out', patch('ordering/A.txt', { path: 'left-by-failed-rename.txt' })],
        ['rename in', patch('foo/a.txt', { path: 'ordering/moved.txt' })],
        ['save existing', put('ordering/A.txt', text('changed'))],
        ['delete', del('ordering/A.txt')],
        ['GET dir', get('ordering', 'content=0')]
      ]);
      expect(seen).toEqual([
        ['PUT new file', 403],
        ['untitled', 403],
        ['mkdir', 403],
        ['copy in', 403],
        ['rename out', 403],
        ['rename in', 403],
        // Only the file needs to be writable to save it (the atomic writer falls back to writing in place).
        ['save existing', 200],
        ['delete', 400],
        ['GET dir', 200]
      ]);
    } finally {
      await unlock('ordering', true);
    }
  });
});
