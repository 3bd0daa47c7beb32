import { appendFileSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArchiveJournal, type IJournalEntry } from '../../src/archive/journal';

const written = { before: null, after: { ino: 1, size: 3, mtimeMs: 1 } };
const signature = { digest: 'ab', algorithm: 'sha256' };

describe('ArchiveJournal', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'archive-journal-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const pending = () => ArchiveJournal.pendingCount(dir);

  test('a record standing in for fsyncs is forgotten only after beforeForget settled it', async () => {
    const settled: IJournalEntry[][] = [];
    const gate = Promise.withResolvers<void>();
    const journal = new ArchiveJournal(dir, {
      beforeForget: async entries => {
        settled.push([...entries]);
        await gate.promise;
      }
    });
    await journal.open();
    const plain = await journal.append('plain.ipynb', Buffer.from('abc'));
    const save = await journal.append('a.ipynb', Buffer.from('abc'), { written });
    const signed = await journal.append('b.ipynb', Buffer.from('def'), { signature });
    expect(await pending()).toBe(3);
    await journal.remove(plain.seq);
    await journal.remove(save.seq);
    await journal.remove(signed.seq);
    // The plain record is gone at once; the others wait for their settling, as one batch.
    expect(await pending()).toBe(2);
    await new Promise(resolve => setTimeout(resolve, 20));
    expect(settled.map(batch => batch.map(entry => entry.path))).toEqual([['a.ipynb', 'b.ipynb']]);
    expect(settled[0][0].written).toEqual(written);
    expect(settled[0][1].signature).toEqual(signature);
    expect(await pending()).toBe(2);
    gate.resolve();
    await journal.close();
    expect(await pending()).toBe(0);
  });

  test('records whose settling failed stay, and the next open hands them back with what they stand for', async () => {
    const journal = new ArchiveJournal(dir, {
      beforeForget: () => Promise.reject(new Error('EIO'))
    });
    await journal.open();
    const save = await journal.append('a.ipynb', Buffer.from('abc'), { written, signature });
    await journal.remove(save.seq);
    await journal.close();
    expect(await pending()).toBe(1);

    const settled: string[] = [];
    const again = new ArchiveJournal(dir, {
      beforeForget: async entries => {
        settled.push(...entries.map(entry => entry.path));
      }
    });
    const [record] = await again.open();
    expect(record).toMatchObject({ path: 'a.ipynb', written, signature });
    expect(record.content.toString()).toBe('abc');
    await again.remove(record.seq);
    await again.close();
    expect(settled).toEqual(['a.ipynb']);
    expect(await pending()).toBe(0);
  });

  test('after a crash, what was appended comes back and what was marked done does not', async () => {
    const journal = new ArchiveJournal(dir);
    await journal.open();
    const records = [];
    for (const name of ['a', 'b', 'c']) {
      records.push(await journal.append(`${name}.ipynb`, Buffer.from(name)));
    }
    await journal.remove(records[1].seq);
    // No close: the process dies here.
    const again = new ArchiveJournal(dir);
    const replayed = await again.open();
    expect(replayed.map(record => [record.path, record.content.toString()])).toEqual([
      ['a.ipynb', 'a'],
      ['c.ipynb', 'c']
    ]);
    const next = await again.append('d.ipynb', Buffer.from('d'));
    expect(next.seq).toBeGreaterThan(records[2].seq);
    await again.close();
  });

  test('a frame cut short at the end of a segment (a crash mid-append) is ignored', async () => {
    const journal = new ArchiveJournal(dir);
    await journal.open();
    await journal.append('a.ipynb', Buffer.from('kept'));
    const [segment] = readdirSync(join(dir, 'log'));
    const header = Buffer.from(JSON.stringify({ seq: 99, path: 'x', size: 1000 }));
    const head = Buffer.alloc(8);
    head.write('JSJ1', 'latin1');
    head.writeUInt32LE(header.length, 4);
    appendFileSync(join(dir, 'log', segment), Buffer.concat([head, header, Buffer.from('part')]));
    const again = new ArchiveJournal(dir);
    expect((await again.open()).map(record => record.path)).toEqual(['a.ipynb']);
    expect(existsSync(join(dir, 'damaged'))).toBe(false);
    await again.close();
  });

  test('concurrent durable appends all resolve, and a drained journal leaves no segment behind', async () => {
    const journal = new ArchiveJournal(dir);
    await journal.open();
    const records = await Promise.all(
      Array.from({ length: 50 }, (_, i) => journal.append(`n${i}.ipynb`, Buffer.alloc(20_000, i)))
    );
    expect(new Set(records.map(record => record.seq)).size).toBe(50);
    expect(await pending()).toBe(50);
    for (const record of records) await journal.remove(record.seq);
    await journal.close();
    expect(await pending()).toBe(0);
    expect(readdirSync(join(dir, 'log'))).toEqual([]);
  });
});
