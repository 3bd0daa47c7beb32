/**
 * What the benchmarks share around their measurements: waiting, bounded concurrency, the build,
 * a description of the machine, the gateway's log lines, and the generated sections of
 * docs/benchmarks.md.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import {
  availableParallelism,
  cpus,
  loadavg,
  release,
  tmpdir,
  totalmem,
  type as osType
} from 'node:os';
import { join } from 'node:path';
import type { IGatewayProcess } from '../test/support/gateway';
import { REPO_ROOT } from '../test/support/jupyterServer';
import { log } from './cleanup';

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

/** Build the packages (`tsc -b`), as `npm run build` does for the server. */
export function build(): void {
  log('building (tsc -b)');
  const tsc = join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = spawnSync(process.execPath, [tsc, '-b'], { cwd: REPO_ROOT, stdio: 'inherit' });
  if (result.status !== 0)
    throw new Error('`tsc -b` failed: fix the build (npm run build), or pass --skip-build.');
}

/** What a gateway logs (info) once it archives every change under its root. */
export const ARCHIVING_ON_MESSAGE = 'archiving every change to the notebooks under the root';

/** A target and whether the run met it. */
export interface ITargetCheck {
  readonly text: string;
  readonly met: boolean;
}

/**
 * A benchmark's report, as docs/benchmarks.md shows it: a heading, the command, date, machine
 * and run time, more `head` items, the sections, then every target with met or missed.
 */
export function reportText(report: {
  readonly title: string;
  readonly command: string;
  readonly machine: string;
  readonly seconds: number;
  readonly head: readonly string[];
  readonly sections: readonly string[];
  readonly checks: readonly ITargetCheck[];
}): { text: string; allMet: boolean } {
  const { checks } = report;
  const met = checks.filter(check => check.met).length;
  const allMet = met === checks.length;
  const summary = allMet
    ? `targets met (${met} of ${checks.length})`
    : `targets missed: ${checks.length - met} of ${checks.length} (${checks
        .filter(check => !check.met)
        .map(check => check.text.split(':')[0])
        .join('; ')})`;
  const text = [
    `## ${report.title}`,
    '',
    `- Command: \`${report.command}\``,
    `- Date: ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}`,
    `- Machine: ${report.machine}`,
    `- Run time: ${Math.round(report.seconds)} s`,
    ...report.head.map(item => `- ${item}`),
    '',
    ...report.sections,
    `### Targets: ${allMet ? 'met' : 'missed'}`,
    '',
    ...checks.map(check => `- ${check.text}: ${check.met ? 'met' : '**missed**'}`),
    '',
    `**${summary}**`,
    ''
  ].join('\n');
  return { text, allMet };
}

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

// ---------------------------------------------------------------------------------------------
// docs/benchmarks.md

export const DOCS_FILE = join(REPO_ROOT, 'docs', 'benchmarks.md');
/** Where the contents benchmark's page starts: it rewrites everything below its own marker. */
const CONTENTS_HEADING = '# Contents API benchmark';
const CONTENTS_MARKER = '<!-- Generated by `npm run bench:contents`';

/** A part of docs/benchmarks.md that a benchmark rewrites. */
export interface IGeneratedSection {
  /** The marker lines around the generated part. */
  readonly begin: string;
  readonly end: string;
  /** The section's heading and description, written above the markers the first time. */
  readonly intro: string;
}

/**
 * Replace the generated part of a section with `body`; the first time, add the section (intro
 * and markers) just above the contents benchmark's page, which rewrites everything below its
 * own marker.
 */
export function writeGeneratedSection(section: IGeneratedSection, body: string): void {
  const { begin: BEGIN, end: END } = section;
  const block = `${BEGIN}\n\n${body}\n${END}\n`;
  const current = existsSync(DOCS_FILE) ? readFileSync(DOCS_FILE, 'utf8') : '';
  const begin = current.indexOf(BEGIN);
  const end = current.indexOf(END);
  let next: string;
  if (begin >= 0 && end > begin) {
    next = current.slice(0, begin) + block + current.slice(end + END.length + 1);
  } else {
    let at = current.indexOf(`\n${CONTENTS_HEADING}\n`);
    if (at >= 0) at += 1;
    else at = current.indexOf(CONTENTS_MARKER);
    if (at < 0) at = current.length;
    next = current.slice(0, at) + `${section.intro}\n${block}\n` + current.slice(at);
  }
  const contents = next.indexOf(CONTENTS_MARKER);
  if (contents >= 0 && contents < next.indexOf(END)) {
    throw new Error(`${DOCS_FILE}: the section of ${BEGIN} must stay above the contents marker`);
  }
  writeFileSync(DOCS_FILE, next);
}
