import { longestCommonSnakes, multilevelSnakes } from '../src/alignment';

const equal = (x: string, y: string): boolean => x === y;

describe('alignment', () => {
  describe('#longestCommonSnakes()', () => {
    it('merges consecutive matches into snakes', () => {
      expect(longestCommonSnakes([...'abcxde'], [...'abcyde'], equal)).toEqual([
        [0, 0, 3],
        [4, 4, 2]
      ]);
    });

    it('prefers the last candidate when walking back from the end, as nbdime does', () => {
      // Both b[0] and b[1] could match a[0]; nbdime's walk takes the later one.
      expect(longestCommonSnakes(['x'], ['x', 'x'], equal)).toEqual([[0, 1, 1]]);
    });

    it('aligns only inside the given rectangle', () => {
      expect(longestCommonSnakes([...'aab'], [...'abb'], equal, 1, 1, 3, 3)).toEqual([[2, 2, 1]]);
    });

    it('finds nothing in an empty sequence', () => {
      expect(longestCommonSnakes([], ['a'], equal)).toEqual([]);
    });
  });

  describe('#multilevelSnakes()', () => {
    it('refines the gaps of the strict level with the loose one', () => {
      const sameLetter = (x: string, y: string): boolean => x[0] === y[0];
      // Strict: only 'a1' and 'c1' match; between them, 'b1' and 'b2' share their letter.
      expect(multilevelSnakes(['a1', 'b1', 'c1'], ['a1', 'b2', 'c1'], [sameLetter, equal])).toEqual(
        [[0, 0, 3]]
      );
    });

    it('does not match across the strict level snakes', () => {
      const anything = (): boolean => true;
      expect(multilevelSnakes(['x', 'a'], ['a', 'y'], [anything, equal])).toEqual([[1, 0, 1]]);
    });
  });
});
