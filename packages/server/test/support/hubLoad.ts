/**
 * Many users saving through a real Hub, for the load test and `npm run bench:hub`: a per-user
 * API token from the Hub's API, a schedule of saves per user (one notebook each, a save every
 * interval, never two of one user at once, as an autosaving JupyterLab sends them), each save
 * carrying its user and sequence number in the notebook's metadata, and the archive read back
 * from the bucket in version order, so that what the users were told can be compared with what
 * was archived.
 */
import { GetObjectCommand, ListObjectVersionsCommand, type S3Client } from '@aws-sdk/client-s3';
import { rm } from 'node:fs/promises';
import type { IDistributedMinio } from './distributedMinio';
import { ecosystemBin } from './ecosystem';
import { singleuserConfigDir, startHub, type IHub } from './hub';
import { withParentDeathSignal } from './objectServers';

/** Where the sequence number of a save is, in the notebook's metadata. */
const METADATA_KEY = 'jupyter_store_load';

/** One save as the client saw it. */
export interface ISaveOutcome {
  readonly user: string;
  readonly seq: number;
  /**
   * When the PUT was sent and when its answer (or failure) arrived: milliseconds since the
   * epoch, to the microsecond ({@link now}), comparable with the object store's clock.
   */
  readonly sentAt: number;
  readonly answeredAt: number;
  /** The HTTP status; 0 when no answer came (connection error, time-out). */
  readonly status: number;
  /** What went wrong, for a save that was not acknowledged. */
  readonly error?: string;
}

/** The wall clock with the precision of `performance.now()`. */
export function now(): number {
  return performance.timeOrigin + performance.now();
}

/** Whether the user was told that the save succeeded. */
export function acknowledged(outcome: ISaveOutcome): boolean {
  return outcome.status === 200 || outcome.status === 201;
}

/** One archived version of a user's notebook, as the bucket lists it. */
export interface IArchivedSave {
  readonly key: string;
  readonly versionId: string;
  readonly lastModified: number;
  readonly size: number;
  /** The user and sequence number in the version's notebook. */
  readonly user: string;
  readonly seq: number;
}

/** Options of {@link runSaveSchedule}. */
export interface ISaveScheduleOptions {
  readonly hub: IHub;
  /** Each user's API token ({@link userTokens}). */
  readonly tokens: ReadonlyMap<string, string>;
  /** The notebook every user saves, relative to their root. */
  readonly path: string;
  readonly intervalMs: number;
  readonly durationMs: number;
  /** The size of the notebook's code cell, in bytes; default 8 KiB. */
  readonly cellBytes?: number;
  /** How long one save may take before the client gives up; default 30 s. */
  readonly timeoutMs?: number;
}

/**
 * A token for each user, made by the admin service through the Hub's API (`POST
 * /hub/api/users/<name>/tokens`), with the user's own permissions, as a user makes one on the
 * Hub's token page for their scripts.
 */
export async function userTokens(
  hub: IHub,
  users: readonly string[]
): Promise<Map<string, string>> {
  const tokens = new Map<string, string>();
  for (const user of users) {
    const response = await hub.api('POST', `users/${encodeURIComponent(user)}/tokens`, {
      note: 'load',
      expires_in: 3600
    });
    if (response.status !== 201 && response.status !== 200) {
      throw new Error(`POST users/${user}/tokens: ${response.status} ${await response.text()}`);
    }
    tokens.set(user, ((await response.json()) as { token: string }).token);
  }
  return tokens;
}

/** The contents-API body of save `seq` of `user`: a notebook with a code cell and an output. */
export function loadSaveBody(user: string, seq: number, cellBytes = 8192): string {
  const line = `x = ${JSON.stringify(user)}  # ${'-'.repeat(60)}\n`;
  const source = line.repeat(Math.max(1, Math.ceil(cellBytes / line.length)));
  return JSON.stringify({
    type: 'notebook',
    content: {
      cells: [
        {
          cell_type: 'code',
          id: 'load-cell',
          metadata: {},
          execution_count: seq,
          source,
          outputs: [{ output_type: 'stream', name: 'stdout', text: `save ${seq}\n` }]
        }
      ],
      metadata: { [METADATA_KEY]: { user, seq } },
      nbformat: 4,
      nbformat_minor: 5
    }
  });
}

/**
 * Every user saves `path` every `intervalMs` for `durationMs`, through the Hub's proxy with
 * their token. The users start spread over one interval; a save that is still running when the
 * next is due delays it (one save of a user at a time, so sequence order is save order).
 *
 * @returns every save, answered or not, in the order they were sent.
 */
export async function runSaveSchedule(options: ISaveScheduleOptions): Promise<ISaveOutcome[]> {
  const { hub, tokens, path, intervalMs, durationMs } = options;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const outcomes: ISaveOutcome[] = [];
  const users = [...tokens.keys()];
  const start = Date.now();
  const end = start + durationMs;
  const sleepUntil = (at: number): Promise<void> =>
    new Promise(resolve => setTimeout(resolve, Math.max(0, at - Date.now())));
  await Promise.all(
    users.map(async (user, index) => {
      const url = `${hub.url}/user/${encodeURIComponent(user)}/api/contents/${path}`;
      let due = start + (index * intervalMs) / users.length;
      for (let seq = 1; due < end; seq++) {
        await sleepUntil(due);
        const sentAt = now();
        let status = 0;
        let error: string | undefined;
        try {
          const response = await fetch(url, {
            method: 'PUT',
            headers: {
              authorization: `token ${tokens.get(user)}`,
              'content-type': 'application/json'
            },
            body: loadSaveBody(user, seq, options.cellBytes),
            signal: AbortSignal.timeout(timeoutMs)
          });
          const text = await response.text();
          status = response.status;
          if (status !== 200 && status !== 201) error = text.slice(0, 300);
        } catch (caught) {
          error = (caught as Error).message;
        }
        outcomes.push({ user, seq, sentAt, answeredAt: now(), status, error });
        due += intervalMs;
      }
    })
  );
  return outcomes.sort((a, b) => a.sentAt - b.sentAt);
}

/**
 * Every version under `prefix` in the bucket, oldest first, with the user and sequence number
 * each one's notebook carries (every version's body is read).
 */
export async function archivedSaves(
  s3: S3Client,
  bucket: string,
  prefix: string
): Promise<IArchivedSave[]> {
  const listed: Array<{ key: string; versionId: string; lastModified: number; size: number }> = [];
  let keyMarker: string | undefined;
  let versionIdMarker: string | undefined;
  do {
    const page = await s3.send(
      new ListObjectVersionsCommand({
        Bucket: bucket,
        Prefix: prefix,
        KeyMarker: keyMarker,
        VersionIdMarker: versionIdMarker
      })
    );
    for (const version of page.Versions ?? []) {
      listed.push({
        key: version.Key ?? '',
        versionId: version.VersionId ?? '',
        lastModified: version.LastModified?.getTime() ?? 0,
        size: version.Size ?? 0
      });
    }
    keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
    versionIdMarker = page.IsTruncated ? page.NextVersionIdMarker : undefined;
  } while (keyMarker !== undefined);
  // S3 lists each key's versions newest first.
  listed.reverse();
  const saves: IArchivedSave[] = [];
  for (const version of listed) {
    const object = await s3.send(
      new GetObjectCommand({ Bucket: bucket, Key: version.key, VersionId: version.versionId })
    );
    const notebook = JSON.parse((await object.Body?.transformToString('utf8')) ?? '{}') as {
      metadata?: Record<string, { user?: string; seq?: number }>;
    };
    const stamp = notebook.metadata?.[METADATA_KEY] ?? {};
    saves.push({ ...version, user: stamp.user ?? '', seq: stamp.seq ?? -1 });
  }
  return saves;
}

/**
 * What is wrong with one user's archive, given their saves: every acknowledged save must be a
 * version under the user's prefix, in save order, the newest version being the last acknowledged
 * save (saves that were not acknowledged may or may not have been archived). Empty when nothing.
 */
export function archiveProblems(
  user: string,
  prefixKey: string,
  outcomes: readonly ISaveOutcome[],
  archived: readonly IArchivedSave[]
): string[] {
  const problems: string[] = [];
  const mine = outcomes.filter(outcome => outcome.user === user);
  const acked = mine.filter(acknowledged).map(outcome => outcome.seq);
  const placed = (version: IArchivedSave): boolean =>
    version.key === prefixKey && version.user === user;
  for (const version of archived.filter(v => !placed(v))) {
    problems.push(`${version.key} (${version.versionId}) holds ${version.user}'s save`);
  }
  // Only a version in its place counts as the save archived.
  const seqs = archived.filter(placed).map(version => version.seq);
  for (let i = 1; i < seqs.length; i++) {
    if (seqs[i] <= seqs[i - 1]) problems.push(`save ${seqs[i]} archived after ${seqs[i - 1]}`);
  }
  const archivedSet = new Set(seqs);
  const lost = acked.filter(seq => !archivedSet.has(seq));
  if (lost.length > 0) problems.push(`acknowledged saves not archived: ${lost.join(', ')}`);
  const sent = new Set(mine.map(outcome => outcome.seq));
  const unknown = seqs.filter(seq => !sent.has(seq));
  if (unknown.length > 0) problems.push(`versions of saves never sent: ${unknown.join(', ')}`);
  return problems.map(problem => `${user}: ${problem}`);
}

/**
 * Lines of `jupyterhub_config.py` that give each user of `endpointOf` their own object-store
 * endpoint (`STORE_OBJECT_ENDPOINT_URL`: the nodes of a cluster shared out, as a load balancer
 * would) and make each user of `plainUsers` run plain `jupyterhub-singleuser`, no gateway, with
 * the same Hub, environment and root.
 */
export function loadHubConfig(options: {
  endpointOf?: Readonly<Record<string, string>>;
  plainUsers?: readonly string[];
}): string {
  const plain = withParentDeathSignal([ecosystemBin('jupyterhub-singleuser')], 'TERM');
  return `
_load_endpoints = ${JSON.stringify(options.endpointOf ?? {})}
_load_plain_users = set(${JSON.stringify(options.plainUsers ?? [])})
def _load_pre_spawn(spawner):
    name = spawner.user.name
    if name in _load_endpoints:
        spawner.environment = {**spawner.environment, 'STORE_OBJECT_ENDPOINT_URL': _load_endpoints[name]}
    if name in _load_plain_users:
        spawner.cmd = ${JSON.stringify(plain)}
        spawner.args = ${JSON.stringify(process.getuid?.() === 0 ? ['--allow-root'] : [])}
c.Spawner.pre_spawn_hook = _load_pre_spawn
`;
}

/** Options of {@link startLoadHub}. */
export interface ILoadHubOptions {
  /** The cluster the gateways archive to; user i talks to node i modulo the nodes. */
  readonly cluster: IDistributedMinio;
  readonly bucket: string;
  /** Users whose server is `jupyter-store singleuser`. */
  readonly users: readonly string[];
  /** Users whose server is plain `jupyterhub-singleuser`. */
  readonly plainUsers?: readonly string[];
  /** More `--StoreSettings.<name>=<value>` arguments of every gateway. */
  readonly storeArgs?: readonly string[];
}

/** A Hub with every user's server started and a token per user. */
export interface ILoadHub {
  readonly hub: IHub;
  readonly tokens: ReadonlyMap<string, string>;
  /** The object-store endpoint of each gateway user. */
  readonly endpointOf: Readonly<Record<string, string>>;
  /** How long starting every server took, in ms. */
  readonly startMs: number;
  /** Stop the Hub (and every server) and delete its files. */
  stop(): Promise<void>;
}

/**
 * Start a Hub whose gateways archive to `cluster` under `workspace/{username}`, start every
 * user's server at once, and make a token for each.
 *
 * #### Notes
 * Every server gets {@link singleuserConfigDir}'s Jupyter configuration: the gateways answer saves
 * themselves, and plain servers run the same stock contents manager.
 */
export async function startLoadHub(options: ILoadHubOptions): Promise<ILoadHub> {
  const { cluster, users } = options;
  const configDir = await singleuserConfigDir();
  let hub: IHub | undefined;
  const stop = async (): Promise<void> => {
    await hub?.stop();
    await rm(configDir, { recursive: true, force: true });
  };
  try {
    const endpointOf = Object.fromEntries(
      users.map((user, index) => [user, cluster.endpoints[index % cluster.endpoints.length]])
    );
    hub = await startHub({
      singleuserArgs: [
        `--StoreSettings.object_bucket=${options.bucket}`,
        '--StoreSettings.workspace_prefix=workspace/{username}',
        ...(options.storeArgs ?? [])
      ],
      singleuserEnv: {
        STORE_OBJECT_ACCESS_KEY_ID: cluster.accessKeyId,
        STORE_OBJECT_SECRET_ACCESS_KEY: cluster.secretAccessKey,
        STORE_OBJECT_REGION_NAME: cluster.region,
        JUPYTER_CONFIG_PATH: configDir
      },
      extraConfig: loadHubConfig({ endpointOf, plainUsers: options.plainUsers })
    });
    const everyone = [...users, ...(options.plainUsers ?? [])];
    const started = Date.now();
    await Promise.all(everyone.map(user => hub!.startServer(user, 300_000)));
    const startMs = Date.now() - started;
    const tokens = await userTokens(hub, everyone);
    return { hub, tokens, endpointOf, startMs, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
