import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * The calling process's ancestors, and among them the kernel: a kernel is started with the path
 * of its connection file (`kernel-<id>.json`) on its command line, so the nearest ancestor with
 * one names the kernel the code runs in, whatever the kernel's language.
 */

/** One process: its pid, its parent's pid and its command line. */
export interface IProcessInfo {
  readonly pid: number;
  readonly ppid: number;
  readonly argv: readonly string[];
}

/** Where process information comes from (Linux's `/proc`, or a fake in tests). */
export interface IProcessTable {
  /** The process, or undefined when it does not exist or cannot be read. */
  read(pid: number): IProcessInfo | undefined;
}

/** Processes as Linux's `/proc/<pid>/stat` and `/proc/<pid>/cmdline` show them. */
export const procProcessTable: IProcessTable = {
  read(pid: number): IProcessInfo | undefined {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      // `pid (comm) state ppid …`, where comm may hold spaces and parentheses.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ppid = Number(fields[1]);
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      const argv = cmdline.split('\0');
      if (argv.at(-1) === '') argv.pop();
      return { pid, ppid: Number.isInteger(ppid) ? ppid : 0, argv };
    } catch {
      return undefined;
    }
  }
};

/** The most ancestors {@link ancestry} follows: more than any real process tree has. */
const MAX_DEPTH = 128;

/**
 * The process `pid` and its ancestors, nearest first, up to the first that cannot be read (on
 * systems without `/proc`, none can).
 */
export function ancestry(pid: number, table: IProcessTable = procProcessTable): IProcessInfo[] {
  const chain: IProcessInfo[] = [];
  const seen = new Set<number>();
  let current = pid;
  while (current > 0 && !seen.has(current) && chain.length < MAX_DEPTH) {
    seen.add(current);
    const info = table.read(current);
    if (!info) break;
    chain.push(info);
    current = info.ppid;
  }
  return chain;
}

/** A kernel found among the ancestors. */
export interface IKernelProcess {
  /** The kernel id, from the connection file's name. */
  readonly kernelId: string;
  /** The connection file's path. */
  readonly connectionFile: string;
  /** The kernel's pid. */
  readonly pid: number;
}

/**
 * The connection file named on a kernel's command line, in any of the forms kernels take it
 * (`-f FILE`, `--f=FILE`, `--connection-file FILE`, …): an absolute path whose name is
 * `kernel-<id>.json`, and that exists.
 *
 * #### Notes
 * Jupyter always passes an absolute path. Requiring one, and an existing file, keeps a shell
 * command line that merely mentions such a name (`sh -c "… kernel-x.json"`) from passing for a
 * kernel.
 */
export function connectionFileOf(
  argv: readonly string[],
  exists: (file: string) => boolean = isFile
): { kernelId: string; connectionFile: string } | undefined {
  for (const arg of argv) {
    const value = arg.startsWith('-') && arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : arg;
    if (!path.isAbsolute(value)) continue;
    const match = /^kernel-(.+)\.json$/.exec(path.basename(value));
    if (match && exists(value)) return { kernelId: match[1], connectionFile: value };
  }
  return undefined;
}

/**
 * The kernel that runs `pid` (default: this process): `pid` itself or its nearest ancestor
 * started with a connection file.
 */
export function findKernelProcess(
  pid: number = process.pid,
  table: IProcessTable = procProcessTable,
  exists: (file: string) => boolean = isFile
): IKernelProcess | undefined {
  for (const info of ancestry(pid, table)) {
    const found = connectionFileOf(info.argv, exists);
    if (found) return { ...found, pid: info.pid };
  }
  return undefined;
}

function isFile(file: string): boolean {
  try {
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}
