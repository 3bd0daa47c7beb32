/** The report's sections of the paced measurements: save-to-archived latency, and on/off. */
import {
  type ILatency,
  formatMs,
  formatRatio,
  formatSignedMs,
  formatUs,
  latency,
  median
} from '../stats';
import { NO_CPU, addCpu, cores } from './cpu';
import type { ILatencyResult, IOnOffResult, PacedSide } from './model';

export function latencySection(result: ILatencyResult): string[] {
  const { plan, saves } = result;
  const toArchived = latency(saves.map(save => (save.seenAt ?? NaN) - save.sentAt));
  const afterAnswer = latency(saves.map(save => (save.seenAt ?? NaN) - save.sentAt - save.putMs));
  const put = latency(saves.map(save => save.putMs));
  const queued = latency(result.queuedMs);
  const upload = latency(result.uploadMs);
  const rtt = latency(result.pollRtts);
  const late = latency(saves.map(save => save.lateMs));
  const row = (label: string, l: ILatency): string =>
    `| ${label} | ${l.n} | ${formatMs(l.p50)} | ${formatMs(l.p90)} | ${formatMs(l.p99)} | ${formatMs(l.max)} |`;
  return [
    `### 2. Save-to-archived latency (${plan.saves} saves at ${plan.rate}/s over ${plan.paths} paths)`,
    '',
    '| Interval | n | p50 | p90 | p99 | max |',
    '|---|--:|--:|--:|--:|--:|',
    row('**PUT sent → version listed by MinIO**', toArchived),
    row('PUT answered → version listed', afterAnswer),
    row('PUT (save answered)', put),
    row('gateway log: `queuedMs` (journal append start → upload start)', queued),
    row('gateway log: `uploadMs` (PutObject)', upload),
    row('listing round trip (poll resolution, plus the poll interval)', rtt),
    '',
    `Measured from outside: each save carries a unique id; while a key has saves outstanding, ` +
      `\`ListObjectVersions\` on that key runs every ${plan.pollMs} ms, and a save counts as archived when the ` +
      'answer of the first listing that shows its version arrives (an upper bound: late by at most the poll interval ' +
      `plus a listing's round trip). Afterwards every version was read back and matched to its save by id. ` +
      `The log figures come from the gateway's \`archived\` debug lines (${result.logMatched} of ${saves.length} matched by version id). ` +
      `This stream ran on a separate gateway started with \`--log-level debug\`, after ${plan.warmup} warm-up saves; ` +
      `sends were late on their schedule by ${formatMs(late.p50)} p50, ${formatMs(late.max)} at most; ` +
      `other processes used ${cores(result.cpu.others, result.seconds)} cores meanwhile.`,
    ''
  ];
}

export function onOffStats(result: IOnOffResult): Record<'on' | 'off', ILatency> & {
  /** Plain Jupyter Server, when it ran. */
  jupyter: ILatency | undefined;
  cpu: Record<
    PacedSide,
    { gateway: number; minio: number; kernel: number; others: number; saves: number }
  >;
  /** on/off p50 of each round (the two sides' rounds of the same index ran back to back). */
  ratios: number[];
  /** Their median: what the target is checked against. */
  ratio: number;
  /** on − off p50 of each round, ms. */
  differences: number[];
} {
  const get = (side: PacedSide) => result.rounds.filter(round => round.side === side);
  const p50s = (side: 'on' | 'off'): number[] =>
    get(side).map(round => latency(round.saves.map(save => save.putMs)).p50);
  const [onP50, offP50] = [p50s('on'), p50s('off')];
  const ratios = onP50.map((p50, i) => p50 / offP50[i]);
  const differences = onP50.map((p50, i) => p50 - offP50[i]);
  const stats = (side: PacedSide): ILatency =>
    latency(get(side).flatMap(round => round.saves.map(save => save.putMs)));
  const cpu = (side: PacedSide) => {
    const rounds = get(side);
    const sum = rounds.reduce((acc, round) => addCpu(acc, round.cpu), NO_CPU);
    const seconds = rounds.reduce((acc, round) => acc + round.seconds, 0);
    const saves = rounds.reduce((acc, round) => acc + round.saves.length, 0);
    return {
      gateway: sum.gateway / saves,
      minio: sum.minio / saves,
      kernel: sum.kernel / saves,
      others: sum.others / (seconds * 1000),
      saves
    };
  };
  return {
    on: stats('on'),
    off: stats('off'),
    jupyter: get('jupyter').length > 0 ? stats('jupyter') : undefined,
    cpu: { on: cpu('on'), off: cpu('off'), jupyter: cpu('jupyter') },
    ratios,
    ratio: median(ratios),
    differences
  };
}

export function onOffSection(result: IOnOffResult): string[] {
  const { plan } = result;
  const { on, off, jupyter, cpu, ratios, ratio, differences } = onOffStats(result);
  const perRound = (side: PacedSide): string =>
    result.rounds
      .filter(round => round.side === side)
      .map(round => formatMs(latency(round.saves.map(save => save.putMs)).p50))
      .join(', ');
  const row = (label: string, l: ILatency, side: PacedSide): string =>
    `| ${label} | ${l.n} | ${formatMs(l.p50)} | ${formatMs(l.p90)} | ${formatMs(l.p99)} | ${formatMs(l.max)} | ${perRound(side)} | ${formatUs(cpu[side].gateway)} | ${formatUs(cpu[side].minio)} | ${formatUs(cpu[side].kernel)} | ${cpu[side].others.toFixed(2)} |`;
  const drain = latency(result.rounds.filter(r => r.side === 'on').map(r => r.drainMs));
  return [
    `### 3. Save latency with archiving on and off (${plan.rounds} rounds × ${plan.saves} saves per side at ${plan.rate}/s over ${plan.paths} paths)`,
    '',
    '| Gateway | n | PUT p50 | p90 | p99 | max | p50 per round | gateway CPU / save | MinIO CPU / save | kernel threads CPU / save | other processes (cores) |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    row('archiving on (MinIO)', on, 'on'),
    row('archiving off (`workspace_prefix` empty)', off, 'off'),
    ...(jupyter !== undefined
      ? [
          row(
            '**plain Jupyter Server** (no gateway; its CPU in the gateway column)',
            jupyter,
            'jupyter'
          ),
          `| on/Jupyter, pooled (on − Jupyter) | | **${formatRatio(on.p50 / jupyter.p50)}** (${formatSignedMs(on.p50 - jupyter.p50)}) | ${formatRatio(on.p90 / jupyter.p90)} | **${formatRatio(on.p99 / jupyter.p99)}** | ${formatRatio(on.max / jupyter.max)} | | ${formatRatio(cpu.on.gateway / cpu.jupyter.gateway)} | | | |`
        ]
      : []),
    `| on/off, pooled (on − off) | | ${formatRatio(on.p50 / off.p50)} (${formatSignedMs(on.p50 - off.p50)}) | ${formatRatio(on.p90 / off.p90)} | ${formatRatio(on.p99 / off.p99)} | ${formatRatio(on.max / off.max)} | ${ratios.map(formatRatio).join(', ')} | ${formatRatio(cpu.on.gateway / cpu.off.gateway)} | | ${formatRatio(cpu.on.kernel / cpu.off.kernel)} | |`,
    '',
    `The target is checked against the median of the rounds' on/off p50 ratios: **${formatRatio(ratio)}** ` +
      `(per round ${ratios.map(formatRatio).join(', ')}; on − off ${differences.map(formatSignedMs).join(', ')}). ` +
      'The load of other jobs moves the p50 of whole rounds by more than archiving does, so the ratio of the pooled ' +
      'percentiles (the last row) blurs the difference the rounds show side by side.',
    '',
    'PUT latency is from the first byte sent to the last byte of the answer, one keep-alive client, the saves sent on a ' +
      `fixed schedule whether or not the previous one was answered. Rounds alternate between the ${
        jupyter !== undefined
          ? 'gateways and plain Jupyter Server (the reference, same client and schedule)'
          : 'gateways'
      } (the one that goes first rotates too), after ${plan.warmup} warm-up saves each; an "on" round lasts until its journal is empty ` +
      `(${formatMs(drain.p50)} p50 after its last answer), so its CPU columns include the uploads.`,
    ''
  ];
}
