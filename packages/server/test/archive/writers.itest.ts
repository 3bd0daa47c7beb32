/**
 * Every writer's changes become versions: the real gateway (`jupyter-store lab`) archiving to a
 * real MinIO, with notebooks written by a real kernel, papermill, `jupyter nbconvert --inplace`,
 * git, and while the gateway is stopped; the watcher turned off; nothing archived twice.
 */
import {
  GetObjectCommand,
  ListObjectVersionsCommand,
  type ObjectVersion
} from '@aws-sdk/client-s3';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startArchivingGateway, useObjectServer } from '../support/archivingLab';
import { ecosystemBin } from '../support/ecosystem';
import type { IGatewayProcess } from '../support/gateway';
import { withKernel } from '../support/kernel';
import { createVersionedBucket } from '../support/objectServers';
import { pythonNotebookFile } from '../support/notebookSaves';

const run = promisify(execFile);

const gateways: IGatewayProcess[] = [];
const scratch: string[] = [];

// Declared before MinIO's teardown, so that the gateways stop while it still runs.
afterAll(async () => {
  for (const gateway of gateways.splice(0)) await gateway.stop('SIGTERM', 15_000);
  for (const dir of scratch.splice(0)) await rm(dir, { recursive: true, force: true });
});

const shared = useObjectServer();

/** A notebook with one code cell holding `source`, as nbformat writes it. */
function notebook(source: string, outputs: unknown[] = []): string {
  return pythonNotebookFile([
    {
      cell_type: 'code',
      execution_count: outputs.length ? 1 : null,
      id: 'c1',
      metadata: {},
      outputs,
      source
    }
  ]);
}

async function scratchDir(name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `writers-${name}-`));
  scratch.push(dir);
  return dir;
}

/** A gateway archiving `rootDir` to a new bucket of the shared MinIO. */
async function startArchiving(
  rootDir: string,
  options: { bucket?: string; journalDir?: string; args?: string[] } = {}
): Promise<{ gateway: IGatewayProcess; bucket: string; journalDir: string }> {
  const bucket = options.bucket ?? `writers-${randomUUID().slice(0, 8)}`;
  if (!options.bucket) await createVersionedBucket(shared.server, bucket);
  const journalDir = options.journalDir ?? (await scratchDir('journal'));
  const gateway = await startArchivingGateway(shared.server, bucket, {
    rootDir,
    args: [`--StoreSettings.journal_dir=${journalDir}`, ...(options.args ?? [])]
  });
  gateways.push(gateway);
  return { gateway, bucket, journalDir };
}

async function stopGateway(gateway: IGatewayProcess): Promise<void> {
  gateways.splice(gateways.indexOf(gateway), 1);
  expect(await gateway.stop('SIGTERM', 15_000)).toBe(0);
}

/** One entry of a key's history, oldest first: a version's bytes, or null for a delete marker. */
type HistoryEntry = { versionId: string; body: string | null; metadata: Record<string, string> };

/** Every version and delete marker of a key, oldest first. */
async function history(bucket: string, key: string): Promise<HistoryEntry[]> {
  const listed = await shared.s3.send(
    new ListObjectVersionsCommand({ Bucket: bucket, Prefix: key })
  );
  const entries: Array<{ at: number; entry: HistoryEntry }> = [];
  const versions = (listed.Versions ?? []).filter(version => version.Key === key);
  for (const version of versions as ObjectVersion[]) {
    const object = await shared.s3.send(
      new GetObjectCommand({ Bucket: bucket, Key: key, VersionId: version.VersionId })
    );
    entries.push({
      at: version.LastModified!.getTime(),
      entry: {
        versionId: version.VersionId!,
        body: await object.Body!.transformToString('utf8'),
        metadata: object.Metadata ?? {}
      }
    });
  }
  for (const marker of listed.DeleteMarkers ?? []) {
    if (marker.Key !== key) continue;
    entries.push({
      at: marker.LastModified!.getTime(),
      entry: { versionId: marker.VersionId!, body: null, metadata: {} }
    });
  }
  // Newest first as listed; same-millisecond entries keep the listing's order.
  const order = [...(listed.Versions ?? []), ...(listed.DeleteMarkers ?? [])]
    .filter(item => item.Key === key)
    .sort((a, b) => b.LastModified!.getTime() - a.LastModified!.getTime())
    .map(item => item.VersionId);
  return entries
    .sort((a, b) => order.indexOf(b.entry.versionId) - order.indexOf(a.entry.versionId))
    .map(item => item.entry);
}

/** Every key under `workspace/` that has any version or delete marker. */
async function archivedKeys(bucket: string): Promise<string[]> {
  const listed = await shared.s3.send(
    new ListObjectVersionsCommand({ Bucket: bucket, Prefix: 'workspace/' })
  );
  const keys = new Set<string>();
  for (const item of [...(listed.Versions ?? []), ...(listed.DeleteMarkers ?? [])]) {
    keys.add(item.Key!);
  }
  return [...keys].sort();
}

/** Poll until `check` returns a value other than undefined. */
async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 20_000
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await new Promise(resolve => setTimeout(resolve, 100));
  }
  throw new Error(`${what} did not happen in ${timeoutMs} ms${last ? `: ${String(last)}` : ''}`);
}

/** Wait until the newest version of `path` holds exactly `expected`; returns the history. */
function newestIs(bucket: string, path: string, expected: string, timeoutMs?: number) {
  return eventually(
    `the newest version of ${path} to be what is on disk`,
    async () => {
      const entries = await history(bucket, `workspace/${path}`);
      return entries.at(-1)?.body === expected ? entries : undefined;
    },
    timeoutMs
  );
}

/** Consecutive versions of a key never hold the same bytes. */
function expectNoRepeats(entries: readonly HistoryEntry[]): void {
  for (let i = 1; i < entries.length; i++) {
    if (entries[i].body !== null) expect(entries[i].body).not.toBe(entries[i - 1].body);
  }
}

/** The store API's status, with the token. */
async function storeInfo(gateway: IGatewayProcess): Promise<{
  archive: {
    pending: number;
    sources: Record<string, { seen: number; archived: number }>;
    observation: {
      watcher: { mode: string; reason: string | null };
      events: { connected: boolean };
      scan: { last_completed_at: string | null; interval_seconds: number };
    };
  };
}> {
  const response = await fetch(gateway.url('api/store'), {
    headers: { Authorization: `token ${gateway.token}` }
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Awaited<ReturnType<typeof storeInfo>>;
}

describe('writers other than the contents API', () => {
  let root: string;
  let gateway: IGatewayProcess;
  let bucket: string;

  beforeAll(async () => {
    root = await scratchDir('root');
    ({ gateway, bucket } = await startArchiving(root));
    // Everything observed is running before the writers start.
    await eventually('the first scan and the event subscription', async () => {
      const info = await storeInfo(gateway);
      const { watcher, events, scan } = info.archive.observation;
      return watcher.mode === 'inotify' && events.connected && scan.last_completed_at
        ? true
        : undefined;
    });
  });

  test('a kernel writing a notebook file is archived', async () => {
    const content = notebook('print("written by a kernel")');
    await withKernel(gateway, async kernel => {
      await kernel.execute(`open('kernel.ipynb', 'w').write(${JSON.stringify(content)}) and 'ok'`);
    });
    const entries = await newestIs(bucket, 'kernel.ipynb', content);
    expect(entries).toHaveLength(1);
    expect(entries[0].metadata.writer).toBe('watcher');
  });

  test('two rapid writes by a kernel, 50 ms apart: the final state is archived', async () => {
    const first = notebook('first = 1');
    const second = notebook('second = 2');
    await withKernel(gateway, async kernel => {
      await kernel.execute(
        [
          'import time',
          `open('rapid.ipynb', 'w').write(${JSON.stringify(first)})`,
          'time.sleep(0.05)',
          `open('rapid.ipynb', 'w').write(${JSON.stringify(second)}) and 'ok'`
        ].join('\n')
      );
    });
    const entries = await newestIs(bucket, 'rapid.ipynb', second);
    // The first state may be merged into the second, never archived after it.
    expect(entries.length).toBeLessThanOrEqual(2);
    expect(entries.at(-1)!.body).toBe(second);
    expect(await readFile(join(root, 'rapid.ipynb'), 'utf8')).toBe(second);
  });

  test('papermill runs a notebook: its final state is the newest version', async () => {
    const input = notebook('import time\nfor i in range(3):\n    print(i)\n    time.sleep(0.2)');
    await writeFile(join(root, 'input.ipynb'), input);
    await run(
      ecosystemBin('papermill'),
      ['input.ipynb', 'output.ipynb', '--kernel', 'python3', '--log-level', 'WARNING'],
      { cwd: root, env: { ...process.env, ...gatewayEnvironment(gateway) }, timeout: 120_000 }
    );
    const onDisk = await readFile(join(root, 'output.ipynb'), 'utf8');
    expect(onDisk).toContain('"papermill"');
    const entries = await newestIs(bucket, 'output.ipynb', onDisk);
    expectNoRepeats(entries);
  });

  test('jupyter nbconvert --inplace is archived', async () => {
    const withOutput = notebook('1 + 1', [
      {
        data: { 'text/plain': '2' },
        execution_count: 1,
        metadata: {},
        output_type: 'execute_result'
      }
    ]);
    await writeFile(join(root, 'convert.ipynb'), withOutput);
    await newestIs(bucket, 'convert.ipynb', withOutput);
    await run(
      ecosystemBin('jupyter'),
      ['nbconvert', '--to', 'notebook', '--inplace', '--clear-output', 'convert.ipynb'],
      { cwd: root, env: { ...process.env, ...gatewayEnvironment(gateway) }, timeout: 60_000 }
    );
    const cleared = await readFile(join(root, 'convert.ipynb'), 'utf8');
    expect(cleared).not.toBe(withOutput);
    const entries = await newestIs(bucket, 'convert.ipynb', cleared);
    expect(entries.map(entry => entry.body)).toEqual([withOutput, cleared]);
  });

  test('a git checkout of another revision is archived', async () => {
    const repo = join(root, 'repo');
    await mkdir(repo);
    const git = (...args: string[]) =>
      run('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', ...args], {
        cwd: repo
      });
    const v1 = notebook('version = 1');
    const v2 = notebook('version = 2');
    await git('init', '-q');
    await writeFile(join(repo, 'tracked.ipynb'), v1);
    await git('add', 'tracked.ipynb');
    await git('commit', '-qm', 'v1');
    await newestIs(bucket, 'repo/tracked.ipynb', v1);
    await writeFile(join(repo, 'tracked.ipynb'), v2);
    await git('commit', '-qam', 'v2');
    await newestIs(bucket, 'repo/tracked.ipynb', v2);
    await git('checkout', '-q', 'HEAD~1');
    const entries = await newestIs(bucket, 'repo/tracked.ipynb', v1);
    expect(entries.map(entry => entry.body)).toEqual([v1, v2, v1]);
    // git's own files are never archived.
    expect((await archivedKeys(bucket)).filter(key => key.includes('/.git/'))).toEqual([]);
  });

  test('an unchanged save adds no version, and no temporary file becomes one', async () => {
    const content = JSON.parse(notebook('unchanged = True')) as Record<string, unknown>;
    const save = () =>
      fetch(gateway.url('api/contents/unchanged.ipynb'), {
        method: 'PUT',
        headers: { Authorization: `token ${gateway.token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ type: 'notebook', content })
      });
    expect((await save()).status).toBe(201);
    const onDisk = await readFile(join(root, 'unchanged.ipynb'), 'utf8');
    await newestIs(bucket, 'unchanged.ipynb', onDisk);
    for (let i = 0; i < 3; i++) expect((await save()).status).toBe(200);
    // A touch of the file and a rewrite of the same bytes by another writer add nothing either.
    await writeFile(join(root, 'unchanged.ipynb'), onDisk);
    await new Promise(resolve => setTimeout(resolve, 1500));
    const info = await storeInfo(gateway);
    expect(info.archive.pending).toBe(0);
    expect(await history(bucket, 'workspace/unchanged.ipynb')).toHaveLength(1);

    for (const key of await archivedKeys(bucket)) {
      const parts = key.split('/');
      expect(parts.some(part => part.startsWith('.'))).toBe(false);
      expectNoRepeats(await history(bucket, key));
    }
  });
});

describe('changes made while the gateway was stopped', () => {
  test('an edit is archived and a delete recorded at the next start', async () => {
    const root = await scratchDir('stopped');
    const edited = notebook('before = 1');
    const deleted = notebook('deleted = 1');
    await writeFile(join(root, 'edited.ipynb'), edited);
    await writeFile(join(root, 'deleted.ipynb'), deleted);
    const first = await startArchiving(root);
    await newestIs(first.bucket, 'edited.ipynb', edited);
    await newestIs(first.bucket, 'deleted.ipynb', deleted);
    await stopGateway(first.gateway);

    const after = notebook('after = 2');
    await writeFile(join(root, 'edited.ipynb'), after);
    await rm(join(root, 'deleted.ipynb'));
    const added = notebook('added = 3');
    await writeFile(join(root, 'added.ipynb'), added);

    const second = await startArchiving(root, {
      bucket: first.bucket,
      journalDir: first.journalDir
    });
    const edits = await newestIs(first.bucket, 'edited.ipynb', after);
    expect(edits.map(entry => entry.body)).toEqual([edited, after]);
    await newestIs(first.bucket, 'added.ipynb', added);
    const deletes = await eventually('the delete marker', async () => {
      const entries = await history(first.bucket, 'workspace/deleted.ipynb');
      return entries.at(-1)?.body === null ? entries : undefined;
    });
    // The versions are kept behind the marker, so the notebook can be restored.
    expect(deletes.map(entry => entry.body)).toEqual([deleted, null]);
    const listing = await fetch(second.gateway.url('api/store/versions/deleted.ipynb'), {
      headers: { Authorization: `token ${second.gateway.token}` }
    });
    expect(listing.status).toBe(200);
    const versions = (await listing.json()) as {
      workspace: { versions: unknown[]; deleted?: { at: string } | null };
    };
    expect(versions.workspace.versions).toHaveLength(1);
    expect(versions.workspace.deleted).toEqual(expect.objectContaining({ at: expect.any(String) }));
    expect((await storeInfo(second.gateway)).archive.sources.scan.archived).toBeGreaterThanOrEqual(
      3
    );
    await stopGateway(second.gateway);
  });
});

describe('the watcher turned off', () => {
  test('the scan alone archives every change within one interval', async () => {
    const root = await scratchDir('scan-only');
    const { gateway, bucket } = await startArchiving(root, {
      args: [
        '--StoreSettings.archive_watch=false',
        '--StoreSettings.archive_scan_interval_seconds=2'
      ]
    });
    const info = await storeInfo(gateway);
    expect(info.archive.observation.watcher.mode).toBe('off');
    await eventually('the first scan', async () =>
      (await storeInfo(gateway)).archive.observation.scan.last_completed_at ? true : undefined
    );
    const content = notebook('only the scan sees this');
    await withKernel(gateway, async kernel => {
      await kernel.execute(`open('scanned.ipynb', 'w').write(${JSON.stringify(content)}) and 'ok'`);
    });
    const written = Date.now();
    const entries = await newestIs(bucket, 'scanned.ipynb', content, 10_000);
    // One interval (2 s), plus settling and the upload.
    expect(Date.now() - written).toBeLessThan(2000 + 2000);
    expect(entries[0].metadata.writer).toBe('scan');
    expect((await storeInfo(gateway)).archive.sources.watcher.seen).toBe(0);
    await stopGateway(gateway);
  });
});

/** The gateway's isolated Jupyter directories, for tools that must see the same Jupyter state. */
function gatewayEnvironment(gateway: IGatewayProcess): NodeJS.ProcessEnv {
  return {
    HOME: gateway.state.home,
    JUPYTER_CONFIG_DIR: gateway.state.config,
    JUPYTER_DATA_DIR: gateway.state.data,
    JUPYTER_RUNTIME_DIR: gateway.state.runtime
  };
}
