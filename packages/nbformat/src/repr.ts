/**
 * Python's text of the values nbformat holds: `repr()`, `str()` and `pprint.pformat()`, and the
 * `str` semantics they and the notebook files rest on (`splitlines`, `len`, slicing and ordering
 * by code point).
 */
import { PyNumber, pythonFloatRepr, pythonKind } from './pynumber';

type JsonObject = Record<string, unknown>;

/**
 * Order two strings by Unicode code point, as Python orders `str` (and so `sort_keys`).
 * JavaScript's default order compares UTF-16 units, which puts astral characters (surrogate
 * pairs, from U+D800) before U+E000..U+FFFF.
 */
export function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) {
      if (x >= 0xd800 && y >= 0xd800) {
        return shiftSurrogates(x) - shiftSurrogates(y);
      }
      return x - y;
    }
  }
  return a.length - b.length;
}

/** Move surrogate units above U+E000..U+FFFF (for units from U+D800 upwards). */
function shiftSurrogates(unit: number): number {
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

/** The line boundaries of Python's `str.splitlines`. */
// eslint-disable-next-line no-control-regex -- the separators are control characters
const LINE_BOUNDARY = /\r\n|[\n\v\f\r\x1c-\x1e\x85\u2028\u2029]/g;

/**
 * Python's `text.splitlines(keepEnds)`: splits at `\n`, `\r`, `\r\n`, `\v`, `\f`, `\x1c`,
 * `\x1d`, `\x1e`, `\x85`, `\u2028` and `\u2029`; an empty string gives an empty list.
 */
export function pythonSplitLines(text: string, keepEnds: boolean): string[] {
  const lines: string[] = [];
  let start = 0;
  LINE_BOUNDARY.lastIndex = 0;
  for (let match = LINE_BOUNDARY.exec(text); match; match = LINE_BOUNDARY.exec(text)) {
    const end = match.index + match[0].length;
    lines.push(text.slice(start, keepEnds ? end : match.index));
    start = end;
  }
  if (start < text.length) {
    lines.push(text.slice(start));
  }
  return lines;
}

const SURROGATE = /[\ud800-\udfff]/;

/** Python's `len(text)`: the number of code points (a lone surrogate counts as one). */
export function codePointLength(text: string): number {
  if (!SURROGATE.test(text)) {
    return text.length;
  }
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
      }
    }
    count++;
  }
  return count;
}

/** Python's `text[:count]`: the first `count` code points. */
export function codePointPrefix(text: string, count: number): string {
  if (!SURROGATE.test(text)) {
    return text.slice(0, count);
  }
  let taken = 0;
  let i = 0;
  while (i < text.length && taken < count) {
    const unit = text.charCodeAt(i);
    const next = text.charCodeAt(i + 1);
    i += unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff ? 2 : 1;
    taken++;
  }
  return text.slice(0, i);
}

/** Characters `str.isprintable()` rejects: categories Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs. */
const NOT_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;
const PLAIN_ASCII = /^[\x20-\x7e]*$/;

/**
 * Python's `repr(text)` for a `str`.
 *
 * #### Notes
 * Printability comes from the Unicode tables of this JavaScript engine, which may be a newer
 * Unicode version than the Python's: a character assigned in between is escaped by Python only.
 */
export function pythonStrRepr(text: string): string {
  return pythonStrReprQuoted(text, text.includes("'") && !text.includes('"') ? '"' : "'");
}

/** {@link pythonStrRepr} with the quote given (as Python chose it for a longer text). */
export function pythonStrReprQuoted(text: string, quote: '"' | "'"): string {
  if (PLAIN_ASCII.test(text)) {
    return quote + text.replace(quote === "'" ? /[\\']/g : /\\/g, '\\$&') + quote;
  }
  let out = quote;
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    if (char === quote || char === '\\') {
      out += '\\' + char;
    } else if (code === 0x09) {
      out += '\\t';
    } else if (code === 0x0a) {
      out += '\\n';
    } else if (code === 0x0d) {
      out += '\\r';
    } else if (code < 0x20 || code === 0x7f) {
      out += '\\x' + code.toString(16).padStart(2, '0');
    } else if (code < 0x7f || !NOT_PRINTABLE.test(char)) {
      out += char;
    } else if (code <= 0xff) {
      out += '\\x' + code.toString(16).padStart(2, '0');
    } else if (code <= 0xffff) {
      out += '\\u' + code.toString(16).padStart(4, '0');
    } else {
      out += '\\U' + code.toString(16).padStart(8, '0');
    }
  }
  return out + quote;
}

export interface ReprOptions {
  /** Sort dict keys, as `pprint` does; `repr` keeps insertion order. */
  sortDicts?: boolean;
}

/**
 * Python's `repr()` of a JSON value as nbformat holds it: `None`, `True`, `1`, `1.0`, `'text'`,
 * `[1, 2]`, `{'a': 1}`.
 */
export function pythonRepr(value: unknown, options: ReprOptions = {}): string {
  switch (typeof value) {
    case 'string':
      return pythonStrRepr(value);
    case 'number':
      return Number.isInteger(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER
        ? String(value)
        : pythonFloatRepr(value);
    case 'boolean':
      return value ? 'True' : 'False';
    case 'bigint':
      return value.toString();
    case 'undefined':
      return 'None';
    default:
      break;
  }
  if (value === null) {
    return 'None';
  }
  if (value instanceof PyNumber) {
    return value.text;
  }
  if (Array.isArray(value)) {
    return '[' + value.map(item => pythonRepr(item, options)).join(', ') + ']';
  }
  if (typeof value === 'object') {
    const record = value as Record<string, unknown>;
    let keys = Object.keys(record);
    if (options.sortDicts) {
      keys = keys.sort(compareCodePoints);
    }
    return (
      '{' +
      keys.map(key => pythonStrRepr(key) + ': ' + pythonRepr(record[key], options)).join(', ') +
      '}'
    );
  }
  return String(value);
}

/**
 * Python's `str()` of a JSON value: like {@link pythonRepr} except that a string is itself. The
 * notebook notary feeds it every leaf to the HMAC: `True`, `False`, `None`, integers as digits,
 * floats by `repr`, strings as themselves.
 */
export function pythonStr(value: unknown): string {
  return typeof value === 'string' ? value : pythonRepr(value);
}

/** The characters Python's `\s` matches in a `str` (those `str.isspace()` accepts). */
const PYTHON_WHITESPACE =
  '\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';

/** Python's `\S*\s*`. */
const WORD_AND_SPACE = new RegExp(`[^${PYTHON_WHITESPACE}]*[${PYTHON_WHITESPACE}]*`, 'gu');

/**
 * Python's `pprint.pformat(value, width=width)` (indent 1, dict keys sorted) for JSON values.
 */
export function pythonPrettyFormat(value: unknown, width = 80): string {
  const out: string[] = [];
  const repr = (item: unknown): string => pythonRepr(item, { sortDicts: true });

  const format = (item: unknown, indent: number, allowance: number, level: number): void => {
    const rep = repr(item);
    if (codePointLength(rep) > width - indent - allowance) {
      switch (pythonKind(item)) {
        case 'dict':
          formatDict(item as JsonObject, indent, allowance, level + 1);
          return;
        case 'list':
          formatList(item as unknown[], indent, allowance, level + 1);
          return;
        case 'str':
          formatString(item as string, indent, allowance, level + 1);
          return;
        default:
          break;
      }
    }
    out.push(rep);
  };

  const formatDict = (item: JsonObject, indent: number, allowance: number, level: number) => {
    out.push('{');
    const keys = Object.keys(item).sort(compareCodePoints);
    const inner = indent + 1;
    keys.forEach((key, index) => {
      const last = index === keys.length - 1;
      const keyRep = repr(key);
      out.push(keyRep, ': ');
      format(item[key], inner + codePointLength(keyRep) + 2, last ? allowance + 1 : 1, level);
      if (!last) {
        out.push(',\n' + ' '.repeat(inner));
      }
    });
    out.push('}');
  };

  const formatList = (item: unknown[], indent: number, allowance: number, level: number) => {
    out.push('[');
    const inner = indent + 1;
    item.forEach((entry, index) => {
      const last = index === item.length - 1;
      if (index > 0) {
        out.push(',\n' + ' '.repeat(inner));
      }
      format(entry, inner, last ? allowance + 1 : 1, level);
    });
    out.push(']');
  };

  const formatString = (text: string, indent: number, allowance: number, level: number) => {
    if (text.length === 0) {
      out.push(repr(text));
      return;
    }
    const chunks: string[] = [];
    const lines = pythonSplitLines(text, true);
    if (level === 1) {
      indent += 1;
      allowance += 1;
    }
    const maxWidth = width - indent;
    let maxWidth1 = maxWidth;
    let rep = '';
    lines.forEach((line, i) => {
      const lastLine = i === lines.length - 1;
      rep = repr(line);
      if (lastLine) {
        maxWidth1 -= allowance;
      }
      if (codePointLength(rep) <= maxWidth1) {
        chunks.push(rep);
        return;
      }
      const parts = Array.from(line.matchAll(WORD_AND_SPACE), match => match[0]).filter(
        part => part !== ''
      );
      let maxWidth2 = maxWidth;
      let current = '';
      parts.forEach((part, j) => {
        const candidate = current + part;
        if (j === parts.length - 1 && lastLine) {
          maxWidth2 -= allowance;
        }
        if (codePointLength(repr(candidate)) > maxWidth2) {
          if (current) {
            chunks.push(repr(current));
          }
          current = part;
        } else {
          current = candidate;
        }
      });
      if (current) {
        chunks.push(repr(current));
      }
    });
    if (chunks.length === 1) {
      out.push(rep);
      return;
    }
    if (level === 1) {
      out.push('(');
    }
    out.push(chunks.join('\n' + ' '.repeat(indent)));
    if (level === 1) {
      out.push(')');
    }
  };

  format(value, 0, 0, 0);
  return out.join('');
}
