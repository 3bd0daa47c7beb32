import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
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

  const pending = () => readdirSync(join(dir, 'pending')).filter(name => name.endsWith('.rec'));

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
    expect(pending()).toHaveLength(3);
    await journal.remove(plain.seq);
    await journal.remove(save.seq);
    await journal.remove(signed.seq);
    // The plain record is gone at once; the others wait for their settling, as one batch.
    expect(pending()).toHaveLength(2);
    await new Promise(resolve => setTimeout(resolve, 20));
    expect(settled.map(batch => batch.map(entry => entry.path))).toEqual([['a.ipynb', 'b.ipynb']]);
    expect(settled[0][0].written).toEqual(written);
    expect(settled[0][1].signature).toEqual(signature);
    expect(pending()).toHaveLength(2);
    gate.resolve();
    await journal.close();
    expect(pending()).toHaveLength(0);
  });

  test('records whose settling failed stay, and the next open hands them back with what they stand for', async () => {
    const journal = new ArchiveJournal(dir, {
      beforeForget: () => Promise.reject(new Error('EIO'))
    });
    await journal.open();
    const save = await journal.append('a.ipynb', Buffer.from('abc'), { written, signature });
    await journal.remove(save.seq);
    await journal.close();
    expect(pending()).toHaveLength(1);

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
    expect(pending()).toHaveLength(0);
  });
});
