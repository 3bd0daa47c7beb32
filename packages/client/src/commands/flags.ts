import { parseArgs } from 'node:util';

/** A command-line flag: its type, its one-line help and the name of its value. */
export interface IFlag {
  type: 'string' | 'boolean';
  short?: string;
  help: string;
  value?: string;
}

export type FlagSpec = Record<string, IFlag>;

/** A mistake in how the command was called: one line on stderr and exit status 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/**
 * Parse flags strictly (unknown flags, missing values and positionals are usage errors).
 *
 * @throws UsageError naming the offending flag.
 */
export function parseFlags(
  argv: readonly string[],
  spec: FlagSpec,
  options: { positionals?: boolean } = {}
): { values: Record<string, string | boolean | undefined>; positionals: string[] } {
  const parseOptions = Object.fromEntries(
    Object.entries(spec).map(([name, flag]) => [
      name,
      flag.short ? { type: flag.type, short: flag.short } : { type: flag.type }
    ])
  );
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options: parseOptions,
      strict: true,
      allowPositionals: options.positionals ?? false
    });
    return { values: values as Record<string, string | boolean | undefined>, positionals };
  } catch (error) {
    throw new UsageError((error as Error).message.split('\n')[0]);
  }
}

/** The options block of a command's `--help`: one line per flag. */
export function describeFlags(spec: FlagSpec): string {
  return Object.entries(spec)
    .map(([name, flag]) => {
      const value = flag.value ? ` ${flag.value}` : '';
      const left = `${flag.short ? `-${flag.short}, ` : '    '}--${name}${value}`;
      return `  ${left.padEnd(32)} ${flag.help}\n`;
    })
    .join('');
}
