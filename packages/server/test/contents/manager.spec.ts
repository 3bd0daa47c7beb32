import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { createNotary } from '../../src/app';
import { ContentsManager, type ISavedEvent } from '../../src/contents/manager';
import { RootFs } from '../../src/contents/rootFs';

async function makeRoot(): Promise<string> {
  return fs.mkdtemp(path.join(os.tmpdir(), 'manager-spec-'));
}

describe('ContentsManager', () => {
  let root: string;
  let manager: ContentsManager;
  beforeEach(async () => {
    root = await makeRoot();
    manager = new ContentsManager({ rootDir: root, deleteToTrash: false });
  });
  afterEach(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  describe('#prepare()', () => {
    it("opens the notary's database before any save, and writes nothing in the root", async () => {
      const dataDir = await makeRoot();
      const prepared = new ContentsManager({ rootDir: root, notary: createNotary(dataDir) });
      try {
        await prepared.prepare();
        expect((await fs.readdir(dataDir)).sort()).toEqual(
          expect.arrayContaining(['nbsignatures.db', 'notebook_secret'])
        );
        expect(await fs.readdir(root)).toEqual([]);
      } finally {
        await prepared.close();
        await fs.rm(dataDir, { recursive: true, force: true });
      }
    });

    it('resolves without a notary', async () => {
      await expect(manager.prepare()).resolves.toBeUndefined();
    });
  });

  describe('#onSaved()', () => {
    it('reports the path, type and exact bytes of every save', async () => {
      const events: ISavedEvent[] = [];
      manager.onSaved(event => events.push(event));
      await manager.put('a.txt', { type: 'file', format: 'text', content: 'hello' });
      await manager.put('n.ipynb', {
        type: 'notebook',
        content: { cells: [], metadata: {}, nbformat: 4, nbformat_minor: 5 }
      });
      expect(events.map(event => [event.path, event.type])).toEqual([
        ['a.txt', 'file'],
        ['n.ipynb', 'notebook']
      ]);
      expect(events[0].bytes.toString()).toBe('hello');
      expect(events[1].bytes.equals(await fs.readFile(path.join(root, 'n.ipynb')))).toBe(true);
    });

    it('never lets a failing listener fail the save', async () => {
      manager.onSaved(() => {
        throw new Error('listener broke');
      });
      const { model } = await manager.put('b.txt', { type: 'file', format: 'text', content: 'x' });
      expect(model.name).toBe('b.txt');
      expect(await fs.readFile(path.join(root, 'b.txt'), 'utf8')).toBe('x');
    });

    it('reports a chunked upload once, with the whole file, on the last chunk', async () => {
      const events: ISavedEvent[] = [];
      manager.onSaved(event => events.push(event));
      const parts = ['first-', 'second-', 'last'];
      for (const [index, part] of parts.entries()) {
        await manager.put('up.bin', {
          type: 'file',
          format: 'base64',
          content: Buffer.from(part).toString('base64'),
          chunk: index === parts.length - 1 ? -1 : index + 1
        });
      }
      expect(events).toHaveLength(1);
      expect(events[0].bytes.toString()).toBe('first-second-last');
    });
  });

  describe('#put()', () => {
    it('answers created for new files and not for saves over them', async () => {
      const first = await manager.put('c.txt', { type: 'file', format: 'text', content: '1' });
      const second = await manager.put('c.txt', { type: 'file', format: 'text', content: '2' });
      expect([first.created, second.created]).toEqual([true, false]);
    });

    it('leaves no temporary file behind and keeps the mode of the file it replaces', async () => {
      await manager.put('m.txt', { type: 'file', format: 'text', content: 'one' });
      await fs.chmod(path.join(root, 'm.txt'), 0o640);
      await manager.put('m.txt', { type: 'file', format: 'text', content: 'two' });
      expect(await fs.readdir(root)).toEqual(['m.txt']);
      expect((await fs.stat(path.join(root, 'm.txt'))).mode & 0o777).toBe(0o640);
    });

    it('writes through a symlink inside the root instead of replacing the link', async () => {
      await fs.writeFile(path.join(root, 'target.txt'), 'old');
      await fs.symlink('target.txt', path.join(root, 'link.txt'));
      await manager.put('link.txt', { type: 'file', format: 'text', content: 'new' });
      expect((await fs.lstat(path.join(root, 'link.txt'))).isSymbolicLink()).toBe(true);
      expect(await fs.readFile(path.join(root, 'target.txt'), 'utf8')).toBe('new');
    });

    it('refuses a save whose parent directory is missing with 404', async () => {
      await expect(
        manager.put('missing/x.txt', { type: 'file', format: 'text', content: '' })
      ).rejects.toMatchObject({
        status: 404
      });
    });

    it('refuses invalid base64 with 400', async () => {
      await expect(
        manager.put('x.bin', { type: 'file', format: 'base64', content: 'abc' })
      ).rejects.toMatchObject({
        status: 400
      });
    });
  });

  describe('a new notebook and its first checkpoint, written at once', () => {
    const notebook = { cells: [], metadata: {}, nbformat: 4, nbformat_minor: 5 };

    it('writes the checkpoint with the bytes and times of the file', async () => {
      await fs.mkdir(path.join(root, '.ipynb_checkpoints'));
      await manager.put('n.ipynb', { type: 'notebook', content: notebook });
      const file = path.join(root, 'n.ipynb');
      const copy = path.join(root, '.ipynb_checkpoints', 'n-checkpoint.ipynb');
      expect((await fs.readFile(copy)).equals(await fs.readFile(file))).toBe(true);
      // Within a millisecond: times are set through a Date, as the copy from the file was before.
      const [copied, written] = [(await fs.stat(copy)).mtimeMs, (await fs.stat(file)).mtimeMs];
      expect(Math.abs(copied - written)).toBeLessThan(1);
    });

    it('answers a checkpoint that fails before the file is written with its error', async () => {
      // A directory where the checkpoint goes: its write fails at once, the file's takes fsyncs.
      // (That the early failure is handled at once, not left to end the process, is what the
      // races integration test caught: jest's sandbox does not see unhandled rejections.)
      await fs.mkdir(path.join(root, '.ipynb_checkpoints', 'n-checkpoint.ipynb'), {
        recursive: true
      });
      await expect(
        manager.put('n.ipynb', { type: 'notebook', content: notebook })
      ).rejects.toMatchObject({ status: 400 });
      // The file itself was written, as Jupyter's is before its checkpoint fails.
      expect(JSON.parse(await fs.readFile(path.join(root, 'n.ipynb'), 'utf8'))).toMatchObject({
        nbformat: 4
      });
    });
  });

  describe('#delete()', () => {
    it('refuses the root and non-empty directories', async () => {
      await fs.mkdir(path.join(root, 'd'));
      await fs.writeFile(path.join(root, 'd', 'f'), '');
      await expect(manager.delete('')).rejects.toMatchObject({ status: 400 });
      await expect(manager.delete('d')).rejects.toMatchObject({ status: 400 });
    });

    it('moves items to the trash by default, as Jupyter does', async () => {
      const home = await makeRoot();
      const previous = process.env.XDG_DATA_HOME;
      process.env.XDG_DATA_HOME = home;
      try {
        const trashing = new ContentsManager({ rootDir: root });
        await fs.writeFile(path.join(root, 'gone.txt'), 'bye');
        await trashing.delete('gone.txt');
        expect(await fs.readFile(path.join(home, 'Trash', 'files', 'gone.txt'), 'utf8')).toBe(
          'bye'
        );
        const info = await fs.readFile(
          path.join(home, 'Trash', 'info', 'gone.txt.trashinfo'),
          'utf8'
        );
        expect(info).toContain(`Path=${path.join(root, 'gone.txt')}`);
      } finally {
        if (previous === undefined) delete process.env.XDG_DATA_HOME;
        else process.env.XDG_DATA_HOME = previous;
        await fs.rm(home, { recursive: true, force: true });
      }
    });
  });
});

describe('ContentsManager#rename() while a listener announces changes', () => {
  let root: string;
  let manager: ContentsManager;
  beforeEach(async () => {
    root = await makeRoot();
    manager = new ContentsManager({ rootDir: root, deleteToTrash: false });
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await fs.rm(root, { recursive: true, force: true });
  });

  const at = (name: string) => path.join(root, name);
  const inode = async (name: string) => (await fs.lstat(at(name))).ino;
  const exists = (name: string) =>
    fs.lstat(at(name)).then(
      () => true,
      () => false
    );
  /** The entries of the root, but the checkpoints' folder. */
  const entries = async () =>
    (await fs.readdir(root)).filter(name => name !== '.ipynb_checkpoints').sort();
  /** What each listener call found on disk, for a rename of `a` to `b`. */
  const seen = async (from: string, to: string) => ({
    from: await exists(from),
    to: await exists(to),
    same: (await exists(from)) && (await exists(to)) && (await inode(from)) === (await inode(to))
  });

  it('gives the new name first, tells the listeners while both names are the file, then removes the old one', async () => {
    await fs.writeFile(at('a.ipynb'), '{"cells": []}');
    const mtime = new Date('2024-01-02T03:04:05Z');
    await fs.utimes(at('a.ipynb'), mtime, mtime);
    const ino = await inode('a.ipynb');
    const announced: unknown[] = [];
    const told: unknown[] = [];
    manager.onChanged(
      async change => {
        announced.push({ change, ...(await seen('a.ipynb', 'b.ipynb')) });
      },
      { announces: true }
    );
    manager.onChanged(change => void told.push(change));

    const model = await manager.rename('a.ipynb', 'b.ipynb');

    const change = { action: 'rename', from: 'a.ipynb', to: 'b.ipynb' };
    expect(announced).toEqual([{ change, from: true, to: true, same: true }]);
    expect(told).toEqual([change]);
    expect(model).toMatchObject({ path: 'b.ipynb', name: 'b.ipynb', type: 'notebook' });
    // The same file, untouched: its inode, bytes and mtime.
    expect(await inode('b.ipynb')).toBe(ino);
    expect((await fs.stat(at('b.ipynb'))).mtime).toEqual(mtime);
    expect(await fs.readFile(at('b.ipynb'), 'utf8')).toBe('{"cells": []}');
    expect((await fs.stat(at('b.ipynb'))).nlink).toBe(1);
    // Nothing else is left, not even a hidden temporary name.
    expect(await entries()).toEqual(['b.ipynb']);
  });

  it('keeps the old name until the announcing listeners are done', async () => {
    await fs.writeFile(at('a.txt'), 'a');
    let finish = () => {};
    const pending = new Promise<void>(resolve => (finish = resolve));
    manager.onChanged(() => pending, { announces: true });

    let done = false;
    const renaming = manager.rename('a.txt', 'b.txt').then(model => {
      done = true;
      return model;
    });
    await new Promise(resolve => setTimeout(resolve, 100));
    expect({ done, ...(await seen('a.txt', 'b.txt')) }).toEqual({
      done: false,
      from: true,
      to: true,
      same: true
    });
    finish();
    await expect(renaming).resolves.toMatchObject({ path: 'b.txt' });
    expect(await entries()).toEqual(['b.txt']);
  });

  it('waits at most announceTimeoutMs for a listener that never finishes', async () => {
    const bounded = new ContentsManager({ rootDir: root, announceTimeoutMs: 150 });
    await fs.writeFile(at('a.txt'), 'a');
    bounded.onChanged(() => new Promise<void>(() => {}), { announces: true });
    const started = Date.now();
    await bounded.rename('a.txt', 'b.txt');
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(140);
    expect(waited).toBeLessThan(1500);
    expect(await entries()).toEqual(['b.txt']);
  });

  it('renames all the same when an announcing listener throws or rejects', async () => {
    await fs.writeFile(at('a.txt'), 'a');
    manager.onChanged(
      () => {
        throw new Error('thrown');
      },
      { announces: true }
    );
    manager.onChanged(() => Promise.reject(new Error('rejected')), { announces: true });
    await expect(manager.rename('a.txt', 'b.txt')).resolves.toMatchObject({ path: 'b.txt' });
    expect(await entries()).toEqual(['b.txt']);
  });

  it('answers 409 for a new name that appears after the check, and replaces nothing', async () => {
    await fs.writeFile(at('a.txt'), 'mine');
    const link = RootFs.prototype.link;
    jest.spyOn(RootFs.prototype, 'link').mockImplementationOnce(async function (
      this: RootFs,
      fromOs: string,
      toOs: string
    ) {
      await fs.writeFile(toOs, 'theirs');
      return link.call(this, fromOs, toOs);
    });
    const told: unknown[] = [];
    manager.onChanged(change => void told.push(change), { announces: true });
    await expect(manager.rename('a.txt', 'b.txt')).rejects.toMatchObject({ status: 409 });
    expect(await fs.readFile(at('a.txt'), 'utf8')).toBe('mine');
    expect(await fs.readFile(at('b.txt'), 'utf8')).toBe('theirs');
    expect(told).toEqual([]);
  });

  it('answers 409 for a new name that exists, and 404 for an old one that does not', async () => {
    manager.onChanged(() => Promise.resolve(), { announces: true });
    await fs.writeFile(at('a.txt'), 'a');
    await fs.writeFile(at('b.txt'), 'b');
    await expect(manager.rename('a.txt', 'b.txt')).rejects.toMatchObject({ status: 409 });
    await expect(manager.rename('missing.txt', 'c.txt')).rejects.toMatchObject({ status: 404 });
    expect(await entries()).toEqual(['a.txt', 'b.txt']);
  });

  it.each(['EPERM', 'ENOTSUP', 'EXDEV', 'EMLINK'])(
    'falls back to rename(2) when the link fails with %s',
    async code => {
      await fs.writeFile(at('a.txt'), 'a');
      jest
        .spyOn(RootFs.prototype, 'link')
        .mockRejectedValueOnce(Object.assign(new Error(code), { code }));
      const looks: Promise<unknown>[] = [];
      manager.onChanged(() => void looks.push(seen('a.txt', 'b.txt')), { announces: true });
      await expect(manager.rename('a.txt', 'b.txt')).resolves.toMatchObject({ path: 'b.txt' });
      // Told after the rename, as without an announcing listener.
      expect(await Promise.all(looks)).toEqual([{ from: false, to: true, same: false }]);
      expect(await entries()).toEqual(['b.txt']);
    }
  );

  it('renames directories and symlinks with rename(2), and moves what is in a directory', async () => {
    await fs.mkdir(at('dir'));
    await fs.writeFile(at('dir/inside.txt'), 'x');
    await fs.symlink('dir/inside.txt', at('link.txt'));
    const looks: Promise<unknown>[] = [];
    manager.onChanged(
      change => {
        if (change.action !== 'rename') return;
        looks.push(seen(change.from, change.to).then(found => ({ change, ...found })));
      },
      { announces: true }
    );
    await manager.rename('dir', 'folder');
    await manager.rename('link.txt', 'moved.txt');
    const change = (from: string, to: string) => ({ action: 'rename', from, to });
    expect(await Promise.all(looks)).toEqual([
      { change: change('dir', 'folder'), from: false, to: true, same: false },
      { change: change('link.txt', 'moved.txt'), from: false, to: true, same: false }
    ]);
    expect(await fs.readlink(at('moved.txt'))).toBe('dir/inside.txt');
    expect(await fs.readFile(at('folder/inside.txt'), 'utf8')).toBe('x');
  });

  it('renames with rename(2) when no listener announces', async () => {
    await fs.writeFile(at('a.txt'), 'a');
    const link = jest.spyOn(RootFs.prototype, 'link');
    const looks: Promise<unknown>[] = [];
    manager.onChanged(() => void looks.push(seen('a.txt', 'b.txt')));
    await manager.rename('a.txt', 'b.txt');
    expect(link).not.toHaveBeenCalled();
    expect(await Promise.all(looks)).toEqual([{ from: false, to: true, same: false }]);
  });

  it('leaves a file that replaced the old name meanwhile', async () => {
    await fs.writeFile(at('a.txt'), 'before');
    manager.onChanged(
      async () => {
        // Someone saves the old name while the rename is announced (write and rename over it).
        await fs.writeFile(at('.a.txt.new'), 'saved meanwhile');
        await fs.rename(at('.a.txt.new'), at('a.txt'));
      },
      { announces: true }
    );
    await manager.rename('a.txt', 'b.txt');
    expect(await fs.readFile(at('b.txt'), 'utf8')).toBe('before');
    expect(await fs.readFile(at('a.txt'), 'utf8')).toBe('saved meanwhile');
    expect(await entries()).toEqual(['a.txt', 'b.txt']);
  });

  it('keeps both names, and says so, when the old one cannot be removed', async () => {
    const logged: string[] = [];
    const logging = new ContentsManager({ rootDir: root, log: message => logged.push(message) });
    logging.onChanged(() => Promise.resolve(), { announces: true });
    await fs.writeFile(at('a.txt'), 'a');
    jest
      .spyOn(RootFs.prototype, 'unlinkIfSame')
      .mockRejectedValueOnce(
        Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' })
      );
    await expect(logging.rename('a.txt', 'b.txt')).resolves.toMatchObject({ path: 'b.txt' });
    expect(await entries()).toEqual(['a.txt', 'b.txt']);
    expect(await fs.readFile(at('a.txt'), 'utf8')).toBe('a');
    expect(logged).toEqual([
      'renamed a.txt to b.txt, but the old name stays: EACCES: permission denied'
    ]);
  });

  it('renames one file twice at once as rename(2) would: the second finds it gone', async () => {
    await fs.writeFile(at('a.txt'), 'a');
    manager.onChanged(() => new Promise<void>(resolve => setTimeout(resolve, 30)), {
      announces: true
    });
    const [first, second] = await Promise.allSettled([
      manager.rename('a.txt', 'b.txt'),
      manager.rename('a.txt', 'c.txt')
    ]);
    expect(first).toMatchObject({ status: 'fulfilled', value: { path: 'b.txt' } });
    expect(second).toMatchObject({ status: 'rejected', reason: { status: 404 } });
    expect(await entries()).toEqual(['b.txt']);
    // And the next rename of that name goes at once.
    await fs.writeFile(at('a.txt'), 'again');
    await expect(manager.rename('a.txt', 'd.txt')).resolves.toMatchObject({ path: 'd.txt' });
  });

  it('moves the checkpoints, and holds both names from the write gates until the old one is gone', async () => {
    await fs.writeFile(at('a.txt'), 'a');
    await manager.createCheckpoint('a.txt');
    const gates: string[] = [];
    manager.addWriteGate(apiPath => {
      gates.push(`hold ${apiPath}`);
      return () => gates.push(`release ${apiPath}`);
    });
    manager.onChanged(
      async () => {
        gates.push(`announced; a.txt there: ${await exists('a.txt')}`);
      },
      { announces: true }
    );
    await manager.rename('a.txt', 'b.txt');
    expect(gates).toEqual([
      'hold a.txt',
      'hold b.txt',
      'announced; a.txt there: true',
      'release a.txt',
      'release b.txt'
    ]);
    expect(await manager.listCheckpoints('b.txt')).toHaveLength(1);
    expect(await manager.listCheckpoints('a.txt')).toEqual([]);
  });
});
