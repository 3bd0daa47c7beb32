import { Writable } from 'node:stream';
import { createLogger, scrubUrl } from '../../src/gateway/logger';

describe('#scrubUrl()', () => {
  test('token and _xsrf values are replaced, the rest is kept', () => {
    expect(scrubUrl('/lab?token=abc&x=1&_xsrf=2|a|b|c#frag')).toBe(
      '/lab?token=<redacted>&x=1&_xsrf=<redacted>#frag'
    );
    expect(scrubUrl('/api/contents?TOKEN=abc')).toBe('/api/contents?TOKEN=<redacted>');
    expect(scrubUrl('/api/contents/token=abc.txt')).toBe('/api/contents/token=abc.txt');
  });
});

describe('#createLogger()', () => {
  test('writes JSON lines with a level name, and censors credential fields', () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(chunk.toString('utf8'));
        callback();
      }
    });
    const log = createLogger({ level: 'debug', destination });
    log.warn({ token: 'abc', headers: { authorization: 'token abc', cookie: 'c=1' } }, 'hello');
    const entry = JSON.parse(lines[0]) as Record<string, unknown>;
    expect(entry).toMatchObject({ level: 'warn', msg: 'hello', token: '<redacted>' });
    expect(entry.headers).toEqual({ authorization: '<redacted>', cookie: '<redacted>' });
    expect(lines.join('')).not.toContain('abc');
  });
});
