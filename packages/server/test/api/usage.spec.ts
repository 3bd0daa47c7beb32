/**
 * The workspace usage of `GET api/store`: counted from the prefix-wide version listing once,
 * then kept up to date from the archive's writes, counted again after an hour (a minute after a
 * failure) in the background; waited for briefly the first time only.
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
    now += 3_600_000;
    store.down = new ObjectStoreError('unavailable', 'unreachable', 'ECONNREFUSED');
    await meter.current();
    await new Promise(resolve => setTimeout(resolve, 10));
    expect((await meter.current())?.objects).toBe(1);
    expect(logged).toEqual(['could not measure the workspace: unreachable']);
    // Tried again after a minute, not on every request.
    now += 59_000;
    await meter.current();
    await new Promise(resolve => setTimeout(resolve, 10));
    expect(logged).toHaveLength(1);
    now += 1_000;
    await meter.current();
    await new Promise(resolve => setTimeout(resolve, 10));
    expect(logged).toHaveLength(2);
  });

  describe('follows the archive', () => {
    /** A meter over `store` fed writes by `emit`, with a clock of its own. */
    function following(store: FakeStore, waitMs = 2_000) {
      const clock = { now: 1_000_000 };
      let listener: (write: WorkspaceUsageMeter.IWrite) => void = () => undefined;
      const meter = new WorkspaceUsageMeter({
        source: () => source(store),
        writes: follow => (listener = follow),
        maxAgeMs: 3_600_000,
        waitMs,
        now: () => clock.now
      });
      /** Write to the store as the archive does, then report it as the queue does. */
      const archive = async (path: string, body?: string) => {
        const key = `workspace/${path}`;
        const at = new Date(clock.now).toISOString();
        const versionId =
          body === undefined
            ? (await store.deleteObject('b', key)).versionId
            : (await store.put('b', key, Buffer.from(body))).versionId;
        const write: WorkspaceUsageMeter.IWrite = {
          path,
          action: body === undefined ? 'delete' : 'put',
          bytes: body === undefined ? 0 : Buffer.byteLength(body),
          versionId,
          at
        };
        listener(write);
        return write;
      };
      return {
        clock,
        meter,
        archive,
        report: (write: WorkspaceUsageMeter.IWrite) => listener(write)
      };
    }

    it('adds each write to the figure without listing the workspace again', async () => {
      const store = new GatedStore();
      await fill(store);
      const { clock, meter, archive, report } = following(store);
      expect(await meter.current()).toMatchObject({ objects: 1, versions: 3, bytes: 15 });

      clock.now += 10_000;
      const created = await archive('new.ipynb', 'xy');
      expect(await meter.current()).toEqual({
        objects: 2,
        versions: 4,
        bytes: 17,
        current_bytes: 9,
        measured_at: created.at
      });
      // A new version of a key replaces its current bytes.
      await archive('a.ipynb', '123');
      expect(await meter.current()).toMatchObject({
        objects: 2,
        versions: 5,
        bytes: 20,
        current_bytes: 5
      });
      // A version the store already held (a replayed save) adds nothing.
      report({ ...created, at: new Date(clock.now + 1).toISOString() });
      expect(await meter.current()).toMatchObject({ objects: 2, versions: 5, bytes: 20 });
      // A delete marker takes the key's current bytes away; its versions stay counted.
      await archive('new.ipynb');
      expect(await meter.current()).toMatchObject({
        objects: 1,
        versions: 5,
        bytes: 20,
        current_bytes: 3
      });
      // Deleting what is already deleted changes nothing.
      await archive('gone.ipynb');
      expect(await meter.current()).toMatchObject({ objects: 1, versions: 5, current_bytes: 3 });
      // And it agrees with a count.
      const counted = await measureWorkspace(source(store));
      expect(await meter.current()).toEqual({ ...counted, measured_at: expect.any(String) });
      expect(store.listings).toBe(2);
    });

    it('applies the writes of a count once it ends, unless the count saw them', async () => {
      const store = new GatedStore();
      await fill(store);
      const { meter, archive, report } = following(store, 20);
      store.hold();
      expect(await meter.current()).toBeNull();
      // Written before the listing reads the key: the count sees it.
      await archive('seen.ipynb', 'abc');
      // Reported for a version the listing will not hold (written after it read the key).
      report({
        path: 'missed.ipynb',
        action: 'put',
        bytes: 4,
        versionId: 'not-listed',
        at: new Date().toISOString()
      });
      store.release();
      await new Promise(resolve => setTimeout(resolve, 10));
      expect(await meter.current()).toMatchObject({
        objects: 3,
        versions: 5,
        bytes: 22,
        current_bytes: 14
      });
      expect(store.listings).toBe(1);
    });

    it('counts again after the age, for what other writers and expiry did', async () => {
      const store = new GatedStore();
      await fill(store);
      const { clock, meter } = following(store);
      await meter.current();
      await store.put('b', 'workspace/other-writer.ipynb', Buffer.from('x'));
      clock.now += 3_599_000;
      expect((await meter.current())?.versions).toBe(3);
      clock.now += 1_000;
      // The old figure at once, the count in the background.
      await meter.current();
      await new Promise(resolve => setTimeout(resolve, 10));
      expect((await meter.current())?.versions).toBe(4);
      expect(store.listings).toBe(2);
    });
  });
});
