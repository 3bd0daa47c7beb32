/**
 * Deterministic, realistic notebooks for the contents benchmark: markdown cells, code cells with
 * stream output, pandas-like `text/html` tables, matplotlib-like `image/png` figures and the odd
 * traceback, grown until the notebook reaches a target size on disk.
 *
 * #### Notes
 * Two shapes of the same notebook are produced:
 * - the model as JupyterLab sends it in a save (`PUT {type:'notebook', format:'json', content}`):
 *   multiline strings joined, and `metadata.trusted: true` on code cells, as Lab marks the cells
 *   of a notebook that the user has run;
 * - the bytes nbformat writes to disk: sorted keys, indent 1, multiline strings split into lists
 *   of lines, no `trusted`, a trailing newline.
 */

/** A JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A JSON object. */
export type JsonObject = { [key: string]: Json };

/** A generated notebook. */
export interface IGeneratedNotebook {
  /** The notebook model as JupyterLab sends it (`content` of the save request). */
  readonly model: JsonObject;
  /** The bytes nbformat would write for it. */
  readonly diskBytes: Buffer;
  /** The number of cells. */
  readonly cellCount: number;
}

/** A small xorshift32 generator: the same seed gives the same notebook on every run. */
export class Random {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0 || 1;
  }

  /** The next unsigned 32-bit value. */
  next(): number {
    let x = this.state;
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    this.state = x;
    return x;
  }

  /** An integer in `[low, high]`. */
  int(low: number, high: number): number {
    return low + (this.next() % (high - low + 1));
  }

  /** A float in `[0, 1)`. */
  float(): number {
    return this.next() / 0x1_0000_0000;
  }

  /** One element of `items`. */
  pick<T>(items: readonly T[]): T {
    return items[this.next() % items.length];
  }

  /** `size` pseudo-random bytes. */
  bytes(size: number): Buffer {
    const out = Buffer.allocUnsafe(size);
    let i = 0;
    for (; i + 4 <= size; i += 4) out.writeUInt32LE(this.next(), i);
    for (; i < size; i++) out[i] = this.next() & 0xff;
    return out;
  }

  /** A hex id of `length` characters (cell ids). */
  hex(length: number): string {
    let out = '';
    while (out.length < length) out += this.next().toString(16).padStart(8, '0');
    return out.slice(0, length);
  }
}

export const WORDS = [
  'data',
  'model',
  'training',
  'loss',
  'feature',
  'column',
  'value',
  'sample',
  'the',
  'of',
  'and',
  'with',
  'for',
  'résumé',
  'naïve',
  'distribution',
  'mean',
  'variance',
  'pipeline',
  'experiment',
  'result',
  'plot',
  'café',
  'validation'
];

export const CODE_LINES = [
  'import numpy as np',
  'import pandas as pd',
  'import matplotlib.pyplot as plt',
  'df = pd.read_csv("data/measurements.csv", parse_dates=["timestamp"])',
  'df = df.dropna(subset=["value"]).reset_index(drop=True)',
  'grouped = df.groupby("sensor")["value"].agg(["mean", "std", "count"])',
  'for epoch in range(epochs):',
  '    loss = model.train_one_epoch(loader, optimizer)',
  '    print(f"epoch {epoch}/{epochs} - loss: {loss:.4f}")',
  'fig, ax = plt.subplots(figsize=(8, 5))',
  'ax.plot(df["timestamp"], df["value"], label="value")',
  'ax.set_title("Measurements over time")',
  'plt.show()',
  'result = {k: v for k, v in zip(keys, values) if v is not None}',
  '# TODO: check the outliers again',
  'assert len(df) > 0, "empty frame"'
];

function sentence(random: Random, words: number): string {
  const parts: string[] = [];
  for (let i = 0; i < words; i++) parts.push(random.pick(WORDS));
  const text = parts.join(' ');
  return text.charAt(0).toUpperCase() + text.slice(1) + '.';
}

function codeSource(random: Random, lines: number): string {
  const out: string[] = [];
  for (let i = 0; i < lines; i++) out.push(random.pick(CODE_LINES));
  return out.join('\n');
}

function streamText(random: Random, lines: number): string {
  let out = '';
  for (let i = 0; i < lines; i++) {
    out +=
      `epoch ${i + 1}/${lines} - loss: ${random.float().toFixed(4)} - accuracy: ` +
      `${(0.5 + random.float() / 2).toFixed(4)} - val_loss: ${random.float().toFixed(4)}\n`;
  }
  return out;
}

function htmlTable(random: Random, rows: number): { html: string; plain: string } {
  const columns = ['sensor', 'mean', 'std', 'min', 'max', 'count'];
  let html =
    '<div>\n<style scoped>\n    .dataframe tbody tr th:only-of-type {\n        vertical-align: middle;\n' +
    '    }\n</style>\n<table border="1" class="dataframe">\n  <thead>\n    <tr style="text-align: right;">\n' +
    '      <th></th>\n' +
    columns.map(c => `      <th>${c}</th>\n`).join('') +
    '    </tr>\n  </thead>\n  <tbody>\n';
  let plain = '     ' + columns.map(c => c.padStart(10)).join('') + '\n';
  for (let r = 0; r < rows; r++) {
    const cells = [
      `s-${random.hex(4)}`,
      random.float().toFixed(6),
      random.float().toFixed(6),
      (-random.float()).toFixed(6),
      (random.float() * 10).toFixed(6),
      String(random.int(10, 100_000))
    ];
    html +=
      `    <tr>\n      <th>${r}</th>\n` +
      cells.map(c => `      <td>${c}</td>\n`).join('') +
      '    </tr>\n';
    plain += String(r).padEnd(5) + cells.map(c => c.padStart(10)).join('') + '\n';
  }
  html += '  </tbody>\n</table>\n</div>';
  return { html, plain: plain.trimEnd() };
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** A figure: PNG-signed pseudo-random bytes (compressed image data looks random), base64, one line. */
function pngBase64(random: Random, size: number): string {
  return Buffer.concat([PNG_SIGNATURE, random.bytes(size - PNG_SIGNATURE.length)]).toString(
    'base64'
  );
}

function traceback(random: Random): JsonObject {
  return {
    output_type: 'error',
    ename: 'KeyError',
    evalue: `'sensor_${random.hex(6)}'`,
    traceback: [
      '\u001b[0;31m---------------------------------------------------------------------------\u001b[0m',
      '\u001b[0;31mKeyError\u001b[0m                                  Traceback (most recent call last)',
      `Cell \u001b[0;32mIn[${random.int(1, 200)}], line 3\u001b[0m\n\u001b[1;32m      1\u001b[0m df \u001b[38;5;241m=\u001b[39m load()`,
      `\u001b[0;31mKeyError\u001b[0m: 'sensor_${random.hex(6)}'`
    ]
  };
}

/** One cell in Lab's shape (joined strings), chosen by position so that the mix is stable. */
function makeCell(random: Random, index: number, executionCount: number): JsonObject {
  const id = random.hex(8);
  const kind = index % 8;
  if (kind === 0 || kind === 4) {
    return {
      cell_type: 'markdown',
      id,
      metadata: {},
      source: `## ${sentence(random, 4)}\n\n${sentence(random, random.int(20, 60))}\n\n- ${sentence(random, 6)}\n- ${sentence(random, 8)}`
    };
  }
  const code = (outputs: JsonObject[], lines: number): JsonObject => ({
    cell_type: 'code',
    execution_count: executionCount,
    id,
    metadata: { trusted: true },
    outputs,
    source: codeSource(random, lines)
  });
  if (index % 25 === 24) return code([traceback(random)], random.int(2, 6));
  if (kind === 1 || kind === 3 || kind === 6) {
    const lines = kind === 6 ? random.int(0, 3) : random.int(10, 50);
    const outputs: JsonObject[] =
      lines === 0
        ? []
        : [{ name: 'stdout', output_type: 'stream', text: streamText(random, lines) }];
    return code(outputs, random.int(3, 15));
  }
  if (kind === 2 || kind === 7) {
    const table = htmlTable(random, random.int(10, 40));
    return code(
      [
        {
          data: { 'text/html': table.html, 'text/plain': table.plain },
          execution_count: executionCount,
          metadata: {},
          output_type: 'execute_result'
        }
      ],
      random.int(1, 4)
    );
  }
  return code(
    [
      {
        data: {
          'image/png': pngBase64(random, random.int(15_000, 45_000)),
          'text/plain': '<Figure size 800x500 with 1 Axes>'
        },
        metadata: {},
        output_type: 'display_data'
      }
    ],
    random.int(4, 12)
  );
}

/** The MIME types whose values nbformat splits into lines (`split_lines`). */
const SPLIT_MIME = /^(text\/|application\/javascript$|image\/svg\+xml$)/;

/** Python's `str.splitlines(True)` for the `\n`-only text this generator produces. */
function splitLines(text: string): string[] {
  const lines = text.split(/(?<=\n)/);
  return lines.length === 1 && lines[0] === '' ? [] : lines;
}

/** The cell as nbformat writes it: lines split, `trusted` dropped. */
function diskCell(cell: JsonObject): JsonObject {
  const out: JsonObject = { ...cell, source: splitLines(cell.source as string) };
  const metadata = { ...(cell.metadata as JsonObject) };
  delete metadata.trusted;
  out.metadata = metadata;
  if (Array.isArray(cell.outputs)) {
    out.outputs = (cell.outputs as JsonObject[]).map(output => {
      const copy: JsonObject = { ...output };
      if (typeof output.text === 'string') copy.text = splitLines(output.text);
      if (output.data !== undefined) {
        const data: JsonObject = {};
        for (const [mime, value] of Object.entries(output.data as JsonObject)) {
          data[mime] =
            SPLIT_MIME.test(mime) && typeof value === 'string' ? splitLines(value) : value;
        }
        copy.data = data;
      }
      return copy;
    });
  }
  return out;
}

/** A deep copy with object keys sorted, as `json.dumps(sort_keys=True)` orders them. */
function sortKeys(value: Json): Json {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const out: JsonObject = {};
    for (const key of Object.keys(value).sort()) out[key] = sortKeys(value[key]);
    return out;
  }
  return value;
}

const NOTEBOOK_METADATA: JsonObject = {
  kernelspec: { display_name: 'Python 3 (ipykernel)', language: 'python', name: 'python3' },
  language_info: {
    codemirror_mode: { name: 'ipython', version: 3 },
    file_extension: '.py',
    mimetype: 'text/x-python',
    name: 'python',
    nbconvert_exporter: 'python',
    pygments_lexer: 'ipython3',
    version: '3.11.7'
  }
};

/**
 * Generate a notebook of about `targetBytes` on disk.
 *
 * @param targetBytes - the wanted size of the nbformat file; the result is a little above it.
 * @param seed - the generator seed; the same seed and size give the same notebook.
 */
export function generateNotebook(targetBytes: number, seed = 0x5eed): IGeneratedNotebook {
  const random = new Random(seed ^ targetBytes);
  const cells: JsonObject[] = [];
  // The file is the header and footer plus each cell's own indent-1 JSON, indented two more
  // levels, with a ",\n" between cells. Near the end, a cell that would overshoot the target by
  // more than 2 % is skipped in favour of the next (smaller) kind.
  let size = 330;
  let executionCount = 0;
  for (let position = 0; size < targetBytes * 0.99; position++) {
    const cell = makeCell(random, position, executionCount + 1);
    const json = JSON.stringify(sortKeys(diskCell(cell)), null, 1);
    const cost = Buffer.byteLength(json) + 2 * (json.split('\n').length + 1);
    if (size + cost > targetBytes * 1.02 && position < 100_000) continue;
    if (cell.cell_type === 'code') executionCount++;
    cells.push(cell);
    size += cost;
  }
  const model: JsonObject = {
    cells,
    metadata: NOTEBOOK_METADATA,
    nbformat: 4,
    nbformat_minor: 5
  };
  const disk = sortKeys({ ...model, cells: cells.map(diskCell) });
  const diskBytes = Buffer.from(JSON.stringify(disk, null, 1) + '\n', 'utf8');
  return { model, diskBytes, cellCount: cells.length };
}

/** The smallest valid notebook (what `nbformat.v4.new_notebook()` writes), for the listing tree. */
export const EMPTY_NOTEBOOK_BYTES = Buffer.from(
  '{\n "cells": [],\n "metadata": {},\n "nbformat": 4,\n "nbformat_minor": 5\n}\n',
  'utf8'
);
