import { Option } from 'commander';
import {
  MAX_RETENTION_KEEP_NEWEST,
  MAX_RETENTION_NONCURRENT_DAYS,
  type Retention,
  type RetentionRule
} from '@jupyter-store/contract';
import type { StoreClient } from '../storeClient';
import { UsageError } from './commandLine';

/**
 * `jupyter store retention [show]`, `retention set --keep-newest N --noncurrent-days D` and
 * `retention clear`: the lifecycle rule that bounds how many old versions the archive keeps.
 * The registration in `storeCommands.ts` finds the server; this module says what the command
 * is and does.
 */
export namespace RetentionCommand {
  /** What the command can do; `show` when none is given. */
  export const ACTIONS = ['show', 'set', 'clear'] as const;

  export type Action = (typeof ACTIONS)[number];

  export const summary = 'retention [show|set|clear]: the rule that expires old archived versions';

  export const usage = '[show | set --keep-newest N --noncurrent-days D | clear] [options]';

  export const description =
    "Show, set or clear the retention rule of the server's workspace prefix: a lifecycle rule " +
    'of the bucket that keeps the newest N noncurrent versions of each notebook and expires ' +
    'older noncurrent versions D days after a newer version replaced them. The current version, ' +
    'delete markers (how deleted notebooks are found again) and named versions are never ' +
    "expired, and the bucket's other lifecycle rules are kept. S3 and MinIO apply the rule in " +
    'their own background scan, some time after versions are due; the embedded store applies ' +
    'it to a notebook each time it archives a version of it.';

  export const args: ReadonlyArray<readonly [string, string]> = [
    ['[action]', 'show (the default), set, or clear']
  ];

  export function options(): Option[] {
    return [
      new Option(
        '--keep-newest <N>',
        `with set: noncurrent versions of each notebook kept whatever their age (0 to ${MAX_RETENTION_KEEP_NEWEST})`
      ),
      new Option(
        '--noncurrent-days <D>',
        `with set: days a replaced version stays before it may expire (1 to ${MAX_RETENTION_NONCURRENT_DAYS})`
      )
    ];
  }

  /** What the command was given, as commander parsed it. */
  export interface IRequest {
    readonly action: string | undefined;
    readonly keepNewest?: string;
    readonly noncurrentDays?: string;
  }

  /**
   * The change a request asks for: undefined to show, null to clear, a rule to set.
   *
   * @throws UsageError for an unknown action, a missing or malformed number, or numbers given to
   *   an action other than `set`.
   */
  export function change(request: IRequest): RetentionRule | null | undefined {
    const action = request.action ?? 'show';
    if (!(ACTIONS as readonly string[]).includes(action)) {
      throw new UsageError(`'${action}' is not an action of retention: show, set or clear`);
    }
    const given = request.keepNewest !== undefined || request.noncurrentDays !== undefined;
    if (action !== 'set') {
      if (given) {
        throw new UsageError(`--keep-newest and --noncurrent-days go with set, not ${action}`);
      }
      return action === 'clear' ? null : undefined;
    }
    return {
      keep_newest: Private.wholeNumber(
        '--keep-newest',
        request.keepNewest,
        0,
        MAX_RETENTION_KEEP_NEWEST
      ),
      noncurrent_days: Private.wholeNumber(
        '--noncurrent-days',
        request.noncurrentDays,
        1,
        MAX_RETENTION_NONCURRENT_DAYS
      )
    };
  }

  /** Show, set or clear the rule; what to print for people, and the server's answer for `--json`. */
  export async function run(
    client: StoreClient,
    request: IRequest
  ): Promise<{ text: string; json: Retention }> {
    const retention = await client.retention(change(request));
    return { text: describe(retention), json: retention };
  }

  /** The rule in force for people, and how many other rules the bucket has. */
  export function describe(retention: Retention): string {
    const lines: string[] = [];
    const { rule } = retention;
    if (retention.prefix === '') {
      lines.push('No retention rule: the workspace prefix is empty, so none can be set.');
    } else if (rule === null) {
      lines.push(`No retention rule for ${retention.prefix}: every archived version is kept.`);
    } else {
      const kept =
        rule.keep_newest === 0
          ? 'no noncurrent version is kept whatever its age'
          : `the newest ${rule.keep_newest} noncurrent version${rule.keep_newest === 1 ? ' is' : 's are'} kept whatever their age`;
      lines.push(
        `Retention for ${retention.prefix}: versions replaced ${rule.noncurrent_days} day` +
          `${rule.noncurrent_days === 1 ? '' : 's'} ago or more expire; ${kept}.`,
        `Rule ${retention.rule_id} of the bucket's lifecycle configuration.`
      );
    }
    const others = retention.other_rules;
    lines.push(
      `The bucket has ${others === 0 ? 'no' : others} other lifecycle rule${others === 1 ? '' : 's'}.`
    );
    return `${lines.join('\n')}\n`;
  }
}

namespace Private {
  /** A whole number from `min` to `max`, written plainly (no sign, spaces or leading zeros). */
  export function wholeNumber(
    option: string,
    value: string | undefined,
    min: number,
    max: number
  ): number {
    if (value === undefined) throw new UsageError(`set needs ${option}`);
    const number = /^(0|[1-9][0-9]*)$/.test(value) ? Number(value) : NaN;
    if (!(number >= min && number <= max)) {
      throw new UsageError(`${option}: '${value}' is not a whole number from ${min} to ${max}`);
    }
    return number;
  }
}
