import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { createNotary } from '../../src/app';
import { ContentsManager, type ISavedEvent } from '../../src/contents/manager';

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
