/**
 * Named versions without a server: where a named copy is kept, how its label is written into
 * object metadata and read back, which names and notes a request may carry, and how listings
 * find labels (and do without them).
 */
import {
  MAX_VERSION_NAME_CHARS,
  MAX_VERSION_NOTE_CHARS,
  NameVersionRequestSchema,
  type ObjectVersion
} from '@jupyter-store/contract';
import { HttpError } from '../../src/errors';
import type { Logger } from '../../src/gateway/logger';
import { normalizeMetadata } from '../../src/storage/keys';
import { ObjectStoreError, type IObjectSummary } from '../../src/storage/objectStore';
import {
  labelMetadata,
  namedKey,
  namedKeyPrefix,
  readLabel,
  VersionLabels
} from '../../src/store/named';
import type { StoreAccess } from '../../src/store/objects';

const at = new Date('2026-01-02T03:04:05.678Z');
const label = (name: string, note: string | null = null) => ({
  name,
  note,
  sourceKey: 'workspace/alice/a b/ü.ipynb',
  sourceVersionId: 'v1',
  namedAt: at
});

describe('namedKey()', () => {
  it('mirrors the archived key below the named prefix, one key per version', () => {
    expect(namedKey('named', 'workspace/alice/a b.ipynb', 'V1')).toBe(
      'named/workspace/alice/a b.ipynb/V1'
    );
    expect(namedKey('/named/', 'workspace/x.ipynb', 'V2')).toBe('named/workspace/x.ipynb/V2');
    expect(namedKeyPrefix('named', 'workspace/x.ipynb')).toBe('named/workspace/x.ipynb');
  });
});

describe('labelMetadata() and readLabel()', () => {
  it('writes printable ASCII that every S3 server keeps, and reads it back as given', () => {
    const name = 'Vor dem Umbau — ünïcødé 🎉';
    const note = 'sent to reviewers\nline two\tend %20 not decoded twice';
    const metadata = labelMetadata(label(name, note));
    // The store's own check: printable ASCII, within the limit.
    expect(normalizeMetadata(metadata)).toEqual(metadata);
    expect(metadata['source-key']).toBe(encodeURIComponent('workspace/alice/a b/ü.ipynb'));
    expect(metadata['source-version-id']).toBe('v1');
    expect(metadata['named-at']).toBe(at.toISOString());
    expect(readLabel(metadata, 'named/k/v1')).toEqual({
      name,
      note,
      named_at: at.toISOString(),
      object_key: 'named/k/v1'
    });
  });

  it('leaves the note out when there is none', () => {
    const metadata = labelMetadata(label('plain'));
    expect(metadata['version-note']).toBeUndefined();
    expect(readLabel(metadata, 'k')?.note).toBeNull();
  });

  it('refuses a label over the 2 KB of metadata with 400 `label too long`', () => {
    // 500 characters of three UTF-8 bytes each take 9 bytes each once percent-encoded.
    let refused: unknown;
    try {
      labelMetadata(label('n'.repeat(MAX_VERSION_NAME_CHARS), '€'.repeat(MAX_VERSION_NOTE_CHARS)));
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(HttpError);
    expect(refused).toMatchObject({ status: 400, reason: 'label too long' });
    // The same length in ASCII fits.
    expect(() =>
      labelMetadata(label('n'.repeat(MAX_VERSION_NAME_CHARS), 'e'.repeat(MAX_VERSION_NOTE_CHARS)))
    ).not.toThrow();
  });

  it('reads no label from metadata without a name, or that does not decode', () => {
    expect(readLabel({ 'named-at': at.toISOString() }, 'k')).toBeUndefined();
    expect(readLabel({ 'version-name': '%E0%A4%A', 'named-at': 'x' }, 'k')).toBeUndefined();
  });
});

describe('NameVersionRequestSchema', () => {
  const parse = (body: unknown) => NameVersionRequestSchema.safeParse(body);

  it('trims the name and counts characters, not UTF-16 units', () => {
    expect(parse({ name: '  before refactor  ' }).data?.name).toBe('before refactor');
    expect(parse({ name: '🎉'.repeat(MAX_VERSION_NAME_CHARS) }).success).toBe(true);
    expect(parse({ name: 'x'.repeat(MAX_VERSION_NAME_CHARS + 1) }).success).toBe(false);
  });

  it.each([
    ['an empty name', { name: '' }],
    ['a blank name', { name: '   ' }],
    ['no name', { note: 'x' }],
    ['a name with a line break', { name: 'a\nb' }],
    ['a name with a bidi-free control', { name: 'a\u0007b' }],
    ['a note over the limit', { name: 'a', note: 'x'.repeat(MAX_VERSION_NOTE_CHARS + 1) }],
    ['a note with a control character', { name: 'a', note: 'x\u0000' }],
    ['an empty version id', { name: 'a', object_version_id: '' }]
  ])('refuses %s', (_, body) => {
    expect(parse(body).success).toBe(false);
  });

  it('accepts a note of several lines, and a null note or version id', () => {
    const parsed = parse({ name: 'a', note: 'one\ntwo\tthree', object_version_id: null });
    expect(parsed.data).toEqual({ name: 'a', note: 'one\ntwo\tthree', object_version_id: null });
  });
});

describe('VersionLabels', () => {
  const version = (id: string, key?: string): ObjectVersion => ({
    object_version_id: id,
    last_modified: at.toISOString(),
    size: 1,
    is_latest: false,
    ...(key !== undefined ? { object_key: key } : {})
  });

  /** Labels over a store whose named copies are `named` (key to metadata), counting HEADs. */
  function labelsOver(
    named: Record<string, Record<string, string>>,
    listLatest?: () => AsyncIterable<IObjectSummary>
  ): { labels: VersionLabels; heads: string[]; lists: string[]; warnings: unknown[] } {
    const heads: string[] = [];
    const lists: string[] = [];
    const warnings: unknown[] = [];
    const store = {
      async *listLatest(_bucket: string, prefix: string): AsyncIterable<IObjectSummary> {
        lists.push(prefix);
        for (const key of Object.keys(named)) {
          if (key.startsWith(prefix)) yield { key, size: 1, etag: '"e"', lastModified: at };
        }
      },
      async head(_bucket: string, key: string) {
        heads.push(key);
        return { versionId: 'n', size: 1, lastModified: at, metadata: named[key] };
      }
    };
    if (listLatest) store.listLatest = listLatest as typeof store.listLatest;
    const archiving = {
      settings: { named_prefix: 'named', workspace_prefix: 'workspace' },
      store,
      bucket: 'b'
    } as unknown as StoreAccess;
    const log = { warn: (entry: unknown) => warnings.push(entry) } as unknown as Logger;
    return { labels: new VersionLabels({ archiving, log }), heads, lists, warnings };
  }

  it('labels the versions named, of every key on the page, and caches by ETag', async () => {
    const { labels, heads, lists } = labelsOver({
      'named/workspace/a.ipynb/v2': labelMetadata(label('on the path')),
      'named/workspace/old.ipynb/v1': labelMetadata(label('before the rename', 'n')),
      // A named version not on the page, and a key that only starts like the page's.
      'named/workspace/a.ipynb/v9': labelMetadata(label('elsewhere')),
      'named/workspace/a.ipynb.bak/v3': labelMetadata(label('another notebook'))
    });
    const page = [version('v3'), version('v2'), version('v1', 'workspace/old.ipynb')];
    const labelled = await labels.attach(page, 'workspace/a.ipynb');
    expect(labelled.map(entry => entry.label?.name)).toEqual([
      undefined,
      'on the path',
      'before the rename'
    ]);
    expect(labelled[2].label).toMatchObject({
      note: 'n',
      object_key: 'named/workspace/old.ipynb/v1'
    });
    expect(heads).toHaveLength(2);
    expect(lists).toEqual(['named/workspace/a.ipynb/', 'named/workspace/old.ipynb/']);
    // Listed again a while later, or at once when this gateway named or unnamed a version.
    await labels.attach(page, 'workspace/a.ipynb');
    expect(heads).toHaveLength(2);
    expect(lists).toHaveLength(2);
    labels.forget('workspace/a.ipynb');
    await labels.attach(page, 'workspace/a.ipynb');
    expect(lists).toEqual([
      'named/workspace/a.ipynb/',
      'named/workspace/old.ipynb/',
      'named/workspace/a.ipynb/'
    ]);
    expect(heads).toHaveLength(2);
  });

  it('lists without labels, and logs why, when the named prefix cannot be read', async () => {
    const { labels, warnings } = labelsOver({}, () => ({
      [Symbol.asyncIterator]: () => ({
        next: () =>
          Promise.reject(new ObjectStoreError('access-denied', 'Access Denied', 'AccessDenied'))
      })
    }));
    const page = [version('v1')];
    expect(await labels.attach(page, 'workspace/a.ipynb')).toEqual(page);
    expect(warnings).toEqual([{ err: 'Access Denied' }]);
  });
});
