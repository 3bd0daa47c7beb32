/**
 * Server discovery against real records: a jupyter-store gateway (with the record Jupyter writes
 * for the hidden server behind it put back), a plain Jupyter Server 2 sharing its runtime
 * directory, and the record of a server that has died. From a terminal the client lists the
 * live servers and asks which one is meant; from a kernel it finds its own gateway.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ObjectCloneResponseSchema, VersionListingSchema } from '@jupyter-store/contract';
import { labDefaults, startGatewayProcess, type IGatewayProcess } from '../support/gateway';
import { REPO_ROOT, startJupyterServer, type JupyterServerHandle } from '../support/jupyterServer';
import type { IKernelSocket } from '../support/kernel';
import {
  callGateway,
  connectKernel,
  openSession,
  pathWithVenv,
  runCli,
  runShellEscape,
  saveNotebook,
  terminalEnv,
  waitUntil
} from './storeCli';

jest.setTimeout(180_000);

interface IListedServer {
  pid: number;
  url: string;
  notebook_dir: string;
  root_dir: string;
  upstream_pid: number | null;
}

describe('discovery with a gateway, its hidden Jupyter Server, a plain server and a dead one', () => {
  let gateway: IGatewayProcess;
  let plain: JupyterServerHandle;
  let deadPid: number;

  beforeAll(async () => {
    gateway = await startGatewayProcess({ args: labDefaults(), env: { PATH: pathWithVenv() } });
    // A plain Jupyter Server writing its record into the same runtime directory.
    plain = await startJupyterServer({
      rootDir: gateway.rootDir,
      stateDir: dirname(gateway.state.runtime)
    });
    // The record Jupyter writes for the server behind the gateway (the gateway deletes it; a
    // client must still prefer the gateway if it is there), as Jupyter Server 2 writes it.
    const upstreamSocket = gateway.record.upstream_url.replace(/^unix:/, '');
    writeFileSync(
      join(gateway.state.runtime, `jpserver-${gateway.record.upstream_pid}.json`),
      JSON.stringify({
        base_url: '/',
        hostname: 'localhost',
        password: false,
        pid: gateway.record.upstream_pid,
        port: 0,
        root_dir: gateway.rootDir,
        secure: false,
        sock: upstreamSocket,
        token: gateway.token,
        url: `http+unix://${encodeURIComponent(upstreamSocket)}/`,
        version: '2.21.1'
      })
    );
    // A server that has exited without removing its record.
    const exited = spawnSync(
      process.execPath,
      ['-e', 'process.stdout.write(String(process.pid))'],
      {
        encoding: 'utf8',
        timeout: 30_000
      }
    );
    deadPid = Number(exited.stdout);
    writeFileSync(
      join(gateway.state.runtime, `jpserver-${deadPid}.json`),
      JSON.stringify({ ...gateway.record, pid: deadPid, port: 1, url: 'http://127.0.0.1:1/' })
    );
    await saveNotebook(gateway, 'nb.ipynb', 'first save');
    await saveNotebook(gateway, 'nb.ipynb', 'second save');
  });

  afterAll(async () => {
    await plain?.stop();
    await gateway?.stop();
  });

  test('jupyter store servers lists the gateway and the plain server, nothing else', async () => {
    const listed = await runCli(['servers', '--json'], terminalEnv(gateway));
    expect(listed.stderr).toBe('');
    expect(listed.status).toBe(0);
    const servers = JSON.parse(listed.stdout) as IListedServer[];
    expect(servers.map(server => server.pid).sort()).toEqual(
      [gateway.record.pid, plain.pid].sort()
    );
    const own = servers.find(server => server.pid === gateway.record.pid);
    expect(own).toMatchObject({
      url: gateway.record.url,
      upstream_pid: gateway.record.upstream_pid
    });
    // Jupyter Server 2 writes no notebook_dir: its root_dir stands in.
    const other = servers.find(server => server.pid === plain.pid);
    expect(other?.notebook_dir).toBe(plain.rootDir);
    expect(other?.upstream_pid).toBeNull();

    const text = await runCli(['servers'], terminalEnv(gateway));
    expect(text.stdout).toContain(
      `${gateway.record.url} :: ${gateway.rootDir}  (jupyter-store ${gateway.record.version}, pid ${gateway.record.pid})`
    );
    expect(text.stdout).toContain(`(Jupyter Server 2.`);
    expect(text.stdout.trim().split('\n')).toHaveLength(2);
  });

  test('from a terminal with two servers running, the client asks which one is meant', async () => {
    const result = await runCli(['versions', 'nb.ipynb'], terminalEnv(gateway));
    expect(result.status).toBe(1);
    expect(result.stdout).toBe('');
    const urls = [
      { pid: gateway.record.pid, url: gateway.record.url },
      { pid: plain.pid, url: `${plain.url}/` }
    ]
      .sort((a, b) => a.pid - b.pid)
      .map(server => server.url);
    expect(result.stderr).toBe(
      `jupyter-store versions: 2 Jupyter servers are running (${urls.join(', ')}) and none of ` +
        'them runs this process; name one with --url\n'
    );
  });

  test('--url picks one, with the token of its record', async () => {
    const listing = await waitForArchive(gateway);
    expect(listing.workspace.versions).toHaveLength(2);
    const result = await runCli(
      ['versions', 'nb.ipynb', '--json', '--url', gateway.record.url.replace(/\/$/, '')],
      terminalEnv(gateway)
    );
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(VersionListingSchema.parse(JSON.parse(result.stdout))).toEqual(listing);
  });

  test('a URL that no live record has is an error', async () => {
    const result = await runCli(['versions', 'nb.ipynb', '--url', 'http://127.0.0.1:1/'], {
      ...terminalEnv(gateway)
    });
    expect(result).toEqual({
      status: 1,
      stdout: '',
      stderr:
        'jupyter-store versions: No running server has the URL http://127.0.0.1:1/ ' +
        `(in ${gateway.state.runtime}); 'jupyter store servers' lists the running ones\n`
    });
  });

  describe('from a kernel of the gateway', () => {
    let kernel: IKernelSocket;

    beforeAll(async () => {
      const session = await openSession(gateway, 'nb.ipynb');
      kernel = await connectKernel(gateway, session.kernel.id);
    });

    afterAll(async () => {
      await kernel?.close();
    });

    test('!jupyter store versions finds its own server and notebook among all the records', async () => {
      const listing = await waitForArchive(gateway);
      const result = await runShellEscape(kernel, 'jupyter store versions');
      const count = listing.workspace.versions.length;
      expect(result).toEqual({
        status: 0,
        output: [
          'Versions of nb.ipynb in bucket jupyter-store, newest first:',
          `  archived (workspace/nb.ipynb): ${count} version${count === 1 ? '' : 's'}`,
          ...listing.workspace.versions.map(
            version =>
              `    ${version.object_version_id}  ${version.last_modified}  ${version.size} bytes` +
              (version.is_latest ? '  latest' : '')
          ),
          '  published (published/nb.ipynb): none',
          ''
        ].join('\n')
      });
    });

    test('the library, from a JavaScript process the kernel starts, does the same', async () => {
      const clientLib = join(REPO_ROOT, 'packages', 'client', 'lib', 'index.js');
      const script = [
        `const { StoreClient } = require(${JSON.stringify(clientLib)});`,
        'new StoreClient().versions().then(',
        '  listing => console.log(JSON.stringify(listing)),',
        '  error => { console.error(`${error.name}: ${error.message}`); process.exit(1); }',
        ');'
      ].join('\n');
      writeFileSync(join(gateway.rootDir, 'list-versions.js'), script);
      const result = await runShellEscape(kernel, `${process.execPath} list-versions.js`);
      expect(result.status).toBe(0);
      const listing = VersionListingSchema.parse(JSON.parse(result.output));
      expect(listing).toEqual(await waitForArchive(gateway));
    });

    test('the library in TypeScript restores the oldest version, into the server’s bucket by default', async () => {
      const clientSource = join(REPO_ROOT, 'packages', 'client', 'src', 'index.ts');
      const script = [
        `import { StoreClient } from ${JSON.stringify(clientSource)};`,
        'async function restoreOldest(): Promise<void> {',
        '  const store = new StoreClient();',
        '  const listing = await store.versions();',
        '  const oldest = listing.workspace.versions[listing.workspace.versions.length - 1];',
        '  const model = await store.cloneObject({',
        '    key: listing.workspace.object_key,',
        '    versionId: oldest.object_version_id,',
        "    targetPath: 'restored.ipynb'",
        '  });',
        '  console.log(JSON.stringify(model));',
        '}',
        'restoreOldest().catch((error: Error) => {',
        '  console.error(`${error.name}: ${error.message}`);',
        '  process.exit(1);',
        '});'
      ].join('\n');
      writeFileSync(join(gateway.rootDir, 'restore.ts'), script);
      const listing = await waitForArchive(gateway);
      const tsx = join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
      const result = await runShellEscape(kernel, `${tsx} restore.ts`);
      expect(result.status).toBe(0);
      const model = ObjectCloneResponseSchema.parse(JSON.parse(result.output));
      expect(model).toMatchObject({
        path: 'restored.ipynb',
        object_bucket: 'jupyter-store',
        object_key: 'workspace/nb.ipynb',
        object_version_id: listing.workspace.versions.at(-1)?.object_version_id
      });
      expect(readFileSync(join(gateway.rootDir, 'restored.ipynb'), 'utf8')).toContain('first save');
    });
  });
});

/** The version listing of nb.ipynb once both its saves have been archived. */
async function waitForArchive(
  gateway: IGatewayProcess
): Promise<ReturnType<typeof VersionListingSchema.parse>> {
  let listing: ReturnType<typeof VersionListingSchema.parse> | undefined;
  await waitUntil(async () => {
    const answer = await callGateway(gateway, 'GET', 'api/store/versions/nb.ipynb');
    listing = VersionListingSchema.parse(answer.body);
    return listing.workspace.versions.length === 2;
  });
  if (!listing) throw new Error('no version listing');
  return listing;
}
