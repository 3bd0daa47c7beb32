import { HttpError } from '../errors';

/**
 * Every error the gateway answers on purpose, each with exactly one status and one reason.
 *
 * Clients switch on `reason` (the Lab extension, the CLI, scripts), the README documents many of
 * them and the OpenAPI document lists them all, so a reason must mean one thing at one status.
 * Messages stay free text written where the error is raised: they are for people.
 *
 * #### Notes
 * Raise an error with its named constructor, never with `new HttpError(…)`:
 *
 * ```ts
 * throw httpErrors.notFound(`No such directory: ${path}`);
 * ```
 *
 * Two families of errors need no constructor at all, because the error handler maps them (see
 * `http/errors.ts`): let them propagate instead of catching and rethrowing them.
 * - Node system errors (`ENOENT`, `EACCES`, …, and the root file system's own `EOUTSIDEROOT`,
 *   `EDANGLINGLINK`, `ENOTREGULAR`) through one errno table. Where a message should name the
 *   path and the action, call `errnoError(error, apiPath, action)` instead of rethrowing.
 * - `ObjectStoreError`s of the storage layer: 404, 403, 400, 413, 502 or 501 by kind, with the
 *   store's own code (`NoSuchKey`, `AccessDenied`, …) as the reason, as the README documents.
 *
 * How the reasons that once had two statuses, or two names, were settled:
 * - Statuses and reasons of the contents API are Jupyter Server's wherever Jupyter names a reason
 *   (`bad type`, `bad format`): the conformance suite compares them with a real Jupyter Server.
 *   Where Jupyter's reason is null, the status is still Jupyter's and the reason ours.
 * - `invalid path` is 400 (a malformed path in a store request, or a request path that is not
 *   UTF-8). A contents path that cannot lead to a file (a NUL byte, an empty segment, a symlink
 *   loop) is 404 as in Jupyter, with the reason `bad path`.
 * - `not a notebook` is 422, as documented for diff and restore. Publishing a model that is not
 *   a notebook, or to a path that does not end in `.ipynb`, is 415 `notebook required`.
 * - `too large` is 413. Copying a folder over `max_copy_folder_size_mb` is 400 as in Jupyter,
 *   with the reason `folder too large`.
 * - `outside root` is 404, as documented. A clone's `target_path` that leads outside the root is
 *   400 `target outside root`.
 * - `hidden` and `hidden path` were synonyms: both are `hidden path` (400).
 * - `forbidden` and `permission denied` were synonyms: both are `permission denied` (403).
 * - A failed folder copy is always 400 `copy failed`, as Jupyter answers 400 for it; it no
 *   longer borrows `permission denied`, which is 403.
 */
export const errorCatalogue = {
  // The contents API, as Jupyter Server answers it.
  /** 404: the file, directory or checkpoint does not exist. */
  notFound: { status: 404, reason: 'not found' },
  /** 400: the item is not of the type asked for or given (Jupyter's reason). */
  badType: { status: 400, reason: 'bad type' },
  /** 400: the content's format is missing, unknown or does not decode (Jupyter's reason). */
  badFormat: { status: 400, reason: 'bad format' },
  /** 400: the `content` query argument is not 0 or 1. */
  badContent: { status: 400, reason: 'bad content' },
  /** 400: the `hash` query argument is invalid, or a hash is asked of a directory. */
  badHash: { status: 400, reason: 'bad hash' },
  /** 400: the request is malformed: a missing field, a body that is not a JSON object, … */
  badRequest: { status: 400, reason: 'bad request' },
  /** 404: a contents path that cannot lead to a file: a NUL byte, an empty segment, a loop. */
  badPath: { status: 404, reason: 'bad path' },
  /** 404: the path leads outside the root directory (through `..` or a symlink). */
  outsideRoot: { status: 404, reason: 'outside root' },
  /** 400: the path, or one of its names, is hidden. */
  hiddenPath: { status: 400, reason: 'hidden path' },
  /** 400: a name, or the whole path, is longer than the file system allows. */
  nameTooLong: { status: 400, reason: 'name too long' },
  /** 400: a save through a symlink whose target does not exist. */
  danglingSymlink: { status: 400, reason: 'dangling symlink' },
  /** 400: deleting a directory that is not empty, without a trash. */
  notEmpty: { status: 400, reason: 'not empty' },
  /** 409: the target name is taken. */
  conflict: { status: 409, reason: 'conflict' },
  /** 403: the file system refused access. */
  permissionDenied: { status: 403, reason: 'permission denied' },
  /** 507: the disk or the quota is full. */
  noSpace: { status: 507, reason: 'no space' },
  /** 500: a file-system failure with no better description; the message names the action. */
  unexpected: { status: 500, reason: 'unexpected' },
  /** 400: a folder copy failed (Jupyter answers 400 whatever the cause). */
  copyFailed: { status: 400, reason: 'copy failed' },
  /** 400: a folder over `max_copy_folder_size_mb` (Jupyter answers 400). */
  folderTooLarge: { status: 400, reason: 'folder too large' },
  /** 400: a notebook file that does not parse or validate as nbformat. */
  unreadableNotebook: { status: 400, reason: 'unreadable notebook' },
  /** 400: a notebook model that cannot be written. */
  badNotebook: { status: 400, reason: 'bad notebook' },
  /** 503: a save was written but could not be queued for archiving. */
  archiveUnavailable: { status: 503, reason: 'archive unavailable' },

  // Requests and the gateway.
  /** 405: the route does not serve this method (with an `Allow` header). */
  methodNotAllowed: { status: 405, reason: 'method not allowed' },
  /** 404: no route of the gateway matches. */
  noSuchRoute: { status: 404, reason: 'no such route' },
  /** 403: an unauthenticated API request. */
  notAuthenticated: { status: 403, reason: 'not authenticated' },
  /** 403: the user lacks Jupyter's permission for the action. */
  notAuthorized: { status: 403, reason: 'not authorized' },
  /** 403: the Host header is not one Jupyter allows. */
  hostNotAllowed: { status: 403, reason: 'host not allowed' },
  /** 403: a cookie-authenticated write without a matching `_xsrf` token. */
  xsrf: { status: 403, reason: 'xsrf' },
  /** 404: a cookie-authenticated request from another origin, answered as Jupyter does. */
  crossOriginBlocked: { status: 404, reason: 'cross-origin request blocked' },
  /** 503: the Jupyter Server behind the gateway cannot be reached. */
  upstreamUnavailable: { status: 503, reason: 'upstream unavailable' },
  /** 502: the Jupyter Server hung up without answering. */
  upstreamClosed: { status: 502, reason: 'upstream closed' },
  /** 413: the request body is over the route's limit (body-parser's type). */
  bodyTooLarge: { status: 413, reason: 'entity.too.large' },
  /** 415: a `Content-Encoding` other than identity (body-parser's type). */
  unsupportedEncoding: { status: 415, reason: 'encoding.unsupported' },
  /** 400: the client stopped sending the body (body-parser's type). */
  requestAborted: { status: 400, reason: 'request.aborted' },
  /** 400: the body is shorter or longer than its `Content-Length` (body-parser's type). */
  requestSizeInvalid: { status: 400, reason: 'request.size.invalid' },

  // The store API: paths.
  /** 400: a malformed path: not UTF-8, a NUL byte, empty, `.` or `..` segments. */
  invalidPath: { status: 400, reason: 'invalid path' },
  /** 400: an empty path. */
  emptyPath: { status: 400, reason: 'empty path' },
  /** 400: an absolute path where a relative one is needed. */
  absolutePath: { status: 400, reason: 'absolute path' },
  /** 400: a clone's `target_path` leads outside the root directory. */
  targetOutsideRoot: { status: 400, reason: 'target outside root' },
  /** 409: the directory a clone writes into does not exist. */
  missingParentDirectory: { status: 409, reason: 'missing parent directory' },

  // The store API: object storage and features.
  /** 503: no usable object store is configured (`GET api/store` says why). */
  storeUnavailable: { status: 503, reason: 'store unavailable' },
  /** 403: publishing is turned off. */
  publishDisabled: { status: 403, reason: 'publish disabled' },
  /** 403: `enable_object_cloning` is false. */
  objectCloningDisabled: { status: 403, reason: 'object cloning disabled' },
  /** 403: `fs_cloning_basedir` is not set or not a directory. */
  fsCloningDisabled: { status: 403, reason: 'fs cloning disabled' },
  /** 403: `clone_buckets` does not list the bucket. */
  bucketNotAllowed: { status: 403, reason: 'bucket not allowed' },
  /** 413: an object, file or notebook over the size a route reads. */
  tooLarge: { status: 413, reason: 'too large' },
  /**
   * 404: a diff without `base`, a name without `object_version_id`, or a restore, of a notebook
   * that has no archived version.
   */
  noVersions: { status: 404, reason: 'no versions' },
  /** 400: a version listing's `next` token that is not this gateway's for this path. */
  invalidToken: { status: 400, reason: 'invalid token' },
  /** 409: a retention rule asked for while `workspace_prefix` is empty (it would cover all). */
  noWorkspacePrefix: { status: 409, reason: 'no workspace prefix' },

  // The store API: named versions.
  /** 400: a version's name and note take more than the 2 KB of metadata S3 allows, encoded. */
  labelTooLong: { status: 400, reason: 'label too long' },
  /** 404: removing the name of a version that has none. */
  notNamed: { status: 404, reason: 'not named' },

  // The store API: recently deleted notebooks.
  /** 400: a restore naming a delete marker's id instead of a version's. */
  deleteMarker: { status: 400, reason: 'delete marker' },

  // The store API: files cloned from the file system.
  /** 404: `relpath` leads outside `fs_cloning_basedir`. */
  outsideBaseDirectory: { status: 404, reason: 'outside base directory' },
  /** 400: `relpath` is a directory. */
  isDirectory: { status: 400, reason: 'is a directory' },
  /** 400: `relpath` is neither a file nor a directory (a FIFO, a device, …). */
  notAFile: { status: 400, reason: 'not a file' },
  /** 403: `relpath` has more than one hard link. */
  hardLink: { status: 403, reason: 'hard link' },

  // The store API: notebooks.
  /** 400: a publish request without a model. */
  emptyModel: { status: 400, reason: 'empty model' },
  /** 422: a notebook model without content. */
  emptyContent: { status: 422, reason: 'empty content' },
  /** 415: publishing something that is not a notebook, or to a path not ending in `.ipynb`. */
  notebookRequired: { status: 415, reason: 'notebook required' },
  /** 422: a version, file or value that is not an nbformat 4 notebook. */
  notANotebook: { status: 422, reason: 'not a notebook' },
  /** 422: a notebook that does not validate against the nbformat 4 schema. */
  invalidNotebook: { status: 422, reason: 'invalid notebook' },
  /** 422: a notebook whose cell ids repeat. */
  duplicateCellIds: { status: 422, reason: 'duplicate cell ids' },

  // The JupyterHub credential service (`jupyter-store credentials-service`).
  /** 403: the token is not that of a user's single-user server (a user's own, a service's). */
  notAServerToken: { status: 403, reason: 'not a server token' },
  /** 403: the user's name could widen the credentials' scope, or leave its prefix. */
  userNameRefused: { status: 403, reason: 'user name refused' },
  /** 503: the Hub's API could not be asked who a token belongs to. */
  hubUnavailable: { status: 503, reason: 'hub unavailable' },
  /** 503: STS refused or failed to mint credentials (the service's log says why). */
  credentialsUnavailable: { status: 503, reason: 'credentials unavailable' },

  // The contents API: archived versions as checkpoints.
  /** 409: deleting a checkpoint that is an archived version, which is immutable. */
  versionCheckpointImmutable: { status: 409, reason: 'version checkpoint immutable' }
} as const satisfies Record<string, ErrorCatalogue.IEntry>;

/** The name of a catalogue entry, e.g. `notFound`. */
export type ErrorName = keyof typeof errorCatalogue;

/** The catalogue's types. */
export namespace ErrorCatalogue {
  /** One kind of error. */
  export interface IEntry {
    /** The HTTP status it is answered with. */
    readonly status: number;
    /** The stable, machine-readable reason of the body `{"message", "reason"}`. */
    readonly reason: string;
  }

  /** An entry with its name, as {@link listErrors} gives it. */
  export interface INamedEntry extends IEntry {
    readonly name: ErrorName;
  }

  /** What a constructor may be given besides the message. */
  export interface IOptions {
    /** The error that caused this one, kept for logs; never sent to the client. */
    readonly cause?: unknown;
  }

  /** A named constructor: the message is written by the caller. */
  export type Constructor = (message: string, options?: IOptions) => HttpError;
}

namespace Private {
  export function names(): ErrorName[] {
    return Object.keys(errorCatalogue) as ErrorName[];
  }

  export function constructorOf(entry: ErrorCatalogue.IEntry): ErrorCatalogue.Constructor {
    return (message, options) => new HttpError(entry.status, message, entry.reason, options);
  }
}

/**
 * The named constructors, one for each catalogue entry: `httpErrors.notFound(message)` is an
 * `HttpError` with the entry's status and reason.
 */
export const httpErrors: { readonly [Name in ErrorName]: ErrorCatalogue.Constructor } =
  Object.freeze(
    Object.fromEntries(
      Private.names().map(name => [name, Private.constructorOf(errorCatalogue[name])])
    ) as { [Name in ErrorName]: ErrorCatalogue.Constructor }
  );

/** Every entry with its name, in catalogue order: what the OpenAPI document lists. */
export function listErrors(): ErrorCatalogue.INamedEntry[] {
  return Private.names().map(name => ({ name, ...errorCatalogue[name] }));
}

/**
 * An error whose reason is another system's word, passed on unchanged: the object store's own
 * code (`NoSuchKey`, `AccessDenied`, …, as the README documents) or body-parser's type. Only the
 * error handler's tables (`http/errors.ts`) use it; everything the gateway decides itself has
 * its catalogue entry.
 */
export function passedOnError(
  status: number,
  message: string,
  reason: string,
  options?: ErrorCatalogue.IOptions
): HttpError {
  return new HttpError(status, message, reason, options);
}

/**
 * The answer to an error nobody raised on purpose: a 500 that says no more than Jupyter's own
 * (reason null, no stack trace, no detail; the error itself goes to the log).
 */
export function unhandledError(): HttpError {
  return new HttpError(500, 'Unhandled error', null);
}

/** Is this an error raised through the named entry (same status and reason)? */
export function isCatalogued(error: unknown, name: ErrorName): error is HttpError {
  const entry: ErrorCatalogue.IEntry = errorCatalogue[name];
  return (
    error instanceof HttpError && error.status === entry.status && error.reason === entry.reason
  );
}
