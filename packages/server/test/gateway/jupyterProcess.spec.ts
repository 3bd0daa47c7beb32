import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeExit, findJupyter, jupyterArguments } from '../../src/gateway/jupyterProcess';

const BASE = {
  rootDir: '/srv/notebooks',
  baseUrl: '/user/alice/',
  token: 'secret',
  allowRemoteAccess: false,
  disableCheckXsrf: false
};

describe('#jupyterArguments()', () => {
  test('a unix socket upstream shares root_dir and base_url and never shows the token', () => {
    const args = jupyterArguments(BASE, { kind: 'unix', socketPath: '/tmp/s/jupyter.sock' });
    expect(args).toEqual(
      expect.arrayContaining([
        '--no-browser',
        '--ServerApp.root_dir=/srv/notebooks',
        '--ServerApp.base_url=/user/alice/',
        '--ServerApp.allow_remote_access=False',
        '--ServerApp.sock=/tmp/s/jupyter.sock',
        '--ServerApp.sock_mode=0600'
      ])
    );
    expect(args.join(' ')).not.toContain('secret');
    expect(args.some(arg => arg.startsWith('--ServerApp.port'))).toBe(false);
  });

  test('a TCP upstream binds loopback on the chosen port without retries', () => {
    const args = jupyterArguments(BASE, { kind: 'tcp', host: '127.0.0.1', port: 9999 });
    expect(args).toEqual(
      expect.arrayContaining([
        '--ServerApp.ip=127.0.0.1',
        '--ServerApp.port=9999',
        '--ServerApp.port_retries=0'
      ])
    );
  });

  test('no auth, XSRF, origins, root, config, extensions and extra arguments are passed on', () => {
    const args = jupyterArguments(
      {
        ...BASE,
        token: null,
        disableCheckXsrf: true,
        allowOrigin: 'https://a.example',
        allowOriginPat: 'https://.*\\.example',
        allowRoot: true,
        configFile: '/etc/jupyter/x.json',
        labextensionsPaths: ['/opt/ext one', '/opt/two'],
        extraArgs: ['--ServerApp.iopub_data_rate_limit=1e10']
      },
      { kind: 'unix', socketPath: '/s' }
    );
    expect(args).toEqual(
      expect.arrayContaining([
        '--IdentityProvider.token=',
        '--ServerApp.disable_check_xsrf=True',
        '--ServerApp.allow_origin=https://a.example',
        '--ServerApp.allow_origin_pat=https://.*\\.example',
        '--ServerApp.allow_root=True',
        '--config=/etc/jupyter/x.json',
        '--LabApp.extra_labextensions_path=/opt/ext one',
        '--LabApp.extra_labextensions_path=/opt/two'
      ])
    );
    expect(args[args.length - 1]).toBe('--ServerApp.iopub_data_rate_limit=1e10');
  });
});

describe('#findJupyter()', () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'find-jupyter-'));
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test('the first executable jupyter on PATH wins', () => {
    const first = join(dir, 'a');
    const second = join(dir, 'b');
    for (const bin of [first, second]) {
      rmSync(bin, { recursive: true, force: true });
      mkdirSync(bin);
      writeFileSync(join(bin, 'jupyter'), '#!/bin/sh\n');
      chmodSync(join(bin, 'jupyter'), 0o755);
    }
    chmodSync(join(first, 'jupyter'), 0o644);
    expect(findJupyter({ PATH: `${first}:${second}` })).toBe(join(second, 'jupyter'));
  });

  test("without one on PATH, the project's .venv is used", () => {
    expect(findJupyter({ PATH: dir })).toMatch(/\.venv\/bin\/jupyter$/);
  });
});

describe('#describeExit()', () => {
  test('names the signal or the code', () => {
    expect(describeExit({ code: null, signal: 'SIGKILL' })).toBe('signal SIGKILL');
    expect(describeExit({ code: 3, signal: null })).toBe('exit code 3');
  });
});
