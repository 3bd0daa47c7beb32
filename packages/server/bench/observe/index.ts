/**
 * How the archive keeps up with writers other than the gateway's contents API, three
 * measurements beside a reference, in one run. Part of `npm run bench:archive` (the phases
 * `bulk`, `rescan` and `observed`; `--only observation` runs these three alone):
 *
 * 1. Bulk first start: a root of N generated notebooks (10,000 of about 20 KB, varied sizes, in
 *    500 folders). Reference: `mc mirror` (the pinned MinIO client) copying the tree to a fresh
 *    versioned bucket. Product: `jupyter-store lab` started on that root with a fresh journal
 *    and index, archiving to another fresh bucket of the same MinIO, timed from its spawn until
 *    `GET api/store` says every notebook was archived (then checked with a listing), with the
 *    gateway's RSS sampled every 250 ms. Each side runs twice, the order alternating.
 * 2. Unchanged re-scan: a root of 100,000 files (the 10,000 notebooks and 90,000 small
 *    `.py`/`.csv`/`.txt` files in the same folders), committed to git. Reference: a warm
 *    `git status --porcelain`. Product: the reconciliation scan in this process
 *    (`Archiving.start` with the embedded store, `archive_watch` false), `scanNow()` once the
 *    first scan has archived everything and built the index. Runs alternate.
 * 3. Observed write → version listed: a real kernel, started through the gateway's REST API
 *    and driven over its websocket, rewrites notebooks (100 writes to 10 paths, every 250 ms);
 *    from the kernel's `time.time()` just after the file is closed until a `ListObjectVersions`
 *    of the key (every 20 ms) lists the version that holds that write's id.
 *
 * The measurements are in this folder, one file each (bulk.ts, rescan.ts, observed.ts), with the
 * trees (tree.ts), the processes (servers.ts) and the report (report.ts); this file runs them.
 *
 * #### Notes
 * - The trees are generated deterministically (fixed seeds): the same run writes the same bytes.
 *   The notebooks are generated once per run; the re-scan root gets a copy.
 * - Everything is on 127.0.0.1; one MinIO (the pinned build) serves phases 1 and 3.
 * - Every loop is bounded in count and in time; servers, kernels and temporary trees are removed
 *   at the end of their phase, and on a signal (bench/cleanup.ts).

/** Run the selected measurements; every server and tree is gone when this settles. */
import type { S3Client } from '@aws-sdk/client-s3';
import {
  type IObjectServer,
  pinnedObjectServers,
  s3ClientFor,
  startMinio
} from '../../test/support/objectServers';
import { cleanupStep, log } from '../cleanup';
import { machineBusyMs } from '../cpu';
import { sleep } from '../harness';
import { measureBulk } from './bulk';
import {
  type IBulkResult,
  type IObservationResult,
  type IObservedResult,
  type IRescanResult,
  type ObservationPhase,
  plans
} from './model';
import { measureObserved } from './observed';
import { measureRescan } from './rescan';
import { NotebookTree } from './tree';

export { OBSERVATION_PHASES, type IObservationResult, type ObservationPhase } from './model';
export { OBSERVATION_SECTION, observationProfiles, observationReport } from './report';

export async function runObservation(options: {
  phases: readonly ObservationPhase[];
  quick: boolean;
  profile: boolean;
}): Promise<IObservationResult> {
  const plan = plans(options.quick);
  const busyBefore = machineBusyMs();
  await sleep(2_000);
  const otherCoresBefore = (machineBusyMs() - busyBefore) / 2_000;
  log(`other processes used ${otherCoresBefore.toFixed(2)} cores over the last 2 s`);
  const tree = new NotebookTree(plan.tree);
  const pins = pinnedObjectServers();
  let minio: IObjectServer | undefined;
  let s3: S3Client | undefined;
  let disposeMinio: (() => Promise<void>) | undefined;
  const objectStore = async (): Promise<{ minio: IObjectServer; s3: S3Client }> => {
    if (minio === undefined || s3 === undefined) {
      log('starting MinIO');
      const started = await startMinio();
      const client = s3ClientFor(started);
      disposeMinio = cleanupStep(async () => {
        client.destroy();
        await started.dispose();
      });
      [minio, s3] = [started, client];
    }
    return { minio, s3 };
  };
  try {
    let bulk: IBulkResult | undefined;
    let rescan: IRescanResult | undefined;
    let observed: IObservedResult | undefined;
    if (options.phases.includes('bulk')) {
      const t = Date.now();
      const store = await objectStore();
      bulk = await measureBulk(store.minio, store.s3, tree, plan.bulk.runs, options.profile);
      log(`bulk first start: ${((Date.now() - t) / 1000).toFixed(1)} s`);
    }
    if (options.phases.includes('rescan')) {
      const t = Date.now();
      rescan = await measureRescan(tree, plan.rescan, options.profile);
      log(`unchanged re-scan: ${((Date.now() - t) / 1000).toFixed(1)} s`);
    }
    if (options.phases.includes('observed')) {
      const t = Date.now();
      const store = await objectStore();
      observed = await measureObserved(store.minio, store.s3, plan.observed);
      log(`observed writes: ${((Date.now() - t) / 1000).toFixed(1)} s`);
    }
    return {
      minioVersion: pins.MINIO_VERSION ?? 'unknown',
      mcVersion: pins.MC_VERSION ?? 'unknown',
      otherCoresBefore,
      bulk,
      rescan,
      observed
    };
  } finally {
    await disposeMinio?.();
    await tree.remove();
  }
}
