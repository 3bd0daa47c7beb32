import {
  checkPolicySettings,
  PolicyError,
  roleSessionName,
  sessionPolicy,
  userPrefixes
} from '../../src/hub/policy';

const BASE: sessionPolicy.IOptions = {
  bucket: 'notebooks',
  username: 'alice',
  workspaceTemplate: 'workspace/{username}',
  namedPrefix: 'named',
  publishedPrefix: 'published',
  allowPublish: false
};

/** The statement with `sid`, which must exist. */
function statement(policy: sessionPolicy.IPolicy, sid: string): sessionPolicy.IStatement {
  const found = policy.Statement.find(entry => entry.Sid === sid);
  if (!found) throw new Error(`no statement ${sid} in ${JSON.stringify(policy)}`);
  return found;
}

/** Every resource a policy grants any action on. */
function resources(policy: sessionPolicy.IPolicy): string[] {
  return policy.Statement.flatMap(entry => entry.Resource);
}

describe('sessionPolicy', () => {
  it('grants object actions on the workspace and the named-versions mirror of the user only', () => {
    const policy = sessionPolicy(BASE);
    const objects = statement(policy, 'UserObjects');
    expect(objects.Resource).toEqual([
      'arn:aws:s3:::notebooks/workspace/alice/*',
      'arn:aws:s3:::notebooks/named/workspace/alice/*'
    ]);
    expect(objects.Action).toEqual([
      's3:GetObject',
      's3:GetObjectVersion',
      's3:PutObject',
      's3:DeleteObject',
      's3:GetObjectTagging',
      's3:PutObjectTagging',
      's3:GetObjectVersionTagging',
      's3:PutObjectVersionTagging'
    ]);
    expect(JSON.stringify(policy)).not.toContain('DeleteObjectVersion');
  });

  it('lists the bucket only below those prefixes', () => {
    const listing = statement(sessionPolicy(BASE), 'UserListing');
    expect(listing.Resource).toEqual(['arn:aws:s3:::notebooks']);
    expect(listing.Action).toEqual(['s3:ListBucket', 's3:ListBucketVersions']);
    expect(listing.Condition).toEqual({
      StringLike: { 's3:prefix': ['workspace/alice/*', 'named/workspace/alice/*'] }
    });
  });

  it('reads published copies, and writes them only when publishing is allowed', () => {
    const off = sessionPolicy(BASE);
    expect(statement(off, 'PublishedReading')).toMatchObject({
      Action: ['s3:GetObject', 's3:GetObjectVersion'],
      Resource: ['arn:aws:s3:::notebooks/published/*']
    });
    expect(statement(off, 'PublishedListing').Condition).toEqual({
      StringLike: { 's3:prefix': ['published/*'] }
    });
    expect(off.Statement.map(entry => entry.Sid)).not.toContain('PublishedWriting');

    const on = sessionPolicy({ ...BASE, allowPublish: true });
    expect(statement(on, 'PublishedWriting')).toMatchObject({
      Action: ['s3:PutObject'],
      Resource: ['arn:aws:s3:::notebooks/published/*']
    });
  });

  it('grants nothing of published copies when published_prefix is empty', () => {
    const policy = sessionPolicy({ ...BASE, publishedPrefix: '', allowPublish: true });
    expect(policy.Statement.map(entry => entry.Sid)).toEqual([
      'UserObjects',
      'UserListing',
      'BucketCheck'
    ]);
  });

  it("allows the gateway's bucket check", () => {
    expect(statement(sessionPolicy(BASE), 'BucketCheck')).toEqual({
      Sid: 'BucketCheck',
      Effect: 'Allow',
      Action: ['s3:GetBucketVersioning', 's3:GetBucketLocation'],
      Resource: ['arn:aws:s3:::notebooks']
    });
  });

  it('is an IAM policy document that survives JSON', () => {
    const policy = sessionPolicy(BASE);
    const parsed = JSON.parse(JSON.stringify(policy)) as sessionPolicy.IPolicy;
    expect(parsed).toEqual(policy);
    expect(parsed.Version).toBe('2012-10-17');
    for (const entry of parsed.Statement) {
      expect(entry.Effect).toBe('Allow');
      expect(entry.Action.every(action => action.startsWith('s3:'))).toBe(true);
      expect(entry.Resource.every(arn => arn.startsWith('arn:aws:s3:::notebooks'))).toBe(true);
    }
    // AWS packs a session policy into at most 2,048 characters.
    expect(JSON.stringify(policy).length).toBeLessThan(2048);
  });

  it('trims the slashes of the settings as object keys do', () => {
    const prefixes = userPrefixes({
      ...BASE,
      workspaceTemplate: '/users/{username}/work/',
      namedPrefix: '/labels/',
      publishedPrefix: 'shared/'
    });
    expect(prefixes).toEqual({
      workspace: 'users/alice/work',
      named: 'labels/users/alice/work',
      published: 'shared'
    });
  });

  it('keeps two users apart', () => {
    const alice = resources(sessionPolicy(BASE));
    const bob = resources(sessionPolicy({ ...BASE, username: 'bob' }));
    expect(alice.some(arn => arn.includes('bob'))).toBe(false);
    expect(bob.some(arn => arn.includes('alice'))).toBe(false);
  });

  it('accepts names with dots, at signs and letters of any script', () => {
    for (const username of ['a.b@example.org', 'jörg', 'user_1-x+y=z,w~']) {
      expect(userPrefixes({ ...BASE, username }).workspace).toBe(`workspace/${username}`);
    }
  });

  it.each([
    ['a wildcard', 'al*ce'],
    ['a single-character wildcard', 'al?ce'],
    ['a policy variable', '${aws:username}'],
    ['a brace', 'alice}'],
    ['a bracket', 'alice[1]'],
    ['another prefix', 'alice/../bob'],
    ['a slash', 'alice/x'],
    ['dots alone', '..'],
    ['a space', 'alice smith'],
    ['a quote', 'alice"'],
    ['a backslash', 'alice\\'],
    ['a control character', 'alice\n'],
    ['nothing', ''],
    ['too many characters', 'a'.repeat(129)]
  ])('refuses a user name with %s', (_what, username) => {
    let error: unknown;
    try {
      sessionPolicy({ ...BASE, username });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(PolicyError);
    expect((error as PolicyError).kind).toBe('user name refused');
  });
});

describe('checkPolicySettings', () => {
  it('accepts the documented settings', () => {
    expect(() => checkPolicySettings(BASE)).not.toThrow();
  });

  it.each([
    [
      'a workspace prefix without {username}',
      { workspaceTemplate: 'workspace' },
      'workspace_prefix'
    ],
    ['no bucket', { bucket: '' }, 'object_bucket'],
    ['an empty named prefix', { namedPrefix: '/' }, 'named_prefix'],
    [
      'a wildcard in the workspace prefix',
      { workspaceTemplate: 'w*/{username}' },
      'workspace_prefix'
    ],
    [
      'a variable in the published prefix',
      { publishedPrefix: 'p/${aws:userid}' },
      'published_prefix'
    ],
    ['a wildcard in the named prefix', { namedPrefix: 'named?' }, 'named_prefix']
  ])('refuses %s', (_what, change, setting) => {
    expect(() => checkPolicySettings({ ...BASE, ...change })).toThrow(
      expect.objectContaining({ kind: 'settings', message: expect.stringContaining(setting) })
    );
  });
});

describe('roleSessionName', () => {
  it('names the user within what STS accepts', () => {
    expect(roleSessionName('alice')).toBe('jupyter-store@alice');
    expect(roleSessionName('jörg')).toBe('jupyter-store@j_rg');
    const long = roleSessionName('a'.repeat(100));
    expect(long).toHaveLength(64);
    expect(long).toMatch(/^[\w+=,.@-]{2,64}$/);
  });
});
