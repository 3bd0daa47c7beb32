import { mkdtempSync, readlinkSync, rmSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArchiveJournal, type IJournalEntry } from '../../src/archive/journal';
import { ContentsManager } from '../../src/contents/manager';

const written = { before: null, after: { ino: 1, size: 3, mtimeMs: 1 } };

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms));

/**
 * The settling window: archived records that stand in for fsyncs are settled together while
 * the archive is busy, and at once when it goes quiet or the journal closes.
 */
describe('ArchiveJournal settling window', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'archive-journal-settling-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const pending = () => ArchiveJournal.pendingCount(dir);

  /** A journal whose settling is recorded, batch by batch (paths only). */
  async function openJournal(
    options: Omit<ArchiveJournal.IOptions, 'beforeForget'> & {
      settle?: (entries: readonly IJournalEntry[]) => Promise<void>;
    } = {}
  ): Promise<{ journal: ArchiveJournal; batches: IJournalEntry[][] }> {
    const batches: IJournalEntry[][] = [];
    const journal = new ArchiveJournal(dir, {
      ...options,
      beforeForget: async entries => {
        batches.push([...entries]);
        await options.settle?.(entries);
      }
    });
    await journal.open();
    return { journal, batches };
  }

  const paths = (batches: IJournalEntry[][]) => batches.map(batch => batch.map(e => e.path));

  test('while other records are on their way, archived ones wait; the last one settles them all at once', async () => {
    const { journal, batches } = await openJournal({ settleWindowMs: 60_000 });
    const saves = [];
    for (const name of ['a', 'b', 'a', 'c']) {
      saves.push(await journal.append(`${name}.ipynb`, Buffer.from(name), { written }));
    }
    for (const save of saves.slice(0, 3)) await journal.remove(save.seq);
    await sleep(50);
    expect(batches).toEqual([]);
    expect(await pending()).toBe(4);

    const removedAt = Date.now();
    await journal.remove(saves[3].seq);
    while (batches.length === 0 && Date.now() - removedAt < 5000) await sleep(1);
    expect(Date.now() - removedAt).toBeLessThan(500);
    expect(paths(batches)).toEqual([['a.ipynb', 'b.ipynb', 'a.ipynb', 'c.ipynb']]);
    await journal.close();
    expect(await pending()).toBe(0);
  });

  test('records waiting hold no content', async () => {
    const { journal, batches } = await openJournal({ settleWindowMs: 60_000 });
    const save = await journal.append('a.ipynb', Buffer.alloc(100_000, 1), { written });
    await journal.remove(save.seq);
    await journal.close();
    expect(batches).toHaveLength(1);
    expect(batches[0][0]).not.toHaveProperty('content');
    expect(batches[0][0]).toMatchObject({ path: 'a.ipynb', written, seq: save.seq });
  });

  test('a plain record archived last ends the window too', async () => {
    const { journal, batches } = await openJournal({ settleWindowMs: 60_000 });
    const save = await journal.append('a.ipynb', Buffer.from('a'), { written });
    const plain = await journal.append('observed.ipynb', Buffer.from('o'), { durable: false });
    await journal.remove(save.seq);
    await sleep(50);
    expect(batches).toEqual([]);
    await journal.remove(plain.seq);
    await sleep(50);
    expect(paths(batches)).toEqual([['a.ipynb']]);
    await journal.close();
    expect(await pending()).toBe(0);
  });

  test('while the archive stays busy, the window ends after settleWindowMs', async () => {
    const { journal, batches } = await openJournal({ settleWindowMs: 200 });
    const stuck = await journal.append('stuck.ipynb', Buffer.from('s'), { written });
    const save = await journal.append('a.ipynb', Buffer.from('a'), { written });
    const removedAt = Date.now();
    await journal.remove(save.seq);
    await sleep(100);
    expect(batches).toEqual([]);
    while (batches.length === 0 && Date.now() - removedAt < 5000) await sleep(5);
    expect(Date.now() - removedAt).toBeGreaterThanOrEqual(190);
    expect(paths(batches)).toEqual([['a.ipynb']]);
    await sleep(20);
    // Marked done: only the record still on its way is pending.
    expect(await pending()).toBe(1);
    await journal.close();
    expect(await pending()).toBe(1);
    expect(stuck.seq).toBeLessThan(save.seq);
  });

  test('a window holding settleWindowMax records is settled at once', async () => {
    const { journal, batches } = await openJournal({ settleWindowMs: 60_000, settleWindowMax: 3 });
    const saves = [];
    for (let i = 0; i < 5; i++) {
      saves.push(await journal.append(`n${i}.ipynb`, Buffer.from(`${i}`), { written }));
    }
    await journal.remove(saves[0].seq);
    await journal.remove(saves[1].seq);
    await sleep(50);
    expect(batches).toEqual([]);
    await journal.remove(saves[2].seq);
    await sleep(50);
    expect(paths(batches)).toEqual([['n0.ipynb', 'n1.ipynb', 'n2.ipynb']]);
    expect(await pending()).toBe(2);
    await journal.close();
  });

  test('close settles the window at once and keeps what was never archived', async () => {
    const { journal, batches } = await openJournal({ settleWindowMs: 60_000 });
    await journal.append('stuck.ipynb', Buffer.from('s'), { written });
    const save = await journal.append('a.ipynb', Buffer.from('a'), { written });
    await journal.remove(save.seq);
    await sleep(20);
    expect(batches).toEqual([]);
    const closingAt = Date.now();
    await journal.close();
    expect(Date.now() - closingAt).toBeLessThan(1000);
    expect(paths(batches)).toEqual([['a.ipynb']]);
    expect(await pending()).toBe(1);

    const again = new ArchiveJournal(dir);
    expect((await again.open()).map(record => record.path)).toEqual(['stuck.ipynb']);
    await again.close();
  });

  test('a window whose settling failed (EIO) stays for the next start; later windows still settle when the archive goes quiet', async () => {
    let fail = true;
    const { journal, batches } = await openJournal({
      settleWindowMs: 60_000,
      settle: () => (fail ? Promise.reject(new Error('EIO')) : Promise.resolve())
    });
    const first = await journal.append('a.ipynb', Buffer.from('a1'), { written });
    await journal.remove(first.seq);
    await sleep(20);
    expect(paths(batches)).toEqual([['a.ipynb']]);
    expect(await pending()).toBe(1);

    fail = false;
    const second = await journal.append('b.ipynb', Buffer.from('b'), { written });
    await journal.remove(second.seq);
    await sleep(20);
    // The failed record is kept, but no longer counts as work on its way.
    expect(paths(batches)).toEqual([['a.ipynb'], ['b.ipynb']]);
    expect(await pending()).toBe(1);
    await journal.close();

    const settled: string[] = [];
    const again = new ArchiveJournal(dir, {
      beforeForget: async entries => {
        settled.push(...entries.map(entry => entry.path));
      }
    });
    const replayed = await again.open();
    expect(replayed.map(record => [record.path, record.content.toString()])).toEqual([
      ['a.ipynb', 'a1']
    ]);
    expect(replayed[0].written).toEqual(written);
    await again.remove(replayed[0].seq);
    await again.close();
    expect(settled).toEqual(['a.ipynb']);
    expect(await pending()).toBe(0);
  });

  test('replayed records count as work on its way until they are removed', async () => {
    const crashed = new ArchiveJournal(dir);
    await crashed.open();
    await crashed.append('a.ipynb', Buffer.from('a'), { written });
    await crashed.append('b.ipynb', Buffer.from('b'), { written });
    // No close: the process dies here.
    const batches: IJournalEntry[][] = [];
    const journal = new ArchiveJournal(dir, {
      settleWindowMs: 60_000,
      beforeForget: async entries => {
        batches.push([...entries]);
      }
    });
    const [a, b] = await journal.open();
    await journal.remove(a.seq);
    await sleep(50);
    expect(batches).toEqual([]);
    await journal.remove(b.seq);
    await sleep(50);
    expect(paths(batches)).toEqual([['a.ipynb', 'b.ipynb']]);
    await journal.close();
    expect(await pending()).toBe(0);
  });
});

describe('ContentsManager.settleJournalled', () => {
  let root: string;
  let manager: ContentsManager;
  /** Real paths of the files and directories fsynced through a FileHandle. */
  let synced: string[];
  let failWith: ((real: string) => Error | undefined) | undefined;
  let restore: () => void;

  beforeEach(async () => {
    root = await fs.realpath(mkdtempSync(join(tmpdir(), 'settle-journalled-')));
    manager = new ContentsManager({ rootDir: root, deleteToTrash: false });
    synced = [];
    failWith = undefined;
    const probe = await fs.open(root, 'r');
    const proto = Object.getPrototypeOf(probe) as { sync: (this: fs.FileHandle) => Promise<void> };
    await probe.close();
    const original = proto.sync;
    proto.sync = async function (this: fs.FileHandle) {
      const real = readlinkSync(`/proc/self/fd/${this.fd}`);
      synced.push(real);
      const error = failWith?.(real);
      if (error) throw error;
      return original.call(this);
    };
    restore = () => {
      proto.sync = original;
    };
  });
  afterEach(async () => {
    restore();
    await fs.rm(root, { recursive: true, force: true });
  });

  const eio = () => Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });

  test('a window syncs each path once and each directory once, after its files', async () => {
    await fs.mkdir(join(root, 'sub'));
    for (const name of ['a.ipynb', 'b.ipynb', 'c.ipynb', 'sub/d.ipynb']) {
      await fs.writeFile(join(root, name), name);
    }
    const saves = ['a.ipynb', 'b.ipynb', 'a.ipynb', 'c.ipynb', 'b.ipynb', 'sub/d.ipynb', 'a.ipynb'];
    await manager.settleJournalled(saves.map(path => ({ path, written })));
    expect([...synced].sort()).toEqual(
      [
        root,
        join(root, 'a.ipynb'),
        join(root, 'b.ipynb'),
        join(root, 'c.ipynb'),
        join(root, 'sub'),
        join(root, 'sub', 'd.ipynb')
      ].sort()
    );
    expect(synced.indexOf(root)).toBeGreaterThan(synced.indexOf(join(root, 'c.ipynb')));
    expect(synced.indexOf(join(root, 'sub'))).toBeGreaterThan(
      synced.indexOf(join(root, 'sub', 'd.ipynb'))
    );
  });

  test('records without a written file sync nothing', async () => {
    await fs.writeFile(join(root, 'a.ipynb'), 'a');
    await manager.settleJournalled([{ path: 'a.ipynb' }, { path: 'a.ipynb', signature: {} }]);
    expect(synced).toEqual([]);
  });

  test('a symlink inside the root is synced where it leads, and a file or folder gone is no error', async () => {
    await fs.mkdir(join(root, 'real'));
    await fs.writeFile(join(root, 'real', 'target.ipynb'), 't');
    await fs.symlink(join(root, 'real', 'target.ipynb'), join(root, 'link.ipynb'));
    await manager.settleJournalled(
      ['link.ipynb', 'gone.ipynb', 'no-folder/x.ipynb'].map(path => ({ path, written }))
    );
    expect([...synced].sort()).toEqual(
      [root, join(root, 'real'), join(root, 'real', 'target.ipynb')].sort()
    );
  });

  test('a link leading out of the root is not synced', async () => {
    const outside = await fs.realpath(mkdtempSync(join(tmpdir(), 'settle-outside-')));
    try {
      await fs.writeFile(join(outside, 'secret.ipynb'), 's');
      await fs.symlink(join(outside, 'secret.ipynb'), join(root, 'out.ipynb'));
      await fs.symlink(outside, join(root, 'out-dir'));
      await manager.settleJournalled(
        ['out.ipynb', 'out-dir/secret.ipynb'].map(path => ({ path, written }))
      );
      expect(synced.filter(real => real.startsWith(outside))).toEqual([]);
    } finally {
      await fs.rm(outside, { recursive: true, force: true });
    }
  });

  test('an EIO on any file of the window fails it (the journal keeps its records)', async () => {
    for (const name of ['a.ipynb', 'b.ipynb']) await fs.writeFile(join(root, name), name);
    failWith = real => (real === join(root, 'b.ipynb') ? eio() : undefined);
    await expect(
      manager.settleJournalled(['a.ipynb', 'b.ipynb'].map(path => ({ path, written })))
    ).rejects.toMatchObject({ code: 'EIO' });
  });

  test('an EIO on the directory, synced once for the window, fails it too', async () => {
    for (const name of ['a.ipynb', 'b.ipynb']) await fs.writeFile(join(root, name), name);
    failWith = real => (real === root ? eio() : undefined);
    await expect(
      manager.settleJournalled(['a.ipynb', 'b.ipynb'].map(path => ({ path, written })))
    ).rejects.toMatchObject({ code: 'EIO' });
    expect(synced.filter(real => real === root)).toHaveLength(1);
  });

  test('a directory that refuses fsync (EINVAL) does not fail the window', async () => {
    await fs.writeFile(join(root, 'a.ipynb'), 'a');
    failWith = real =>
      real === root ? Object.assign(new Error('EINVAL'), { code: 'EINVAL' }) : undefined;
    await manager.settleJournalled([{ path: 'a.ipynb', written }]);
    expect([...synced].sort()).toEqual([root, join(root, 'a.ipynb')].sort());
  });
});
