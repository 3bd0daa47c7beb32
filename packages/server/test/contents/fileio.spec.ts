/**
 * The synchronous looks of the contents manager (`statNow`, `lstatNow`, `canAccessNow`): the
 * answers of their asynchronous counterparts, undefined or false for what is not there.
 */
import { constants as fsConstants } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  canAccessNow,
  lstatNow,
  lstatOrUndefined,
  statNow,
  statOrUndefined
} from '../../src/contents/fileio';

let sandbox: string;

beforeEach(async () => {
  sandbox = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'fileio-spec-')));
  await fs.writeFile(path.join(sandbox, 'file.txt'), 'x');
  await fs.symlink('file.txt', path.join(sandbox, 'link'));
  await fs.symlink('missing', path.join(sandbox, 'dangling'));
});

afterEach(async () => {
  await fs.rm(sandbox, { recursive: true, force: true });
});

describe('statNow() / lstatNow()', () => {
  it('answer as stat and lstat do, following a link or not', async () => {
    for (const name of ['file.txt', 'link', 'dangling', 'missing', 'file.txt/below']) {
      const osPath = path.join(sandbox, name);
      expect(statNow(osPath)?.ino).toBe((await statOrUndefined(osPath))?.ino);
      expect(lstatNow(osPath)?.ino).toBe((await lstatOrUndefined(osPath))?.ino);
    }
    expect(statNow(path.join(sandbox, 'link'))?.isFile()).toBe(true);
    expect(lstatNow(path.join(sandbox, 'link'))?.isSymbolicLink()).toBe(true);
    expect(statNow(path.join(sandbox, 'dangling'))).toBeUndefined();
    expect(lstatNow(path.join(sandbox, 'file.txt/below'))).toBeUndefined();
  });

  it('throw other failures, as a symlink loop', async () => {
    await fs.symlink('loop', path.join(sandbox, 'loop'));
    expect(() => statNow(path.join(sandbox, 'loop'))).toThrow(
      expect.objectContaining({ code: 'ELOOP' })
    );
  });
});

describe('canAccessNow()', () => {
  it('answers whether the path may be accessed so, false for nothing there', async () => {
    expect(canAccessNow(path.join(sandbox, 'file.txt'), fsConstants.W_OK)).toBe(true);
    expect(canAccessNow(path.join(sandbox, 'missing'), fsConstants.F_OK)).toBe(false);
    if (process.getuid?.() === 0) return;
    await fs.chmod(path.join(sandbox, 'file.txt'), 0o444);
    expect(canAccessNow(path.join(sandbox, 'file.txt'), fsConstants.W_OK)).toBe(false);
  });
});
