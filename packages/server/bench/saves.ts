/**
 * Notebook saves as the benchmarks send them: a generated notebook whose every save carries a
 * unique, fixed-width id (so that every save is new content, and every archived version can be
 * matched to its save), a keep-alive client that PUTs it to a contents API, and paced streams
 * of saves over a set of paths, one save per path at a time (as one editor saves one notebook).
 */
import { readFile } from 'node:fs/promises';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { ArchiveJournal } from '../src/archive/journal';
import type { IGatewayProcess } from '../test/support/gateway';
import { sendRequest } from './client';
import { sleep } from './harness';
import { generateNotebook, type JsonObject } from './notebook';

/** Placeholder of the save id in the templates; every id has exactly this length. */
export const ID_LENGTH = 16;
export const ID_PLACEHOLDER = 'X'.repeat(ID_LENGTH);

/** A save that takes longer fails the run. */
const REQUEST_TIMEOUT_MS = 30_000;
/** A save not archived after this long fails the run. */
export const ARCHIVE_TIMEOUT_MS = 120_000;

/** A save id: `prefix` and a counter, padded to {@link ID_LENGTH}. */
let idCounter = 0;
export function nextId(prefix: string): string {
  const id = `${prefix}${String(++idCounter).padStart(ID_LENGTH - prefix.length, '0')}`;
  if (id.length !== ID_LENGTH) throw new Error(`save id ${id} is not ${ID_LENGTH} characters`);
  return id;
}

/** Bytes with the placeholder id replaced: the template split around it. */
interface ITemplate {
  readonly before: Buffer;
  readonly after: Buffer;
}

function splitTemplate(bytes: Buffer, id: string, what: string): ITemplate {
  const at = bytes.indexOf(id);
  if (at < 0 || bytes.indexOf(id, at + 1) >= 0) {
    throw new Error(`${what} does not hold the save id ${id} exactly once`);
  }
  return { before: bytes.subarray(0, at), after: bytes.subarray(at + id.length) };
}

function fill(template: ITemplate, id: string): Buffer {
  return Buffer.concat([template.before, Buffer.from(id, 'latin1'), template.after]);
}

/**
 * Runs tasks so that two tasks of the same path never overlap (the later one waits), as one
 * editor saves one notebook: the order of a path's versions is then the order of its saves.
 */
export class PathLocks {
  /** Run `task` once no other task of `path` runs; resolves with its result. */
  async run<T>(path: string, task: () => Promise<T>): Promise<{ value: T; waitedMs: number }> {
    const asked = performance.now();
    while (this._busy.has(path)) await this._busy.get(path);
    const waitedMs = performance.now() - asked;
    const running = (async () => {
      try {
        return await task();
      } finally {
        this._busy.delete(path);
      }
    })();
    this._busy.set(
      path,
      running.then(
        () => undefined,
        () => undefined
      )
    );
    return { value: await running, waitedMs };
  }

  private readonly _busy = new Map<string, Promise<void>>();
}

/** Where a {@link ContentsSaver} sends its saves: a server on 127.0.0.1. */
export interface ISaveTarget {
  readonly port: number;
  /** The base URL, with leading and trailing slash. */
  readonly baseUrl: string;
  readonly token: string;
}

/** PUTs notebook models to one server's contents API over keep-alive connections. */
export class ContentsSaver {
  constructor(
    readonly target: ISaveTarget,
    readonly label: string,
    sockets: number
  ) {
    this._agent = new Agent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets });
  }

  /**
   * PUT a notebook model (an already serialised request body); resolves with the latency to
   * the last byte of the answer.
   *
   * @throws unless the answer is 200 or 201.
   */
  async save(apiPath: string, body: Buffer): Promise<number> {
    const path = `${this.target.baseUrl}api/contents/${apiPath
      .split('/')
      .map(encodeURIComponent)
      .join('/')}`;
    const answer = await sendRequest({
      connect: { host: '127.0.0.1', port: this.target.port },
      method: 'PUT',
      path,
      headers: {
        Authorization: `token ${this.target.token}`,
        'Content-Type': 'application/json',
        'Content-Length': body.length
      },
      agent: this._agent,
      timeoutMs: REQUEST_TIMEOUT_MS,
      body
    });
    if (answer.status !== 200 && answer.status !== 201) {
      throw new Error(
        `${this.label}: PUT ${path} answered ${answer.status}: ${(answer.body ?? Buffer.alloc(0))
          .toString('utf8')
          .slice(0, 500)}`
      );
    }
    return answer.ms;
  }

  close(): void {
    this._agent.destroy();
  }

  private readonly _agent: Agent;
}

/** A {@link ContentsSaver} for a gateway, which also watches the gateway's archive journal. */
export class SaveClient extends ContentsSaver {
  constructor(
    readonly gateway: IGatewayProcess,
    label: string,
    sockets: number
  ) {
    super(
      { port: gateway.record.port, baseUrl: gateway.baseUrl, token: gateway.token },
      label,
      sockets
    );
  }

  /** The gateway's journal of records not yet confirmed by the object store. */
  get journalDir(): string {
    return join(this.gateway.state.data, 'jupyter-store', 'journal');
  }

  /** The number of journal records not yet confirmed. */
  pending(): Promise<number> {
    return ArchiveJournal.pendingCount(this.journalDir);
  }

  /**
   * Poll the journal every `intervalMs` until no record is pending; resolves with the
   * performance.now() at which it was seen empty.
   */
  async drained(intervalMs = 5, timeoutMs = ARCHIVE_TIMEOUT_MS): Promise<number> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const left = await this.pending();
      const now = performance.now();
      if (left === 0) return now;
      if (now > deadline) {
        throw new Error(
          `${this.label}: ${left} saves still pending in ${this.journalDir} after ${timeoutMs} ms; ` +
            `the gateway's log:\n${this.gateway.stderr().slice(-3000)}`
        );
      }
      await sleep(intervalMs);
    }
  }
}

/** The notebook and the bodies built from it. */
export class Workload {
  constructor(bytes: number) {
    const { model } = generateNotebook(bytes);
    const content: JsonObject = {
      ...model,
      metadata: {
        ...(model.metadata as JsonObject),
        jupyter_store_bench: { save_id: ID_PLACEHOLDER }
      }
    };
    this._put = splitTemplate(
      Buffer.from(JSON.stringify({ type: 'notebook', format: 'json', content }), 'utf8'),
      ID_PLACEHOLDER,
      'the PUT body'
    );
  }

  /** The PUT body of a save with this id. */
  putBody(id: string): Buffer {
    return fill(this._put, id);
  }

  get putBytes(): number {
    return this._put.before.length + ID_LENGTH + this._put.after.length;
  }

  /** Learn the bytes the gateway writes for a save, from a file it saved with `id`. */
  async learnDiskBytes(file: string, id: string): Promise<void> {
    this._disk = splitTemplate(await readFile(file), id, file);
  }

  /** The archived bytes of a save with this id (after {@link learnDiskBytes}). */
  diskBody(id: string): Buffer {
    if (this._disk === undefined) throw new Error('the disk bytes are not known yet');
    return fill(this._disk, id);
  }

  get diskBytes(): number {
    return this._disk === undefined
      ? NaN
      : this._disk.before.length + ID_LENGTH + this._disk.after.length;
  }

  private readonly _put: ITemplate;
  private _disk: ITemplate | undefined;
}

/** The `index`-th of `paths` notebook paths in `dir`, in turn. */
export function pathName(dir: string, index: number, paths: number): string {
  return `${dir}/nb-${String(index % paths).padStart(2, '0')}.ipynb`;
}

/** A paced stream of saves. */
export interface IPacedPlan {
  /** Saves per second. */
  readonly rate: number;
  readonly paths: number;
  /** Recorded saves per round. */
  readonly saves: number;
  /** Rounds per side (1 for a single stream). */
  readonly rounds: number;
  /** Unrecorded saves before the rounds, at the same rate. */
  readonly warmup: number;
}

/** One save of a paced stream. */
export interface IPacedSave {
  readonly index: number;
  readonly path: string;
  readonly id: string;
  /** performance.now() when the PUT was sent. */
  sentAt: number;
  /** Milliseconds the send started after its schedule (event loop, a busy path). */
  lateMs: number;
  /** PUT latency, to the last byte of the answer. */
  putMs: number;
  /** performance.now() when a listing first showed the version. */
  seenAt?: number;
  /** The version id it became. */
  versionId?: string;
}

/**
 * Send `count` saves at `rate` per second (open loop: each at its time, answered or not), over
 * `paths` paths in turn; `onSent` runs as each PUT goes out.
 */
export async function pacedStream(
  saver: ContentsSaver,
  workload: Workload,
  dir: string,
  plan: IPacedPlan,
  count: number,
  onSent?: (save: IPacedSave) => void
): Promise<IPacedSave[]> {
  const locks = new PathLocks();
  const saves: IPacedSave[] = [];
  const pending: Array<Promise<void>> = [];
  const interval = 1000 / plan.rate;
  const start = performance.now();
  for (let i = 0; i < count; i++) {
    const due = start + i * interval;
    await sleep(due - performance.now());
    const save: IPacedSave = {
      index: i,
      path: pathName(dir, i, plan.paths),
      id: nextId(dir),
      sentAt: NaN,
      lateMs: NaN,
      putMs: NaN
    };
    const body = workload.putBody(save.id);
    saves.push(save);
    pending.push(
      locks
        .run(save.path, () => {
          save.sentAt = performance.now();
          save.lateMs = save.sentAt - due;
          onSent?.(save);
          return saver.save(save.path, body);
        })
        .then(({ value }) => {
          save.putMs = value;
        })
    );
  }
  await Promise.all(pending);
  return saves;
}
