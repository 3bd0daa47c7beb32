import { StoreConnection } from '../src/connection';
import { CurrentNotebookError } from '../src/errors';
import { findCurrentSession, listSessions } from '../src/session';
import { fakeFetch, fakeProcessTable, sessionModel } from './fakes';

const KERNEL = '3f1c0a52-8d3e-4c6b-9a57-2b0f6f0d9e11';
const SERVER = { url: 'http://127.0.0.1:8888/', root_dir: '/srv/root' };

/** A shell escape in a kernel: node ← sh ← the kernel. */
const inKernel = fakeProcessTable([
  { pid: 50, ppid: 40, argv: ['node', 'main.js'] },
  { pid: 40, ppid: 30, argv: ['/bin/sh', '-c', 'jupyter store publish'] },
  { pid: 30, ppid: 1, argv: ['python', '-f', `/rt/kernel-${KERNEL}.json`] }
]);
const outsideKernels = fakeProcessTable([{ pid: 50, ppid: 1, argv: ['bash'] }]);
const exists = (): boolean => true;

function connectionWith(sessions: unknown[]): StoreConnection {
  const { fetch } = fakeFetch({ 'GET /api/sessions': { status: 200, body: sessions } });
  return new StoreConnection({ url: SERVER.url, token: 't', fetch });
}

describe('#listSessions()', () => {
  test('types the specification’s session fields and keeps the raw model', async () => {
    const model = { ...sessionModel('a/nb.ipynb', KERNEL), extra: 1 };
    const [session] = await listSessions(connectionWith([model]));
    expect(session).toEqual({
      id: 'session-a/nb.ipynb',
      path: 'a/nb.ipynb',
      name: 'nb.ipynb',
      type: 'notebook',
      kernel: {
        id: KERNEL,
        name: 'python3',
        last_activity: '2024-05-01T10:00:00.000000Z',
        execution_state: 'idle',
        connections: 1
      },
      notebook: { path: 'a/nb.ipynb', name: 'nb.ipynb' },
      model
    });
  });

  test('a console session has no notebook field', async () => {
    const [session] = await listSessions(connectionWith([sessionModel('c-1', KERNEL, 'console')]));
    expect(session.notebook).toBeNull();
  });
});

describe('#findCurrentSession()', () => {
  const options = { startPid: 50, fileExists: exists };

  test('the notebook whose session uses the kernel of the process tree', async () => {
    const connection = connectionWith([
      sessionModel('other.ipynb', 'another-kernel'),
      sessionModel('a/nb.ipynb', KERNEL)
    ]);
    const session = await findCurrentSession(connection, SERVER, {
      ...options,
      processTable: inKernel,
      env: { JPY_SESSION_NAME: '/srv/root/old-name.ipynb' }
    });
    expect(session.path).toBe('a/nb.ipynb');
  });

  test('a console on the same kernel does not count as a second notebook', async () => {
    const connection = connectionWith([
      sessionModel('console-1-abc', KERNEL, 'console'),
      sessionModel('a/nb.ipynb', KERNEL)
    ]);
    const session = await findCurrentSession(connection, SERVER, {
      ...options,
      processTable: inKernel,
      env: {}
    });
    expect(session.path).toBe('a/nb.ipynb');
  });

  test('several notebooks on one kernel: an error that names them and asks for a path', async () => {
    const connection = connectionWith([
      sessionModel('b.ipynb', KERNEL),
      sessionModel('a.ipynb', KERNEL)
    ]);
    const error = await findCurrentSession(connection, SERVER, {
      ...options,
      processTable: inKernel,
      env: { JPY_SESSION_NAME: '/srv/root/a.ipynb' }
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CurrentNotebookError);
    expect((error as CurrentNotebookError).paths).toEqual(['a.ipynb', 'b.ipynb']);
    expect((error as Error).message).toBe(
      '2 notebooks share this kernel (a.ipynb, b.ipynb), so which one is meant cannot be ' +
        'told: give its path'
    );
  });

  test('$JPY_SESSION_NAME (a file path below the root) when no kernel is in the tree', async () => {
    const connection = connectionWith([sessionModel('a/nb.ipynb', KERNEL)]);
    const session = await findCurrentSession(connection, SERVER, {
      ...options,
      processTable: outsideKernels,
      env: { JPY_SESSION_NAME: '/srv/root/a/nb.ipynb' }
    });
    expect(session.path).toBe('a/nb.ipynb');
  });

  test('$JPY_SESSION_NAME as a server path', async () => {
    const connection = connectionWith([sessionModel('a/nb.ipynb', KERNEL)]);
    const session = await findCurrentSession(connection, SERVER, {
      ...options,
      processTable: outsideKernels,
      env: { JPY_SESSION_NAME: 'a/nb.ipynb' }
    });
    expect(session.path).toBe('a/nb.ipynb');
  });

  test('$JPY_SESSION_NAME of a renamed notebook: an error asking for a path', async () => {
    const connection = connectionWith([sessionModel('a/renamed.ipynb', 'another-kernel')]);
    await expect(
      findCurrentSession(connection, SERVER, {
        ...options,
        processTable: outsideKernels,
        env: { JPY_SESSION_NAME: '/srv/root/a/nb.ipynb' }
      })
    ).rejects.toThrow(/started for a\/nb\.ipynb \(JPY_SESSION_NAME\).*give a path/);
  });

  test('a kernel without a notebook: an error asking for a path', async () => {
    const connection = connectionWith([sessionModel('console-1', KERNEL, 'console')]);
    await expect(
      findCurrentSession(connection, SERVER, { ...options, processTable: inKernel, env: {} })
    ).rejects.toThrow(/No notebook on http:\/\/127\.0\.0\.1:8888\/ uses this kernel/);
  });

  test('outside any kernel: an error, before any request', async () => {
    const { fetch, sent } = fakeFetch({});
    const connection = new StoreConnection({ url: SERVER.url, token: 't', fetch });
    await expect(
      findCurrentSession(connection, SERVER, { ...options, processTable: outsideKernels, env: {} })
    ).rejects.toThrow(/does not run inside a Jupyter kernel.*give a path/);
    expect(sent).toEqual([]);
  });
});
