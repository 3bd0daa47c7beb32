/**
 * The first save after start-up, against later saves: plain Jupyter Server, and `jupyter-store
 * lab` with archiving off and archiving to MinIO, each started fresh, then sent the same saves
 * of one ~100 KB notebook as soon as it reports ready.
 *
 * #### Notes
 * A server is ready when its runtime record (gateway) or its API (Jupyter) answers; the first
 * save is sent right away, so what it pays beyond a later save is what the server left for the
 * first request to do (lazy module loads, schema compiles, a worker's start, a database's open,
 * the object store's first connection). Each save is a PUT over an existing file (200) of its own
 * path, so that no save finds a checkpoint made by an earlier one; the first of each server goes
 * to a path of its own too. Servers are started one after another, so that they do not compete.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { labDefaults, startGatewayProcess } from '../../test/support/gateway';
import { startJupyterServer } from '../../test/support/jupyterServer';
import {
  archiveSettings,
  createVersionedBucket,
  startMinio,
  type IObjectServer
} from '../../test/support/objectServers';
import { ContentsClient } from '../client';
import { formatMs } from '../stats';
import { generateNotebook } from '../notebook';

/** The servers compared. */
export type FirstSaveServer = 'jupyter' | 'gateway, archiving off' | 'gateway, archiving on';

/** The figures of one server: its first save and the saves after it, in milliseconds. */
export interface IFirstSaveResult {
  readonly server: FirstSaveServer;
  /** Each start's first save. */
  readonly first: number[];
  /** The saves after the first, over all starts. */
  readonly later: number[];
}

/** Options of {@link measureFirstSaves}. */
export interface IFirstSaveOptions {
  /** A directory for the servers' roots and state. */
  readonly baseDir: string;
  /** Starts per server (each gives one first save). */
  readonly starts: number;
  /** Saves after the first, per start. */
  readonly laterSaves: number;
  /** Servers to measure; all by default (archiving on needs MinIO). */
  readonly servers?: readonly FirstSaveServer[];
  /** Progress lines. */
  readonly log?: (line: string) => void;
}

const BUCKET = 'first-save';

/** Start each server `starts` times and time its first save and the saves after it. */
export async function measureFirstSaves(options: IFirstSaveOptions): Promise<IFirstSaveResult[]> {
  const servers = options.servers ?? ['jupyter', 'gateway, archiving off', 'gateway, archiving on'];
  const notebook = generateNotebook(100 * 1024);
  const body = Buffer.from(
    JSON.stringify({ type: 'notebook', format: 'json', content: notebook.model })
  );
  let minio: IObjectServer | undefined;
  const results: IFirstSaveResult[] = [];
  try {
    if (servers.includes('gateway, archiving on')) {
      minio = await startMinio();
      await createVersionedBucket(minio, BUCKET);
    }
    for (const server of servers) {
      const result: IFirstSaveResult = { server, first: [], later: [] };
      for (let start = 0; start < options.starts; start++) {
        const rootDir = join(options.baseDir, `${server.replace(/\W+/g, '-')}-${start}`, 'root');
        await mkdir(join(rootDir, 'saves'), { recursive: true });
        // Every save goes over an existing file of its own, as a save of an open notebook does.
        for (let index = 0; index <= options.laterSaves; index++) {
          await writeFile(join(rootDir, 'saves', `nb-${index}.ipynb`), notebook.diskBytes);
        }
        const times = await savesAfterStart(server, rootDir, body, options.laterSaves, minio);
        result.first.push(times[0]);
        result.later.push(...times.slice(1));
        options.log?.(
          `${server}, start ${start + 1}: first save ${formatMs(times[0])}, ` +
            `then ${times.slice(1).map(formatMs).join(', ')}`
        );
      }
      results.push(result);
    }
  } finally {
    await minio?.dispose();
  }
  return results;
}

async function savesAfterStart(
  server: FirstSaveServer,
  rootDir: string,
  body: Buffer,
  laterSaves: number,
  minio: IObjectServer | undefined
): Promise<number[]> {
  let client: ContentsClient;
  let stop: () => Promise<unknown>;
  if (server === 'jupyter') {
    const jupyter = await startJupyterServer({ rootDir, stateDir: join(rootDir, '..', 'state') });
    client = new ContentsClient(jupyter.api(''), jupyter.authHeaders);
    stop = () => jupyter.stop();
  } else {
    const archive =
      server === 'gateway, archiving on' && minio !== undefined
        ? archiveSettings(minio, BUCKET)
        : { args: ['--StoreSettings.workspace_prefix='], env: {} };
    const args = [...labDefaults(), ...archive.args];
    const env = archive.env;
    const gateway = await startGatewayProcess({ args, rootDir, env });
    client = new ContentsClient(gateway.url(''), { Authorization: `token ${gateway.token}` });
    stop = () => gateway.stop();
  }
  try {
    const times: number[] = [];
    for (let index = 0; index <= laterSaves; index++) {
      const response = await client.send('PUT', client.contentsPath(`saves/nb-${index}.ipynb`), {
        body
      });
      if (response.status !== 200) {
        throw new Error(
          `${server}: save ${index} answered ${response.status}: ` +
            (response.body?.subarray(0, 300).toString('utf8') ?? '')
        );
      }
      times.push(response.ms);
    }
    return times;
  } finally {
    client.close();
    await stop();
  }
}
