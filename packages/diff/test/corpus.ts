/**
 * A deterministic corpus of notebook pairs for the oracle test and the benchmark: realistic
 * generated notebooks (markdown, code with stream, HTML table, PNG and error outputs) and the
 * same notebooks after edits a user makes: cells edited, inserted, deleted and moved, outputs and
 * metadata changed, each kind alone and mixed.
 */
import {
  CODE_LINES,
  Random,
  WORDS,
  generateNotebook,
  type Json,
  type JsonObject
} from '../../server/bench/notebook';

/** A kind of edit. */
export type EditKind = 'edit' | 'insert' | 'delete' | 'move' | 'outputs' | 'metadata';

/** Every kind of edit. */
export const EDIT_KINDS: readonly EditKind[] = [
  'edit',
  'insert',
  'delete',
  'move',
  'outputs',
  'metadata'
];

/** A notebook as parsed JSON. */
export type NotebookJson = JsonObject & { cells: JsonObject[] };

/** Two versions of a notebook, and what changed between them. */
export interface INotebookPair {
  /** A unique name (a file name stem). */
  readonly name: string;
  /** The edits, in order (`mixed` pairs have several). */
  readonly kinds: readonly EditKind[];
  readonly base: NotebookJson;
  readonly remote: NotebookJson;
}

/** A deep copy of a JSON value. */
export function clone<T extends Json>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function cellsOf(notebook: JsonObject): JsonObject[] {
  return notebook.cells as JsonObject[];
}

function codeCells(notebook: JsonObject): JsonObject[] {
  return cellsOf(notebook).filter(cell => cell.cell_type === 'code');
}

/** A multiline string field as a string, whether joined or split into lines. */
function textOf(value: Json | undefined): string {
  return Array.isArray(value) ? value.join('') : typeof value === 'string' ? value : '';
}

/**
 * A value as canonical JSON: object keys sorted. This is the only normalisation before diffs are
 * compared with nbdime's: nbdime builds its entries as Python dicts whose key order follows
 * construction, and key order carries no meaning in JSON objects. The order of list items
 * (entries, lines, cells) is kept: it matters.
 */
export function canonical(value: unknown): string {
  const sort = (item: unknown): unknown => {
    if (Array.isArray(item)) return item.map(sort);
    if (item === null || typeof item !== 'object') return item;
    const record = item as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(record)
        .sort()
        .map(key => [key, sort(record[key])])
    );
  };
  return JSON.stringify(sort(value));
}

/** Change one cell's source the way a user does: a word, a line added or removed, a rewrite. */
function editSource(random: Random, notebook: JsonObject): void {
  const cells = cellsOf(notebook);
  if (cells.length === 0) return;
  const cell = random.pick(cells);
  const lines = textOf(cell.source).split('\n');
  const at = random.int(0, Math.max(0, lines.length - 1));
  switch (random.int(0, 5)) {
    case 0: {
      // A word renamed in one line.
      const words = lines[at].split(' ');
      words[random.int(0, words.length - 1)] = random.pick(WORDS);
      lines[at] = words.join(' ');
      break;
    }
    case 1:
      lines.splice(at, 0, random.pick(CODE_LINES));
      break;
    case 2:
      if (lines.length > 1) lines.splice(at, 1);
      else lines[0] += ' ' + random.pick(WORDS);
      break;
    case 3:
      lines[at] = lines[at] + `  # ${random.pick(WORDS)} ${random.int(0, 99)} ✨🚀`;
      break;
    case 4:
      // A rewrite: the cell keeps little of what it had.
      for (let i = 0; i < lines.length; i++) lines[i] = random.pick(CODE_LINES);
      break;
    default:
      lines.push(`${random.pick(WORDS)} = ${random.int(0, 1000)}`);
  }
  cell.source = lines.join('\n');
}

/**
 * Cells to build notebooks from: one large generated notebook, in its two shapes (as JupyterLab
 * holds it, and as nbformat writes it).
 *
 * #### Notes
 * Small generated notebooks are cut from it rather than generated to a small size, which the
 * generator reaches slowly.
 */
const POOL = (() => {
  const generated = generateNotebook(600_000, 0x0d1ff);
  return {
    model: cellsOf(generated.model),
    disk: cellsOf(JSON.parse(generated.diskBytes.toString('utf8')) as JsonObject),
    notebook: generated.model
  };
})();

function newCell(random: Random, notebook: JsonObject): JsonObject {
  const cell = clone(random.pick(POOL.model));
  if (hasIds(notebook)) cell.id = random.hex(8);
  else delete cell.id;
  return cell;
}

function hasIds(notebook: JsonObject): boolean {
  return cellsOf(notebook).some(cell => 'id' in cell);
}

function insertCells(random: Random, notebook: JsonObject): void {
  const cells = cellsOf(notebook);
  for (let n = random.int(1, 3); n > 0; n--) {
    cells.splice(random.int(0, cells.length), 0, newCell(random, notebook));
  }
}

function deleteCells(random: Random, notebook: JsonObject): void {
  const cells = cellsOf(notebook);
  for (let n = random.int(1, 3); n > 0 && cells.length > 1; n--) {
    cells.splice(random.int(0, cells.length - 1), 1);
  }
}

function moveCells(random: Random, notebook: JsonObject): void {
  const cells = cellsOf(notebook);
  for (let n = random.int(1, 3); n > 0 && cells.length > 1; n--) {
    const [cell] = cells.splice(random.int(0, cells.length - 1), 1);
    cells.splice(random.int(0, cells.length), 0, cell);
  }
}

/** Digits changed here and there, as a re-run changes timings and losses. */
function perturbNumbers(random: Random, text: string, rate: number): string {
  return text.replace(/\d\.\d{4,6}/g, match =>
    random.float() < rate ? `${random.int(0, 9)}.${random.hex(4).replace(/[a-f]/g, '7')}` : match
  );
}

function changeOutputs(random: Random, notebook: JsonObject): void {
  const cells = codeCells(notebook);
  if (cells.length === 0) return;
  const rerun = random.int(0, 4) === 0;
  if (rerun) {
    // The whole notebook re-run: new execution counts everywhere.
    let count = random.int(1, 40);
    for (const cell of cells) {
      cell.execution_count = count++;
      for (const output of cell.outputs as JsonObject[]) {
        if ('execution_count' in output) output.execution_count = cell.execution_count;
      }
    }
  }
  for (let n = random.int(1, 3); n > 0; n--) {
    const cell = random.pick(cells);
    const outputs = cell.outputs as JsonObject[];
    const choice = random.int(0, 5);
    if (choice === 0 || outputs.length === 0) {
      outputs.push({
        name: 'stdout',
        output_type: 'stream',
        text: `${random.pick(WORDS)} ${random.float().toFixed(4)}\n`
      });
    } else if (choice === 1) {
      outputs.length = 0;
    } else {
      const output = random.pick(outputs);
      if (output.output_type === 'stream') {
        output.text = perturbNumbers(random, textOf(output.text), random.float());
      } else if (output.output_type === 'error') {
        output.evalue = `'sensor_${random.hex(6)}'`;
      } else {
        const data = output.data as JsonObject;
        for (const mime of Object.keys(data)) {
          if (mime === 'image/png') {
            if (random.int(0, 1) === 0) data[mime] = random.bytes(3_000).toString('base64');
          } else {
            data[mime] = perturbNumbers(random, textOf(data[mime]), random.float() / 2);
          }
        }
        if (random.int(0, 3) === 0) (output.metadata as JsonObject).needs_background = 'light';
      }
    }
  }
}

function changeMetadata(random: Random, notebook: JsonObject): void {
  const metadata = notebook.metadata as JsonObject;
  switch (random.int(0, 4)) {
    case 0:
      metadata.language_info = {
        ...(metadata.language_info as JsonObject),
        version: `3.${random.int(8, 13)}.${random.int(0, 9)}`
      };
      break;
    case 1:
      metadata.kernelspec = {
        ...(metadata.kernelspec as JsonObject),
        display_name: `Python 3 (${random.pick(WORDS)})`
      };
      break;
    default: {
      const cell = random.pick(cellsOf(notebook));
      const cellMetadata = cell.metadata as JsonObject;
      const choice = random.int(0, 3);
      if (choice === 0) cellMetadata.tags = [random.pick(WORDS), random.pick(WORDS)];
      else if (choice === 1) cellMetadata.collapsed = random.int(0, 1) === 1;
      else if (choice === 2) cellMetadata.scrolled = 'auto';
      else cell.metadata = {};
    }
  }
}

const EDITS: Record<EditKind, (random: Random, notebook: JsonObject) => void> = {
  edit: editSource,
  insert: insertCells,
  delete: deleteCells,
  move: moveCells,
  outputs: changeOutputs,
  metadata: changeMetadata
};

/** Apply one kind of edit to a notebook (in place). */
export function applyEdit(kind: EditKind, random: Random, notebook: JsonObject): void {
  EDITS[kind](random, notebook);
}

/**
 * A base notebook for a pair: generated, then in one of the shapes notebooks come in: with or
 * without cell ids (nbformat 4.5 or 4.4), and with multiline strings joined or split.
 */
function baseNotebook(random: Random): NotebookJson {
  const length = random.int(2, 30);
  const start = random.int(0, POOL.model.length - length);
  const cells = random.int(0, 1) === 0 ? POOL.model : POOL.disk;
  const notebook = clone({
    ...POOL.notebook,
    cells: cells.slice(start, start + length)
  }) as NotebookJson;
  if (random.int(0, 9) < 4) {
    notebook.nbformat_minor = 4;
    for (const cell of cellsOf(notebook)) delete cell.id;
  }
  return notebook;
}

/**
 * The generated pairs: `perKind` pairs for each kind of edit alone, and `mixed` pairs with two to
 * five edits of random kinds.
 */
export function generatedPairs(seed: number, perKind: number, mixed: number): INotebookPair[] {
  const random = new Random(seed);
  const pairs: INotebookPair[] = [];
  let index = 0;
  const make = (kinds: EditKind[]): void => {
    const base = baseNotebook(random);
    const remote = clone(base);
    for (const kind of kinds) applyEdit(kind, random, remote);
    pairs.push({
      name: `generated-${String(index).padStart(4, '0')}-${kinds.join('+')}`,
      kinds,
      base,
      remote
    });
    index++;
  };
  for (const kind of EDIT_KINDS) for (let n = 0; n < perKind; n++) make([kind]);
  for (let n = 0; n < mixed; n++) {
    const kinds: EditKind[] = [];
    for (let k = random.int(2, 5); k > 0; k--) kinds.push(random.pick(EDIT_KINDS));
    make(kinds);
  }
  return pairs;
}
