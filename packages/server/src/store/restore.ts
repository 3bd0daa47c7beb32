import { RestoreRequestSchema, RestoreResponseSchema } from '@jupyter-store/contract';
import { parentPath } from '../contents/paths';
import type { Route } from '../gateway/assemble';
import { httpErrors } from '../http/errorCatalogue';
import { displayable, objectKey } from '../storage/keys';
import { sendCloned, type ICloneOptions } from './clone';
import { saveClone } from './cloneTarget';
import { readObject, type StoreAccess } from './objects';
import { checkStorePath } from './paths';
import { readJsonObject, validate } from './requests';

/**
 * What the restore route needs: what a clone needs, since a restore is written as a clone is
 * (`maxBytes` is the largest version read).
 */
export type IRestoreOptions = ICloneOptions;

/**
 * `POST api/store/restore`: write an archived version of `path` (by default its newest, which
 * for a deleted notebook is the newest before its delete marker) back into the server.
 *
 * #### Notes
 * The bytes are written through the contents manager, so the restore is archived as a new
 * version of the path it lands at, and a notebook keeps only the trust its signature gives it
 * (as a checkpoint restore). A restore never overwrites: when `path` exists again the notebook
 * lands at the first free `-<n>` name, as a clone does (see `saveClone`), and the answer's
 * `path` says where. A missing directory is not recreated (409): the user decides where it
 * goes. Statuses are listed in the OpenAPI prose (`restoreNotebook`).
 */
export function restoreRoute(options: IRestoreOptions): Route.Handler {
  const { archiving, manager, maxBytes } = options;
  return async (request, response) => {
    const body = validate(RestoreRequestSchema, readJsonObject(request));
    const path = checkStorePath(body.path, 'path');
    const key = objectKey(archiving.settings.workspace_prefix, path);
    const versionId = await Private.versionToRestore(
      archiving,
      path,
      key,
      body.object_version_id ?? undefined
    );
    // Checked here for a message about restoring; a parent that cannot be asked about (hidden,
    // outside the root) is refused by saveClone's own check, with its reason.
    const parent = parentPath(path);
    if (parent !== '' && !(await manager.dirExists(parent).catch(() => true))) {
      throw httpErrors.missingParentDirectory(
        `The directory '${parent}' of '${path}' does not exist any more; create it first, ` +
          'then restore again'
      );
    }
    const model = await saveClone(
      manager,
      path,
      async () => (await readObject(archiving, archiving.bucket, key, versionId, maxBytes)).body,
      (writer, apiPath, bytes) => writer.saveRestored(apiPath, bytes)
    );
    options.log?.info({ path, version: versionId, to: model.path }, 'restored a deleted notebook');
    sendCloned(
      response,
      RestoreResponseSchema.parse({
        ...model,
        restored_from: { path, object_key: key, object_version_id: versionId }
      })
    );
  };
}

namespace Private {
  /**
   * The version to write back: the one named, which must be a version (not a delete marker) of
   * the key, or the key's newest version.
   *
   * @throws HttpError 404 when the path has no version or the id names none of its entries, 400
   *   when it names a delete marker.
   */
  export async function versionToRestore(
    archiving: StoreAccess,
    path: string,
    key: string,
    named: string | undefined
  ): Promise<string> {
    const { store, bucket } = archiving;
    if (named === undefined) {
      const page = await store.listVersionPage(bucket, key, { limit: 1 });
      const newest = page.versions[0];
      if (!newest) {
        throw httpErrors.noVersions(`'${path}' has no archived version to restore`);
      }
      return newest.versionId;
    }
    // A HEAD cannot tell a delete marker from a missing version on every server: the key's
    // listing can.
    const entries = await store.listVersions(bucket, key, { includeDeleteMarkers: true });
    const entry = entries.find(each => each.versionId === named);
    if (!entry) {
      throw httpErrors.notFound(
        `'${path}' has no archived version ${JSON.stringify(displayable(named))}`
      );
    }
    if (entry.deleteMarker) {
      throw httpErrors.deleteMarker(
        `${JSON.stringify(displayable(named))} is the delete marker of '${path}', not a ` +
          'version: restore one of the versions before it'
      );
    }
    return named;
  }
}
