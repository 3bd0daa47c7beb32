/**
 * `jupyter store …` where users run it: in a shell escape of a real Python notebook, against
 * `jupyter-store lab` archiving to MinIO. Publish and versions find the current notebook
 * themselves; every object is checked in MinIO.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectVersionsCommand,
  type S3Client
} from '@aws-sdk/client-s3';
import { FsCloneResponseSchema, ObjectCloneResponseSchema } from '@jupyter-store/contract';
import { useArchivingLab } from '../support/archivingLab';
import { CLI, labDefaults, startGatewayProcess, type IGatewayProcess } from '../support/gateway';
import type { IKernelSocket } from '../support/kernel';
import {
  callGateway,
  connectKernel,
  makeDirectory,
  openSession,
  pathWithVenv,
  runCli,
  runShellEscape,
  saveNotebook,
  terminalEnv,
  waitUntil,
  type ISessionModel
} from './storeCli';

jest.setTimeout(180_000);

const BUCKET = 'team-notebooks';
const NOTEBOOK = 'analysis/report.ipynb';

describe('jupyter store in a notebook’s kernel, with MinIO', () => {
  let s3: S3Client;
  let gateway: IGatewayProcess;
  let session: ISessionModel;
  let kernel: IKernelSocket;

  // Declared before the gateway's teardown, so that it runs first.
  afterAll(async () => {
    await kernel?.close();
  });

  const lab = useArchivingLab({ bucket: BUCKET, gateway: { env: { PATH: pathWithVenv() } } });

  beforeAll(async () => {
    ({ s3, gateway } = lab);
    // Publishing is off until enabled, as `jupyter store enable --user` does.
    const enabled = spawnSync(process.execPath, [CLI, 'enable', '--user'], {
      encoding: 'utf8',
      env: { ...process.env, JUPYTER_CONFIG_DIR: gateway.state.config },
      timeout: 30_000
    });
    expect(enabled.status).toBe(0);
    await makeDirectory(gateway, 'analysis');
    await saveNotebook(gateway, NOTEBOOK, 'first draft');
    session = await openSession(gateway, NOTEBOOK);
    kernel = await connectKernel(gateway, session.kernel.id);
  });

  /** The object's bytes (a version, or the latest) in MinIO. */
  async function objectBytes(key: string, versionId?: string): Promise<Buffer> {
    const object = await s3.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: key, VersionId: versionId }),
      { abortSignal: AbortSignal.timeout(15_000) }
    );
    return Buffer.from(await object.Body!.transformToByteArray());
  }

  /** The version ids of a key in MinIO, newest first. */
  async function versionIds(key: string): Promise<string[]> {
    const listed = await s3.send(new ListObjectVersionsCommand({ Bucket: BUCKET, Prefix: key }), {
      abortSignal: AbortSignal.timeout(15_000)
    });
    return (listed.Versions ?? [])
      .filter(version => version.Key === key)
      .sort((a, b) => (b.LastModified?.getTime() ?? 0) - (a.LastModified?.getTime() ?? 0))
      .map(version => version.VersionId as string);
  }

  test('!jupyter store publish publishes the current notebook’s saved copy to MinIO', async () => {
    const result = await runShellEscape(kernel, 'jupyter store publish');
    const head = await s3.send(
      new HeadObjectCommand({ Bucket: BUCKET, Key: `published/${NOTEBOOK}` }),
      { abortSignal: AbortSignal.timeout(15_000) }
    );
    const saved = (await callGateway(gateway, 'GET', `api/contents/${NOTEBOOK}?content=0`))
      .body as { last_modified: string };
    expect(result).toEqual({
      status: 0,
      output:
        `Published the current notebook (${NOTEBOOK}) to s3://${BUCKET}/published/${NOTEBOOK} ` +
        `(version ${head.VersionId}).\n` +
        `This is the copy saved at ${saved.last_modified}: changes not saved since are not included.\n`
    });
    // The published bytes are the notebook as saved on disk.
    expect(await objectBytes(`published/${NOTEBOOK}`)).toEqual(
      readFileSync(join(gateway.rootDir, NOTEBOOK))
    );
  });

  test('the kernel is found from the process tree, without JPY_SESSION_NAME', async () => {
    await saveNotebook(gateway, NOTEBOOK, 'second draft');
    const result = await runShellEscape(kernel, 'JPY_SESSION_NAME= jupyter store publish --json');
    expect(result.status).toBe(0);
    const published = JSON.parse(result.output) as Record<string, unknown>;
    const ids = await versionIds(`published/${NOTEBOOK}`);
    expect(ids).toHaveLength(2);
    expect(published).toMatchObject({
      path: NOTEBOOK,
      current_notebook: true,
      object_bucket: BUCKET,
      object_key: `published/${NOTEBOOK}`,
      object_version_id: ids[0]
    });
    expect((await objectBytes(`published/${NOTEBOOK}`)).toString('utf8')).toContain('second draft');
  });

  test('!jupyter store versions lists the current notebook’s versions as MinIO has them', async () => {
    expect(
      await waitUntil(async () => (await versionIds(`workspace/${NOTEBOOK}`)).length === 2)
    ).toBe(true);
    const workspace = await versionIds(`workspace/${NOTEBOOK}`);
    const published = await versionIds(`published/${NOTEBOOK}`);
    const result = await runShellEscape(kernel, 'jupyter store versions');
    expect(result.status).toBe(0);
    const lines = result.output.split('\n');
    expect(lines.slice(0, 2)).toEqual([
      `Versions of ${NOTEBOOK} in bucket ${BUCKET}, newest first:`,
      `  archived (workspace/${NOTEBOOK}): 2 versions`
    ]);
    // Each section lists MinIO's versions, newest first.
    const listed = lines
      .filter(line => line.startsWith('    '))
      .map(line => line.trim().split(/\s+/)[0]);
    expect(listed).toEqual([...workspace, ...published]);
    expect(lines).toContain(`  published (published/${NOTEBOOK}): 2 versions`);
  });

  test('!jupyter store clone s3://… clones into the server, an exact version on request', async () => {
    const [newest, oldest] = await versionIds(`published/${NOTEBOOK}`);
    const latest = await runShellEscape(
      kernel,
      `jupyter store clone s3://${BUCKET}/published/${NOTEBOOK}`
    );
    expect(latest).toEqual({
      status: 0,
      output: `Cloned s3://${BUCKET}/published/${NOTEBOOK} (version ${newest}) to report.ipynb\n`
    });
    const exact = await runShellEscape(
      kernel,
      `jupyter store clone "s3://${BUCKET}/published/${NOTEBOOK}?versionId=${oldest}" --json`
    );
    expect(exact.status).toBe(0);
    const model = ObjectCloneResponseSchema.parse(JSON.parse(exact.output));
    // The first name is taken: nothing is overwritten.
    expect(model).toMatchObject({
      path: 'report-1.ipynb',
      type: 'notebook',
      object_version_id: oldest,
      object_path: `s3://${BUCKET}/published/${NOTEBOOK}`
    });
    const text = (name: string): string => readFileSync(join(gateway.rootDir, name), 'utf8');
    expect(text('report.ipynb')).toContain('second draft');
    expect(text('report-1.ipynb')).toContain('first draft');
  });

  test('a file path is taken from the kernel’s working directory, the notebook’s', async () => {
    const result = await runShellEscape(
      kernel,
      `jupyter store clone s3://${BUCKET}/published/${NOTEBOOK} ./copy.ipynb`
    );
    const [newest] = await versionIds(`published/${NOTEBOOK}`);
    expect(result).toEqual({
      status: 0,
      output: `Cloned s3://${BUCKET}/published/${NOTEBOOK} (version ${newest}) to analysis/copy.ipynb\n`
    });
  });

  test('from a terminal: publish the path given', async () => {
    await saveNotebook(gateway, 'shared.ipynb', 'for everyone');
    const published = await runCli(['publish', 'shared.ipynb'], terminalEnv(gateway));
    const [version] = await versionIds('published/shared.ipynb');
    const saved = (await callGateway(gateway, 'GET', 'api/contents/shared.ipynb?content=0'))
      .body as { last_modified: string };
    expect(published).toEqual({
      status: 0,
      stderr: '',
      stdout:
        `Published shared.ipynb to s3://${BUCKET}/published/shared.ipynb (version ${version}).\n` +
        `This is the copy saved at ${saved.last_modified}: changes not saved since are not included.\n`
    });
    expect((await objectBytes('published/shared.ipynb')).toString('utf8')).toContain(
      'for everyone'
    );
  });

  test('several notebooks on one kernel: an error naming them; a path still works', async () => {
    await saveNotebook(gateway, 'second.ipynb', 'another notebook');
    await openSession(gateway, 'second.ipynb', session.kernel.id);
    const ambiguous = await runShellEscape(kernel, 'jupyter store publish');
    expect(ambiguous).toEqual({
      status: 1,
      output:
        'jupyter-store publish: 2 notebooks share this kernel (analysis/report.ipynb, ' +
        'second.ipynb), so which one is meant cannot be told: give its path\n'
    });
    // The kernel runs in analysis/, the directory of the notebook it was started for.
    const named = await runShellEscape(kernel, 'jupyter store publish ../second.ipynb');
    const [version] = await versionIds('published/second.ipynb');
    expect(named.status).toBe(0);
    expect(named.output.split('\n')[0]).toBe(
      `Published second.ipynb to s3://${BUCKET}/published/second.ipynb (version ${version}).`
    );
    expect((await objectBytes('published/second.ipynb')).toString('utf8')).toContain(
      'another notebook'
    );
  });
});

describe('jupyter store fs-clone with a shared directory', () => {
  let gateway: IGatewayProcess;
  let shared: string;

  beforeAll(async () => {
    shared = mkdtempSync(join(tmpdir(), 'client-fs-shared-'));
    mkdirSync(join(shared, 'team'), { recursive: true });
    writeFileSync(join(shared, 'team', 'data.csv'), 'a,b\n1,2\n');
    gateway = await startGatewayProcess({
      args: [...labDefaults(), `--StoreSettings.fs_cloning_basedir=${shared}`]
    });
  });

  afterAll(async () => {
    await gateway?.stop();
    rmSync(shared, { recursive: true, force: true });
  });

  test('copies the file into the server, byte for byte', async () => {
    const result = await runCli(['fs-clone', 'team/data.csv', '--json'], terminalEnv(gateway));
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const model = FsCloneResponseSchema.parse(JSON.parse(result.stdout));
    expect(model).toMatchObject({ path: 'data.csv', relpath: 'team/data.csv', type: 'file' });
    expect(readFileSync(join(gateway.rootDir, 'data.csv'), 'utf8')).toBe('a,b\n1,2\n');
  });

  test('a path outside the shared directory is the server’s 404', async () => {
    const result = await runCli(['fs-clone', '../outside.csv'], terminalEnv(gateway));
    expect(result.status).toBe(1);
    expect(result.stderr).toBe(
      'jupyter-store fs-clone: relpath "../outside.csv" is outside the root cloning directory ' +
        '(HTTP 404, outside base directory)\n'
    );
  });
});
