import { createHash } from 'node:crypto';
import { displayable, objectKey } from './keys';
import { describeStoreTarget, type IStoreTarget } from './objectStore';
import { ObjectStoreError } from './objectStoreError';

/**
 * Bucket lifecycle rules: the one rule jupyter-store owns per workspace prefix (the retention
 * rule), how it is merged into a bucket's configuration without touching anyone else's rules,
 * and how the embedded store applies noncurrent-version expiration itself.
 */

/**
 * One rule of a bucket's lifecycle configuration, in S3's own shape (the field names of the XML
 * and of the AWS SDK).
 *
 * #### Notes
 * Rules are carried whole, fields this module does not know included (transitions, tag filters,
 * multipart clean-up …): a read-modify-write of the configuration must give other tools' rules
 * back exactly as it read them.
 */
export interface ILifecycleRule {
  readonly ID?: string;
  /** `Enabled` or `Disabled`. */
  readonly Status: string;
  readonly Filter?: { readonly Prefix?: string; readonly [field: string]: unknown };
  /** The top-level prefix older configurations use instead of `Filter`. */
  readonly Prefix?: string;
  readonly NoncurrentVersionExpiration?: {
    readonly NoncurrentDays?: number;
    readonly NewerNoncurrentVersions?: number;
  };
  readonly [field: string]: unknown;
}

/** What the retention rule says, in the store API's terms. */
export interface IRetention {
  /** Noncurrent versions of each key kept whatever their age, the newest (0–100). */
  readonly keepNewest: number;
  /** Days a version stays noncurrent before it may expire (1–36500). */
  readonly noncurrentDays: number;
}

/** How the IDs of retention rules start; the rest names the workspace prefix. */
export const RETENTION_RULE_ID_PREFIX = 'jupyter-store-retention:';

/** The longest rule ID S3 accepts. */
export const MAX_RULE_ID_LENGTH = 255;

/** The most rules one configuration may hold, as S3 allows. */
export const MAX_LIFECYCLE_RULES = 1000;

/**
 * The filter prefix of the retention rule: the workspace prefix as keys use it (outer slashes
 * trimmed) followed by a slash, so that `workspace/` covers `workspace/a.ipynb` but not
 * `workspace2/a.ipynb`. Empty for an empty workspace prefix, which would cover the whole bucket
 * (published and named copies too): the store API refuses to set a rule then.
 */
export function retentionFilterPrefix(workspacePrefix: string): string {
  const trimmed = objectKey(workspacePrefix);
  return trimmed === '' ? '' : `${trimmed}/`;
}

/**
 * The ID of the retention rule of a workspace prefix: `jupyter-store-retention:<prefix>`.
 *
 * #### Notes
 * S3 limits IDs to 255 characters, and keys (so prefixes) may be 1024 bytes. A longer ID keeps
 * as much of the prefix as fits, whole characters only, and ends with `~` and 16 hex digits of
 * the whole prefix's SHA-256, so that two long prefixes that start alike still get their own
 * rules. The length is counted in UTF-8 bytes, which is never less than the characters S3
 * counts.
 */
export function retentionRuleId(workspacePrefix: string): string {
  const prefix = objectKey(workspacePrefix);
  const whole = RETENTION_RULE_ID_PREFIX + prefix;
  if (Buffer.byteLength(whole) <= MAX_RULE_ID_LENGTH) return whole;
  const tail = `~${createHash('sha256').update(prefix, 'utf8').digest('hex').slice(0, 16)}`;
  let head = RETENTION_RULE_ID_PREFIX;
  for (const character of prefix) {
    if (Buffer.byteLength(head + character + tail) > MAX_RULE_ID_LENGTH) break;
    head += character;
  }
  return head + tail;
}

/**
 * The retention rule of a workspace prefix. `ExpiredObjectDeleteMarker` is deliberately not
 * set: delete markers are how deleted notebooks are found again and how renames keep their
 * history, so a marker stays even when every version under it has expired.
 */
export function retentionRule(workspacePrefix: string, retention: IRetention): ILifecycleRule {
  return {
    ID: retentionRuleId(workspacePrefix),
    Status: 'Enabled',
    Filter: { Prefix: retentionFilterPrefix(workspacePrefix) },
    NoncurrentVersionExpiration: {
      NoncurrentDays: retention.noncurrentDays,
      // S3 takes 1 to 100; keeping none is the element left out.
      ...(retention.keepNewest > 0 ? { NewerNoncurrentVersions: retention.keepNewest } : {})
    }
  };
}

/** The retention rule of a workspace prefix in a configuration, and how many rules are not it. */
export function findRetention(
  rules: readonly ILifecycleRule[],
  workspacePrefix: string
): { readonly retention: IRetention | null; readonly otherRules: number } {
  const id = retentionRuleId(workspacePrefix);
  const ours = rules.find(rule => rule.ID === id);
  const expiration = ours?.NoncurrentVersionExpiration;
  return {
    retention: expiration
      ? {
          keepNewest: expiration.NewerNoncurrentVersions ?? 0,
          noncurrentDays: expiration.NoncurrentDays ?? 0
        }
      : null,
    otherRules: rules.filter(rule => rule.ID !== id).length
  };
}

/**
 * The configuration with the retention rule of `workspacePrefix` set to `retention` (replaced
 * where it was, else added last) or, for null, removed. Every other rule is kept as it was, in
 * its place.
 */
export function withRetention(
  rules: readonly ILifecycleRule[],
  workspacePrefix: string,
  retention: IRetention | null
): ILifecycleRule[] {
  const id = retentionRuleId(workspacePrefix);
  if (retention === null) return rules.filter(rule => rule.ID !== id);
  const ours = retentionRule(workspacePrefix, retention);
  const index = rules.findIndex(rule => rule.ID === id);
  return index < 0
    ? [...rules, ours]
    : rules.map((rule, position) => (position === index ? ours : rule));
}

/**
 * Check a configuration as S3 would before the embedded store keeps it: at most
 * {@link MAX_LIFECYCLE_RULES} rules, each with a status, IDs unique and not too long.
 *
 * @throws ObjectStoreError `bad-request` (`InvalidArgument`) otherwise.
 */
export function checkLifecycleRules(rules: readonly ILifecycleRule[]): void {
  const invalid = (reason: string) =>
    new ObjectStoreError(
      'bad-request',
      `Invalid lifecycle configuration: ${reason} (InvalidArgument)`,
      'InvalidArgument'
    );
  if (rules.length > MAX_LIFECYCLE_RULES) {
    throw invalid(`at most ${MAX_LIFECYCLE_RULES} rules, not ${rules.length}`);
  }
  const ids = new Set<string>();
  for (const rule of rules) {
    if (rule.Status !== 'Enabled' && rule.Status !== 'Disabled') {
      throw invalid('a rule status must be Enabled or Disabled');
    }
    if (rule.ID === undefined) continue;
    if (rule.ID.length > MAX_RULE_ID_LENGTH) {
      throw invalid(`a rule ID is at most ${MAX_RULE_ID_LENGTH} characters`);
    }
    if (ids.has(rule.ID)) throw invalid(`the rule ID "${displayable(rule.ID)}" is used twice`);
    ids.add(rule.ID);
  }
}

/**
 * A lifecycle call the server does not implement (S3 `NotImplemented`, as versitygw answers)
 * as a `not-supported` error; any other error unchanged.
 */
export function lifecycleSupport(error: unknown, target: IStoreTarget): unknown {
  if (!(error instanceof ObjectStoreError) || error.code !== 'NotImplemented') return error;
  return new ObjectStoreError(
    'not-supported',
    `Could not ${target.operation} ${describeStoreTarget(target)}: the object store does not ` +
      'support bucket lifecycle configuration (NotImplemented)',
    error.code
  );
}

/** One entry of a key's history, as the embedded store keeps it. */
export interface IHistoryEntry {
  readonly versionId: string;
  /** Milliseconds since the epoch. */
  readonly lastModified: number;
  readonly deleteMarker?: boolean;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The versions of `key` that its bucket's lifecycle rules expire at `now`, given the key's
 * history newest first: how the embedded store applies `NoncurrentVersionExpiration`.
 *
 * #### Notes
 * As S3 documents it: a version becomes noncurrent when the next newer entry of its key (a
 * version or a delete marker) is written; it expires once it has been noncurrent for
 * `NoncurrentDays`, rounded up to the next midnight UTC, and at least `NewerNoncurrentVersions`
 * noncurrent versions of the key are newer than it (the newest that many are kept, whatever
 * their age). Where the embedded store is simpler:
 *
 * - only rules whose filter is a plain prefix (`Filter.Prefix`, the old top-level `Prefix`, or
 *   none) are applied; rules that filter on tags or sizes, and every other action, are kept in
 *   the configuration but not applied;
 * - delete markers are never expired and do not count as noncurrent versions;
 * - rules are applied to a key when it gets a new version or delete marker, not by a daily
 *   scan: a key written no more keeps its versions until its next write.
 */
export function expiredVersions(
  rules: readonly ILifecycleRule[],
  key: string,
  history: readonly IHistoryEntry[],
  now: number
): string[] {
  const expirations = noncurrentExpirations(rules, key);
  if (expirations.length === 0) return [];
  const expired: string[] = [];
  let newerNoncurrent = 0;
  // The first entry is the current one (a version, or the marker of a deleted key).
  for (let index = 1; index < history.length; index++) {
    const entry = history[index];
    if (entry.deleteMarker) continue;
    const noncurrentSince = history[index - 1].lastModified;
    const due = expirations.some(
      expiration =>
        newerNoncurrent >= expiration.keep &&
        now >= Private.expiryTime(noncurrentSince, expiration.days)
    );
    if (due) expired.push(entry.versionId);
    newerNoncurrent++;
  }
  return expired;
}

/**
 * The noncurrent-version expirations of the enabled rules that cover `key` by prefix (see
 * {@link expiredVersions}): none means nothing of the key ever expires, so its history need not
 * be read.
 */
export function noncurrentExpirations(
  rules: readonly ILifecycleRule[],
  key: string
): Array<{ readonly days: number; readonly keep: number }> {
  const expirations: Array<{ days: number; keep: number }> = [];
  for (const rule of rules) {
    const days = rule.NoncurrentVersionExpiration?.NoncurrentDays;
    if (rule.Status !== 'Enabled' || days === undefined || !Private.coversByPrefix(rule, key)) {
      continue;
    }
    expirations.push({
      days,
      keep: rule.NoncurrentVersionExpiration?.NewerNoncurrentVersions ?? 0
    });
  }
  return expirations;
}

namespace Private {
  /** Does a rule filter by prefix alone, and does that prefix cover `key`? */
  export function coversByPrefix(rule: ILifecycleRule, key: string): boolean {
    const filter = rule.Filter ?? {};
    const fields = Object.keys(filter).filter(
      field => (filter as Record<string, unknown>)[field] !== undefined
    );
    if (fields.some(field => field !== 'Prefix')) return false;
    const prefix = filter.Prefix ?? rule.Prefix ?? '';
    return key.startsWith(prefix);
  }

  /** When a version noncurrent since `since` may expire: `days` later, at the next midnight UTC. */
  export function expiryTime(since: number, days: number): number {
    return Math.ceil((since + days * DAY_MS) / DAY_MS) * DAY_MS;
  }
}
