import {
  SequenceMatcher,
  codePointLength,
  codePoints,
  sliceCodePoints,
  splitLines
} from '../src/text';

/** A string as the integer sequence the matcher compares. */
const points = (text: string): Uint32Array => codePoints(text);

describe('text', () => {
  describe('#splitLines()', () => {
    it('keeps line endings, as str.splitlines(True)', () => {
      expect(splitLines('a\nb\r\nc\rd')).toEqual(['a\n', 'b\r\n', 'c\r', 'd']);
    });

    it('gives no lines for an empty string and no empty last line', () => {
      expect(splitLines('')).toEqual([]);
      expect(splitLines('a\n')).toEqual(['a\n']);
    });

    it('breaks at the other separators Python knows', () => {
      expect(splitLines('a\u2028b\x0cc\x1ed')).toEqual(['a\u2028', 'b\x0c', 'c\x1e', 'd']);
    });
  });

  describe('code points', () => {
    it('counts a character outside the BMP once, as Python does', () => {
      expect('a🚀b'.length).toBe(4);
      expect(codePointLength('a🚀b')).toBe(3);
      expect(Array.from(codePoints('a🚀b'))).toEqual([0x61, 0x1f680, 0x62]);
    });

    it('slices by code points', () => {
      expect(sliceCodePoints('a🚀bc', 1, 3)).toBe('🚀b');
      expect(sliceCodePoints('abc', 1, 3)).toBe('bc');
    });
  });

  describe('SequenceMatcher', () => {
    it('finds the matching blocks difflib finds', () => {
      const matcher = new SequenceMatcher(points('abxcd'), points('abcd'));
      expect(matcher.matchingBlocks()).toEqual([
        [0, 0, 2],
        [3, 2, 2],
        [5, 4, 0]
      ]);
    });

    it('gives difflib opcodes', () => {
      const matcher = new SequenceMatcher(points('qabxcd'), points('abycdf'));
      expect(matcher.opcodes()).toEqual([
        ['delete', 0, 1, 0, 0],
        ['equal', 1, 3, 0, 2],
        ['replace', 3, 4, 2, 3],
        ['equal', 4, 6, 3, 5],
        ['insert', 6, 6, 5, 6]
      ]);
    });

    it('counts the matches behind difflib ratio()', () => {
      const a = 'private Thread currentThread;';
      const b = 'private volatile Thread currentThread;';
      const matcher = new SequenceMatcher(points(a), points(b));
      // difflib: SequenceMatcher(None, a, b, autojunk=False).ratio() == 0.8656716417910447
      expect((2 * matcher.matches()) / (a.length + b.length)).toBe(0.8656716417910447);
    });
  });
});
