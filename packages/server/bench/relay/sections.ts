/** The report's sections of the relayed contents phase: saves, GETs, and where a relayed save's time goes. */
import { type ICpu, formatMBps, throughput } from '../load';
import {
  type ILatency,
  formatMs,
  formatRate,
  formatRatio,
  formatSignedMs,
  formatUs,
  latency,
  median
} from '../stats';
import { againstPlain } from './measure';
import {
  type ContentsSide,
  GET_SIDES,
  type IContentsResult,
  type IGetRound,
  type ISaveRound,
  SAVE_SOCKETS,
  SETTLE_MS,
  SIDES
} from './model';

export function roundsOf(result: IContentsResult, side: ContentsSide): ISaveRound[] {
  return result.saveRounds.filter(round => round.side === side);
}

export function putLatency(rounds: readonly ISaveRound[]): ILatency {
  return latency(rounds.flatMap(round => round.saves.map(save => save.putMs)));
}

/** A side's save figures against plain Jupyter's. */
export function saveComparison(
  result: IContentsResult,
  side: ContentsSide
): { p50: number; p99: number; perRound: number[]; p50Pooled: number; deltaMs: number } {
  const mine = roundsOf(result, side);
  const plain = roundsOf(result, 'plain');
  const perRound = againstPlain(mine, plain, roundP50).ratios;
  const a = putLatency(plain);
  const b = putLatency(mine);
  return {
    p50: median(perRound),
    p99: b.p99 / a.p99,
    perRound,
    p50Pooled: b.p50 / a.p50,
    deltaMs: b.p50 - a.p50
  };
}

function roundP50(round: ISaveRound): number {
  return latency(round.saves.map(save => save.putMs)).p50;
}

export function roundRate(round: IGetRound): number {
  return round.requests / round.seconds;
}

function cpuPerSave(rounds: readonly ISaveRound[], key: keyof ICpu): number {
  const saves = rounds.reduce((sum, round) => sum + round.saves.length, 0);
  return rounds.reduce((sum, round) => sum + round.cpu[key], 0) / saves;
}

function coresOf(rounds: readonly ISaveRound[], key: keyof ICpu): number {
  const seconds = rounds.reduce((sum, round) => sum + round.seconds, 0);
  return rounds.reduce((sum, round) => sum + round.cpu[key], 0) / (seconds * 1000);
}

export function saveSection(result: IContentsResult): string[] {
  const { saves: plan } = result.plan;
  const rows = result.sides.map(side => {
    const rounds = roundsOf(result, side);
    const lat = putLatency(rounds);
    const vs = side === 'plain' ? undefined : saveComparison(result, side);
    const viaGateway = side !== 'plain';
    return [
      `${SIDES[side].tag} ${SIDES[side].label}`,
      String(lat.n),
      formatMs(lat.p50),
      formatMs(lat.p90),
      formatMs(lat.p99),
      formatMs(lat.max),
      rounds.map(round => formatMs(roundP50(round))).join(', '),
      vs === undefined ? '–' : `**${formatRatio(vs.p50)}** (${formatSignedMs(vs.deltaMs)})`,
      vs === undefined ? '–' : `**${formatRatio(vs.p99)}**`,
      viaGateway ? formatUs(cpuPerSave(rounds, 'gateway')) : '–',
      formatUs(cpuPerSave(rounds, 'jupyter')),
      side === 'relayMinio' ? formatUs(cpuPerSave(rounds, 'store')) : '–',
      coresOf(rounds, 'others').toFixed(2)
    ].join(' | ');
  });
  const drains = result.saveRounds.filter(round => round.drainMs > 0).map(round => round.drainMs);
  return [
    `### 1. Save latency (PUT of a ${(result.diskBytes / 1000).toFixed(0)} KB notebook, ${plan.rate}/s over ${plan.paths} paths)`,
    '',
    '| Side | n | PUT p50 | p90 | p99 | max | p50 per round | p50 / (a): median of the rounds (difference of the pooled p50s) | p99 / (a), pooled | gateway CPU / save | Jupyter CPU / save | MinIO CPU / save | other processes (cores) |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...rows.map(row => `| ${row} |`),
    '',
    `${plan.rounds} rounds of ${plan.saves} saves per side, and a plain round before and after each of them ` +
      `(${roundsOf(result, 'plain').length} plain rounds), after ${plan.warmup} warm-up saves each; the other sides rotate by one ` +
      'every rotation, reversed every other. A save is a `PUT api/contents/<path>` of ' +
      `the notebook as JupyterLab sends it (${result.putBytes.toLocaleString('en-US')} bytes of JSON, a unique id in its metadata), ` +
      `over an existing file; ${result.diskBytes.toLocaleString('en-US')} bytes on disk. Open loop: each save is sent at its time ` +
      `(one save per path at a time, ${SAVE_SOCKETS} keep-alive connections), and its latency runs from the first byte sent to the ` +
      "last byte of the answer. The p50 ratio is the median, over a side's rounds, of the round's p50 over the mean p50 of " +
      'the two plain rounds around it; p99 is pooled over all rounds of a side (a round of 100 saves has no p99 of its own), ' +
      "so a burst of load from elsewhere during one round moves it. An archiving side's round lasts until " +
      `its journal is empty (${formatMs(median(drains))} p50 after the last answer), then every round waits ${SETTLE_MS} ms ` +
      '(the watcher and the event bus look at a file 200 ms after its last write); the CPU columns cover that whole window. ' +
      '"Jupyter CPU" is the Python server\'s (the gateway\'s own Jupyter behind a gateway).',
    ''
  ];
}

export function getSection(result: IContentsResult): string[] {
  const { gets: plan } = result.plan;
  const lines: string[] = [];
  for (const get of result.gets) {
    const plain = get.rounds.plain ?? [];
    for (const side of GET_SIDES) {
      const rounds = get.rounds[side];
      if (rounds === undefined) continue;
      const totals = throughput(rounds);
      const pairs = side === 'plain' ? [] : againstPlain(rounds, plain, roundRate).ratios;
      const pooled = totals.rps / throughput(plain).rps;
      const viaGateway = side !== 'plain';
      lines.push(
        [
          `${get.label} (answer ${((get.answerBytes[side] ?? NaN) / 1000).toFixed(0)} KB)`,
          `${SIDES[side].tag} ${SIDES[side].label}`,
          `${formatRate(totals.rps)} (${formatMBps(totals.bytesPerSecond)})`,
          side === 'plain' ? '–' : `**${formatRatio(median(pairs))}**`,
          side === 'plain' ? '–' : formatRatio(pooled),
          side === 'plain'
            ? '–'
            : `${formatRatio(Math.min(...pairs))} – ${formatRatio(Math.max(...pairs))}`,
          `${formatMs(totals.latency.p50)} / ${formatMs(totals.latency.p99)}`,
          formatUs(totals.cpuPerRequest.jupyter / 1000),
          viaGateway ? formatUs(totals.cpuPerRequest.gateway / 1000) : '–',
          formatUs(totals.cpuPerRequest.client / 1000),
          totals.cpuShare.jupyter.toFixed(2),
          viaGateway ? totals.cpuShare.gateway.toFixed(2) : '–',
          totals.cpuShare.client.toFixed(2),
          totals.cpuShare.others.toFixed(2)
        ].join(' | ')
      );
    }
  }
  return [
    `### 2. GET throughput (\`?type=notebook&content=1\`, ${plan.concurrency} concurrent requests)`,
    '',
    '| Notebook | Side | req/s | / (a): median of pairs | pooled | pair range | p50 / p99 | Jupyter CPU / req | gateway CPU / req | load generator CPU / req | cores: Jupyter | gateway | load generator | other processes |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...lines.map(line => `| ${line} |`),
    '',
    `${plan.rounds} rounds of ${plan.roundMs / 1000} s per side and notebook, and a plain round before and after each of them, ` +
      `after a ${plan.warmupMs / 1000} s warm-up round each, the order as for the saves; ${plan.concurrency} keep-alive workers, ` +
      'each sending its next request when the previous answer was read to its last byte. A pair is a round of a side and the ' +
      "mean of the plain rounds around it; the target is checked against the median of the pairs' ratios. The notebooks are " +
      'written as nbformat writes them ' +
      `(${result.gets.map(get => `${get.label}: ${get.diskBytes.toLocaleString('en-US')} bytes`).join(', ')}); ` +
      'the archive does not touch a GET, so (b′) and (b0) are not loaded.',
    ''
  ];
}

export function piecesSection(result: IContentsResult): string[] {
  const plain = putLatency(roundsOf(result, 'plain'));
  const row = (label: string, samples: readonly number[]): string => {
    const lat = latency(samples);
    return `| ${label} | ${lat.n} | ${formatMs(lat.p50)} | ${formatMs(lat.p90)} | ${formatMs(lat.p99)} | ${formatMs(lat.max)} |`;
  };
  const derived = (side: ContentsSide, base: ContentsSide): string => {
    const mine = roundsOf(result, side);
    const other = roundsOf(result, base);
    if (mine.length === 0 || other.length === 0) return 'n/a';
    const plain = roundsOf(result, 'plain');
    const difference =
      median(againstPlain(mine, plain, roundP50).diffs) -
      (base === 'plain' ? 0 : median(againstPlain(other, plain, roundP50).diffs));
    return formatSignedMs(difference);
  };
  const cpuDelta = (side: ContentsSide, base: ContentsSide): string => {
    const mine = roundsOf(result, side);
    const other = roundsOf(result, base);
    if (mine.length === 0 || other.length === 0) return 'n/a';
    return formatSignedMs(cpuPerSave(mine, 'gateway') - cpuPerSave(other, 'gateway'));
  };
  const answers = result.checks
    .map(check => `${SIDES[check.side].tag} ${check.answerBytes.toLocaleString('en-US')} B`)
    .join(', ');
  return [
    "### 3. Where a relayed save's time goes",
    '',
    "Measured in this process with the product's code, on the file system of the gateways' roots and journals, paced as the saves:",
    '',
    '| Piece | n | p50 | p90 | p99 | max |',
    '|---|--:|--:|--:|--:|--:|',
    row(
      'read of the saved file: `lstat`, `readFile`, SHA-256 (`ArchiveIntake.relayedSave`)',
      result.pieces.read
    ),
    row(
      'durable journal record: `ArchiveJournal.append` (a log append and its fdatasync; SHA-256 again)',
      result.pieces.append
    ),
    row(
      'the same bytes written atomically without the fsyncs (`writeFileAtomic`, `durable: false`)',
      result.pieces.unsynced
    ),
    '',
    "From the rounds above (medians, over a side's rounds, of the round's p50 minus the mean p50 of the plain rounds around it):",
    '',
    `- the proxy alone, (b0) − (a): ${derived('relayOff', 'plain')}`,
    `- the relayed-save hook and archiving's background work, (b) − (b0): ${derived('relay', 'relayOff')}` +
      `; gateway CPU per save ${cpuDelta('relay', 'relayOff')}`,
    ...(result.sides.includes('relayMinio')
      ? [
          `- archiving to MinIO instead of the embedded store, (b′) − (b): ${derived('relayMinio', 'relay')}`
        ]
      : []),
    `- plain Jupyter's own save: p50 ${formatMs(plain.p50)}`,
    '',
    `Answers of a save (what the gateway holds back on (b) until the journal has the record): ${answers}.`,
    ''
  ];
}

/** The gateways' own timings of the saves of the recorded rounds: a table. */
export function insideSection(result: IContentsResult): string[] {
  const pair = (samples: readonly number[]): string => {
    const lat = latency(samples);
    return lat.n === 0 ? '–' : `${formatMs(lat.p50)} / ${formatMs(lat.p99)}`;
  };
  const rows: string[] = [];
  for (const side of ['relay', 'relayMinio', 'relayOff'] as const) {
    const timings = result.timings[side];
    if (timings === undefined) continue;
    const windows = roundsOf(result, side).map(round => round.wall);
    const inRounds = (at: number): boolean =>
      windows.some(window => at >= window.start - 5 && at <= window.end + 5);
    const puts = timings.puts.filter(put => inRounds(put.at));
    const relayed = timings.relayed.filter(save => inRounds(save.at));
    const appends = timings.appends.filter(append => inRounds(append.at));
    const client = putLatency(roundsOf(result, side));
    rows.push(
      [
        `${SIDES[side].tag} ${SIDES[side].label}`,
        String(puts.length),
        pair(client.n === 0 ? [] : roundsOf(result, side).flatMap(r => r.saves.map(x => x.putMs))),
        pair(puts.map(put => put.upstreamMs)),
        pair(puts.flatMap(put => (put.hookMs === undefined ? [] : [put.hookMs]))),
        pair(relayed.map(save => save.ms - save.savedMs)),
        pair(relayed.map(save => save.savedMs)),
        pair(appends.map(append => append.ms)),
        pair(puts.flatMap(put => (put.answerMs === undefined ? [] : [put.answerMs])))
      ].join(' | ')
    );
  }
  const plain = putLatency(roundsOf(result, 'plain'));
  return [
    'Inside the gateways, during the recorded rounds (each gateway timed its own work with a preload that wraps the built ' +
      "classes' methods; p50 / p99):",
    '',
    "| Side | PUTs | at the client | proxy: request taken → Jupyter's answer read (→ answer sent, without the hook) | relayed-save hook | of which the read (`lstat`, `readFile`) | of which `saved` (SHA-256, `lstat`, journal append) | durable journal append | hook end → answer handed to the socket |",
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...rows.map(row => `| ${row} |`),
    '',
    `For comparison, plain Jupyter's save at the client: ${formatMs(plain.p50)} / ${formatMs(plain.p99)}.`,
    ''
  ];
}
