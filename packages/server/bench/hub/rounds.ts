/**
 * The rounds of `npm run bench:hub`: one population of users saves on the schedule while the
 * other is idle; for the gateway's users, the round lasts until every acknowledged save is
 * listed in the bucket, with MinIO's request counters read around it.
 */
import { ListObjectVersionsCommand, type S3Client } from '@aws-sdk/client-s3';
import type { IDistributedMinio } from '../../test/support/distributedMinio';
import type { IHub } from '../../test/support/hub';
import {
  acknowledged,
  archivedSaves,
  archiveProblems,
  runSaveSchedule,
  type ISaveOutcome
} from '../../test/support/hubLoad';
import { log } from '../cleanup';
import { sleep } from '../harness';
import { requestsBetween, scrapeS3Counts } from './metrics';

/** Which servers a round's users run. */
export type ServerKind = 'gateway' | 'plain';

/** One round's saves and, for the gateway, what reached the bucket. */
export interface IRound {
  readonly kind: ServerKind;
  readonly path: string;
  readonly durationMs: number;
  readonly outcomes: readonly ISaveOutcome[];
  /** From the end of the schedule until every acknowledged save was listed (gateway only). */
  readonly drainMs?: number;
  /** S3 requests by API during the round and its drain, the benchmark's own taken off. */
  readonly requests?: ReadonlyMap<string, number>;
  /** Bytes MinIO received during the round and its drain. */
  readonly receivedBytes?: number;
  /** Each acknowledged save's version: the time MinIO gives it minus the save's answer, in ms. */
  archiveLagMs?: number[];
  /** Sizes of the round's archived versions, in bytes. */
  versionBytes?: number[];
}

/** What a round needs. */
export interface IRoundContext {
  readonly hub: IHub;
  readonly tokens: ReadonlyMap<string, string>;
  readonly cluster: IDistributedMinio;
  readonly s3: S3Client;
  /** The benchmark client's own S3 requests, by API, as counted so far. */
  readonly ownRequests: ReadonlyMap<string, number>;
  readonly bucket: string;
  readonly intervalMs: number;
  /** How long the archive may take to list every save once the schedule ends. */
  readonly drainTimeoutMs: number;
}

/** Run one round: `users` save `path` on the schedule for `durationMs`. */
export async function runRound(
  context: IRoundContext,
  kind: ServerKind,
  users: readonly string[],
  path: string,
  durationMs: number
): Promise<IRound> {
  const tokens = new Map(users.map(user => [user, context.tokens.get(user) ?? '']));
  const archiving = kind === 'gateway';
  const before = archiving ? await scrapeS3Counts(context.cluster) : undefined;
  const ownBefore = new Map(context.ownRequests);
  const outcomes = await runSaveSchedule({
    hub: context.hub,
    tokens,
    path,
    intervalMs: context.intervalMs,
    durationMs
  });
  if (!before) return { kind, path, durationMs, outcomes };
  const scheduleEnd = Date.now();
  await waitUntilListed(context, users, path, outcomes);
  const drainMs = Date.now() - scheduleEnd;
  const after = await scrapeS3Counts(context.cluster);
  const own = new Map(
    [...context.ownRequests].map(([api, count]) => [api, count - (ownBefore.get(api) ?? 0)])
  );
  return {
    kind,
    path,
    durationMs,
    outcomes,
    drainMs,
    requests: requestsBetween(before, after, own),
    receivedBytes: after.receivedBytes - before.receivedBytes
  };
}

/** Poll the bucket until each user's key has a version per acknowledged save. */
async function waitUntilListed(
  context: IRoundContext,
  users: readonly string[],
  path: string,
  outcomes: readonly ISaveOutcome[]
): Promise<void> {
  const deadline = Date.now() + context.drainTimeoutMs;
  for (const user of users) {
    const wanted = outcomes.filter(o => o.user === user && acknowledged(o)).length;
    const key = `workspace/${user}/${path}`;
    for (;;) {
      const listed = await context.s3.send(
        new ListObjectVersionsCommand({ Bucket: context.bucket, Prefix: key })
      );
      const count = (listed.Versions ?? []).filter(version => version.Key === key).length;
      if (count >= wanted) break;
      if (Date.now() > deadline) {
        throw new Error(`${key}: ${count} versions of ${wanted} acknowledged saves listed`);
      }
      await sleep(500);
    }
  }
}

/**
 * Read a gateway round's versions back (after every round, so that these reads are in no
 * round's counts): check that every acknowledged save is archived in order under its user's
 * prefix, and note each one's lag from answer to version.
 *
 * @throws when a save was lost, misplaced or reordered.
 */
export async function readBack(
  context: IRoundContext,
  round: IRound,
  users: readonly string[]
): Promise<void> {
  const lags: number[] = [];
  const sizes: number[] = [];
  const problems: string[] = [];
  for (const user of users) {
    const key = `workspace/${user}/${round.path}`;
    const archived = await archivedSaves(context.s3, context.bucket, key);
    problems.push(...archiveProblems(user, key, round.outcomes, archived));
    const versionOf = new Map(archived.map(version => [version.seq, version]));
    for (const outcome of round.outcomes) {
      const version = versionOf.get(outcome.seq);
      if (outcome.user !== user || !acknowledged(outcome) || !version) continue;
      lags.push(version.lastModified - outcome.answeredAt);
      sizes.push(version.size);
    }
  }
  if (problems.length > 0) {
    log(problems.join('\n'));
    throw new Error(`${problems.length} archive problems in the round of ${round.path}`);
  }
  round.archiveLagMs = lags;
  round.versionBytes = sizes;
}
