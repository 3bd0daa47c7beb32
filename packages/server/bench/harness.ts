/**
 * What the benchmarks share around their measurements: waiting, bounded concurrency, the
 * gateway's log lines, a description of the machine, and the run itself (its command line, and
 * a deadline and clean-up whatever happens). The build is in build.ts, the reports and
 * docs/benchmarks.md in docs.ts.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import {
  availableParallelism,
  cpus,
  loadavg,
  release,
  tmpdir,
  totalmem,
  type as osType
} from 'node:os';
import type { IGatewayProcess } from '../test/support/gateway';
import { findVenvPython } from '../test/support/jupyterServer';
import { cleanUp, cleaningUp, log } from './cleanup';

export function sleep(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, Math.max(0, ms)));
}

/** `count` tasks, `concurrency` at a time, in index order. */
export async function runConcurrent(
  count: number,
  concurrency: number,
  task: (index: number) => Promise<void>
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}

/** What a gateway logs (info) once it archives every change under its root. */
export const ARCHIVING_ON_MESSAGE = 'archiving every change to the notebooks under the root';

/** The JSON lines a gateway wrote with the given message. */
export function logLines(gateway: IGatewayProcess, msg: string): Array<Record<string, unknown>> {
  const lines: Array<Record<string, unknown>> = [];
  for (const line of gateway.stderr().split('\n')) {
    if (!line.startsWith('{') || !line.includes(msg)) continue;
    try {
      const entry = JSON.parse(line) as Record<string, unknown>;
      if (entry.msg === msg) lines.push(entry);
    } catch {
      // not one of the gateway's lines
    }
  }
  return lines;
}

/**
 * Wait until a gateway has logged `msg`; resolves with the first such line.
 *
 * @throws with the end of its log after `timeoutMs`.
 */
export async function waitForLogLine(
  gateway: IGatewayProcess,
  msg: string,
  timeoutMs = 10_000
): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [line] = logLines(gateway, msg);
    if (line !== undefined) return line;
    if (Date.now() > deadline) {
      throw new Error(
        `the gateway (pid ${gateway.record.pid}) did not log '${msg}'; its stderr:\n${gateway
          .stderr()
          .slice(-3000)}`
      );
    }
    await sleep(50);
  }
}

// ---------------------------------------------------------------------------------------------
// The machine

/** The 1, 5 and 15 minute load averages before the run: a busy machine blurs the figures. */
const loadAtStart = loadavg()
  .map(load => load.toFixed(2))
  .join(' / ');

/** The file system type of the mount holding `dir` (`/proc/mounts`, longest match). */
export function fileSystemOf(dir: string): string {
  try {
    let best = { mount: '', type: 'unknown' };
    for (const line of readFileSync('/proc/mounts', 'utf8').split('\n')) {
      const [, mount, type] = line.split(' ');
      if (mount === undefined || type === undefined) continue;
      const inside = dir === mount || dir.startsWith(mount.endsWith('/') ? mount : `${mount}/`);
      if (inside && mount.length >= best.mount.length) best = { mount, type };
    }
    return best.type;
  } catch {
    return 'unknown';
  }
}

/** Cores, memory, kernel, Node, then `more` (say `, Python 3.11`), and the load at the start. */
export function machineDescription(more: string): string {
  const model = cpus()[0]?.model.trim() ?? 'unknown CPU';
  return (
    `${availableParallelism()} cores (${model}), ${(totalmem() / 1024 ** 3).toFixed(1)} GiB memory, ` +
    `${osType()} ${release()}, Node ${process.version}${more}; load average at the start ${loadAtStart}`
  );
}

/** The machine, and the file system of the temporary directories (`temporary` says what they hold). */
export function machineLine(temporary: string): string {
  return machineDescription(`; temporary directories (${temporary}) on ${fileSystemOf(tmpdir())}`);
}

/**
 * The machine, with the project venv's Python and the versions of `modules` (say
 * `['jupyter_server']`): `, Python 3.12.3 / jupyter_server 2.17.0`, or `unknown` when that
 * Python cannot say.
 */
export function machineWithPython(modules: readonly string[]): string {
  let python = 'unknown';
  const versions = modules.map(name => `"/ ${name}", ${name}.__version__`).join(', ');
  try {
    python = execFileSync(
      findVenvPython(),
      ['-c', `import sys, ${modules.join(', ')}; print(sys.version.split()[0], ${versions})`],
      { encoding: 'utf8', timeout: 30_000 }
    ).trim();
  } catch {
    // reported as unknown
  }
  return machineDescription(`, Python ${python}`);
}

// ---------------------------------------------------------------------------------------------
// The run

/** The command line of this run as the reports show it: `npm run <script> -- <arguments>`. */
export function commandLine(script: string): string {
  const argv = process.argv.slice(2);
  return `npm run ${script}${argv.length > 0 ? ` -- ${argv.join(' ')}` : ''}`;
}

/**
 * Run a benchmark: `run` under a watchdog that stops every server after `deadlineMs`, then the
 * clean-up steps whatever happened. A failure sets the exit status; a missed target does not
 * (a benchmark measures, it does not test).
 */
export async function runBenchmark(run: () => Promise<void>, deadlineMs: number): Promise<void> {
  const watchdog = setTimeout(() => {
    log(`the run took more than ${deadlineMs / 60_000} minutes: aborting`);
    void cleanUp().finally(() => process.exit(1));
  }, deadlineMs);
  watchdog.unref();
  try {
    await run();
  } catch (error) {
    // After a signal the servers are going away under the run: that is no failure to report.
    if (!cleaningUp()) log(`failed: ${(error as Error).stack ?? String(error)}`);
    process.exitCode = 1;
  } finally {
    await cleanUp();
    clearTimeout(watchdog);
  }
}
