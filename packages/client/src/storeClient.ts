import {
  MAX_VERSIONS_PAGE_LIMIT,
  ContentsModelSchema,
  PublishRequestSchema,
  StoreEndpoints,
  trimSlashes,
  type DeletedListing,
  type FsCloneRequest,
  type FsCloneResponse,
  type NamedVersion,
  type NameVersionRequest,
  type NotebookDiff,
  type ObjectCloneRequest,
  type ObjectCloneResponse,
  type PublishResult,
  type RestoreResponse,
  type Retention,
  type RetentionRule,
  type StoreInfo,
  type VersionListing
} from '@jupyter-store/contract';
import { encodeApiPath, StoreConnection } from './connection';
import { findServer } from './discovery';
import { StoreClientError } from './errors';
import type { IProcessTable } from './processTree';
import type { ILiveServerRecord, ISession } from './records';
import { findCurrentSession } from './session';

/**
 * The store API of a running jupyter-store server, from code running in one of its kernels, a
 * terminal, or any script on the same machine.
 *
 * ```ts
 * const store = new StoreClient({ bucket: 'notebooks' });
 * await store.publish();                                    // the current notebook
 * await store.cloneObject({ key: 'published/team/report.ipynb' }); // into the server's root
 * ```
 *
 * #### Notes
 * Nothing happens when the module is imported or the client constructed: the server is found
 * (from the Jupyter runtime directory, no HTTP) at the first call, and each call makes only the
 * requests it needs. Every call expects one exact status and throws a `StoreError` (status,
 * message, reason) otherwise, a `NetworkError` when the server does not answer, a
 * `ServerNotFoundError` when no server can be chosen and a `CurrentNotebookError` when a call
 * needs the current notebook and it cannot be told.
 */
export class StoreClient {
  /**
   * @param options - the default bucket, and which server to use (found by discovery unless
   *   given).
   */
  constructor(options: StoreClient.IOptions = {}) {
    this.bucket = options.bucket;
    this._options = options;
  }

  /** The bucket `clone` uses when none is given; undefined means the server's own bucket. */
  readonly bucket: string | undefined;

  /**
   * The server this client talks to: the one given to the constructor, else the one found by
   * `findServer` (the server running the calling kernel or terminal, else the only one).
   *
   * @throws ServerNotFoundError when none can be chosen.
   */
  server(): Promise<StoreClient.IServer> {
    this._server ??= Promise.resolve().then(() => Private.resolveServer(this._options));
    return this._server;
  }

  /**
   * The notebook session of the kernel running this code.
   *
   * @throws CurrentNotebookError when there is none, or several notebooks share the kernel.
   */
  async currentNotebook(): Promise<ISession> {
    const server = await this.server();
    return findCurrentSession(await this._connection(), server, {
      env: this._options.env,
      processTable: this._options.processTable,
      startPid: this._options.startPid
    });
  }

  /** Feature detection: `GET {base}api/store` (release, features, reasons, archive status). */
  async info(): Promise<StoreInfo> {
    return (await this._connection()).call(StoreEndpoints.info, {});
  }

  /**
   * The bucket the server archives and publishes to, as feature detection reports it; asked
   * once per client.
   *
   * @throws StoreClientError when the server has no bucket configured.
   */
  serverBucket(): Promise<string> {
    this._serverBucket ??= this.info().then(info => {
      if (info.object_bucket === null) {
        throw new StoreClientError(
          'The server has no object_bucket configured: give a bucket to clone from'
        );
      }
      return info.object_bucket;
    });
    this._serverBucket.catch(() => (this._serverBucket = undefined));
    return this._serverBucket;
  }

  /**
   * Copy an object (the latest version, or `versionId`) into the server's contents:
   * `POST {base}api/store/clone`.
   *
   * The bucket defaults to the client's, then to the server's own; the target to the key's file
   * name in the server's root. A taken name becomes `name-1.ext`, `name-2.ext`, …: nothing is
   * overwritten.
   *
   * @returns the contents model of the created item plus where it came from.
   */
  async cloneObject(request: StoreClient.ICloneRequest): Promise<ObjectCloneResponse> {
    const bucket = request.bucket ?? this.bucket ?? (await this.serverBucket());
    const body: ObjectCloneRequest = { object_bucket: bucket, object_key: request.key };
    if (request.versionId !== undefined) body.object_version_id = request.versionId;
    if (request.targetPath !== undefined) body.target_path = trimSlashes(request.targetPath);
    return (await this._connection()).call(StoreEndpoints.cloneObject, { body });
  }

  /**
   * Copy a file from below the server's `fs_cloning_basedir` into its contents:
   * `POST {base}api/store/fs-clone`. The target defaults to the file's name in the root.
   */
  async cloneFromFileSystem(request: StoreClient.IFsCloneRequest): Promise<FsCloneResponse> {
    const body: FsCloneRequest = { relpath: request.relpath };
    if (request.targetPath !== undefined) body.target_path = trimSlashes(request.targetPath);
    return (await this._connection()).call(StoreEndpoints.cloneFromFileSystem, { body });
  }

  /**
   * Publish a notebook (default: the current one) to the server's published prefix:
   * `PUT {base}api/store/publish/<path>`.
   *
   * #### Notes
   * What is published is the notebook as last saved on the server (read through the contents
   * API), not what an editor shows: unsaved changes are not included, and the result says when
   * the published copy was saved.
   */
  async publish(request: StoreClient.IPublishRequest = {}): Promise<StoreClient.IPublishResult> {
    const connection = await this._connection();
    const given = request.path === undefined ? undefined : trimSlashes(request.path);
    const notebookPath = given ?? (await this.currentNotebook()).path;
    const saved = await connection.request(
      'GET',
      `api/contents/${encodeApiPath(notebookPath)}?type=notebook&content=1`,
      { expect: 200, schema: ContentsModelSchema }
    );
    const body = PublishRequestSchema.safeParse({
      type: 'notebook',
      format: 'json',
      content: saved.content
    });
    if (!body.success) {
      throw new StoreClientError(
        `${notebookPath} was not read as a notebook, so it cannot be published`
      );
    }
    const published = await connection.call(StoreEndpoints.publish, {
      path: notebookPath,
      body: body.data
    });
    return {
      ...published,
      path: notebookPath,
      current_notebook: given === undefined,
      saved_at: saved.last_modified
    };
  }

  /**
   * Every archived and published version of a notebook (default: the current one), newest
   * first: `GET {base}api/store/versions/<path>` (the server's first page), then, following
   * `next` until the last page, pages of {@link MAX_VERSIONS_PAGE_LIMIT}. The answer is one
   * listing (its `next` null), as from a server that does not page.
   *
   * @throws StoreClientError if the server answers a token it answered before (a loop).
   */
  async versions(notebookPath?: string): Promise<VersionListing> {
    const target = await this._notebookPath(notebookPath);
    let page = await this.versionsPage(target);
    const listing: VersionListing = {
      ...page,
      workspace: { ...page.workspace, versions: [...page.workspace.versions] },
      published: { ...page.published, versions: [...page.published.versions] },
      next: null
    };
    const seen = new Set<string>();
    while (typeof page.next === 'string') {
      if (seen.has(page.next)) {
        throw new StoreClientError(
          `The server answered the same page token twice while listing the versions of ${target}`
        );
      }
      seen.add(page.next);
      page = await this.versionsPage(target, { limit: MAX_VERSIONS_PAGE_LIMIT, next: page.next });
      listing.workspace.versions.push(...page.workspace.versions);
      listing.published.versions.push(...page.published.versions);
    }
    return listing;
  }

  /**
   * One page of the versions of a notebook (default: the current one):
   * `GET {base}api/store/versions/<path>?limit=…&next=…`, at most `limit` versions of each copy
   * (the server's default, 100, when left out), from the page that `next` names (the first when
   * left out). Its `next` is the token of the page after, null on the last page.
   */
  async versionsPage(
    notebookPath?: string,
    options: { limit?: number; next?: string } = {}
  ): Promise<VersionListing> {
    const connection = await this._connection();
    const path = await this._notebookPath(notebookPath);
    return connection.call(StoreEndpoints.versionsPage, { path, query: options });
  }

  /**
   * What changed in a notebook (default: the current one) from one version to another:
   * `GET {base}api/store/diff/<path>?base=…&remote=…`, the base notebook and the diff that turns
   * it into the remote one, in nbdime's format.
   *
   * A ref is `current` (the file on the server's disk), an archived version id, or
   * `published:<version id>`. The server's defaults: `remote` is `current`, `base` the newest
   * archived version.
   */
  async diff(
    notebookPath?: string,
    refs: { base?: string; remote?: string } = {}
  ): Promise<NotebookDiff> {
    const connection = await this._connection();
    const path = await this._notebookPath(notebookPath);
    return connection.call(StoreEndpoints.diff, { path, query: refs });
  }

  /**
   * Name an archived version of a notebook (default: the current one), replacing the name it
   * had: `POST {base}api/store/named/<path>`. Without `object_version_id`, the server names the
   * newest version once the notebook's last save is archived.
   */
  async nameVersion(
    notebookPath: string | undefined,
    request: NameVersionRequest
  ): Promise<NamedVersion> {
    const connection = await this._connection();
    const path = await this._notebookPath(notebookPath);
    return connection.call(StoreEndpoints.nameVersion, { path, body: request });
  }

  /**
   * The retention rule of the server's workspace prefix (`GET {base}api/store/retention`), or
   * with `change` sets it (`PUT`) or, for null, removes it (`DELETE`); the bucket's other
   * lifecycle rules are kept either way.
   */
  async retention(change?: RetentionRule | null): Promise<Retention> {
    const connection = await this._connection();
    if (change === undefined) return connection.call(StoreEndpoints.retention, {});
    if (change === null) return connection.call(StoreEndpoints.clearRetention, {});
    return connection.call(StoreEndpoints.setRetention, { body: change });
  }

  /**
   * The recently deleted notebooks (`GET {base}api/store/deleted`), newest deletion first: all,
   * or those below the directory `prefix`; at most `limit` (the server's default 100).
   */
  async deleted(options: { prefix?: string; limit?: number } = {}): Promise<DeletedListing> {
    const connection = await this._connection();
    const prefix = options.prefix === undefined ? undefined : trimSlashes(options.prefix);
    return connection.call(StoreEndpoints.deleted, {
      query: { prefix: prefix === '' ? undefined : prefix, limit: options.limit }
    });
  }

  /**
   * Write an archived version of `path` back (`POST {base}api/store/restore`): the newest one
   * (for a deleted notebook, the newest before its delete) unless `versionId` names one. The
   * answer's `path` is where it landed: `name-1.ipynb` … when `path` exists again.
   */
  async restore(path: string, versionId?: string): Promise<RestoreResponse> {
    const connection = await this._connection();
    return connection.call(StoreEndpoints.restore, {
      body: { path: trimSlashes(path), object_version_id: versionId }
    });
  }

  /** The path given, trimmed, or the current notebook's. */
  private async _notebookPath(notebookPath: string | undefined): Promise<string> {
    return notebookPath === undefined
      ? (await this.currentNotebook()).path
      : trimSlashes(notebookPath);
  }

  private async _connection(): Promise<StoreConnection> {
    const server = await this.server();
    this._connectionInstance ??= new StoreConnection({
      url: server.url,
      token: server.token,
      fetch: this._options.fetch,
      timeoutMs: this._options.timeoutMs
    });
    return this._connectionInstance;
  }

  private readonly _options: StoreClient.IOptions;
  private _server: Promise<StoreClient.IServer> | undefined;
  private _serverBucket: Promise<string> | undefined;
  private _connectionInstance: StoreConnection | undefined;
}

export namespace StoreClient {
  /** A server named by its address rather than found by discovery. */
  export interface IServerAddress {
    /** Its URL, base URL included. */
    url: string;
    /**
     * Its token. When left out, the token is read from the running server's record with this
     * URL.
     */
    token?: string;
    /** Its root directory, to read `$JPY_SESSION_NAME`; unknown by default. */
    root_dir?: string;
  }

  /** The server a client uses: its URL, token and root directory. */
  export type IServer = Pick<ILiveServerRecord, 'url' | 'token' | 'root_dir'>;

  export interface IOptions {
    /** The default bucket of `clone`. */
    bucket?: string;
    /** The server: a record from discovery, or an address; discovered when left out. */
    server?: ILiveServerRecord | IServerAddress;
    /** Where discovery looks for records; default the Jupyter runtime directory. */
    runtimeDir?: string;
    /** The environment; default `process.env`. */
    env?: NodeJS.ProcessEnv;
    /** The process table for kernel and server detection; default `/proc`. */
    processTable?: IProcessTable;
    /** The process whose kernel and server are wanted; default this process. */
    startPid?: number;
    /** The fetch to use; default the global one. */
    fetch?: typeof fetch;
    /** How long one request may take, in milliseconds; default two minutes. */
    timeoutMs?: number;
  }

  export interface ICloneRequest {
    /** Default: the client's bucket, else the server's. */
    bucket?: string;
    key: string;
    /** Default: the latest version. */
    versionId?: string;
    /** A path below the server's root; default the key's file name, in the root. */
    targetPath?: string;
  }

  export interface IFsCloneRequest {
    /** The file's path relative to the server's `fs_cloning_basedir`. */
    relpath: string;
    /** A path below the server's root; default the file's name, in the root. */
    targetPath?: string;
  }

  export interface IPublishRequest {
    /** The notebook's path below the server's root; default the current notebook. */
    path?: string;
  }

  /** Where a notebook was published, and which copy of it. */
  export interface IPublishResult extends PublishResult {
    /** The notebook's path on the server. */
    readonly path: string;
    /** True when the path was not given and the current notebook was published. */
    readonly current_notebook: boolean;
    /**
     * When the published copy was saved (ISO 8601): changes made in an editor since are not
     * in it.
     */
    readonly saved_at: string;
  }
}

namespace Private {
  export function resolveServer(options: StoreClient.IOptions): StoreClient.IServer {
    const given = options.server;
    if (given && given.token !== undefined) {
      return { url: given.url, token: given.token, root_dir: given.root_dir ?? '' };
    }
    const found = findServer({
      url: given?.url,
      runtimeDir: options.runtimeDir,
      env: options.env,
      processTable: options.processTable,
      startPid: options.startPid
    });
    if (!/^https?:\/\//.test(found.url)) {
      throw new StoreClientError(
        `The server ${found.url} (pid ${found.pid}) listens on a unix socket only, which the ` +
          'client cannot use: run it with a TCP port, or put jupyter-store in front of it'
      );
    }
    return { url: found.url, token: hubToken(found.token, options.env), root_dir: found.root_dir };
  }

  /**
   * On JupyterHub the runtime record of a single-user server carries no token (writing it would
   * put it in the hub's log), but kernels and terminals get `$JUPYTERHUB_API_TOKEN`, which the
   * gateway accepts: it asks the single-user server whose token it is.
   */
  function hubToken(recordToken: string, env: NodeJS.ProcessEnv = process.env): string {
    return recordToken || env.JUPYTERHUB_API_TOKEN || '';
  }
}
