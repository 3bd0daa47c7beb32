/**
 * The measurements of the relayed contents phase: paced saves and GET load in rounds that put
 * a plain round before and after every other side's, each on a quiet machine; and the pieces of
 * a relayed save, in this process.
 */
import { createHash } from 'node:crypto';
import { lstat, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArchiveJournal } from '../../src/archive/journal';
import { writeFileAtomic } from '../../src/contents/fileio';
import { log } from '../cleanup';
import { sleep } from '../harness';
import {
  type ICpu,
  type IHttpPlan,
  type IHttpTarget,
  cpuNow,
  cpuSince,
  httpGet,
  loadRound,
  otherLoad
} from '../load';
import { type IPacedPlan, type IPacedSave, Workload, pacedStream } from '../saves';
import { formatMs, latency } from '../stats';
import {
  type ContentsSide,
  type IContentsResult,
  type IContentsServer,
  type IGetRound,
  type ISaveRound,
  QUIET_CORES,
  QUIET_SAMPLE_MS,
  QUIET_WAIT_MS,
  SAVE_DIR,
  SETTLE_MS,
  SIDES
} from './model';

/**
 * The order of the rounds: a plain round before and after every round of another side (which is
 * compared with the mean of those two, close in time, so that load from elsewhere that drifts
 * hits both alike), the other sides rotating by one every rotation and reversed every other.
 */
function sandwichSchedule<T>(plain: T, others: readonly T[], rotations: number): T[] {
  const order: T[] = [plain];
  for (let rotation = 0; rotation < rotations; rotation++) {
    const rotated = others.map((_, i) => others[(i + rotation) % others.length]);
    for (const other of rotation % 2 === 0 ? rotated : rotated.reverse()) order.push(other, plain);
  }
  return order;
}

/**
 * How the rounds waited for quiet: rounds, those that started without it, time spent waiting,
 * and rounds run again because other processes took more than {@link QUIET_CORES} during them.
 */
export const waits = { rounds: 0, late: 0, ms: 0, redone: 0 };

/** Attempts of a round at most (see {@link undisturbed}). */
export const MAX_ATTEMPTS = 4;

/**
 * Run a round once the machine is quiet, and again (at most {@link MAX_ATTEMPTS} times in all)
 * when other processes took more than {@link QUIET_CORES} cores during it: the last attempt is
 * kept.
 */
async function undisturbed<T extends { readonly cpu: ICpu; readonly seconds: number }>(
  label: string,
  run: () => Promise<T>
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    await quiet();
    const result = await run();
    const cores = result.cpu.others / (result.seconds * 1000);
    if (cores <= QUIET_CORES || attempt >= MAX_ATTEMPTS) return result;
    waits.redone++;
    log(`${label}: other processes took ${cores.toFixed(2)} cores during it: once more`);
  }
}

/** Wait until the rest of the machine is quiet (see {@link QUIET_CORES}). */
async function quiet(): Promise<void> {
  const start = Date.now();
  waits.rounds++;
  for (;;) {
    const cores = await otherLoad(QUIET_SAMPLE_MS);
    if (cores <= QUIET_CORES) break;
    if (Date.now() - start > QUIET_WAIT_MS) {
      log(`other processes still use ${cores.toFixed(2)} cores: measuring anyway`);
      waits.late++;
      break;
    }
  }
  waits.ms += Date.now() - start - QUIET_SAMPLE_MS;
}

/** The plain server first, and the others. */
function splitPlain(servers: readonly IContentsServer[]): {
  plain: IContentsServer;
  others: IContentsServer[];
} {
  const plain = servers.find(server => server.side === 'plain');
  if (plain === undefined) throw new Error('no plain Jupyter');
  return { plain, others: servers.filter(server => server !== plain) };
}

/**
 * Each round of a side against the plain rounds just before and after it: the ratio of a value
 * to their mean, and the difference.
 */
export function againstPlain<R extends { readonly seq: number }>(
  mine: readonly R[],
  plain: readonly R[],
  value: (round: R) => number
): { ratios: number[]; diffs: number[] } {
  const ratios: number[] = [];
  const diffs: number[] = [];
  for (const round of mine) {
    const around = plain.filter(other => Math.abs(other.seq - round.seq) === 1).map(value);
    const reference = around.reduce((sum, x) => sum + x, 0) / around.length;
    ratios.push(value(round) / reference);
    diffs.push(value(round) - reference);
  }
  return { ratios, diffs };
}

/** Measurement 1: paced saves, in the rounds of {@link sandwichSchedule}. */
export async function measureSaves(
  servers: readonly IContentsServer[],
  workload: Workload,
  plan: IPacedPlan
): Promise<{ rounds: ISaveRound[]; sent: Map<ContentsSide, IPacedSave[]> }> {
  const sent = new Map<ContentsSide, IPacedSave[]>(servers.map(server => [server.side, []]));
  log(`saves: warm-up, ${plan.warmup} per side`);
  for (const server of servers) {
    sent
      .get(server.side)
      ?.push(...(await pacedStream(server.saver, workload, SAVE_DIR, plan, plan.warmup)));
    if (server.archiving) await server.gateway?.drained();
  }
  await sleep(SETTLE_MS);
  const rounds: ISaveRound[] = [];
  const { plain, others } = splitPlain(servers);
  const schedule = sandwichSchedule(plain, others, plan.rounds);
  for (const [seq, server] of schedule.entries()) {
    const label = `saves round ${seq + 1}/${schedule.length} ${SIDES[server.side].tag}`;
    const round = await undisturbed(label, async (): Promise<ISaveRound> => {
      const cpuStart = cpuNow(server.load.pids);
      const start = performance.now();
      const wallStart = Date.now();
      const saves = await pacedStream(server.saver, workload, SAVE_DIR, plan, plan.saves);
      const answered = performance.now();
      const wall = { start: wallStart, end: Date.now() };
      sent.get(server.side)?.push(...saves);
      const drained = server.archiving
        ? ((await server.gateway?.drained(2)) ?? answered)
        : answered;
      await sleep(SETTLE_MS);
      const cpu = cpuSince(server.load.pids, cpuStart);
      const seconds = (performance.now() - start) / 1000;
      const lat = latency(saves.map(save => save.putMs));
      log(
        `${label}: p50 ${formatMs(lat.p50)}, p99 ${formatMs(lat.p99)}` +
          ` (other processes ${(cpu.others / (seconds * 1000)).toFixed(2)} cores)`
      );
      return { side: server.side, seq, saves, seconds, cpu, drainMs: drained - answered, wall };
    });
    rounds.push(round);
  }
  return { rounds, sent };
}

/** Measurement 2: GET load of one notebook, in the rounds of {@link sandwichSchedule}. */
export async function measureGets(
  servers: readonly IContentsServer[],
  file: string,
  plan: IHttpPlan
): Promise<{
  rounds: Partial<Record<ContentsSide, IGetRound[]>>;
  answerBytes: Partial<Record<ContentsSide, number>>;
}> {
  const targets = new Map<ContentsSide, IHttpTarget>();
  const answerBytes: Partial<Record<ContentsSide, number>> = {};
  for (const server of servers) {
    const path = `${server.baseUrl}api/contents/${file}?type=notebook&content=1`;
    const probe = await httpGet(server.endpoint, path, server.load.headers, undefined, false);
    if (probe.status !== 200)
      throw new Error(`${server.side}: GET ${path} answered ${probe.status}`);
    targets.set(server.side, { id: 'notebook', label: file, path, bytes: probe.bodyBytes });
    answerBytes[server.side] = probe.bodyBytes;
  }
  const target = (server: IContentsServer): IHttpTarget => {
    const found = targets.get(server.side);
    if (found === undefined) throw new Error(`no target for ${server.side}`);
    return found;
  };
  const rounds: Partial<Record<ContentsSide, IGetRound[]>> = {};
  for (const server of servers) {
    await loadRound(server.load, server.endpoint, target(server), plan, plan.warmupMs);
    rounds[server.side] = [];
  }
  const { plain, others } = splitPlain(servers);
  for (const [seq, server] of sandwichSchedule(plain, others, plan.rounds).entries()) {
    const result = await undisturbed(`GET ${file} round ${seq + 1} ${SIDES[server.side].tag}`, () =>
      loadRound(server.load, server.endpoint, target(server), plan, plan.roundMs)
    );
    rounds[server.side]?.push({ ...result, seq });
  }
  return { rounds, answerBytes };
}

/**
 * Measurement 3: the pieces of a relayed save, in this process with the product's code, paced
 * as the saves: the read of the saved file (`lstat`, `readFile`, SHA-256, as
 * `ArchiveIntake.relayedSave` and `saved` do), its durable journal record
 * (`ArchiveJournal.append`), and the same bytes written atomically without fsyncs.
 */
export async function measurePieces(
  file: string,
  count: number,
  rate: number
): Promise<IContentsResult['pieces']> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-relay-journal-'));
  const journal = new ArchiveJournal(join(dir, 'journal'));
  await journal.open();
  const pieces: IContentsResult['pieces'] = { read: [], append: [], unsynced: [] };
  try {
    const start = performance.now();
    for (let i = 0; i < count; i++) {
      await sleep(start + (i * 1000) / rate - performance.now());
      let t = performance.now();
      await lstat(file);
      const bytes = await readFile(file);
      createHash('sha256').update(bytes).digest('hex');
      pieces.read.push(performance.now() - t);
      t = performance.now();
      const record = await journal.append(`${SAVE_DIR}/nb-00.ipynb`, bytes, {
        durable: true,
        source: 'gateway'
      });
      pieces.append.push(performance.now() - t);
      await journal.remove(record.seq);
      t = performance.now();
      await writeFileAtomic(join(dir, 'unsynced.rec'), bytes, { durable: false });
      pieces.unsynced.push(performance.now() - t);
    }
  } finally {
    await journal.close();
    await rm(dir, { recursive: true, force: true });
  }
  return pieces;
}
