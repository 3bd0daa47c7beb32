import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  jupyterRuntimeDir,
  removeRuntimeRecord,
  writeRuntimeRecord,
  type ILiveServerRecord
} from '../../src/gateway/runtimeRecord';

const RECORD: ILiveServerRecord = {
  url: 'http://127.0.0.1:8888/',
  version: '1.2.3',
  upstream_url: 'unix:/tmp/x/jupyter.sock',
  upstream_pid: 42,
  token: 'secret',
  sock: '',
  secure: false,
  root_dir: '/srv/notebooks',
  port: 8888,
  pid: 4242,
  password: false,
  notebook_dir: '/srv/notebooks',
  hostname: '127.0.0.1',
  base_url: '/'
};

describe('#jupyterRuntimeDir()', () => {
  test('$JUPYTER_RUNTIME_DIR wins', () => {
    expect(jupyterRuntimeDir({ env: { JUPYTER_RUNTIME_DIR: '/rt' } })).toBe('/rt');
  });

  test('otherwise runtime/ in the Jupyter data directory', () => {
    expect(jupyterRuntimeDir({ env: { JUPYTER_DATA_DIR: '/data' } })).toBe('/data/runtime');
    expect(jupyterRuntimeDir({ env: { HOME: '/home/u' }, platform: 'linux' })).toBe(
      '/home/u/.local/share/jupyter/runtime'
    );
  });
});

describe('#writeRuntimeRecord()', () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'runtime-'));
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test('writes jpserver-<pid>.json with sorted keys and two-space indent, mode 0600', () => {
    const file = writeRuntimeRecord(join(dir, 'runtime'), RECORD);
    expect(file).toBe(join(dir, 'runtime', 'jpserver-4242.json'));
    const text = readFileSync(file, 'utf8');
    const keys = Object.keys(JSON.parse(text) as object);
    expect(keys).toEqual([...keys].sort());
    expect(keys.slice(0, 5)).toEqual(['base_url', 'hostname', 'notebook_dir', 'password', 'pid']);
    expect(text).toContain('\n  "base_url": "/",\n');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'runtime')).mode & 0o077).toBe(0);
    expect(readdirSync(join(dir, 'runtime'))).toEqual(['jpserver-4242.json']);
  });

  test('removeRuntimeRecord removes the record and its open.html, and tolerates their absence', () => {
    writeRuntimeRecord(dir, RECORD);
    writeFileSync(join(dir, 'jpserver-4242-open.html'), '<html>');
    writeFileSync(join(dir, 'jpserver-1.json'), '{}');
    removeRuntimeRecord(dir, 4242);
    expect(readdirSync(dir)).toEqual(['jpserver-1.json']);
    expect(() => removeRuntimeRecord(dir, 4242)).not.toThrow();
  });
});
