import { DiffConfig, diff, diffStringsByCharacter, diffStringsByLine } from '../src/generic';

describe('generic', () => {
  describe('#diff()', () => {
    it('gives replace, patch, remove and add entries for objects, sorted by key', () => {
      // nbdime 4.0.4: diff({"a":1,"b":[1,2,3],"c":"x","d":None}, {"a":2,"b":[1,3,4],"c":"y\n","e":True})
      expect(
        diff({ a: 1, b: [1, 2, 3], c: 'x', d: null }, { a: 2, b: [1, 3, 4], c: 'y\n', e: true })
      ).toEqual([
        { op: 'replace', key: 'a', value: 2 },
        {
          op: 'patch',
          key: 'b',
          diff: [
            { op: 'removerange', key: 1, length: 1 },
            { op: 'addrange', key: 3, valuelist: [4] }
          ]
        },
        {
          op: 'patch',
          key: 'c',
          diff: [
            { op: 'addrange', key: 0, valuelist: ['y\n'] },
            { op: 'removerange', key: 0, length: 1 }
          ]
        },
        { op: 'remove', key: 'd' },
        { op: 'add', key: 'e', value: true }
      ]);
    });

    it('gives no entries for equal values', () => {
      expect(diff({ a: [1, { b: 'c' }] }, { a: [1, { b: 'c' }] })).toEqual([]);
    });

    it('replaces a value whose type changes', () => {
      expect(diff({ a: 'text' }, { a: ['text'] })).toEqual([
        { op: 'replace', key: 'a', value: ['text'] }
      ]);
    });

    it('refuses values that are not both lists, objects or strings', () => {
      expect(() => diff(1, 2)).toThrow(TypeError);
    });
  });

  describe('#diffStringsByLine()', () => {
    it('patches a similar line character by character', () => {
      expect(
        diffStringsByLine('x = 1\nprint(x)\n', 'x = 10\nprint(x)\n', new DiffConfig())
      ).toEqual([{ op: 'patch', key: 0, diff: [{ op: 'addrange', key: 5, valuelist: '0' }] }]);
    });

    it('replaces a line that is not similar, the addition first', () => {
      expect(diffStringsByLine('a\nold line\n', 'a\nsomething else\n', new DiffConfig())).toEqual([
        { op: 'addrange', key: 1, valuelist: ['something else\n'] },
        { op: 'removerange', key: 1, length: 1 }
      ]);
    });
  });

  describe('#diffStringsByCharacter()', () => {
    it('counts offsets in code points', () => {
      expect(diffStringsByCharacter('🚀ab', '🚀xb')).toEqual([
        { op: 'addrange', key: 1, valuelist: 'x' },
        { op: 'removerange', key: 1, length: 1 }
      ]);
    });
  });
});
