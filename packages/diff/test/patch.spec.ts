import { patch, type DiffEntry } from '../src';
import type { IJSONObject } from '../src/types';

describe('patch', () => {
  describe('#patch()', () => {
    it('adds, removes, replaces and patches object keys', () => {
      const base: IJSONObject = { a: 1, b: 2, c: { d: 3 } };
      expect(
        patch(base, [
          { op: 'remove', key: 'a' },
          { op: 'replace', key: 'b', value: 'two' },
          { op: 'patch', key: 'c', diff: [{ op: 'add', key: 'e', value: 4 }] },
          { op: 'add', key: 'f', value: null }
        ])
      ).toEqual({ b: 'two', c: { d: 3, e: 4 }, f: null });
      expect(base).toEqual({ a: 1, b: 2, c: { d: 3 } });
    });

    it('applies addrange, removerange and patch to lists', () => {
      expect(
        patch(
          [1, 2, [3], 4],
          [
            { op: 'addrange', key: 0, valuelist: [0] },
            { op: 'removerange', key: 1, length: 1 },
            { op: 'patch', key: 2, diff: [{ op: 'addrange', key: 1, valuelist: [3.5] }] }
          ]
        )
      ).toEqual([0, 1, [3, 3.5], 4]);
    });

    it('still takes the single-item entries of old nbdime diffs in lists', () => {
      // Our types keep string keys for these entries, as the differ only emits them in objects.
      const legacy = [
        { op: 'remove', key: 0 },
        { op: 'replace', key: 1, value: 'B' },
        { op: 'add', key: 3, value: 'd' }
      ] as unknown as DiffEntry[];
      expect(patch(['a', 'b', 'c'], legacy)).toEqual(['B', 'c', 'd']);
    });

    it('patches strings line by line, and lines character by character', () => {
      expect(
        patch('x = 1\nprint(x)\nend\n', [
          { op: 'patch', key: 0, diff: [{ op: 'addrange', key: 5, valuelist: '0' }] },
          { op: 'addrange', key: 1, valuelist: ['# comment\n'] },
          { op: 'removerange', key: 2, length: 1 }
        ])
      ).toBe('x = 10\n# comment\nprint(x)\n');
    });

    it('counts character offsets in code points', () => {
      expect(
        patch('🚀ab', [
          {
            op: 'patch',
            key: 0,
            diff: [
              { op: 'addrange', key: 1, valuelist: 'x' },
              { op: 'removerange', key: 1, length: 1 }
            ]
          }
        ])
      ).toBe('🚀xb');
    });

    it('rejects a diff that does not fit the value', () => {
      expect(() => patch({ a: 1 }, [{ op: 'remove', key: 'b' }])).toThrow(/missing/);
      expect(() => patch({ a: 1 }, [{ op: 'add', key: 'a', value: 2 }])).toThrow(/exists/);
      expect(() => patch([1], [{ op: 'removerange', key: 0, length: 2 }])).toThrow(/past the end/);
      expect(() => patch(3, [])).toThrow(/cannot patch/);
    });
  });
});
