/** A change sink that records every call, for tests of the archive's sources. */
import type { ChangeSource, IChangeSink } from '../../src/archive/sources/changes';

/** One recorded call: its name, then its arguments. */
export type SinkCall =
  | ['changed', string, ChangeSource]
  | ['removed', string, ChangeSource]
  | ['renamed', string, string, ChangeSource]
  | ['rescan', string, ChangeSource];

export class RecordingSink implements IChangeSink {
  readonly calls: SinkCall[] = [];
  changed(path: string, source: ChangeSource): void {
    this.calls.push(['changed', path, source]);
  }
  removed(path: string, source: ChangeSource): void {
    this.calls.push(['removed', path, source]);
  }
  renamed(from: string, to: string, source: ChangeSource): void {
    this.calls.push(['renamed', from, to, source]);
  }
  rescan(reason: string, source: ChangeSource): void {
    this.calls.push(['rescan', reason, source]);
  }
}
