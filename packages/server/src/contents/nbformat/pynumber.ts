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
  if (Number.isNaN(value)) return 'nan';
  if (value === Infinity) return 'inf';
  if (value === -Infinity) return '-inf';
  if (value === 0) return Object.is(value, -0) ? '-0.0' : '0.0';
  const sign = value < 0 ? '-' : '';
  const [mantissa, exponentText] = Math.abs(value).toExponential().split('e');
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
 * Python's `str()` of a JSON leaf, as the notebook notary feeds it to the HMAC: `True`, `False`,
 * `None`, integers as digits, floats by `repr`, strings as themselves.
 */
export function pythonStr(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (value instanceof PyNumber) return value.text;
  if (typeof value === 'number') {
    return Number.isInteger(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER
      ? String(value)
      : pythonFloatRepr(value);
  }
  return String(value);
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
