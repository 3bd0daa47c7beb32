/**
 * The workspace usage of `GET api/store`: counted from the prefix-wide version listing, cached,
 * measured once at a time, again soon after the archive writes (at most once per interval) and
 * otherwise after a minute in the background; waited for briefly the first time and after a
 * write.
 */
import { measureWorkspace, WorkspaceUsageMeter } from '../../src/store/usage';
import {
  ObjectStoreError,
  type IKeyVersion,
  type IObjectStore
} from '../../src/storage/objectStore';
import { FakeStore } from '../support/fakeStore';

/** A store whose listing waits for `release()` before it yields, counting the listings. */
class GatedStore extends FakeStore {
  listings = 0;
  private _gate: Promise<void> = Promise.resolve();
  private _open: () => void = () => undefined;

  hold(): void {
    this._gate = new Promise(resolve => (this._open = resolve));
  }

  release(): void {
    this._open();
  }

  override async *listAllVersions(bucket: string, prefix: string): AsyncIterable<IKeyVersion> {
    this.listings++;
    await this._gate;
    yield* super.listAllVersions(bucket, prefix);
  }
}

async function fill(store: FakeStore): Promise<void> {
  await store.put('b', 'workspace/a.ipynb', Buffer.from('12345'));
  await store.put('b', 'workspace/a.ipynb', Buffer.from('1234567'));
  await store.put('b', 'workspace/gone.ipynb', Buffer.from('123'));
  await store.deleteObject('b', 'workspace/gone.ipynb');
  await store.put('b', 'workspace2/outside.ipynb', Buffer.from('not counted'));
  await store.put('b', 'published/a.ipynb', Buffer.from('not counted'));
}

const source = (store: IObjectStore) => ({ store, bucket: 'b', workspacePrefix: 'workspace' });

describe('measureWorkspace()', () => {
  it('counts objects, versions and bytes below the prefix only, markers left out', async () => {
    const store = new FakeStore();
    await fill(store);
    expect(await measureWorkspace(source(store))).toEqual({
      objects: 1,
      versions: 3,
      bytes: 15,
      current_bytes: 7,
      measured_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/)
    });
  });
});

describe('WorkspaceUsageMeter', () => {
  it('answers the first figure when it comes in time, then serves it from the cache', async () => {
    const store = new GatedStore();
    await fill(store);
    let now = 1_000_000;
    const meter = new WorkspaceUsageMeter({
      source: () => source(store),
      maxAgeMs: 60_000,
      now: () => now
    });
    expect((await meter.current())?.versions).toBe(3);
    await store.put('b', 'workspace/new.ipynb', Buffer.from('x'));
    now += 59_000;
    expect((await meter.current())?.versions).toBe(3);
    expect(store.listings).toBe(1);

    // Stale: the old figure at once, a new measurement in the background, one at a time.
    now += 2_000;
    store.hold();
    expect((await meter.current())?.versions).toBe(3);
    expect((await meter.current())?.versions).toBe(3);
    expect(store.listings).toBe(2);
    store.release();
    await new Promise(resolve => setTimeout(resolve, 10));
    expect((await meter.current())?.versions).toBe(4);
    expect(store.listings).toBe(2);
  });

  it('answers null when the first measurement is not done in time; the next request has it', async () => {
    const store = new GatedStore();
    await fill(store);
    store.hold();
    const meter = new WorkspaceUsageMeter({ source: () => source(store), waitMs: 20 });
    const started = Date.now();
    expect(await meter.current()).toBeNull();
    expect(Date.now() - started).toBeLessThan(1000);
    store.release();
    await new Promise(resolve => setTimeout(resolve, 10));
    expect((await meter.current())?.objects).toBe(1);
    expect(store.listings).toBe(1);
  });

  it('answers null without a usable store, and keeps the last figure when a measurement fails', async () => {
    expect(await new WorkspaceUsageMeter({ source: () => undefined }).current()).toBeNull();
    const store = new FakeStore();
    await fill(store);
    let now = 0;
    const logged: string[] = [];
    const meter = new WorkspaceUsageMeter({
      source: () => source(store),
      now: () => now,
      log: message => logged.push(message)
    });
    expect((await meter.current())?.objects).toBe(1);
    now += 60_000;
    store.down = new ObjectStoreError('unavailable', 'unreachable', 'ECONNREFUSED');
    await meter.current();
    await new Promise(resolve => setTimeout(resolve, 10));
    expect((await meter.current())?.objects).toBe(1);
    expect(logged).toEqual(['could not measure the workspace: unreachable']);
  });

  describe('follows the archive', () => {
    /** A meter over `store` whose archive count is `archived`, with a clock of its own. */
    function following(store: FakeStore, waitMs = 2_000) {
      const clock = { now: 1_000_000, archived: 0 };
      const meter = new WorkspaceUsageMeter({
        source: () => source(store),
        changes: () => clock.archived,
        maxAgeMs: 60_000,
        minIntervalMs: 5_000,
        waitMs,
        now: () => clock.now
      });
      return { clock, meter };
    }

    it('a write re-measures on the next request, which answers the new figure', async () => {
      const store = new GatedStore();
      await fill(store);
      const { clock, meter } = following(store);
      expect((await meter.current())?.versions).toBe(3);

      // Nothing archived: served from the cache, however often asked.
      clock.now += 10_000;
      await store.put('b', 'workspace/other-writer.ipynb', Buffer.from('x'));
      expect((await meter.current())?.versions).toBe(3);
      expect(store.listings).toBe(1);

      // The archive wrote a version: the very next request has it, and the other writer's.
      await store.put('b', 'workspace/new.ipynb', Buffer.from('xy'));
      clock.archived++;
      expect(await meter.current()).toMatchObject({ objects: 3, versions: 5, bytes: 18 });
      expect(store.listings).toBe(2);

      // A delete marker the archive wrote.
      await store.deleteObject('b', 'workspace/new.ipynb');
      clock.archived++;
      clock.now += 5_000;
      expect(await meter.current()).toMatchObject({ objects: 2, versions: 5 });
      expect(store.listings).toBe(3);
    });

    it('under a stream of writes, at most one measurement per interval', async () => {
      const store = new GatedStore();
      await fill(store);
      const { clock, meter } = following(store);
      await meter.current();
      expect(store.listings).toBe(1);
      for (let second = 1; second <= 20; second++) {
        clock.now += 1_000;
        clock.archived++;
        await meter.current();
      }
      // Measurements began at 0, 5, 10, 15 and 20 s.
      expect(store.listings).toBe(5);
    });

    it('a write during a measurement is measured again afterwards', async () => {
      const store = new GatedStore();
      await fill(store);
      const { clock, meter } = following(store, 20);
      await meter.current();
      clock.now += 5_000;
      clock.archived++;
      store.hold();
      // The wait is bounded: the figure before, once the listing takes too long.
      const started = Date.now();
      expect((await meter.current())?.versions).toBe(3);
      expect(Date.now() - started).toBeLessThan(1000);
      // Written while the listing runs, which may have missed it.
      await store.put('b', 'workspace/late.ipynb', Buffer.from('x'));
      clock.archived++;
      expect((await meter.current())?.versions).toBe(3);
      expect(store.listings).toBe(2);
      store.release();
      await new Promise(resolve => setTimeout(resolve, 10));

      clock.now += 5_000;
      expect((await meter.current())?.versions).toBe(4);
      expect(store.listings).toBe(3);
      // And nothing more until the next write (or a minute).
      clock.now += 5_000;
      await meter.current();
      expect(store.listings).toBe(3);
    });
  });
});
