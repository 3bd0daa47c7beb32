import {
  decodeBase64Lenient,
  encodeBase64Lines,
  formatTimestamp,
  guessMimeType
} from '../../src/contents/model';
import { splitExtension } from '../../src/contents/paths';
import { compileGlobs, DEFAULT_HIDE_GLOBS } from '../../src/contents/hidden';
import { decodeUrlPath, pythonQuote } from '../../src/http/quote';

describe('model helpers', () => {
  it('#formatTimestamp() renders like Python isoformat with Z', () => {
    expect(formatTimestamp(Date.UTC(2024, 0, 2, 3, 4, 5))).toBe('2024-01-02T03:04:05Z');
    expect(formatTimestamp(Date.UTC(2024, 0, 2, 3, 4, 5) + 123.456)).toBe(
      '2024-01-02T03:04:05.123456Z'
    );
  });

  it('#encodeBase64Lines() wraps at 76 characters like base64.encodebytes', () => {
    const encoded = encodeBase64Lines(Buffer.alloc(100, 0xff));
    const lines = encoded.split('\n');
    expect(lines[0]).toHaveLength(76);
    expect(encoded.endsWith('\n')).toBe(true);
    expect(Buffer.from(encoded, 'base64').equals(Buffer.alloc(100, 0xff))).toBe(true);
    expect(encodeBase64Lines(Buffer.alloc(0))).toBe('');
  });

  it('#decodeBase64Lenient() ignores line breaks and refuses bad padding', () => {
    expect(decodeBase64Lenient('aGVs\nbG8=\n')?.toString()).toBe('hello');
    expect(decodeBase64Lenient('aGVsbG8')).toBeUndefined();
    expect(decodeBase64Lenient('a')).toBeUndefined();
  });

  it('#guessMimeType() answers as Python mimetypes for common names', () => {
    expect(guessMimeType('a.txt')).toBe('text/plain');
    expect(guessMimeType('a.py')).toBe('text/x-python');
    expect(guessMimeType('a.png')).toBe('image/png');
    expect(guessMimeType('a.blob')).toBeNull();
    expect(guessMimeType('a.ipynb')).toBeNull();
    expect(guessMimeType('a.pyc')).toBe('application/x-python-code');
    expect(guessMimeType('a.tar.gz')).toBe('application/x-tar');
    expect(guessMimeType('a.tgz')).toBe('application/x-tar');
    expect(guessMimeType('README')).toBeNull();
  });

  it('#splitExtension() matches os.path.splitext', () => {
    expect(splitExtension('a.tar.gz')).toEqual({ name: 'a.tar', ext: '.gz' });
    expect(splitExtension('.bashrc')).toEqual({ name: '.bashrc', ext: '' });
    expect(splitExtension('..a.b')).toEqual({ name: '..a', ext: '.b' });
  });

  it('#compileGlobs() hides what Jupyter hides', () => {
    const hidden = compileGlobs(DEFAULT_HIDE_GLOBS);
    expect(['__pycache__', 'x.pyc', 'x.pyo', '.DS_Store', 'notes.txt~'].every(hidden)).toBe(true);
    expect(['a.py', 'pycache', 'a.pyc.txt'].some(hidden)).toBe(false);
  });

  it('#pythonQuote() escapes like urllib.parse.quote', () => {
    expect(pythonQuote("a b!'()*é.txt")).toBe('a%20b%21%27%28%29%2A%C3%A9.txt');
  });

  it('#decodeUrlPath() decodes UTF-8 and refuses invalid bytes', () => {
    expect(decodeUrlPath('/unicod%C3%A9/a%20b')).toBe('/unicodé/a b');
    expect(decodeUrlPath('/a%2e%2e')).toBe('/a..');
    expect(decodeUrlPath('/%ff')).toBeUndefined();
  });
});
