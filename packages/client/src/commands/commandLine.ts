import type { Command } from 'commander';

/**
 * A mistake in how a command was called that only its action can see (a value of the wrong
 * form, a path outside the root): reported like commander's own usage errors, as one line on
 * stderr and exit status 2.
 */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/**
 * A `--limit` value: a whole number from 1 to `max`, or undefined when not given.
 *
 * @throws UsageError for anything else.
 */
export function parseLimitOption(value: string | undefined, max: number): number | undefined {
  if (value === undefined) return undefined;
  const limit = /^[1-9][0-9]*$/.test(value) ? Number(value) : NaN;
  if (!(limit <= max)) {
    throw new UsageError(`--limit: '${value}' is not a whole number from 1 to ${max}`);
  }
  return limit;
}

/**
 * The conventions of jupyter-store's command lines, shared by `jupyter-store` and
 * `jupyter store`: output through the given writers (so that tests run commands in-process),
 * help and version on stdout with status 0, every usage error as one line naming the problem
 * with status 2, any other error as one line with status 1, and whatever status an action sets
 * (`diff`'s 1 when the notebooks differ).
 */
export class CommandLine {
  constructor(options: CommandLine.IOptions) {
    this._output = options;
  }

  /** The exit status an action set; 0 unless it set one. */
  status = 0;

  /**
   * Give `command` these conventions; `prefix` starts its error lines (`jupyter-store`, or
   * `jupyter-store clone` for a store command, as a kernel's output shows which ran).
   */
  configure<T extends Command>(command: T, prefix: string): T {
    this._prefixes.set(command, prefix);
    command
      .helpOption('-h, --help', 'show this help')
      .helpCommand(false)
      // Commander's own error class may come from another copy of commander: not instanceof.
      .exitOverride(({ exitCode }) => {
        throw new Private.Exit(exitCode);
      })
      .configureOutput({
        writeOut: text => this._output.stdout(text),
        writeErr: text => this._output.stderr(text),
        outputError: message => this._output.stderr(Private.usageLine(prefix, message))
      });
    return command;
  }

  /**
   * Parse `argv` (the arguments after the program's name) with `program` and run the action it
   * names.
   *
   * @returns the exit status: the action's, 0 after help, 2 on bad usage, 1 on other errors.
   */
  async run(program: Command, argv: readonly string[]): Promise<number> {
    let active: Command = program;
    program.hook('preAction', (_program, actionCommand) => {
      active = actionCommand;
    });
    try {
      await program.parseAsync(argv, { from: 'user' });
      return this.status;
    } catch (error) {
      // Help, the version and commander's usage errors have been written already.
      if (error instanceof Private.Exit && error.exitCode === 0) return 0;
      let status = 2;
      if (!(error instanceof Private.Exit)) {
        const prefix = this._prefixes.get(active) ?? program.name();
        const message = error instanceof Error ? error.message : String(error);
        status = error instanceof UsageError ? 2 : 1;
        this._output.stderr(
          error instanceof UsageError
            ? Private.usageLine(prefix, message)
            : `${prefix}: ${message}\n`
        );
      }
      this._output.exit?.(status);
      return status;
    }
  }

  private readonly _output: CommandLine.IOptions;
  private readonly _prefixes = new WeakMap<Command, string>();
}

export namespace CommandLine {
  /** Where the commands write. */
  export interface IOptions {
    stdout(text: string): void;
    stderr(text: string): void;
    /**
     * Called with the exit status when a command fails with an error (bad usage, or an error its
     * action throws) rather than setting a status: a process ends here at once, since the
     * action may have started work that would keep it alive.
     */
    exit?(status: number): void;
  }
}

namespace Private {
  /** Where commander would have exited the process, after help or a usage error. */
  export class Exit extends Error {
    constructor(readonly exitCode: number) {
      super(`exit status ${exitCode}`);
    }
  }

  /**
   * One line for a usage error: commander's messages lose their `error: ` and put a suggestion
   * ("Did you mean …?") on the same line.
   */
  export function usageLine(prefix: string, message: string): string {
    const text = message
      .trim()
      .replace(/^error: /, '')
      .replace(/\s*\n\s*/g, ' ');
    return `${prefix}: ${text} (see --help)\n`;
  }
}
