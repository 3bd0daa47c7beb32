import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import type {
  ISerializedError,
  IWorkerOptions,
  WorkerMessage,
  WorkerRequest
} from './signatureWorker';
import {
  DEFAULT_CACHE_SIZE,
  SignatureStoreBusyError,
  type ISignature,
  type ISignatureStore,
  type SQLiteSignatureStore
} from './signatureStore';

/**
 * {@link SQLiteSignatureStore} in a worker thread: the same database, answers and errors, without
 * its synchronous SQL in the calling thread.
 *
 * #### Notes
 * `node:sqlite` has only synchronous calls, and every write ends in a commit that waits for the
 * disk (fsync): several milliseconds each, tens on a busy disk, during which the gateway's event
 * loop would serve nothing else. Every save of a changed, trusted notebook writes a new signature.
 * Here the worker is started on the first call, so a process that never consults trust never
 * loads SQLite, and:
 *
 * - every call is one message to the worker and one answer back; errors come back as the same
 *   types ({@link SignatureStoreBusyError}) or as an `Error` with the worker's name and message;
 * - the worker does not keep the process alive while no call is pending;
 * - if the worker dies, the calls in flight reject and the next call starts a new worker (with a
 *   new SQLite store, so a `:memory:` database starts empty again);
 * - the `now` option is read in the calling thread when a call is made (a function cannot cross
 *   the thread boundary), and `warn` is called in the calling thread with the worker's warnings.
 */
export class WorkerSignatureStore implements ISignatureStore {
  /** @param options - as {@link SQLiteSignatureStore}'s; nothing is started before the first call. */
  constructor(options: WorkerSignatureStore.IOptions) {
    this.dbFile = options.dbFile;
    this.cacheSize = options.cacheSize ?? DEFAULT_CACHE_SIZE;
    this.workerOptions = {
      dbFile: options.dbFile,
      cacheSize: options.cacheSize,
      busyTimeoutMs: options.busyTimeoutMs
    };
    this.now = options.now;
    this.warn = options.warn ?? (message => console.warn(message));
  }

  /**
   * The database file in use, as of the worker's latest answer: becomes `:memory:` if the file
   * could not be used at all, as {@link SQLiteSignatureStore.dbFile} does.
   */
  dbFile: string;

  /** Rows beyond which the least recently seen quarter is culled. */
  readonly cacheSize: number;

  /**
   * The worker thread serving the store, while one runs. For tests and diagnostics: terminating
   * it behind the store's back counts as a crash.
   */
  get worker(): Worker | undefined {
    return this._worker;
  }

  /** As {@link SQLiteSignatureStore.storeSignature}. */
  async storeSignature(digest: string, algorithm: string): Promise<void> {
    await this.call('store', digest, algorithm);
  }

  /** As {@link SQLiteSignatureStore.storeSignatures}: one message, one commit. */
  async storeSignatures(signatures: readonly ISignature[]): Promise<void> {
    if (signatures.length === 0) return;
    if (this.closing) throw closedError();
    await this.send({ op: 'storeMany', signatures, now: this.now?.().getTime() });
  }

  /** As {@link SQLiteSignatureStore.checkSignature}. */
  async checkSignature(digest: string, algorithm: string): Promise<boolean> {
    return (await this.call('check', digest, algorithm)) === true;
  }

  /** As {@link SQLiteSignatureStore.removeSignature}. */
  async removeSignature(digest: string, algorithm: string): Promise<void> {
    await this.call('remove', digest, algorithm);
  }

  /**
   * Close the store in the worker and stop the worker. Calls still pending (waiting for a busy
   * database) and any later call reject with a "closed" error.
   */
  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async call(
    op: 'store' | 'check' | 'remove',
    digest: string,
    algorithm: string
  ): Promise<unknown> {
    if (this.closing) throw closedError();
    return await this.send({ op, digest, algorithm, now: this.now?.().getTime() });
  }

  private async shutDown(): Promise<void> {
    const worker = this._worker;
    if (!worker) return;
    try {
      await this.send({ op: 'close' });
    } catch {
      // A worker that died meanwhile has nothing left to close.
    }
    // Answers come in order, so what is still pending is waiting for a busy database; the store
    // is closed under it, so it would only fail with "closed" on its next attempt anyway.
    this.rejectPending(closedError());
    await worker.terminate();
    this._worker = undefined;
  }

  private send(request: DistributiveOmit<WorkerRequest, 'id'>): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const worker = this._worker ?? this.start();
      const id = this.nextId++;
      this.pending.set(id, { resolve, reject });
      // Keep the process alive while an answer is due, and only then.
      worker.ref();
      worker.postMessage({ ...request, id } satisfies WorkerRequest);
    });
  }

  private start(): Worker {
    const worker = new Worker(signatureWorkerFile(), { workerData: this.workerOptions });
    let failure: Error | undefined;
    worker.on('message', (message: WorkerMessage) => this.receive(worker, message));
    // An uncaught error in the worker; 'exit' follows and fails the pending calls with it.
    worker.on('error', error => {
      failure = error;
    });
    worker.on('messageerror', error => {
      failure = error;
    });
    worker.on('exit', code => {
      if (this._worker !== worker) return;
      this._worker = undefined;
      const reason = failure ? `: ${failure.message}` : ` with exit code ${code}`;
      this.rejectPending(
        this.closing
          ? closedError()
          : new Error(
              `The notebook signature worker for ${this.workerOptions.dbFile} stopped ` +
                `unexpectedly${reason}; the call was not completed, and the next one starts a ` +
                `new worker`
            )
      );
    });
    this._worker = worker;
    return worker;
  }

  private receive(worker: Worker, message: WorkerMessage): void {
    if (message.type === 'warn') {
      this.warn(message.message);
      return;
    }
    const pending = this.pending.get(message.id);
    if (!pending) return;
    this.pending.delete(message.id);
    this.dbFile = message.dbFile;
    if (this.pending.size === 0) worker.unref();
    if (message.type === 'result') pending.resolve(message.value);
    else pending.reject(reviveError(message.error));
  }

  private rejectPending(error: Error): void {
    const calls = [...this.pending.values()];
    this.pending.clear();
    this._worker?.unref();
    for (const call of calls) call.reject(error);
  }

  private readonly workerOptions: IWorkerOptions;
  private readonly now: (() => Date) | undefined;
  private readonly warn: (message: string) => void;
  private readonly pending = new Map<number, IPendingCall>();
  private nextId = 0;
  private _worker: Worker | undefined;
  private closing: Promise<void> | undefined;
}

/** Options of {@link WorkerSignatureStore}. */
export namespace WorkerSignatureStore {
  /** Those of the {@link SQLiteSignatureStore} it runs; `now` and `warn` stay in this thread. */
  export type IOptions = SQLiteSignatureStore.IOptions;
}

/**
 * The JavaScript file the worker runs. Built, it is this module's sibling in `lib/`; under
 * ts-jest or tsx this module runs from `src/`, where there is only TypeScript, which a worker
 * cannot load, so the built one in `lib/` is used (tests build before they run).
 *
 * @throws when that file does not exist, saying to build first.
 */
export function signatureWorkerFile(): string {
  const file = __filename.endsWith('.ts')
    ? path.resolve(__dirname, '../../../lib/contents/trust/signatureWorker.js')
    : path.join(__dirname, 'signatureWorker.js');
  if (!fs.existsSync(file)) {
    throw new Error(
      `The notebook signature worker ${file} does not exist; run \`npm run build\` first`
    );
  }
  return file;
}

interface IPendingCall {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/** `Omit` applied to each member of a union, so that each keeps its own fields. */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

function closedError(): Error {
  return new Error('The notebook signature store is closed');
}

/** The worker's error as the caller would have got it from an {@link SQLiteSignatureStore}. */
function reviveError(serialized: ISerializedError): Error {
  let error: Error;
  if (
    serialized.name === 'SignatureStoreBusyError' &&
    serialized.dbFile !== undefined &&
    serialized.waitedMs !== undefined
  ) {
    error = new SignatureStoreBusyError(serialized.dbFile, serialized.waitedMs);
  } else {
    error = new Error(serialized.message);
    error.name = serialized.name;
    if (serialized.code !== undefined) (error as NodeJS.ErrnoException).code = serialized.code;
  }
  // Where it went wrong is in the worker; the stack of this side only shows the message port.
  if (serialized.stack !== undefined) error.stack = serialized.stack;
  return error;
}
