/**
 * FileCheckpoints: Jupyter's layout (`.ipynb_checkpoints/<stem>-checkpoint<ext>` beside the file),
 * moved and deleted with the file, and its directory made again whenever a path is computed.
 */
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { CHECKPOINT_DIR, FileCheckpoints } from '../../src/contents/checkpoints';
import { RootResolver } from '../../src/contents/paths';
import { RootFs } from '../../src/contents/rootFs';

let sandbox: string;
let root: string;
let checkpoints: FileCheckpoints;

beforeEach(async () => {
  sandbox = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'checkpoints-spec-')));
  root = path.join(sandbox, 'root');
  await fs.mkdir(path.join(root, 'd'), { recursive: true });
  checkpoints = new FileCheckpoints(new RootResolver(root), new RootFs(root));
});

afterEach(async () => {
  await fs.rm(sandbox, { recursive: true, force: true });
});

const checkpointFile = (dir: string, name: string): string =>
  path.join(root, dir, CHECKPOINT_DIR, name);

describe('FileCheckpoints', () => {
  describe('#list()', () => {
    it('makes the checkpoint directory, as Jupyter does for any checkpoint path', async () => {
      await fs.writeFile(path.join(root, 'd', 'a.txt'), 'a');
      expect(await checkpoints.list('d/a.txt')).toEqual([]);
      expect((await fs.lstat(path.join(root, 'd', CHECKPOINT_DIR))).isDirectory()).toBe(true);
    });

    it('never makes it through a symlink that leads outside the root', async () => {
      const outside = path.join(sandbox, 'outside');
      await fs.mkdir(outside);
      await fs.symlink(outside, path.join(root, 'd', CHECKPOINT_DIR));
      await fs.writeFile(path.join(root, 'd', 'a.txt'), 'a');
      await expect(checkpoints.create('d/a.txt')).rejects.toThrow();
      expect(await fs.readdir(outside)).toEqual([]);
    });
  });

  describe('#createIfMissing()', () => {
    it("copies the saved bytes with the file's times when there is no checkpoint", async () => {
      const file = path.join(root, 'd', 'a.ipynb');
      await fs.writeFile(file, '{"saved": 1}');
      const mtime = new Date('2024-05-06T07:08:09.123Z');
      await fs.utimes(file, mtime, mtime);
      await checkpoints.createIfMissing('d/a.ipynb', Buffer.from('{"saved": 1}'));
      const copy = checkpointFile('d', 'a-checkpoint.ipynb');
      expect(await fs.readFile(copy, 'utf8')).toBe('{"saved": 1}');
      expect((await fs.stat(copy)).mtimeMs).toBe((await fs.stat(file)).mtimeMs);
      const [listed] = await checkpoints.list('d/a.ipynb');
      expect(listed.last_modified).toBe('2024-05-06T07:08:09.123000Z');
    });

    it('leaves an existing checkpoint as it is', async () => {
      await fs.writeFile(path.join(root, 'd', 'a.ipynb'), 'first');
      await checkpoints.create('d/a.ipynb');
      await fs.writeFile(path.join(root, 'd', 'a.ipynb'), 'second');
      await checkpoints.createIfMissing('d/a.ipynb', Buffer.from('second'));
      expect(await fs.readFile(checkpointFile('d', 'a-checkpoint.ipynb'), 'utf8')).toBe('first');
    });

    it('writes meanwhile, taking the times and the name only once the file is written', async () => {
      await fs.mkdir(path.join(root, 'd', CHECKPOINT_DIR));
      const file = path.join(root, 'd', 'a.ipynb');
      let finish = (): void => {};
      const saved = new Promise<void>(resolve => (finish = resolve));
      const creating = checkpoints.createIfMissing('d/a.ipynb', Buffer.from('{"new": 1}'), saved);
      await new Promise(resolve => setTimeout(resolve, 50));
      expect(await fs.readdir(path.join(root, 'd', CHECKPOINT_DIR))).not.toContain(
        'a-checkpoint.ipynb'
      );
      await fs.writeFile(file, '{"new": 1}');
      const mtime = new Date('2023-01-02T03:04:05Z');
      await fs.utimes(file, mtime, mtime);
      finish();
      await creating;
      const copy = checkpointFile('d', 'a-checkpoint.ipynb');
      expect(await fs.readFile(copy, 'utf8')).toBe('{"new": 1}');
      expect((await fs.stat(copy)).mtimeMs).toBe(mtime.getTime());
    });

    it('makes nothing, not even a temporary file, when the write fails', async () => {
      await fs.mkdir(path.join(root, 'd', CHECKPOINT_DIR));
      const failed = Promise.reject(new Error('the write failed'));
      await expect(
        checkpoints.createIfMissing('d/a.ipynb', Buffer.from('{}'), failed)
      ).rejects.toThrow('the write failed');
      expect(await fs.readdir(path.join(root, 'd', CHECKPOINT_DIR))).toEqual([]);
    });

    it('creates no checkpoint directory for a write that fails', async () => {
      const failed = Promise.reject(new Error('the write failed'));
      await expect(
        checkpoints.createIfMissing('d/a.ipynb', Buffer.from('{}'), failed)
      ).rejects.toThrow('the write failed');
      expect(await fs.readdir(path.join(root, 'd'))).toEqual([]);
    });

    it('never writes through a checkpoint directory that leads outside the root', async () => {
      const outside = path.join(sandbox, 'outside');
      await fs.mkdir(outside);
      await fs.symlink(outside, path.join(root, 'd', CHECKPOINT_DIR));
      await fs.writeFile(path.join(root, 'd', 'a.ipynb'), '{}');
      await expect(checkpoints.createIfMissing('d/a.ipynb', Buffer.from('{}'))).rejects.toThrow();
      expect(await fs.readdir(outside)).toEqual([]);
    });
  });

  describe('#renameAll()', () => {
    it('moves the checkpoint with its file, in the directory and to another', async () => {
      await fs.writeFile(path.join(root, 'd', 'a.ipynb'), '{}');
      await checkpoints.create('d/a.ipynb');
      await checkpoints.renameAll('d/a.ipynb', 'd/b.ipynb');
      expect(await fs.readdir(path.join(root, 'd', CHECKPOINT_DIR))).toEqual([
        'b-checkpoint.ipynb'
      ]);
      await checkpoints.renameAll('d/b.ipynb', 'c.ipynb');
      expect(await fs.readdir(path.join(root, 'd', CHECKPOINT_DIR))).toEqual([]);
      expect(await fs.readFile(checkpointFile('', 'c-checkpoint.ipynb'), 'utf8')).toBe('{}');
    });

    it('makes no checkpoint directory at the target when there is no checkpoint', async () => {
      await fs.mkdir(path.join(root, 'e'));
      await checkpoints.renameAll('d/a.ipynb', 'e/a.ipynb');
      await expect(fs.lstat(path.join(root, 'e', CHECKPOINT_DIR))).rejects.toMatchObject({
        code: 'ENOENT'
      });
    });
  });

  describe('#deleteAll()', () => {
    it('removes the checkpoint and keeps the directory', async () => {
      await fs.writeFile(path.join(root, 'd', 'a.txt'), 'a');
      await checkpoints.create('d/a.txt');
      await checkpoints.deleteAll('d/a.txt');
      expect(await fs.readdir(path.join(root, 'd', CHECKPOINT_DIR))).toEqual([]);
      await expect(checkpoints.deleteAll('d/a.txt')).resolves.toBeUndefined();
    });
  });
});
