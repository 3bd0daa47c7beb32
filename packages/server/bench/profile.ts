/**
 * Summarise V8 CPU profiles (`node --cpu-prof`) of our server: where its busy time goes, by
 * function (self and inclusive time) and by source file, as shares of the non-idle time.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

interface ICallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface IProfileNode {
  id: number;
  callFrame: ICallFrame;
  children?: number[];
}

interface ICpuProfile {
  nodes: IProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** One row of a summary. */
export interface IProfileRow {
  /** `name (file:line)`. */
  readonly where: string;
  /** Milliseconds. */
  readonly ms: number;
  /** Share of the busy (non-idle) time, 0 to 1. */
  readonly share: number;
}

/** The summary of one profile. */
export interface IProfileSummary {
  /** Busy time, in milliseconds (everything but `(idle)`). */
  readonly busyMs: number;
  /** Functions by self time. */
  readonly bySelf: IProfileRow[];
  /** Functions by inclusive time (self plus callees), without the synthetic roots. */
  readonly byInclusive: IProfileRow[];
  /** Source files by self time. */
  readonly byFile: IProfileRow[];
  /** Self time by call path: the function and its nearest callers (innermost first). */
  readonly byStack: IProfileRow[];
}

/** Frames shown per call path in {@link IProfileSummary.byStack}. */
const STACK_DEPTH = 5;

const SYNTHETIC = new Set(['(root)', '(program)', '(idle)', '(garbage collector)']);

function shortFile(url: string, repoRoot: string): string {
  if (url === '') return '';
  let file = url;
  if (url.startsWith('file://')) file = fileURLToPath(url);
  if (file.startsWith(repoRoot)) file = relative(repoRoot, file);
  return file.replace(/^.*node_modules\//, 'node_modules/');
}

function label(frame: ICallFrame, repoRoot: string): string {
  const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
  const file = shortFile(frame.url, repoRoot);
  return file === '' ? name : `${name} (${file}:${frame.lineNumber + 1})`;
}

function top(map: Map<string, number>, busyMs: number, count: number): IProfileRow[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([where, ms]) => ({ where, ms, share: busyMs > 0 ? ms / busyMs : 0 }));
}

/**
 * Read and summarise a `.cpuprofile`.
 *
 * @param file - the profile written by `node --cpu-prof`.
 * @param repoRoot - paths below it are shown relative to it.
 * @param count - rows per table.
 */
export async function summariseProfile(
  file: string,
  repoRoot: string,
  count = 15
): Promise<IProfileSummary> {
  const profile = JSON.parse(await readFile(file, 'utf8')) as ICpuProfile;
  const byId = new Map(profile.nodes.map(node => [node.id, node]));
  const selfUs = new Map<number, number>();
  // timeDeltas[i] is the time before sample i; attribute it to the sample, as DevTools does.
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const parent = new Map<number, number>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parent.set(child, node.id);

  let busyUs = 0;
  const self = new Map<string, number>();
  const files = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const stacks = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (node === undefined || node.callFrame.functionName === '(idle)') continue;
    busyUs += us;
    const key = label(node.callFrame, repoRoot);
    self.set(key, (self.get(key) ?? 0) + us / 1000);
    const file =
      shortFile(node.callFrame.url, repoRoot) || node.callFrame.functionName || '(native)';
    files.set(file, (files.get(file) ?? 0) + us / 1000);
    const path: string[] = [];
    for (
      let at: number | undefined = id;
      at !== undefined && path.length < STACK_DEPTH;
      at = parent.get(at)
    ) {
      const frame = byId.get(at)?.callFrame;
      if (frame !== undefined && !SYNTHETIC.has(frame.functionName))
        path.push(label(frame, repoRoot));
    }
    const stackKey = path.join(' ← ') || key;
    stacks.set(stackKey, (stacks.get(stackKey) ?? 0) + us / 1000);
    // Count each function once per stack (recursion must not double its inclusive time).
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)?.callFrame;
      if (frame === undefined || SYNTHETIC.has(frame.functionName)) continue;
      const frameKey = label(frame, repoRoot);
      if (seen.has(frameKey)) continue;
      seen.add(frameKey);
      inclusive.set(frameKey, (inclusive.get(frameKey) ?? 0) + us / 1000);
    }
  }
  const busyMs = busyUs / 1000;
  return {
    busyMs,
    bySelf: top(self, busyMs, count),
    byInclusive: top(inclusive, busyMs, count),
    byFile: top(files, busyMs, count),
    byStack: top(stacks, busyMs, count)
  };
}

/** The summary as text, one table per view. */
export function formatProfileSummary(summary: IProfileSummary): string {
  const table = (title: string, rows: IProfileRow[]): string =>
    `${title}\n` +
    rows
      .map(
        row =>
          `  ${(row.share * 100).toFixed(1).padStart(5)}%  ${row.ms.toFixed(0).padStart(7)} ms  ${row.where}`
      )
      .join('\n');
  return [
    `busy time: ${summary.busyMs.toFixed(0)} ms`,
    table('by self time:', summary.bySelf),
    table('by inclusive time:', summary.byInclusive),
    table('by file (self time):', summary.byFile),
    table('by call path (self time; innermost first):', summary.byStack)
  ].join('\n\n');
}

/**
 * Write a preload script that profiles the Node process it is loaded into, as `--cpu-prof`
 * would, and writes `<pid>.cpuprofile` into `dir` when the process exits. `--cpu-prof` itself is
 * not allowed in NODE_OPTIONS, and NODE_OPTIONS is the only way into the process that
 * startGatewayProcess spawns.
 */
export async function writeProfilerPreload(dir: string): Promise<string> {
  const file = join(dir, 'cpu-profile-preload.cjs');
  const script = `'use strict';
const inspector = require('node:inspector');
const fs = require('node:fs');
const path = require('node:path');
const session = new inspector.Session();
session.connect();
session.post('Profiler.enable');
session.post('Profiler.start');
process.on('exit', () => {
  session.post('Profiler.stop', (error, result) => {
    if (!error) {
      fs.writeFileSync(
        path.join(${JSON.stringify(dir)}, process.pid + '.cpuprofile'),
        JSON.stringify(result.profile)
      );
    }
  });
});
`;
  await writeFile(file, script);
  return file;
}
