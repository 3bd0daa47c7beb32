/**
 * Differential conformance: DELETE (upstream test_api.py's delete tests and test_manager.py's
 * test_delete_root), checkpoints that follow, symlinks, the trash, and the non-empty directory
 * rule when the trash is off.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  conformanceSuite,
  contentsPath,
  del,
  get,
  join2,
  type Conformance
} from '../support/compare';
import {
  TEST_API_DIRS,
  TEST_API_FOLDERS,
  diffSnapshots,
  snapshotDir,
  type DiskEntry
} from '../support/tree';

type Model = Record<string, unknown>;

/** The home trash of each side: Jupyter's isolated HOME, and ours ($XDG_DATA_HOME set by the harness). */
function trashDirs(env: Conformance): [string, string] {
  const ours = env.ourServer as { homeDir?: string };
  return [
    join(env.jupyterServer.homeDir, '.local', 'share', 'Trash'),
    // A second Jupyter Server plays "ours" in the harness self-test (CONFORMANCE_OURS=jupyter).
    ours.homeDir !== undefined
      ? join(ours.homeDir, '.local', 'share', 'Trash')
      : join(String(process.env.XDG_DATA_HOME), 'Trash')
  ];
}

/** Compare what both trashes hold (`files/` byte for byte, `info/` by name); differences fail the test. */
async function compareTrash(env: Conformance): Promise<void> {
  const [jt, ot] = trashDirs(env);
  const list = async (dir: string): Promise<string[]> =>
    (await readdir(dir).catch(() => [] as string[])).sort();
  const [ji, oi] = [await list(join(jt, 'info')), await list(join(ot, 'info'))];
  if (JSON.stringify(ji) !== JSON.stringify(oi)) {
    env.problem(`trash info/ differs: jupyter ${JSON.stringify(ji)}, ours ${JSON.stringify(oi)}`);
  }
  const empty = new Map<string, DiskEntry>();
  const files = diffSnapshots(
    await snapshotDir(join(jt, 'files')).catch(() => empty),
    await snapshotDir(join(ot, 'files')).catch(() => empty)
  );
  for (const d of files) env.problem(`trash files/ differs: ${d.text}`);
}

describe('with the trash (Jupyter default delete_to_trash=True)', () => {
  const env = conformanceSuite();

  beforeEach(async () => {
    for (const dir of trashDirs(env)) await rm(dir, { recursive: true, force: true });
  });

  test('test_delete', async () => {
    for (const [dir, name] of TEST_API_DIRS) {
      const { jupyter } = await env.both(del(join2(dir, `${name}.ipynb`)));
      expect(jupyter.status).toBe(204);
    }
    await compareTrash(env);
  });

  test('test_delete_dirs', async () => {
    for (const folder of [...TEST_API_FOLDERS, '/'].sort((a, b) => b.length - a.length)) {
      const listing = await env.both(get(folder === '/' ? '' : folder));
      for (const model of (listing.jupyter.json as Model).content as Model[]) {
        await env.both(del(String(model.path)));
      }
    }
    const { jupyter } = await env.both(get(''));
    expect((jupyter.json as Model).content).toEqual([]);
    await compareTrash(env);
  });

  test('test_delete_non_empty_dir', async () => {
    expect((await env.both(del('å b'))).jupyter.status).toBe(204);
    expect((await env.both(get('å b'))).jupyter.status).toBe(404);
    await compareTrash(env);
  });

  test('test_delete_hidden_dir', async () => {
    expect((await env.both(del('.hidden'))).jupyter.status).toBe(400);
  });

  test('test_delete_hidden_file', async () => {
    expect((await env.both(del('.hidden/test.txt'))).jupyter.status).toBe(400);
    expect((await env.both(del('.hidden.txt'))).jupyter.status).toBe(400);
  });

  test('test_delete_root', async () => {
    expect((await env.both({ method: 'DELETE', path: 'api/contents' })).jupyter.status).toBe(400);
    expect((await env.both({ method: 'DELETE', path: 'api/contents/' })).jupyter.status).toBe(400);
  });

  test('missing items, twice, and names that clash in the trash', async () => {
    expect((await env.both(del('nope.txt'))).jupyter.status).toBe(404);
    expect((await env.both(del('foo/a.txt'))).jupyter.status).toBe(204);
    expect((await env.both(del('foo/a.txt'))).jupyter.status).toBe(404);
    // Same name again, from another directory.
    expect((await env.both(del('ordering/b.txt'))).jupyter.status).toBe(204);
    expect((await env.both(del('foo/b.txt'))).jupyter.status).toBe(204);
    await compareTrash(env);
  });

  test('checkpoints follow a deleted file', async () => {
    for (const p of ['foo/a.ipynb', 'foo/a.txt']) {
      expect(
        (await env.both({ method: 'POST', path: contentsPath(p, 'checkpoints') })).jupyter.status
      ).toBe(201);
    }
    await env.compareDisk('after creating checkpoints');
    expect((await env.both(del('foo/a.ipynb'))).jupyter.status).toBe(204);
    expect((await env.both(del('foo/a.txt'))).jupyter.status).toBe(204);
    await env.both({ method: 'GET', path: contentsPath('foo/a.ipynb', 'checkpoints') });
  });

  test('a directory that holds only checkpoints, an empty directory', async () => {
    await env.writeBoth('cponly/.ipynb_checkpoints/x-checkpoint.ipynb', '{}');
    await env.mkdirBoth('emptydir');
    expect((await env.both(del('cponly'))).jupyter.status).toBe(204);
    expect((await env.both(del('emptydir'))).jupyter.status).toBe(204);
    await compareTrash(env);
  });

  test('symlinks: the link goes, its target stays; a directory of links that lead outside', async () => {
    expect((await env.both(del('links/inside.txt'))).jupyter.status).toBe(204);
    expect((await env.both(get('foo/a.txt'))).jupyter.status).toBe(200);
    // A broken link does not "exist" for Jupyter.
    expect((await env.both(del('links/broken.txt'))).jupyter.status).toBe(404);
    expect((await env.both(del('links'))).jupyter.status).toBe(204);
    await compareTrash(env);
  });

  test('unicode and special names', async () => {
    expect((await env.both(del("special ünï cødé/quote !'()*.txt"))).jupyter.status).toBe(204);
    expect((await env.both(del('special ünï cødé/cafe\u0301 nfd.txt'))).jupyter.status).toBe(204);
    expect(
      (await env.both(del('special ünï cødé/hash # question ? percent %.txt'))).jupyter.status
    ).toBe(204);
    expect((await env.both(del('special ünï cødé'))).jupyter.status).toBe(204);
    await compareTrash(env);
  });
});

describe('without the trash (delete_to_trash=False): the non-empty directory rule', () => {
  const env = conformanceSuite({
    jupyterArgs: ['--FileContentsManager.delete_to_trash=False'],
    ourContents: { deleteToTrash: false }
  });

  test('non-empty directories are refused, checkpoints do not count', async () => {
    expect((await env.both(del('å b'))).jupyter.status).toBe(400);
    expect((await env.both(del('foo'))).jupyter.status).toBe(400);
    await env.writeBoth('cponly/.ipynb_checkpoints/x-checkpoint.ipynb', '{}');
    expect((await env.both(del('cponly'))).jupyter.status).toBe(204);
    await env.mkdirBoth('emptydir');
    expect((await env.both(del('emptydir'))).jupyter.status).toBe(204);
    expect((await env.both(del('foo/a.ipynb'))).jupyter.status).toBe(204);
    expect((await env.both(del('links/inside.txt'))).jupyter.status).toBe(204);
    expect((await env.both(del('.hidden'))).jupyter.status).toBe(400);
    expect((await env.both({ method: 'DELETE', path: 'api/contents' })).jupyter.status).toBe(400);
  });
});

describe('without the trash, always_delete_dir=True', () => {
  const env = conformanceSuite({
    jupyterArgs: [
      '--FileContentsManager.delete_to_trash=False',
      '--FileContentsManager.always_delete_dir=True'
    ],
    ourContents: { deleteToTrash: false, alwaysDeleteDir: true }
  });

  test('non-empty directories are deleted, links are not followed', async () => {
    expect((await env.both(del('å b'))).jupyter.status).toBe(204);
    expect((await env.both(del('links'))).jupyter.status).toBe(204);
    expect((await env.both(get(''))).jupyter.status).toBe(200);
  });
});
