import { describeUpstream, parseUpstreamAddress } from '../../src/gateway/upstream';

describe('#parseUpstreamAddress()', () => {
  test('an http origin becomes a TCP address', () => {
    expect(parseUpstreamAddress('http://127.0.0.1:8889')).toEqual({
      kind: 'tcp',
      host: '127.0.0.1',
      port: 8889
    });
    expect(parseUpstreamAddress('http://[::1]:8889/')).toEqual({
      kind: 'tcp',
      host: '::1',
      port: 8889
    });
    expect(parseUpstreamAddress('http://localhost')).toEqual({
      kind: 'tcp',
      host: 'localhost',
      port: 80
    });
  });

  test('unix:PATH becomes a socket address', () => {
    expect(parseUpstreamAddress('unix:/run/jupyter.sock')).toEqual({
      kind: 'unix',
      socketPath: '/run/jupyter.sock'
    });
  });

  test.each([
    ['unix:relative.sock', /absolute/],
    ['https://127.0.0.1:8889', /http:\/\//],
    ['127.0.0.1:8889', /http:\/\//],
    ['not a url', /neither/],
    ['http://127.0.0.1:8889/user/alice/', /origin only/],
    ['http://127.0.0.1:8889/?token=x', /origin only/],
    ['http://user:pw@127.0.0.1:8889', /origin only/]
  ])('%s is refused with a reason', (spec, reason) => {
    expect(() => parseUpstreamAddress(spec)).toThrow(reason);
  });
});

describe('#describeUpstream()', () => {
  test('names the address as a user would type it', () => {
    expect(describeUpstream({ kind: 'tcp', host: '::1', port: 1 })).toBe('http://[::1]:1');
    expect(describeUpstream({ kind: 'unix', socketPath: '/s.sock' })).toBe('unix:/s.sock');
  });
});
