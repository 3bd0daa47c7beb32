import type { CheckpointModel } from '@jupyter-store/contract';
import { httpErrors } from '../http/errorCatalogue';
import { objectKey } from '../storage/keys';
import { ObjectStoreError, type IObjectStore } from '../storage/objectStore';
import { CHECKPOINT_ID } from './checkpoints';
import { formatTimestamp } from './model';

/**
 * The tag of the archived versions a checkpoint was asked of (`POST …/checkpoints`): a user's
 * mark that this state mattered, which tools reading the bucket can find.
 */
export const CHECKPOINT_TAG = { name: 'label', value: 'checkpoint' } as const;

/**
 * A file's archived versions offered as its checkpoints: the object store keeps every save, so
 * File › Revert to Checkpoint can go back to any of them, where Jupyter keeps one copy.
 *
 * #### Notes
 * A checkpoint's id is the object version id, and its time the version's. Jupyter's own file
 * checkpoint is not listed beside them: it is a copy of a save the archive already holds, and
 * listing it too would show the same state twice. Its id (`checkpoint`) still restores and
 * deletes as in Jupyter, for clients that kept it.
 *
 * Versions are immutable, so deleting one is refused (409) rather than pretending to succeed.
 */
export class VersionCheckpoints {
  constructor(options: VersionCheckpoints.IOptions) {
    this._store = options.store;
    this._bucket = options.bucket;
    this._prefix = options.prefix;
    this._covers = options.covers;
    this._max = options.max;
    this._settled = options.settled ?? (() => Promise.resolve());
    this._log = options.log ?? (() => undefined);
  }

  /** Whether the archive keeps versions of this API path. */
  covers(apiPath: string): boolean {
    return this._covers(apiPath);
  }

  /** Whether an id names Jupyter's own file checkpoint rather than a version. */
  static isFileCheckpoint(checkpointId: string): boolean {
    return checkpointId === CHECKPOINT_ID;
  }

  /**
   * The newest archived versions of a path (at most the max), oldest first: the order of
   * Jupyter's checkpoint listing, which JupyterLab reverses to offer the newest first.
   */
  async list(apiPath: string): Promise<CheckpointModel[]> {
    const page = await this._store.listVersionPage(this._bucket, this._key(apiPath), {
      limit: this._max
    });
    return page.versions
      .filter(version => !version.deleteMarker)
      .map(version => ({
        id: version.versionId,
        last_modified: formatTimestamp(version.lastModified.getTime())
      }))
      .reverse();
  }

  /**
   * Label the current archived version a checkpoint (its tag {@link CHECKPOINT_TAG}) and answer
   * its checkpoint model, once the saves seen so far are archived (JupyterLab asks for a
   * checkpoint right after each save); null when the path has no archived version yet.
   */
  async current(apiPath: string): Promise<CheckpointModel | null> {
    await this._settled(apiPath);
    const page = await this._store.listVersionPage(this._bucket, this._key(apiPath), {
      limit: 1
    });
    const newest = page.versions[0];
    if (newest === undefined) return null;
    try {
      await this._label(this._key(apiPath), newest.versionId);
    } catch (error) {
      // The version is the checkpoint all the same (credentials without the tagging permission).
      this._log(`could not label ${apiPath}@${newest.versionId}: ${(error as Error).message}`);
    }
    return {
      id: newest.versionId,
      last_modified: formatTimestamp(newest.lastModified.getTime())
    };
  }

  /** The bytes of one archived version; 404 as Jupyter answers for an unknown checkpoint. */
  async read(apiPath: string, checkpointId: string): Promise<Buffer> {
    const object = await this._version(apiPath, checkpointId, (key, id) =>
      this._store.get(this._bucket, key, id)
    );
    return object.body;
  }

  /** Refuse to delete an archived version: the archive never loses a save. */
  async delete(apiPath: string, checkpointId: string): Promise<never> {
    // An id that is no version of the path is 404, as for any unknown checkpoint; a HEAD tells.
    await this._version(apiPath, checkpointId, (key, id) =>
      this._store.head(this._bucket, key, id)
    );
    throw httpErrors.versionCheckpointImmutable(
      `Checkpoint ${apiPath}@${checkpointId} is an archived version, which cannot be deleted`
    );
  }

  /** Add the checkpoint tag to a version's tags, unless it has it. */
  private async _label(key: string, versionId: string): Promise<void> {
    const tags = await this._store.getVersionTags(this._bucket, key, versionId);
    if (tags[CHECKPOINT_TAG.name] === CHECKPOINT_TAG.value) return;
    await this._store.putVersionTags(this._bucket, key, versionId, {
      ...tags,
      [CHECKPOINT_TAG.name]: CHECKPOINT_TAG.value
    });
  }

  /** Ask the store about one version of the path, an unknown id answering 404. */
  private async _version<T>(
    apiPath: string,
    checkpointId: string,
    ask: (key: string, versionId: string) => Promise<T>
  ): Promise<T> {
    try {
      return await ask(this._key(apiPath), checkpointId);
    } catch (error) {
      // A version of another key, a delete marker's id or a malformed id: no such checkpoint.
      if (error instanceof ObjectStoreError && error.kind !== 'unavailable') {
        throw Private.noSuchCheckpoint(apiPath, checkpointId);
      }
      throw error;
    }
  }

  private _key(apiPath: string): string {
    return objectKey(this._prefix, apiPath);
  }

  private readonly _store: IObjectStore;
  private readonly _bucket: string;
  private readonly _prefix: string;
  private readonly _covers: (apiPath: string) => boolean;
  private readonly _max: number;
  private readonly _settled: (apiPath: string) => Promise<unknown>;
  private readonly _log: (message: string) => void;
}

export namespace VersionCheckpoints {
  export interface IOptions {
    /** Where the archived versions are. */
    readonly store: IObjectStore;
    readonly bucket: string;
    /** The workspace prefix of the archived copies. */
    readonly prefix: string;
    /** Whether the archive keeps versions of an API path (its include and exclude globs). */
    readonly covers: (apiPath: string) => boolean;
    /** The most versions a listing shows. */
    readonly max: number;
    /** Resolves once the saves seen so far are archived (or a bounded wait has passed). */
    readonly settled?: (apiPath: string) => Promise<unknown>;
    /** Where a failure to label a version is reported. */
    readonly log?: (message: string) => void;
  }
}

namespace Private {
  export function noSuchCheckpoint(apiPath: string, checkpointId: string) {
    return httpErrors.notFound(`Checkpoint does not exist: ${apiPath}@${checkpointId}`);
  }
}
