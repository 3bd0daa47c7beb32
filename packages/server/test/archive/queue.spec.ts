import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { ArchiveJournal } from '../../src/archive/journal';
import { ArchiveQueue } from '../../src/archive/queue';
import { createLogger } from '../../src/gateway/logger';
import { ObjectStoreError } from '../../src/storage/objectStore';
import { FakeStore } from '../support/fakeStore';

const unavailable = () => new ObjectStoreError('unavailable', 'connection refused', 'ECONNREFUSED');
const denied = () =>
  new ObjectStoreError('access-denied', 'the credentials were refused', 'InvalidAccessKeyId');

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise(resolve => setTimeout(resolve, 5));
  }
}

describe('ArchiveQueue', () => {
  let dir: string;
  let store: FakeStore;
  let queue: ArchiveQueue;
  let logLines: string[];

  const makeQueue = (maxThreads = 4) => {
    logLines = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        logLines.push(chunk.toString('utf8'));
        callback();
      }
    });
    return new ArchiveQueue({
      store,
      bucket: 'notebooks',
      prefix: 'workspace/',
      journal: new ArchiveJournal(join(dir, 'journal')),
      maxThreads,
      log: createLogger({ level: 'debug', destination }),
      backoff: { baseMs: 5, capMs: 20 }
    });
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'archive-queue-'));
    store = new FakeStore();
  });

  afterEach(async () => {
    await queue?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('every save of a path arrives, in order, under workspace_prefix/<path>', async () => {
    queue = makeQueue();
    await queue.start();
    for (let i = 0; i < 20; i++) await queue.enqueue('dir/a.ipynb', Buffer.from(`save ${i}`));
    await until(() => queue.status().pending === 0);
    const bodies = store.versions.get('workspace/dir/a.ipynb')?.map(v => v.body.toString());
    expect(bodies).toEqual(Array.from({ length: 20 }, (_, i) => `save ${i}`));
    expect(queue.status()).toMatchObject({ pending: 0, archived: 20, lastError: null });
    expect(queue.status().lastArchived).toMatchObject({ path: 'dir/a.ipynb', versionId: 'v20' });
  });

  test('reports each confirmed write to its listeners, at the time status() reports', async () => {
    queue = makeQueue();
    await queue.start();
    const writes: ArchiveQueue.IWrite[] = [];
    const stop = queue.onWrite(write => writes.push(write));
    await queue.enqueue('a.ipynb', Buffer.from('12345'));
    await queue.enqueue('a.ipynb', Buffer.alloc(0), { action: 'delete' });
    await until(() => queue.status().pending === 0);
    expect(writes).toEqual([
      { path: 'a.ipynb', action: 'put', bytes: 5, versionId: 'v1', at: expect.any(String) },
      { path: 'a.ipynb', action: 'delete', bytes: 0, versionId: 'v2', at: expect.any(String) }
    ]);
    expect(writes[1].at).toBe(queue.status().lastArchived?.at);
    stop();
    await queue.enqueue('b.ipynb', Buffer.from('x'));
    await until(() => queue.status().pending === 0);
    expect(writes).toHaveLength(2);
  });

  test("each put carries the journal's SHA-256 of its bytes, kept as the version's checksum", async () => {
    queue = makeQueue();
    await queue.start();
    const entry = await queue.enqueue('a.ipynb', Buffer.from('{"cells": []}'));
    await until(() => queue.status().pending === 0);
    const [version] = store.versions.get('workspace/a.ipynb') ?? [];
    expect(version.sha256).toBe(entry.sha256);
    expect(version.sha256).toBe(createHash('sha256').update('{"cells": []}').digest('hex'));
    expect(version.metadata.sha256).toBe(entry.sha256);
  });

  test('a body that does not match its SHA-256 on arrival is refused, not archived wrong, and stays journalled', async () => {
    queue = makeQueue();
    await queue.start();
    await until(() => queue.storageCheck() === true);
    store.corruptNextBody = true;
    await queue.enqueue('a.ipynb', Buffer.from('the bytes that were saved'));
    await until(() => queue.status().pending === 0);
    expect(store.versions.get('workspace/a.ipynb')).toBeUndefined();
    expect(queue.status()).toMatchObject({ archived: 0, lastError: { path: 'a.ipynb' } });
    expect(await ArchiveJournal.pendingCount(join(dir, 'journal'))).toBe(1);
    expect(logLines.join('')).toMatch(/cannot be archived and stays in the journal/);
  });

  test('enqueue resolves only once the journal holds the save', async () => {
    queue = makeQueue();
    store.down = unavailable();
    await queue.start();
    await queue.enqueue('a.ipynb', Buffer.from('x'));
    expect(await ArchiveJournal.pendingCount(join(dir, 'journal'))).toBe(1);
    expect(queue.status().pending).toBe(1);
  });

  test('concurrency across paths stays within max_threads', async () => {
    queue = makeQueue(3);
    await queue.start();
    await Promise.all(
      Array.from({ length: 30 }, (_, i) => queue.enqueue(`p${i}.ipynb`, Buffer.from(String(i))))
    );
    await until(() => queue.status().pending === 0);
    expect(store.maxActive).toBeLessThanOrEqual(3);
    expect(store.maxActive).toBeGreaterThan(1);
  });

  test("a rename's delete marker waits behind the new path's version, even while that put is retried", async () => {
    queue = makeQueue();
    await queue.start();
    await until(() => queue.storageCheck() === true);
    // The order the two records reach the store, told by the store's own counter (v1, v2, ...).
    const order = (key: string) => Number(store.versions.get(key)?.at(-1)?.id.slice(1));
    const rename = async (from: string, to: string, behind: string | undefined) => {
      store.failPuts = [unavailable(), unavailable()];
      await queue.enqueue(to, Buffer.from('moved'), { renamedFrom: from });
      await queue.enqueue(from, Buffer.alloc(0), { action: 'delete' }, undefined, behind);
      await until(() => queue.status().pending === 0);
      return order(`workspace/${to}`) < order(`workspace/${from}`);
    };
    expect(await rename('a.ipynb', 'b.ipynb', 'b.ipynb')).toBe(true);
    // Without it, the marker of the path whose write is not retried gets there first.
    expect(await rename('c.ipynb', 'd.ipynb', undefined)).toBe(false);
  });

  test('transient failures are retried until the store is back; nothing is lost', async () => {
    queue = makeQueue();
    await queue.start();
    await until(() => queue.storageCheck() === true);
    store.failPuts = [unavailable(), unavailable(), unavailable()];
    await queue.enqueue('a.ipynb', Buffer.from('one'));
    await queue.enqueue('a.ipynb', Buffer.from('two'));
    await until(() => queue.status().pending === 0);
    expect(store.versions.get('workspace/a.ipynb')?.map(v => v.body.toString())).toEqual([
      'one',
      'two'
    ]);
    expect(queue.status().lastError).toBeNull();
  });

  test('refused credentials put archiving on hold with a reason, and it resumes when fixed', async () => {
    store.down = denied();
    queue = makeQueue();
    await queue.start();
    await queue.enqueue('a.ipynb', Buffer.from('kept'));
    await until(() => queue.storageCheck() !== null);
    expect(queue.storageCheck()).toMatch(/credentials were refused/);
    expect(queue.status().storage.ok).toBe(false);
    expect(store.versions.size).toBe(0);
    store.down = undefined;
    await until(() => queue.status().pending === 0);
    expect(store.versions.get('workspace/a.ipynb')?.[0].body.toString()).toBe('kept');
    expect(queue.status().storage.ok).toBe(true);
  });

  test('a bucket without versioning is reported and nothing is archived', async () => {
    store.bucketVersioning = 'Disabled';
    queue = makeQueue();
    await queue.start();
    await queue.enqueue('a.ipynb', Buffer.from('x'));
    await until(() => queue.storageCheck() !== null);
    expect(queue.storageCheck()).toMatch(/versioning is disabled/);
    await new Promise(resolve => setTimeout(resolve, 50));
    expect(store.puts).toBe(0);
  });

  test('records left by a crashed run are replayed in order at start', async () => {
    store.down = unavailable();
    queue = makeQueue();
    await queue.start();
    for (const text of ['1', '2', '3']) await queue.enqueue('a.ipynb', Buffer.from(text));
    await queue.enqueue('b.ipynb', Buffer.from('b'));
    await queue.close();
    store.down = undefined;
    queue = makeQueue();
    await queue.start();
    await until(() => queue.status().pending === 0);
    expect(store.versions.get('workspace/a.ipynb')?.map(v => v.body.toString())).toEqual([
      '1',
      '2',
      '3'
    ]);
    expect(store.versions.get('workspace/b.ipynb')).toHaveLength(1);
    expect(await ArchiveJournal.pendingCount(join(dir, 'journal'))).toBe(0);
  });

  test("records replayed after a crash keep a rename's delete marker behind the new version", async () => {
    await store.put('notebooks', 'workspace/old.ipynb', Buffer.from('moved'));
    store.down = unavailable();
    queue = makeQueue();
    await queue.start();
    await queue.enqueue('new.ipynb', Buffer.from('moved'), { renamedFrom: 'old.ipynb' });
    await queue.enqueue('old.ipynb', Buffer.alloc(0), { action: 'delete' }, undefined, 'new.ipynb');
    await queue.close();
    store.down = undefined;
    store.failPuts = [unavailable(), unavailable()];
    queue = makeQueue();
    await queue.start();
    await until(() => queue.status().pending === 0);
    const order = (key: string) => Number(store.versions.get(key)?.at(-1)?.id.slice(1));
    expect(store.versions.get('workspace/old.ipynb')?.at(-1)?.deleteMarker).toBe(true);
    expect(order('workspace/new.ipynb')).toBeLessThan(order('workspace/old.ipynb'));
  });

  test('a lost answer does not make a duplicate version on retry', async () => {
    queue = makeQueue();
    await queue.start();
    await until(() => queue.storageCheck() === true);
    store.loseNextAnswer = new ObjectStoreError(
      'unavailable',
      'socket hang up',
      'ECONNRESET',
      true
    );
    await queue.enqueue('a.ipynb', Buffer.from('once'));
    await until(() => queue.status().pending === 0);
    expect(store.versions.get('workspace/a.ipynb')).toHaveLength(1);
  });

  test('a second process cannot take a journal in use', async () => {
    queue = makeQueue();
    await queue.start();
    const journal = new ArchiveJournal(join(dir, 'journal'));
    await queue.close();
    writeFileSync(join(dir, 'journal', 'journal.lock'), String(process.ppid));
    await expect(journal.open()).rejects.toThrow(/in use by process/);
  });

  test('a damaged journal record is set aside, not replayed and not deleted', async () => {
    store.down = unavailable();
    queue = makeQueue();
    await queue.start();
    await queue.enqueue('a.ipynb', Buffer.from('good one'));
    await queue.enqueue('b.ipynb', Buffer.from('bad one'));
    await queue.close();
    const log = join(dir, 'journal', 'log');
    const [name] = readdirSync(log);
    // One byte of b's content changes: its frame is whole, but its checksum fails.
    const file = join(log, name);
    const bytes = readFileSync(file);
    const at = bytes.lastIndexOf('bad one');
    bytes[at] = 'B'.charCodeAt(0);
    writeFileSync(file, bytes);
    store.down = undefined;
    queue = makeQueue();
    const replayed = await queue.start();
    expect(replayed.map(record => record.path)).toEqual(['a.ipynb']);
    await until(() => queue.status().pending === 0);
    expect([...store.versions.keys()]).toEqual(['workspace/a.ipynb']);
    expect(readFileSync(join(dir, 'journal', 'damaged', name))).toEqual(bytes);
  });
});
