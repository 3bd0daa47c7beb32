import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  findServer,
  isProcessAlive,
  isUpstreamOf,
  jupyterRuntimeDir,
  listRunningServers,
  readLiveServerRecords
} from '../src/discovery';
import { ServerNotFoundError } from '../src/errors';
import { parseLiveServerRecord, type ILiveServerRecord } from '../src/records';
import { fakeProcessTable, gatewayRecord, jupyterRecord, temporaryDir, writeRecord } from './fakes';

const LIVE = new Set([1000, 1001, 2000, 3000]);
const isAlive = (pid: number): boolean => LIVE.has(pid);
const noProcesses = fakeProcessTable([]);

let runtimeDir: string;

beforeEach(() => {
  runtimeDir = temporaryDir('runtime');
});

afterEach(() => {
  rmSync(runtimeDir, { recursive: true, force: true });
});

function record(value: Record<string, unknown>): ILiveServerRecord {
  const parsed = parseLiveServerRecord(value);
  if (!parsed) throw new Error('not a record');
  return parsed;
}

describe('#jupyterRuntimeDir()', () => {
  test('$JUPYTER_RUNTIME_DIR wins', () => {
    expect(jupyterRuntimeDir({ JUPYTER_RUNTIME_DIR: '/rt', JUPYTER_DATA_DIR: '/d' }, 'linux')).toBe(
      '/rt'
    );
  });

  test('else runtime/ in $JUPYTER_DATA_DIR', () => {
    expect(jupyterRuntimeDir({ JUPYTER_DATA_DIR: '/data' }, 'linux')).toBe('/data/runtime');
  });

  test("else runtime/ in the platform's Jupyter data directory", () => {
    expect(jupyterRuntimeDir({ HOME: '/home/u' }, 'linux')).toBe(
      '/home/u/.local/share/jupyter/runtime'
    );
    expect(jupyterRuntimeDir({ HOME: '/home/u', XDG_DATA_HOME: '/xdg' }, 'linux')).toBe(
      '/xdg/jupyter/runtime'
    );
    expect(jupyterRuntimeDir({ HOME: '/Users/u' }, 'darwin')).toBe(
      '/Users/u/Library/Jupyter/runtime'
    );
    expect(jupyterRuntimeDir({ HOME: '/Users/u', JUPYTER_PLATFORM_DIRS: '1' }, 'darwin')).toBe(
      '/Users/u/Library/Application Support/Jupyter/runtime'
    );
  });
});

describe('#parseLiveServerRecord()', () => {
  test('keeps the specification’s fields in its order, then the extras', () => {
    expect(Object.keys(record(gatewayRecord()))).toEqual([
      'base_url',
      'hostname',
      'notebook_dir',
      'password',
      'pid',
      'port',
      'secure',
      'token',
      'url',
      'root_dir',
      'sock',
      'version',
      'upstream_url',
      'upstream_pid'
    ]);
  });

  test('tolerates fields it does not know', () => {
    expect(record({ ...gatewayRecord(), future_field: { a: 1 } }).url).toBe(
      'http://127.0.0.1:8888/'
    );
  });

  test('reads Jupyter Server 2 records, which have root_dir instead of notebook_dir', () => {
    const parsed = record(jupyterRecord());
    expect(parsed.notebook_dir).toBe('/home/user');
    expect(parsed.upstream_url).toBeNull();
    expect(parsed.upstream_pid).toBeNull();
  });

  test('reads classic records, which have notebook_dir and nothing else', () => {
    const classic = { ...jupyterRecord(), notebook_dir: '/nb' } as Record<string, unknown>;
    delete classic.root_dir;
    delete classic.sock;
    delete classic.version;
    const parsed = record(classic);
    expect(parsed.root_dir).toBe('/nb');
    expect(parsed.sock).toBe('');
    expect(parsed.version).toBeNull();
  });

  test.each([
    ['no pid', { pid: undefined }],
    ['a string port', { port: '8888' }],
    ['no url', { url: undefined }],
    ['no directory', { root_dir: undefined, notebook_dir: undefined }]
  ])('refuses a record with %s', (_what, overrides) => {
    expect(parseLiveServerRecord({ ...gatewayRecord(), ...overrides })).toBeUndefined();
  });
});

describe('#isProcessAlive()', () => {
  test('this process is alive, an unused pid is not', () => {
    expect(isProcessAlive(process.pid)).toBe(true);
    expect(isProcessAlive(2 ** 22 + 12345)).toBe(false);
  });
});

describe('#readLiveServerRecords()', () => {
  test('reads jpserver- and nbserver- records of live processes only', () => {
    writeRecord(runtimeDir, gatewayRecord());
    writeRecord(runtimeDir, jupyterRecord({ pid: 3000 }), 'nbserver-3000.json');
    writeRecord(runtimeDir, jupyterRecord({ pid: 4000 }));
    const pids = readLiveServerRecords({ runtimeDir, isAlive }).map(r => r.pid);
    expect(pids).toEqual([1000, 3000]);
  });

  test('skips half-written records and other files', () => {
    writeRecord(runtimeDir, gatewayRecord());
    writeFileSync(join(runtimeDir, 'jpserver-2000.json'), '{"base_url": "/", "hostn');
    writeFileSync(join(runtimeDir, 'kernel-abc.json'), JSON.stringify(jupyterRecord()));
    mkdirSync(join(runtimeDir, 'jpserver-3000.json'));
    expect(readLiveServerRecords({ runtimeDir, isAlive }).map(r => r.pid)).toEqual([1000]);
  });

  test('a missing runtime directory means no servers', () => {
    expect(readLiveServerRecords({ runtimeDir: join(runtimeDir, 'missing'), isAlive })).toEqual([]);
  });
});

describe('#isUpstreamOf()', () => {
  const gateway = record(gatewayRecord({ upstream_pid: null, upstream_url: null }));

  test('by the pid the gateway started', () => {
    const upstream = record(jupyterRecord({ pid: 1001 }));
    expect(isUpstreamOf(upstream, record(gatewayRecord()))).toBe(true);
    expect(isUpstreamOf(upstream, gateway)).toBe(false);
  });

  test('by the unix socket the gateway forwards to', () => {
    const upstream = record(jupyterRecord({ sock: '/tmp/private/jupyter.sock', url: 'x' }));
    const forwarding = record(
      gatewayRecord({ upstream_pid: null, upstream_url: 'unix:/tmp/private/jupyter.sock' })
    );
    expect(isUpstreamOf(upstream, forwarding)).toBe(true);
  });

  test('by the loopback address the gateway forwards to, whatever its name', () => {
    const upstream = record(jupyterRecord({ url: 'http://localhost:8890/' }));
    const forwarding = (url: string): ILiveServerRecord =>
      record(gatewayRecord({ upstream_pid: null, upstream_url: url }));
    expect(isUpstreamOf(upstream, forwarding('http://127.0.0.1:8890'))).toBe(true);
    expect(isUpstreamOf(upstream, forwarding('http://[::1]:8890'))).toBe(true);
    expect(isUpstreamOf(upstream, forwarding('http://127.0.0.1:8891'))).toBe(false);
  });

  test('a server is not its own upstream', () => {
    const both = record(gatewayRecord({ upstream_pid: 1000 }));
    expect(isUpstreamOf(both, both)).toBe(false);
  });
});

describe('#listRunningServers()', () => {
  test('prefers a gateway’s record to the record of the Jupyter Server behind it', () => {
    writeRecord(runtimeDir, gatewayRecord());
    writeRecord(runtimeDir, jupyterRecord({ pid: 1001, sock: '/tmp/private/jupyter.sock' }));
    writeRecord(runtimeDir, jupyterRecord());
    expect(listRunningServers({ runtimeDir, isAlive }).map(r => r.pid)).toEqual([1000, 2000]);
  });

  test('an upstream whose gateway is dead is a server of its own again', () => {
    writeRecord(runtimeDir, gatewayRecord({ pid: 999 }));
    writeRecord(runtimeDir, jupyterRecord({ pid: 1001 }));
    expect(listRunningServers({ runtimeDir, isAlive }).map(r => r.pid)).toEqual([1001]);
  });
});

describe('#findServer()', () => {
  beforeEach(() => {
    writeRecord(runtimeDir, gatewayRecord());
    writeRecord(
      runtimeDir,
      jupyterRecord({
        pid: 1001,
        port: 0,
        sock: '/tmp/private/jupyter.sock',
        url: 'http+unix://%2Ftmp%2Fprivate%2Fjupyter.sock/'
      })
    );
    writeRecord(runtimeDir, jupyterRecord());
  });

  const options = () => ({ runtimeDir, isAlive, env: {}, processTable: noProcesses, startPid: 50 });

  test('the server named by URL, trailing slash or not', () => {
    const found = findServer({ ...options(), url: 'http://127.0.0.1:8890' });
    expect(found.pid).toBe(2000);
  });

  test('a URL naming a hidden upstream leads to its gateway', () => {
    writeRecord(
      runtimeDir,
      jupyterRecord({ pid: 3000, port: 9999, url: 'http://127.0.0.1:9999/' })
    );
    writeRecord(
      runtimeDir,
      gatewayRecord({ pid: 1000, upstream_pid: null, upstream_url: 'http://127.0.0.1:9999' })
    );
    const found = findServer({ ...options(), url: 'http://localhost:9999/' });
    expect(found.pid).toBe(1000);
  });

  test('a URL that no record has is an error listing the servers', () => {
    let caught: unknown;
    try {
      findServer({ ...options(), url: 'http://127.0.0.1:1/' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ServerNotFoundError);
    expect((caught as ServerNotFoundError).message).toMatch(/No running server has the URL/);
    expect((caught as ServerNotFoundError).candidates).toEqual([
      'http://127.0.0.1:8888/',
      'http://localhost:8890/'
    ]);
  });

  test('the gateway whose hidden Jupyter Server started this kernel (process tree)', () => {
    const processTable = fakeProcessTable([
      { pid: 50, ppid: 40, argv: ['node', 'main.js', 'publish'] },
      { pid: 40, ppid: 30, argv: ['/bin/sh', '-c', 'jupyter store publish'] },
      { pid: 30, ppid: 1001, argv: ['python', '-m', 'ipykernel_launcher', '-f', '/x.json'] },
      { pid: 1001, ppid: 1000, argv: ['python', 'jupyter-lab'] }
    ]);
    expect(findServer({ ...options(), processTable }).pid).toBe(1000);
  });

  test('the plain Jupyter Server that runs this terminal (process tree)', () => {
    const processTable = fakeProcessTable([
      { pid: 50, ppid: 40, argv: ['node'] },
      { pid: 40, ppid: 2000, argv: ['bash'] },
      { pid: 2000, ppid: 1, argv: ['python', 'jupyter-server'] }
    ]);
    expect(findServer({ ...options(), processTable }).pid).toBe(2000);
  });

  test('$JPY_PARENT_PID, the server that started the kernel, when the tree says nothing', () => {
    const env = { JPY_PARENT_PID: '1001' };
    expect(findServer({ ...options(), env }).pid).toBe(1000);
  });

  test('the one server running when nothing else tells', () => {
    rmSync(join(runtimeDir, 'jpserver-2000.json'));
    expect(findServer(options()).pid).toBe(1000);
  });

  test('several servers and no way to choose: an error that lists them', () => {
    expect(() => findServer(options())).toThrow(
      /2 Jupyter servers are running \(http:\/\/127\.0\.0\.1:8888\/, http:\/\/localhost:8890\/\).*--url/
    );
  });

  test('no server: an error naming the runtime directory', () => {
    const empty = temporaryDir('empty');
    try {
      expect(() => findServer({ ...options(), runtimeDir: empty })).toThrow(
        new RegExp(`No Jupyter server is running.*${empty}`)
      );
    } finally {
      rmSync(empty, { recursive: true });
    }
  });
});
