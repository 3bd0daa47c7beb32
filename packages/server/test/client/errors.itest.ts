/**
 * Every way a `jupyter store` command fails, against the real gateway and MinIO: the message the
 * user reads (the server's own where there is one) and the exit status (1 for failures, 2 for
 * bad usage). And a server without a token, whose writes need the XSRF check passed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PublishResultSchema } from '@jupyter-store/contract';
import { useArchivingLab } from '../support/archivingLab';
import { CLI, labDefaults, startGatewayProcess, type IGatewayProcess } from '../support/gateway';
import { runCli, saveNotebook, terminalEnv } from './storeCli';

jest.setTimeout(180_000);

const BUCKET = 'errors-bucket';

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise(resolve => server.close(resolve));
  return port;
}

describe('failures of jupyter store commands against a gateway with MinIO', () => {
  const lab = useArchivingLab({ bucket: BUCKET });
  let gateway: IGatewayProcess;
  const scratch: string[] = [];

  /** A new runtime directory holding the given records. */
  function runtimeWith(...records: Record<string, unknown>[]): string {
    const dir = mkdtempSync(join(tmpdir(), 'client-runtime-'));
    scratch.push(dir);
    for (const record of records) {
      writeFileSync(join(dir, `jpserver-${String(record.pid)}.json`), JSON.stringify(record));
    }
    return dir;
  }

  /**
   * Run `jupyter store …args` from a terminal (with `runtimeDir` as its runtime directory if
   * given): it must fail with exit status 1, saying `stderr` and nothing on stdout.
   */
  async function expectFailure(args: string[], stderr: string, runtimeDir?: string) {
    const env = terminalEnv(gateway);
    const result = await runCli(
      args,
      runtimeDir === undefined ? env : { ...env, JUPYTER_RUNTIME_DIR: runtimeDir }
    );
    expect(result).toEqual({ status: 1, stdout: '', stderr });
  }

  beforeAll(async () => {
    gateway = lab.gateway;
    await saveNotebook(gateway, 'nb.ipynb', 'text');
  });

  afterAll(async () => {
    for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
  });

  describe('no server', () => {
    test('no record at all: says so and names the runtime directory', async () => {
      const empty = runtimeWith();
      for (const command of [
        ['publish', 'nb.ipynb'],
        ['clone', 's3://b/k'],
        ['versions', 'x']
      ]) {
        await expectFailure(
          command,
          `jupyter-store ${command[0]}: No Jupyter server is running: there is no live server ` +
            `record in ${empty}. Start one with 'jupyter-store lab', or set JUPYTER_RUNTIME_DIR ` +
            'to where it writes its record\n',
          empty
        );
      }
    });

    test('only the record of a server that has died: the same', async () => {
      const exited = spawnSync(
        process.execPath,
        ['-e', 'process.stdout.write(String(process.pid))'],
        {
          encoding: 'utf8',
          timeout: 30_000
        }
      );
      const dir = runtimeWith({ ...gateway.record, pid: Number(exited.stdout) });
      await expectFailure(
        ['versions', 'nb.ipynb'],
        'jupyter-store versions: No Jupyter server is running: there is no live server ' +
          `record in ${dir}. Start one with 'jupyter-store lab', or set JUPYTER_RUNTIME_DIR ` +
          'to where it writes its record\n',
        dir
      );
    });

    test('a live record whose server does not listen: cannot reach it', async () => {
      const port = await closedPort();
      const url = `http://127.0.0.1:${port}/`;
      const dir = runtimeWith({ ...gateway.record, pid: process.pid, port, url });
      await expectFailure(
        ['versions', 'nb.ipynb'],
        `jupyter-store versions: Cannot reach the server at ${url}api/store/versions/nb.ipynb ` +
          '(ECONNREFUSED); is it still running?\n',
        dir
      );
    });
  });

  describe('wrong token', () => {
    test('in the record: the gateway’s 403, exit status 1', async () => {
      const dir = runtimeWith({ ...gateway.record, token: 'not-the-token' });
      await expectFailure(
        ['versions', 'nb.ipynb'],
        'jupyter-store versions: Forbidden: authentication required ' +
          '(HTTP 403, not authenticated)\n',
        dir
      );
    });

    test('given with --url: the same, and --json says it on stdout too', async () => {
      const result = await runCli(
        ['publish', 'nb.ipynb', '--json', '--url', gateway.record.url, '--token', 'wrong'],
        terminalEnv(gateway)
      );
      expect(result.status).toBe(1);
      expect(JSON.parse(result.stdout)).toEqual({
        error: {
          type: 'StoreError',
          status: 403,
          reason: 'not authenticated',
          message: 'Forbidden: authentication required'
        }
      });
    });
  });

  describe('feature disabled', () => {
    test('publish before `jupyter store enable`: the server’s reason, exit status 1', async () => {
      await expectFailure(
        ['publish', 'nb.ipynb'],
        'jupyter-store publish: Publishing is disabled: publishing is off until enabled with ' +
          '`jupyter store enable --user` or `--sys-prefix` (HTTP 403, publish disabled)\n'
      );
    });

    test('fs-clone without fs_cloning_basedir: the server’s reason, exit status 1', async () => {
      await expectFailure(
        ['fs-clone', 'team/a.ipynb'],
        'jupyter-store fs-clone: Cloning from the file system is turned off: ' +
          'fs_cloning_basedir is not set (HTTP 403, fs cloning disabled)\n'
      );
    });
  });

  describe('missing in object storage', () => {
    test.each([
      [
        'a key',
        `s3://${BUCKET}/published/missing.ipynb`,
        `s3://${BUCKET}/published/missing.ipynb does not exist (NoSuchKey)`
      ],
      [
        'a bucket',
        's3://no-such-bucket-here/a.ipynb',
        'The bucket "no-such-bucket-here" does not exist (NoSuchBucket)'
      ],
      [
        'a version',
        `s3://${BUCKET}/workspace/nb.ipynb?versionId=00000000-0000-0000-0000-000000000000`,
        'Version "00000000-0000-0000-0000-000000000000" of ' +
          `s3://${BUCKET}/workspace/nb.ipynb does not exist (NoSuchVersion)`
      ]
    ])('%s that does not exist: the server’s 404 and message', async (_what, uri, message) => {
      await expectFailure(['clone', uri], `jupyter-store clone: ${message} (HTTP 404)\n`);
    });

    test('a notebook that does not exist cannot be published: the contents API’s 404', async () => {
      await expectFailure(
        ['publish', 'missing.ipynb', '--url', gateway.record.url],
        "jupyter-store publish: file or directory does not exist: 'missing.ipynb' " +
          '(HTTP 404, not found)\n'
      );
    });
  });

  test('bad usage: one line on stderr, exit status 2, before any request', async () => {
    const result = await runCli(['clone', 'https://example.invalid/x'], terminalEnv(gateway));
    expect(result).toEqual({
      status: 2,
      stdout: '',
      stderr:
        "jupyter-store clone: 'https://example.invalid/x' is not an object URI of the form " +
        's3://BUCKET/KEY[?versionId=ID] (see --help)\n'
    });
  });
});

describe('a gateway without a token: the client passes the XSRF check', () => {
  let gateway: IGatewayProcess;

  beforeAll(async () => {
    gateway = await startGatewayProcess({ args: [...labDefaults(), '--no-auth'] });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  test('a write without the XSRF token is refused, so the check is on', async () => {
    const response = await fetch(gateway.url('api/store/clone'), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ object_bucket: 'jupyter-store', object_key: 'x.ipynb' })
    });
    expect(response.status).toBe(403);
    expect(((await response.json()) as { reason: string }).reason).toBe('xsrf');
  });

  test('publish and clone work, XSRF handled', async () => {
    expect(gateway.token).toBe('');
    const env = { ...terminalEnv(gateway) };
    await fetch(gateway.url('api/contents/open.ipynb'), {
      method: 'PUT',
      headers: {
        'Content-Type': 'application/json',
        Cookie: '_xsrf=abc',
        'X-XSRFToken': 'abc'
      },
      body: JSON.stringify({
        type: 'notebook',
        content: { cells: [], metadata: {}, nbformat: 4, nbformat_minor: 5 }
      })
    });
    const enabled = spawnSync(process.execPath, [CLI, 'enable', '--user'], {
      encoding: 'utf8',
      env: { ...process.env, JUPYTER_CONFIG_DIR: gateway.state.config },
      timeout: 30_000
    });
    expect(enabled.status).toBe(0);
    const published = await runCli(['publish', 'open.ipynb', '--json'], env);
    expect(published.stderr).toBe('');
    expect(published.status).toBe(0);
    const result = PublishResultSchema.parse(JSON.parse(published.stdout));
    expect(result.object_key).toBe('published/open.ipynb');
    const cloned = await runCli(
      ['clone', `s3://${result.object_bucket}/${result.object_key}`],
      env
    );
    expect(cloned).toEqual({
      status: 0,
      stdout: `Cloned ${result.object_path} (version ${result.object_version_id}) to open-1.ipynb\n`,
      stderr: ''
    });
  });
});
