import * as fs from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import {
  expiredVersions,
  findRetention,
  MAX_RULE_ID_LENGTH,
  RETENTION_RULE_ID_PREFIX,
  retentionFilterPrefix,
  retentionRule,
  retentionRuleId,
  withRetention,
  type IHistoryEntry,
  type ILifecycleRule
} from '../../src/storage/lifecycle';
import { LocalObjectStore } from '../../src/storage/localStore';
import { objectKey } from '../../src/storage/keys';
import { ObjectStoreError } from '../../src/storage/objectStore';

const DAY = 24 * 60 * 60 * 1000;

/** A rule of another tool, with fields this product does not model. */
const TRANSITIONS: ILifecycleRule = {
  ID: 'archive-logs',
  Status: 'Enabled',
  Filter: { And: { Prefix: 'logs/', Tags: [{ Key: 'kind', Value: 'debug' }] } },
  Transitions: [{ Days: 30, StorageClass: 'GLACIER' }],
  AbortIncompleteMultipartUpload: { DaysAfterInitiation: 7 }
};

/** Another user's retention rule on the same bucket (a hub). */
const BOB = retentionRule('workspace/bob', { keepNewest: 3, noncurrentDays: 10 });

describe('storage/lifecycle', () => {
  describe('#retentionFilterPrefix()', () => {
    it('is the trimmed workspace prefix with one trailing slash', () => {
      expect(retentionFilterPrefix('workspace')).toBe('workspace/');
      expect(retentionFilterPrefix('/workspace/alice/')).toBe('workspace/alice/');
    });

    it('does not cover a sibling prefix that starts alike', () => {
      const prefix = retentionFilterPrefix('workspace');
      expect('workspace/a.ipynb'.startsWith(prefix)).toBe(true);
      expect('workspace2/a.ipynb'.startsWith(prefix)).toBe(false);
    });

    it('is empty for an empty workspace prefix', () => {
      expect(retentionFilterPrefix('')).toBe('');
      expect(retentionFilterPrefix('/')).toBe('');
    });
  });

  describe('#retentionRuleId()', () => {
    it('names the workspace prefix', () => {
      expect(retentionRuleId('/workspace/alice/')).toBe('jupyter-store-retention:workspace/alice');
    });

    it('stays within 255 characters for a long prefix, and tells long prefixes apart', () => {
      const common = 'w/'.repeat(200) + 'é'.repeat(100);
      const first = retentionRuleId(`${common}/alice`);
      const second = retentionRuleId(`${common}/bob`);
      for (const id of [first, second]) {
        expect(Buffer.byteLength(id)).toBeLessThanOrEqual(MAX_RULE_ID_LENGTH);
        expect(id.startsWith(`${RETENTION_RULE_ID_PREFIX}w/w/`)).toBe(true);
        expect(id.isWellFormed()).toBe(true);
      }
      expect(first).not.toBe(second);
      expect(retentionRuleId(`/${common}/alice/`)).toBe(first);
    });
  });

  describe('#retentionRule()', () => {
    it('expires noncurrent versions below the prefix and leaves delete markers alone', () => {
      expect(retentionRule('workspace', { keepNewest: 5, noncurrentDays: 30 })).toEqual({
        ID: 'jupyter-store-retention:workspace',
        Status: 'Enabled',
        Filter: { Prefix: 'workspace/' },
        NoncurrentVersionExpiration: { NoncurrentDays: 30, NewerNoncurrentVersions: 5 }
      });
    });

    it('leaves NewerNoncurrentVersions out when no version is kept', () => {
      expect(
        retentionRule('workspace', { keepNewest: 0, noncurrentDays: 1 }).NoncurrentVersionExpiration
      ).toEqual({ NoncurrentDays: 1 });
    });
  });

  describe('#withRetention() and #findRetention()', () => {
    const ours = { keepNewest: 2, noncurrentDays: 7 };

    it('adds the rule after the others, which are kept as they were', () => {
      const rules = withRetention([TRANSITIONS, BOB], 'workspace/alice', ours);
      expect(rules).toEqual([TRANSITIONS, BOB, retentionRule('workspace/alice', ours)]);
      expect(findRetention(rules, 'workspace/alice')).toEqual({ retention: ours, otherRules: 2 });
      expect(findRetention(rules, 'workspace/bob')).toEqual({
        retention: { keepNewest: 3, noncurrentDays: 10 },
        otherRules: 2
      });
    });

    it('replaces the rule in its place', () => {
      const before = withRetention([TRANSITIONS, BOB], 'workspace/alice', ours);
      const changed = { keepNewest: 0, noncurrentDays: 90 };
      const after = withRetention([before[2], ...before.slice(0, 2)], 'workspace/alice', changed);
      expect(after).toEqual([retentionRule('workspace/alice', changed), TRANSITIONS, BOB]);
      expect(findRetention(after, 'workspace/alice').retention).toEqual(changed);
    });

    it('removes only the rule of the prefix', () => {
      const rules = withRetention([TRANSITIONS, BOB], 'workspace/alice', ours);
      expect(withRetention(rules, 'workspace/alice', null)).toEqual([TRANSITIONS, BOB]);
      expect(withRetention([TRANSITIONS], 'workspace/alice', null)).toEqual([TRANSITIONS]);
      expect(findRetention([TRANSITIONS], 'workspace/alice')).toEqual({
        retention: null,
        otherRules: 1
      });
    });
  });

  describe('#expiredVersions()', () => {
    const rules = [retentionRule('workspace', { keepNewest: 2, noncurrentDays: 3 })];
    // Newest first, one version a day at 10:30 UTC; the newest is current.
    const start = Date.UTC(2026, 0, 1, 10, 30);
    const history: IHistoryEntry[] = [5, 4, 3, 2, 1, 0].map(day => ({
      versionId: `v${day}`,
      lastModified: start + day * DAY
    }));

    it('keeps the newest noncurrent versions and those not yet noncurrent for long enough', () => {
      // v1 became noncurrent when v2 was written (Jan 3, 10:30): due on Jan 7 at midnight UTC.
      expect(
        expiredVersions(rules, 'workspace/a.ipynb', history, Date.UTC(2026, 0, 6, 23, 59))
      ).toEqual(['v0']);
      expect(expiredVersions(rules, 'workspace/a.ipynb', history, Date.UTC(2026, 0, 7))).toEqual([
        'v1',
        'v0'
      ]);
      // Much later, everything but the current version and the two newest noncurrent ones.
      expect(expiredVersions(rules, 'workspace/a.ipynb', history, start + 100 * DAY)).toEqual([
        'v2',
        'v1',
        'v0'
      ]);
    });

    it('expires only by age when no version is kept', () => {
      const byAge = [retentionRule('workspace', { keepNewest: 0, noncurrentDays: 3 })];
      expect(expiredVersions(byAge, 'workspace/a.ipynb', history, start + 100 * DAY)).toEqual([
        'v4',
        'v3',
        'v2',
        'v1',
        'v0'
      ]);
    });

    it('counts versions under a delete marker as noncurrent, and never expires markers', () => {
      const deleted: IHistoryEntry[] = [
        { versionId: 'm2', lastModified: start + 2 * DAY, deleteMarker: true },
        { versionId: 'v1', lastModified: start + DAY },
        { versionId: 'm0', lastModified: start + DAY / 2, deleteMarker: true },
        { versionId: 'v0', lastModified: start }
      ];
      const keepOne = [retentionRule('workspace', { keepNewest: 1, noncurrentDays: 1 })];
      expect(expiredVersions(keepOne, 'workspace/a.ipynb', deleted, start + 100 * DAY)).toEqual([
        'v0'
      ]);
    });

    it('applies no rule outside its prefix, disabled, or with a filter it does not know', () => {
      const late = start + 100 * DAY;
      expect(expiredVersions(rules, 'workspace2/a.ipynb', history, late)).toEqual([]);
      expect(expiredVersions(rules, 'named/workspace/a.ipynb/v1', history, late)).toEqual([]);
      const disabled = [{ ...rules[0], Status: 'Disabled' }];
      expect(expiredVersions(disabled, 'workspace/a.ipynb', history, late)).toEqual([]);
      const tagged = [{ ...rules[0], Filter: { Tag: { Key: 'a', Value: 'b' } } }];
      expect(expiredVersions(tagged, 'workspace/a.ipynb', history, late)).toEqual([]);
      const legacy = [{ ...rules[0], Filter: undefined, Prefix: 'workspace/' }];
      expect(expiredVersions(legacy, 'workspace/a.ipynb', history, late)).toEqual([
        'v2',
        'v1',
        'v0'
      ]);
    });
  });
});

describe('the embedded store applies lifecycle rules', () => {
  let root: string;
  let clock: number;
  let store: LocalObjectStore;
  const BUCKET = 'jupyter-store';
  const body = (text: string) => Buffer.from(text);
  const versionsOf = async (key: string) =>
    (await store.listVersions(BUCKET, key, { includeDeleteMarkers: true })).map(version =>
      version.deleteMarker ? 'marker' : version.versionId
    );

  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(tmpdir(), 'lifecycle-'));
    clock = Date.now();
    store = new LocalObjectStore({ root, defaultBucket: BUCKET, now: () => clock });
  });

  afterEach(async () => {
    await store.close();
    await fs.rm(root, { recursive: true, force: true });
  });

  test('keeps its configuration across stores on the same directory', async () => {
    expect(await store.getLifecycleRules(BUCKET)).toEqual([]);
    const rules = withRetention([TRANSITIONS], 'workspace', { keepNewest: 1, noncurrentDays: 2 });
    await store.putLifecycleRules(BUCKET, rules);
    const reopened = new LocalObjectStore({ root });
    expect(await reopened.getLifecycleRules(BUCKET)).toEqual(rules);
    await reopened.putLifecycleRules(BUCKET, []);
    expect(await store.getLifecycleRules(BUCKET)).toEqual([]);
    await reopened.close();
  });

  test('refuses a configuration S3 would refuse, and a damaged file', async () => {
    const twice = [BOB, { ...BOB }];
    const refused = await store.putLifecycleRules(BUCKET, twice).catch(error => error);
    expect(refused).toBeInstanceOf(ObjectStoreError);
    expect(refused).toMatchObject({ kind: 'bad-request', code: 'InvalidArgument' });
    await store.putLifecycleRules(BUCKET, [BOB]);
    await fs.writeFile(path.join(root, BUCKET, 'lifecycle.json'), '{"Rules": 3}');
    await expect(store.getLifecycleRules(BUCKET)).rejects.toMatchObject({
      code: 'MalformedLifecycle'
    });
    await expect(store.getLifecycleRules('no-such-bucket')).rejects.toMatchObject({
      kind: 'not-found',
      code: 'NoSuchBucket'
    });
  });

  test('expires old noncurrent workspace versions on write, never named copies', async () => {
    const key = objectKey('workspace', 'a.ipynb');
    const named = (versionId: string) => `${objectKey('named', key)}/${versionId}`;
    const sibling = objectKey('workspace2', 'a.ipynb');
    const written: string[] = [];
    for (const text of ['one', 'two', 'three']) {
      written.push((await store.put(BUCKET, key, body(text))).versionId!);
    }
    // A named version: a copy of "two" outside the workspace prefix, written twice over.
    const namedKey = named(written[1]);
    await store.put(BUCKET, namedKey, body('two'));
    await store.put(BUCKET, namedKey, body('two'));
    await store.put(BUCKET, sibling, body('x'));
    await store.put(BUCKET, sibling, body('y'));
    await store.putVersionTags(BUCKET, key, written[0], { kept: 'no' });
    await store.putLifecycleRules(
      BUCKET,
      withRetention([], 'workspace', { keepNewest: 1, noncurrentDays: 30 })
    );

    // Not yet 30 days noncurrent: every version stays.
    written.push((await store.put(BUCKET, key, body('four'))).versionId!);
    clock += 29 * DAY;
    written.push((await store.put(BUCKET, key, body('five'))).versionId!);
    expect(await versionsOf(key)).toEqual([...written].reverse());

    // Past 30 days: the current version and the newest noncurrent one stay.
    clock += 3 * DAY;
    written.push((await store.put(BUCKET, key, body('six'))).versionId!);
    expect(await versionsOf(key)).toEqual([written[5], written[4]]);
    await expect(store.getVersionTags(BUCKET, key, written[0])).rejects.toMatchObject({
      kind: 'not-found'
    });
    expect(
      (await fs.readdir(store.locate(BUCKET, key))).filter(name => name.endsWith('.tags'))
    ).toEqual([]);

    // A delete: the marker is current and stays, with the newest noncurrent version.
    await store.deleteObject(BUCKET, key);
    expect(await versionsOf(key)).toEqual(['marker', written[5]]);
    expect((await store.get(BUCKET, key, written[5])).body.toString()).toBe('six');

    // Keys outside the prefix keep every version, also when written now.
    await store.put(BUCKET, namedKey, body('two'));
    await store.put(BUCKET, sibling, body('z'));
    expect(await versionsOf(namedKey)).toHaveLength(3);
    expect(await versionsOf(sibling)).toHaveLength(3);
  });

  test('removing the rule stops the expiry', async () => {
    const key = objectKey('workspace', 'b.ipynb');
    await store.putLifecycleRules(
      BUCKET,
      withRetention([], 'workspace', { keepNewest: 0, noncurrentDays: 1 })
    );
    await store.put(BUCKET, key, body('one'));
    await store.putLifecycleRules(BUCKET, withRetention([], 'workspace', null));
    clock += 10 * DAY;
    await store.put(BUCKET, key, body('two'));
    expect(await versionsOf(key)).toHaveLength(2);
  });
});
