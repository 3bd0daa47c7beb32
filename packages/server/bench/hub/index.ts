/**
 * `npm run bench:hub`: 20 users saving through a real JupyterHub, with `jupyter-store
 * singleuser` archiving to a distributed MinIO, side by side with 20 users of the same Hub on
 * plain `jupyterhub-singleuser`: Hub-wide saves per second, save latency, time from save to
 * archived, and S3 requests and bytes per save. Docs/benchmarks.md says how each is measured
 * (report.ts holds that text).
 *
 * #### Notes
 * - One Hub, one cluster, every server started at once; then rounds in the order gateway,
 *   plain, plain, gateway, each user saving its own notebook of the round every 2 s (the load
 *   test's schedule and client, test/support/hubLoad.ts). Each round saves a new path, so a
 *   round's versions are its own.
 * - After the rounds every gateway version is read back and matched to its save: a lost,
 *   misplaced or reordered acknowledged save fails the run (exit status 1); a missed target does
 *   not.
 *
 * Options: `--quick` (3 + 3 users, one 15 s round each: a smoke run, docs untouched),
 * `--skip-build`, `--no-docs`.
 */
import { parseArgs } from 'node:util';
import { startDistributedMinio } from '../../test/support/distributedMinio';
import { startLoadHub } from '../../test/support/hubLoad';
import { createVersionedBucket, s3ClientFor } from '../../test/support/objectServers';
import { build } from '../build';
import { cleanupStep, log } from '../cleanup';
import { DOCS_FILE, writeGeneratedSection } from '../docs';
import { commandLine, runBenchmark } from '../harness';
import { countClientRequests } from './metrics';
import { HUB_SECTION, hubReport } from './report';
import { readBack, runRound, type IRound, type IRoundContext, type ServerKind } from './rounds';

const { values: options } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    'skip-build': { type: 'boolean', default: false },
    'no-docs': { type: 'boolean', default: false }
  },
  strict: true,
  allowPositionals: false
});

const BUCKET = 'hub-bench';
const INTERVAL_MS = 2_000;
/** Users per kind of server, and the rounds (each kind saves for 2 minutes in all). */
const USERS = options.quick ? 3 : 20;
const ROUNDS: ReadonlyArray<{ kind: ServerKind; seconds: number }> = options.quick
  ? [
      { kind: 'gateway', seconds: 15 },
      { kind: 'plain', seconds: 15 }
    ]
  : [
      { kind: 'gateway', seconds: 60 },
      { kind: 'plain', seconds: 60 },
      { kind: 'plain', seconds: 60 },
      { kind: 'gateway', seconds: 60 }
    ];
/** The whole run is aborted (servers stopped) after this long. */
const RUN_DEADLINE_MS = 20 * 60_000;

async function run(): Promise<void> {
  if (!options['skip-build']) build();
  const started = Date.now();
  const command = commandLine('bench:hub');
  log('starting a distributed MinIO (4 nodes x 2 drives)');
  const cluster = await startDistributedMinio({ env: { MINIO_PROMETHEUS_AUTH_TYPE: 'public' } });
  cleanupStep(() => cluster.dispose());
  await createVersionedBucket(cluster, BUCKET);
  const s3 = s3ClientFor(cluster);
  const ownRequests = countClientRequests(s3);
  const name = (kind: string, i: number): string => `${kind}${String(i + 1).padStart(2, '0')}`;
  const users = {
    gateway: Array.from({ length: USERS }, (_, i) => name('store', i)),
    plain: Array.from({ length: USERS }, (_, i) => name('plain', i))
  };
  log(`starting a JupyterHub and ${2 * USERS} single-user servers`);
  const load = await startLoadHub({
    cluster,
    bucket: BUCKET,
    users: users.gateway,
    plainUsers: users.plain
  });
  cleanupStep(() => load.stop());
  log(`every server started in ${(load.startMs / 1000).toFixed(1)} s`);
  const context: IRoundContext = {
    hub: load.hub,
    tokens: load.tokens,
    cluster,
    s3,
    ownRequests,
    bucket: BUCKET,
    intervalMs: INTERVAL_MS,
    drainTimeoutMs: 120_000
  };
  const rounds: IRound[] = [];
  for (const [index, { kind, seconds }] of ROUNDS.entries()) {
    log(`round ${index + 1} of ${ROUNDS.length}: ${USERS} ${kind} users for ${seconds} s`);
    rounds.push(
      await runRound(context, kind, users[kind], `round${index + 1}.ipynb`, seconds * 1000)
    );
  }
  log('reading every archived version back');
  for (const round of rounds.filter(r => r.kind === 'gateway')) {
    await readBack(context, round, users.gateway);
  }
  s3.destroy();
  const { text, allMet } = hubReport({
    command,
    seconds: (Date.now() - started) / 1000,
    users: USERS,
    intervalMs: INTERVAL_MS,
    startMs: load.startMs,
    rounds
  });
  process.stdout.write(`\n${text}\n`);
  if (!options.quick && !options['no-docs']) {
    writeGeneratedSection(HUB_SECTION, text);
    log(`wrote ${DOCS_FILE}`);
  }
  if (!allMet) log('some targets were missed (a measurement: the exit status stays 0)');
}

void runBenchmark(run, RUN_DEADLINE_MS);
