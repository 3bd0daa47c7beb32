import * as fs from 'node:fs';
import * as path from 'node:path';
import type { StoreConnection } from './connection';
import { CurrentNotebookError } from './errors';
import { findKernelProcess, procProcessTable, type IProcessTable } from './processTree';
import { SessionListSchema, toSession, type ILiveServerRecord, type ISession } from './records';

/**
 * The notebook the calling code belongs to, found through Jupyter's sessions API from what a
 * kernel knows about itself.
 */

/** What {@link findCurrentSession} may look at. */
export interface ICurrentSessionOptions {
  /** The environment; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** The process table; default `/proc` (Linux). */
  processTable?: IProcessTable;
  /** The process whose kernel is wanted; default this process. */
  startPid?: number;
  /** Whether a file exists (to recognise connection files); default the file system. */
  fileExists?: (file: string) => boolean;
}

/** Every session the server has (`GET {base}api/sessions`). */
export async function listSessions(connection: StoreConnection): Promise<ISession[]> {
  const models = await connection.request('GET', 'api/sessions', {
    expect: 200,
    schema: SessionListSchema
  });
  return models.map(toSession);
}

/**
 * The notebook session of the calling kernel on `server`.
 *
 * 1. The kernel id: the nearest ancestor process (or this one) started with a connection file
 *    `kernel-<id>.json`. The sessions on that kernel are its notebooks; a console or an editor
 *    attached to the same kernel does not count.
 * 2. Otherwise `$JPY_SESSION_NAME`, the notebook Jupyter Server started the kernel for (the
 *    file-system path below the server's root, or the server path itself).
 *
 * #### Notes
 * The kernel id wins because it follows renames and sees every notebook on the kernel, while
 * `$JPY_SESSION_NAME` is fixed when the kernel starts.
 *
 * @throws CurrentNotebookError when several notebooks share the kernel (listing them), or no
 *   notebook can be found; either way the caller should give a path.
 */
export async function findCurrentSession(
  connection: StoreConnection,
  server: Pick<ILiveServerRecord, 'url' | 'root_dir'>,
  options: ICurrentSessionOptions = {}
): Promise<ISession> {
  const env = options.env ?? process.env;
  const kernel = findKernelProcess(
    options.startPid ?? process.pid,
    options.processTable ?? procProcessTable,
    options.fileExists
  );
  const sessionName = env.JPY_SESSION_NAME || undefined;
  if (!kernel && !sessionName) {
    throw new CurrentNotebookError(
      'This does not run inside a Jupyter kernel (no kernel connection file among its parent ' +
        'processes, no JPY_SESSION_NAME), so there is no current notebook: give a path'
    );
  }
  const sessions = await listSessions(connection);

  if (kernel) {
    const onKernel = sessions.filter(session => session.kernel.id === kernel.kernelId);
    const notebooks = uniqueByPath(onKernel.filter(session => session.type === 'notebook'));
    if (notebooks.length === 1) return notebooks[0];
    if (notebooks.length > 1) {
      const paths = notebooks.map(session => session.path).sort();
      throw new CurrentNotebookError(
        `${paths.length} notebooks share this kernel (${paths.join(', ')}), so which one is ` +
          'meant cannot be told: give its path',
        paths
      );
    }
  }

  if (sessionName) {
    const wanted = Private.serverPath(sessionName, server.root_dir);
    const named = sessions.filter(session => session.path === wanted);
    if (named.length > 0) return named[0];
    throw new CurrentNotebookError(
      `The kernel was started for ${wanted ?? sessionName} (JPY_SESSION_NAME), but the server ` +
        'has no session with that path (was the notebook renamed or closed?): give a path'
    );
  }
  throw new CurrentNotebookError(
    `No notebook on ${server.url} uses this kernel (${kernel?.kernelId}): give a path`
  );
}

function uniqueByPath(sessions: ISession[]): ISession[] {
  const seen = new Set<string>();
  return sessions.filter(session => !seen.has(session.path) && seen.add(session.path));
}

namespace Private {
  /**
   * `$JPY_SESSION_NAME` as a server path. Jupyter Server sets it to the notebook's file-system
   * path (the kernel's working directory joined with the notebook's name) when it knows the
   * name, else to the server path it was given.
   */
  export function serverPath(sessionName: string, rootDir: string): string | undefined {
    if (!path.isAbsolute(sessionName)) return sessionName.replace(/^\/+/, '');
    if (rootDir === '') return undefined;
    for (const root of [rootDir, realpath(rootDir)]) {
      for (const file of [sessionName, realpath(sessionName)]) {
        const relative = path.relative(root, file);
        if (relative !== '' && relative.split(path.sep)[0] !== '..' && !path.isAbsolute(relative)) {
          return relative.split(path.sep).join('/');
        }
      }
    }
    return undefined;
  }

  function realpath(file: string): string {
    try {
      return fs.realpathSync(file);
    } catch {
      return file;
    }
  }
}
