import { objectKey } from '../storage/keys';
import {
  fillWorkspacePrefix,
  isPerUserTemplate,
  USERNAME_PLACEHOLDER,
  userNameProblem
} from '../settings/workspacePrefix';

/**
 * The IAM session policy of one JupyterHub user's short-lived credentials: what that user's
 * single-user server (its gateway) needs in the shared bucket, and nothing of other users.
 *
 * #### Notes
 * A session policy can only narrow what the assumed role (AWS) or the assuming user (MinIO)
 * may do, so the long-lived credential must allow at least this. Per user U, with
 * `workspace/{username}` as `workspace_prefix` and the other prefixes at their defaults:
 *
 * - `UserObjects`: get (and get a version), put, delete (which only adds a delete marker), and
 *   the tags of objects and versions, below `workspace/U/` and `named/workspace/U/`.
 * - `UserListing`: ListBucket and ListBucketVersions of the bucket, with `s3:prefix` below one
 *   of those two.
 * - `PublishedReading`: get (and get a version) below `published/`.
 * - `PublishedListing`: ListBucketVersions with `s3:prefix` below `published/` (a notebook's
 *   versions listing shows its published copy's too).
 * - `PublishedWriting`: put below `published/`, only with `credentials_allow_publish`.
 * - `BucketCheck`: GetBucketVersioning (the gateway's start-up check, which skips HeadBucket
 *   with these credentials: S3 authorizes that as ListBucket of the whole bucket) and
 *   GetBucketLocation.
 *
 * `s3:DeleteObjectVersion` is never granted, so the archive's history cannot be erased with
 * these credentials; nor is any other bucket (clone reads of other buckets are refused).
 */
export function sessionPolicy(options: sessionPolicy.IOptions): sessionPolicy.IPolicy {
  const prefixes = userPrefixes(options);
  const bucketArn = `arn:aws:s3:::${options.bucket}`;
  const below = (prefix: string) => `${prefix}/*`;
  const statements: sessionPolicy.IStatement[] = [
    {
      Sid: 'UserObjects',
      Effect: 'Allow',
      Action: [...Private.USER_OBJECT_ACTIONS],
      Resource: [prefixes.workspace, prefixes.named].map(prefix => `${bucketArn}/${below(prefix)}`)
    },
    {
      Sid: 'UserListing',
      Effect: 'Allow',
      Action: ['s3:ListBucket', 's3:ListBucketVersions'],
      Resource: [bucketArn],
      Condition: { StringLike: { 's3:prefix': [below(prefixes.workspace), below(prefixes.named)] } }
    }
  ];
  if (prefixes.published !== '') {
    statements.push(
      {
        Sid: 'PublishedReading',
        Effect: 'Allow',
        Action: ['s3:GetObject', 's3:GetObjectVersion'],
        Resource: [`${bucketArn}/${below(prefixes.published)}`]
      },
      {
        Sid: 'PublishedListing',
        Effect: 'Allow',
        Action: ['s3:ListBucketVersions'],
        Resource: [bucketArn],
        Condition: { StringLike: { 's3:prefix': [below(prefixes.published)] } }
      }
    );
    if (options.allowPublish) {
      statements.push({
        Sid: 'PublishedWriting',
        Effect: 'Allow',
        Action: ['s3:PutObject'],
        Resource: [`${bucketArn}/${below(prefixes.published)}`]
      });
    }
  }
  statements.push({
    Sid: 'BucketCheck',
    Effect: 'Allow',
    Action: ['s3:GetBucketVersioning', 's3:GetBucketLocation'],
    Resource: [bucketArn]
  });
  return { Version: '2012-10-17', Statement: statements };
}

export namespace sessionPolicy {
  /** Whose policy, and the settings it follows. */
  export interface IOptions {
    /** The shared bucket (`object_bucket`). */
    bucket: string;
    /** The JupyterHub user's name. */
    username: string;
    /** `workspace_prefix` with its `{username}` placeholder (required). */
    workspaceTemplate: string;
    /** `named_prefix`: named versions are copied to `<named_prefix>/<workspace key>`. */
    namedPrefix: string;
    /** `published_prefix`; empty: publishing is off, and nothing of it is granted. */
    publishedPrefix: string;
    /** Whether users may publish (`credentials_allow_publish`). */
    allowPublish: boolean;
  }

  /** An IAM policy document. */
  export interface IPolicy {
    Version: '2012-10-17';
    Statement: IStatement[];
  }

  /** One statement; only `Allow` is used. */
  export interface IStatement {
    Sid: string;
    Effect: 'Allow';
    Action: string[];
    Resource: string[];
    Condition?: Record<string, Record<string, string[]>>;
  }
}

/** The key prefixes (no outer slashes) a user's credentials are scoped to. */
export interface IUserPrefixes {
  /** The user's workspace prefix: `workspace_prefix` filled with the name. */
  workspace: string;
  /** The mirror of named versions of that workspace: `<named_prefix>/<workspace>`. */
  named: string;
  /** `published_prefix`, shared by all users; empty when publishing is off. */
  published: string;
}

/**
 * The prefixes of one user's credentials.
 *
 * @throws PolicyError when the user name is refused (see `userNameProblem`), or when the
 * settings cannot scope credentials to one user: no `{username}` in the template, an empty
 * named prefix, or IAM wildcards in a prefix.
 */
export function userPrefixes(options: sessionPolicy.IOptions): IUserPrefixes {
  checkPolicySettings(options);
  const problem = userNameProblem(options.username);
  if (problem !== undefined) {
    throw new PolicyError(
      'user name refused',
      `The user name ${JSON.stringify(options.username)} ${problem}`
    );
  }
  const workspace = objectKey(fillWorkspacePrefix(options.workspaceTemplate, options.username));
  return {
    workspace,
    named: objectKey(options.namedPrefix, workspace),
    published: objectKey(options.publishedPrefix)
  };
}

/**
 * Check that the settings can give each user a prefix of their own, before any user asks.
 *
 * @throws PolicyError `settings` saying which setting and why.
 */
export function checkPolicySettings(
  options: Pick<
    sessionPolicy.IOptions,
    'bucket' | 'workspaceTemplate' | 'namedPrefix' | 'publishedPrefix'
  >
): void {
  if (options.bucket === '') {
    throw new PolicyError('settings', 'object_bucket must name the shared bucket');
  }
  if (!isPerUserTemplate(options.workspaceTemplate)) {
    throw new PolicyError(
      'settings',
      `workspace_prefix must hold ${USERNAME_PLACEHOLDER} (e.g. "workspace/${USERNAME_PLACEHOLDER}"), ` +
        'so that each user has a prefix of their own'
    );
  }
  if (objectKey(options.namedPrefix) === '') {
    throw new PolicyError('settings', 'named_prefix must not be empty');
  }
  const settings: [string, string][] = [
    ['workspace_prefix', options.workspaceTemplate.split(USERNAME_PLACEHOLDER).join('')],
    ['named_prefix', options.namedPrefix],
    ['published_prefix', options.publishedPrefix]
  ];
  for (const [name, value] of settings) {
    if (Private.IAM_SPECIAL.test(value)) {
      throw new PolicyError(
        'settings',
        `${name} must not hold *, ?, $, braces or brackets: in a policy they are wildcards or variables`
      );
    }
  }
}

/**
 * The `RoleSessionName` of a user's credentials: `jupyter-store@` and the user name, with
 * characters STS does not accept (`[\w+=,.@-]`) replaced by `_`, at most 64 characters. It is
 * shown in audit logs (CloudTrail, MinIO's); it grants nothing.
 */
export function roleSessionName(username: string): string {
  return `jupyter-store@${username.replace(/[^\w+=,.@-]/g, '_')}`.slice(0, 64);
}

/** Why a policy cannot be made: a refused user name, or settings that cannot scope one user. */
export class PolicyError extends Error {
  constructor(
    readonly kind: 'user name refused' | 'settings',
    message: string
  ) {
    super(message);
    this.name = 'PolicyError';
  }
}

namespace Private {
  /** Everything a gateway does to the objects of its own prefixes. */
  export const USER_OBJECT_ACTIONS = [
    's3:GetObject',
    's3:GetObjectVersion',
    's3:PutObject',
    's3:DeleteObject',
    's3:GetObjectTagging',
    's3:PutObjectTagging',
    's3:GetObjectVersionTagging',
    's3:PutObjectVersionTagging'
  ] as const;

  /** Characters with a meaning in IAM resource patterns and condition values. */
  export const IAM_SPECIAL = /[*?${}[\]]/;
}
