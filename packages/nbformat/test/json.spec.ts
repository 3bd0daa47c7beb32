/**
 * JSON as Python's `json` module reads and writes it. Every expected value below was produced by
 * CPython 3.11's `json`.
 */
import { PyNumber, dumpsPython, parsePythonJson } from '../src';

const float = (text: string): PyNumber => new PyNumber('float', text);
const int = (text: string): PyNumber => new PyNumber('int', text);

describe('#parsePythonJson()', () => {
  it('returns plain JSON.parse values when no number needs Python typing', () => {
    const text = '{"a": 1, "b": 0.5, "c": ["x", true, null], "d": -12, "e": 1.5e-7}';
    expect(parsePythonJson(text)).toEqual(JSON.parse(text));
  });

  it('keeps integral floats as Python floats, with their repr', () => {
    expect(
      parsePythonJson('[1.0, 2e3, -0.0, 1E2, 0e0, 100.000, 1e16, 12345678901234567.0]')
    ).toEqual([
      float('1.0'),
      float('2000.0'),
      float('-0.0'),
      float('100.0'),
      float('0.0'),
      float('100.0'),
      float('1e+16'),
      float('1.2345678901234568e+16')
    ]);
  });

  it('keeps non-integral and infinite floats as numbers', () => {
    expect(parsePythonJson('[0.1, 1.5e-7, 1e400, -1e400]')).toEqual([
      0.1,
      1.5e-7,
      Infinity,
      -Infinity
    ]);
  });

  it('keeps integers beyond 2^53 as their digits', () => {
    expect(
      parsePythonJson('[9007199254740991, 9007199254740993, -1180591620717411303424]')
    ).toEqual([9007199254740991, int('9007199254740993'), int('-1180591620717411303424')]);
  });

  it("accepts Python's NaN, Infinity and -Infinity", () => {
    const parsed = parsePythonJson('{"n": NaN, "i": Infinity, "m": -Infinity}') as Record<
      string,
      number
    >;
    expect(parsed.n).toBeNaN();
    expect(parsed).toMatchObject({ i: Infinity, m: -Infinity });
  });

  it('leaves number-like text inside strings alone', () => {
    expect(parsePythonJson('["1.0", "a\\"1.0", "\\\\", "NaN", 1.0]')).toEqual([
      '1.0',
      'a"1.0',
      '\\',
      'NaN',
      float('1.0')
    ]);
  });

  it('finds the end of strings of every length, escapes at any place', () => {
    for (let length = 0; length < 140; length++) {
      for (const escape of ['\\"', '\\\\', '\\u0022', '\\n']) {
        const head = 'a'.repeat(length);
        const text = `["${head}${escape}1.0", 1.0, "${head}${escape}", 2e3, "${escape}${head}"]`;
        expect(parsePythonJson(text)).toEqual(
          JSON.parse(text.replace('1.0,', '"one",').replace('2e3', '"two"')).map((item: unknown) =>
            item === 'one' ? float('1.0') : item === 'two' ? float('2000.0') : item
          )
        );
      }
    }
  });

  it('reads a Buffer as UTF-8', () => {
    expect(parsePythonJson(Buffer.from('{"é": [1.0, "😀"]}', 'utf8'))).toEqual({
      é: [float('1.0'), '😀']
    });
  });

  it('keeps marker-like characters of the input intact', () => {
    // The substitution markers are private-use characters, or NULs when those all occur.
    const pua = Array.from({ length: 10 }, (_, i) => `\\ue00${i}`).join('');
    const text = `["\ue000", "${pua}", "\\u0000", "\\u0000\\u0000x", 1.0]`;
    expect(parsePythonJson(text)).toEqual([
      '\ue000',
      '\ue000\ue001\ue002\ue003\ue004\ue005\ue006\ue007\ue008\ue009',
      '\u0000',
      '\u0000\u0000x',
      float('1.0')
    ]);
  });

  it('keeps the last of duplicate keys, as json.loads does', () => {
    expect(parsePythonJson('{"a": 1.0, "a": 2.0}')).toEqual({ a: float('2.0') });
  });

  it('makes __proto__ an own key, never the prototype', () => {
    const parsed = parsePythonJson('{"__proto__": {"x": 1.0}}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(Object.prototype.hasOwnProperty.call(parsed, '__proto__')).toBe(true);
    expect(Object.getOwnPropertyDescriptor(parsed, '__proto__')?.value).toEqual({
      x: float('1.0')
    });
  });

  it.each([
    '',
    '{1.0: 2}',
    '{NaN: 1}',
    '[1.0 2]',
    '[01]',
    '[NaN1]',
    '[-]',
    '[1.]',
    '{"a": 1,}',
    '\ufeff{}'
  ])('throws a SyntaxError for invalid JSON: %j', text => {
    expect(() => parsePythonJson(text)).toThrow(SyntaxError);
  });

  it('refuses integers of more than 4300 digits, as CPython does', () => {
    expect(() => parsePythonJson('9'.repeat(4301))).toThrow(SyntaxError);
    expect(parsePythonJson('9'.repeat(4300))).toEqual(int('9'.repeat(4300)));
  });
});

describe('#dumpsPython()', () => {
  const value = {
    b: 1,
    a: [
      0.1,
      1e16,
      1e-7,
      1.5,
      float('-0.0'),
      1e22,
      5e-324,
      123456789.125,
      float('1.0'),
      int('9007199254740993'),
      int('-1180591620717411303424'),
      NaN,
      Infinity,
      -Infinity
    ],
    é: 'é😀\u2028\x00\x1f\x7f\b\f\n\r\t"\\/',
    '😀': {},
    '\uffff': [],
    Z: null,
    '': true
  };

  it('equals json.dumps(indent=1, sort_keys=True, ensure_ascii=False) as nbformat writes', () => {
    expect(dumpsPython(value, { indent: 1, sortKeys: true })).toBe(
      '{\n "": true,\n "Z": null,\n "a": [\n  0.1,\n  1e+16,\n  1e-07,\n  1.5,\n  -0.0,\n  1e+22,\n  5e-324,\n  123456789.125,\n  1.0,\n  9007199254740993,\n  -1180591620717411303424,\n  NaN,\n  Infinity,\n  -Infinity\n ],\n "b": 1,\n "é": "é😀\u2028\\u0000\\u001f\u007f\\b\\f\\n\\r\\t\\"\\\\/",\n "\uffff": [],\n "😀": {}\n}'
    );
  });

  it('equals json.dumps(sort_keys=True) with its default separators and ASCII escapes', () => {
    expect(dumpsPython(value, { sortKeys: true, ensureAscii: true })).toBe(
      '{"": true, "Z": null, "a": [0.1, 1e+16, 1e-07, 1.5, -0.0, 1e+22, 5e-324, 123456789.125, 1.0, 9007199254740993, -1180591620717411303424, NaN, Infinity, -Infinity], "b": 1, "\\u00e9": "\\u00e9\\ud83d\\ude00\\u2028\\u0000\\u001f\\u007f\\b\\f\\n\\r\\t\\"\\\\/", "\\uffff": [], "\\ud83d\\ude00": {}}'
    );
  });

  it('keeps insertion order without sortKeys', () => {
    expect(dumpsPython({ z: [1, { y: [] }], a: 'é' }, { indent: 4, ensureAscii: true })).toBe(
      '{\n    "z": [\n        1,\n        {\n            "y": []\n        }\n    ],\n    "a": "\\u00e9"\n}'
    );
  });

  it('writes integral numbers up to 2^53 as ints and larger ones as floats', () => {
    expect(dumpsPython([-0, 2 ** 53, 2 ** 53 + 2, 1e21, BigInt('123456789012345678901')])).toBe(
      '[0, 9007199254740992.0, 9007199254740994.0, 1e+21, 123456789012345678901]'
    );
  });

  it('writes lone surrogates escaped, or raw as Python does when asked', () => {
    expect(dumpsPython('a\ud800\\\ud800')).toBe('"a\\ud800\\\\\\ud800"');
    expect(dumpsPython('a\ud800\\\ud800', { rawLoneSurrogates: true })).toBe('"a\ud800\\\\\ud800"');
  });

  it('refuses values that are not JSON, as Python does', () => {
    expect(() => dumpsPython({ when: new Date(0) })).toThrow(TypeError);
    const cycle: unknown[] = [];
    cycle.push(cycle);
    expect(() => dumpsPython(cycle)).toThrow(TypeError);
  });
});
