/**
 * `npm run bench:contents`: the same contents-API workload against a real Jupyter Server 2 and
 * against our contents manager, in one run, with the results printed and written to
 * docs/benchmarks.md.
 *
 * #### Notes
 * - Each server gets its own identical copy of the workload tree and its own isolated HOME and
 *   Jupyter directories; our server runs as a separate Node process (the built `createApp` on a loopback port),
 *   so the RSS we report is its own.
 * - Requests are sent one at a time over one keep-alive connection per server. Every operation
 *   has a warm-up, then several rounds; each round runs a batch against both servers, and the
 *   server that goes first alternates from round to round, so drift on a noisy machine hits both.
 * - This is a benchmark, not a test: it reports ratios and whether the targets were met,
 *   and fails only if a server misbehaves (an unexpected status) or cannot be started.
 *
 * After them, the first save after start-up (firstSave.ts): plain Jupyter Server and
 * `jupyter-store lab` with archiving off and on (MinIO), each started afresh a few times.
 *
 * The phases are in this folder: the servers (server.ts), the operations and how they are run
 * (operations.ts), the first save (firstSave.ts), the report (report.ts); this file runs them.
 *
 * Options: `--quick` (few iterations, a smoke run), `--only REGEX` (operations whose id or
 * label match; `first save` for the start-up phase), `--profile` (our server under `node --cpu-prof`, with a summary of where its time
 * went), `--skip-build` (do not run `tsc -b` first), `--no-docs` (do not write docs/benchmarks.md;
 * implied by the three options that change the workload or the timings).
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  type JupyterServerHandle,
  REPO_ROOT,
  startJupyterServer
} from '../../test/support/jupyterServer';
import { build } from '../build';
import { cleanups, log } from '../cleanup';
import { ContentsClient } from '../client';
import { readMemory } from '../cpu';
import { type IFirstSaveResult, measureFirstSaves } from './firstSave';
import { commandLine, machineWithPython, runBenchmark } from '../harness';
import { DOCS_FILE } from '../docs';
import { type IGeneratedNotebook, generateNotebook } from '../notebook';
import { formatProfileSummary, summariseProfile } from '../profile';
import {
  type IMemory,
  type IRunResult,
  type ITarget,
  NOTEBOOK_SIZES,
  SIDES,
  type Side,
  type SizeId
} from './model';
import { buildOperations, measure, statistics, writeTree } from './operations';
import { report, writeContentsPage } from './report';
import { startOurServer } from './server';

/** The whole run is aborted (servers stopped) after this long. */
const RUN_DEADLINE_MS = 20 * 60_000;

// ---------------------------------------------------------------------------------------------
// Options and clean-up

const { values: options } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    profile: { type: 'boolean', default: false },
    'skip-build': { type: 'boolean', default: false },
    'no-docs': { type: 'boolean', default: false }
  },
  strict: true,
  allowPositionals: false
});

const writeDocs =
  !options.quick && !options.profile && options.only === undefined && !options['no-docs'];

async function run(): Promise<void> {
  const started = Date.now();
  if (!options['skip-build']) build();
  const only = options.only === undefined ? undefined : new RegExp(options.only, 'i');

  log('generating the notebooks');
  const notebooks = new Map<SizeId, IGeneratedNotebook>();
  for (const size of NOTEBOOK_SIZES) notebooks.set(size.id, generateNotebook(size.bytes));

  const base = await mkdtemp(join(tmpdir(), 'jupyter-store-bench-'));
  cleanups.push(() => rm(base, { recursive: true, force: true }));
  const roots: Record<Side, string> = {
    jupyter: join(base, 'jupyter', 'root'),
    ours: join(base, 'ours', 'root')
  };
  log(`writing two copies of the workload tree under ${base}`);
  for (const side of SIDES) await writeTree(roots[side], notebooks);

  log('starting Jupyter Server');
  const jupyter: JupyterServerHandle = await startJupyterServer({
    rootDir: roots.jupyter,
    stateDir: join(base, 'jupyter', 'state')
  });
  cleanups.push(() => jupyter.stop());
  log(`starting our server${options.profile ? ' under --cpu-prof' : ''}`);
  const profileDir = options.profile
    ? join(tmpdir(), 'jupyter-store-bench-profiles', `${Date.now()}`)
    : undefined;
  const ours = await startOurServer(roots.ours, join(base, 'ours', 'state'), profileDir);
  cleanups.push(() => ours.stop());

  const targets: Record<Side, ITarget> = {
    jupyter: {
      side: 'jupyter',
      client: new ContentsClient(jupyter.api(''), jupyter.authHeaders),
      pid: jupyter.pid
    },
    ours: { side: 'ours', client: new ContentsClient(ours.url, {}), pid: ours.pid }
  };
  cleanups.push(async () => SIDES.forEach(side => targets[side].client.close()));

  const memory = {} as Record<Side, IMemory>;
  for (const side of SIDES) {
    const now = readMemory(targets[side].pid);
    memory[side] = { idleRss: now.rss, peak: now.hwm, saveGrowth: [], method: 'clear_refs' };
  }

  const operations = buildOperations(notebooks, memory, options.quick).filter(
    operation =>
      only === undefined || only.test(operation.id) || operation.rows.some(row => only.test(row))
  );
  // Rows are shown in the order of the operations; the first 50 MB save runs early, right after
  // the small operations, so that the growth it shows is not hidden by memory that earlier large
  // requests left behind in the heap.
  const samples = new Map<string, Record<Side, number[]>>();
  for (const operation of operations)
    for (const row of operation.rows) samples.set(row, { jupyter: [], ours: [] });
  const runFirst = ['cycle', 'listing', 'put-50MB'];
  const executionOrder = [
    ...runFirst.flatMap(id => operations.filter(operation => operation.id === id)),
    ...operations.filter(operation => !runFirst.includes(operation.id))
  ];
  for (const operation of executionOrder) {
    log(`measuring ${operation.rows.join(', ')}`);
    await measure(operation, targets, samples);
  }
  for (const side of SIDES)
    memory[side].peak = Math.max(memory[side].peak, readMemory(targets[side].pid).hwm);

  let firstSaves: IFirstSaveResult[] | undefined;
  if (only === undefined || only.test('first save')) {
    log('measuring the first save after start-up');
    const started = Date.now();
    firstSaves = await measureFirstSaves({
      baseDir: join(base, 'first-save'),
      starts: options.quick ? 1 : 3,
      laterSaves: options.quick ? 2 : 5,
      log
    });
    log(`first save after start-up: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }

  const result: IRunResult = {
    rows: [...samples.entries()].map(([row, bySide]) => ({
      row,
      stats: { jupyter: statistics(bySide.jupyter), ours: statistics(bySide.ours) }
    })),
    memory,
    notebooks: NOTEBOOK_SIZES.map(size => ({
      label: size.label,
      bytes: notebooks.get(size.id)?.diskBytes.length ?? 0,
      cells: notebooks.get(size.id)?.cellCount ?? 0
    })),
    plans: operations.map(operation => ({ rows: operation.rows, plan: operation.plan })),
    firstSaves,
    seconds: (Date.now() - started) / 1000
  };
  const text = report(result, machineWithPython(['jupyter_server']), commandLine('bench:contents'));
  process.stdout.write(`\n${text}\n`);
  if (writeDocs) {
    writeContentsPage(text);
    log(`wrote ${DOCS_FILE}`);
  }

  if (profileDir !== undefined) {
    await ours.stop();
    const files = (await readdir(profileDir)).filter(name => name.endsWith('.cpuprofile'));
    for (const file of files) {
      const summary = await summariseProfile(join(profileDir, file), REPO_ROOT);
      process.stdout.write(
        `\n### CPU profile of our server (${join(profileDir, file)})\n\n${formatProfileSummary(summary)}\n`
      );
    }
    if (files.length === 0) log(`no .cpuprofile in ${profileDir}: did our server exit cleanly?`);
  }
}

void runBenchmark(run, RUN_DEADLINE_MS);
