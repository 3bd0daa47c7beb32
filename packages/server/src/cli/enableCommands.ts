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
import { UsageError } from '@jupyter-store/client';
import { isDirectory, isExecutableFile } from '../fileChecks';

/** The options of `enable` and `disable`, as the command line parses them (see `program.ts`). */
export interface IScopeOptions {
  user?: boolean;
  sysPrefix?: boolean;
  jupyter?: string;
  sysPrefixDir?: string;
}

/** What the commands need from their surroundings; tests replace it. */
export interface IEnableContext {
  /** The environment; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Where the report goes; default stdout. */
  write?: (text: string) => void;
  /** How the `jupyter` executable is found; default {@link findJupyter}. */
  findJupyter?: (env: NodeJS.ProcessEnv) => string | null;
}

/**
 * `jupyter-store enable --user|--sys-prefix`.
 *
 * @throws UsageError when the scope is missing or its environment cannot be found.
 */
export function runEnable(options: IScopeOptions, context: IEnableContext = {}): void {
  const write = context.write ?? (text => process.stdout.write(text));
  const target = resolveScope(options, context);
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

/**
 * `jupyter-store disable --user|--sys-prefix`.
 *
 * @throws UsageError when the scope is missing or its environment cannot be found.
 */
export function runDisable(options: IScopeOptions, context: IEnableContext = {}): void {
  const write = context.write ?? (text => process.stdout.write(text));
  const target = resolveScope(options, context);
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

/**
 * The scope's config directory. The command line has refused `--user` with `--sys-prefix`, and
 * `--jupyter` with `--sys-prefix-dir`.
 */
function resolveScope(options: IScopeOptions, context: IEnableContext): IScopeTarget {
  const env = context.env ?? process.env;
  const { user, sysPrefix, jupyter: jupyterFlag, sysPrefixDir: prefixFlag } = options;
  if (!user && !sysPrefix) throw new UsageError('a scope is required: --user or --sys-prefix');
  if (!sysPrefix && (jupyterFlag !== undefined || prefixFlag !== undefined)) {
    throw new UsageError(
      `--${jupyterFlag !== undefined ? 'jupyter' : 'sys-prefix-dir'} only goes with --sys-prefix`
    );
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
 * The Python environment (`sys.prefix`) that `--sys-prefix` means (as `enable --help` says).
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
