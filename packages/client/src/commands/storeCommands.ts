import * as fs from 'node:fs';
import * as path from 'node:path';
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
import { describeFlags, parseFlags, UsageError, type FlagSpec } from './flags';

/**
 * The `jupyter store` commands of the client: `clone`, `fs-clone`, `publish`, `versions`,
 * `diff` and `servers`. They print for people by default and JSON with `--json`, and exit 0 on
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
  'servers'
] as const;

export type StoreCommandName = (typeof STORE_COMMANDS)[number];

/** Whether `name` is one of {@link STORE_COMMANDS}. */
export function isStoreCommand(name: string | undefined): name is StoreCommandName {
  return (STORE_COMMANDS as readonly (string | undefined)[]).includes(name);
}

/** Where a command writes, what it sees, and how its client is made. */
export interface IStoreCommandIO {
  stdout(text: string): void;
  stderr(text: string): void;
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
 * Run one command with its arguments (those after the command's name).
 *
 * @returns the exit status: 0 success, 1 failure of the server or of finding it, 2 bad usage.
 */
export async function runStoreCommand(
  name: string,
  argv: readonly string[],
  io: IStoreCommandIO = processIO()
): Promise<number> {
  let json = false;
  try {
    if (!isStoreCommand(name)) throw new UsageError(`unknown command '${name}'`);
    const command = COMMANDS[name];
    const { values, positionals } = parseFlags(argv, command.flags, { positionals: true });
    if (values.help) {
      io.stdout(`${command.usage}\nOptions:\n${describeFlags(command.flags)}`);
      return 0;
    }
    json = Boolean(values.json);
    const [min, max] = command.positionals;
    if (positionals.length < min) {
      throw new UsageError(`missing ${command.positionalNames[positionals.length]}`);
    }
    if (positionals.length > max) {
      throw new UsageError(`unexpected argument '${positionals[max]}'`);
    }
    const result = await command.run({ values, positionals, io });
    io.stdout(json ? `${JSON.stringify(result.json, null, 2)}\n` : result.text);
    return result.status ?? 0;
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`jupyter-store ${name}: ${error.message} (see --help)\n`);
      return 2;
    }
    const message = describeError(error);
    io.stderr(`jupyter-store ${name}: ${message}\n`);
    if (json) io.stdout(`${JSON.stringify({ error: errorJson(error, message) }, null, 2)}\n`);
    return (isStoreCommand(name) && COMMANDS[name].failureStatus) || 1;
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

interface IInvocation {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
  io: IStoreCommandIO;
}

interface ICommand {
  usage: string;
  flags: FlagSpec;
  /** The least and the most positional arguments. */
  positionals: [number, number];
  positionalNames: string[];
  /** The exit status when the server, or finding it, fails; default 1. */
  failureStatus?: number;
  run(invocation: IInvocation): Promise<IOutput>;
}

const OUTPUT_FLAGS: FlagSpec = {
  json: { type: 'boolean', help: 'print JSON for scripts instead of text' },
  help: { type: 'boolean', short: 'h', help: 'show this help' }
};

const SERVER_FLAGS: FlagSpec = {
  url: {
    type: 'string',
    help: 'the server (default: the one running this kernel or terminal, else the only one)',
    value: 'URL'
  },
  token: {
    type: 'string',
    help: "the server's token (default: the one in its runtime record)",
    value: 'TOKEN'
  },
  ...OUTPUT_FLAGS
};

const PATHS_NOTE = `Paths are below the server's root, as JupyterLab shows them; a path starting with
/, ./ or ../ is a file path, taken from the current directory (in a notebook, the
notebook's directory).
`;

const COMMANDS: Record<StoreCommandName, ICommand> = {
  clone: {
    usage: `Usage: jupyter store clone s3://BUCKET/KEY[?versionId=ID] [TARGET] [options]

Copy an object from object storage (its latest version, or the version named) into the
server, at TARGET (default: the key's file name, in the root). A taken name becomes
name-1.ext, name-2.ext, …: nothing is overwritten.

${PATHS_NOTE}`,
    flags: SERVER_FLAGS,
    positionals: [1, 2],
    positionalNames: ['the object URI s3://BUCKET/KEY'],
    async run({ values, positionals, io }) {
      const source = parseObjectUri(positionals[0]);
      const client = createClient(values, io);
      const targetPath = await serverPathArgument(client, positionals[1], io);
      const model = await client.clone({ ...source, targetPath });
      return { text: describeObjectClone(model), json: model };
    }
  },
  'fs-clone': {
    usage: `Usage: jupyter store fs-clone RELPATH [TARGET] [options]

Copy a file from the server's shared directory (fs_cloning_basedir; RELPATH is relative
to it) into the server, at TARGET (default: the file's name, in the root). A taken name
becomes name-1.ext, name-2.ext, …: nothing is overwritten.

${PATHS_NOTE}`,
    flags: SERVER_FLAGS,
    positionals: [1, 2],
    positionalNames: ['RELPATH'],
    async run({ values, positionals, io }) {
      const client = createClient(values, io);
      const targetPath = await serverPathArgument(client, positionals[1], io);
      const model = await client.cloneFromFileSystem({ relpath: positionals[0], targetPath });
      return { text: describeFsClone(model), json: model };
    }
  },
  publish: {
    usage: `Usage: jupyter store publish [PATH] [options]

Publish a notebook (default: the notebook of the kernel this runs in) to the server's
published prefix in object storage. The copy published is the one last saved: save first
to include recent changes.

${PATHS_NOTE}`,
    flags: SERVER_FLAGS,
    positionals: [0, 1],
    positionalNames: [],
    async run({ values, positionals, io }) {
      const client = createClient(values, io);
      const notebookPath = await serverPathArgument(client, positionals[0], io);
      const result = await client.publish({ path: notebookPath });
      return { text: describePublished(result), json: result };
    }
  },
  versions: {
    usage: `Usage: jupyter store versions [PATH] [options]

List the archived and published versions of a notebook (default: the notebook of the
kernel this runs in), newest first: all of them, page after page. With --limit N, only
one page, of at most N versions of each copy; when more follow, the page ends with the
command that lists the next one (--next TOKEN).

${PATHS_NOTE}`,
    flags: {
      limit: {
        type: 'string',
        help: `list one page of at most N versions of each copy (1 to ${MAX_VERSIONS_PAGE_LIMIT})`,
        value: 'N'
      },
      next: {
        type: 'string',
        help: 'list the page this token names (printed at the end of the page before)',
        value: 'TOKEN'
      },
      ...SERVER_FLAGS
    },
    positionals: [0, 1],
    positionalNames: [],
    async run({ values, positionals, io }) {
      const limit = parseLimit(values.limit as string | undefined);
      const next = values.next as string | undefined;
      if (next === '') throw new UsageError('--next: give the token the page before printed');
      const client = createClient(values, io);
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
    usage: `Usage: jupyter store diff PATH [BASE] [REMOTE] [options]

Show what changed in a notebook from BASE to REMOTE: the cells added, removed and changed,
their source lines (- removed, + added), and what changed in outputs and metadata. BASE
and REMOTE are refs:
  current                the file on the server's disk
  VERSION_ID             an archived version (jupyter store versions PATH lists them)
  published:VERSION_ID   a published version
REMOTE defaults to current and BASE to the newest archived version: with no refs, the
diff shows what is on disk and not archived yet. Cells are numbered from 0: removed and
changed cells as in BASE, added cells as in REMOTE. With --json, the server's answer:
{path, base, diff, base_ref, remote_ref}, the diff in nbdime's format.

Exit status, as diff's: 0 when the notebooks are equal, 1 when they differ, 2 on errors.

${PATHS_NOTE}`,
    flags: SERVER_FLAGS,
    positionals: [1, 3],
    positionalNames: ['PATH'],
    failureStatus: 2,
    async run({ values, positionals, io }) {
      const [, base, remote] = positionals;
      const client = createClient(values, io);
      const notebookPath = await serverPathArgument(client, positionals[0], io);
      const answer = await client.diff(notebookPath, { base, remote });
      return {
        text: describeNotebookDiff(answer),
        json: answer,
        status: answer.diff.length === 0 ? 0 : 1
      };
    }
  },
  servers: {
    usage: `Usage: jupyter store servers [options]

List the running Jupyter servers, from their records in the Jupyter runtime directory
($JUPYTER_RUNTIME_DIR, else runtime/ in the Jupyter data directory). A jupyter-store
gateway is listed instead of the Jupyter Server behind it.
`,
    flags: OUTPUT_FLAGS,
    positionals: [0, 0],
    positionalNames: [],
    async run({ io }) {
      const env = io.env ?? process.env;
      const runtimeDir = io.client?.runtimeDir ?? jupyterRuntimeDir(env);
      const servers = listRunningServers({ runtimeDir, env });
      return { text: describeServers(servers, runtimeDir), json: servers };
    }
  }
};

function createClient(
  values: Record<string, string | boolean | undefined>,
  io: IStoreCommandIO
): StoreClient {
  const url = values.url as string | undefined;
  const token = values.token as string | undefined;
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
  if (value === undefined) return undefined;
  const limit = /^[1-9][0-9]*$/.test(value) ? Number(value) : NaN;
  if (!(limit <= MAX_VERSIONS_PAGE_LIMIT)) {
    throw new UsageError(
      `--limit: '${value}' is not a whole number from 1 to ${MAX_VERSIONS_PAGE_LIMIT}`
    );
  }
  return limit;
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
      lines.push(
        `    ${version.object_version_id}  ${version.last_modified}  ${version.size} bytes${latest}`
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
  export function realpath(file: string): string {
    try {
      return fs.realpathSync(file);
    } catch {
      return file;
    }
  }
}
