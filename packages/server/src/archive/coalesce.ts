import { entryOf, type IJournalEntry, type IJournalRecord } from './journal';

/**
 * Keeps at most one archived version per path per interval (`archive_min_interval_seconds`),
 * so that a writer saving after every step (papermill writes its output notebook after every
 * cell) does not grow the bucket without bound.
 *
 * #### Notes
 * - The archive queue gives each record a **slot** in its path's chain. A slot whose upload has
 *   not started yet stays open: a newer put of the same path replaces its record instead of
 *   queueing behind it, and the record it replaced is **superseded**. The newest state is
 *   therefore the one archived, and the last state of a burst always is.
 * - A slot of a put starts its upload `interval` after the previous put of its path started
 *   (at once after a quiet period, so a lone save is not delayed): the final state of a burst
 *   arrives at most `interval` late.
 * - Deletes and puts that follow a rename are never superseded and never supersede: they close
 *   the open slot of their path, so what was queued before them is archived before them.
 * - A superseded record stays in the journal until the record that replaced it is archived
 *   (the queue then marks them done together, in one frame of the journal): a crash meanwhile
 *   replays both, and the replay coalesces them again, so no answered save is lost whatever
 *   the newer record's durability.
 */
export class ArchiveCoalescer {
  constructor(options: ArchiveCoalescer.IOptions) {
    this.intervalMs = Math.max(0, options.intervalMs);
    this._now = options.now ?? Date.now;
  }

  /** The shortest time between two versions of a path (ms); 0 turns coalescing off. */
  readonly intervalMs: number;

  /** Records superseded since start-up. */
  get coalesced(): number {
    return this._coalesced;
  }

  /**
   * Offer a record of a path to the path's open slot.
   *
   * @returns the record it superseded (the slot now holds the new one), or undefined when the
   *   record needs a slot of its own ({@link open}).
   */
  absorb(record: IJournalRecord, replayed: boolean): IJournalRecord | undefined {
    if (this.intervalMs === 0) return undefined;
    const slot = this._open.get(record.path);
    if (!coalescible(record)) {
      // What is queued before a delete or a rename is archived before it.
      this._open.delete(record.path);
      return undefined;
    }
    if (!slot || !coalescible(slot.record)) return undefined;
    const superseded = slot.record;
    slot.superseded.push(entryOf(superseded));
    slot.record = record;
    slot.replayed = replayed;
    this._coalesced++;
    return superseded;
  }

  /** A new slot for a record that {@link absorb} did not take. */
  open(record: IJournalRecord, replayed: boolean): ArchiveCoalescer.ISlot {
    const slot: ArchiveCoalescer.ISlot = { record, replayed, superseded: [] };
    if (this.intervalMs > 0 && coalescible(record)) this._open.set(record.path, slot);
    return slot;
  }

  /**
   * When the slot's upload may start (ms since the epoch): `interval` after the previous put of
   * its path started; now for a delete, or when nothing was archived there lately.
   */
  dueAt(slot: ArchiveCoalescer.ISlot): number {
    const now = this._now();
    if (this.intervalMs === 0 || this._hurry || slot.record.action === 'delete') return now;
    const last = this._lastPut.get(slot.record.path);
    return last === undefined ? now : Math.max(now, last + this.intervalMs);
  }

  /**
   * Wait until the slot is due (or {@link release} cuts the wait short), then close it: its
   * record is the one to archive, and the next record of its path gets a slot of its own.
   */
  async take(slot: ArchiveCoalescer.ISlot): Promise<IJournalRecord> {
    for (;;) {
      const wait = this.dueAt(slot) - this._now();
      if (wait <= 0) break;
      await new Promise<void>(resolve => {
        const done = (): void => {
          clearTimeout(timer);
          this._sleepers.delete(done);
          resolve();
        };
        const timer = setTimeout(done, wait);
        timer.unref();
        this._sleepers.add(done);
      });
      if (this._hurry) break;
    }
    const { path } = slot.record;
    if (this._open.get(path) === slot) this._open.delete(path);
    if (slot.record.action === 'delete') this._lastPut.delete(path);
    else if (this.intervalMs > 0) this._notePut(path);
    return slot.record;
  }

  /**
   * Cut every wait short while `hurry` is true (a stop flushes the queue: the newest states go
   * out now rather than at the end of their intervals).
   */
  release(hurry: boolean): void {
    this._hurry = hurry;
    if (!hurry) return;
    for (const done of [...this._sleepers]) done();
  }

  private _notePut(path: string): void {
    const now = this._now();
    this._lastPut.delete(path);
    this._lastPut.set(path, now);
    // Insertion order is start order: forget the paths whose interval has passed.
    for (const [oldPath, at] of this._lastPut) {
      if (at + this.intervalMs > now) break;
      this._lastPut.delete(oldPath);
    }
  }

  private readonly _now: () => number;
  /** Per path, the slot whose upload has not started and may still take a newer record. */
  private readonly _open = new Map<string, ArchiveCoalescer.ISlot>();
  /** Per path, when the upload of its last put started, for the paths within an interval. */
  private readonly _lastPut = new Map<string, number>();
  private readonly _sleepers = new Set<() => void>();
  private _hurry = false;
  private _coalesced = 0;
}

/** Options and slots of {@link ArchiveCoalescer}. */
export namespace ArchiveCoalescer {
  export interface IOptions {
    /** `archive_min_interval_seconds`, in ms; 0 archives every record. */
    intervalMs: number;
    /** The clock (ms since the epoch); for tests. */
    now?: () => number;
  }

  /** A place in a path's chain of archives. */
  export interface ISlot {
    /** The newest record offered to the slot: the one archived. */
    record: IJournalRecord;
    /** Whether that record was left by an earlier run (it may have arrived already). */
    replayed: boolean;
    /** The records it replaced (without their bytes), to mark done with it once it is archived. */
    readonly superseded: IJournalEntry[];
  }
}

/** Plain puts may be superseded; deletes and puts that carry a rename never are. */
function coalescible(record: IJournalRecord): boolean {
  return record.action !== 'delete' && record.renamedFrom === undefined;
}
