/**
 * What the gateway adds to the contents API when Python's contents manager answers it
 * (`contents_backend = jupyter`): the phase `contents` of `npm run bench:gateway`. In one run,
 * side by side, the same client sends the same schedule to:
 *
 * - (a) plain JupyterLab from the project venv (`.venv/bin/jupyter lab` on a loopback port, no
 *   gateway), started as the gateway starts its own Jupyter (isolated Jupyter directories, the
 *   token in the environment, the default log level);
 * - (b) `jupyter-store lab --StoreSettings.contents_backend=jupyter`, archiving to the embedded
 *   store: every save is proxied to Jupyter, and once Jupyter answered 2xx the gateway reads the
 *   written file and journals it durably (fsync) before it relays the answer;
 * - (b′) the same archiving to MinIO (the pinned build; skipped with `--skip-minio`);
 * - (b0) the same with archiving off (`workspace_prefix` empty): the proxy alone, which tells the
 *   proxy's share of (b)'s overhead from the relayed-save hook's;
 * - (c) for reference, `jupyter-store lab --StoreSettings.contents_backend=node` (the gateway's
 *   own contents manager), archiving to the embedded store.
 *
 * Two measurements, and a breakdown:
 *
 * 1. Save latency: PUTs of a ~100 KB notebook (as JupyterLab sends a save, a unique id in its
 *    metadata so that every save is new content), paced at 20/s over 20 paths (open loop; one
 *    save per path at a time), in rounds: a plain round before and after every round of another
 *    side, which is compared with the mean of those two (close in time, so that load from
 *    elsewhere that drifts hits both alike), the other sides rotating. An archiving side's
 *    round lasts until its journal is empty, and every round is followed by a quiet time for
 *    the watcher's and the event bus's looks at the last saves, inside the round's CPU window.
 * 2. GET throughput: `GET api/contents/<path>?type=notebook&content=1` of a 100 KB and a 1 MB
 *    notebook with a fixed number of keep-alive workers, in rounds of fixed time scheduled as
 *    the saves', for (a), (b) and (c) (the archive does not touch a GET, so (b′) and (b0) would
 *    repeat (b)).
 * 3. Where a relayed save's time goes: the gateways with the `jupyter` backend time their own
 *    work during the rounds (a preload wraps the built classes' methods: Jupyter's part as the
 *    proxy sees it, the relayed-save hook, its read and its journal append, the answer after
 *    it); and the hook's pieces alone, in this process with the product's own code on the same
 *    file system, paced as the saves are: the read (`lstat`, `readFile`, SHA-256), the journal
 *    append (`ArchiveJournal.append`, durable), and the same record written without its fsyncs
 *    (`writeFileAtomic` with `durable: false`).
 *
 * In this folder: the sides (servers.ts), the gateway's own timings (timings.ts), the rounds and
 * measurements (measure.ts) and the report (sections.ts, report.ts); this file runs the phase.
 *
 * #### Notes
 * - That a side is what it says is checked, not assumed: each gateway's `GET api/store` must
 *   report the backend asked for (`contents_backend.backend`) and archiving on or off; the answer
 *   of a probe save must come from Jupyter (Tornado's `Server` header) on (a) and (b*), and not
 *   on (c). After the rounds, every save to an archiving gateway must be a version: for each
 *   path, `GET api/store/versions/<path>` lists as many versions as saves were sent, and the
 *   latest holds the id of the last save; the journal is empty and `sources.gateway.seen`
 *   counted every save.
 * - CPU time of the gateway, of its Jupyter, of MinIO and of this process around every round

/** Start the servers, measure, check every side, stop them. */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../test/support/jupyterServer';
import {
  type IObjectServer,
  createVersionedBucket,
  pinnedObjectServers,
  startMinio
} from '../../test/support/objectServers';
import { cleanupStep, log } from '../cleanup';
import { otherLoad } from '../load';
import { generateNotebook } from '../notebook';
import { formatProfileSummary, summariseProfile } from '../profile';
import { Workload } from '../saves';
import { measureGets, measurePieces, measureSaves, waits } from './measure';
import {
  type ContentsSide,
  GET_SIDES,
  GET_SIZES,
  type IContentsResult,
  type IGatewayTimings,
  type ISideCheck,
  MINIO_BUCKET,
  PROFILED_SIDES,
  SAVE_DIR,
  SAVE_NOTEBOOK_BYTES,
  SIDES,
  SIDE_ORDER,
  contentsPlan
} from './model';
import { checkArchive, checkSide, startGateway, startPlain } from './servers';

export type { ContentsSide, IContentsResult } from './model';
export { CONTENTS_SECTION, contentsChecks, contentsInvalid, contentsReport } from './report';

export async function runContents(options: {
  readonly quick: boolean;
  readonly minio: boolean;
  readonly profile: boolean;
}): Promise<IContentsResult> {
  const plan = contentsPlan(options.quick);
  const sides = SIDE_ORDER.filter(side => side !== 'relayMinio' || options.minio);
  const otherCoresBefore = await otherLoad(2_000);
  log(`other processes used ${otherCoresBefore.toFixed(2)} cores over the last 2 s`);
  let minio: IObjectServer | undefined;
  if (sides.includes('relayMinio')) {
    log('starting MinIO');
    const started = await startMinio();
    minio = started;
    cleanupStep(() => started.dispose());
    await createVersionedBucket(started, MINIO_BUCKET);
  }
  const profileDir = options.profile
    ? join(tmpdir(), 'jupyter-store-bench-profiles', `contents-${Date.now()}`)
    : undefined;
  const timingsDir = await mkdtemp(join(tmpdir(), 'bench-relay-timings-'));
  cleanupStep(() => rm(timingsDir, { recursive: true, force: true }));
  log(`starting ${sides.map(side => SIDES[side].tag).join(', ')}`);
  const servers = await Promise.all(
    sides.map(side =>
      side === 'plain'
        ? startPlain()
        : startGateway(side, minio, { timings: timingsDir, profile: profileDir })
    )
  );
  for (const server of servers) {
    cleanupStep(async () => server.saver.close());
    log(`${SIDES[server.side].tag} ${SIDES[server.side].label}: Jupyter at ${server.upstream}`);
  }

  const workload = new Workload(SAVE_NOTEBOOK_BYTES);
  const notebooks = GET_SIZES.map(size => ({
    ...size,
    file: `get/nb-${size.id}.ipynb`,
    disk: generateNotebook(size.bytes).diskBytes
  }));
  for (const server of servers) {
    for (const dir of [SAVE_DIR, 'get', 'probe']) {
      await mkdir(join(server.rootDir, dir), { recursive: true });
    }
    for (const notebook of notebooks) {
      await writeFile(join(server.rootDir, notebook.file), notebook.disk);
    }
  }
  const checks: ISideCheck[] = [];
  for (const server of servers) checks.push(await checkSide(server, workload));
  for (const server of servers) if (server.archiving) await server.gateway?.drained();

  let t = Date.now();
  const { rounds: saveRounds, sent } = await measureSaves(servers, workload, plan.saves);
  log(`saves: ${((Date.now() - t) / 1000).toFixed(1)} s`);

  t = Date.now();
  const getServers = servers.filter(server => GET_SIDES.includes(server.side));
  const gets: Array<IContentsResult['gets'][number]> = [];
  for (const notebook of notebooks) {
    log(`GET ${notebook.label}: ${plan.gets.concurrency} concurrent requests`);
    const measured = await measureGets(getServers, notebook.file, plan.gets);
    gets.push({ label: notebook.label, diskBytes: notebook.disk.length, ...measured });
  }
  log(`GETs: ${((Date.now() - t) / 1000).toFixed(1)} s`);

  for (const server of servers) {
    if (!server.archiving) continue;
    const check = checks.find(found => found.side === server.side);
    const archive = await checkArchive(server, sent.get(server.side) ?? [], 1);
    if (check !== undefined) checks[checks.indexOf(check)] = { ...check, archive };
    log(
      `${SIDES[server.side].tag}: ${archive.versions} versions for ${archive.saves} saves, ` +
        `the latest of ${archive.latestMatching} of ${archive.paths} paths is the last save`
    );
  }

  log(`pieces of a relayed save: ${plan.pieces} of each, at ${plan.saves.rate}/s`);
  const savedFile = join(servers[0].rootDir, SAVE_DIR, 'nb-00.ipynb');
  const pieces = await measurePieces(savedFile, plan.pieces, plan.saves.rate);
  const diskBytes = (await readFile(savedFile)).length;

  const profile: string[] = [];
  for (const server of servers) {
    if (profileDir === undefined || !PROFILED_SIDES.includes(server.side)) continue;
    if (server.gateway === undefined) continue;
    await server.stop();
    const name = `${server.gateway.gateway.record.pid}.cpuprofile`;
    profile.push(
      `### CPU profile of the ${SIDES[server.side].tag} gateway (${join(profileDir, name)})`,
      '',
      (await readdir(profileDir)).includes(name)
        ? formatProfileSummary(await summariseProfile(join(profileDir, name), REPO_ROOT))
        : 'no profile: did the gateway exit cleanly?',
      ''
    );
  }
  for (const server of servers) await server.stop();
  const timings: Partial<Record<ContentsSide, IGatewayTimings>> = {};
  for (const server of servers) {
    const pid = server.gateway?.gateway.record.pid;
    if (pid === undefined || server.side === 'node') continue;
    try {
      timings[server.side] = JSON.parse(
        await readFile(join(timingsDir, `${pid}.timings.json`), 'utf8')
      ) as IGatewayTimings;
    } catch (error) {
      log(`${SIDES[server.side].tag}: no timings (${(error as Error).message})`);
    }
  }

  const upstreams: Partial<Record<ContentsSide, string>> = {};
  for (const server of servers) upstreams[server.side] = server.upstream;
  return {
    plan,
    sides,
    putBytes: workload.putBytes,
    diskBytes,
    saveRounds,
    gets,
    pieces,
    checks,
    upstreams,
    minioVersion:
      minio === undefined ? undefined : (pinnedObjectServers().MINIO_VERSION ?? 'unknown'),
    otherCoresBefore,
    profile: profileDir === undefined ? undefined : profile.join('\n'),
    timings,
    waits: { ...waits }
  };
}
