/**
 * Measurement 3, save latency with archiving on and off: the same paced saves through both
 * gateways and to plain Jupyter Server, in rotating rounds.
 */
import type { IObjectServer } from '../../test/support/objectServers';
import { log } from '../cleanup';
import { sleep } from '../harness';
import { ContentsSaver, type IPacedPlan, SaveClient, Workload, pacedStream } from '../saves';
import { formatMs, latency } from '../stats';
import { type IPids, cpuNow, cpuSince } from './cpu';
import type { IOnOffResult, IPacedRound, IPlainJupyter, PacedSide } from './model';

/** Measurement 3: PUT latency with archiving on and off, alternating rounds. */
export async function measureOnOff(
  savers: { on: SaveClient; off: SaveClient; jupyter: IPlainJupyter | undefined },
  workload: Workload,
  minio: IObjectServer,
  plan: IPacedPlan
): Promise<IOnOffResult> {
  const dir = 'onoff';
  const sides: PacedSide[] =
    savers.jupyter === undefined ? ['on', 'off'] : ['on', 'off', 'jupyter'];
  const target = (side: PacedSide): { saver: ContentsSaver; pid: number } => {
    if (side === 'jupyter') {
      if (savers.jupyter === undefined) throw new Error('no plain Jupyter Server');
      return { saver: savers.jupyter.saver, pid: savers.jupyter.server.pid };
    }
    return { saver: savers[side], pid: savers[side].gateway.record.pid };
  };
  log(`save latency on/off: warm-up, ${plan.warmup} saves each (${sides.join(', ')})`);
  for (const side of sides) {
    await pacedStream(target(side).saver, workload, dir, plan, plan.warmup);
    if (side === 'on') await savers.on.drained();
  }
  const rounds: IPacedRound[] = [];
  for (let round = 0; round < plan.rounds; round++) {
    // Each side goes first in turn.
    const order = sides.map((_, i) => sides[(i + round) % sides.length]);
    for (const side of order) {
      const { saver, pid } = target(side);
      const pids: IPids = { gateway: pid, minio: minio.pid };
      const cpuStart = cpuNow(pids);
      const start = performance.now();
      const saves = await pacedStream(saver, workload, dir, plan, plan.saves);
      const answered = performance.now();
      // Archiving's background work belongs to its round: wait until it is done.
      const drained = side === 'on' ? await savers.on.drained(2) : answered;
      const cpu = cpuSince(pids, cpuStart);
      rounds.push({
        side,
        saves,
        seconds: (drained - start) / 1000,
        cpu,
        drainMs: drained - answered
      });
      const lat = latency(saves.map(save => save.putMs));
      log(
        `save latency round ${round + 1} ${side}: p50 ${formatMs(lat.p50)}, p99 ${formatMs(lat.p99)}`
      );
      await sleep(200);
    }
  }
  return { plan, rounds };
}
