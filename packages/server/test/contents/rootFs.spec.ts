/**
 * RootFs: every operation stays inside its root, also when a directory on the way is swapped
 * for a symlink after it was opened (the swaps here are made at exact points, not raced), and
 * nothing is ever created through a symlink that leads to nothing.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { ContentsManager } from '../../src/contents/manager';
import { RootFs, procFdWorks } from '../../src/contents/rootFs';

let sandbox: string;
/** The root (`<sandbox>/root`), real path. */
let root: string;
/** A directory beside the root, holding `secret.txt`. */
let outside: string;
let files: RootFs;

const SECRET = 'outside secret\n';

beforeEach(async () => {
  sandbox = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'rootfs-spec-')));
  root = path.join(sandbox, 'root');
  outside = path.join(sandbox, 'outside');
  await fs.mkdir(path.join(root, 'dir'), { recursive: true });
  await fs.mkdir(outside);
  await fs.writeFile(path.join(outside, 'secret.txt'), SECRET);
  files = new RootFs(root);
});

afterEach(async () => {
  await fs.rm(sandbox, { recursive: true, force: true });
});

/** Replace `root/dir` by a symlink to the outside directory; the real one goes to `dir.real`. */
async function swapDirForLink(): Promise<void> {
  await fs.rename(path.join(root, 'dir'), path.join(root, 'dir.real'));
  await fs.symlink(outside, path.join(root, 'dir'));
}

async function outsideNames(): Promise<string[]> {
  return (await fs.readdir(outside)).sort();
}

describe('RootFs', () => {
  it('probes /proc/self/fd on Linux', async () => {
    expect(await procFdWorks()).toBe(process.platform === 'linux');
  });

  describe('#writeFileAtomic()', () => {
    it('writes inside, keeps mode, and leaves no temporary file', async () => {
      const target = path.join(root, 'dir', 'a.txt');
      await files.writeFileAtomic(target, Buffer.from('one'));
      await fs.chmod(target, 0o640);
      await files.writeFileAtomic(target, [Buffer.from('t'), Buffer.from('wo')]);
      expect(await fs.readFile(target, 'utf8')).toBe('two');
      expect((await fs.stat(target)).mode & 0o777).toBe(0o640);
      expect(await fs.readdir(path.join(root, 'dir'))).toEqual(['a.txt']);
    });

    it('writes through a symlink that stays inside, keeping the link', async () => {
      await fs.writeFile(path.join(root, 'target.txt'), 'old');
      await fs.symlink('../target.txt', path.join(root, 'dir', 'link.txt'));
      await files.writeFileAtomic(path.join(root, 'dir', 'link.txt'), Buffer.from('new'));
      expect((await fs.lstat(path.join(root, 'dir', 'link.txt'))).isSymbolicLink()).toBe(true);
      expect(await fs.readFile(path.join(root, 'target.txt'), 'utf8')).toBe('new');
    });

    it('refuses a symlink to an outside file, and a dangling one, writing nothing', async () => {
      await fs.symlink(path.join(outside, 'secret.txt'), path.join(root, 'to-secret'));
      await fs.symlink(path.join(outside, 'new.txt'), path.join(root, 'dangling'));
      await expect(
        files.writeFileAtomic(path.join(root, 'to-secret'), Buffer.from('x'))
      ).rejects.toMatchObject({ code: 'EOUTSIDEROOT' });
      await expect(
        files.writeFileAtomic(path.join(root, 'dangling'), Buffer.from('x'))
      ).rejects.toMatchObject({ code: 'EDANGLINGLINK' });
      expect(await outsideNames()).toEqual(['secret.txt']);
      expect(await fs.readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe(SECRET);
      expect((await fs.lstat(path.join(root, 'dangling'))).isSymbolicLink()).toBe(true);
    });

    it('refuses a directory on the way that leads outside', async () => {
      await swapDirForLink();
      await expect(
        files.writeFileAtomic(path.join(root, 'dir', 'new.txt'), Buffer.from('x'))
      ).rejects.toMatchObject({ code: 'EOUTSIDEROOT' });
      expect(await outsideNames()).toEqual(['secret.txt']);
    });
  });

  describe('closing the directories it opens', () => {
    /** The descriptors this process has open. */
    const openFds = async (): Promise<number> => (await fs.readdir('/proc/self/fd')).length;

    it('closes them after writes, renames and unlinks, without the caller waiting', async () => {
      if (!(await procFdWorks())) return;
      await files.writeFileAtomic(path.join(root, 'dir', 'warm.txt'), Buffer.from('w'));
      await new Promise(resolve => setTimeout(resolve, 50));
      const before = await openFds();
      for (let i = 0; i < 20; i++) {
        const name = path.join(root, 'dir', `f${i}.txt`);
        await files.writeFileAtomic(name, Buffer.from(String(i)));
        await files.rename(name, `${name}.moved`);
        await files.unlink(`${name}.moved`);
      }
      // The closes were left to finish on their own: they have, a moment later.
      await new Promise(resolve => setTimeout(resolve, 100));
      expect(await openFds()).toBeLessThanOrEqual(before);
      expect(await fs.readdir(path.join(root, 'dir'))).toEqual(['warm.txt']);
    });
  });

  describe('#appendFile()', () => {
    it('appends, creates a missing plain file, and reads the whole file back', async () => {
      const target = path.join(root, 'dir', 'up.bin');
      expect(await files.appendFile(target, Buffer.from('ab'))).toBeUndefined();
      const whole = await files.appendFile(target, Buffer.from('cd'), { readBack: true });
      expect(whole?.toString()).toBe('abcd');
    });

    it('never creates the target of a dangling symlink', async () => {
      await fs.symlink(path.join(outside, 'created.txt'), path.join(root, 'dir', 'up.bin'));
      await expect(
        files.appendFile(path.join(root, 'dir', 'up.bin'), Buffer.from('x'))
      ).rejects.toMatchObject({ code: 'EDANGLINGLINK' });
      await fs.symlink('missing-inside.txt', path.join(root, 'dir', 'inside.bin'));
      await expect(
        files.appendFile(path.join(root, 'dir', 'inside.bin'), Buffer.from('x'))
      ).rejects.toMatchObject({ code: 'EDANGLINGLINK' });
      expect(await outsideNames()).toEqual(['secret.txt']);
      expect(await fs.readdir(path.join(root, 'dir'))).toEqual(['inside.bin', 'up.bin']);
    });
  });

  describe('a directory pinned before the swap', () => {
    it('takes every write, rename, mkdir and unlink in the real directory', async () => {
      if (!(await procFdWorks())) return;
      const dir = await files.openDirectory(path.join(root, 'dir'));
      try {
        await swapDirForLink();
        await fs.writeFile(dir.entry('one.txt'), '1', { flag: 'wx' });
        await fs.rename(dir.entry('one.txt'), dir.entry('two.txt'));
        await fs.mkdir(dir.entry('sub'));
        await fs.rmdir(dir.entry('sub'));
        expect(dir.realPath).toBe(path.join(root, 'dir'));
        expect(await fs.readdir(dir.self)).toEqual(['two.txt']);
      } finally {
        await dir.close();
      }
      expect(await fs.readdir(path.join(root, 'dir.real'))).toEqual(['two.txt']);
      expect(await outsideNames()).toEqual(['secret.txt']);
    });
  });

  describe('#openFile() / #readFile()', () => {
    it('reads inside (through inside links) and refuses what the descriptor shows outside', async () => {
      await fs.writeFile(path.join(root, 'dir', 'a.txt'), 'inside');
      await fs.symlink('dir/a.txt', path.join(root, 'link.txt'));
      expect((await files.readFile(path.join(root, 'link.txt'))).bytes.toString()).toBe('inside');
      await expect(
        files.readFile(path.join(root, 'link.txt'), { followSymlinks: false })
      ).rejects.toMatchObject({ code: 'ELOOP' });
      await swapDirForLink();
      await expect(files.readFile(path.join(root, 'dir', 'secret.txt'))).rejects.toMatchObject({
        code: 'EOUTSIDEROOT'
      });
    });

    it('reads empty, small and large files whole', async () => {
      const large = Buffer.alloc(3 * 1024 * 1024 + 7, 0x5a);
      for (const [name, bytes] of [
        ['empty', Buffer.alloc(0)],
        ['one', Buffer.from('1')],
        ['large', large]
      ] as const) {
        await fs.writeFile(path.join(root, name), bytes);
        const read = await files.readFile(path.join(root, name));
        expect([name, read.bytes.equals(bytes), read.stats.size]).toEqual([
          name,
          true,
          bytes.length
        ]);
      }
    });

    it('refuses directories and FIFOs without blocking', async () => {
      await expect(files.readFile(path.join(root, 'dir'))).rejects.toMatchObject({
        code: 'EISDIR'
      });
      execFileSync('mkfifo', [path.join(root, 'fifo')]);
      await expect(files.readFile(path.join(root, 'fifo'))).rejects.toMatchObject({
        code: 'ENOTREGULAR'
      });
    });
  });

  describe('#rename()', () => {
    it('renames within one directory and between two, never following the names', async () => {
      await fs.writeFile(path.join(root, 'dir', 'a.txt'), 'a');
      await files.rename(path.join(root, 'dir', 'a.txt'), path.join(root, 'dir', 'b.txt'));
      await files.rename(path.join(root, 'dir', 'b.txt'), path.join(root, 'c.txt'));
      expect(await fs.readFile(path.join(root, 'c.txt'), 'utf8')).toBe('a');
      expect(await fs.readdir(path.join(root, 'dir'))).toEqual([]);
      await fs.symlink(path.join(outside, 'secret.txt'), path.join(root, 'dir', 'link'));
      await files.rename(path.join(root, 'dir', 'link'), path.join(root, 'dir', 'moved'));
      expect(await fs.readlink(path.join(root, 'dir', 'moved'))).toBe(
        path.join(outside, 'secret.txt')
      );
      expect(await fs.readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe(SECRET);
    });

    it('refuses a rename within a directory that leads outside', async () => {
      await swapDirForLink();
      await expect(
        files.rename(path.join(root, 'dir', 'secret.txt'), path.join(root, 'dir', 'x.txt'))
      ).rejects.toMatchObject({ code: 'EOUTSIDEROOT' });
      expect(await fs.readdir(outside)).toEqual(['secret.txt']);
    });
  });

  describe('#link() / #unlinkIfSame()', () => {
    const at = (...names: string[]) => path.join(root, ...names);

    it('gives a file a second name, within one directory and between two, then removes the old one', async () => {
      await fs.writeFile(at('dir', 'a.txt'), 'a');
      const { ino } = await fs.stat(at('dir', 'a.txt'));
      const linked = await files.link(at('dir', 'a.txt'), at('dir', 'b.txt'));
      expect(linked.ino).toBe(ino);
      expect((await fs.stat(at('dir', 'b.txt'))).ino).toBe(ino);
      expect((await fs.stat(at('dir', 'a.txt'))).nlink).toBe(2);
      expect(await files.unlinkIfSame(at('dir', 'a.txt'), linked)).toBe(true);
      expect(await fs.readdir(at('dir'))).toEqual(['b.txt']);

      const again = await files.link(at('dir', 'b.txt'), at('c.txt'));
      expect(await files.unlinkIfSame(at('dir', 'b.txt'), again)).toBe(true);
      expect(await fs.readFile(at('c.txt'), 'utf8')).toBe('a');
      expect((await fs.stat(at('c.txt'))).nlink).toBe(1);
      expect(await fs.readdir(at('dir'))).toEqual([]);
    });

    it('never replaces an existing name (EEXIST)', async () => {
      await fs.writeFile(at('dir', 'a.txt'), 'a');
      await fs.writeFile(at('dir', 'b.txt'), 'b');
      await expect(files.link(at('dir', 'a.txt'), at('dir', 'b.txt'))).rejects.toMatchObject({
        code: 'EEXIST'
      });
      expect(await fs.readFile(at('dir', 'b.txt'), 'utf8')).toBe('b');
    });

    it('refuses directories and symlinks, and never follows either name', async () => {
      await fs.mkdir(at('dir', 'sub'));
      await fs.symlink(path.join(outside, 'secret.txt'), at('dir', 'link'));
      await expect(files.link(at('dir', 'sub'), at('dir', 'x'))).rejects.toMatchObject({
        code: 'ENOTREGULAR'
      });
      await expect(files.link(at('dir', 'link'), at('dir', 'x'))).rejects.toMatchObject({
        code: 'ENOTREGULAR'
      });
      await fs.writeFile(at('a.txt'), 'a');
      await fs.symlink(path.join(outside, 'new.txt'), at('dangling'));
      await expect(files.link(at('a.txt'), at('dangling'))).rejects.toMatchObject({
        code: 'EEXIST'
      });
      expect(await outsideNames()).toEqual(['secret.txt']);
    });

    it('refuses a link in a directory that leads outside', async () => {
      await swapDirForLink();
      await expect(
        files.link(path.join(root, 'dir', 'secret.txt'), at('stolen.txt'))
      ).rejects.toMatchObject({ code: 'EOUTSIDEROOT' });
      await fs.writeFile(at('a.txt'), 'a');
      await expect(files.link(at('a.txt'), at('dir', 'planted.txt'))).rejects.toMatchObject({
        code: 'EOUTSIDEROOT'
      });
      expect(await outsideNames()).toEqual(['secret.txt']);
    });

    it('leaves a file that replaced the old name, and answers false for a name gone', async () => {
      await fs.writeFile(at('a.txt'), 'old');
      const linked = await files.link(at('a.txt'), at('b.txt'));
      await fs.writeFile(at('new.txt'), 'new');
      await fs.rename(at('new.txt'), at('a.txt'));
      expect(await files.unlinkIfSame(at('a.txt'), linked)).toBe(false);
      expect(await fs.readFile(at('a.txt'), 'utf8')).toBe('new');
      expect(await fs.readFile(at('b.txt'), 'utf8')).toBe('old');
      await fs.unlink(at('a.txt'));
      expect(await files.unlinkIfSame(at('a.txt'), linked)).toBe(false);
      // No temporary name is left.
      expect((await fs.readdir(root)).sort()).toEqual(['b.txt', 'dir']);
    });
  });

  describe('#remove()', () => {
    it('removes a tree; a link to an outside directory inside it goes, its target stays', async () => {
      await fs.mkdir(path.join(root, 'dir', 'deep', 'deeper'), { recursive: true });
      await fs.writeFile(path.join(root, 'dir', 'deep', 'deeper', 'f.txt'), 'x');
      await fs.symlink(outside, path.join(root, 'dir', 'deep', 'out'));
      await files.remove(path.join(root, 'dir'));
      expect(await fs.readdir(root)).toEqual([]);
      expect(await outsideNames()).toEqual(['secret.txt']);
    });
  });

  describe('#copyTree()', () => {
    it('follows links inside, leaves out links outside and dangling ones, keeps times', async () => {
      await fs.mkdir(path.join(root, 'dir', 'sub'));
      await fs.writeFile(path.join(root, 'dir', 'sub', 'f.txt'), 'file');
      await fs.utimes(path.join(root, 'dir', 'sub', 'f.txt'), 1_000_000, 1_000_000);
      await fs.symlink('sub/f.txt', path.join(root, 'dir', 'inside-link.txt'));
      await fs.symlink(path.join(outside, 'secret.txt'), path.join(root, 'dir', 'secret.txt'));
      await fs.symlink(outside, path.join(root, 'dir', 'out-dir'));
      await fs.symlink('nothing', path.join(root, 'dir', 'dangling'));
      await fs.symlink('..', path.join(root, 'dir', 'sub', 'loop'));
      expect(await files.treeSize(path.join(root, 'dir'))).toBe(4);
      await files.copyTree(path.join(root, 'dir'), path.join(root, 'new', 'copy'));
      const copy = path.join(root, 'new', 'copy');
      expect((await fs.readdir(copy)).sort()).toEqual(['inside-link.txt', 'sub']);
      expect(await fs.readdir(path.join(copy, 'sub'))).toEqual(['f.txt']);
      expect(await fs.readFile(path.join(copy, 'inside-link.txt'), 'utf8')).toBe('file');
      expect((await fs.lstat(path.join(copy, 'inside-link.txt'))).isFile()).toBe(true);
      expect((await fs.stat(path.join(copy, 'sub', 'f.txt'))).mtimeMs).toBe(1_000_000_000);
    });

    it('refuses to copy a directory into itself, and never overwrites a file', async () => {
      await fs.writeFile(path.join(root, 'dir', 'f.txt'), 'source');
      await expect(
        files.copyTree(path.join(root, 'dir'), path.join(root, 'dir', 'inner'))
      ).rejects.toMatchObject({ code: 'EINVAL' });
      expect(await fs.readdir(path.join(root, 'dir'))).toEqual(['f.txt']);
      await fs.mkdir(path.join(root, 'existing'));
      await fs.writeFile(path.join(root, 'existing', 'f.txt'), 'kept');
      await expect(
        files.copyTree(path.join(root, 'dir'), path.join(root, 'existing'))
      ).rejects.toMatchObject({ code: 'EEXIST' });
      expect(await fs.readFile(path.join(root, 'existing', 'f.txt'), 'utf8')).toBe('kept');
    });
  });
});

describe('ContentsManager through RootFs', () => {
  let manager: ContentsManager;
  beforeEach(() => {
    manager = new ContentsManager({ rootDir: root, deleteToTrash: false });
  });

  it('answers 400 for a chunk to a dangling symlink and creates nothing', async () => {
    await fs.symlink(path.join(outside, 'up.bin'), path.join(root, 'up.bin'));
    for (const chunk of [2, -1]) {
      await expect(
        manager.put('up.bin', { type: 'file', format: 'base64', content: 'AAEC', chunk })
      ).rejects.toMatchObject({ status: 400, reason: 'dangling symlink' });
    }
    await expect(
      manager.put('up.bin', { type: 'file', format: 'text', content: 'x' })
    ).rejects.toMatchObject({ status: 400, reason: 'dangling symlink' });
    expect(await outsideNames()).toEqual(['secret.txt']);
  });

  it('answers 404 outside root for every operation through a swapped directory', async () => {
    await fs.writeFile(path.join(root, 'dir', 'a.txt'), 'a');
    await swapDirForLink();
    const file = { type: 'file', format: 'text', content: 'x' } as const;
    const attempts: Array<[string, () => Promise<unknown>]> = [
      ['get', () => manager.get('dir/secret.txt')],
      ['list', () => manager.get('dir')],
      ['save', () => manager.save('dir/new.txt', file)],
      ['mkdir', () => manager.save('dir/newdir', { type: 'directory' })],
      ['delete', () => manager.delete('dir/secret.txt')],
      ['rename', () => manager.rename('dir/secret.txt', 'stolen.txt')],
      ['copy', () => manager.copy('dir/secret.txt', '')],
      ['checkpoint', () => manager.createCheckpoint('dir/secret.txt')]
    ];
    for (const [label, attempt] of attempts) {
      await expect(attempt().then(() => label)).rejects.toMatchObject({ status: 404 });
    }
    expect(await outsideNames()).toEqual(['secret.txt']);
    expect(await fs.readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe(SECRET);
    expect(await fs.readdir(root)).toEqual(['dir', 'dir.real']);
  });
});
