/**
 * The calls of the trust benchmark: storing and checking signatures on each side, timed in full
 * and for the part that blocks the calling thread.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { createNotary } from '../../src/app';
import { type ISignatureStore, NotebookNotary } from '../../src/contents/trust';
import { runPython } from './python';

export type Side = 'nbformat' | 'gateway' | 'store';
export const SIDES: readonly Side[] = ['nbformat', 'gateway', 'store'];
export const SIDE_NAMES: Record<Side, string> = {
  nbformat: 'nbformat (Python sqlite3)',
  gateway: 'gateway (`createNotary`)',
  store: 'store in the calling thread'
};

type Call = 'store' | 'hit' | 'miss';
export const CALL_NAMES: Record<Call, string> = {
  store: 'store a new signature (save)',
  hit: 'check one Python recorded (open)',
  miss: 'check an unknown one (open)'
};

/** One call's wall time and the part of it that ran synchronously, in ms. */
interface ISample {
  total: number;
  blocked: number;
}

export const digest = (): string => randomBytes(32).toString('hex');
export const digests = (count: number): string[] => Array.from({ length: count }, digest);

/** The store a side makes its calls on, and the notary to close afterwards. */
export function openStore(side: Exclude<Side, 'nbformat'>, dataDir: string): NotebookNotary {
  return side === 'gateway' ? createNotary(dataDir) : new NotebookNotary({ dataDir });
}

async function timed(call: () => Promise<unknown>): Promise<ISample & { answer: unknown }> {
  const started = performance.now();
  const pending = call();
  const returned = performance.now();
  const answer = await pending;
  return { total: performance.now() - started, blocked: returned - started, answer };
}

export interface IRun {
  first: ISample;
  calls: Record<Call, ISample[]>;
  external?: number;
}

export async function runNode(
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

export function runNbformat(
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
