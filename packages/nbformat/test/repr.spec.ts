/**
 * Python's text of values and its `str` semantics. Every expected value below was produced by
 * CPython 3.11's `repr`, `str.splitlines` and `sorted`.
 */
import { PyNumber, compareCodePoints, pythonRepr, pythonSplitLines, pythonStr } from '../src';

const float = (text: string): PyNumber => new PyNumber('float', text);

describe('#pythonSplitLines()', () => {
  it.each([
    [
      'a\nb\r\nc\rd\x0be\x0cf\x1cg\x1dh\x1ei\x85j\u2028k\u2029l',
      [
        'a\n',
        'b\r\n',
        'c\r',
        'd\x0b',
        'e\f',
        'f\x1c',
        'g\x1d',
        'h\x1e',
        'i\x85',
        'j\u2028',
        'k\u2029',
        'l'
      ],
      ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l']
    ],
    ['', [], []],
    ['\n', ['\n'], ['']],
    ['a\r\n\r\n', ['a\r\n', '\r\n'], ['a', '']],
    ['no newline', ['no newline'], ['no newline']],
    ['\r\r\n\n', ['\r', '\r\n', '\n'], ['', '', '']]
  ])('splits %j as str.splitlines does', (text, keepEnds, dropEnds) => {
    expect(pythonSplitLines(text, true)).toEqual(keepEnds);
    expect(pythonSplitLines(text, false)).toEqual(dropEnds);
  });
});

describe('#compareCodePoints()', () => {
  it('sorts as Python sorts str (code points, not UTF-16 units)', () => {
    const keys = ['\uffff', '😀', 'a', 'é', 'B', '', 'a😀', 'a\uffff'];
    expect(keys.sort(compareCodePoints)).toEqual([
      '',
      'B',
      'a',
      'a\uffff',
      'a😀',
      'é',
      '\uffff',
      '😀'
    ]);
  });
});

describe('#pythonRepr()', () => {
  it.each<[unknown, string]>([
    ["it's", `"it's"`],
    ['say "hi"', `'say "hi"'`],
    [`both ' and "`, `'both \\' and "'`],
    [
      '\x00\x7f\x85\xa0é\u200b😀\ud800\u{10fffd}\t\n\r\\',
      "'\\x00\\x7f\\x85\\xa0é\\u200b😀\\ud800\\U0010fffd\\t\\n\\r\\\\'"
    ],
    [
      { a: [1, float('1.0'), null, true, false], b: {} },
      "{'a': [1, 1.0, None, True, False], 'b': {}}"
    ],
    [[], '[]'],
    [1e16, '1e+16'],
    [1e-5, '1e-05'],
    [float('-0.0'), '-0.0']
  ])('writes %j as Python repr does', (value, expected) => {
    expect(pythonRepr(value)).toBe(expected);
  });
});

describe('#pythonStr()', () => {
  it.each<[unknown, string]>([
    ['text', 'text'],
    [null, 'None'],
    [true, 'True'],
    [2, '2'],
    [float('2.0'), '2.0'],
    [0.1, '0.1'],
    [1e-7, '1e-07'],
    [new PyNumber('int', '12345678901234567890'), '12345678901234567890'],
    [['a'], "['a']"]
  ])('writes %j as Python str does', (value, expected) => {
    expect(pythonStr(value)).toBe(expected);
  });
});
