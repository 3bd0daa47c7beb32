/**
 * Python's view of a JSON scalar as nbformat holds it: which Python type a value is, the numbers
 * JavaScript cannot tell apart ({@link PyNumber}), and how Python spells a number. Every writer of
 * Python text (`json.dumps`, `repr`, `str`, the fast notebook serialiser, the HTTP answers) spells
 * numbers through this module, so that they all agree with each other and with Python.
 */

/**
 * A JSON number that Python reads as a float although JavaScript cannot tell it from an integer
 * (`1.0`, `2e3`), or an integer too large for a double. Notebook JSON keeps these as written so
 * that a notebook saved through us is byte-identical to one saved by Jupyter, and so that the
 * trust signature (which hashes Python's `str()` of every leaf) agrees.
 *
 * #### Notes
 * Plain JS numbers stand for every other number: an integral JS number is a Python int and a
 * non-integral one is a Python float.
 */
export class PyNumber {
  /**
   * @param kind - `float` for an integral-valued float lexeme, `int` for an integer beyond 2^53.
   * @param text - Python's own rendering of the value (`repr(float)` or the integer digits).
   */
  constructor(
    readonly kind: 'float' | 'int',
    readonly text: string
  ) {}

  /** The value as a JavaScript number (lossy for big integers). */
  valueOf(): number {
    return Number(this.text);
  }

  /** Serialise as a plain JSON number when sent to a browser. */
  toJSON(): number {
    return Number(this.text);
  }
}

/**
 * Python's `repr(float)`: the shortest digits that round-trip (as JavaScript also finds them),
 * laid out as Python does: positional for exponents -4..15 with at least one decimal (`1.0`),
 * scientific otherwise with a signed two-digit exponent (`1e+16`, `1.5e-05`).
 */
export function pythonFloatRepr(value: number): string {
  const magnitude = Math.abs(value);
  if (magnitude >= 1e-4 && magnitude < 1e16) {
    // The common case, quickly: here both languages print the same digits positionally, and
    // only an integral value needs Python's `.0`.
    const text = String(value);
    return Number.isInteger(value) ? text + '.0' : text;
  }
  if (Number.isNaN(value)) return 'nan';
  if (value === Infinity) return 'inf';
  if (value === -Infinity) return '-inf';
  if (value === 0) return Object.is(value, -0) ? '-0.0' : '0.0';
  const sign = value < 0 ? '-' : '';
  const [mantissa, exponentText] = magnitude.toExponential().split('e');
  const digits = mantissa.replace('.', '');
  const exponent = Number(exponentText);
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
    const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, '0');
    const fraction = digits.slice(exponent + 1) || '0';
    return `${sign}${whole}.${fraction}`;
  }
  const head = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  const exponentSign = exponent < 0 ? '-' : '+';
  return `${sign}${head}e${exponentSign}${String(Math.abs(exponent)).padStart(2, '0')}`;
}

/**
 * A JavaScript number as Python's `json.dumps` writes it: an integer of at most 2^53 in magnitude
 * as a Python int, any other number as a Python float (`1e-07`, `1e+16`, `0.1`), and `NaN`,
 * `Infinity` and `-Infinity` as Python writes them.
 */
export function formatNumber(value: number): string {
  if (Number.isInteger(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER) {
    return String(value);
  }
  if (Number.isNaN(value)) {
    return 'NaN';
  }
  if (!Number.isFinite(value)) {
    return value > 0 ? 'Infinity' : '-Infinity';
  }
  return pythonFloatRepr(value);
}

/**
 * Does `JSON.stringify` write this number as Python's `json.dumps` does? Only the others need
 * {@link formatNumber}.
 */
export function stringifiesAsPython(value: number): boolean {
  if (Number.isInteger(value)) {
    // An int for Python up to 2^53; beyond, a float (`1e+16`), which JavaScript spells in full.
    return Math.abs(value) <= Number.MAX_SAFE_INTEGER;
  }
  // From 1e-4 both print the shortest round-trip digits positionally; NaN and the infinities
  // fail this test, as JSON.stringify writes them as null.
  return Math.abs(value) >= 1e-4 && Number.isFinite(value);
}

/** The Python type of a JSON value as nbformat holds it. */
export type PythonKind = 'dict' | 'list' | 'str' | 'int' | 'float' | 'bool' | 'NoneType';

/**
 * The Python type of a value: an integral JS number up to 2^53 is an `int`, any other number a
 * `float`, and a {@link PyNumber} says which it is. Anything that is not JSON counts as a dict.
 */
export function pythonKind(value: unknown): PythonKind {
  switch (typeof value) {
    case 'string':
      return 'str';
    case 'boolean':
      return 'bool';
    case 'number':
      return Number.isInteger(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER
        ? 'int'
        : 'float';
    case 'bigint':
      return 'int';
    case 'undefined':
      return 'NoneType';
    default:
      break;
  }
  if (value === null) {
    return 'NoneType';
  }
  if (value instanceof PyNumber) {
    return value.kind;
  }
  return Array.isArray(value) ? 'list' : 'dict';
}

/**
 * `type(value).__name__` as nbformat holds the value: dicts are nbformat's `NotebookNode`, which
 * is what Python's error messages name.
 */
export function pythonTypeName(value: unknown): string {
  const kind = pythonKind(value);
  return kind === 'dict' ? 'NotebookNode' : kind;
}

/** Python's `bool()` of a JSON value. */
export function pythonTruthy(value: unknown): boolean {
  if (value === null || value === undefined || value === false) return false;
  if (value === true) return true;
  if (value instanceof PyNumber) return Number(value.text) !== 0;
  if (typeof value === 'number') return value !== 0;
  if (typeof value === 'string' || Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') return Object.values(value).some(v => v !== undefined);
  return Boolean(value);
}
