/** The contents benchmark's report: its page of docs/benchmarks.md below the marker. */
import type { IFirstSaveResult } from './firstSave';
import { writeGeneratedPage } from '../docs';
import { formatMiB, formatMs, formatRate, formatRatio, lowerMedian } from '../stats';
import {
  type IRunResult,
  LISTING_ENTRIES,
  SERVER_NAMES,
  SIDES,
  TARGET_P99_RATIO,
  TARGET_RSS_GROWTH_RATIO,
  TARGET_THROUGHPUT_RATIO
} from './model';

const DEFAULT_INTRO = `# Contents API benchmark

\`npm run bench:contents\` runs the same contents-API workload against a real Jupyter Server 2
(from the project venv) and against jupyter-store's own contents manager (the built \`createApp\`,
a separate Node process), in one run, and rewrites the part of this page below the marker. It is a
benchmark, not a test: machines are noisy, so compare the ratios, and rerun before drawing
conclusions from a small difference.

How it measures: each server serves its own identical copy of a generated tree (notebooks with
stream, \`text/html\` and \`image/png\` outputs; a directory of 10,000 entries) on 127.0.0.1, with
isolated HOME and Jupyter directories. Requests go one at a time over one keep-alive connection per
server, as a JupyterLab tab sends them. Each operation has a warm-up, then rounds in which both
servers run the same batch, the server that goes first alternating between rounds. ops/s is the
number of requests divided by the time spent in them (one client, no concurrency); p50 and p99 are
nearest-rank percentiles of the request latency (first byte sent to last byte received), so with
fewer than 100 samples p99 is the slowest request. Memory is read from \`/proc/<pid>/status\`
(VmRSS, VmHWM); the peak is reset through \`/proc/<pid>/clear_refs\` before each 50 MB save to
measure that save's growth over the RSS just before it.

Options: \`--quick\` (smoke run), \`--only REGEX\`, \`--profile\` (our server under
\`node --cpu-prof\`, prints where its time goes), \`--skip-build\`, \`--no-docs\`. Only a full
run rewrites this page.
`;

/** Operations per second: like the other benchmarks' rates, with three decimals below 1/s. */
function formatOpsRate(rate: number): string {
  return Number.isFinite(rate) && rate < 1 ? rate.toFixed(3) : formatRate(rate);
}

function resultsTable(result: IRunResult): string {
  const header =
    '| Operation | n | Jupyter ops/s | Jupyter p50 | Jupyter p99 | ours ops/s | ours p50 | ours p99 | ' +
    'throughput ours/Jupyter | p99 ours/Jupyter |';
  const rule = '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|';
  const lines = result.rows.map(({ row, stats: { jupyter, ours } }) =>
    [
      row,
      String(Math.min(jupyter.n, ours.n)),
      formatOpsRate(jupyter.opsPerSecond),
      formatMs(jupyter.p50),
      formatMs(jupyter.p99),
      formatOpsRate(ours.opsPerSecond),
      formatMs(ours.p50),
      formatMs(ours.p99),
      formatRatio(ours.opsPerSecond / jupyter.opsPerSecond),
      formatRatio(ours.p99 / jupyter.p99)
    ].join(' | ')
  );
  return [header, rule, ...lines.map(line => `| ${line} |`)].join('\n');
}

function memoryTable(result: IRunResult, notebookBytes: number | undefined): string {
  const lines = SIDES.map(side => {
    const mem = result.memory[side];
    const worst = mem.saveGrowth.length > 0 ? Math.max(...mem.saveGrowth) : NaN;
    const first = mem.saveGrowth[0] ?? NaN;
    const ratio = notebookBytes === undefined ? NaN : worst / notebookBytes;
    return `| ${SERVER_NAMES[side]} | ${formatMiB(mem.idleRss)} | ${formatMiB(mem.peak)} | ${
      Number.isFinite(first) ? formatMiB(first) : 'n/a'
    } | ${Number.isFinite(worst) ? formatMiB(worst) : 'n/a'} | ${formatRatio(ratio)} |`;
  });
  return [
    '| Server | RSS at start | peak RSS (VmHWM) | growth, first 50 MB save | growth, worst 50 MB save | worst growth / notebook size |',
    '|---|--:|--:|--:|--:|--:|',
    ...lines
  ].join('\n');
}

function targetLines(
  result: IRunResult,
  notebookBytes: number | undefined
): { lines: string[]; met: number; total: number } {
  const lines: string[] = [];
  let met = 0;
  let total = 0;
  for (const { row, stats } of result.rows) {
    const throughput = stats.ours.opsPerSecond / stats.jupyter.opsPerSecond;
    const p99 = stats.ours.p99 / stats.jupyter.p99;
    const throughputMet = throughput >= TARGET_THROUGHPUT_RATIO;
    const p99Met = p99 <= TARGET_P99_RATIO;
    met += Number(throughputMet) + Number(p99Met);
    total += 2;
    const throughputText = throughputMet
      ? `met (${formatRatio(throughput)}, ${formatRatio(throughput / TARGET_THROUGHPUT_RATIO)} the target)`
      : `**missed** (${formatRatio(throughput)}; needs ${((TARGET_THROUGHPUT_RATIO / throughput - 1) * 100).toFixed(0)} % more throughput)`;
    const p99Text = p99Met
      ? `met (${formatRatio(p99)})`
      : `**missed** (${formatRatio(p99)}; our p99 must drop ${((1 - TARGET_P99_RATIO / p99) * 100).toFixed(0)} %)`;
    lines.push(
      `- ${row}: throughput ≥ ${TARGET_THROUGHPUT_RATIO}x Jupyter's ${throughputText}; p99 ≤ ${TARGET_P99_RATIO}x Jupyter's ${p99Text}.`
    );
  }
  const growth = result.memory.ours.saveGrowth;
  if (growth.length > 0 && notebookBytes !== undefined) {
    const worst = Math.max(...growth);
    const ratio = worst / notebookBytes;
    const rssMet = ratio < TARGET_RSS_GROWTH_RATIO;
    met += Number(rssMet);
    total += 1;
    lines.push(
      `- Peak RSS growth of our process while saving the 50 MB notebook (${formatMiB(notebookBytes)} on disk): ` +
        `${formatMiB(worst)}, ${formatRatio(ratio)} the notebook size; target < ${TARGET_RSS_GROWTH_RATIO}x: ` +
        (rssMet
          ? `met (${formatMiB(TARGET_RSS_GROWTH_RATIO * notebookBytes - worst)} to spare).`
          : `**missed** by ${formatMiB(worst - TARGET_RSS_GROWTH_RATIO * notebookBytes)} (${formatRatio(ratio / TARGET_RSS_GROWTH_RATIO)} the limit).`)
    );
  }
  return { lines, met, total };
}

function workloadLines(result: IRunResult): string[] {
  const notebooks = result.notebooks
    .map(
      nb =>
        `${nb.label}: ${nb.bytes.toLocaleString('en-US')} bytes, ${nb.cells.toLocaleString('en-US')} cells`
    )
    .join('; ');
  const plans = result.plans
    .map(
      ({ rows, plan }) =>
        `${rows.join(' / ')}: ${plan.warmup} warm-up + ${plan.rounds} rounds × ${plan.perRound}`
    )
    .join('; ');
  return [
    `- Notebooks (generated deterministically; markdown, code cells with stream text, \`text/html\` tables, ` +
      `\`image/png\` figures, a few tracebacks; written as nbformat writes them): ${notebooks}. ` +
      `GET is \`?type=notebook&content=1\`; PUT sends \`{type: 'notebook', format: 'json', content}\` as JupyterLab ` +
      `does (joined strings, \`metadata.trusted\` on code cells), over an existing file (200).`,
    `- Listing: \`GET ?content=1\` of a directory of ${LISTING_ENTRIES.toLocaleString('en-US')} entries ` +
      '(text, CSV and notebook files, 100 subdirectories).',
    '- Untitled cycle: `POST {type: "notebook"}` into an empty directory, `PATCH` to a unique name, `DELETE` ' +
      '(to the trash, as both servers do by default).',
    `- Iterations per server: ${plans}.`
  ];
}

export function report(result: IRunResult, machine: string, command: string): string {
  const notebookBytes = result.notebooks.find(nb => nb.label === '50 MB')?.bytes;
  const targets = targetLines(result, notebookBytes);
  const memoryMethod = SIDES.map(side => result.memory[side].method).includes('polling')
    ? 'sampled every 5 ms (clear_refs was not writable)'
    : 'exact: VmHWM after resetting it through clear_refs';
  return [
    '## Results',
    '',
    `- Command: \`${command}\``,
    `- Date: ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}`,
    `- Machine: ${machine}`,
    `- Run time: ${Math.round(result.seconds)} s`,
    '',
    '### Throughput and latency',
    '',
    resultsTable(result),
    '',
    '### Memory',
    '',
    memoryTable(result, notebookBytes),
    '',
    `Growth of a save = its peak RSS minus the RSS just before it (${memoryMethod}).`,
    '',
    `### Targets (${targets.met} of ${targets.total} met)`,
    '',
    ...targets.lines,
    '',
    ...firstSaveLines(result.firstSaves),
    '### Workload',
    '',
    ...workloadLines(result),
    ''
  ].join('\n');
}

function firstSaveLines(results: readonly IFirstSaveResult[] | undefined): string[] {
  if (results === undefined || results.length === 0) return [];
  const jupyterFirst = lowerMedian(
    results.find(result => result.server === 'jupyter')?.first ?? []
  );
  return [
    '### First save after start-up',
    '',
    "| Server | starts | first save (median) | first saves | later saves (median) | first / later | first / Jupyter's first |",
    '|---|--:|--:|--:|--:|--:|--:|',
    ...results.map(result => {
      const first = lowerMedian(result.first);
      const later = lowerMedian(result.later);
      return `| ${result.server} | ${result.first.length} | ${formatMs(first)} | ${result.first
        .map(formatMs)
        .join(
          ', '
        )} | ${formatMs(later)} | ${formatRatio(first / later)} | ${formatRatio(first / jupyterFirst)} |`;
    }),
    '',
    'Each start is followed at once (as soon as the server reports ready) by saves of a 100 KB ' +
      'notebook over existing files, one path per save; the gateway is `jupyter-store lab`.',
    ''
  ];
}

/** Rewrite the page below its marker (the first time, under the page's description). */
export function writeContentsPage(text: string): void {
  writeGeneratedPage(DEFAULT_INTRO, text);
}
