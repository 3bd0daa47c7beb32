import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { ArchiveCoalescer } from '../../src/archive/coalesce';
import type { IJournalRecord } from '../../src/archive/journal';
import { ArchiveJournal } from '../../src/archive/journal';
import { ArchiveQueue } from '../../src/archive/queue';
import { createLogger } from '../../src/gateway/logger';
import { ObjectStoreError } from '../../src/storage/objectStore';
import { FakeStore } from '../support/fakeStore';

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise(resolve => setTimeout(resolve, 5));
  }
}

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms));

let nextSeq = 1;
function record(
  path: string,
  text: string,
  extra: Partial<Pick<IJournalRecord, 'action' | 'renamedFrom'>> = {}
): IJournalRecord {
  const seq = nextSeq++;
  return {
    seq,
    path,
    queuedAt: Date.now(),
    sha256: '',
    saveId: `test-${seq}`,
    content: Buffer.from(text),
    ...extra
  };
}

describe('ArchiveCoalescer', () => {
  let now: number;
  const make = (intervalMs: number) => new ArchiveCoalescer({ intervalMs, now: () => now });

  beforeEach(() => {
    now = 1_000_000;
  });

  test('off (0): every record gets its own slot and is due at once', async () => {
    const coalescer = make(0);
    const first = record('a.ipynb', '1');
    expect(coalescer.absorb(first, false)).toBeUndefined();
    const slot = coalescer.open(first, false);
    await coalescer.take(slot);
    const second = record('a.ipynb', '2');
    expect(coalescer.absorb(second, false)).toBeUndefined();
    expect(coalescer.dueAt(coalescer.open(second, false))).toBe(now);
    expect(coalescer.coalesced).toBe(0);
  });

  test('a newer put replaces the waiting one; the replaced ones are kept for marking done', () => {
    const coalescer = make(2000);
    const records = ['1', '2', '3'].map(text => record('a.ipynb', text));
    const slot = coalescer.open(records[0], true);
    expect(coalescer.absorb(records[1], false)).toBe(records[0]);
    expect(coalescer.absorb(records[2], false)).toBe(records[1]);
    expect(slot.record).toBe(records[2]);
    expect(slot.replayed).toBe(false);
    expect(slot.superseded.map(entry => entry.seq)).toEqual([records[0].seq, records[1].seq]);
    expect(coalescer.coalesced).toBe(2);
    // Another path is not affected.
    expect(coalescer.absorb(record('b.ipynb', 'b'), false)).toBeUndefined();
  });

  test('the first put after a quiet period is due at once, the next one an interval after it', async () => {
    const coalescer = make(2000);
    const first = coalescer.open(record('a.ipynb', '1'), false);
    expect(coalescer.dueAt(first)).toBe(now);
    await coalescer.take(first);
    const second = coalescer.open(record('a.ipynb', '2'), false);
    now += 500;
    expect(coalescer.dueAt(second)).toBe(now + 1500);
    now += 1500;
    expect(coalescer.dueAt(second)).toBe(now);
    await coalescer.take(second);
    // Quiet for longer than the interval: at once again.
    now += 5000;
    expect(coalescer.dueAt(coalescer.open(record('a.ipynb', '3'), false))).toBe(now);
  });

  test('a taken slot takes no newer record', async () => {
    const coalescer = make(2000);
    const slot = coalescer.open(record('a.ipynb', '1'), false);
    await coalescer.take(slot);
    expect(coalescer.absorb(record('a.ipynb', '2'), false)).toBeUndefined();
  });

  test('deletes and renames are never superseded, and close the slot before them', () => {
    const coalescer = make(2000);
    const put = record('a.ipynb', '1');
    const slot = coalescer.open(put, false);
    const deletion = record('a.ipynb', '', { action: 'delete' });
    expect(coalescer.absorb(deletion, false)).toBeUndefined();
    coalescer.open(deletion, false);
    // A put after the delete does not jump over it into the slot before it.
    const after = record('a.ipynb', '2');
    expect(coalescer.absorb(after, false)).toBeUndefined();
    expect(slot.record).toBe(put);
    const renamed = record('b.ipynb', '1', { renamedFrom: 'a.ipynb' });
    coalescer.open(renamed, false);
    expect(coalescer.absorb(record('b.ipynb', '2'), false)).toBeUndefined();
    expect(coalescer.coalesced).toBe(0);
  });

  test('a delete is due at once, and a put after it too', async () => {
    const coalescer = make(2000);
    await coalescer.take(coalescer.open(record('a.ipynb', '1'), false));
    const deletion = coalescer.open(record('a.ipynb', '', { action: 'delete' }), false);
    expect(coalescer.dueAt(deletion)).toBe(now);
    await coalescer.take(deletion);
    expect(coalescer.dueAt(coalescer.open(record('a.ipynb', '2'), false))).toBe(now);
  });

  test('release cuts the waits short', async () => {
    const coalescer = new ArchiveCoalescer({ intervalMs: 60_000 });
    await coalescer.take(coalescer.open(record('a.ipynb', '1'), false));
    const waiting = coalescer.take(coalescer.open(record('a.ipynb', '2'), false));
    let taken = false;
    void waiting.then(() => (taken = true));
    await sleep(20);
    expect(taken).toBe(false);
    coalescer.release(true);
    expect((await waiting).content.toString()).toBe('2');
  });
});

describe('ArchiveJournal.removeTogether', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'archive-together-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test('a superseded save waiting to be settled and the plain record that replaced it are marked done together', async () => {
    const gate = Promise.withResolvers<void>();
    const settled: string[][] = [];
    const journal = new ArchiveJournal(dir, {
      beforeForget: async entries => {
        settled.push(entries.map(entry => entry.path));
        await gate.promise;
      }
    });
    await journal.open();
    const written = { before: null, after: { ino: 1, size: 3, mtimeMs: 1 } };
    const save = await journal.append('a.ipynb', Buffer.from('old'), { written });
    const observed = await journal.append('a.ipynb', Buffer.from('new'), { durable: false });
    await journal.removeTogether([save, observed]);
    await sleep(20);
    // Neither is gone while the older one settles: a replay never finds it alone.
    expect(await ArchiveJournal.pendingCount(dir)).toBe(2);
    expect(settled).toEqual([['a.ipynb', 'a.ipynb']]);
    gate.resolve();
    await journal.close();
    expect(await ArchiveJournal.pendingCount(dir)).toBe(0);
  });

  test('plain records are marked done at once', async () => {
    const journal = new ArchiveJournal(dir);
    await journal.open();
    const records = [];
    for (const text of ['1', '2', '3'])
      records.push(await journal.append('a.ipynb', Buffer.from(text)));
    await journal.removeTogether(records);
    expect(await ArchiveJournal.pendingCount(dir)).toBe(0);
    await journal.close();
  });
});

describe('ArchiveQueue with archive_min_interval_seconds', () => {
  let dir: string;
  let store: FakeStore;
  let queue: ArchiveQueue;

  const makeQueue = (minIntervalMs: number) =>
    new ArchiveQueue({
      store,
      bucket: 'notebooks',
      prefix: 'workspace/',
      journal: new ArchiveJournal(join(dir, 'journal')),
      maxThreads: 4,
      log: createLogger({
        level: 'debug',
        destination: new Writable({ write: (_chunk, _encoding, callback) => callback() })
      }),
      backoff: { baseMs: 5, capMs: 20 },
      minIntervalMs
    });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'archive-coalesce-'));
    store = new FakeStore();
  });

  afterEach(async () => {
    await queue?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a burst: the first state at once, the newest at the end of the interval, none between', async () => {
    queue = makeQueue(400);
    await queue.start();
    await until(() => queue.storageCheck() === true);
    const started = Date.now();
    await queue.enqueue('a.ipynb', Buffer.from('save 0'));
    await until(() => store.history('workspace/a.ipynb').length === 1);
    expect(Date.now() - started).toBeLessThan(300);
    for (let i = 1; i < 20; i++) {
      await queue.enqueue('a.ipynb', Buffer.from(`save ${i}`));
      await sleep(5);
    }
    expect(store.history('workspace/a.ipynb')).toEqual(['save 0']);
    await until(() => queue.status().pending === 0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(store.history('workspace/a.ipynb')).toEqual(['save 0', 'save 19']);
    expect(queue.status()).toMatchObject({ archived: 2, coalesced: 18, pending: 0 });
    expect(await ArchiveJournal.pendingCount(join(dir, 'journal'))).toBe(0);
  });

  test('versions of a path stay an interval apart under constant writes; the last state arrives', async () => {
    queue = makeQueue(200);
    await queue.start();
    await until(() => queue.storageCheck() === true);
    const deadline = Date.now() + 900;
    let i = 0;
    while (Date.now() < deadline) {
      await queue.enqueue('a.ipynb', Buffer.from(`save ${i++}`));
      await sleep(10);
    }
    await until(() => queue.status().pending === 0);
    const bodies = store.history('workspace/a.ipynb');
    expect(bodies.at(-1)).toBe(`save ${i - 1}`);
    expect(bodies.length).toBeGreaterThanOrEqual(3);
    expect(bodies.length).toBeLessThanOrEqual(7);
    // In save order, never an older state after a newer one.
    const numbers = bodies.map(body => Number(body!.split(' ')[1]));
    expect([...numbers].sort((a, b) => a - b)).toEqual(numbers);
  });

  test('a delete after a burst comes after the final version, and a rename is never skipped', async () => {
    queue = makeQueue(300);
    await queue.start();
    await until(() => queue.storageCheck() === true);
    for (let i = 0; i < 5; i++) await queue.enqueue('a.ipynb', Buffer.from(`save ${i}`));
    await queue.enqueue('b.ipynb', Buffer.from('save 4'), { renamedFrom: 'a.ipynb' });
    await queue.enqueue('a.ipynb', Buffer.alloc(0), { action: 'delete' });
    await until(() => queue.status().pending === 0);
    expect(store.history('workspace/a.ipynb')).toEqual(['save 0', 'save 4', null]);
    expect(store.history('workspace/b.ipynb')).toEqual(['save 4']);
    expect(store.versions.get('workspace/b.ipynb')?.[0].metadata['renamed-from']).toBe('a.ipynb');
  });

  test('paths are coalesced separately', async () => {
    queue = makeQueue(300);
    await queue.start();
    await until(() => queue.storageCheck() === true);
    for (let i = 0; i < 4; i++) {
      await queue.enqueue('a.ipynb', Buffer.from(`a ${i}`));
      await queue.enqueue('b.ipynb', Buffer.from(`b ${i}`));
    }
    await until(() => queue.status().pending === 0);
    expect(store.history('workspace/a.ipynb')).toEqual(['a 0', 'a 3']);
    expect(store.history('workspace/b.ipynb')).toEqual(['b 0', 'b 3']);
  });

  test('a crash while the newest state waits: superseded records stay journalled, and the restart archives the newest', async () => {
    queue = makeQueue(60_000);
    await queue.start();
    await until(() => queue.storageCheck() === true);
    await queue.enqueue('a.ipynb', Buffer.from('save 0'));
    await until(() => queue.status().archived === 1);
    for (let i = 1; i < 6; i++) await queue.enqueue('a.ipynb', Buffer.from(`save ${i}`));
    expect(queue.status()).toMatchObject({ pending: 1, coalesced: 4 });
    // Stopped without a flush: nothing of the burst has been archived or marked done.
    await queue.close();
    expect(await ArchiveJournal.pendingCount(join(dir, 'journal'))).toBe(5);
    queue = makeQueue(60_000);
    const replayed = await queue.start();
    expect(replayed).toHaveLength(5);
    await until(() => queue.status().pending === 0);
    expect(store.history('workspace/a.ipynb')).toEqual(['save 0', 'save 5']);
    expect(queue.status().coalesced).toBe(4);
    expect(await ArchiveJournal.pendingCount(join(dir, 'journal'))).toBe(0);
  });

  test('a flush sends the waiting newest state at once', async () => {
    queue = makeQueue(60_000);
    await queue.start();
    await until(() => queue.storageCheck() === true);
    await queue.enqueue('a.ipynb', Buffer.from('save 0'));
    await until(() => queue.status().archived === 1);
    await queue.enqueue('a.ipynb', Buffer.from('save 1'));
    await queue.enqueue('a.ipynb', Buffer.from('save 2'));
    expect(await queue.flush(5000)).toBe(0);
    expect(store.history('workspace/a.ipynb')).toEqual(['save 0', 'save 2']);
  });

  test('the newest state is retried after a failure, and the superseded ones leave the journal with it', async () => {
    queue = makeQueue(200);
    await queue.start();
    await until(() => queue.storageCheck() === true);
    await queue.enqueue('a.ipynb', Buffer.from('save 0'));
    await until(() => queue.status().archived === 1);
    store.failPuts = [new ObjectStoreError('unavailable', 'connection refused', 'ECONNREFUSED')];
    for (let i = 1; i < 4; i++) await queue.enqueue('a.ipynb', Buffer.from(`save ${i}`));
    await until(() => queue.status().pending === 0);
    expect(store.history('workspace/a.ipynb')).toEqual(['save 0', 'save 3']);
    await until(() => queue.status().lastError === null);
    expect(await ArchiveJournal.pendingCount(join(dir, 'journal'))).toBe(0);
  });
});
