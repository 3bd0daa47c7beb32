import * as path from 'node:path';
import { z } from 'zod';
import { isValidBucketName } from '../storage/keys';
import { isWorkspaceTemplate, WORKSPACE_TEMPLATE_ERROR } from './workspacePrefix';

/** Python-style booleans as traitlets accepts them on a command line or in the environment. */
const booleanSetting = z.preprocess(
  value => {
    if (typeof value !== 'string') return value;
    const lower = value.trim().toLowerCase();
    if (['true', '1', 'yes', 'on'].includes(lower)) return true;
    if (['false', '0', 'no', 'off'].includes(lower)) return false;
    return value;
  },
  z.boolean({ error: 'must be true or false' })
);

/** An integer that may arrive as a string (command line, environment). */
function integerSetting(min: number, max: number) {
  return z.preprocess(
    value => (typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value),
    z
      .number({ error: `must be a whole number from ${min} to ${max}` })
      .int({ error: `must be a whole number from ${min} to ${max}` })
      .min(min, { error: `must be at least ${min}` })
      .max(max, { error: `must be at most ${max}` })
  );
}

/**
 * A list given as text (a command line, the environment): a JSON array string, or a
 * comma-separated list; an empty string is an empty list. Anything else passes unchanged.
 */
function listFromText(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const text = value.trim();
  if (text.startsWith('[')) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return value;
    }
  }
  return text === '' ? [] : text.split(',').map(part => part.trim());
}

/**
 * A list of glob patterns: a JSON array in a config file, or (from a command line or the
 * environment) a JSON array string or a comma-separated list.
 */
const patternList = z.preprocess(
  listFromText,
  z.array(z.string().min(1, { error: 'a pattern must not be empty' }), {
    error: 'must be a list of glob patterns (a JSON array, or comma-separated)'
  })
);

/**
 * A list of bucket names: a JSON array in a config file, or (from a command line or the
 * environment) a JSON array string or a comma-separated list; an empty string is an empty list.
 */
const bucketList = z.preprocess(
  listFromText,
  z.array(
    z.string().refine(isValidBucketName, {
      error: 'must hold valid S3 bucket names (3-63 lowercase letters, digits, dots, hyphens)'
    }),
    { error: 'must be a list of bucket names (a JSON array, or comma-separated)' }
  )
);

const absoluteOrEmpty = (what: string) =>
  z.string().refine(value => value === '' || path.isAbsolute(value), {
    error: `must be an absolute path (or empty to turn ${what} off)`
  });

/**
 * The settings of the specification's `StoreSettings`, with their defaults, plus a few of our
 * own (marked below) for the parts the specification leaves open.
 */
export const StoreSettingsSchema = z
  .object({
    /**
     * Prefix of the archived workspace copies; `{username}` in it is the JupyterHub user's name
     * (`JUPYTERHUB_USER`), filled in when the settings are loaded.
     */
    workspace_prefix: z
      .string()
      .refine(isWorkspaceTemplate, { error: WORKSPACE_TEMPLATE_ERROR })
      .default('workspace'),
    /** Prefix of published notebooks. */
    published_prefix: z.string().default('published'),
    /**
     * Ours: prefix of named versions (labels). Each is a copy of the labelled archived version,
     * kept apart from `workspace_prefix` so that a retention rule scoped to that prefix never
     * expires it (see `prefixOverlap` for what is refused).
     */
    named_prefix: z.string().default('named'),
    /** Unset: the platform's default credential chain (environment, profile, role). */
    object_access_key_id: z.string().min(1, { error: 'must not be empty' }).optional(),
    object_secret_access_key: z.string().min(1, { error: 'must not be empty' }).optional(),
    /** Unset: AWS's public endpoint for the region (or, with no bucket either, the embedded store). */
    object_endpoint_url: z
      .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })
      .optional(),
    object_region_name: z.string().min(1, { error: 'must not be empty' }).default('us-east-1'),
    /** The one bucket for workspace and published copies; empty means none configured. */
    object_bucket: z
      .string()
      .refine(value => value === '' || isValidBucketName(value), {
        error: 'must be a valid S3 bucket name (3-63 lowercase letters, digits, dots, hyphens)'
      })
      .default(''),
    /** Concurrent object-storage calls (and the size of the connection pool). */
    max_threads: integerSetting(1, 1024).default(16),
    enable_object_cloning: booleanSetting.default(true),
    /**
     * Ours: the buckets cloning from object storage may read, besides `object_bucket` (where
     * the archived and published versions are); unset: any bucket the credentials can read.
     */
    clone_buckets: bucketList.optional(),
    /** Root below which file-system cloning may read; empty turns it off. */
    fs_cloning_basedir: absoluteOrEmpty('file-system cloning').default(''),
    /** Ours: where the embedded store keeps objects; default in the Jupyter data directory. */
    local_store_dir: absoluteOrEmpty('nothing').default(''),
    /** Ours: where pending archives are journalled; default in the Jupyter data directory. */
    journal_dir: absoluteOrEmpty('nothing').default(''),
    /** Ours: the SDK's checksum mode (`when_required` for servers that reject CRC32 headers). */
    object_checksums: z
      .enum(['when_supported', 'when_required'], {
        error: "must be 'when_supported' or 'when_required'"
      })
      .default('when_supported'),
    /** Ours: how long one object-storage request may take before it counts as failed. */
    object_timeout_seconds: integerSetting(1, 3600).default(30),
    /** Ours: the longest wait between two attempts to archive a save (backoff cap). */
    archive_retry_max_seconds: integerSetting(1, 3600).default(30),
    /**
     * Ours: at most one archived version per notebook per this many seconds, always the newest
     * state (a writer that saves after every cell, such as papermill, would otherwise add a
     * version per cell); the last state of a burst is archived at the end of its interval.
     * 0 archives every change.
     */
    archive_min_interval_seconds: integerSetting(0, 86_400).default(0),
    /**
     * Ours: how often the whole root is compared with the archive index (a scan also runs at
     * start-up). It catches what a watcher cannot see: network file systems, overflows.
     */
    archive_scan_interval_seconds: integerSetting(1, 86_400).default(60),
    /** Ours: watch the root for writes by kernels, terminals and git (inotify); off: scan only. */
    archive_watch: booleanSetting.default(true),
    /** Ours: the files archived, as globs of API paths; notebooks by default. */
    archive_include: patternList.default(['**/*.ipynb']),
    /** Ours: files and folders never archived, as globs (hidden paths never are). */
    archive_exclude: patternList.default([]),
    /**
     * Ours: who answers the contents API: `node` (the gateway's own manager), `jupyter`
     * (Python's, behind the proxy), or `auto` (decided from what the upstream loads).
     */
    contents_backend: z
      .enum(['auto', 'node', 'jupyter'], { error: "must be 'auto', 'node' or 'jupyter'" })
      .default('auto'),
    /**
     * Ours: with the `node` contents backend, a file's archived versions are its checkpoints
     * (File › Revert to Checkpoint offers them), not only Jupyter's one.
     */
    versions_as_checkpoints: booleanSetting.default(true),
    /** Ours: the most archived versions a checkpoint listing shows (the newest ones). */
    versions_as_checkpoints_max: integerSetting(1, 1000).default(50),
    /**
     * Ours: the JupyterHub credential service (`jupyter-store credentials-service`) from which a
     * single-user server takes short-lived credentials scoped to its user's prefixes, in place
     * of `object_access_key_id`; unset: the credentials above.
     */
    credentials_service_url: z
      .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })
      .optional(),
    /** Ours, for the credential service: the role it assumes (AWS needs one; MinIO ignores it). */
    credentials_role_arn: z.string().default(''),
    /** Ours, for the credential service: how long the credentials it mints last. */
    credentials_duration_seconds: integerSetting(900, 43_200).default(3600),
    /** Ours, for the credential service: whether users' credentials may write published copies. */
    credentials_allow_publish: booleanSetting.default(false)
  })
  .strict()
  .superRefine((settings, context) => {
    const hasId = settings.object_access_key_id !== undefined;
    const hasSecret = settings.object_secret_access_key !== undefined;
    if (hasId !== hasSecret) {
      context.addIssue({
        code: 'custom',
        path: [hasId ? 'object_secret_access_key' : 'object_access_key_id'],
        message: 'must be set together with the other key, or both left unset'
      });
    }
    const named = settings.named_prefix.replace(/^\/+|\/+$/g, '');
    if (named === '') {
      context.addIssue({ code: 'custom', path: ['named_prefix'], message: 'must not be empty' });
    } else {
      for (const other of ['workspace_prefix', 'published_prefix'] as const) {
        const overlap = prefixOverlap(named, settings[other]);
        if (overlap !== undefined) {
          context.addIssue({
            code: 'custom',
            path: ['named_prefix'],
            message: `must be apart from ${other} ("${settings[other]}"): it ${overlap} it`
          });
        }
      }
    }
  });

/**
 * How two key prefixes overlap, compared segment by segment (`named` neither holds nor is held
 * by `named2`): `equals`, `is inside` or `contains`; undefined when apart, or when `other` is
 * empty (no prefix, such as a `published_prefix` left empty to turn publishing off).
 */
export function prefixOverlap(
  prefix: string,
  other: string
): 'equals' | 'is inside' | 'contains' | undefined {
  const segments = (text: string) => text.split('/').filter(part => part !== '');
  const mine = segments(prefix);
  const theirs = segments(other);
  if (mine.length === 0 || theirs.length === 0) return undefined;
  const common = Math.min(mine.length, theirs.length);
  for (let i = 0; i < common; i++) if (mine[i] !== theirs[i]) return undefined;
  if (mine.length === theirs.length) return 'equals';
  return mine.length > theirs.length ? 'is inside' : 'contains';
}

/** Settings after validation and defaults. */
export type StoreSettings = z.output<typeof StoreSettingsSchema>;

/** The names of the settings. */
export type StoreSettingName = keyof StoreSettings;

/** Every setting's name, in the schema's order. */
export const STORE_SETTING_NAMES = Object.keys(StoreSettingsSchema.shape) as StoreSettingName[];

/** Settings that hold credentials: never logged, never sent, shown as `<redacted>`. */
export const CREDENTIAL_SETTINGS: readonly StoreSettingName[] = [
  'object_access_key_id',
  'object_secret_access_key'
];

/** The settings with credentials replaced by `<redacted>` (unset ones stay unset). */
export function redactSettings(settings: StoreSettings): Record<string, unknown> {
  const shown: Record<string, unknown> = { ...settings };
  for (const name of CREDENTIAL_SETTINGS) {
    if (shown[name] !== undefined) shown[name] = '<redacted>';
  }
  return shown;
}

/** Which object store the settings select. */
export type StorageMode = 'embedded' | 's3';

/**
 * The embedded local store when neither an endpoint nor a bucket is configured (so a fresh
 * machine archives with no configuration); S3 or an S3-compatible server otherwise.
 */
export function storageMode(settings: StoreSettings): StorageMode {
  return settings.object_endpoint_url === undefined && settings.object_bucket === ''
    ? 'embedded'
    : 's3';
}

/** The bucket name the embedded store uses when none is configured. */
export const EMBEDDED_BUCKET = 'jupyter-store';
