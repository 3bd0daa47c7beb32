/**
 * `npm run bench:trust`: the notebook signature database (`nbsignatures.db`) as the gateway uses
 * it, side by side with nbformat's own `SQLiteSignatureStore` (the project venv's Python) making
 * the same calls on an identical copy of the same database. Prints its tables on stdout.
 *
 * #### Notes
 * Three sides, each on its own copy of the database:
 * - **nbformat**: Python's store, timed in Python around each call (all of its calls block the
 *   Jupyter Server that makes them);
 * - **gateway**: the store the server uses (`createNotary`), as a save and an open call it;
 * - **store**: the default store of a `NotebookNotary`, in the calling thread, without the
 *   gateway's memory in front of it.
 *
 * Calls: storing a new signature (every save of a changed, trusted notebook), checking one that
 * Python recorded (opening a notebook trusted elsewhere: it is in the database but not in our
 * memory) and checking an unknown one, on a small database and on one of 60,000 rows (nbformat
 * keeps up to 65,535). "Blocked" is the time the call ran synchronously in the calling thread,
 * that is the time the event loop could do nothing else; for Python it is the whole call.
 * Then each side makes a call while another Python process holds `BEGIN EXCLUSIVE` on the
 * database: for 1 s (shorter than the 5 s busy timeout) and for 6 s (longer), with the event
 * loop's longest stall meanwhile.
 *
 * In this folder: nbformat's side (python.ts), the calls (calls.ts) and the calls under a held
 * lock (contention.ts); this file runs them and prints the tables.
 *
 * Options: `--quick` (few calls, a smoke run), `--skip-build` (no `tsc -b` first; the gateway
 * may run built code from `lib/`).
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { build } from '../build';
import { cleanupStep, log } from '../cleanup';
import { markdownTable } from '../docs';
import { commandLine, machineLine, runBenchmark } from '../harness';
import { formatMs, latency } from '../stats';
import {
  CALL_NAMES,
  type IRun,
  SIDES,
  SIDE_NAMES,
  type Side,
  digests,
  runNbformat,
  runNode
} from './calls';
import { contend } from './contention';
import { runPython, venvPython } from './python';

const { values: options } = parseArgs({
  options: { quick: { type: 'boolean' }, 'skip-build': { type: 'boolean' } }
});

/** Calls of each kind per side and database. */
const CALLS = options.quick ? 20 : 300;
/** Rows of the large database (beyond what the calls add). */
const LARGE_ROWS = options.quick ? 6000 : 60_000;

async function main(): Promise<void> {
  // Fails early, before the build, when the venv has no Python.
  venvPython();
  if (!options['skip-build']) build();
  const started = Date.now();
  const tmp = mkdtempSync(join(tmpdir(), 'trust-bench-'));
  cleanupStep(async () => rmSync(tmp, { recursive: true, force: true }));

  const out: string[] = [
    '## Notebook trust: the signature database',
    '',
    `- Command: \`${commandLine('bench:trust')}\``,
    `- Date: ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}`,
    `- Machine: ${machineLine('the databases')}`,
    `- ${CALLS} calls of each kind per side and database; latency p50 / p99 (nearest rank); ` +
      '"blocked" is the part of a call that ran synchronously in the calling thread (p50 / max)',
    ''
  ];

  const states = [
    { id: 'small', label: `small database (${CALLS} rows to start with)`, filler: 0 },
    {
      id: 'large',
      label: `large database (${(LARGE_ROWS + CALLS).toLocaleString('en-US')} rows to start with)`,
      filler: LARGE_ROWS
    }
  ];
  for (const state of states) {
    log(`${state.id} database: preparing`);
    const base = join(tmp, state.id, 'base.db');
    mkdirSync(join(tmp, state.id), { recursive: true });
    const known = digests(CALLS);
    runPython({ cmd: 'prefill', dbFile: base, filler: digests(state.filler), known });
    const work = { new: digests(CALLS), known, unknown: digests(CALLS) };
    const runs = {} as Record<Side, IRun>;
    for (const side of SIDES) {
      log(`${state.id} database: ${side}`);
      const dataDir = join(tmp, state.id, side);
      mkdirSync(dataDir, { recursive: true });
      const dbFile = join(dataDir, 'nbsignatures.db');
      copyFileSync(base, dbFile);
      runs[side] =
        side === 'nbformat' ? runNbformat(dbFile, work) : await runNode(side, dataDir, work);
    }
    out.push(`### ${state.label[0].toUpperCase()}${state.label.slice(1)}`, '');
    const rows: string[][] = [];
    for (const call of ['store', 'hit', 'miss'] as const) {
      for (const side of SIDES) {
        const total = latency(runs[side].calls[call].map(s => s.total));
        const blocked = latency(runs[side].calls[call].map(s => s.blocked));
        rows.push([
          CALL_NAMES[call],
          SIDE_NAMES[side],
          `${formatMs(total.p50)} / ${formatMs(total.p99)}`,
          `${formatMs(blocked.p50)} / ${formatMs(blocked.max)}`
        ]);
      }
    }
    for (const side of SIDES) {
      const { first, external } = runs[side];
      rows.push([
        'first call (opening, worker start)',
        SIDE_NAMES[side],
        formatMs(first.total),
        `${formatMs(first.blocked)}${
          external === undefined ? '' : `; external memory ${(external / 2 ** 20).toFixed(1)} MB`
        }`
      ]);
    }
    out.push(...markdownTable(['call', 'side', 'latency p50 / p99', 'blocked p50 / max'], rows));
  }

  const contention: string[][] = [];
  for (const seconds of [1, 6]) {
    for (const side of SIDES) {
      log(`contention ${seconds} s: ${side}`);
      const dataDir = join(tmp, `contend-${seconds}`, side);
      mkdirSync(dataDir, { recursive: true });
      runPython({
        cmd: 'prefill',
        dbFile: join(dataDir, 'nbsignatures.db'),
        filler: [],
        known: []
      });
      const result = await contend(side, dataDir, seconds);
      contention.push([
        `${seconds} s`,
        SIDE_NAMES[side],
        formatMs(result.ms),
        result.outcome,
        side === 'nbformat' ? 'the whole call' : formatMs(result.stallMs)
      ]);
    }
  }
  out.push(
    '### Storing a signature while another process holds `BEGIN EXCLUSIVE`',
    '',
    ...markdownTable(
      ['lock held', 'side', 'call took', 'outcome', 'longest event-loop stall'],
      contention
    ),
    `Run time: ${Math.round((Date.now() - started) / 1000)} s`,
    ''
  );
  process.stdout.write(`${out.join('\n')}\n`);
}

/** The calls and the lock waits take about a minute; this bounds a run that hangs. */
void runBenchmark(main, 20 * 60_000);
