import { cloneLinkUrl, hubLinkContextFromEnv, landingTarget } from '../src/cloneLinks';

const QUERY = { object_bucket: 'notebooks', object_key: 'published/a b&c.ipynb' };

describe('cloneLinkUrl', () => {
  it("off a Hub, is the server's own landing page with the query encoded", () => {
    expect(
      cloneLinkUrl({
        serverUrl: 'http://127.0.0.1:8888/lab-base/',
        hub: null,
        page: 'store/clone',
        query: { ...QUERY, object_version_id: 'v 1' }
      })
    ).toBe(
      'http://127.0.0.1:8888/lab-base/store/clone' +
        '?object_bucket=notebooks&object_key=published%2Fa%20b%26c.ipynb&object_version_id=v%201'
    );
  });

  it('leaves out versions that are not given', () => {
    for (const object_version_id of [undefined, null, '']) {
      expect(
        cloneLinkUrl({
          serverUrl: 'http://127.0.0.1:8888/',
          hub: null,
          page: 'store/clone',
          query: { ...QUERY, object_version_id }
        })
      ).toBe(
        'http://127.0.0.1:8888/store/clone' +
          '?object_bucket=notebooks&object_key=published%2Fa%20b%26c.ipynb'
      );
    }
  });

  it("on a Hub, goes through the Hub's user-redirect on the server's origin", () => {
    expect(
      cloneLinkUrl({
        serverUrl: 'https://hub.example.org/user/alice/',
        hub: { hubPrefix: '/hub/', hubHost: '' },
        page: 'store/clone',
        query: QUERY
      })
    ).toBe(
      'https://hub.example.org/hub/user-redirect/store/clone' +
        '?object_bucket=notebooks&object_key=published%2Fa%20b%26c.ipynb'
    );
  });

  it("sends a named server's link to the recipient's default server, below the Hub's base URL", () => {
    expect(
      cloneLinkUrl({
        serverUrl: 'https://example.org/jh/user/alice/work/',
        hub: { hubPrefix: '/jh/hub/', hubHost: '' },
        page: 'store/fs-clone',
        query: { relpath: 'course/intro.ipynb' }
      })
    ).toBe('https://example.org/jh/hub/user-redirect/store/fs-clone?relpath=course%2Fintro.ipynb');
  });

  it("takes the Hub's own host when servers have subdomains", () => {
    const hub = { hubPrefix: '/hub/', hubHost: 'https://hub.example.org' };
    const link = cloneLinkUrl({
      serverUrl: 'https://alice.users.example.org/user/alice/',
      hub,
      page: 'store/clone',
      query: QUERY
    });
    expect(link.startsWith('https://hub.example.org/hub/user-redirect/store/clone?')).toBe(true);
    expect(
      cloneLinkUrl({
        serverUrl: 'https://alice.users.example.org/user/alice/',
        hub: { ...hub, hubHost: 'hub.example.org:8443' },
        page: 'store/clone',
        query: QUERY
      }).startsWith('https://hub.example.org:8443/hub/user-redirect/store/clone?')
    ).toBe(true);
  });
});

describe('hubLinkContextFromEnv', () => {
  it("is null off a Hub and the Hub's prefix and host on one", () => {
    expect(hubLinkContextFromEnv({ HOME: '/home/alice' })).toBeNull();
    expect(
      hubLinkContextFromEnv({
        JUPYTERHUB_API_URL: 'http://127.0.0.1:8081/hub/api',
        JUPYTERHUB_BASE_URL: '/'
      })
    ).toEqual({ hubPrefix: '/hub/', hubHost: '' });
    expect(
      hubLinkContextFromEnv({
        JUPYTERHUB_BASE_URL: '/jh',
        JUPYTERHUB_HOST: 'https://hub.example.org'
      })
    ).toEqual({ hubPrefix: '/jh/hub/', hubHost: 'https://hub.example.org' });
  });
});

describe('landingTarget', () => {
  const search = (value: string) => `?reset&store-landing=${encodeURIComponent(value)}`;

  it('answers either landing page with its own query', () => {
    expect(landingTarget(search('store/clone?object_bucket=b&object_key=a%20b.ipynb'))).toBe(
      'store/clone?object_bucket=b&object_key=a%20b.ipynb'
    );
    expect(landingTarget(search('store/fs-clone?relpath=x.ipynb'))).toBe(
      'store/fs-clone?relpath=x.ipynb'
    );
    expect(landingTarget(search('store/clone'))).toBe('store/clone');
  });

  it('refuses anything else: no parameter, another path, a fragment, dot segments', () => {
    expect(landingTarget('?reset')).toBeNull();
    expect(landingTarget(search(''))).toBeNull();
    for (const value of [
      '/hub/logout',
      'https://elsewhere.example.org/store/clone?x',
      '//elsewhere.example.org/store/clone',
      'store/clone/../../hub/logout',
      '../store/clone?x',
      'store/clonex?x',
      'store/clone#fragment',
      'store/clone?x#fragment',
      'api/store/clone?x'
    ]) {
      expect(landingTarget(search(value))).toBeNull();
    }
  });
});
