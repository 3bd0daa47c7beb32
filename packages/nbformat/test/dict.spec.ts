/**
 * Python's operations on nbformat's values, failing as Python fails. Every expected exception
 * and value below was produced by CPython 3.11 on an nbformat `NotebookNode`.
 */
import { pyAttr, pyContains, pyItem, pyJoin, pyPop, pythonEquals, pythonInt } from '../src/dict';
import { PyNumber, PythonException } from '../src';

/** What `action` raises, as `[type(e).__name__, str(e), repr(e)]`. */
function raised(action: () => unknown): [string, string, string] | undefined {
  try {
    action();
  } catch (error) {
    if (error instanceof PythonException) {
      return [error.pythonType, error.message, error.pythonRepr];
    }
    throw error;
  }
  return undefined;
}

describe('Python operations on notebook nodes', () => {
  it.each<[string, () => unknown, [string, string, string]]>([
    ['node.b', () => pyAttr({ a: 1 }, 'b'), ['AttributeError', 'b', "AttributeError('b')"]],
    [
      "node['missing']",
      () => pyItem({ a: 1 }, 'missing'),
      ['KeyError', "'missing'", "KeyError('missing')"]
    ],
    [
      "'x'['k']",
      () => pyItem('x', 'k'),
      [
        'TypeError',
        "string indices must be integers, not 'str'",
        'TypeError("string indices must be integers, not \'str\'")'
      ]
    ],
    [
      "[1]['k']",
      () => pyItem([1], 'k'),
      [
        'TypeError',
        'list indices must be integers or slices, not str',
        "TypeError('list indices must be integers or slices, not str')"
      ]
    ],
    [
      '[] in node',
      () => pyContains({ a: 1 }, []),
      ['TypeError', "unhashable type: 'list'", 'TypeError("unhashable type: \'list\'")']
    ],
    [
      "1 in 'abc'",
      () => pyContains('abc', 1),
      [
        'TypeError',
        "'in <string>' requires string as left operand, not int",
        'TypeError("\'in <string>\' requires string as left operand, not int")'
      ]
    ],
    [
      "''.join(['a', 1])",
      () => pyJoin('', ['a', 1]),
      [
        'TypeError',
        'sequence item 1: expected str instance, int found',
        "TypeError('sequence item 1: expected str instance, int found')"
      ]
    ],
    [
      "[].pop('a', None)",
      () => pyPop([], 'a', null),
      [
        'TypeError',
        'pop expected at most 1 argument, got 2',
        "TypeError('pop expected at most 1 argument, got 2')"
      ]
    ],
    [
      "int('1.5')",
      () => pythonInt('1.5'),
      [
        'ValueError',
        "invalid literal for int() with base 10: '1.5'",
        'ValueError("invalid literal for int() with base 10: \'1.5\'")'
      ]
    ]
  ])('fails on %s as Python does', (_name, action, expected) => {
    expect(raised(action)).toEqual(expected);
  });

  it('reads and removes keys as a dict does', () => {
    const node: Record<string, unknown> = { a: 1, b: 2 };
    expect(pyPop(node, 'a', null)).toBe(1);
    expect(pyPop(node, 'a', 'fallback')).toBe('fallback');
    expect(node).toEqual({ b: 2 });
    expect(pyContains(node, 'b')).toBe(true);
    expect(pyContains(['x', 1], true)).toBe(true);
  });

  it("converts with Python's int()", () => {
    expect(pythonInt(' 1_000 ')).toBe(1000);
    expect(pythonInt(2.9)).toBe(2);
    expect(pythonInt(true)).toBe(1);
    expect(pythonInt(1e20)).toEqual(new PyNumber('int', '100000000000000000000'));
  });

  it("compares with Python's ==", () => {
    expect(pythonEquals(true, 1) && pythonEquals(1, new PyNumber('float', '1.0'))).toBe(true);
    expect(
      pythonEquals(
        [1, { a: new PyNumber('float', '1.0') }],
        [new PyNumber('float', '1.0'), { a: true }]
      )
    ).toBe(true);
    expect(pythonEquals(null, false)).toBe(false);
    expect(pythonEquals('1', 1)).toBe(false);
  });
});
