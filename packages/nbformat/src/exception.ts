/**
 * The exceptions Python raises where nbformat fails, so that callers can fail as Jupyter does.
 */
import { pythonStrRepr } from './repr';

/**
 * An exception that Python would raise at this point (`AttributeError`, `TypeError`, ...). The
 * notebook reader and writer throw it where nbformat would fail, so that callers can turn it into
 * the same HTTP error Jupyter answers with.
 */
export class PythonException extends Error {
  /**
   * @param pythonType - the Python exception class name, e.g. `AttributeError`.
   * @param message - the exception's message, as Python words it where we know it.
   * @param pythonRepr - `repr()` of the exception; derived from the class and message if omitted.
   */
  constructor(
    readonly pythonType: string,
    message: string,
    pythonRepr?: string
  ) {
    super(message);
    this.name = 'PythonException';
    this.pythonRepr =
      pythonRepr ?? `${pythonType}(${message === '' ? '' : pythonStrRepr(message)})`;
  }

  /** What `repr(exception)` prints in Python (Jupyter puts it in "Unreadable Notebook" errors). */
  readonly pythonRepr: string;
}

/**
 * The `UnicodeEncodeError` Python raises when encoding `text`: it reports the first run of code
 * points the codec refuses (`ascii`: beyond U+007F; `utf-8`: lone surrogates).
 */
export function unicodeEncodeError(encoding: 'ascii' | 'utf-8', text: string): PythonException {
  const refused =
    encoding === 'ascii'
      ? (code: number) => code > 0x7f
      : (code: number) => code >= 0xd800 && code <= 0xdfff;
  const reason = encoding === 'ascii' ? 'ordinal not in range(128)' : 'surrogates not allowed';
  let position = 0;
  let start = -1;
  let end = -1;
  let first = 0;
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    if (start < 0 && refused(code)) {
      start = position;
      first = code;
    } else if (start >= 0 && !refused(code)) {
      end = position;
      break;
    }
    position++;
  }
  if (end < 0) {
    end = position;
  }
  const where =
    end === start + 1
      ? `character '${escapeCodePoint(first)}' in position ${start}`
      : `characters in position ${start}-${end - 1}`;
  return new PythonException(
    'UnicodeEncodeError',
    `'${encoding}' codec can't encode ${where}: ${reason}`,
    `UnicodeEncodeError(${pythonStrRepr(encoding)}, ${pythonStrRepr(text)}, ${start}, ${end}, ${pythonStrRepr(reason)})`
  );
}

/** How Python's codec errors show a code point: `\xe9`, `\ud800`, `\U0001f600`. */
function escapeCodePoint(code: number): string {
  if (code <= 0xff) {
    return '\\x' + code.toString(16).padStart(2, '0');
  }
  if (code <= 0xffff) {
    return '\\u' + code.toString(16).padStart(4, '0');
  }
  return '\\U' + code.toString(16).padStart(8, '0');
}
