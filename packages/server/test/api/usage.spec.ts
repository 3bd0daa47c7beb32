/**
 * The workspace usage of `GET api/store`: counted from the prefix-wide version listing, cached,
 * measured once at a time in the background, and waited for briefly only the first time.
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
    const meter = new WorkspaceUsageMeter({ source: () => source(store), firstWaitMs: 20 });
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
});
