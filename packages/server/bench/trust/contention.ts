/** Each side's store call while another process holds `BEGIN EXCLUSIVE` on the database. */
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { NotebookNotary } from '../../src/contents/trust';
import { type Side, digest, openStore } from './calls';
import { exited, startPython } from './python';

interface IContention {
  ms: number;
  outcome: string;
  stallMs: number;
}

/** One call to store a signature while another process holds `BEGIN EXCLUSIVE` for `seconds`. */
export async function contend(side: Side, dataDir: string, seconds: number): Promise<IContention> {
  const dbFile = join(dataDir, 'nbsignatures.db');
  const d = digest();
  let callPython: ReturnType<typeof startPython> | undefined;
  let notary: NotebookNotary | undefined;
  if (side === 'nbformat') {
    callPython = startPython({ cmd: 'contend', dbFile, digest: d }, 'ready');
    await callPython.ready;
  } else {
    notary = openStore(side, dataDir);
    // Started (worker, module) and known to be idle before the lock.
    await notary.store.checkSignature(digest(), 'sha256');
  }
  const holder = startPython({ cmd: 'hold', dbFile, seconds }, 'holding');
  await holder.ready;
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  try {
    if (callPython) {
      callPython.child.stdin.write('go\n');
      await exited(callPython.child);
      const result = JSON.parse(callPython.lines.at(-1) ?? '{}') as { ms: number; outcome: string };
      return { ...result, stallMs: NaN };
    }
    const store = (notary as NotebookNotary).store;
    const started = performance.now();
    let outcome = 'stored';
    try {
      await store.storeSignature(d, 'sha256');
    } catch (error) {
      outcome = `failed: ${(error as Error).name}`;
    }
    return { ms: performance.now() - started, outcome, stallMs: loop.max / 1e6 };
  } finally {
    loop.disable();
    await exited(holder.child);
    await notary?.close();
  }
}
