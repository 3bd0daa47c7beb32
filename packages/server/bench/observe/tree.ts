/**
 * The generated trees of the observation benchmark: the notebooks (written once per run, copied
 * where another root needs them) and the small files of the re-scan root, from fixed seeds.
 */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanupStep, log } from '../cleanup';
import { CODE_LINES, Random, WORDS, generateNotebook } from '../notebook';
import type { ITreePlan } from './model';

/** `proj-07/exp-12`: the i-th of the leaf folders. */
export function folderName(index: number): string {
  return `proj-${String(Math.floor(index / 20)).padStart(2, '0')}/exp-${String(index % 20).padStart(2, '0')}`;
}

/**
 * A notebook size from a log-normal distribution: median 18 KB, mean about 20 KB, from 9 KB
 * (generateNotebook is slow to hit a smaller target) to 120 KB.
 */
function notebookSize(random: Random): number {
  const u = Math.max(random.float(), 1e-9);
  const v = random.float();
  const normal = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  return Math.round(Math.min(120_000, Math.max(9_000, 18_000 * Math.exp(0.5 * normal))));
}

/** The generated notebooks of a run: written once, copied where another root needs them. */
export class NotebookTree {
  constructor(readonly plan: ITreePlan) {}

  /** The API paths of the notebooks. */
  paths: string[] = [];
  /** Their total size on disk. */
  bytes = 0;

  /** The directory holding the tree (generated on the first call). */
  async dir(): Promise<string> {
    if (this._dir !== undefined) return this._dir;
    const parent = await mkdtemp(join(tmpdir(), 'bench-notebooks-'));
    this.remove = cleanupStep(() => rm(parent, { recursive: true, force: true }));
    const dir = join(parent, 'root');
    const started = performance.now();
    const random = new Random(0x0b5e);
    const perFolder = Math.ceil(this.plan.notebooks / this.plan.folders);
    for (let i = 0; i < this.plan.notebooks; i++) {
      const folder = folderName(Math.floor(i / perFolder));
      if (i % perFolder === 0) mkdirSync(join(dir, folder), { recursive: true });
      const path = `${folder}/analysis-${String(i % perFolder).padStart(3, '0')}.ipynb`;
      const bytes = generateNotebook(notebookSize(random), i + 1).diskBytes;
      writeFileSync(join(dir, path), bytes);
      this.paths.push(path);
      this.bytes += bytes.length;
    }
    log(
      `generated ${this.plan.notebooks.toLocaleString('en-US')} notebooks ` +
        `(${(this.bytes / 1e6).toFixed(1)} MB) in ${((performance.now() - started) / 1000).toFixed(1)} s`
    );
    this._dir = dir;
    return dir;
  }

  /** Remove the tree (if it was generated). */
  remove: () => Promise<void> = async () => undefined;

  private _dir: string | undefined;
}

/** Every file below `root` (hidden ones too), as relative paths. */
export function filesUnder(root: string): string[] {
  const found: string[] = [];
  const walk = (relative: string): void => {
    for (const entry of readdirSync(join(root, relative), { withFileTypes: true })) {
      const path = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else found.push(path);
    }
  };
  walk('');
  return found;
}

/** Throw unless `actual` holds exactly the paths of `expected`. */
export function checkSameFiles(
  actual: readonly string[],
  expected: readonly string[],
  what: string
): void {
  const want = new Set(expected);
  const have = new Set(actual);
  const extra = actual.filter(path => !want.has(path));
  const missing = expected.filter(path => !have.has(path));
  if (extra.length > 0 || missing.length > 0 || actual.length !== expected.length) {
    throw new Error(
      `${what}: ${actual.length} files instead of ${expected.length}; ` +
        `extra ${extra.slice(0, 5).join(', ') || 'none'}; missing ${missing.slice(0, 5).join(', ') || 'none'}`
    );
  }
}

/** A small text file of one of three kinds, 200 B to about 4 KB. */
export function smallFile(random: Random, kind: number): { ext: string; text: string } {
  const target = 200 + (random.next() % 3800);
  const lines: string[] = [];
  let size = 0;
  const push = (line: string): void => {
    lines.push(line);
    size += line.length + 1;
  };
  if (kind === 0) {
    while (size < target) push(random.pick(CODE_LINES));
    return { ext: 'py', text: lines.join('\n') + '\n' };
  }
  if (kind === 1) {
    push('timestamp,sensor,value,flag');
    for (let row = 0; size < target; row++) {
      push(
        `2026-01-${String(1 + (row % 28)).padStart(2, '0')}T${String(row % 24).padStart(2, '0')}:00:00,s${random.int(1, 40)},${(random.float() * 100).toFixed(4)},${random.int(0, 1)}`
      );
    }
    return { ext: 'csv', text: lines.join('\n') + '\n' };
  }
  while (size < target) {
    push(Array.from({ length: random.int(6, 14) }, () => random.pick(WORDS)).join(' ') + '.');
  }
  return { ext: 'txt', text: lines.join('\n') + '\n' };
}
