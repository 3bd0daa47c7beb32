/**
 * Python's operations on the values nbformat holds, failing where Python fails: the dicts (an
 * nbformat `NotebookNode`, insertion-ordered like a JavaScript object) above all, and the lists
 * and strings in them. nbformat's reader, upgrader and validator are written against these, so
 * that a malformed notebook raises the exception, with the message, that Python raises.
 */
import { PythonException } from './exception';
import { PyNumber, pythonKind, pythonTypeName } from './pynumber';
import { pythonStrRepr } from './repr';

/** Is this a Python number (`int`, `float`, or `bool`, which is an `int` in Python)? */
function numericValue(value: unknown): number | undefined {
  if (typeof value === 'number') {
    return value;
  }
  if (typeof value === 'boolean') {
    return value ? 1 : 0;
  }
  if (value instanceof PyNumber) {
    return Number(value.text);
  }
  if (typeof value === 'bigint') {
    return Number(value);
  }
  return undefined;
}

/**
 * Python's `a == b` for JSON values (`True == 1 == 1.0`; lists and dicts compare by content).
 *
 * #### Notes
 * Numbers compare as doubles, so two distinct integers beyond 2^53 may compare equal.
 */
export function pythonEquals(a: unknown, b: unknown): boolean {
  if (a === b) {
    return true;
  }
  if (typeof a === 'string' || typeof b === 'string') {
    return false;
  }
  const x = numericValue(a);
  const y = numericValue(b);
  if (x !== undefined || y !== undefined) {
    if (a instanceof PyNumber && b instanceof PyNumber && a.kind === 'int' && b.kind === 'int') {
      return a.text === b.text;
    }
    return x === y;
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((item, index) => pythonEquals(item, b[index]))
    );
  }
  if (isMapping(a) && isMapping(b)) {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length &&
      keys.every(
        key => Object.prototype.hasOwnProperty.call(b, key) && pythonEquals(a[key], b[key])
      )
    );
  }
  return (a === null || a === undefined) && (b === null || b === undefined);
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return pythonKind(value) === 'dict';
}

// ---------------------------------------------------------------------------------------------
// Python operations on notebook nodes, failing where Python fails
// ---------------------------------------------------------------------------------------------

function hasKey(record: unknown, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(record, key);
}

/** `node.name` on an nbformat `NotebookNode`: the key's value, or an `AttributeError`. */
export function pyAttr(node: unknown, name: string): unknown {
  if (pythonKind(node) !== 'dict') {
    throw new PythonException(
      'AttributeError',
      `'${pythonTypeName(node)}' object has no attribute '${name}'`
    );
  }
  if (!hasKey(node, name)) {
    throw new PythonException('AttributeError', name);
  }
  return (node as Record<string, unknown>)[name];
}

/** `node.name = value` (or `node[name] = value`) on a dict; an error on anything else. */
export function pySet(node: unknown, name: string, value: unknown): void {
  if (pythonKind(node) !== 'dict') {
    throw new PythonException(
      'AttributeError',
      `'${pythonTypeName(node)}' object has no attribute '${name}'`
    );
  }
  (node as Record<string, unknown>)[name] = value;
}

/** `node[key] = value`, failing as Python does on something other than a dict. */
export function pySetItem(node: unknown, key: string, value: unknown): void {
  const kind = pythonKind(node);
  if (kind === 'dict') {
    (node as Record<string, unknown>)[key] = value;
    return;
  }
  throw new PythonException(
    'TypeError',
    kind === 'list'
      ? subscriptError(node)
      : `'${pythonTypeName(node)}' object does not support item assignment`
  );
}

/** `node.get(key, fallback)`. */
export function pyGet(node: unknown, key: string, fallback: unknown): unknown {
  if (pythonKind(node) !== 'dict') {
    throw new PythonException(
      'AttributeError',
      `'${pythonTypeName(node)}' object has no attribute 'get'`
    );
  }
  return hasKey(node, key) ? (node as Record<string, unknown>)[key] : fallback;
}

/** `node.pop(key, fallback)`. */
export function pyPop(node: unknown, key: string, fallback: unknown): unknown {
  const kind = pythonKind(node);
  if (kind === 'list') {
    throw new PythonException('TypeError', 'pop expected at most 1 argument, got 2');
  }
  if (kind !== 'dict') {
    throw new PythonException(
      'AttributeError',
      `'${pythonTypeName(node)}' object has no attribute 'pop'`
    );
  }
  const record = node as Record<string, unknown>;
  if (!hasKey(record, key)) {
    return fallback;
  }
  const value = record[key];
  delete record[key];
  return value;
}

/** `node.setdefault(key, fallback)`. */
export function pySetDefault(node: unknown, key: string, fallback: unknown): unknown {
  if (pythonKind(node) !== 'dict') {
    throw new PythonException(
      'AttributeError',
      `'${pythonTypeName(node)}' object has no attribute 'setdefault'`
    );
  }
  const record = node as Record<string, unknown>;
  if (!hasKey(record, key)) {
    record[key] = fallback;
  }
  return record[key];
}

/** `node[key]` on a dict (a `KeyError` when missing); an error on anything else. */
export function pyItem(node: unknown, key: string): unknown {
  const kind = pythonKind(node);
  if (kind !== 'dict') {
    throw new PythonException('TypeError', subscriptError(node));
  }
  if (!hasKey(node, key)) {
    throw new PythonException('KeyError', pythonStrRepr(key), `KeyError(${pythonStrRepr(key)})`);
  }
  return (node as Record<string, unknown>)[key];
}

/** Python's error for `node["key"]` on something other than a dict. */
function subscriptError(node: unknown): string {
  switch (pythonKind(node)) {
    case 'str':
      return "string indices must be integers, not 'str'";
    case 'list':
      return 'list indices must be integers or slices, not str';
    default:
      return `'${pythonTypeName(node)}' object is not subscriptable`;
  }
}

/** `node.items()` / `node.values()`: the node must be a dict. */
export function pyEntries(node: unknown, method: 'items' | 'values'): [string, unknown][] {
  if (pythonKind(node) !== 'dict') {
    throw new PythonException(
      'AttributeError',
      `'${pythonTypeName(node)}' object has no attribute '${method}'`
    );
  }
  return Object.entries(node as Record<string, unknown>);
}

/** The items Python's `for x in value` visits, or a `TypeError` when it cannot iterate. */
export function pythonIterable(value: unknown): unknown[] {
  switch (pythonKind(value)) {
    case 'list':
      return value as unknown[];
    case 'dict':
      return Object.keys(value as object);
    case 'str':
      return Array.from(value as string);
    default:
      throw new PythonException('TypeError', `'${pythonTypeName(value)}' object is not iterable`);
  }
}

/** Python's `item in container`. */
export function pyContains(container: unknown, item: unknown): boolean {
  const kind = pythonKind(container);
  switch (kind) {
    case 'dict':
      requireHashable(item);
      return typeof item === 'string' && hasKey(container, item);
    case 'str':
      if (typeof item !== 'string') {
        throw new PythonException(
          'TypeError',
          `'in <string>' requires string as left operand, not ${pythonTypeName(item)}`
        );
      }
      return (container as string).includes(item);
    case 'list':
      return (container as unknown[]).some(element => pythonEquals(element, item));
    default:
      throw new PythonException(
        'TypeError',
        `argument of type '${pythonTypeName(container)}' is not iterable`
      );
  }
}

/** Python refuses lists and dicts as set members and dict keys. */
export function requireHashable(value: unknown): void {
  const kind = pythonKind(value);
  if (kind === 'list' || kind === 'dict') {
    throw new PythonException('TypeError', `unhashable type: '${pythonTypeName(value)}'`);
  }
}

/** `separator.join(items)`: every item must be a string. */
export function pyJoin(separator: string, items: unknown): string {
  const list = pythonIterable(items);
  list.forEach((item, index) => {
    if (typeof item !== 'string') {
      throw new PythonException(
        'TypeError',
        `sequence item ${index}: expected str instance, ${pythonTypeName(item)} found`
      );
    }
  });
  return (list as string[]).join(separator);
}

/** `value.method` for a `str` method: an `AttributeError` on anything but a string. */
export function requireStr(value: unknown, method: string): string {
  if (typeof value !== 'string') {
    throw new PythonException(
      'AttributeError',
      `'${pythonTypeName(value)}' object has no attribute '${method}'`
    );
  }
  return value;
}

/** Python's `int(value)` for a JSON value. */
export function pythonInt(value: unknown): number | PyNumber {
  const kind = pythonKind(value);
  let digits: string;
  if (kind === 'int') {
    return value as number | PyNumber;
  } else if (kind === 'bool') {
    return value ? 1 : 0;
  } else if (kind === 'float') {
    const number = Number(value);
    if (Number.isNaN(number)) {
      throw new PythonException('ValueError', 'cannot convert float NaN to integer');
    }
    if (!Number.isFinite(number)) {
      throw new PythonException('OverflowError', 'cannot convert float infinity to integer');
    }
    digits = BigInt(Math.trunc(number)).toString();
  } else if (kind === 'str' && /^\s*[+-]?\d+(?:_\d+)*\s*$/.test(value as string)) {
    digits = BigInt((value as string).trim().replace(/_/g, '')).toString();
  } else if (kind === 'str') {
    throw new PythonException(
      'ValueError',
      `invalid literal for int() with base 10: ${pythonStrRepr(value as string)}`
    );
  } else {
    throw new PythonException(
      'TypeError',
      `int() argument must be a string, a bytes-like object or a real number, not '${pythonTypeName(value)}'`
    );
  }
  const number = Number(digits);
  return Number.isSafeInteger(number) ? number : new PyNumber('int', digits);
}
