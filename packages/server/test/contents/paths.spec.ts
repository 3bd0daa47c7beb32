import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { HttpError } from '../../src/errors';
import { RootResolver, checkApiPath, joinApiPath, parentPath } from '../../src/contents/paths';

function statusOf(action: () => unknown): number | undefined {
  try {
    action();
  } catch (error) {
    return error instanceof HttpError ? error.status : -1;
  }
  return undefined;
}

describe('paths', () => {
  describe('#checkApiPath()', () => {
    it('strips slashes at both ends', () => {
      expect(checkApiPath('/foo/bar.txt/')).toBe('foo/bar.txt');
      expect(checkApiPath('/')).toBe('');
    });
    it('refuses dot-dot, NUL and empty segments with 404', () => {
      expect(statusOf(() => checkApiPath('../etc/passwd'))).toBe(404);
      expect(statusOf(() => checkApiPath('foo/../../x'))).toBe(404);
      expect(statusOf(() => checkApiPath('foo\0bar'))).toBe(404);
      expect(statusOf(() => checkApiPath('a//b'))).toBe(404);
    });
    it('keeps backslashes and drive-like names, which are ordinary on POSIX', () => {
      expect(checkApiPath('C:\\Windows')).toBe('C:\\Windows');
      expect(checkApiPath('..\\foo')).toBe('..\\foo');
    });
    it('refuses names longer than 255 bytes with 400', () => {
      expect(statusOf(() => checkApiPath('é'.repeat(128)))).toBe(400);
      expect(statusOf(() => checkApiPath('a'.repeat(255)))).toBeUndefined();
    });
  });

  it('#joinApiPath() and #parentPath()', () => {
    expect(joinApiPath('', 'a')).toBe('a');
    expect(joinApiPath('a/', '/b')).toBe('a/b');
    expect(parentPath('a/b/c')).toBe('a/b');
    expect(parentPath('a')).toBe('');
  });

  describe('RootResolver#resolve()', () => {
    let root: string;
    let outside: string;
    beforeAll(async () => {
      const top = await fs.mkdtemp(path.join(os.tmpdir(), 'paths-spec-'));
      root = path.join(top, 'root');
      outside = path.join(top, 'outside');
      await fs.mkdir(path.join(root, 'inner'), { recursive: true });
      await fs.mkdir(outside);
      await fs.writeFile(path.join(outside, 'secret.txt'), 'secret');
      await fs.symlink(outside, path.join(root, 'escape'));
      await fs.symlink(path.join(root, 'inner'), path.join(root, 'inside-link'));
    });

    it('maps paths inside the root', async () => {
      const resolver = new RootResolver(root);
      expect(await resolver.resolve('inner/new.txt')).toBe(path.join(root, 'inner', 'new.txt'));
      expect(await resolver.resolve('inside-link/x')).toBe(path.join(root, 'inside-link', 'x'));
    });

    it('refuses symlinks that lead outside, for existing and new items', async () => {
      const resolver = new RootResolver(root);
      await expect(resolver.resolve('escape/secret.txt')).rejects.toMatchObject({ status: 404 });
      await expect(resolver.resolve('escape/new.txt')).rejects.toMatchObject({ status: 404 });
      await expect(resolver.resolve('escape')).rejects.toMatchObject({ status: 404 });
    });
  });
});
