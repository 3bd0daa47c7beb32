import { mkdtempSync, rmSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArchiveIndex } from '../../src/archive/archiveIndex';
import { ArchiveFilter } from '../../src/archive/filter';
import { ArchiveIntake } from '../../src/archive/intake';
import { ArchiveJournal } from '../../src/archive/journal';
import { ArchiveQueue } from '../../src/archive/queue';
import { ReconciliationScan } from '../../src/archive/scan';
import { RootFs } from '../../src/contents/rootFs';
import { createLogger } from '../../src/gateway/logger';
import { ObjectStoreError } from '../../src/storage/objectStore';
import { FakeStore } from '../support/fakeStore';

const KEY = (path: string) => `workspace/${path}`;

/** The intake, queue, index and scan wired as Archiving wires them, over a fake store. */
class Harness {
  static async open(
    root: string,
    stateDir: string,
    store: FakeStore,
    timings: Partial<Pick<ArchiveIntake.IOptions, 'settleMs'>> = {}
  ): Promise<Harness> {
    const index = await ArchiveIndex.open({
      dir: stateDir,
      identity: { rootDir: root, store: 'fake', bucket: 'b', prefix: 'workspace' },
      flushIntervalMs: 20
    });
    const log = createLogger({ level: 'silent' });
    // The queue reports to the intake, which needs the queue: the holder closes the loop.
    const wired: { intake?: ArchiveIntake } = {};
    const queue = new ArchiveQueue({
      store,
      bucket: 'b',
      prefix: 'workspace',
      journal: new ArchiveJournal(join(stateDir, 'journal')),
      maxThreads: 4,
      log,
      backoff: { baseMs: 5, capMs: 20 },
      onArchived: (entry, versionId, attachment) =>
        wired.intake?.archived(entry, versionId, attachment)
    });
    const filter = new ArchiveFilter();
    const intake = (wired.intake = new ArchiveIntake({
      rootDir: root,
      filter,
      queue,
      index,
      log,
      settleMs: 40,
      renameWindowMs: 150,
      ...timings
    }));
    intake.replayed(await queue.start());
    const scan = new ReconciliationScan({
      rootDir: root,
      filter,
      intake,
      log,
      intervalSeconds: 3600
    });
    intake.subtreeScanner = (path, source) => scan.runSubtree(path, source);
    intake.rescanner = reason => void scan.run(reason);
    return new Harness(intake, queue, index, scan);
  }

  private constructor(
    readonly intake: ArchiveIntake,
    readonly queue: ArchiveQueue,
    readonly index: ArchiveIndex,
    readonly scan: ReconciliationScan
  ) {}

  /** Everything seen so far queued and archived. */
  async drained(): Promise<void> {
    expect(await this.intake.idle(5000)).toBe(true);
    expect(await this.queue.flush(5000)).toBe(0);
  }

  async close(): Promise<void> {
    await this.scan.close();
    this.intake.close();
    await this.queue.close();
    await this.index.close();
  }
}

describe('ArchiveIntake', () => {
  let root: string;
  let state: string;
  let store: FakeStore;
  let harness: Harness;

  const write = (path: string, text: string) => fs.writeFile(join(root, path), text);

  beforeEach(async () => {
    root = mkdtempSync(join(tmpdir(), 'intake-root-'));
    state = mkdtempSync(join(tmpdir(), 'intake-state-'));
    store = new FakeStore();
    harness = await Harness.open(root, state, store);
  });

  afterEach(async () => {
    await harness.close();
    rmSync(root, { recursive: true, force: true });
    rmSync(state, { recursive: true, force: true });
  });

  describe('#saved()', () => {
    it('archives a gateway save, and an unchanged save adds no version', async () => {
      await write('a.ipynb', 'one');
      await harness.intake.saved('a.ipynb', Buffer.from('one'));
      await harness.drained();
      await harness.intake.saved('a.ipynb', Buffer.from('one'));
      await write('a.ipynb', 'two');
      await harness.intake.saved('a.ipynb', Buffer.from('two'));
      await harness.drained();
      expect(store.history(KEY('a.ipynb'))).toEqual(['one', 'two']);
      expect(harness.intake.counts().gateway).toEqual({ seen: 3, archived: 2 });
    });

    it('knows a saved file as a file until its removal is reported', async () => {
      expect(harness.intake.isKnownFile('k.ipynb')).toBe(false);
      await write('k.ipynb', 'one');
      await harness.intake.saved('k.ipynb', Buffer.from('one'));
      expect(harness.intake.isKnownFile('k.ipynb')).toBe(true);
      await fs.rm(join(root, 'k.ipynb'));
      harness.intake.removed('k.ipynb', 'watcher');
      expect(harness.intake.isKnownFile('k.ipynb')).toBe(false);
      await harness.drained();
      expect(harness.intake.isKnownFile('k.ipynb')).toBe(false);
    });

    it('skips what the filter does not cover', async () => {
      await harness.intake.saved('notes.txt', Buffer.from('x'));
      await harness.intake.saved('.hidden.ipynb', Buffer.from('x'));
      await harness.drained();
      expect(store.versions.size).toBe(0);
    });
  });

  describe('#changed()', () => {
    it('archives a file written by another program once, however often it is reported', async () => {
      await write('k.ipynb', 'kernel wrote this');
      for (let i = 0; i < 5; i++) harness.intake.changed('k.ipynb', 'watcher');
      harness.intake.changed('k.ipynb', 'events');
      await harness.drained();
      expect(store.history(KEY('k.ipynb'))).toEqual(['kernel wrote this']);
    });

    it('does not archive a rewrite with the same bytes (a touch)', async () => {
      await write('k.ipynb', 'same');
      harness.intake.changed('k.ipynb', 'watcher');
      await harness.drained();
      const later = new Date(Date.now() + 5000);
      await fs.utimes(join(root, 'k.ipynb'), later, later);
      await write('k.ipynb', 'same');
      harness.intake.changed('k.ipynb', 'watcher');
      await harness.drained();
      expect(store.history(KEY('k.ipynb'))).toEqual(['same']);
    });

    it('archives the final state of two writes 20 ms apart', async () => {
      await write('r.ipynb', 'first');
      harness.intake.changed('r.ipynb', 'watcher');
      await new Promise(resolve => setTimeout(resolve, 20));
      await write('r.ipynb', 'second');
      harness.intake.changed('r.ipynb', 'watcher');
      await harness.drained();
      expect(store.history(KEY('r.ipynb')).at(-1)).toBe('second');
    });

    it("waits while Jupyter's .~name atomic-writing copy exists", async () => {
      await write('j.ipynb', 'half');
      await write('.~j.ipynb', 'old');
      harness.intake.changed('j.ipynb', 'events');
      await new Promise(resolve => setTimeout(resolve, 150));
      await write('j.ipynb', 'whole');
      await fs.rm(join(root, '.~j.ipynb'));
      await harness.drained();
      expect(store.history(KEY('j.ipynb'))).toEqual(['whole']);
    });

    it('looks through a reported directory', async () => {
      await fs.mkdir(join(root, 'd/e'), { recursive: true });
      await write('d/e/x.ipynb', 'x');
      await write('d/y.ipynb', 'y');
      await write('d/.~jupyter-store-0000.tmp', 'temporary');
      harness.intake.changed('d', 'watcher');
      await new Promise(resolve => setTimeout(resolve, 100));
      await harness.drained();
      expect([...store.versions.keys()].sort()).toEqual([KEY('d/e/x.ipynb'), KEY('d/y.ipynb')]);
    });
  });

  describe('#expectEcho()', () => {
    it("drops the bus's echo of a gateway save, once per save, and looks at the next report", async () => {
      await write('e.ipynb', 'saved by the gateway');
      await harness.intake.saved('e.ipynb', Buffer.from('saved by the gateway'));
      harness.intake.expectEcho('e.ipynb');
      await harness.drained();
      // Another writer, reported by the bus only: the echo hides nothing but itself.
      await write('e.ipynb', 'written through Jupyter');
      harness.intake.changed('e.ipynb', 'events');
      await harness.drained();
      expect(store.history(KEY('e.ipynb'))).toEqual(['saved by the gateway']);
      harness.intake.changed('e.ipynb', 'events');
      await harness.drained();
      expect(store.history(KEY('e.ipynb'))).toEqual([
        'saved by the gateway',
        'written through Jupyter'
      ]);
      expect(harness.intake.counts().events.seen).toBe(2);
    });

    it('expects an echo per save, and none once the window has passed', async () => {
      const now = Date.now();
      const clock = jest.spyOn(Date, 'now').mockReturnValue(now);
      try {
        harness.intake.expectEcho('w.ipynb');
        harness.intake.expectEcho('w.ipynb');
        harness.intake.expectEcho('late.ipynb');
        await write('w.ipynb', 'w');
        harness.intake.changed('w.ipynb', 'events');
        harness.intake.changed('w.ipynb', 'events');
        // An event the gateway failed to post never comes: after 5 s the next report counts.
        await write('late.ipynb', 'late');
        clock.mockReturnValue(now + 5001);
        harness.intake.changed('late.ipynb', 'events');
      } finally {
        clock.mockRestore();
      }
      await harness.drained();
      expect(store.history(KEY('w.ipynb'))).toEqual([]);
      expect(store.history(KEY('late.ipynb'))).toEqual(['late']);
      harness.intake.changed('w.ipynb', 'events');
      await harness.drained();
      expect(store.history(KEY('w.ipynb'))).toEqual(['w']);
    });

    it('never drops a report of another source', async () => {
      await write('o.ipynb', 'other');
      harness.intake.expectEcho('o.ipynb');
      harness.intake.changed('o.ipynb', 'watcher');
      await harness.drained();
      expect(store.history(KEY('o.ipynb'))).toEqual(['other']);
    });
  });

  describe('#removed() and #renamed()', () => {
    it('puts a delete marker on a deleted notebook', async () => {
      await write('gone.ipynb', 'content');
      harness.intake.changed('gone.ipynb', 'watcher');
      await harness.drained();
      await fs.rm(join(root, 'gone.ipynb'));
      harness.intake.removed('gone.ipynb', 'watcher');
      await harness.drained();
      expect(store.history(KEY('gone.ipynb'))).toEqual(['content', null]);
    });

    it('records a delete and a create of the same content as a rename', async () => {
      await write('old.ipynb', 'moved content');
      harness.intake.changed('old.ipynb', 'watcher');
      await harness.drained();
      await fs.rename(join(root, 'old.ipynb'), join(root, 'new.ipynb'));
      harness.intake.removed('old.ipynb', 'watcher');
      harness.intake.changed('new.ipynb', 'watcher');
      await harness.drained();
      expect(store.history(KEY('new.ipynb'))).toEqual(['moved content']);
      expect(store.versions.get(KEY('new.ipynb'))![0].metadata['renamed-from']).toBe('old.ipynb');
      expect(store.history(KEY('old.ipynb'))).toEqual(['moved content', null]);
    });

    it('records a rename whose new name is reported before the old one is gone', async () => {
      await write('first.ipynb', 'renamed early');
      harness.intake.changed('first.ipynb', 'watcher');
      await harness.drained();
      await fs.rename(join(root, 'first.ipynb'), join(root, 'second.ipynb'));
      harness.intake.changed('second.ipynb', 'watcher');
      await harness.drained();
      harness.intake.removed('first.ipynb', 'watcher');
      harness.intake.renamed('first.ipynb', 'second.ipynb', 'events');
      await harness.drained();
      expect(store.history(KEY('second.ipynb'))).toEqual(['renamed early']);
      expect(store.versions.get(KEY('second.ipynb'))![0].metadata['renamed-from']).toBe(
        'first.ipynb'
      );
      expect(store.history(KEY('first.ipynb'))).toEqual(['renamed early', null]);
    });

    it('follows a reported rename of a folder', async () => {
      await fs.mkdir(join(root, 'from'));
      await write('from/a b.ipynb', 'a');
      harness.intake.changed('from', 'watcher');
      await harness.drained();
      await fs.rename(join(root, 'from'), join(root, 'to'));
      harness.intake.renamed('from', 'to', 'events');
      await harness.drained();
      expect(store.history(KEY('to/a b.ipynb'))).toEqual(['a']);
      expect(store.versions.get(KEY('to/a b.ipynb'))![0].metadata['renamed-from']).toBe(
        encodeURIComponent('from/a b.ipynb')
      );
      expect(store.history(KEY('from/a b.ipynb'))).toEqual(['a', null]);
    });

    it("writes a rename's delete marker after the new path's version, even while that put is retried", async () => {
      // The order the store took the writes in, by its own counter (v1, v2, ...).
      const order = (key: string) => Number(store.versions.get(key)?.at(-1)?.id.slice(1));
      const failTwice = () => {
        store.failPuts = [0, 1].map(
          () => new ObjectStoreError('unavailable', 'connection refused', 'ECONNREFUSED')
        );
      };
      await write('reported.ipynb', 'reported rename');
      await write('paired.ipynb', 'paired rename');
      harness.intake.changed('reported.ipynb', 'watcher');
      harness.intake.changed('paired.ipynb', 'watcher');
      await harness.drained();

      failTwice();
      await fs.rename(join(root, 'reported.ipynb'), join(root, 'reported-2.ipynb'));
      harness.intake.renamed('reported.ipynb', 'reported-2.ipynb', 'events');
      await harness.drained();
      expect(store.history(KEY('reported.ipynb'))).toEqual(['reported rename', null]);
      expect(order(KEY('reported-2.ipynb'))).toBeLessThan(order(KEY('reported.ipynb')));

      failTwice();
      await fs.rename(join(root, 'paired.ipynb'), join(root, 'paired-2.ipynb'));
      harness.intake.removed('paired.ipynb', 'watcher');
      harness.intake.changed('paired-2.ipynb', 'watcher');
      await harness.drained();
      expect(store.versions.get(KEY('paired-2.ipynb'))![0].metadata['renamed-from']).toBe(
        'paired.ipynb'
      );
      expect(order(KEY('paired-2.ipynb'))).toBeLessThan(order(KEY('paired.ipynb')));
    });

    it('treats a delete followed by a re-create with new content as a change', async () => {
      await write('x.ipynb', 'v1');
      harness.intake.changed('x.ipynb', 'watcher');
      await harness.drained();
      await fs.rm(join(root, 'x.ipynb'));
      harness.intake.removed('x.ipynb', 'watcher');
      await write('x.ipynb', 'v2');
      harness.intake.changed('x.ipynb', 'watcher');
      await harness.drained();
      expect(store.history(KEY('x.ipynb'))).toEqual(['v1', 'v2']);
    });
  });

  describe('races with the gateway', () => {
    /** Give the file one mtime, a whole second, so that another write can leave the same stat. */
    const stampAt = (path: string, seconds: number) =>
      fs.utimes(join(root, path), seconds, seconds);

    it("finds the gateway's own save, reported again by the watcher, without settling or archiving it again", async () => {
      await harness.close();
      // A settle this long would hold a look that settles well past the wait below.
      harness = await Harness.open(root, state, store, { settleMs: 60_000 });
      await write('own.ipynb', 'saved by the gateway');
      await harness.intake.saved('own.ipynb', Buffer.from('saved by the gateway'));
      await harness.drained();
      harness.intake.changed('own.ipynb', 'watcher');
      harness.intake.changed('own.ipynb', 'events');
      expect(await harness.intake.idle(2000)).toBe(true);
      await harness.drained();
      expect(store.history(KEY('own.ipynb'))).toEqual(['saved by the gateway']);
      expect(store.puts).toBe(1);
    });

    it('archives a write by someone else that lands right after a gateway save with the same stat', async () => {
      const second = Math.floor(Date.now() / 1000);
      await write('tick.ipynb', 'gateway');
      await stampAt('tick.ipynb', second);
      await harness.intake.saved('tick.ipynb', Buffer.from('gateway'));
      const saved = await fs.stat(join(root, 'tick.ipynb'));
      // In place, the same size, within the same timestamp tick: nothing in the stat differs.
      await write('tick.ipynb', 'kernels');
      await stampAt('tick.ipynb', second);
      const after = await fs.stat(join(root, 'tick.ipynb'));
      expect([after.ino, after.size, after.mtimeMs]).toEqual([
        saved.ino,
        saved.size,
        saved.mtimeMs
      ]);
      harness.intake.changed('tick.ipynb', 'watcher');
      await harness.drained();
      expect(store.history(KEY('tick.ipynb'))).toEqual(['gateway', 'kernels']);
    });

    it('archives a write by someone else that replaces a gateway save before the watcher reports it', async () => {
      await write('next.ipynb', 'gateway');
      await harness.intake.saved('next.ipynb', Buffer.from('gateway'));
      await write('next.ipynb', 'kernel wrote this later');
      harness.intake.changed('next.ipynb', 'watcher');
      await harness.drained();
      expect(store.history(KEY('next.ipynb'))).toEqual(['gateway', 'kernel wrote this later']);
    });

    describe("reports of the gateway's own saves: a racy stat rechecked later, a held path looked at after its save", () => {
      /** Give the file a time this many ms ago: its stat stays racy for 2 s after it. */
      const stampAgo = (path: string, ms: number) => {
        const at = new Date(Date.now() - ms);
        return fs.utimes(join(root, path), at, at);
      };
      const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms));
      /** Poll until `check` holds, at most `timeoutMs`. */
      const until = async (check: () => boolean, timeoutMs = 4000) => {
        const deadline = Date.now() + timeoutMs;
        while (!check() && Date.now() < deadline) await sleep(10);
        return check();
      };
      let reads: jest.SpyInstance;

      beforeEach(() => {
        reads = jest.spyOn(RootFs.prototype, 'readFile');
      });

      afterEach(() => {
        reads.mockRestore();
      });

      it("reads the gateway's own save back once its stat is no longer racy, not at its report", async () => {
        await write('own.ipynb', 'saved by the gateway');
        await stampAgo('own.ipynb', 1500);
        await harness.intake.saved('own.ipynb', Buffer.from('saved by the gateway'));
        await harness.drained();
        expect(harness.index.get('own.ipynb')?.racy).toBe(true);
        reads.mockClear();
        harness.intake.changed('own.ipynb', 'watcher');
        harness.intake.changed('own.ipynb', 'events');
        await sleep(100);
        expect(reads).not.toHaveBeenCalled();
        // About 500 ms later the stat is no longer racy: one read confirms it for good.
        expect(await until(() => harness.index.get('own.ipynb')?.racy === false)).toBe(true);
        expect(reads).toHaveBeenCalledTimes(1);
        harness.intake.changed('own.ipynb', 'watcher');
        await harness.drained();
        expect(reads).toHaveBeenCalledTimes(1);
        expect(store.history(KEY('own.ipynb'))).toEqual(['saved by the gateway']);
      });

      it('archives a write by someone else with the same stat when the recheck comes, unasked', async () => {
        await write('tick.ipynb', 'gateway');
        await stampAgo('tick.ipynb', 1500);
        await harness.intake.saved('tick.ipynb', Buffer.from('gateway'));
        const saved = await fs.stat(join(root, 'tick.ipynb'));
        await write('tick.ipynb', 'kernels');
        await fs.utimes(join(root, 'tick.ipynb'), saved.atime, saved.mtime);
        const after = await fs.stat(join(root, 'tick.ipynb'));
        expect([after.ino, after.size, after.mtimeMs]).toEqual([
          saved.ino,
          saved.size,
          saved.mtimeMs
        ]);
        harness.intake.changed('tick.ipynb', 'watcher');
        // Nobody waits for the intake: the recheck's own timer finds the write.
        expect(
          await until(() => store.history(KEY('tick.ipynb')).join() === 'gateway,kernels')
        ).toBe(true);
      });

      it('looks at a path reported while the gateway writes it once the save is over, without reading it', async () => {
        const release = harness.intake.holdObservation('held.ipynb');
        await write('held.ipynb', 'gateway');
        harness.intake.changed('held.ipynb', 'watcher');
        // Longer than the settling (40 ms) a look would otherwise wait before reading.
        await sleep(100);
        expect(reads).not.toHaveBeenCalled();
        await harness.intake.saved('held.ipynb', Buffer.from('gateway'));
        release();
        await sleep(100);
        expect(reads).not.toHaveBeenCalled();
        await harness.drained();
        expect(store.history(KEY('held.ipynb'))).toEqual(['gateway']);
      });

      it('archives a write by someone else reported while the gateway held the path, after its save', async () => {
        const release = harness.intake.holdObservation('shared.ipynb');
        await write('shared.ipynb', 'gateway');
        await harness.intake.saved('shared.ipynb', Buffer.from('gateway'));
        await write('shared.ipynb', 'a kernel, just after');
        harness.intake.changed('shared.ipynb', 'watcher');
        release();
        await harness.drained();
        expect(store.history(KEY('shared.ipynb'))).toEqual(['gateway', 'a kernel, just after']);
      });

      it("takes the stat of the gateway's file from its save, so a file that replaced it is archived at once", async () => {
        await write('swap.ipynb', 'first');
        await harness.intake.saved('swap.ipynb', Buffer.from('first'));
        await harness.drained();
        const first = harness.index.get('swap.ipynb')!.stat;
        await write('swap.ipynb', 'second, by the gateway');
        const ours = await fs.stat(join(root, 'swap.ipynb'));
        // Someone else replaces the file before the gateway's save reaches the intake.
        await fs.writeFile(join(root, '.~swap.tmp'), 'someone else');
        await fs.rename(join(root, '.~swap.tmp'), join(root, 'swap.ipynb'));
        await harness.intake.saved('swap.ipynb', Buffer.from('second, by the gateway'), 'gateway', {
          written: {
            after: { ino: ours.ino, size: ours.size, mtimeMs: ours.mtimeMs },
            before: { ino: first.ino, size: first.size, mtimeMs: first.mtimeMs }
          }
        });
        harness.intake.changed('swap.ipynb', 'watcher');
        // Its stat is not the save's: no recheck to wait for, and nobody waits for the intake.
        expect(
          await until(() => store.history(KEY('swap.ipynb')).at(-1) === 'someone else', 1500)
        ).toBe(true);
        expect(store.history(KEY('swap.ipynb'))).toEqual([
          'first',
          'second, by the gateway',
          'someone else'
        ]);
        expect(harness.index.get('swap.ipynb')?.stat.dev).toBe(first.dev);
      });

      it('drops the recheck of a state that a newer gateway save replaced', async () => {
        await write('two.ipynb', 'first save');
        await stampAgo('two.ipynb', 1500);
        await harness.intake.saved('two.ipynb', Buffer.from('first save'));
        harness.intake.changed('two.ipynb', 'watcher');
        await sleep(100);
        // The gateway's next save renames a new file over the old one.
        await fs.writeFile(join(root, '.~two.tmp'), 'second save');
        await fs.rename(join(root, '.~two.tmp'), join(root, 'two.ipynb'));
        await harness.intake.saved('two.ipynb', Buffer.from('second save'));
        harness.intake.changed('two.ipynb', 'watcher');
        reads.mockClear();
        // Past the first state's recheck, well before the second's.
        await sleep(800);
        expect(reads).not.toHaveBeenCalled();
        // Waiting for the intake runs the second state's recheck at once.
        await harness.drained();
        expect(reads).toHaveBeenCalledTimes(1);
        expect(store.history(KEY('two.ipynb'))).toEqual(['first save', 'second save']);
      });
    });

    it('never archives older bytes after a newer gateway save', async () => {
      for (let round = 0; round < 20; round++) {
        const path = `race${round}.ipynb`;
        await write(path, 'external');
        harness.intake.changed(path, 'watcher');
        await new Promise(resolve => setTimeout(resolve, round * 3));
        await write(path, 'gateway');
        await harness.intake.saved(path, Buffer.from('gateway'));
      }
      await harness.drained();
      for (let round = 0; round < 20; round++) {
        expect(store.history(KEY(`race${round}.ipynb`)).at(-1)).toBe('gateway');
      }
    });
  });
});

describe('ReconciliationScan', () => {
  let root: string;
  let state: string;
  let store: FakeStore;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'scan-root-'));
    state = mkdtempSync(join(tmpdir(), 'scan-state-'));
    store = new FakeStore();
  });

  afterEach(() => {
    rmSync(root, { recursive: true, force: true });
    rmSync(state, { recursive: true, force: true });
  });

  it('archives changes made while stopped, and nothing twice across restarts', async () => {
    await fs.mkdir(join(root, 'sub'));
    await fs.mkdir(join(root, '.git'));
    await fs.mkdir(join(root, '.ipynb_checkpoints'));
    await fs.writeFile(join(root, 'keep.ipynb'), 'keep');
    await fs.writeFile(join(root, 'edit.ipynb'), 'edit v1');
    await fs.writeFile(join(root, 'sub/drop.ipynb'), 'drop');
    await fs.writeFile(join(root, '.git/x.ipynb'), 'ignored');
    await fs.writeFile(join(root, '.ipynb_checkpoints/keep-checkpoint.ipynb'), 'ignored');
    await fs.writeFile(join(root, 'script.py'), 'ignored');

    let harness = await Harness.open(root, state, store);
    await harness.scan.run('test');
    await harness.drained();
    await harness.close();
    expect([...store.versions.keys()].sort()).toEqual([
      KEY('edit.ipynb'),
      KEY('keep.ipynb'),
      KEY('sub/drop.ipynb')
    ]);

    // Stopped: one edited, one deleted.
    await new Promise(resolve => setTimeout(resolve, 20));
    await fs.writeFile(join(root, 'edit.ipynb'), 'edit v2');
    await fs.rm(join(root, 'sub/drop.ipynb'));

    harness = await Harness.open(root, state, store);
    expect(harness.index.found).toBe(true);
    await harness.scan.run('test');
    await harness.drained();
    await harness.scan.run('again');
    await harness.drained();
    await harness.close();
    expect(store.history(KEY('edit.ipynb'))).toEqual(['edit v1', 'edit v2']);
    expect(store.history(KEY('sub/drop.ipynb'))).toEqual(['drop', null]);
    expect(store.history(KEY('keep.ipynb'))).toEqual(['keep']);
  });

  it('reads no file when nothing changed', async () => {
    for (let i = 0; i < 30; i++) await fs.writeFile(join(root, `n${i}.ipynb`), `n${i}`);
    // Old enough not to be racily clean.
    const old = new Date(Date.now() - 60_000);
    for (let i = 0; i < 30; i++) await fs.utimes(join(root, `n${i}.ipynb`), old, old);
    const harness = await Harness.open(root, state, store);
    await harness.scan.run('test');
    await harness.drained();
    const look = jest.spyOn(harness.intake, 'look');
    await harness.scan.run('unchanged');
    await harness.drained();
    expect(look).not.toHaveBeenCalled();
    expect(harness.scan.status().lastFileCount).toBe(30);
    await harness.close();
  });

  it('rebuilds a lost index from the bucket without archiving again', async () => {
    await fs.writeFile(join(root, 'a.ipynb'), 'a');
    await fs.writeFile(join(root, 'b.ipynb'), 'b');
    let harness = await Harness.open(root, state, store);
    await harness.scan.run('test');
    await harness.drained();
    await harness.close();
    const indexFile = harness.index.file;
    await fs.rm(indexFile);
    await fs.writeFile(join(root, 'b.ipynb'), 'b changed');

    harness = await Harness.open(root, state, store);
    expect(harness.index.found).toBe(false);
    const latest = new Map<string, { etag?: string; size: number }>();
    for await (const object of store.listLatest('b', 'workspace/')) {
      latest.set(object.key.slice('workspace/'.length), object);
    }
    harness.intake.useRemoteListing(latest);
    await harness.scan.run('test');
    await harness.drained();
    await harness.close();
    expect(store.history(KEY('a.ipynb'))).toEqual(['a']);
    expect(store.history(KEY('b.ipynb'))).toEqual(['b', 'b changed']);
  });

  it('pairs a move made while stopped into a rename', async () => {
    await fs.writeFile(join(root, 'before.ipynb'), 'same bytes');
    let harness = await Harness.open(root, state, store);
    await harness.scan.run('test');
    await harness.drained();
    await harness.close();
    await fs.mkdir(join(root, 'moved'));
    await fs.rename(join(root, 'before.ipynb'), join(root, 'moved/after.ipynb'));
    harness = await Harness.open(root, state, store);
    await harness.scan.run('test');
    await harness.drained();
    await harness.close();
    expect(store.history(KEY('moved/after.ipynb'))).toEqual(['same bytes']);
    expect(store.versions.get(KEY('moved/after.ipynb'))![0].metadata['renamed-from']).toBe(
      'before.ipynb'
    );
    expect(store.history(KEY('before.ipynb'))).toEqual(['same bytes', null]);
  });

  it('does not archive twice after a crash that lost the last index writes', async () => {
    await fs.writeFile(join(root, 'c.ipynb'), 'c1');
    let harness = await Harness.open(root, state, store);
    await harness.scan.run('test');
    await harness.drained();
    await harness.index.flush();
    const snapshot = await fs.readFile(harness.index.file);
    await new Promise(resolve => setTimeout(resolve, 20));
    await fs.writeFile(join(root, 'c.ipynb'), 'c2');
    harness.intake.changed('c.ipynb', 'watcher');
    await harness.drained();
    // A crash: the index file as it was before c2 was archived, not written cleanly.
    await harness.scan.close();
    harness.intake.close();
    await harness.queue.close();
    await new Promise(resolve => setTimeout(resolve, 100));
    await fs.writeFile(harness.index.file, snapshot);

    harness = await Harness.open(root, state, store);
    expect(harness.index.wasClean).toBe(false);
    await harness.scan.run('test');
    await harness.drained();
    await harness.close();
    expect(store.history(KEY('c.ipynb'))).toEqual(['c1', 'c2']);
  });
});
