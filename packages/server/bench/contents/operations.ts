/**
 * The contents benchmark's workload: the tree each server serves, the operations timed on it
 * (the untitled cycle, the listing, GET and PUT of each size), and how they are run against both
 * servers, round after round.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { log } from '../cleanup';
import type { IBenchResponse } from '../client';
import { readMemory } from '../cpu';
import { sleep } from '../harness';
import { EMPTY_NOTEBOOK_BYTES, type IGeneratedNotebook } from '../notebook';
import {
  type IMemory,
  type IOperation,
  type IPlan,
  type IStats,
  type ITarget,
  LISTING_ENTRIES,
  NOTEBOOK_SIZES,
  SERVER_NAMES,
  SIDES,
  type Side,
  type SizeId
} from './model';
import { resetPeak } from './server';

// ---------------------------------------------------------------------------------------------
// Workload tree

async function writeListing(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const writes: Array<Promise<void>> = [];
  for (let i = 0; i < LISTING_ENTRIES; i++) {
    const stem = `entry-${String(i).padStart(5, '0')}`;
    const kind = i % 10;
    if (i % 100 === 0) writes.push(mkdir(join(dir, stem)).then(() => undefined));
    else if (kind === 7 || kind === 8)
      writes.push(writeFile(join(dir, `${stem}.ipynb`), EMPTY_NOTEBOOK_BYTES));
    else if (kind === 9) writes.push(writeFile(join(dir, `${stem}.csv`), `a,b\n${i},${i * 2}\n`));
    else writes.push(writeFile(join(dir, `${stem}.txt`), `entry ${i}\n`));
    if (writes.length >= 256) await Promise.all(writes.splice(0));
  }
  await Promise.all(writes);
}

/** Write one server's copy of the workload tree. */
export async function writeTree(
  root: string,
  notebooks: Map<SizeId, IGeneratedNotebook>
): Promise<void> {
  await mkdir(join(root, 'notebooks'), { recursive: true });
  await mkdir(join(root, 'cycles'), { recursive: true });
  for (const [id, notebook] of notebooks) {
    await writeFile(join(root, 'notebooks', `get-${id}.ipynb`), notebook.diskBytes);
    // The save target exists, so each PUT is a save (200), as when JupyterLab saves.
    await writeFile(join(root, 'notebooks', `put-${id}.ipynb`), notebook.diskBytes);
  }
  await writeListing(join(root, 'listing'));
}

// ---------------------------------------------------------------------------------------------
// Operations

function expectStatus(
  target: ITarget,
  response: IBenchResponse,
  expected: number,
  what: string
): void {
  if (response.status !== expected) {
    const body = response.body?.subarray(0, 500).toString('utf8') ?? `${response.bodyBytes} bytes`;
    throw new Error(
      `${SERVER_NAMES[target.side]}: ${what} answered ${response.status}, not ${expected}: ${body}`
    );
  }
}

function parseModel(
  target: ITarget,
  response: IBenchResponse,
  what: string
): Record<string, unknown> {
  try {
    return JSON.parse(response.body?.toString('utf8') ?? '') as Record<string, unknown>;
  } catch {
    throw new Error(`${SERVER_NAMES[target.side]}: ${what} did not answer JSON`);
  }
}

export function plans(quick: boolean): Record<string, IPlan> {
  const plan = (warmup: number, rounds: number, perRound: number): IPlan =>
    quick
      ? { warmup: Math.min(warmup, 1), rounds: 2, perRound: Math.min(perRound, 2) }
      : { warmup, rounds, perRound };
  return {
    cycle: plan(5, 8, 25),
    listing: plan(1, 3, 2),
    'get-100KB': plan(10, 8, 25),
    'get-1MB': plan(3, 6, 15),
    'get-10MB': plan(1, 5, 4),
    'get-50MB': plan(1, 4, 2),
    'put-100KB': plan(10, 8, 25),
    'put-1MB': plan(3, 6, 15),
    'put-10MB': plan(1, 5, 4),
    'put-50MB': plan(1, 4, 2)
  };
}

export function buildOperations(
  notebooks: Map<SizeId, IGeneratedNotebook>,
  memory: Record<Side, IMemory>,
  quick: boolean
): IOperation[] {
  const plan = plans(quick);
  const operations: IOperation[] = [];

  operations.push({
    id: 'cycle',
    rows: ['new untitled notebook (POST)', 'rename (PATCH)', 'delete (DELETE)'],
    plan: plan.cycle,
    async run(target, iteration) {
      const { client } = target;
      const created = await client.send('POST', client.contentsPath('cycles'), {
        body: Buffer.from(JSON.stringify({ type: 'notebook' }))
      });
      expectStatus(target, created, 201, 'POST cycles {type: notebook}');
      const path = parseModel(target, created, 'POST cycles').path;
      if (typeof path !== 'string')
        throw new Error(`${SERVER_NAMES[target.side]}: POST gave no path`);
      // A unique name per cycle keeps the trash free of name clashes (and their probing).
      const renamedPath = `cycles/cycle-${iteration}.ipynb`;
      const renamed = await client.send('PATCH', client.contentsPath(path), {
        body: Buffer.from(JSON.stringify({ path: renamedPath }))
      });
      expectStatus(target, renamed, 200, `PATCH ${path}`);
      const deleted = await client.send('DELETE', client.contentsPath(renamedPath));
      expectStatus(target, deleted, 204, `DELETE ${renamedPath}`);
      return [
        [this.rows[0], created.ms],
        [this.rows[1], renamed.ms],
        [this.rows[2], deleted.ms]
      ];
    }
  });

  operations.push({
    id: 'listing',
    rows: [`list a directory of ${LISTING_ENTRIES.toLocaleString('en-US')} entries`],
    plan: plan.listing,
    async run(target, iteration) {
      const { client } = target;
      const response = await client.send('GET', client.contentsPath('listing', 'content=1'), {
        keepBody: iteration === 0
      });
      expectStatus(target, response, 200, 'GET listing');
      if (iteration === 0) {
        const content = parseModel(target, response, 'GET listing').content;
        if (!Array.isArray(content) || content.length !== LISTING_ENTRIES) {
          throw new Error(
            `${SERVER_NAMES[target.side]}: the listing has ${String((content as unknown[])?.length)} entries`
          );
        }
      }
      return [[this.rows[0], response.ms]];
    }
  });

  for (const size of NOTEBOOK_SIZES) {
    const notebook = notebooks.get(size.id);
    if (notebook === undefined) continue;
    operations.push({
      id: `get-${size.id}`,
      rows: [`GET notebook ${size.label}`],
      plan: plan[`get-${size.id}`],
      async run(target, iteration) {
        const { client } = target;
        const path = `notebooks/get-${size.id}.ipynb`;
        const response = await client.send(
          'GET',
          client.contentsPath(path, 'type=notebook&content=1'),
          {
            keepBody: iteration === 0
          }
        );
        expectStatus(target, response, 200, `GET ${path}`);
        if (iteration === 0) {
          const model = parseModel(target, response, `GET ${path}`);
          const cells = (model.content as { cells?: unknown[] } | null)?.cells;
          if (
            model.type !== 'notebook' ||
            !Array.isArray(cells) ||
            cells.length !== notebook.cellCount
          ) {
            throw new Error(
              `${SERVER_NAMES[target.side]}: GET ${path} is not the ${notebook.cellCount}-cell notebook`
            );
          }
        }
        return [[this.rows[0], response.ms]];
      }
    });
  }

  for (const size of NOTEBOOK_SIZES) {
    const notebook = notebooks.get(size.id);
    if (notebook === undefined) continue;
    const body = Buffer.from(
      JSON.stringify({ type: 'notebook', format: 'json', content: notebook.model })
    );
    const isLargest = size.id === '50MB';
    let pollTimer: NodeJS.Timeout | undefined;
    let before = 0;
    let polledPeak = 0;
    operations.push({
      id: `put-${size.id}`,
      rows: [`PUT (save) notebook ${size.label}`],
      plan: plan[`put-${size.id}`],
      async run(target) {
        const { client } = target;
        const path = `notebooks/put-${size.id}.ipynb`;
        const response = await client.send('PUT', client.contentsPath(path), { body });
        expectStatus(target, response, 200, `PUT ${path}`);
        const model = parseModel(target, response, `PUT ${path}`);
        if (model.type !== 'notebook')
          throw new Error(`${SERVER_NAMES[target.side]}: PUT ${path} gave no notebook model`);
        return [[this.rows[0], response.ms]];
      },
      ...(isLargest
        ? {
            async before(target: ITarget) {
              await sleep(200);
              const mem = memory[target.side];
              const now = readMemory(target.pid);
              mem.peak = Math.max(mem.peak, now.hwm);
              before = now.rss;
              if (mem.method === 'clear_refs' && !resetPeak(target.pid)) mem.method = 'polling';
              if (mem.method === 'polling') {
                polledPeak = now.rss;
                pollTimer = setInterval(() => {
                  try {
                    polledPeak = Math.max(polledPeak, readMemory(target.pid).rss);
                  } catch {
                    // the server went away; the request fails and reports it
                  }
                }, 5);
                pollTimer.unref();
              }
            },
            async after(target: ITarget) {
              const mem = memory[target.side];
              const now = readMemory(target.pid);
              if (pollTimer !== undefined) clearInterval(pollTimer);
              pollTimer = undefined;
              const peak = mem.method === 'polling' ? Math.max(polledPeak, now.rss) : now.hwm;
              mem.peak = Math.max(mem.peak, peak);
              mem.saveGrowth.push(peak - before);
            }
          }
        : {})
    });
  }
  return operations;
}

// ---------------------------------------------------------------------------------------------
// Measurement

export async function measure(
  operation: IOperation,
  targets: Record<Side, ITarget>,
  samples: Map<string, Record<Side, number[]>>
): Promise<void> {
  const counters: Record<Side, number> = { jupyter: 0, ours: 0 };
  const iterate = async (side: Side, record: boolean): Promise<void> => {
    const target = targets[side];
    await operation.before?.(target);
    const timings = await operation.run(target, counters[side]++);
    await operation.after?.(target);
    if (record) for (const [row, ms] of timings) samples.get(row)?.[side].push(ms);
  };
  const { warmup, rounds, perRound } = operation.plan;
  const started = Date.now();
  for (const side of SIDES) for (let i = 0; i < warmup; i++) await iterate(side, false);
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? SIDES : [...SIDES].reverse();
    for (const side of order) for (let i = 0; i < perRound; i++) await iterate(side, true);
  }
  log(`${operation.rows.join(', ')}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

export function statistics(samples: readonly number[]): IStats {
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = (p: number): number => sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? NaN;
  const total = sorted.reduce((sum, ms) => sum + ms, 0);
  return {
    n: sorted.length,
    opsPerSecond: total > 0 ? (sorted.length * 1000) / total : NaN,
    p50: rank(0.5),
    p99: rank(0.99)
  };
}
