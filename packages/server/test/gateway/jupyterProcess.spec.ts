import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  describeExit,
  findJupyter,
  jupyterArguments,
  jupyterEnvironment,
  writeTokenConfig
} from '../../src/gateway/jupyterProcess';
import { ENVIRONMENT_VARIABLES } from '../../src/settings';

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

describe('#jupyterEnvironment()', () => {
  test('drops every variable the settings read, any other STORE_OBJECT_*, and the token', () => {
    const base: NodeJS.ProcessEnv = { PATH: '/usr/bin', HOME: '/home/alice' };
    for (const variable of Object.keys(ENVIRONMENT_VARIABLES)) base[variable] = 'ours';
    Object.assign(base, {
      STORE_OBJECT_SESSION_TOKEN: 'ours',
      JUPYTER_TOKEN: 'ours',
      JUPYTER_TOKEN_FILE: '/run/secrets/token'
    });
    expect(jupyterEnvironment(base)).toEqual({ PATH: '/usr/bin', HOME: '/home/alice' });
  });

  test("keeps the user's own variables: AWS_* for boto3, other STORE_*, Jupyter's paths", () => {
    const users = {
      AWS_ACCESS_KEY_ID: 'AKIAUSER',
      AWS_SECRET_ACCESS_KEY: 'user-secret',
      AWS_SESSION_TOKEN: 'user-session',
      AWS_PROFILE: 'analysis',
      STORE_NAME: 'corner shop',
      store_object_bucket: 'lower case is not ours',
      JUPYTER_CONFIG_DIR: '/home/alice/.jupyter',
      JUPYTER_RUNTIME_DIR: '/run/user/1000/jupyter'
    };
    expect(jupyterEnvironment({ ...users, STORE_OBJECT_BUCKET: 'ours' })).toEqual(users);
  });
});

describe('#writeTokenConfig()', () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'token-config-'));
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test('writes the token as Jupyter config into a directory only this user can open', () => {
    const token = 'a "quoted" token\\ with ünïcode';
    const written = writeTokenConfig(dir, token);
    expect(written).toEqual({
      dir: join(dir, 'config'),
      file: join(dir, 'config', 'jupyter_config.json')
    });
    expect(statSync(written.dir).mode & 0o777).toBe(0o700);
    expect(statSync(written.file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(written.file, 'utf8'))).toEqual({
      IdentityProvider: { token }
    });
  });

  test('never writes into a directory that is already there', () => {
    mkdirSync(join(dir, 'config'));
    expect(() => writeTokenConfig(dir, 't')).toThrow(/EEXIST/);
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
