import {
  checkObjectKey,
  checkObjectPrefix,
  displayable,
  isValidBucketName,
  normalizeMetadata,
  objectDisplayName,
  objectKey,
  objectPath
} from '../../src/storage/keys';
import { ObjectStoreError } from '../../src/storage/objectStore';

/** The error a call throws, or undefined. */
function thrown(call: () => unknown): ObjectStoreError | undefined {
  try {
    call();
  } catch (error) {
    if (error instanceof ObjectStoreError) return error;
    throw error;
  }
  return undefined;
}

describe('storage/keys', () => {
  describe('#objectKey()', () => {
    it('does not double the slash after a prefix with a trailing slash (original bug)', () => {
      expect(objectKey('works/', 'a.ipynb')).toBe('works/a.ipynb');
    });

    it('drops a leading slash of the prefix (original bug)', () => {
      expect(objectKey('/workspace/kylek', 'a')).toBe('workspace/kylek/a');
    });

    it('trims slashes on both sides of each part', () => {
      expect(objectKey('//works//', '//a/b.ipynb//')).toBe('works/a/b.ipynb');
    });

    it('keeps the path intact below the prefix', () => {
      expect(objectKey('workspace', 'a/b/c.ipynb')).toBe('workspace/a/b/c.ipynb');
      expect(objectKey('workspace', 'my dir/ü x/.hidden..ipynb')).toBe(
        'workspace/my dir/ü x/.hidden..ipynb'
      );
    });

    it('keeps inner slashes of a part as they are', () => {
      expect(objectKey('a//b', 'c//d')).toBe('a//b/c//d');
    });

    it('drops empty parts', () => {
      expect(objectKey('', 'a.ipynb')).toBe('a.ipynb');
      expect(objectKey('/', 'a.ipynb')).toBe('a.ipynb');
      expect(objectKey('works')).toBe('works');
      expect(objectKey('works/', '/')).toBe('works');
      expect(objectKey('', '')).toBe('');
    });

    it('does not trim spaces, only slashes', () => {
      expect(objectKey(' works ', ' a.ipynb')).toBe(' works / a.ipynb');
    });
  });

  describe('#objectPath()', () => {
    it('is s3://bucket/key', () => {
      expect(objectPath('notebooks', 'works/', 'a.ipynb')).toBe('s3://notebooks/works/a.ipynb');
      expect(objectPath('notebooks', '/workspace/kylek', 'a')).toBe(
        's3://notebooks/workspace/kylek/a'
      );
    });

    it('has only the bucket and a slash for an empty key', () => {
      expect(objectPath('notebooks', '')).toBe('s3://notebooks/');
    });
  });

  describe('#objectDisplayName()', () => {
    it('equals objectPath for ordinary keys, Unicode included', () => {
      expect(objectDisplayName('b', 'works', 'dir/naïve 東京.ipynb')).toBe(
        objectPath('b', 'works', 'dir/naïve 東京.ipynb')
      );
    });

    it('escapes line breaks and bidi overrides that could forge a log line', () => {
      expect(objectDisplayName('b', 'w', 'a\nINFO fake\r.ipynb')).toBe(
        's3://b/w/a\\u{a}INFO fake\\u{d}.ipynb'
      );
      expect(displayable('x\u202Eyz')).toBe('x\\u{202e}yz');
    });
  });

  describe('#isValidBucketName()', () => {
    it.each(['abc', 'jupyter-store', 'my.bucket.1', 'a'.repeat(63)])('accepts %s', name => {
      expect(isValidBucketName(name)).toBe(true);
    });

    it.each([
      'ab',
      'a'.repeat(64),
      'Upper',
      'under_score',
      '-start',
      'end-',
      'a..b',
      '192.168.0.1',
      'xn--punycode',
      '..',
      'a/b'
    ])('refuses %s', name => {
      expect(isValidBucketName(name)).toBe(false);
    });
  });

  describe('#checkObjectKey()', () => {
    it('accepts any well-formed key up to 1024 bytes', () => {
      expect(thrown(() => checkObjectKey('../../etc/passwd'))).toBeUndefined();
      expect(thrown(() => checkObjectKey('é'.repeat(512)))).toBeUndefined();
    });

    it('refuses empty, too long and ill-formed keys as bad requests', () => {
      expect(thrown(() => checkObjectKey(''))?.kind).toBe('bad-request');
      expect(thrown(() => checkObjectKey('a'.repeat(1025)))?.code).toBe('KeyTooLongError');
      expect(thrown(() => checkObjectKey('a\uD800b'))?.kind).toBe('bad-request');
    });
  });

  describe('#checkObjectPrefix()', () => {
    it('accepts the empty prefix (every key) and any key', () => {
      expect(thrown(() => checkObjectPrefix(''))).toBeUndefined();
      expect(thrown(() => checkObjectPrefix('workspace/'))).toBeUndefined();
      expect(thrown(() => checkObjectPrefix('é'.repeat(512)))).toBeUndefined();
    });

    it('refuses a prefix no key could start with as a bad request', () => {
      expect(thrown(() => checkObjectPrefix('a'.repeat(1025)))?.code).toBe('KeyTooLongError');
      expect(thrown(() => checkObjectPrefix('a\uD800'))?.kind).toBe('bad-request');
    });
  });

  describe('#normalizeMetadata()', () => {
    it('lowercases keys as S3 does', () => {
      expect(normalizeMetadata({ 'Save-Id': 'x1', sha256: 'ab' })).toEqual({
        'save-id': 'x1',
        sha256: 'ab'
      });
      expect(normalizeMetadata()).toEqual({});
    });

    it('refuses what S3 servers would store differently or refuse', () => {
      expect(thrown(() => normalizeMetadata({ 'a b': 'x' }))?.kind).toBe('bad-request');
      expect(thrown(() => normalizeMetadata({ a: 'é' }))?.kind).toBe('bad-request');
      expect(thrown(() => normalizeMetadata({ a: 'line\nbreak' }))?.kind).toBe('bad-request');
      expect(thrown(() => normalizeMetadata({ A: '1', a: '2' }))?.kind).toBe('bad-request');
      expect(thrown(() => normalizeMetadata({ a: 'x'.repeat(2048) }))?.kind).toBe('bad-request');
    });
  });
});
