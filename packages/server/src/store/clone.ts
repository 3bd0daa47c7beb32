import { ObjectCloneRequestSchema, ObjectCloneResponseSchema } from '@jupyter-store/contract';
import type { Response } from 'express';
import type { Archiving } from '../archive/archiving';
import type { ContentsManager } from '../contents/manager';
import type { Route } from '../gateway/assemble';
import type { Logger } from '../gateway/logger';
import { httpErrors } from '../http/errorCatalogue';
import { displayable, isValidBucketName } from '../storage/keys';
import { cloneTarget, saveClone } from './cloneTarget';
import { readObject, type StoreAccess } from './objects';
import { readJsonObject, validate } from './requests';

/** Largest clone request body, in bytes: the fields are short strings. */
export const DEFAULT_MAX_CLONE_BODY_BYTES = 64 * 1024;

/** What the clone routes need. */
export interface ICloneOptions {
  readonly archiving: StoreAccess;
  /** Where clones are written, as any save. */
  readonly manager: ContentsManager;
  /** Largest source read, in bytes; larger is 413. */
  readonly maxBytes: number;
  /** Where successful clones are logged (info). */
  readonly log?: Logger;
}

/**
 * `POST api/store/clone`: copy an object (the version named, or the latest) into the server.
 *
 * #### Notes
 * Statuses (every error is Jupyter's `{"message", "reason"}`):
 *
 * | status | when |
 * |---|---|
 * | 200 | cloned: the contents model of the created item (no content) plus the source fields |
 * | 400 | body not a JSON object; a field missing, not a string, empty or too long; an invalid bucket name; a malformed version id; `target_path` absolute, with `.`/`..`/empty segments, hidden, or leading outside the root through a symlink |
 * | 403 | Jupyter's `Authorizer` does not allow the caller `contents: write` (reason `not authorized`, checked first); `enable_object_cloning` is false (reason `object cloning disabled`); `clone_buckets` is set and does not list `object_bucket` (reason `bucket not allowed`, before object storage is asked); object storage denies access |
 * | 404 | bucket, key or version does not exist |
 * | 409 | the parent directory of `target_path` does not exist (reason `missing parent directory`) |
 * | 413 | request body over {@link DEFAULT_MAX_CLONE_BODY_BYTES}, or source over the limit (an object is refused by its announced length, or as soon as more than that has been read, whatever HEAD said) |
 * | 502 | object storage unreachable or failing |
 * | 503 | object storage not usable (no bucket configured, failed bucket check), reason `store unavailable` |
 *
 * A clone never overwrites: when `target_path` is taken, the copy is named `name-1.ext`,
 * `name-2.ext`, … (counter before `.ipynb`, else before the first dot), the chosen name being
 * created exclusively (`O_EXCL`) so that two clones never pick the same one. A `.ipynb` target
 * whose bytes are a notebook is saved as a notebook through the contents manager (so it is
 * archived like any save, and never arrives trusted); anything else is saved as a file with
 * exactly the source bytes.
 */
export function cloneRoute(options: ICloneOptions): Route.Handler {
  const { archiving, manager, maxBytes } = options;
  return async (request, response) => {
    const clone = validate(ObjectCloneRequestSchema, readJsonObject(request));
    const bucket = clone.object_bucket;
    const key = clone.object_key;
    checkCloneBucket(archiving, bucket);
    const target = cloneTarget(clone.target_path, key, 'object_key');
    let versionId: string | null = null;
    const model = await saveClone(manager, target, async () => {
      const object = await readObject(
        archiving,
        bucket,
        key,
        clone.object_version_id ?? undefined,
        maxBytes
      );
      versionId = object.versionId;
      return object.body;
    });
    options.log?.info(
      { from: `s3://${bucket}/${key}`, version: versionId, to: model.path },
      'cloned from object storage'
    );
    sendCloned(
      response,
      ObjectCloneResponseSchema.parse({
        ...model,
        object_bucket: bucket,
        object_key: key,
        object_version_id: versionId,
        object_path: `s3://${bucket}/${key}`
      })
    );
  };
}

/**
 * May a clone read from this bucket? Its name must be a valid bucket name (400), and any bucket
 * the credentials can read may be cloned from while `clone_buckets` is unset; once it is set,
 * only the buckets it lists and the configured bucket (where the archived and published
 * versions are, which the versions panel opens). Shared by the route and its landing page.
 *
 * @throws HttpError 400 (reason `bad request`) for an invalid name, 403 (reason `bucket not
 *   allowed`) for another bucket, before object storage is asked anything.
 */
export function checkCloneBucket(
  archiving: Pick<Archiving, 'settings' | 'bucket'>,
  bucket: string
): void {
  if (!isValidBucketName(bucket)) {
    throw httpErrors.badRequest(
      `object_bucket "${displayable(bucket)}" is not a valid bucket name`
    );
  }
  const allowed = archiving.settings.clone_buckets;
  if (allowed === undefined || bucket === archiving.bucket || allowed.includes(bucket)) return;
  throw httpErrors.bucketNotAllowed(
    `Cloning from the bucket "${displayable(bucket)}" is not allowed: it is not one of the ` +
      'buckets clone_buckets lists'
  );
}

/** The 200 of a clone: the created item's model and the source, as JSON. */
export function sendCloned(response: Response, result: unknown): void {
  response.status(200);
  response.setHeader('Content-Type', 'application/json');
  response.end(JSON.stringify(result));
}
