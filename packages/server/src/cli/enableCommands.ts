import * as fs from 'node:fs';
import * as path from 'node:path';
import { jupyterConfigDir } from '../contents/trust';
import { findJupyter } from '../gateway/jupyterProcess';
import type { ISettingsSources } from '../settings/load';
import {
  publishEnablement,
  removePublishSwitch,
  writePublishSwitch
} from '../settings/publishEnabled';
import { describeFlags, parseFlags, UsageError, type FlagSpec } from './flags';
import { isDirectory, isExecutableFile } from '../fileChecks';

const SCOPE_FLAGS = {
  user: {
    type: 'boolean',
    help: 'for this user, in every environment (the Jupyter config directory)'
  },
  'sys-prefix': {
    type: 'boolean',
    help: "for this Python environment only ('<sys.prefix>/etc/jupyter')"
  },
  jupyter: {
    type: 'string',
    help: 'with --sys-prefix: the jupyter executable whose environment is meant',
    value: 'PATH'
  },
  'sys-prefix-dir': {
    type: 'string',
    help: "with --sys-prefix: the environment's sys.prefix itself",
    value: 'DIR'
  },
  help: { type: 'boolean', short: 'h', help: 'show this help' }
} satisfies FlagSpec;

const SCOPES_TEXT = `Exactly one of --user and --sys-prefix is required. --sys-prefix means the Python
environment of --sys-prefix-dir DIR if given, else of the jupyter executable ('--jupyter PATH',
else 'jupyter' on PATH, else the project's .venv, as 'jupyter-store lab' finds it; its sys.prefix
is taken as the directory above the one holding it, symlinks resolved), else $VIRTUAL_ENV.`;

export const ENABLE_USAGE = `Usage: jupyter-store enable --user|--sys-prefix [options]

Enable publishing (PUT {base}api/store/publish/<path>), which is off by default. Writes
<config dir>/jupyter_store_config.d/publish.json with {"StoreExtension": {"publish_enabled": true}}
in the Jupyter config directory of the scope. A running jupyter-store picks it up at its next
request; no restart is needed.

${SCOPES_TEXT}

Options:
${describeFlags(SCOPE_FLAGS)}`;

export const DISABLE_USAGE = `Usage: jupyter-store disable --user|--sys-prefix [options]

Take back 'jupyter-store enable': removes <config dir>/jupyter_store_config.d/publish.json from
the Jupyter config directory of the scope. Publishing stays on if another scope still enables it;
the command says which.

${SCOPES_TEXT}

Options:
${describeFlags(SCOPE_FLAGS)}`;

/** What the commands need from their surroundings; tests replace it. */
export interface IEnableContext {
  /** The environment; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Where the report goes; default stdout. */
  write?: (text: string) => void;
  /** How the `jupyter` executable is found; default {@link findJupyter}. */
  findJupyter?: (env: NodeJS.ProcessEnv) => string | null;
}

/** `jupyter-store enable --user|--sys-prefix`. */
export function runEnable(argv: readonly string[], context: IEnableContext = {}): void {
  const write = context.write ?? (text => process.stdout.write(text));
  const target = parseScope(argv, context, ENABLE_USAGE);
  if (!target) return;
  const file = writePublishSwitch(target.configDir, true);
  write(`Publishing enabled ${target.description}: wrote ${file}\n`);
  const state = publishEnablement(target.sources);
  if (state.enabled) {
    write('A running jupyter-store picks this up at its next request.\n');
  } else if (state.decidedBy && state.decidedBy !== file) {
    write(
      `Warning: publishing stays off: ${state.decidedBy} turns it off, and it takes precedence.\n`
    );
  }
  for (const problem of state.problems) write(`Warning: ${problem}; it counts as "off".\n`);
}

/** `jupyter-store disable --user|--sys-prefix`. */
export function runDisable(argv: readonly string[], context: IEnableContext = {}): void {
  const write = context.write ?? (text => process.stdout.write(text));
  const target = parseScope(argv, context, DISABLE_USAGE);
  if (!target) return;
  const { file, removed } = removePublishSwitch(target.configDir);
  write(
    removed
      ? `Publishing disabled ${target.description}: removed ${file}\n`
      : `Publishing was not enabled ${target.description}: ${file} does not exist\n`
  );
  const state = publishEnablement(target.sources);
  if (state.enabled && state.decidedBy) {
    const other = scopeOf(state.decidedBy, target.sources);
    write(
      `Note: publishing stays on: ${state.decidedBy} enables it` +
        (other
          ? `; run 'jupyter store disable ${other}' to turn it off there.\n`
          : '; remove that file to turn it off there.\n')
    );
  }
  for (const problem of state.problems) write(`Warning: ${problem}; it counts as "off".\n`);
}

interface IScopeTarget {
  /** The Jupyter config directory written to. */
  configDir: string;
  /** "for this user (…)" / "for the environment …". */
  description: string;
  /** The config path as the gateway would read it (with this environment). */
  sources: ISettingsSources;
}

/** Parse the flags and resolve the scope's config directory; undefined after `--help`. */
function parseScope(
  argv: readonly string[],
  context: IEnableContext,
  usage: string
): IScopeTarget | undefined {
  const { values } = parseFlags(argv, SCOPE_FLAGS);
  if (values.help) {
    (context.write ?? (text => process.stdout.write(text)))(usage);
    return undefined;
  }
  const env = context.env ?? process.env;
  const user = Boolean(values.user);
  const sysPrefix = Boolean(values['sys-prefix']);
  const jupyterFlag = values.jupyter as string | undefined;
  const prefixFlag = values['sys-prefix-dir'] as string | undefined;
  if (user === sysPrefix) {
    throw new UsageError(
      user
        ? '--user and --sys-prefix cannot be combined; choose one scope'
        : 'a scope is required: --user or --sys-prefix'
    );
  }
  if (!sysPrefix && (jupyterFlag !== undefined || prefixFlag !== undefined)) {
    throw new UsageError(
      `--${jupyterFlag !== undefined ? 'jupyter' : 'sys-prefix-dir'} only goes with --sys-prefix`
    );
  }
  if (jupyterFlag !== undefined && prefixFlag !== undefined) {
    throw new UsageError('--jupyter and --sys-prefix-dir cannot be combined; give one');
  }
  if (user) {
    // The environment only matters for the report (does another scope override?); best effort.
    const environment = environmentPrefix(env, context, undefined, undefined, false);
    return {
      configDir: jupyterConfigDir({ env }),
      description: 'for this user',
      sources: { env, sysPrefix: environment?.prefix }
    };
  }
  const environment = environmentPrefix(env, context, jupyterFlag, prefixFlag, true)!;
  return {
    configDir: path.join(environment.prefix, 'etc', 'jupyter'),
    description: `for the environment ${environment.prefix} (${environment.how})`,
    sources: { env, sysPrefix: environment.prefix }
  };
}

/**
 * The Python environment (`sys.prefix`) that `--sys-prefix` means; see {@link SCOPES_TEXT}.
 * With `required`, failing to find one is a usage error; otherwise it is undefined.
 */
function environmentPrefix(
  env: NodeJS.ProcessEnv,
  context: IEnableContext,
  jupyterFlag: string | undefined,
  prefixFlag: string | undefined,
  required: boolean
): { prefix: string; how: string } | undefined {
  if (prefixFlag !== undefined) {
    const prefix = path.resolve(prefixFlag);
    if (!isDirectory(prefix)) {
      throw new UsageError(`--sys-prefix-dir: '${prefixFlag}' is not a directory`);
    }
    return { prefix, how: 'from --sys-prefix-dir' };
  }
  let jupyter: string | null;
  if (jupyterFlag !== undefined) {
    jupyter = jupyterFlag.includes(path.sep) ? path.resolve(jupyterFlag) : onPath(jupyterFlag, env);
    if (!jupyter || !isExecutableFile(jupyter)) {
      throw new UsageError(`--jupyter: '${jupyterFlag}' is not an executable file`);
    }
  } else {
    jupyter = (context.findJupyter ?? findJupyter)(env);
  }
  if (jupyter) {
    try {
      const prefix = path.dirname(path.dirname(fs.realpathSync(jupyter)));
      return { prefix, how: `the environment of ${jupyter}` };
    } catch {
      // fall through to $VIRTUAL_ENV
    }
  }
  if (env.VIRTUAL_ENV && isDirectory(env.VIRTUAL_ENV)) {
    return { prefix: path.resolve(env.VIRTUAL_ENV), how: 'from $VIRTUAL_ENV' };
  }
  if (!required) return undefined;
  throw new UsageError(
    "--sys-prefix: cannot tell which Python environment is meant (no 'jupyter' on PATH, no " +
      '$VIRTUAL_ENV); give --jupyter PATH or --sys-prefix-dir DIR'
  );
}

/** The scope flag that writes to the directory holding `file`, if it is one of the two. */
function scopeOf(file: string, sources: ISettingsSources): string | undefined {
  const dir = path.dirname(path.dirname(file));
  if (dir === jupyterConfigDir({ env: sources.env })) return '--user';
  if (sources.sysPrefix && dir === path.join(sources.sysPrefix, 'etc', 'jupyter')) {
    return '--sys-prefix';
  }
  // A $JUPYTER_CONFIG_PATH or system directory: no scope flag writes there.
  return undefined;
}

function onPath(name: string, env: NodeJS.ProcessEnv): string | null {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (isExecutableFile(candidate)) return candidate;
  }
  return null;
}
