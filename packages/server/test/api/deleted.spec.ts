/**
 * `findDeleted`, the listing behind `GET api/store/deleted`, on an in-memory store: which keys
 * count as deleted notebooks, renames told apart by the metadata of the version they wrote,
 * the prefix, the archive's patterns and the limit.
 */
import { findDeleted } from '../../src/store/deleted';
import type { StoreAccess } from '../../src/store/objects';
import { FakeStore } from '../support/fakeStore';

function access(store: FakeStore): StoreAccess {
  return {
    store,
    bucket: 'b',
    settings: {
      workspace_prefix: 'workspace',
      archive_include: ['**/*.ipynb'],
      archive_exclude: ['scratch/**']
    },
    features: () => ({ features: { store_valid: true }, reasons: {} })
  } as unknown as StoreAccess;
}

/** Archive a version of `path`, as the archive writes one (a rename with its metadata). */
async function save(store: FakeStore, path: string, renamedFrom?: string): Promise<string> {
  const metadata = renamedFrom ? { 'renamed-from': encodeURIComponent(renamedFrom) } : undefined;
  const { versionId } = await store.put('b', `workspace/${path}`, Buffer.from(path), { metadata });
  return versionId;
}

async function remove(store: FakeStore, path: string): Promise<string> {
  return (await store.deleteObject('b', `workspace/${path}`)).versionId;
}

describe('findDeleted()', () => {
  it('lists a deleted notebook with its marker and last version, and leaves the rest out', async () => {
    const store = new FakeStore();
    await save(store, 'a.ipynb');
    const last = await save(store, 'a.ipynb');
    const marker = await remove(store, 'a.ipynb');
    await save(store, 'kept.ipynb');
    await remove(store, 'markers-only.ipynb');
    await save(store, 'notes.txt');
    await remove(store, 'notes.txt');
    await save(store, 'scratch/x.ipynb');
    await remove(store, 'scratch/x.ipynb');
    const revived = 'revived.ipynb';
    await save(store, revived);
    await remove(store, revived);
    await save(store, revived);

    const listing = await findDeleted(access(store), { prefix: '', limit: 100 });
    expect(listing).toEqual({
      deleted: [
        {
          path: 'a.ipynb',
          deleted_at: expect.any(String),
          delete_marker_id: marker,
          last_version: { object_version_id: last, last_modified: expect.any(String), size: 7 }
        }
      ],
      left_out: 0
    });
  });

  it('does not list the old path of a renamed notebook, only a deletion', async () => {
    const store = new FakeStore();
    await save(store, 'old.ipynb');
    await save(store, 'new.ipynb', 'old.ipynb');
    await remove(store, 'old.ipynb');
    // Another rename written just before a real deletion names another path.
    await save(store, 'gone.ipynb');
    await save(store, 'moved.ipynb', 'elsewhere.ipynb');
    await remove(store, 'gone.ipynb');

    const listing = await findDeleted(access(store), { prefix: '', limit: 100 });
    expect(listing.deleted.map(entry => entry.path)).toEqual(['gone.ipynb']);
  });

  it('keeps those below a directory, newest deletion first, and counts those past the limit', async () => {
    // Only the clock is faked: each deletion is a minute after the one before, so the order
    // does not hang on whether two deletions fell in the same millisecond.
    jest.useFakeTimers({
      now: Date.parse('2026-01-01T00:00:00Z'),
      doNotFake: [
        'hrtime',
        'nextTick',
        'performance',
        'queueMicrotask',
        'setImmediate',
        'clearImmediate',
        'setInterval',
        'clearInterval',
        'setTimeout',
        'clearTimeout'
      ]
    });
    try {
      const store = new FakeStore();
      for (const path of ['team/a.ipynb', 'team/sub/b.ipynb', 'teamwork.ipynb', 'c.ipynb']) {
        await save(store, path);
        jest.setSystemTime(Date.now() + 60_000);
        await remove(store, path);
      }
      const below = async (prefix: string) =>
        (await findDeleted(access(store), { prefix, limit: 100 })).deleted.map(e => e.path);
      expect(await below('team')).toEqual(['team/sub/b.ipynb', 'team/a.ipynb']);
      expect(await below('team/sub')).toEqual(['team/sub/b.ipynb']);
      expect(await below('tea')).toEqual([]);
      const first = await findDeleted(access(store), { prefix: '', limit: 1 });
      expect(first.deleted.map(e => e.path)).toEqual(['c.ipynb']);
      expect(first.left_out).toBe(3);
    } finally {
      jest.useRealTimers();
    }
  });
});
