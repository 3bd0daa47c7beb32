import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { isStoreCommand, parseObjectUri, toServerPath } from '../src/commands/storeCommands';
import { UsageError } from '../src/commands/commandLine';
import type { StoreClient } from '../src/storeClient';
import {
  gatewayRecord,
  jupyterRecord,
  runAgainstFake,
  temporaryDir,
  writeRecord,
  type FakeRoutes,
  type IFakeAnswer
} from './fakes';

/** Run a command against a fake server, from the directory `sub` of its root. */
const run = (
  name: string,
  argv: string[],
  routes: FakeRoutes = {},
  client: StoreClient.IOptions = {}
) => runAgainstFake(name, argv, routes, { cwd: '/srv/root/sub', client });

/** Two archived versions of a notebook, the newer one its latest. */
const V2 = {
  object_version_id: 'v2',
  last_modified: '2024-05-02T00:00:00.000Z',
  size: 9,
  is_latest: true
};
const V1 = {
  object_version_id: 'v1',
  last_modified: '2024-05-01T00:00:00.000Z',
  size: 8,
  is_latest: false
};

/**
 * `GET api/store/versions/<path>` in bucket `b`: these archived versions and no published one;
 * `deleted` for a first page, `next` when a page follows.
 */
function versionsAnswer(
  path: string,
  versions: Record<string, unknown>[],
  page: { deleted?: null; next?: string } = {}
): IFakeAnswer {
  const { next, ...first } = page;
  return {
    status: 200,
    body: {
      path,
      object_bucket: 'b',
      workspace: { object_key: `workspace/${path}`, versions, ...first },
      published: { object_key: `published/${path}`, versions: [] },
      ...(next === undefined ? {} : { next })
    }
  };
}

const CLONED = {
  name: 'a-1.ipynb',
  path: 'a-1.ipynb',
  type: 'notebook',
  writable: true,
  created: '2024-05-01T10:00:00Z',
  last_modified: '2024-05-01T10:00:00Z',
  mimetype: null,
  content: null,
  format: null,
  size: 72,
  hash: null,
  hash_algorithm: null,
  object_bucket: 'b',
  object_key: 'published/a.ipynb',
  object_version_id: 'v2',
  object_path: 's3://b/published/a.ipynb'
};

describe('#parseObjectUri()', () => {
  test.each([
    ['s3://b/k.ipynb', { bucket: 'b', key: 'k.ipynb' }],
    ['s3://b/dir/sub/k.ipynb', { bucket: 'b', key: 'dir/sub/k.ipynb' }],
    ['s3://b/a b%20c.ipynb', { bucket: 'b', key: 'a b%20c.ipynb' }],
    ['s3://b/k.ipynb?versionId=3%2Bx', { bucket: 'b', key: 'k.ipynb', versionId: '3+x' }]
  ])('%s', (uri, expected) => {
    expect(parseObjectUri(uri)).toEqual(expected);
  });

  test.each([
    ['http://b/k'],
    ['s3://b'],
    ['s3://b/'],
    ['s3:///k'],
    ['s3://b/k?version=1'],
    ['s3://b/k?versionId='],
    ['s3://b/k?versionId=1&versionId=2']
  ])('refuses %s', uri => {
    expect(() => parseObjectUri(uri)).toThrow(UsageError);
  });
});

describe('#toServerPath()', () => {
  test('a plain path is a server path already', () => {
    expect(toServerPath('a/b.ipynb', '/srv/root/sub', '/srv/root')).toBe('a/b.ipynb');
  });

  test('./, ../ and absolute paths are file paths below the root', () => {
    expect(toServerPath('./b.ipynb', '/srv/root/sub', '/srv/root')).toBe('sub/b.ipynb');
    expect(toServerPath('../b.ipynb', '/srv/root/sub', '/srv/root')).toBe('b.ipynb');
    expect(toServerPath('/srv/root/x/y.ipynb', '/tmp', '/srv/root')).toBe('x/y.ipynb');
  });

  test('a file path outside the root is a usage error', () => {
    expect(() => toServerPath('../../etc/x.ipynb', '/srv/root/sub', '/srv/root')).toThrow(
      /not inside the server's root directory/
    );
    expect(() => toServerPath('./x.ipynb', '/srv/root', '')).toThrow(/root directory is unknown/);
  });
});

describe('#runStoreCommand()', () => {
  test('knows its commands', () => {
    expect(
      ['clone', 'fs-clone', 'publish', 'versions', 'save-version', 'servers'].every(isStoreCommand)
    ).toBe(true);
    expect(isStoreCommand('lab')).toBe(false);
  });

  describe('bad usage: one line on stderr, exit status 2, no request', () => {
    test.each([
      ['clone', []],
      ['clone', ['not-a-uri']],
      ['clone', ['s3://b/k', 't', 'extra']],
      ['fs-clone', []],
      ['publish', ['--bogus']],
      ['versions', ['a', 'b']],
      ['servers', ['x']],
      ['publish', ['--token', 't']],
      ['publish', ['--url', 'ftp://x']],
      ['publish', ['--jsn']],
      ['versions', ['--limit']],
      ['diff', []],
      ['save-version', ['a.ipynb']],
      ['save-version', ['a.ipynb', 'name', 'extra']],
      ['save-version', ['a.ipynb', 'name', '--note']],
      ['bogus', []]
    ])('%s %j', async (name, argv) => {
      const result = await run(name, argv);
      expect(result.status).toBe(2);
      expect(result.stderr).toMatch(new RegExp(`^jupyter-store ${name}: .+ \\(see --help\\)\\n$`));
      expect(result.stdout).toBe('');
      expect(result.sent).toEqual([]);
    });
  });

  test('--help prints the usage and the options, exit status 0', async () => {
    const result = await run('clone', ['--help']);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^Usage: jupyter store clone s3:\/\/BUCKET\/KEY/);
    expect(result.stdout).toMatch(/--json/);
  });

  test.each([
    [
      'clone',
      's3://BUCKET/KEY[?versionId=ID] [TARGET]',
      ['--url <URL>', '--token <TOKEN>', '--json']
    ],
    ['fs-clone', 'RELPATH [TARGET]', ['--url <URL>', '--token <TOKEN>', '--json']],
    ['publish', '[PATH]', ['--url <URL>', '--token <TOKEN>', '--json']],
    [
      'versions',
      '[PATH]',
      ['--limit <N>', '--next <TOKEN>', '--url <URL>', '--token <TOKEN>', '--json']
    ],
    ['diff', 'PATH [BASE] [REMOTE]', ['--url <URL>', '--token <TOKEN>', '--json']],
    [
      'save-version',
      'PATH NAME',
      ['--note <TEXT>', '--version <ID>', '--url <URL>', '--token <TOKEN>', '--json']
    ],
    ['servers', '', ['--json']]
  ])('%s --help documents its arguments and every option', async (name, usage, options) => {
    const result = await run(name, ['-h']);
    expect(result).toMatchObject({ status: 0, stderr: '', sent: [] });
    const words = usage ? `${usage} ` : '';
    expect(result.stdout.startsWith(`Usage: jupyter store ${name} ${words}[options]\n`)).toBe(true);
    for (const option of [...options, '-h, --help']) {
      expect(result.stdout).toMatch(new RegExp(`\\n  ${option.replace(/[[\]]/g, '\\$&')}\\s+\\S`));
    }
  });

  test('clone prints what was cloned where', async () => {
    const result = await run('clone', ['s3://b/published/a.ipynb?versionId=v2'], {
      'POST /api/store/clone': { status: 200, body: CLONED }
    });
    expect(result).toMatchObject({ status: 0, stderr: '' });
    expect(result.stdout).toBe('Cloned s3://b/published/a.ipynb (version v2) to a-1.ipynb\n');
    expect(result.sent).toHaveLength(1);
  });

  test('clone --json prints the server’s model', async () => {
    const result = await run('clone', ['s3://b/published/a.ipynb', './here.ipynb', '--json'], {
      'POST /api/store/clone': { status: 200, body: CLONED }
    });
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(CLONED);
  });

  test('a server error: its message on stderr, exit status 1; with --json also on stdout', async () => {
    const routes = {
      'POST /api/store/clone': {
        status: 404,
        body: { message: 's3://b/missing does not exist (NoSuchKey)', reason: 'NoSuchKey' }
      }
    };
    const plain = await run('clone', ['s3://b/missing'], routes);
    expect(plain.status).toBe(1);
    expect(plain.stdout).toBe('');
    expect(plain.stderr).toBe(
      'jupyter-store clone: s3://b/missing does not exist (NoSuchKey) (HTTP 404)\n'
    );
    const json = await run('clone', ['s3://b/missing', '--json'], routes);
    expect(json.status).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({
      error: {
        type: 'StoreError',
        status: 404,
        reason: 'NoSuchKey',
        message: 's3://b/missing does not exist (NoSuchKey)'
      }
    });
  });

  test('publish of a file path resolves it against the working directory', async () => {
    const result = await run('publish', ['./nb.ipynb'], {
      'GET /api/contents/sub/nb.ipynb?type=notebook&content=1': {
        status: 200,
        body: {
          ...CLONED,
          name: 'nb.ipynb',
          path: 'sub/nb.ipynb',
          content: { cells: [], metadata: {}, nbformat: 4, nbformat_minor: 5 },
          format: 'json'
        }
      },
      'PUT /api/store/publish/sub/nb.ipynb': {
        status: 200,
        body: {
          object_bucket: 'b',
          object_key: 'published/sub/nb.ipynb',
          object_version_id: 'v7',
          object_path: 's3://b/published/sub/nb.ipynb'
        }
      }
    });
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe(
      'Published sub/nb.ipynb to s3://b/published/sub/nb.ipynb (version v7).\n' +
        'This is the copy saved at 2024-05-01T10:00:00Z: changes not saved since are not included.\n'
    );
  });

  test('publish without a path outside a kernel asks for one, exit status 1', async () => {
    const result = await run('publish', []);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/does not run inside a Jupyter kernel.*give a path/);
  });

  test('versions prints both listings, newest first', async () => {
    const result = await run('versions', ['a.ipynb'], {
      'GET /api/store/versions/a.ipynb': versionsAnswer('a.ipynb', [V2, V1])
    });
    expect(result.stdout).toBe(
      [
        'Versions of a.ipynb in bucket b, newest first:',
        '  archived (workspace/a.ipynb): 2 versions',
        '    v2  2024-05-02T00:00:00.000Z  9 bytes  latest',
        '    v1  2024-05-01T00:00:00.000Z  8 bytes',
        '  published (published/a.ipynb): none',
        ''
      ].join('\n')
    );
  });

  test('save-version names a version and prints the name, the note and the copy', async () => {
    const named = {
      path: 'a b.ipynb',
      object_bucket: 'b',
      object_key: 'workspace/a b.ipynb',
      object_version_id: 'v1',
      label: {
        name: 'before refactor',
        note: 'sent to reviewers',
        named_at: '2024-05-03T00:00:00.000Z',
        object_key: 'named/workspace/a b.ipynb/v1'
      }
    };
    const result = await run(
      'save-version',
      ['a b.ipynb', 'before refactor', '--note', 'sent to reviewers', '--version', 'v1'],
      { 'POST /api/store/named/a%20b.ipynb': { status: 200, body: named } }
    );
    expect(result).toMatchObject({ status: 0, stderr: '' });
    expect(result.sent).toMatchObject([
      { body: { name: 'before refactor', note: 'sent to reviewers', object_version_id: 'v1' } }
    ]);
    expect(result.stdout).toBe(
      [
        'Named version v1 of a b.ipynb "before refactor".',
        'Note: sent to reviewers',
        'The named copy is kept at s3://b/named/workspace/a b.ipynb/v1.',
        ''
      ].join('\n')
    );
    // Without --version and --note, neither is sent: the server names the newest version.
    const newest = await run('save-version', ['a b.ipynb', 'x'], {
      'POST /api/store/named/a%20b.ipynb': { status: 200, body: named }
    });
    expect(newest.sent).toMatchObject([{ body: { name: 'x' } }]);
    expect(Object.keys((newest.sent[0] as { body: object }).body)).toEqual(['name']);
  });

  test('deleted lists the deleted notebooks below a prefix, with how to restore them', async () => {
    const listing = {
      deleted: [
        {
          path: 'team/a.ipynb',
          deleted_at: '2024-05-03T10:00:00.000Z',
          delete_marker_id: 'm2',
          last_version: {
            object_version_id: 'v1',
            last_modified: '2024-05-02T09:00:00.000Z',
            size: 812
          }
        }
      ],
      left_out: 3
    };
    const result = await run('deleted', ['team', '--limit', '1'], {
      'GET /api/store/deleted?prefix=team&limit=1': { status: 200, body: listing }
    });
    expect(result).toMatchObject({ status: 0, stderr: '' });
    expect(result.stdout).toBe(
      [
        'Deleted notebooks below team, newest deletion first:',
        '  team/a.ipynb  deleted 2024-05-03T10:00:00.000Z',
        '    last version v1  2024-05-02T09:00:00.000Z  812 bytes',
        '3 more not listed: raise --limit to see them.',
        'Restore one with: jupyter store restore PATH [--version ID]',
        ''
      ].join('\n')
    );
    const none = await run('deleted', [], {
      'GET /api/store/deleted': { status: 200, body: { deleted: [], left_out: 0 } }
    });
    expect(none.stdout).toBe('No deleted notebooks.\n');
    const bad = await run('deleted', ['--limit', '0']);
    expect(bad).toMatchObject({ status: 2, sent: [] });
    expect(bad.stderr).toBe(
      "jupyter-store deleted: --limit: '0' is not a whole number from 1 to 1000 (see --help)\n"
    );
  });

  test('restore sends the path and version and says where the notebook landed', async () => {
    const restored = {
      ...CLONED,
      name: 'a-1.ipynb',
      path: 'team/a-1.ipynb',
      restored_from: {
        path: 'team/a.ipynb',
        object_key: 'workspace/team/a.ipynb',
        object_version_id: 'v1'
      }
    };
    const result = await run('restore', ['team/a.ipynb', '--version', 'v1'], {
      'POST /api/store/restore': { status: 200, body: restored }
    });
    expect(result).toMatchObject({ status: 0, stderr: '' });
    expect(result.sent).toMatchObject([
      { body: { path: 'team/a.ipynb', object_version_id: 'v1' } }
    ]);
    expect(result.stdout).toBe(
      'Restored team/a.ipynb (version v1) to team/a-1.ipynb\n' +
        '(team/a.ipynb exists: nothing was overwritten)\n'
    );
    const refused = await run('restore', ['gone.ipynb'], {
      'POST /api/store/restore': {
        status: 404,
        body: { message: "'gone.ipynb' has no archived version to restore", reason: 'no versions' }
      }
    });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toBe(
      "jupyter-store restore: 'gone.ipynb' has no archived version to restore (HTTP 404, no " +
        'versions)\n'
    );
  });

  test('save-version reports the server refusing the name, exit status 1', async () => {
    const result = await run('save-version', ['a.ipynb', 'x'], {
      'POST /api/store/named/a.ipynb': {
        status: 404,
        body: {
          message: 'a.ipynb has no archived version to name: save it first',
          reason: 'no versions'
        }
      }
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toBe(
      'jupyter-store save-version: a.ipynb has no archived version to name: save it first ' +
        '(HTTP 404, no versions)\n'
    );
  });

  test('versions prints the name and note of a named version', async () => {
    const label = {
      name: 'draft “1”',
      note: 'line one\nline two',
      named_at: '2024-05-03T00:00:00.000Z',
      object_key: 'named/workspace/a.ipynb/v1'
    };
    const result = await run('versions', ['a.ipynb'], {
      'GET /api/store/versions/a.ipynb': versionsAnswer('a.ipynb', [
        { ...V1, is_latest: true, label }
      ])
    });
    expect(result.stdout).toBe(
      [
        'Versions of a.ipynb in bucket b, newest first:',
        '  archived (workspace/a.ipynb): 1 version',
        '    v1  2024-05-01T00:00:00.000Z  8 bytes  latest  "draft “1”"',
        '      line one',
        '      line two',
        '  published (published/a.ipynb): none',
        ''
      ].join('\n')
    );
  });

  test('versions --limit lists one page and prints the command for the next', async () => {
    const result = await run('versions', ['my nb.ipynb', '--limit', '1'], {
      'GET /api/store/versions/my%20nb.ipynb?limit=1': versionsAnswer('my nb.ipynb', [V2], {
        deleted: null,
        next: 'abc.def'
      })
    });
    expect(result.status).toBe(0);
    expect(result.stdout).toBe(
      [
        'Versions of my nb.ipynb in bucket b, newest first:',
        '  archived (workspace/my nb.ipynb): 1 version',
        '    v2  2024-05-02T00:00:00.000Z  9 bytes  latest',
        '  published (published/my nb.ipynb): none',
        'More versions follow; the next page:',
        "  jupyter store versions 'my nb.ipynb' --limit 1 --next abc.def",
        ''
      ].join('\n')
    );
  });

  test.each([['0'], ['1001'], ['-1'], ['1.5'], ['ten'], ['']])(
    'versions --limit %j is a usage error (exit status 2)',
    async limit => {
      const result = await run('versions', ['a.ipynb', '--limit', limit]);
      expect(result.status).toBe(2);
      expect(result.stderr).toMatch(/--limit/);
      expect(result.sent).toEqual([]);
    }
  );

  describe('servers', () => {
    let runtimeDir: string;

    beforeEach(() => {
      runtimeDir = temporaryDir('runtime');
    });

    afterEach(() => {
      rmSync(runtimeDir, { recursive: true, force: true });
    });

    test('lists the live servers, a gateway instead of its upstream', async () => {
      writeRecord(runtimeDir, gatewayRecord({ pid: process.pid, upstream_pid: process.ppid }));
      writeRecord(runtimeDir, jupyterRecord({ pid: process.ppid }));
      writeRecord(runtimeDir, jupyterRecord({ pid: 2 ** 22 + 77 }));
      const result = await run('servers', [], {}, { runtimeDir });
      expect(result.stdout).toBe(
        `http://127.0.0.1:8888/ :: /srv/root  (jupyter-store 0.1.0, pid ${process.pid})\n`
      );
      const json = await run('servers', ['--json'], {}, { runtimeDir });
      expect((JSON.parse(json.stdout) as { pid: number }[]).map(r => r.pid)).toEqual([process.pid]);
    });

    test('none running is not an error', async () => {
      mkdirSync(join(runtimeDir, 'empty'));
      const result = await run('servers', [], {}, { runtimeDir: join(runtimeDir, 'empty') });
      expect(result.status).toBe(0);
      expect(result.stdout).toMatch(/^No Jupyter server is running \(no live record in /);
    });
  });
});
