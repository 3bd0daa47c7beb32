import { AsyncLocalStorage } from 'node:async_hooks';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { SQLiteSignatureStore, type ISignature } from './signatureStore';

/**
 * The worker thread behind `WorkerSignatureStore`: one {@link SQLiteSignatureStore} (and so its
 * synchronous SQL and the commits that wait for the disk) per store, answering the store's calls
 * one message each. Run only with `new Worker()`; `workerData` holds the store's
 * {@link IWorkerOptions}.
 */

/** The store's options that can cross the thread boundary (functions cannot). */
export type IWorkerOptions = Pick<
  SQLiteSignatureStore.IOptions,
  'dbFile' | 'cacheSize' | 'busyTimeoutMs'
>;

/** A call from the main thread; `id` identifies its answer. */
export type WorkerRequest =
  | {
      id: number;
      op: 'store' | 'check' | 'remove';
      digest: string;
      algorithm: string;
      /** The caller's clock (`now` option), in ms since the epoch; absent: the worker's own. */
      now?: number;
    }
  | {
      id: number;
      op: 'storeMany';
      signatures: readonly ISignature[];
      now?: number;
    }
  | { id: number; op: 'close' };

/** An error as it crosses the thread boundary; the main side makes an `Error` of it again. */
export interface ISerializedError {
  name: string;
  message: string;
  stack?: string;
  code?: string;
  /** The fields of a `SignatureStoreBusyError`. */
  dbFile?: string;
  waitedMs?: number;
}

/**
 * What the worker sends: the answer to a request, carrying the database in use (which becomes
 * `:memory:` when the file is unusable), or a warning for the main side's `warn`.
 */
export type WorkerMessage =
  | { type: 'result'; id: number; value: boolean | undefined; dbFile: string }
  | { type: 'error'; id: number; error: ISerializedError; dbFile: string }
  | { type: 'warn'; message: string };

const port: MessagePort = parentPort ?? notAWorker();

// Calls overlap while one waits for a busy database, so the caller's clock travels with each
// call through its awaits rather than in a variable the next call would overwrite.
const callerClock = new AsyncLocalStorage<Date | undefined>();
const store = new SQLiteSignatureStore({
  ...(workerData as IWorkerOptions),
  now: () => callerClock.getStore() ?? new Date(),
  warn: message => send({ type: 'warn', message })
});

port.on('message', (request: WorkerRequest) => {
  void serve(request);
});

async function serve(request: WorkerRequest): Promise<void> {
  try {
    const now =
      request.op !== 'close' && request.now !== undefined ? new Date(request.now) : undefined;
    const value = await callerClock.run(now, () => perform(request));
    send({ type: 'result', id: request.id, value, dbFile: store.dbFile });
  } catch (error) {
    send({ type: 'error', id: request.id, error: serializeError(error), dbFile: store.dbFile });
  }
}

async function perform(request: WorkerRequest): Promise<boolean | undefined> {
  switch (request.op) {
    case 'store':
      await store.storeSignature(request.digest, request.algorithm);
      return undefined;
    case 'storeMany':
      await store.storeSignatures(request.signatures);
      return undefined;
    case 'check':
      return await store.checkSignature(request.digest, request.algorithm);
    case 'remove':
      await store.removeSignature(request.digest, request.algorithm);
      return undefined;
    case 'close':
      await store.close();
      return undefined;
  }
}

function serializeError(error: unknown): ISerializedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const fields = error as Error & { code?: unknown; dbFile?: unknown; waitedMs?: unknown };
  return {
    name: error.name,
    message: error.message,
    stack: error.stack,
    code: typeof fields.code === 'string' ? fields.code : undefined,
    dbFile: typeof fields.dbFile === 'string' ? fields.dbFile : undefined,
    waitedMs: typeof fields.waitedMs === 'number' ? fields.waitedMs : undefined
  };
}

function send(message: WorkerMessage): void {
  port.postMessage(message);
}

function notAWorker(): never {
  throw new Error('signatureWorker is the entry point of a worker thread, not a module to import');
}
