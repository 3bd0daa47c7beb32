import type { DiffEntry, DiffSide, NotebookDiff } from '@jupyter-store/contract';

/**
 * A notebook diff for people, as `jupyter store diff` prints it: which cells were added,
 * removed or changed (with their index and type), the source lines each change adds (`+`) and
 * removes (`-`), and a summary of what changed in outputs and metadata.
 *
 * #### Notes
 * Cells are numbered from 0, as in the notebook's JSON and in nbdime's paths (`/cells/2`):
 * removed and changed cells by their place in the base, added cells by their place in the
 * remote. Unchanged lines are not shown.
 */
export function describeNotebookDiff(answer: NotebookDiff): string {
  const base = Private.sideName(answer.path, answer.base_ref);
  const remote = Private.sideName(answer.path, answer.remote_ref);
  if (answer.diff.length === 0) return `No differences between ${base} and ${remote}.\n`;
  const lines = [`--- ${base}`, `+++ ${remote}`];
  for (const entry of answer.diff) {
    if (entry.key === 'cells' && entry.op === 'patch') {
      lines.push(...Private.describeCells(Private.listOf(answer.base.cells), entry.diff));
    } else if (entry.key === 'metadata') {
      lines.push(Private.describeMapping('notebook metadata', answer.base.metadata, entry));
    } else {
      lines.push(Private.describeValue(`notebook ${entry.key}`, answer.base[entry.key], entry));
    }
  }
  return `${lines.join('\n')}\n`;
}

namespace Private {
  type JsonObject = Record<string, unknown>;

  /** What one side was read from, for the header lines. */
  export function sideName(path: string | null, side: DiffSide): string {
    switch (side.source) {
      case 'current':
        return `${path} (current file)`;
      case 'workspace':
        return `${path} (archived version ${side.object_version_id})`;
      case 'published':
        return `${path} (published version ${side.object_version_id})`;
      default:
        return 'the notebook given';
    }
  }

  /** The cells added, removed and changed, in the order of the notebook. */
  export function describeCells(cells: unknown[], diff: readonly DiffEntry[]): string[] {
    const lines: string[] = [];
    // Remote index minus base index of the cells reached so far.
    let shift = 0;
    // Cells removed at an index are listed before those inserted there, which they do not move.
    let removedAt = { key: -1, length: 0 };
    for (const entry of inSequenceOrder(diff)) {
      if (entry.op === 'addrange') {
        const first = entry.key + shift + (removedAt.key === entry.key ? removedAt.length : 0);
        const added = listOf(entry.valuelist);
        added.forEach((cell, offset) => {
          lines.push(`${cellName(first + offset, cell)} added:`);
          lines.push(...wholeCell('+', cell));
        });
        shift += added.length;
      } else if (entry.op === 'removerange') {
        for (let index = entry.key; index < entry.key + entry.length; index++) {
          lines.push(`${cellName(index, cells[index])} removed:`);
          lines.push(...wholeCell('-', cells[index]));
        }
        shift -= entry.length;
        removedAt = { key: entry.key, length: entry.length };
      } else if (entry.op === 'patch' && typeof entry.key === 'number') {
        const moved = shift === 0 ? '' : `, now cell ${entry.key + shift}`;
        const name = cellName(entry.key, cells[entry.key]).replace(/\)$/, `${moved})`);
        lines.push(`${name} changed:`);
        lines.push(...changedCell(objectOf(cells[entry.key]), entry.diff));
      }
    }
    return lines;
  }

  /** `cell 3 (code)`. */
  function cellName(index: number, cell: unknown): string {
    const type = objectOf(cell).cell_type;
    return `cell ${index} (${typeof type === 'string' ? type : 'unknown type'})`;
  }

  /** An added or removed cell: its source lines, and how many outputs it has. */
  function wholeCell(sign: '+' | '-', cell: unknown): string[] {
    const { source, outputs } = objectOf(cell);
    const lines = splitLines(textOf(source)).map(line => `  ${sign}${line}`);
    const list = listOf(outputs);
    if (list.length > 0) {
      lines.push(`  with ${count(list.length, 'output')} (${outputTypes(list)})`);
    }
    return lines;
  }

  /** What changed in a cell, key by key. */
  function changedCell(cell: JsonObject, diff: readonly DiffEntry[]): string[] {
    const lines: string[] = [];
    for (const entry of diff) {
      if (entry.key === 'source') {
        lines.push(...sourceChange(textOf(cell.source), entry));
      } else if (entry.key === 'outputs') {
        lines.push(`  ${outputsChange(listOf(cell.outputs), entry)}`);
      } else if (entry.key === 'metadata' || entry.key === 'attachments') {
        lines.push(`  ${describeMapping(entry.key, cell[entry.key], entry)}`);
      } else {
        lines.push(`  ${describeValue(String(entry.key), cell[entry.key], entry)}`);
      }
    }
    return lines;
  }

  /** The source lines a change removes (`-`) and adds (`+`). */
  function sourceChange(source: string, entry: DiffEntry): string[] {
    const before = splitLines(source);
    if (entry.op !== 'patch') {
      const after = 'value' in entry ? splitLines(textOf(entry.value)) : [];
      return [...before.map(line => `  -${line}`), ...after.map(line => `  +${line}`)];
    }
    const lines: string[] = [];
    for (const change of inSequenceOrder(entry.diff)) {
      if (change.op === 'addrange') {
        lines.push(...listOf(change.valuelist).map(line => `  +${withoutNewline(textOf(line))}`));
      } else if (change.op === 'removerange') {
        lines.push(...before.slice(change.key, change.key + change.length).map(l => `  -${l}`));
      } else if (change.op === 'patch' && typeof change.key === 'number') {
        const line = before[change.key] ?? '';
        lines.push(`  -${line}`, `  +${withoutNewline(patchCharacters(line, change.diff))}`);
      }
    }
    return lines;
  }

  /** A line with a character-based diff applied. */
  function patchCharacters(line: string, diff: readonly DiffEntry[]): string {
    const characters = Array.from(line);
    const result: string[] = [];
    let next = 0;
    for (const change of inSequenceOrder(diff)) {
      if (typeof change.key !== 'number') continue;
      result.push(...characters.slice(next, change.key));
      next = Math.max(next, change.key);
      if (change.op === 'addrange') {
        result.push(...listOf(change.valuelist).map(textOf));
      } else if (change.op === 'removerange') {
        next = change.key + change.length;
      }
    }
    return [...result, ...characters.slice(next)].join('');
  }

  /** `outputs changed: 1 added (image/png), 1 removed (text/plain)`. */
  function outputsChange(outputs: unknown[], entry: DiffEntry): string {
    if (entry.op !== 'patch') {
      const after = 'value' in entry ? listOf(entry.value) : [];
      return `outputs replaced: ${outputs.length} before, ${after.length} after`;
    }
    const parts: string[] = [];
    const tally = (what: string, changed: unknown[]): void => {
      if (changed.length > 0) parts.push(`${changed.length} ${what} (${outputTypes(changed)})`);
    };
    const changes = inSequenceOrder(entry.diff);
    tally(
      'added',
      changes.flatMap(c => (c.op === 'addrange' ? listOf(c.valuelist) : []))
    );
    tally(
      'removed',
      changes.flatMap(c => (c.op === 'removerange' ? outputs.slice(c.key, c.key + c.length) : []))
    );
    tally(
      'changed',
      changes.flatMap(c => (c.op === 'patch' && typeof c.key === 'number' ? [outputs[c.key]] : []))
    );
    return `outputs changed: ${parts.join(', ')}`;
  }

  /** The kinds of some outputs: their MIME types, `stream (stdout)`, `error (ValueError)`. */
  function outputTypes(outputs: unknown[]): string {
    const kinds = new Set<string>();
    for (const output of outputs) {
      const { output_type: type, data, name, ename } = objectOf(output);
      if (type === 'stream') kinds.add(`stream (${String(name)})`);
      else if (type === 'error') kinds.add(`error (${String(ename)})`);
      else if (data !== undefined) Object.keys(objectOf(data)).forEach(kind => kinds.add(kind));
      else kinds.add(String(type));
    }
    return [...kinds].join(', ');
  }

  /** `metadata changed: tags (changed), collapsed (added)`. */
  export function describeMapping(name: string, before: unknown, entry: DiffEntry): string {
    if (entry.op !== 'patch') return describeValue(name, before, entry);
    const keys = entry.diff.map(change => {
      const what = change.op === 'add' ? 'added' : change.op === 'remove' ? 'removed' : 'changed';
      return `${String(change.key)} (${what})`;
    });
    return `${name} changed: ${keys.join(', ')}`;
  }

  /** A value added, removed or replaced: `execution_count: 3 → 4`. */
  export function describeValue(name: string, before: unknown, entry: DiffEntry): string {
    switch (entry.op) {
      case 'add':
        return `${name} added: ${short(entry.value)}`;
      case 'remove':
        return `${name} removed (was ${short(before)})`;
      case 'replace':
        return `${name}: ${short(before)} → ${short(entry.value)}`;
      default:
        return `${name} changed`;
    }
  }

  /** A value in a line: JSON, cut at 60 characters. */
  function short(value: unknown): string {
    const text = JSON.stringify(value) ?? 'nothing';
    return text.length > 60 ? `${text.slice(0, 57)}...` : text;
  }

  /**
   * The entries of a sequence diff by index; at one index, what is removed before what is
   * inserted there, and both before the item there is patched, as a reader expects to see them.
   */
  function inSequenceOrder(diff: readonly DiffEntry[]): DiffEntry[] {
    const rank = { removerange: 0, addrange: 1 } as Record<string, number>;
    const index = (entry: DiffEntry) => (typeof entry.key === 'number' ? entry.key : 0);
    return [...diff].sort((a, b) => index(a) - index(b) || (rank[a.op] ?? 2) - (rank[b.op] ?? 2));
  }

  /** Lines without their line ends; none for an empty text. */
  function splitLines(text: string): string[] {
    return text === '' ? [] : text.replace(/\r?\n$/, '').split(/\r?\n/);
  }

  function withoutNewline(line: string): string {
    return line.replace(/\r?\n$/, '');
  }

  /** A multiline string, given as a string or as a list of lines. */
  function textOf(value: unknown): string {
    if (typeof value === 'string') return value;
    return Array.isArray(value) ? value.map(String).join('') : '';
  }

  export function listOf(value: unknown): unknown[] {
    if (Array.isArray(value)) return value;
    return typeof value === 'string' ? Array.from(value) : [];
  }

  function objectOf(value: unknown): JsonObject {
    return typeof value === 'object' && value !== null ? (value as JsonObject) : {};
  }

  function count(n: number, noun: string): string {
    return `${n} ${noun}${n === 1 ? '' : 's'}`;
  }
}
