import { lstatSync, statSync, writeFileSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { hasErrorCode } from '../errors';

/**
 * Move a file or directory to the freedesktop.org trash, as Jupyter's default `delete_to_trash`
 * does through send2trash: the home trash when on the same device, else a `.Trash-<uid>`
 * directory at the top of the item's mount.
 *
 * @param osPath - the item's path, as the trash records it.
 * @param options.from - the path to move the item from, when not `osPath`: the contents manager
 *   gives one through the item's opened directory, so that the item moved is the one inside the
 *   root even if a directory on its path is swapped meanwhile.
 */
export async function moveToTrash(
  osPath: string,
  env: NodeJS.ProcessEnv = process.env,
  options: { from?: string } = {}
): Promise<void> {
  const absolute = path.resolve(osPath);
  // What is moved: the item by the path given, or by a path the caller pinned (see RootFs).
  const from = options.from ?? absolute;
  const homeTrash = path.join(
    env.XDG_DATA_HOME || path.join(env.HOME || os.homedir(), '.local', 'share'),
    'Trash'
  );
  // The looks are made on this thread, as the contents manager's (see `statNow` in fileio.ts):
  // a delete makes them in series with its writes.
  const itemDevice = lstatSync(from).dev;
  const homeDevice = deviceOf(homeTrash);
  const trash = homeDevice === itemDevice ? homeTrash : await mountTrash(absolute, itemDevice);
  const filesDir = path.join(trash, 'files');
  const infoDir = path.join(trash, 'info');

  const { name, ext } = path.parse(absolute);
  const base = path.basename(absolute);
  const stamp = new Date();
  const local = new Date(stamp.getTime() - stamp.getTimezoneOffset() * 60_000)
    .toISOString()
    .slice(0, 19);
  const location = trash === homeTrash ? absolute : path.relative(path.dirname(trash), absolute);
  const info = `[Trash Info]\nPath=${encodeURI(location).replace(/[?#]/g, encodeURIComponent)}\nDeletionDate=${local}\n`;
  // The trash directories are made only when missing (send2trash checks them every time), so
  // that a delete costs the trash two writes: its info file and the rename.
  const makeTrash = async (): Promise<void> => {
    await fs.mkdir(filesDir, { recursive: true, mode: 0o700 });
    await fs.mkdir(infoDir, { recursive: true, mode: 0o700 });
  };
  // send2trash's sequence: the name, then `name 1.ext`, `name 2.ext`, …, skipping a name taken
  // in either directory.
  for (let counter = 0; ; counter++) {
    const entry = counter === 0 ? base : `${name} ${counter}${ext}`;
    const infoFile = path.join(infoDir, `${entry}.trashinfo`);
    const target = path.join(filesDir, entry);
    if (!(await claimInfo(infoFile, info, makeTrash))) continue;
    if (exists(target)) {
      await fs.rm(infoFile, { force: true });
      continue;
    }
    try {
      await fs.rename(from, target).catch(async (error: unknown) => {
        // The files directory alone may be gone; the item itself is still there.
        if (!hasErrorCode(error, 'ENOENT') || !exists(from)) throw error;
        await makeTrash();
        await fs.rename(from, target);
      });
    } catch (error) {
      await fs.rm(infoFile, { force: true });
      throw error;
    }
    return;
  }
}

/**
 * Create the info file of a trash entry exclusively; false when the name is taken. A missing
 * trash is made (`makeTrash`) and the creation tried again.
 *
 * #### Notes
 * The file (a hundred bytes, never fsynced, as send2trash writes it) is written on this thread:
 * an `open`, a `write` and a `close` through the thread pool were three trips of some 45 µs
 * each, in series, where the three calls take about 20 µs; this was the largest part of a
 * delete after its `rename`. The trade-off is the contents manager's looks' (see `statNow` in
 * fileio.ts): with the trash in a home directory on a slow network file system, the event loop
 * waits for those three calls.
 */
async function claimInfo(
  infoFile: string,
  info: string,
  makeTrash: () => Promise<void>
): Promise<boolean> {
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(infoFile, info, { flag: 'wx' });
      return true;
    } catch (error) {
      if (hasErrorCode(error, 'EEXIST')) return false;
      if (attempt > 0 || !hasErrorCode(error, 'ENOENT')) throw error;
      await makeTrash();
    }
  }
}

function exists(osPath: string): boolean {
  try {
    lstatSync(osPath);
    return true;
  } catch {
    return false;
  }
}

function deviceOf(candidate: string): number | undefined {
  for (let probe = candidate; ; probe = path.dirname(probe)) {
    try {
      return statSync(probe).dev;
    } catch {
      if (path.dirname(probe) === probe) return undefined;
    }
  }
}

async function mountTrash(absolute: string, device: number): Promise<string> {
  let top = absolute;
  while (path.dirname(top) !== top && statSync(path.dirname(top)).dev === device) {
    top = path.dirname(top);
  }
  const uid = process.getuid?.() ?? 0;
  return path.join(top, `.Trash-${uid}`);
}
