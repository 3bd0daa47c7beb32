import { z } from 'zod';
import {
  FsCloneRequestSchema,
  FsCloneResponseSchema,
  ObjectCloneRequestSchema,
  ObjectCloneResponseSchema
} from './clone';
import {
  DEFAULT_DELETED_LIMIT,
  DeletedListingSchema,
  MAX_DELETED_LIMIT,
  RestoreRequestSchema,
  RestoreResponseSchema
} from './deleted';
import { DiffRequestSchema, MAX_VERSION_ID_CHARS, NotebookDiffSchema } from './diff';
import { NamedVersionSchema, NameVersionRequestSchema, UnnamedVersionSchema } from './labels';
import { PublishRequestSchema, PublishResultSchema } from './publish';
import { RetentionRuleSchema, RetentionSchema } from './retention';
import {
  DEFAULT_VERSIONS_PAGE_LIMIT,
  MAX_VERSIONS_PAGE_LIMIT,
  StoreInfoSchema,
  VersionContentSchema,
  VersionListingSchema
} from './store';

/**
 * The endpoints of the store API, `{base}api/store/…`, as data: what each one is called with and
 * what it answers. Both clients build their requests from these descriptors and check answers
 * with their schemas, and the server's OpenAPI document is generated from them, so a method, a
 * path or a status is written down once.
 */

/** The methods the store API serves (HEAD follows GET). */
export type EndpointMethod = 'GET' | 'PUT' | 'POST' | 'DELETE';

/** One endpoint of the store API. */
export interface IEndpoint {
  /** The operation's name in the OpenAPI document. */
  readonly operationId: string;
  readonly method: EndpointMethod;
  /**
   * The path below the server's base URL. `{path}` stands for a notebook-server path, sent with
   * each segment percent-encoded and its slashes kept.
   */
  readonly path: string;
  /** The query parameters, all optional unless the schema requires them; values are sent as text. */
  readonly query?: z.ZodObject;
  /** The JSON request body. */
  readonly body?: z.ZodType;
  /** The JSON body of the one success status, {@link SUCCESS_STATUS}. */
  readonly response: z.ZodType;
  /**
   * Every status the endpoint answers with, success included; errors carry Jupyter's
   * `{"message", "reason"}` body. A method the path does not serve is 405 besides.
   */
  readonly statuses: readonly number[];
}

/** The status of every successful store API call. */
export const SUCCESS_STATUS = 200;

/** What a call of `E` is given: the notebook path when the template has one, query and body. */
export type EndpointRequest<E extends IEndpoint> = (E extends {
  path: `${string}{path}${string}`;
}
  ? { path: string }
  : { path?: undefined }) &
  (E extends { query: z.ZodType } ? { query?: z.input<E['query']> } : { query?: undefined }) &
  (E extends { body: z.ZodType } ? { body: z.input<E['body']> } : { body?: undefined });

/** What a call of `E` answers with on success. */
export type EndpointResponse<E extends IEndpoint> = z.output<E['response']>;

/** The statuses of a call that reads a notebook-server path, when the store can fail. */
const READ_STATUSES = [SUCCESS_STATUS, 400, 403, 404, 502, 503] as const;

/** A query parameter naming a version id. */
const versionId = z.string().min(1).max(MAX_VERSION_ID_CHARS);

/** A ref of a diff side: `current`, an archived version id, `published:<version id>`. */
const diffRef = z.string().min(1);

/**
 * The store API, one descriptor per call. The keys are the method names of both clients.
 */
export const StoreEndpoints = {
  /** Feature detection: the release, the features with reasons, the archive queue. */
  info: {
    operationId: 'getStoreInfo',
    method: 'GET',
    path: 'api/store',
    query: z.object({
      no_track_activity: z
        .string()
        .optional()
        .meta({
          description:
            "Jupyter's convention for background polls: with this parameter (any value) the " +
            'request is not user activity, so it neither updates `last_activity` nor is ' +
            "reported to JupyterHub's idle culler."
        })
    }),
    response: StoreInfoSchema,
    statuses: [SUCCESS_STATUS, 403, 404, 503]
  },
  /** One page of the archived and published versions of a notebook, newest first. */
  versionsPage: {
    operationId: 'listVersions',
    method: 'GET',
    path: 'api/store/versions/{path}',
    query: z.object({
      limit: z
        .number()
        .int()
        .min(1)
        .max(MAX_VERSIONS_PAGE_LIMIT)
        .optional()
        .meta({
          default: DEFAULT_VERSIONS_PAGE_LIMIT,
          description:
            `The most versions of each copy on the page: a whole number from 1 to ` +
            `${MAX_VERSIONS_PAGE_LIMIT}, written without sign, spaces or leading zeros; ` +
            `${DEFAULT_VERSIONS_PAGE_LIMIT} when left out.`
        }),
      next: z
        .string()
        .min(1)
        .optional()
        .meta({ description: 'The `next` token of the page before, as it was answered.' })
    }),
    response: VersionListingSchema,
    statuses: READ_STATUSES
  },
  /** The notebook of one archived or published version, for restoring it. */
  versionContent: {
    operationId: 'listVersions',
    method: 'GET',
    path: 'api/store/versions/{path}',
    query: z.object({
      object_version_id: versionId.meta({
        description:
          'Answer the content of this version (of the archived copy, or of the published one ' +
          'with `copy=published`) instead of the listing.'
      }),
      copy: z.enum(['workspace', 'published']).optional().meta({
        description: 'Which copy `object_version_id` names a version of; default `workspace`.'
      })
    }),
    response: VersionContentSchema,
    statuses: [...READ_STATUSES, 413, 422]
  },
  /** Publish a notebook to `<published_prefix>/<path>`. */
  publish: {
    operationId: 'publishNotebook',
    method: 'PUT',
    path: 'api/store/publish/{path}',
    body: PublishRequestSchema,
    response: PublishResultSchema,
    statuses: [SUCCESS_STATUS, 400, 403, 404, 413, 415, 422, 502, 503]
  },
  /** Name an archived version of a notebook (the newest by default), or rename it. */
  nameVersion: {
    operationId: 'nameVersion',
    method: 'POST',
    path: 'api/store/named/{path}',
    body: NameVersionRequestSchema,
    response: NamedVersionSchema,
    statuses: [SUCCESS_STATUS, 400, 403, 404, 413, 415, 502, 503]
  },
  /** Take the name off an archived version. */
  unnameVersion: {
    operationId: 'unnameVersion',
    method: 'DELETE',
    path: 'api/store/named/{path}',
    query: z.object({
      object_version_id: versionId.meta({
        description: 'The archived version whose name to remove (required).'
      })
    }),
    response: UnnamedVersionSchema,
    statuses: [SUCCESS_STATUS, 400, 403, 404, 502, 503]
  },
  /** Copy an object, or one version of it, into the server's contents. */
  cloneObject: {
    operationId: 'cloneFromObjectStorage',
    method: 'POST',
    path: 'api/store/clone',
    body: ObjectCloneRequestSchema,
    response: ObjectCloneResponseSchema,
    statuses: [SUCCESS_STATUS, 400, 403, 404, 409, 413, 415, 502, 503, 507]
  },
  /** Copy a file from below `fs_cloning_basedir` into the server's contents. */
  cloneFromFileSystem: {
    operationId: 'cloneFromFileSystem',
    method: 'POST',
    path: 'api/store/fs-clone',
    body: FsCloneRequestSchema,
    response: FsCloneResponseSchema,
    statuses: [SUCCESS_STATUS, 400, 403, 404, 409, 413, 415, 503, 507]
  },
  /** The recently deleted notebooks, newest deletion first. */
  deleted: {
    operationId: 'listDeleted',
    method: 'GET',
    path: 'api/store/deleted',
    query: z.object({
      prefix: z
        .string()
        .min(1)
        .optional()
        .meta({
          description:
            'Only the notebooks below this directory (a path relative to the root; `a` lists ' +
            '`a/x.ipynb`, not `ab.ipynb`).'
        }),
      limit: z
        .number()
        .int()
        .min(1)
        .max(MAX_DELETED_LIMIT)
        .optional()
        .meta({
          default: DEFAULT_DELETED_LIMIT,
          description:
            `The most deleted notebooks listed: a whole number from 1 to ${MAX_DELETED_LIMIT}, ` +
            `written without sign, spaces or leading zeros; ${DEFAULT_DELETED_LIMIT} when left ` +
            'out. `left_out` counts the others.'
        })
    }),
    response: DeletedListingSchema,
    statuses: [SUCCESS_STATUS, 400, 403, 404, 502, 503]
  },
  /** Write a version of a deleted notebook back (the newest before its delete by default). */
  restore: {
    operationId: 'restoreNotebook',
    method: 'POST',
    path: 'api/store/restore',
    body: RestoreRequestSchema,
    response: RestoreResponseSchema,
    statuses: [SUCCESS_STATUS, 400, 403, 404, 409, 413, 415, 502, 503, 507]
  },
  /** The retention rule of the workspace prefix, and how many other lifecycle rules there are. */
  retention: {
    operationId: 'getRetention',
    method: 'GET',
    path: 'api/store/retention',
    response: RetentionSchema,
    statuses: [SUCCESS_STATUS, 403, 404, 501, 502, 503]
  },
  /** Set the retention rule of the workspace prefix; the bucket's other rules are kept. */
  setRetention: {
    operationId: 'setRetention',
    method: 'PUT',
    path: 'api/store/retention',
    body: RetentionRuleSchema,
    response: RetentionSchema,
    statuses: [SUCCESS_STATUS, 400, 403, 404, 409, 413, 415, 501, 502, 503]
  },
  /** Remove the retention rule of the workspace prefix; the bucket's other rules are kept. */
  clearRetention: {
    operationId: 'clearRetention',
    method: 'DELETE',
    path: 'api/store/retention',
    response: RetentionSchema,
    statuses: [SUCCESS_STATUS, 403, 404, 501, 502, 503]
  },
  /** The diff between two notebooks, each named by a ref or given inline (unsaved work). */
  diffInline: {
    operationId: 'diffNotebooks',
    method: 'POST',
    path: 'api/store/diff',
    body: DiffRequestSchema,
    response: NotebookDiffSchema,
    statuses: [SUCCESS_STATUS, 400, 403, 404, 413, 415, 422, 502, 503]
  },
  /** The diff between two notebooks named by refs, in nbdime's format. */
  diff: {
    operationId: 'diffVersions',
    method: 'GET',
    path: 'api/store/diff/{path}',
    query: z.object({
      base: diffRef
        .optional()
        .meta({ description: 'The ref to diff from; default the newest archived version.' }),
      remote: diffRef.optional().meta({ description: 'The ref to diff to; default `current`.' })
    }),
    response: NotebookDiffSchema,
    statuses: [SUCCESS_STATUS, 400, 403, 404, 413, 422, 502, 503]
  }
} as const satisfies Record<string, IEndpoint>;

/** The names of the store API's calls. */
export type StoreEndpointName = keyof typeof StoreEndpoints;

/**
 * A server path (`a/b c.ipynb`) as a URL path: each segment percent-encoded, the slashes kept.
 */
export function encodeApiPath(apiPath: string): string {
  return apiPath.split('/').map(encodeURIComponent).join('/');
}

/** A server path without outer slashes: paths are relative to the root, so they mean nothing. */
export function trimSlashes(apiPath: string): string {
  return apiPath.replace(/^\/+|\/+$/g, '');
}

/**
 * The URL of a call below the server's base URL: the template with the notebook path encoded,
 * then the query parameters given (those undefined are left out), percent-encoded.
 *
 * @throws Error when the template has a `{path}` and none is given.
 */
export function endpointUrl<E extends IEndpoint>(endpoint: E, request: EndpointRequest<E>): string {
  const { path, query } = request as { path?: string; query?: Record<string, unknown> };
  let url = endpoint.path;
  if (url.includes('{path}')) {
    if (path === undefined) throw new Error(`${endpoint.operationId} needs a path`);
    url = url.replace('{path}', encodeApiPath(path));
  }
  const parameters = Object.entries(query ?? {})
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(String(value))}`);
  return parameters.length === 0 ? url : `${url}?${parameters.join('&')}`;
}
