/**
 * The diff engine against Python nbdime (the ecosystem venv's pinned version) on the same pairs:
 * a seeded corpus of generated notebooks with every kind of edit, alone and mixed, and the
 * real notebook versions that nbdime's own test suite diffs.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { diffNotebooks, joinMultilineStrings, patch, type DiffEntry } from '../src';
import type { JSONValue } from '../src/types';
import { ecosystemBin, ecosystemVenv } from '../../server/test/support/ecosystem';
import { canonical, generatedPairs, type INotebookPair, type NotebookJson } from './corpus';

/** Pairs per kind of edit alone, and pairs of mixed edits. */
const PER_KIND = 40;
const MIXED = 80;
const SEED = 18;

/** The share of diffs that must equal nbdime's exactly. */
const MIN_EQUAL_SHARE = 0.95;

jest.setTimeout(600_000);

/** The notebooks of nbdime's test suite: several versions of each, edited by hand. */
function realPairs(): INotebookPair[] {
  const lib = join(ecosystemVenv(), 'lib');
  const python = readdirSync(lib).find(name => name.startsWith('python'));
  const files = join(lib, python ?? 'python3', 'site-packages', 'nbdime', 'tests', 'files');
  if (!existsSync(files)) throw new Error(`nbdime's test notebooks are missing: ${files}`);
  const versions = new Map<string, Array<{ file: string; notebook: NotebookJson }>>();
  for (const file of readdirSync(files).sort()) {
    if (!file.endsWith('.ipynb')) continue;
    const notebook = JSON.parse(readFileSync(join(files, file), 'utf8')) as NotebookJson;
    // Older formats would need nbformat's conversion, which is not part of diffing.
    if (notebook.nbformat !== 4) continue;
    const stem = file.replace(/(--.*)?\.ipynb$/, '');
    versions.set(stem, [...(versions.get(stem) ?? []), { file, notebook }]);
  }
  const pairs: INotebookPair[] = [];
  for (const group of versions.values()) {
    for (const base of group) {
      for (const remote of group) {
        if (base === remote) continue;
        const name = `real-${base.file}-${remote.file}`.replace(/\.ipynb/g, '');
        pairs.push({ name, kinds: [], base: base.notebook, remote: remote.notebook });
      }
    }
  }
  return pairs;
}

/** nbdime's diffs of the pairs, from one Python process. */
function nbdimeDiffs(pairs: readonly INotebookPair[]): Record<string, DiffEntry[]> {
  const directory = mkdtempSync(join(tmpdir(), 'diff-oracle-'));
  try {
    for (const pair of pairs) {
      writeFileSync(join(directory, `${pair.name}.base.json`), JSON.stringify(pair.base));
      writeFileSync(join(directory, `${pair.name}.remote.json`), JSON.stringify(pair.remote));
    }
    writeFileSync(join(directory, 'manifest.json'), JSON.stringify(pairs.map(pair => pair.name)));
    const script = join(__dirname, 'nbdime_oracle.py');
    const run = spawnSync(ecosystemBin('python'), [script, directory], { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`nbdime_oracle.py failed (${run.status}): ${run.stderr}`);
    const output = JSON.parse(readFileSync(join(directory, 'nbdime.json'), 'utf8'));
    return output.diffs as Record<string, DiffEntry[]>;
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** The number of entries of a diff, nested ones included. */
function entryCount(diff: readonly DiffEntry[]): number {
  let count = 0;
  for (const entry of diff) count += 1 + (entry.op === 'patch' ? entryCount(entry.diff) : 0);
  return count;
}

/**
 * Where two diffs first part: the path of diff keys down to the first entry that differs, with
 * list indices as `*`, and the two ops there (`patch/addrange` when ours patches what nbdime
 * replaces).
 */
function firstDifference(
  ours: readonly DiffEntry[],
  theirs: readonly DiffEntry[],
  path = ''
): string {
  for (let i = 0; i < Math.max(ours.length, theirs.length); i++) {
    const a = ours[i];
    const b = theirs[i];
    if (a !== undefined && b !== undefined && canonical(a) === canonical(b)) continue;
    if (a?.op === 'patch' && b?.op === 'patch' && a.key === b.key) {
      const key = typeof a.key === 'number' ? '*' : a.key;
      return firstDifference(a.diff, b.diff, `${path}/${key}`);
    }
    return `${path || '/'}: ours ${a?.op ?? 'nothing'}, nbdime ${b?.op ?? 'nothing'}`;
  }
  return `${path || '/'}: equal`;
}

interface IOutcome {
  readonly pair: INotebookPair;
  readonly applied: boolean;
  readonly equal: boolean;
  readonly ours: DiffEntry[];
  readonly theirs: DiffEntry[];
}

describe('diff engine against nbdime', () => {
  let outcomes: IOutcome[] = [];

  beforeAll(() => {
    const pairs = [...generatedPairs(SEED, PER_KIND, MIXED), ...realPairs()];
    const theirs = nbdimeDiffs(pairs);
    outcomes = pairs.map(pair => {
      const ours = diffNotebooks(pair.base, pair.remote);
      const patched = patch(joinMultilineStrings(pair.base) as JSONValue, ours);
      return {
        pair,
        ours,
        theirs: theirs[pair.name],
        applied: canonical(patched) === canonical(joinMultilineStrings(pair.remote)),
        equal: canonical(ours) === canonical(theirs[pair.name])
      };
    });
    const equal = outcomes.filter(outcome => outcome.equal).length;
    const applied = outcomes.filter(outcome => outcome.applied).length;
    const differences = new Map<string, number>();
    for (const outcome of outcomes.filter(o => !o.equal)) {
      const where = firstDifference(outcome.ours, outcome.theirs);
      differences.set(where, (differences.get(where) ?? 0) + 1);
    }
    const percent = (n: number): string => `${((100 * n) / outcomes.length).toFixed(1)} %`;
    console.log(
      [
        `oracle corpus: ${outcomes.length} pairs (${pairs.filter(p => p.kinds.length > 0).length} generated, ` +
          `${pairs.filter(p => p.kinds.length === 0).length} from nbdime's test notebooks)`,
        `applied to base gives remote: ${applied} (${percent(applied)})`,
        `equal to nbdime's diff: ${equal} (${percent(equal)})`,
        ...[...differences].map(([where, count]) => `  differs at ${where}: ${count}`)
      ].join('\n')
    );
  });

  it('covers every kind of edit, alone and mixed, and real notebooks', () => {
    const kinds = new Set(outcomes.flatMap(o => (o.pair.kinds.length === 1 ? o.pair.kinds : [])));
    expect([...kinds].sort()).toEqual(['delete', 'edit', 'insert', 'metadata', 'move', 'outputs']);
    expect(outcomes.filter(o => o.pair.kinds.length > 1).length).toBe(MIXED);
    expect(outcomes.filter(o => o.pair.kinds.length === 0).length).toBeGreaterThan(50);
    // The edits change something in nearly every pair: the corpus is not trivially equal.
    expect(outcomes.filter(o => o.theirs.length > 0).length).toBeGreaterThan(outcomes.length * 0.9);
  });

  it('gives diffs that turn each base into its remote (every pair)', () => {
    const failed = outcomes.filter(o => !o.applied).map(o => o.pair.name);
    expect(failed).toEqual([]);
  });

  it(`equals nbdime's diff exactly for at least ${MIN_EQUAL_SHARE * 100} % of the pairs`, () => {
    const equal = outcomes.filter(o => o.equal).length;
    expect(equal / outcomes.length).toBeGreaterThanOrEqual(MIN_EQUAL_SHARE);
  });

  it("is no larger than nbdime's diff where they differ", () => {
    const larger = outcomes
      .filter(o => !o.equal)
      .filter(
        o =>
          entryCount(o.ours) > entryCount(o.theirs) ||
          JSON.stringify(o.ours).length > JSON.stringify(o.theirs).length
      )
      .map(o => `${o.pair.name}: ${firstDifference(o.ours, o.theirs)}`);
    expect(larger).toEqual([]);
  });
});
