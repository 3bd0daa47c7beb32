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
 * Options: `--quick` (few calls, a smoke run), `--skip-build` (no `tsc -b` first; the gateway
 * may run built code from `lib/`).
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createNotary } from '../src/app';
import { NotebookNotary, type ISignatureStore } from '../src/contents/trust';
import { findVenvPython } from '../test/support/jupyterServer';
import { cleanUp, cleanupStep, log } from './cleanup';
import { formatMs, latency } from './format';
import { build, machineLine } from './harness';

const { values: options } = parseArgs({
  options: { quick: { type: 'boolean' }, 'skip-build': { type: 'boolean' } }
});

/** Calls of each kind per side and database. */
const CALLS = options.quick ? 20 : 300;
/** Rows of the large database (beyond what the calls add). */
const LARGE_ROWS = options.quick ? 6000 : 60_000;

type Side = 'nbformat' | 'gateway' | 'store';
const SIDES: readonly Side[] = ['nbformat', 'gateway', 'store'];
const SIDE_NAMES: Record<Side, string> = {
  nbformat: 'nbformat (Python sqlite3)',
  gateway: 'gateway (`createNotary`)',
  store: 'store in the calling thread'
};

type Call = 'store' | 'hit' | 'miss';
const CALL_NAMES: Record<Call, string> = {
  store: 'store a new signature (save)',
  hit: 'check one Python recorded (open)',
  miss: 'check an unknown one (open)'
};

/** One call's wall time and the part of it that ran synchronously, in ms. */
interface ISample {
  total: number;
  blocked: number;
}

/** nbformat's side, driven by a command and a JSON payload on stdin. */
const PYTHON = String.raw`
import json, sqlite3, sys, time
from nbformat.sign import SQLiteSignatureStore

args = json.loads(sys.stdin.readline())
cmd = args["cmd"]
if cmd == "prefill":
    store = SQLiteSignatureStore(args["dbFile"])
    store.close()
    db = sqlite3.connect(args["dbFile"])
    db.executemany("INSERT INTO nbsignatures (algorithm, signature, last_seen) VALUES ('sha256', ?, ?)",
                   ((sig, "2020-01-01T00:00:%02d.%06d+00:00" % (i // 1000000 % 60, i % 1000000))
                    for i, sig in enumerate(args["filler"])))
    db.commit()
    db.close()
    store = SQLiteSignatureStore(args["dbFile"])
    for sig in args["known"]:
        store.store_signature(sig, "sha256")
    store.close()
    print(json.dumps(True))
elif cmd == "run":
    started = time.perf_counter()
    store = SQLiteSignatureStore(args["dbFile"])
    first = (time.perf_counter() - started) * 1000
    out = {"first": first}
    for name, digests, expected in (("store", args["new"], None), ("hit", args["known"], True),
                                    ("miss", args["unknown"], False)):
        samples = []
        for digest in digests:
            t = time.perf_counter()
            answer = (store.store_signature if name == "store" else store.check_signature)(digest, "sha256")
            samples.append((time.perf_counter() - t) * 1000)
            if expected is not None and answer != expected:
                raise SystemExit("nbformat answered %r for %s" % (answer, name))
        out[name] = samples
    store.close()
    print(json.dumps(out))
elif cmd == "contend":
    # The store is opened before the lock is taken (opening under it would wait too).
    store = SQLiteSignatureStore(args["dbFile"])
    print("ready", flush=True)
    sys.stdin.readline()
    t = time.perf_counter()
    try:
        store.store_signature(args["digest"], "sha256")
        outcome = "stored"
    except sqlite3.OperationalError as error:
        outcome = "failed: " + str(error)
    print(json.dumps({"ms": (time.perf_counter() - t) * 1000, "outcome": outcome}), flush=True)
elif cmd == "hold":
    db = sqlite3.connect(args["dbFile"], isolation_level=None)
    db.execute("BEGIN EXCLUSIVE")
    print("holding", flush=True)
    time.sleep(args["seconds"])
    db.execute("COMMIT")
    db.close()
`;

let python = '';

function runPython<T>(input: object): T {
  const result = spawnSync(python, ['-c', PYTHON], {
    input: JSON.stringify(input),
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024
  });
  if (result.status !== 0) throw new Error(`python failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** A Python process started on a command; resolves the first line that contains `marker`. */
function startPython(
  input: object,
  marker: string
): { child: ChildProcessWithoutNullStreams; ready: Promise<void>; lines: string[] } {
  const child = spawn(python, ['-c', PYTHON], { stdio: 'pipe' });
  // The payload is the first line; further lines are signals to the script.
  child.stdin.write(`${JSON.stringify(input)}\n`);
  const lines: string[] = [];
  let buffer = '';
  let stderr = '';
  child.stderr.on('data', chunk => (stderr += chunk));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', chunk => {
      buffer += chunk;
      const parts = buffer.split('\n');
      buffer = parts.pop() ?? '';
      lines.push(...parts);
      if (parts.some(line => line.includes(marker))) resolve();
    });
    child.on('exit', code => reject(new Error(`python exited (${code}) early: ${stderr}`)));
  });
  ready.catch(() => undefined);
  return { child, ready, lines };
}

function exited(child: ChildProcessWithoutNullStreams): Promise<void> {
  return new Promise(resolve =>
    child.exitCode !== null ? resolve() : child.once('exit', () => resolve())
  );
}

const digest = (): string => randomBytes(32).toString('hex');
const digests = (count: number): string[] => Array.from({ length: count }, digest);

/** The store a side makes its calls on, and the notary to close afterwards. */
function openStore(side: Exclude<Side, 'nbformat'>, dataDir: string): NotebookNotary {
  return side === 'gateway' ? createNotary(dataDir) : new NotebookNotary({ dataDir });
}

async function timed(call: () => Promise<unknown>): Promise<ISample & { answer: unknown }> {
  const started = performance.now();
  const pending = call();
  const returned = performance.now();
  const answer = await pending;
  return { total: performance.now() - started, blocked: returned - started, answer };
}

interface IRun {
  first: ISample;
  calls: Record<Call, ISample[]>;
  external?: number;
}

async function runNode(
  side: Exclude<Side, 'nbformat'>,
  dataDir: string,
  work: { new: string[]; known: string[]; unknown: string[] }
): Promise<IRun> {
  const notary = openStore(side, dataDir);
  const store: ISignatureStore = notary.store;
  const externalBefore = process.memoryUsage().external;
  try {
    const first = await timed(() => store.checkSignature(digest(), 'sha256'));
    const calls = { store: [], hit: [], miss: [] } as Record<Call, ISample[]>;
    for (const d of work.new)
      calls.store.push(await timed(() => store.storeSignature(d, 'sha256')));
    for (const d of work.known) {
      const sample = await timed(() => store.checkSignature(d, 'sha256'));
      if (sample.answer !== true) throw new Error(`${side} did not trust a recorded signature`);
      calls.hit.push(sample);
    }
    for (const d of work.unknown) {
      const sample = await timed(() => store.checkSignature(d, 'sha256'));
      if (sample.answer !== false) throw new Error(`${side} trusted an unknown signature`);
      calls.miss.push(sample);
    }
    return { first, calls, external: process.memoryUsage().external - externalBefore };
  } finally {
    await notary.close();
  }
}

function runNbformat(
  dbFile: string,
  work: { new: string[]; known: string[]; unknown: string[] }
): IRun {
  const out = runPython<Record<Call | 'first', number[] | number>>({ cmd: 'run', dbFile, ...work });
  const samples = (name: Call): ISample[] =>
    (out[name] as number[]).map(ms => ({ total: ms, blocked: ms }));
  const first = out.first as number;
  return {
    first: { total: first, blocked: first },
    calls: { store: samples('store'), hit: samples('hit'), miss: samples('miss') }
  };
}

interface IContention {
  ms: number;
  outcome: string;
  stallMs: number;
}

/** One call to store a signature while another process holds `BEGIN EXCLUSIVE` for `seconds`. */
async function contend(side: Side, dataDir: string, seconds: number): Promise<IContention> {
  const dbFile = join(dataDir, 'nbsignatures.db');
  const d = digest();
  let callPython: ReturnType<typeof startPython> | undefined;
  let notary: NotebookNotary | undefined;
  if (side === 'nbformat') {
    callPython = startPython({ cmd: 'contend', dbFile, digest: d }, 'ready');
    await callPython.ready;
  } else {
    notary = openStore(side, dataDir);
    // Started (worker, module) and known to be idle before the lock.
    await notary.store.checkSignature(digest(), 'sha256');
  }
  const holder = startPython({ cmd: 'hold', dbFile, seconds }, 'holding');
  await holder.ready;
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  try {
    if (callPython) {
      callPython.child.stdin.write('go\n');
      await exited(callPython.child);
      const result = JSON.parse(callPython.lines.at(-1) ?? '{}') as { ms: number; outcome: string };
      return { ...result, stallMs: NaN };
    }
    const store = (notary as NotebookNotary).store;
    const started = performance.now();
    let outcome = 'stored';
    try {
      await store.storeSignature(d, 'sha256');
    } catch (error) {
      outcome = `failed: ${(error as Error).name}`;
    }
    return { ms: performance.now() - started, outcome, stallMs: loop.max / 1e6 };
  } finally {
    loop.disable();
    await exited(holder.child);
    await notary?.close();
  }
}

function row(cells: readonly string[]): string {
  return `| ${cells.join(' | ')} |`;
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  return [row(header), row(header.map(() => '---')), ...rows.map(row), ''];
}

async function main(): Promise<void> {
  python = findVenvPython();
  if (!options['skip-build']) build();
  const started = Date.now();
  const tmp = mkdtempSync(join(tmpdir(), 'trust-bench-'));
  cleanupStep(async () => rmSync(tmp, { recursive: true, force: true }));

  const out: string[] = [
    '## Notebook trust: the signature database',
    '',
    `- Command: \`npm run bench:trust${options.quick ? ' -- --quick' : ''}\``,
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
    out.push(...table(['call', 'side', 'latency p50 / p99', 'blocked p50 / max'], rows));
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
    ...table(['lock held', 'side', 'call took', 'outcome', 'longest event-loop stall'], contention),
    `Run time: ${Math.round((Date.now() - started) / 1000)} s`,
    ''
  );
  process.stdout.write(`${out.join('\n')}\n`);
}

main()
  .catch(error => {
    process.exitCode = 1;
    console.error(error);
  })
  .finally(() => cleanUp());
