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
