import * as fs from 'node:fs';
import * as path from 'node:path';
import { Command, Option } from 'commander';
import {
  MAX_VERSIONS_PAGE_LIMIT,
  type FsCloneResponse,
  type ObjectCloneResponse,
  type VersionListing
} from '@jupyter-store/contract';
import { jupyterRuntimeDir, listRunningServers } from '../discovery';
import { StoreClientError, StoreError } from '../errors';
import type { ILiveServerRecord } from '../records';
import { StoreClient } from '../storeClient';
import { describeNotebookDiff } from './diffText';
import { RetentionCommand } from './retention';
import { DeletedCommand } from './deleted';
import { RestoreCommand } from './restore';
import { SaveVersion } from './saveVersion';
import { CommandLine, parseLimitOption, UsageError } from './commandLine';

/**
 * The `jupyter store` commands of the client: `clone`, `fs-clone`, `publish`, `versions`,
 * `diff`, `save-version`, `retention`, `deleted`, `restore` and `servers`. They print for people by default and JSON with `--json`, and exit 0 on
 * success, 1 when the server (or finding it) fails, with its message, and 2 on bad usage, with
 * one line on stderr. `diff` exits as `diff` does: 0 when the notebooks are equal, 1 when they
 * differ, 2 on any error.
 */

/** The names {@link runStoreCommand} answers to. */
export const STORE_COMMANDS = [
  'clone',
  'fs-clone',
  'publish',
  'versions',
  'diff',
  'save-version',
  'retention',
  'deleted',
  'restore',
  'servers'
] as const;

export type StoreCommandName = (typeof STORE_COMMANDS)[number];

/** Whether `name` is one of {@link STORE_COMMANDS}. */
export function isStoreCommand(name: string | undefined): name is StoreCommandName {
  return (STORE_COMMANDS as readonly (string | undefined)[]).includes(name);
}

/** Where a command writes, what it sees, and how its client is made. */
export interface IStoreCommandIO extends CommandLine.IOptions {
  /** The environment; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** The working directory, for `./`-relative paths; default `process.cwd()`. */
  cwd?: string;
  /**
   * Options for the command's `StoreClient`. By default the kernel and the server are searched
   * for from the command's parent process: the command's own arguments are not a kernel's.
   */
  client?: StoreClient.IOptions;
}

/** Standard output and error of this process. */
export function processIO(): IStoreCommandIO {
  return {
    stdout: text => process.stdout.write(text),
    stderr: text => process.stderr.write(text)
  };
}

/**
 * Run one command with its arguments (those after the command's name), as `jupyter store`.
 *
 * @returns the exit status: 0 success, 1 failure of the server or of finding it, 2 bad usage.
 */
export async function runStoreCommand(
  name: string,
  argv: readonly string[],
  io: IStoreCommandIO = processIO()
): Promise<number> {
  const line = new CommandLine(io);
  const program = line.configure(new Command('jupyter store'), `jupyter-store ${name}`);
  addStoreCommands(program, line, io);
  return line.run(program, [name, ...argv]);
}

/**
 * Add the store commands to `program` (`jupyter store`'s own, or `jupyter-store`), each
 * reporting through `line`.
 */
export function addStoreCommands(program: Command, line: CommandLine, io: IStoreCommandIO): void {
  program.commandsGroup(
    "From a notebook's kernel (!jupyter store …), a terminal or a script, against a running server:"
  );
  for (const name of STORE_COMMANDS) {
    program.addCommand(Private.createCommand(name, COMMANDS[name], line, io));
  }
}

/**
 * An `s3://bucket/key[?versionId=…]` URI: the key is taken literally (as the AWS CLI takes it),
 * up to the first `?`.
 *
 * @throws UsageError naming what is wrong.
 */
export function parseObjectUri(uri: string): { bucket: string; key: string; versionId?: string } {
  const match = /^s3:\/\/([^/?]+)\/([^?]+)(?:\?(.*))?$/.exec(uri);
  if (!match) {
    throw new UsageError(
      `'${uri}' is not an object URI of the form s3://BUCKET/KEY[?versionId=ID]`
    );
  }
  const [, bucket, key, query] = match;
  if (query === undefined) return { bucket, key };
  const params = new URLSearchParams(query);
  const names = [...params.keys()];
  const unknown = names.find(param => param !== 'versionId');
  if (unknown !== undefined) {
    throw new UsageError(`'${uri}': the only query parameter is versionId, not '${unknown}'`);
  }
  const versions = params.getAll('versionId');
  if (versions.length !== 1 || versions[0] === '') {
    throw new UsageError(`'${uri}': give one non-empty versionId`);
  }
  return { bucket, key, versionId: versions[0] };
}

/**
 * A path argument as a server path. A path that starts with `/`, `./` or `../` (or is `.`) is a
 * file-system path, resolved against the working directory (a kernel's is its notebook's
 * directory) and made relative to the server's root; any other path is a server path already.
 *
 * @throws UsageError when a file-system path is outside the root, or the root is unknown.
 */
export function toServerPath(argument: string, cwd: string, rootDir: string): string {
  if (!/^(\.{1,2}(\/|$)|\/)/.test(argument)) return argument;
  if (rootDir === '') {
    throw new UsageError(
      `'${argument}' is a file-system path, but the server's root directory is unknown; give ` +
        'the path below the server root instead'
    );
  }
  const absolute = path.resolve(cwd, argument);
  for (const root of [rootDir, Private.realpath(rootDir)]) {
    for (const file of [absolute, Private.realpath(absolute)]) {
      const relative = path.relative(root, file);
      if (relative !== '' && relative.split(path.sep)[0] !== '..' && !path.isAbsolute(relative)) {
        return relative.split(path.sep).join('/');
      }
    }
  }
  throw new UsageError(`'${argument}' is not inside the server's root directory ${rootDir}`);
}

/** What a command prints: text for people, a value for `--json`; and its exit status. */
interface IOutput {
  text: string;
  json: unknown;
  /** Default 0. */
  status?: number;
}

/** The options of the store commands, as commander parses them (each takes some). */
interface IStoreOptions {
  json?: boolean;
  url?: string;
  token?: string;
  limit?: string;
  next?: string;
  note?: string;
  version?: string;
  keepNewest?: string;
  noncurrentDays?: string;
}

interface IInvocation {
  options: IStoreOptions;
  positionals: readonly string[];
  io: IStoreCommandIO;
}

interface ICommand {
  /** One line for the program's list of commands. */
  summary: string;
  /** The arguments after the command's name, as its help shows them. */
  usage: string;
  /** The command's own help, between the usage line and the arguments. */
  description: string;
  /** The arguments, as commander declares them (`<name>` or `[name]`), with their help. */
  arguments: ReadonlyArray<readonly [string, string]>;
  /** Help after the options' (not rewrapped, unlike the description). */
  notes?: string;
  /** Whether it talks to a server, and so takes `--url` and `--token`. */
  server: boolean;
  /** Options of its own. */
  options?: () => Option[];
  /** The exit status when the server, or finding it, fails; default 1. */
  failureStatus?: number;
  run(invocation: IInvocation): Promise<IOutput>;
}

/** What a command's own module says about it: its help, arguments and options. */
interface ICommandHelp {
  readonly summary: string;
  readonly usage: string;
  readonly description: string;
  readonly args: ReadonlyArray<readonly [string, string]>;
  readonly options?: () => Option[];
}

/** A command that talks to a server, described by its own module and run by `run`. */
function serverCommand(help: ICommandHelp, run: ICommand['run']): ICommand {
  const { summary, usage, description, args, options } = help;
  return { summary, usage, description, arguments: args, options, server: true, run };
}

const PATHS_NOTE = `Paths are below the server's root, as JupyterLab shows them; a path starting with
/, ./ or ../ is a file path, taken from the current directory (in a notebook, the
notebook's directory).`;

const COMMANDS: Record<StoreCommandName, ICommand> = {
  clone: {
    summary: 'clone s3://BUCKET/KEY[?versionId=ID] [TARGET]: copy an object into the server',
    usage: 's3://BUCKET/KEY[?versionId=ID] [TARGET] [options]',
    description: `Copy an object from object storage (its latest version, or the version named) into the server, at TARGET (default: the key's file name, in the root). A taken name becomes name-1.ext, name-2.ext, …: nothing is overwritten.`,
    arguments: [
      ['<uri>', 'the object URI s3://BUCKET/KEY[?versionId=ID]'],
      ['[target]', "where the copy goes (default: the key's file name, in the root)"]
    ],
    server: true,
    async run({ options, positionals, io }) {
      const source = parseObjectUri(positionals[0]);
      const client = createClient(options, io);
      const targetPath = await serverPathArgument(client, positionals[1], io);
      const model = await client.cloneObject({ ...source, targetPath });
      return { text: describeObjectClone(model), json: model };
    }
  },
  'fs-clone': {
    summary: "fs-clone RELPATH [TARGET]: copy a file from the server's fs_cloning_basedir",
    usage: 'RELPATH [TARGET] [options]',
    description: `Copy a file from the server's shared directory (fs_cloning_basedir; RELPATH is relative to it) into the server, at TARGET (default: the file's name, in the root). A taken name becomes name-1.ext, name-2.ext, …: nothing is overwritten.`,
    arguments: [
      ['<relpath>', 'the file, relative to fs_cloning_basedir'],
      ['[target]', "where the copy goes (default: the file's name, in the root)"]
    ],
    server: true,
    async run({ options, positionals, io }) {
      const client = createClient(options, io);
      const targetPath = await serverPathArgument(client, positionals[1], io);
      const model = await client.cloneFromFileSystem({ relpath: positionals[0], targetPath });
      return { text: describeFsClone(model), json: model };
    }
  },
  publish: {
    summary: 'publish [PATH]: publish a notebook (default: the current one)',
    usage: '[PATH] [options]',
    description: `Publish a notebook (default: the notebook of the kernel this runs in) to the server's published prefix in object storage. The copy published is the one last saved: save first to include recent changes.`,
    arguments: [['[path]', 'the notebook (default: the current one)']],
    server: true,
    async run({ options, positionals, io }) {
      const client = createClient(options, io);
      const notebookPath = await serverPathArgument(client, positionals[0], io);
      const result = await client.publish({ path: notebookPath });
      return { text: describePublished(result), json: result };
    }
  },
  versions: {
    summary: "versions [PATH]: list a notebook's archived and published versions",
    usage: '[PATH] [options]',
    description: `List the archived and published versions of a notebook (default: the notebook of the kernel this runs in), newest first: all of them, page after page. With --limit N, only one page, of at most N versions of each copy; when more follow, the page ends with the command that lists the next one (--next TOKEN).`,
    arguments: [['[path]', 'the notebook (default: the current one)']],
    server: true,
    options: () => [
      new Option(
        '--limit <N>',
        `list one page of at most N versions of each copy (1 to ${MAX_VERSIONS_PAGE_LIMIT})`
      ),
      new Option(
        '--next <TOKEN>',
        'list the page this token names (printed at the end of the page before)'
      )
    ],
    async run({ options, positionals, io }) {
      const limit = parseLimit(options.limit);
      const next = options.next;
      if (next === '') throw new UsageError('--next: give the token the page before printed');
      const client = createClient(options, io);
      const notebookPath = await serverPathArgument(client, positionals[0], io);
      if (limit === undefined && next === undefined) {
        const listing = await client.versions(notebookPath);
        return { text: describeVersions(listing), json: listing };
      }
      const page = await client.versionsPage(notebookPath, { limit, next });
      return { text: describeVersions(page, { limit, path: positionals[0] }), json: page };
    }
  },
  diff: {
    summary: 'diff PATH [BASE] [REMOTE]: what changed in a notebook between two versions',
    usage: 'PATH [BASE] [REMOTE] [options]',
    description:
      'Show what changed in a notebook from BASE to REMOTE: the cells added, removed and ' +
      'changed, their source lines (- removed, + added), and what changed in outputs and ' +
      'metadata. REMOTE defaults to current and BASE to the newest archived version: with no ' +
      'refs, the diff shows what is on disk and not archived yet. Cells are numbered from 0: ' +
      'removed and changed cells as in BASE, added cells as in REMOTE. With --json, the ' +
      "server's answer: {path, base, diff, base_ref, remote_ref}, the diff in nbdime's format." +
      "\n\nExit status, as diff's: 0 when the notebooks are equal, 1 when they differ, 2 on " +
      'errors.',
    arguments: [
      ['<path>', 'the notebook'],
      ['[base]', 'the ref compared from (default: the newest archived version)'],
      ['[remote]', 'the ref compared to (default: current)']
    ],
    notes: `BASE and REMOTE are refs:
  current                the file on the server's disk
  VERSION_ID             an archived version (jupyter store versions PATH lists them)
  published:VERSION_ID   a published version`,
    server: true,
    failureStatus: 2,
    async run({ options, positionals, io }) {
      const [, base, remote] = positionals;
      const client = createClient(options, io);
      const notebookPath = await serverPathArgument(client, positionals[0], io);
      const answer = await client.diff(notebookPath, { base, remote });
      return {
        text: describeNotebookDiff(answer),
        json: answer,
        status: answer.diff.length === 0 ? 0 : 1
      };
    }
  },
  'save-version': serverCommand(SaveVersion, async ({ options, positionals, io }) => {
    const client = createClient(options, io);
    const path = (await serverPathArgument(client, positionals[0], io)) ?? positionals[0];
    const { note, version } = options;
    return SaveVersion.run(client, { path, name: positionals[1], note, version });
  }),
  retention: serverCommand(RetentionCommand, async ({ options, positionals, io }) => {
    const request = { action: positionals[0], ...options };
    RetentionCommand.change(request);
    return RetentionCommand.run(createClient(options, io), request);
  }),
  deleted: serverCommand(DeletedCommand, async ({ options, positionals, io }) => {
    const client = createClient(options, io);
    const prefix = await serverPathArgument(client, positionals[0], io);
    return DeletedCommand.run(client, { prefix, limit: options.limit });
  }),
  restore: serverCommand(RestoreCommand, async ({ options, positionals, io }) => {
    const client = createClient(options, io);
    const path = (await serverPathArgument(client, positionals[0], io)) ?? positionals[0];
    return RestoreCommand.run(client, { path, version: options.version });
  }),
  servers: {
    summary: 'list the running Jupyter servers',
    usage: '[options]',
    description: `List the running Jupyter servers, from their records in the Jupyter runtime directory ($JUPYTER_RUNTIME_DIR, else runtime/ in the Jupyter data directory). A jupyter-store gateway is listed instead of the Jupyter Server behind it.`,
    arguments: [],
    server: false,
    async run({ io }) {
      const env = io.env ?? process.env;
      const runtimeDir = io.client?.runtimeDir ?? jupyterRuntimeDir(env);
      const servers = listRunningServers({ runtimeDir, env });
      return { text: describeServers(servers, runtimeDir), json: servers };
    }
  }
};

function createClient(options: IStoreOptions, io: IStoreCommandIO): StoreClient {
  const { url, token } = options;
  if (token !== undefined && url === undefined) {
    throw new UsageError('--token needs --url: the token belongs to the server named there');
  }
  if (url !== undefined && !/^https?:\/\/[^/]/.test(url)) {
    throw new UsageError(`--url: '${url}' is not an http:// or https:// URL`);
  }
  return new StoreClient({
    env: io.env,
    startPid: process.ppid,
    ...io.client,
    ...(url === undefined ? {} : { server: { url, token } })
  });
}

/** A path argument as a server path, or undefined when it was not given. */
async function serverPathArgument(
  client: StoreClient,
  argument: string | undefined,
  io: IStoreCommandIO
): Promise<string | undefined> {
  if (argument === undefined) return undefined;
  if (!/^(\.{1,2}(\/|$)|\/)/.test(argument)) return argument;
  const server = await client.server();
  return toServerPath(argument, io.cwd ?? process.cwd(), server.root_dir);
}

function describeObjectClone(model: ObjectCloneResponse): string {
  const version = model.object_version_id === null ? '' : ` (version ${model.object_version_id})`;
  return `Cloned ${model.object_path}${version} to ${model.path}\n`;
}

function describeFsClone(model: FsCloneResponse): string {
  return `Cloned ${model.relpath} from the shared directory to ${model.path}\n`;
}

function describePublished(result: StoreClient.IPublishResult): string {
  const what = result.current_notebook ? `the current notebook (${result.path})` : result.path;
  const version = result.object_version_id === null ? '' : ` (version ${result.object_version_id})`;
  return (
    `Published ${what} to ${result.object_path}${version}.\n` +
    `This is the copy saved at ${result.saved_at}: changes not saved since are not included.\n`
  );
}

/** `--limit`: a whole number from 1 to the server's maximum, or undefined when not given. */
function parseLimit(value: string | undefined): number | undefined {
  return parseLimitOption(value, MAX_VERSIONS_PAGE_LIMIT);
}

/**
 * The listing for people. With `page`, it is one page of a paged listing: when more follow,
 * the last line is the command that lists the next page.
 */
function describeVersions(
  listing: VersionListing,
  page?: { limit: number | undefined; path: string | undefined }
): string {
  const lines = [`Versions of ${listing.path} in bucket ${listing.object_bucket}, newest first:`];
  for (const [title, entry] of [
    ['archived', listing.workspace],
    ['published', listing.published]
  ] as const) {
    if (entry.versions.length === 0) {
      lines.push(`  ${title} (${entry.object_key}): none`);
      continue;
    }
    const count = entry.versions.length;
    lines.push(`  ${title} (${entry.object_key}): ${count} version${count === 1 ? '' : 's'}`);
    for (const version of entry.versions) {
      const latest = version.is_latest ? '  latest' : '';
      // A version of the notebook's earlier path (before a rename) says which: it is read there.
      const earlier =
        version.path !== undefined && version.path !== listing.path ? `  as ${version.path}` : '';
      const renamed =
        version.renamed_from === undefined ? '' : `  renamed from ${version.renamed_from}`;
      lines.push(
        `    ${version.object_version_id}  ${version.last_modified}  ${version.size} bytes` +
          `${latest}${earlier}${renamed}${SaveVersion.labelText(version, '      ')}`
      );
    }
  }
  if (page && typeof listing.next === 'string') {
    const path = page.path === undefined ? '' : ` ${shellQuote(page.path)}`;
    const limit = page.limit === undefined ? '' : ` --limit ${page.limit}`;
    lines.push(
      'More versions follow; the next page:',
      `  jupyter store versions${path}${limit} --next ${listing.next}`
    );
  }
  return `${lines.join('\n')}\n`;
}

/** A word as a POSIX shell reads it back: quoted unless it is plainly safe. */
function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

function describeServers(servers: readonly ILiveServerRecord[], runtimeDir: string): string {
  if (servers.length === 0)
    return `No Jupyter server is running (no live record in ${runtimeDir}).\n`;
  return servers
    .map(server => {
      const kind =
        server.upstream_url !== null
          ? `jupyter-store ${server.version ?? ''}`.trim()
          : `Jupyter Server ${server.version ?? ''}`.trim();
      return `${server.url} :: ${server.root_dir}  (${kind}, pid ${server.pid})\n`;
    })
    .join('');
}

function describeError(error: unknown): string {
  if (error instanceof StoreError) {
    const reason = error.reason && !error.message.includes(error.reason) ? `, ${error.reason}` : '';
    return `${error.message} (HTTP ${error.status}${reason})`;
  }
  if (error instanceof StoreClientError) return error.message;
  return error instanceof Error ? error.message : String(error);
}

function errorJson(error: unknown, message: string): Record<string, unknown> {
  if (error instanceof StoreError) {
    return { type: error.name, status: error.status, reason: error.reason, message: error.message };
  }
  return { type: error instanceof Error ? error.name : 'Error', message };
}

namespace Private {
  /**
   * The commander command for a store command: its help, options and arguments, and an action
   * that prints the result (JSON with `--json`) and sets the exit status. Usage errors are left
   * to `line`; any other failure is reported here, as one line on stderr (and with `--json` as
   * JSON on stdout too), with the command's failure status.
   */
  export function createCommand(
    name: StoreCommandName,
    spec: ICommand,
    line: CommandLine,
    io: IStoreCommandIO
  ): Command {
    const command = line
      .configure(new Command(name), `jupyter-store ${name}`)
      .summary(spec.summary)
      .description(spec.description)
      .usage(spec.usage);
    for (const [argument, description] of spec.arguments) {
      command.argument(argument, description);
    }
    for (const option of spec.options?.() ?? []) command.addOption(option);
    if (spec.notes) command.addHelpText('after', `\n${spec.notes}`);
    if (spec.server) {
      command
        .option(
          '--url <URL>',
          'the server (default: the one running this kernel or terminal, else the only one)'
        )
        .option('--token <TOKEN>', "the server's token (default: the one in its runtime record)")
        .addHelpText('after', `\n${PATHS_NOTE}`);
    }
    command.option('--json', 'print JSON for scripts instead of text');
    command.action(async () => {
      const options = command.opts<IStoreOptions>();
      try {
        const result = await spec.run({ options, positionals: command.args, io });
        io.stdout(options.json ? `${JSON.stringify(result.json, null, 2)}\n` : result.text);
        line.status = result.status ?? 0;
      } catch (error) {
        if (error instanceof UsageError) throw error;
        const message = describeError(error);
        io.stderr(`jupyter-store ${name}: ${message}\n`);
        if (options.json) {
          io.stdout(`${JSON.stringify({ error: errorJson(error, message) }, null, 2)}\n`);
        }
        line.status = spec.failureStatus ?? 1;
      }
    });
    return command;
  }

  export function realpath(file: string): string {
    try {
      return fs.realpathSync(file);
    } catch {
      return file;
    }
  }
}
