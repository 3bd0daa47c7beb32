import {
  cloneLinkUrl,
  StoreEndpoints,
  trimSlashes,
  type DeletedListing,
  type DiffRequest,
  type EndpointRequest,
  type EndpointResponse,
  type FsCloneRequest,
  type FsCloneResponse,
  type NamedVersion,
  type NameVersionRequest,
  type NotebookDiff,
  type ObjectCloneRequest,
  type ObjectCloneResponse,
  type PublishResult,
  type RestoreResponse,
  type StoreEndpointName,
  type StoreInfo,
  type VersionContent,
  type VersionListing
} from '@jupyter-store/contract';
import { PageConfig } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { nullTranslator, type TranslationBundle } from '@jupyterlab/translation';
import { requestEndpoint } from './request';
import { TRANSLATION_DOMAIN } from './tokens';

export { trimSlashes } from '@jupyter-store/contract';

/** Where the store keeps things: the bucket and the prefixes of archived and published copies. */
export interface IStoreLayout {
  readonly bucket: string;
  readonly workspacePrefix: string;
  readonly publishedPrefix: string;
}

/**
 * The store API of the jupyter-store gateway, `{base}api/store`: each call is one of the
 * contract's endpoints, and every answer is checked against its schema.
 */
export class StoreClient {
  /**
   * @param serverSettings - the application's server settings (base URL, auth, XSRF).
   * @param trans - the translation of the client's own error messages.
   */
  constructor(
    readonly serverSettings: ServerConnection.ISettings,
    private readonly _trans: TranslationBundle = nullTranslator.load(TRANSLATION_DOMAIN)
  ) {}

  /**
   * `GET api/store`: feature detection, with the archive queue's state. A `background` poll is
   * sent with `no_track_activity`, so that an open tab alone does not keep the server from
   * being culled as idle.
   */
  info(options: { background?: boolean } = {}): Promise<StoreInfo> {
    return this._call('info', options.background ? { query: { no_track_activity: '1' } } : {});
  }

  /**
   * `GET api/store/versions/<path>[?limit=…][&next=…]`: one page of the archived and published
   * versions, newest first, at most `limit` of each copy (the server's default, 100, when left
   * out), from the page `next` names (the first when left out). The answer's `next` names the
   * page after; null (or absent, from an older server) on the last page.
   */
  versionsPage(
    path: string,
    page: { limit?: number; next?: string } = {}
  ): Promise<VersionListing> {
    return this._call('versionsPage', { path: trimSlashes(path), query: page });
  }

  /**
   * `GET api/store/versions/<path>?object_version_id=…&copy=…`: the notebook of one archived
   * (`workspace`) or published version.
   */
  versionContent(
    path: string,
    versionId: string,
    copy: 'workspace' | 'published'
  ): Promise<VersionContent> {
    return this._call('versionContent', {
      path: trimSlashes(path),
      query: { object_version_id: versionId, copy }
    });
  }

  /**
   * `GET api/store/diff/<path>?base=…&remote=…`: the diff between two notebooks the refs name
   * (`current`, an archived version id, `published:<version id>`); a ref left out takes the
   * server's default (remote: `current`, base: the newest archived version).
   */
  diff(path: string, refs: { base?: string; remote?: string } = {}): Promise<NotebookDiff> {
    return this._call('diff', { path: trimSlashes(path), query: refs });
  }

  /**
   * `POST api/store/diff`: the diff between two notebooks, each named by a ref or given inline
   * (what the browser has not saved).
   */
  diffInline(request: DiffRequest): Promise<NotebookDiff> {
    return this._call('diffInline', { body: request });
  }

  /**
   * `PUT api/store/publish/<path>`: publish a notebook (nbformat 4, as JSON) at
   * `<published_prefix>/<path>`.
   */
  publish(path: string, notebook: unknown): Promise<PublishResult> {
    // The server validates the notebook and names what is wrong; the client sends it as it is.
    const content = notebook as Record<string, unknown>;
    return this._call('publish', {
      path: trimSlashes(path),
      body: { type: 'notebook', format: 'json', content }
    });
  }

  /** `POST api/store/clone`: copy an object (or one version of it) into the contents. */
  cloneObject(request: ObjectCloneRequest): Promise<ObjectCloneResponse> {
    return this._call('cloneObject', { body: request });
  }

  /** `POST api/store/fs-clone`: copy a file from below the clone base directory. */
  cloneFromFileSystem(request: FsCloneRequest): Promise<FsCloneResponse> {
    return this._call('cloneFromFileSystem', { body: request });
  }

  /**
   * `GET api/store/deleted[?prefix=…]`: the recently deleted notebooks, newest deletion first.
   */
  deleted(query: { prefix?: string; limit?: number } = {}): Promise<DeletedListing> {
    return this._call('deleted', { query });
  }

  /**
   * `POST api/store/restore`: write a deleted notebook back (its last version unless
   * `versionId` names one); the answer's `path` is where it landed.
   */
  restore(path: string, versionId?: string): Promise<RestoreResponse> {
    return this._call('restore', {
      body: { path: trimSlashes(path), object_version_id: versionId }
    });
  }

  /**
   * `POST api/store/named/<path>`: name an archived version (the newest, once the last save is
   * archived, unless `object_version_id` names one), replacing the name it had.
   */
  nameVersion(path: string, request: NameVersionRequest): Promise<NamedVersion> {
    return this._call('nameVersion', { path: trimSlashes(path), body: request });
  }

  /**
   * The landing-page URL that clones an object into whoever opens it:
   * `{base}store/clone?object_bucket=…&object_key=…[&object_version_id=…]`, or on a JupyterHub
   * `<hub>/hub/user-redirect/store/clone?…`, which opens it in the recipient's own server (see
   * `cloneLinkUrl`).
   */
  cloneLink(bucket: string, key: string, versionId?: string | null): string {
    const hubPrefix = PageConfig.getOption('hubPrefix');
    return cloneLinkUrl({
      serverUrl: PageConfig.getBaseUrl(),
      hub: hubPrefix ? { hubPrefix, hubHost: PageConfig.getOption('hubHost') } : null,
      page: 'store/clone',
      query: { object_bucket: bucket, object_key: key, object_version_id: versionId }
    });
  }

  /** Call the contract's endpoint of this name with the application's server settings. */
  private _call<K extends StoreEndpointName>(
    name: K,
    request: EndpointRequest<(typeof StoreEndpoints)[K]>
  ): Promise<EndpointResponse<(typeof StoreEndpoints)[K]>> {
    return requestEndpoint(this.serverSettings, StoreEndpoints[name], request, this._trans);
  }
}

/** The bucket and prefixes that feature detection reports. */
export function layoutOf(info: StoreInfo): IStoreLayout {
  return {
    bucket: info.object_bucket ?? '',
    workspacePrefix: trimSlashes(info.workspace_prefix),
    publishedPrefix: trimSlashes(info.published_prefix)
  };
}

/** `<prefix>/<path>` as the server joins keys: slashes trimmed, empty parts dropped. */
export function joinKey(prefix: string, path: string): string {
  return [prefix, path]
    .map(trimSlashes)
    .filter(part => part !== '')
    .join('/');
}

/**
 * The contents path that `key` archives or publishes in this store, and which of the two it
 * is; null when the key is under neither prefix.
 */
export function pathOfKey(
  layout: IStoreLayout,
  bucket: string,
  key: string
): { path: string; kind: 'workspace' | 'published' } | null {
  if (bucket !== layout.bucket) return null;
  const candidates: ['workspace' | 'published', string][] = [
    ['published', layout.publishedPrefix],
    ['workspace', layout.workspacePrefix]
  ];
  // The longer prefix first: one may contain the other.
  candidates.sort((a, b) => b[1].length - a[1].length);
  for (const [kind, prefix] of candidates) {
    if (prefix === '') continue;
    if (key.startsWith(`${prefix}/`) && key.length > prefix.length + 1) {
      return { path: key.slice(prefix.length + 1), kind };
    }
  }
  const workspaceIsRoot = candidates.find(([kind]) => kind === 'workspace')?.[1] === '';
  return workspaceIsRoot && key !== '' ? { path: key, kind: 'workspace' } : null;
}
