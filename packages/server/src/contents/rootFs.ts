import { randomBytes } from 'node:crypto';
import {
  accessSync,
  constants as fsConstants,
  fstatSync,
  lstatSync,
  readlinkSync,
  statSync,
  type Stats
} from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import pLimit from 'p-limit';
import { hasErrorCode } from '../errors';
import { httpErrors } from '../http/errorCatalogue';

/**
 * File operations that stay inside one directory (the contents root, `fs_cloning_basedir`, …)
 * even while someone swaps the directories on the way for symlinks.
 *
 * #### Notes
 * Checking a path and then using it (`realpath`, then `open` or `rename` by path) leaves a
 * window in which a directory on the way can be replaced by a symlink leading out. Here every
 * operation first opens a descriptor and asks the kernel where that descriptor really is:
 *
 * - a directory is opened (`O_DIRECTORY`, symlinks on the way followed) and
 *   `readlink('/proc/self/fd/<fd>')` must be inside the real root; the entries in it are then
 *   named `/proc/self/fd/<fd>/<name>`, which the kernel resolves from the open directory, not
 *   from its path: renaming or swapping that path afterwards changes nothing. Temporary files,
 *   renames, `mkdir`, `unlink` and removals all happen in such a pinned directory, the last path
 *   component never followed (`O_NOFOLLOW`, `O_EXCL`; `rename`, `unlink`, `mkdir` do not follow).
 * - a file to read is opened, its `/proc/self/fd` path checked, and only that descriptor read.
 *
 * That costs one `readlink` per operation beyond the `open` of the directory, which the
 * durable write needs anyway for its directory fsync. Symlinks that stay inside the root keep
 * working: a write through a link is a write in the directory the link leads to, pinned and
 * checked the same way. A link to nothing (dangling) is never written through.
 *
 * What a descriptor cannot prevent: a directory that is itself moved out of the root between the
 * check and the write takes the write with it. That needs the right to rename that directory,
 * which already gives its mover every file in it; no file elsewhere is reached.
 *
 * Where `/proc/self/fd` cannot name descriptors (not Linux, no `/proc`), the fallback checks
 * that the path, resolved again after the open, is inside the root and leads to the very file
 * or directory opened (same device and inode). That narrows the window but cannot close it.
 */
export class RootFs {
  /**
   * @param rootDir - the directory nothing may leave; its real path is resolved once, on first
   *   use.
   */
  constructor(rootDir: string) {
    this.rootDir = path.resolve(rootDir);
  }

  /** The root, absolute (symlinks not resolved). */
  readonly rootDir: string;

  /** The root with every symlink resolved. */
  async realRoot(): Promise<string> {
    this._realRoot ??= fs.realpath(this.rootDir);
    try {
      return await this._realRoot;
    } catch (error) {
      this._realRoot = undefined;
      throw error;
    }
  }

  /** Is this real (symlink-free) path the root or below it? */
  async contains(realPath: string): Promise<boolean> {
    return isInside(realPath, await this.realRoot());
  }

  /**
   * Open a directory (symlinks on the way followed) and check that the directory opened is
   * inside the root.
   *
   * @throws RootFsError `EOUTSIDEROOT` when it is not; the errors of `open` (ENOENT, ENOTDIR …).
   */
  async openDirectory(osPath: string): Promise<PinnedDir> {
    const handle = await fs.open(osPath, O_RDONLY | O_DIRECTORY);
    return this.pin(handle, osPath);
  }

  /**
   * Open the directory `name` inside a pinned directory, never following a symlink (a link
   * there fails with ELOOP or ENOTDIR).
   */
  async openChild(parent: PinnedDir, name: string): Promise<PinnedDir> {
    const handle = await fs.open(parent.entry(name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    return this.pin(handle, parent.entry(name));
  }

  /**
   * Run `use` with the directory opened and checked, and close it afterwards (without waiting,
   * see {@link PinnedDir.closeSoon}).
   */
  async inDirectory<T>(osPath: string, use: (dir: PinnedDir) => Promise<T>): Promise<T> {
    const dir = await this.openDirectory(osPath);
    try {
      return await use(dir);
    } finally {
      dir.closeSoon();
    }
  }

  /**
   * Run `use` with the item's parent directory opened and checked, and the item's name in it:
   * `dir.entry(name)` names the item itself (a symlink is not followed by rename, unlink, lstat).
   */
  async atEntry<T>(osPath: string, use: (dir: PinnedDir, name: string) => Promise<T>): Promise<T> {
    return this.inDirectory(path.dirname(osPath), dir => use(dir, entryName(osPath)));
  }

  /**
   * Where a write to `osPath` lands: its parent directory, pinned and checked, the name there and
   * the stats of what is there now (undefined when nothing is). A symlink is followed to the
   * place it leads to (as Jupyter writes through links), which must exist and be inside the root.
   *
   * @throws RootFsError `EDANGLINGLINK` for a link to nothing, `EOUTSIDEROOT`.
   */
  async openTarget(
    osPath: string
  ): Promise<{ dir: PinnedDir; name: string; stats: Stats | undefined }> {
    let current = osPath;
    for (let hop = 0; hop <= MAX_LINK_HOPS; hop++) {
      const name = entryName(current);
      // The entry is looked at while the directory's place is checked (a save's hot path); the
      // look counts only if the check passes.
      const { dir, entryStats: stats } = await this.openDirectoryLooking(
        path.dirname(current),
        name
      );
      let real: string | undefined;
      try {
        if (stats?.isSymbolicLink()) {
          try {
            real = await fs.realpath(dir.entry(name));
          } catch (error) {
            if (hasErrorCode(error, 'ENOENT', 'ENOTDIR')) {
              throw new RootFsError('EDANGLINGLINK', 'a symlink that leads to nothing');
            }
            throw error;
          }
        }
      } catch (error) {
        await dir.close();
        throw error;
      }
      if (real === undefined) return { dir, name, stats };
      await dir.close();
      current = real;
    }
    throw new RootFsError('ELOOP', 'too many symlinks');
  }

  /**
   * Open a regular file for reading and check where the descriptor really is.
   *
   * @param options.followSymlinks - follow a symlink at the last component (default true; the
   *   link must lead inside the root); false refuses it (ELOOP).
   * @throws RootFsError `EOUTSIDEROOT`, `EISDIR` for a directory, `ENOTREGULAR` for a FIFO,
   *   socket or device (opened without blocking, never read).
   */
  async openFile(
    osPath: string,
    options: { followSymlinks?: boolean } = {}
  ): Promise<{ handle: fs.FileHandle; stats: Stats; realPath: string }> {
    const flags = O_RDONLY | O_NONBLOCK | (options.followSymlinks === false ? O_NOFOLLOW : 0);
    const handle = await fs.open(osPath, flags);
    try {
      // Both at once: a read is on the hot path.
      const [stats, realPath] = await Promise.all([handle.stat(), this.locate(handle, osPath)]);
      if (stats.isDirectory()) throw new RootFsError('EISDIR', 'a directory, not a file');
      if (!stats.isFile()) throw new RootFsError('ENOTREGULAR', 'not a regular file');
      return { handle, stats, realPath };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** Read a whole regular file through {@link openFile}, with the stats of what was read. */
  async readFile(
    osPath: string,
    options: { followSymlinks?: boolean } = {}
  ): Promise<{ bytes: Buffer; stats: Stats }> {
    const { handle, stats } = await this.openFile(osPath, options);
    try {
      return { bytes: await readAllFrom(handle, 0, stats.size), stats };
    } finally {
      await handle.close();
    }
  }

  /**
   * Write a file all-or-nothing (see {@link writeAtomicIn}) in its pinned directory, through a
   * symlink only to a place inside the root.
   */
  async writeFileAtomic(
    osPath: string,
    data: Buffer | readonly Buffer[],
    options: IWriteOptions = {}
  ): Promise<IWrittenFile> {
    const target = await this.openTarget(osPath);
    try {
      return await writeAtomicIn(target.dir, target.name, target.stats, data, options);
    } finally {
      target.dir.closeSoon();
    }
  }

  /**
   * fsync a file written with `durable: false`, and its directory, so that it survives a power
   * cut. The file may have been replaced or removed since: whatever is there now is synced, and
   * a file that is gone needs nothing (its directory is synced all the same).
   */
  async syncFile(osPath: string): Promise<void> {
    const target = await this.openTarget(osPath);
    try {
      if (target.stats?.isFile()) await syncEntry(target.dir, target.name);
      await target.dir.sync();
    } finally {
      await target.dir.close();
    }
  }

  /**
   * {@link syncFile} for many files at once: each directory is opened, checked and fsynced once,
   * after the files in it, however many there are (a journal settling a burst of saves).
   *
   * @returns the error of each path that could not be synced (its folder gone, outside the
   *   root, EIO …); a file that is gone needs nothing and is no error, as in {@link syncFile}.
   *
   * #### Notes
   * What is at a name is opened without following a link and without blocking (as
   * {@link openFile} opens), and fsynced: three thread-pool round trips a file, where a look
   * first would add a fourth (a directory there is fsynced harmlessly, a FIFO refuses with
   * EINVAL). A symlink is synced through {@link syncFile}, which follows it to its directory.
   *
   * The files go {@link SYNC_CONCURRENCY} at a time: under a burst the event loop is busy and each
   * round trip waits for a turn of it, so that two at a time, a window of 50 files took 0.4-0.6 s
   * in the burst benchmark, where the 50 fsyncs alone take a few ms; libuv's four threads still
   * run them four at a time, so the saves' file writes queue behind at most a few of them.
   */
  async syncFiles(osPaths: Iterable<string>): Promise<Map<string, unknown>> {
    const failed = new Map<string, unknown>();
    const byDirectory = new Map<string, string[]>();
    for (const osPath of osPaths) {
      const directory = path.dirname(osPath);
      const members = byDirectory.get(directory);
      if (members) members.push(osPath);
      else byDirectory.set(directory, [osPath]);
    }
    const limit = pLimit(SYNC_CONCURRENCY);
    const syncMember = async (dir: PinnedDir, osPath: string): Promise<void> => {
      let handle: fs.FileHandle;
      try {
        handle = await fs.open(dir.entry(entryName(osPath)), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
      } catch (error) {
        if (hasErrorCode(error, 'ELOOP')) await this.syncFile(osPath);
        else if (!hasErrorCode(error, 'ENOENT')) throw error;
        return;
      }
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    };
    await Promise.all(
      [...byDirectory].map(async ([directory, members]) => {
        let dir: PinnedDir;
        try {
          dir = await this.openDirectory(directory);
        } catch (error) {
          for (const osPath of members) failed.set(osPath, error);
          return;
        }
        try {
          await Promise.all(
            members.map(osPath =>
              limit(() => syncMember(dir, osPath)).catch((error: unknown) => {
                failed.set(osPath, error);
              })
            )
          );
          await limit(() => dir.sync());
        } finally {
          await dir.close();
        }
      })
    );
    return failed;
  }

  /**
   * Append bytes and make them durable (the later chunks of a chunked upload). A missing file is
   * created as Jupyter does, but only as a new entry of the pinned directory (`O_CREAT | O_EXCL |
   * O_NOFOLLOW`): never through a symlink, so a link to nothing creates nothing.
   *
   * @param options.readBack - return the whole file as it is after the append, read from the
   *   same descriptor.
   */
  async appendFile(
    osPath: string,
    data: Buffer,
    options: { readBack?: boolean } = {}
  ): Promise<Buffer | undefined> {
    const { dir, name, stats } = await this.openTarget(osPath);
    try {
      if (stats?.isDirectory()) throw new RootFsError('EISDIR', 'a directory, not a file');
      if (stats && !stats.isFile()) throw new RootFsError('ENOTREGULAR', 'not a regular file');
      // O_NONBLOCK: a FIFO swapped in fails instead of hanging the request.
      const flags = (options.readBack ? O_RDWR : O_WRONLY) | O_APPEND | O_NOFOLLOW | O_NONBLOCK;
      let handle: fs.FileHandle;
      let created = false;
      if (stats) handle = await fs.open(dir.entry(name), flags);
      else {
        try {
          handle = await fs.open(dir.entry(name), flags | O_CREAT | O_EXCL, 0o666);
          created = true;
        } catch (error) {
          if (!hasErrorCode(error, 'EEXIST')) throw error;
          handle = await fs.open(dir.entry(name), flags);
        }
      }
      let bytes: Buffer | undefined;
      try {
        await writeFully(handle, data, null);
        await handle.sync();
        if (options.readBack) bytes = await readAllFrom(handle, 0, (await handle.stat()).size);
      } finally {
        await handle.close();
      }
      if (created) await dir.sync();
      return bytes;
    } finally {
      await dir.close();
    }
  }

  /** Create an empty file exclusively (never through a symlink); its stats. */
  async createExclusive(osPath: string): Promise<Stats> {
    return this.atEntry(osPath, async (dir, name) => {
      const handle = await fs.open(
        dir.entry(name),
        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
        0o666
      );
      try {
        return await handle.stat();
      } finally {
        await handle.close();
      }
    });
  }

  /** `mkdir` in the pinned parent; `existOk` ignores EEXIST. */
  async mkdir(osPath: string, options: { existOk?: boolean } = {}): Promise<void> {
    await this.atEntry(osPath, async (dir, name) => {
      try {
        await fs.mkdir(dir.entry(name));
      } catch (error) {
        if (!(options.existOk && hasErrorCode(error, 'EEXIST'))) throw error;
      }
    });
  }

  /** `rename(2)` between two pinned directories (neither name is followed). */
  async rename(fromOs: string, toOs: string): Promise<void> {
    if (path.dirname(fromOs) === path.dirname(toOs)) {
      // A rename within one directory (the usual one) pins that directory once.
      await this.atEntry(fromOs, (dir, fromName) =>
        fs.rename(dir.entry(fromName), dir.entry(entryName(toOs)))
      );
      return;
    }
    await this.atEntry(fromOs, (from, fromName) =>
      this.atEntry(toOs, (to, toName) => fs.rename(from.entry(fromName), to.entry(toName)))
    );
  }

  /**
   * Give a regular file a second name: `link(2)` between two pinned directories, neither name
   * followed. The new name must not exist (EEXIST): with {@link unlinkIfSame} afterwards, this is
   * a rename that never replaces anything and never leaves a moment without the file.
   *
   * @returns the file linked (device and inode), for {@link unlinkIfSame}.
   * @throws RootFsError `ENOTREGULAR` for anything but a regular file (a directory, a symlink);
   *   `EPERM` when the old name could not be removed afterwards (its directory not writable, or
   *   sticky and neither it nor the file ours), so that the caller renames and gets rename's own
   *   answer; the errors of `link(2)` (EEXIST, ENOENT, EXDEV, EPERM, EMLINK, ENOTSUP …).
   */
  async link(fromOs: string, toOs: string): Promise<IFileLink> {
    return this.atEntry(fromOs, async (from, fromName) => {
      // Looks on this thread, as the contents manager's (see `statNow` in fileio.ts).
      const stats = lstatSync(from.entry(fromName));
      const dirStats = statSync(from.self);
      let removable = true;
      try {
        accessSync(from.self, fsConstants.W_OK | fsConstants.X_OK);
      } catch {
        removable = false;
      }
      if (!stats.isFile()) throw new RootFsError('ENOTREGULAR', 'not a regular file');
      const uid = process.getuid?.();
      const sticky = (dirStats.mode & S_ISVTX) !== 0;
      if (!removable || (sticky && uid !== 0 && uid !== stats.uid && uid !== dirStats.uid)) {
        throw new RootFsError('EPERM', 'the old name could not be removed afterwards');
      }
      const link = (target: PinnedDir, toName: string) =>
        fs.link(from.entry(fromName), target.entry(toName));
      if (path.dirname(fromOs) === path.dirname(toOs)) await link(from, entryName(toOs));
      else await this.atEntry(toOs, link);
      return { dev: stats.dev, ino: stats.ino };
    });
  }

  /**
   * Remove the name `osPath` only while it still names `file`: a file put there since by someone
   * else (a save that replaced it) is left alone.
   *
   * @returns whether the name was removed; false when it names another file, or nothing.
   *
   * #### Notes
   * Comparing and then unlinking would leave a moment in which a file put there in between is
   * unlinked. Instead the name is first moved aside to a hidden temporary name in the same pinned
   * directory (`rename(2)` is atomic: whatever the name holds moves), the file found there is
   * compared, and only `file` is unlinked; anything else is put back with `link(2)`, which never
   * replaces a file written at the name meanwhile (that newer file then stands, as it would
   * after its own write). A kill between the steps leaves the hidden temporary name behind,
   * never a lost file.
   */
  async unlinkIfSame(osPath: string, file: IFileLink): Promise<boolean> {
    return this.atEntry(osPath, async (dir, name) => {
      const aside = dir.entry(temporaryName());
      try {
        await fs.rename(dir.entry(name), aside);
      } catch (error) {
        if (hasErrorCode(error, 'ENOENT')) return false;
        throw error;
      }
      const stats = lstatSync(aside);
      if (stats.dev === file.dev && stats.ino === file.ino) {
        await fs.unlink(aside);
        return true;
      }
      try {
        await fs.link(aside, dir.entry(name));
      } catch (error) {
        if (!hasErrorCode(error, 'EEXIST')) {
          await fs.rename(aside, dir.entry(name));
          return false;
        }
      }
      await fs.unlink(aside);
      return false;
    });
  }

  /** Unlink a file or symlink (not followed) in its pinned directory. */
  async unlink(osPath: string): Promise<void> {
    await this.atEntry(osPath, (dir, name) => fs.unlink(dir.entry(name)));
  }

  /**
   * Remove a file, a symlink or a whole directory tree. Every directory of the tree is opened
   * without following symlinks, and its entries removed through that descriptor: a directory
   * swapped for a link meanwhile is refused, and only the link could go.
   */
  async remove(osPath: string): Promise<void> {
    await this.atEntry(osPath, (dir, name) => this.removeEntry(dir, name));
  }

  /** Total size of the regular files below a directory; symlinks are not followed. */
  async treeSize(osPath: string): Promise<number> {
    return this.inDirectory(osPath, dir => this.sizeOf(dir, 0));
  }

  /**
   * Copy a directory tree to `toOs` (created, with its missing parents), keeping modes and file
   * times. Symlinks are followed when they lead inside the root (as the copy did with `cp -L`)
   * and left out when they lead out; a directory already on the way down is not entered again.
   * Files are never overwritten (`O_EXCL`).
   */
  async copyTree(fromOs: string, toOs: string): Promise<void> {
    const source = await this.openDirectory(fromOs);
    try {
      const parent = await this.ensureDirectory(path.dirname(toOs), 0);
      try {
        const name = entryName(toOs);
        if (isInside(path.join(parent.realPath, name), source.realPath)) {
          throw new RootFsError('EINVAL', 'a directory cannot be copied into itself');
        }
        await fs.mkdir(parent.entry(name)).catch((error: unknown) => {
          if (!hasErrorCode(error, 'EEXIST')) throw error;
        });
        const target = await this.openChild(parent, name);
        try {
          const chain = [await source.identity()];
          await this.copyContents(source, target, chain);
        } finally {
          await target.close();
        }
      } finally {
        await parent.close();
      }
    } finally {
      await source.close();
    }
  }

  private async removeEntry(dir: PinnedDir, name: string): Promise<void> {
    const stats = await fs.lstat(dir.entry(name));
    if (!stats.isDirectory()) {
      await fs.unlink(dir.entry(name));
      return;
    }
    const child = await this.openChild(dir, name);
    try {
      for (const entry of await fs.readdir(child.self)) await this.removeEntry(child, entry);
    } finally {
      await child.close();
    }
    await fs.rmdir(dir.entry(name));
  }

  private async sizeOf(dir: PinnedDir, depth: number): Promise<number> {
    if (depth > MAX_DEPTH) throw new RootFsError('ELOOP', 'the tree is too deep');
    let total = 0;
    for (const entry of await fs.readdir(dir.self, { withFileTypes: true })) {
      if (entry.isFile()) {
        total += (await lstatOrUndefined(dir.entry(entry.name)))?.size ?? 0;
      } else if (entry.isDirectory()) {
        let child: PinnedDir;
        try {
          child = await this.openChild(dir, entry.name);
        } catch {
          continue;
        }
        try {
          total += await this.sizeOf(child, depth + 1);
        } finally {
          await child.close();
        }
      }
    }
    return total;
  }

  private async copyContents(
    source: PinnedDir,
    target: PinnedDir,
    chain: readonly string[]
  ): Promise<void> {
    if (chain.length > MAX_DEPTH) throw new RootFsError('ELOOP', 'the tree is too deep');
    for (const name of await fs.readdir(source.self)) {
      let stats = await fs.lstat(source.entry(name));
      let real: string | undefined;
      if (stats.isSymbolicLink()) {
        // Following a link that leads outside the root would read outside it: it is left out,
        // as a link to nothing is.
        real = await fs.realpath(source.entry(name)).catch(() => undefined);
        if (real === undefined || !(await this.contains(real))) continue;
        stats = await fs.stat(real);
      }
      if (stats.isDirectory()) {
        const child =
          real === undefined ? await this.openChild(source, name) : await this.openDirectory(real);
        try {
          const identity = await child.identity();
          if (chain.includes(identity)) continue;
          await fs.mkdir(target.entry(name));
          const copy = await this.openChild(target, name);
          try {
            await this.copyContents(child, copy, [...chain, identity]);
          } finally {
            await copy.close();
          }
        } finally {
          await child.close();
        }
      } else {
        const opened = await this.openFile(real ?? source.entry(name), {
          followSymlinks: real !== undefined
        });
        try {
          // The source is the descriptor checked, reopened through /proc: the same inode.
          const from = (await procFdWorks()) ? fdPath(opened.handle.fd) : opened.realPath;
          await fs.copyFile(from, target.entry(name), fsConstants.COPYFILE_EXCL);
          await fs.lutimes(target.entry(name), opened.stats.atime, opened.stats.mtime);
        } finally {
          await opened.handle.close();
        }
      }
    }
  }

  /** Open a directory, creating it and its missing parents inside the root. */
  private async ensureDirectory(osPath: string, depth: number): Promise<PinnedDir> {
    try {
      return await this.openDirectory(osPath);
    } catch (error) {
      const parentOs = path.dirname(osPath);
      if (!hasErrorCode(error, 'ENOENT') || parentOs === osPath || depth > MAX_DEPTH) throw error;
      const parent = await this.ensureDirectory(parentOs, depth + 1);
      try {
        const name = entryName(osPath);
        await fs.mkdir(parent.entry(name)).catch((failure: unknown) => {
          if (!hasErrorCode(failure, 'EEXIST')) throw failure;
        });
        return await this.openChild(parent, name);
      } finally {
        await parent.close();
      }
    }
  }

  /** {@link openDirectory}, with the `lstat` of one entry made through the descriptor. */
  private async openDirectoryLooking(
    osPath: string,
    name: string
  ): Promise<{ dir: PinnedDir; entryStats: Stats | undefined }> {
    const handle = await fs.open(osPath, O_RDONLY | O_DIRECTORY);
    if (!(await procFdWorks())) {
      const dir = await this.pin(handle, osPath);
      try {
        return { dir, entryStats: await lstatOrUndefined(dir.entry(name)) };
      } catch (error) {
        await dir.close();
        throw error;
      }
    }
    try {
      const realPath = await this.locate(handle, osPath);
      // On this thread, as the `readlink` of locate (see there).
      const entryStats = lstatNow(`${fdPath(handle.fd)}/${checkName(name)}`);
      return { dir: new PinnedDir(handle, realPath, true), entryStats };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  private async pin(handle: fs.FileHandle, osPath: string): Promise<PinnedDir> {
    try {
      return new PinnedDir(handle, await this.locate(handle, osPath), await procFdWorks());
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /**
   * The real path of an open descriptor, which must be inside the root.
   *
   * @throws RootFsError `EOUTSIDEROOT`.
   *
   * #### Notes
   * The `readlink` of `/proc/self/fd/<fd>` is made on this thread: it never leaves the kernel
   * (no file system is asked), about 10 µs in the contents benchmark's profile against some
   * 45 µs for a trip to the thread pool, and every operation here makes one in series with its
   * others.
   */
  private async locate(handle: fs.FileHandle, osPath: string): Promise<string> {
    const realRoot = await this.realRoot();
    let where: string | undefined;
    if (await procFdWorks()) {
      const link = readlinkSync(fdPath(handle.fd));
      if (isInside(link, realRoot)) where = link;
      else if (link.endsWith(DELETED) && isInside(link.slice(0, -DELETED.length), realRoot)) {
        // Removed since it was opened, from a place inside the root.
        where = link.slice(0, -DELETED.length);
      }
    } else {
      const real = await fs.realpath(osPath).catch(() => undefined);
      if (real !== undefined && isInside(real, realRoot)) {
        const [opened, found] = await Promise.all([
          handle.stat(),
          fs.stat(real).catch(() => undefined)
        ]);
        if (found && found.dev === opened.dev && found.ino === opened.ino) where = real;
      }
    }
    if (where === undefined) {
      throw new RootFsError('EOUTSIDEROOT', 'the item is outside the directory it must stay in');
    }
    return where;
  }

  private _realRoot: Promise<string> | undefined;
}

/**
 * An open directory: entries are named through its descriptor, so that they are found in this
 * very directory whatever becomes of its path.
 */
export class PinnedDir {
  constructor(
    private readonly handle: fs.FileHandle | undefined,
    /** Where the directory was when it was opened (its real path). */
    readonly realPath: string,
    private readonly viaProc: boolean
  ) {}

  /**
   * A directory named by its path, not opened and not checked, for writers outside any root
   * (the journal, the local store): no cost beyond what a write by path has.
   */
  static byPath(osPath: string): PinnedDir {
    return new PinnedDir(undefined, path.resolve(osPath), false);
  }

  /** A path naming the directory itself. */
  get self(): string {
    return this.viaProc && this.handle ? fdPath(this.handle.fd) : this.realPath;
  }

  /** A path naming `name` (one path component) in this directory. */
  entry(name: string): string {
    return path.join(this.self, checkName(name));
  }

  /** `dev:ino` of the directory. */
  async identity(): Promise<string> {
    const stats = this.handle ? await this.handle.stat() : await fs.stat(this.realPath);
    return `${stats.dev}:${stats.ino}`;
  }

  /**
   * fsync the directory so that a rename or a new entry in it survives a crash.
   *
   * @throws the EIO of a failed write-back (what it should have made durable may be lost);
   *   nothing else.
   */
  async sync(): Promise<void> {
    let opened: fs.FileHandle | undefined;
    try {
      if (this.handle) await this.handle.sync();
      else {
        opened = await fs.open(this.realPath, 'r');
        await opened.sync();
      }
    } catch (error) {
      // Some file systems refuse fsync on directories (EINVAL, ENOTSUP …); the rename itself
      // is still atomic. A failed write-back is not such a refusal.
      if (hasErrorCode(error, 'EIO')) throw error;
    } finally {
      await opened?.close();
    }
  }

  async close(): Promise<void> {
    await this.handle?.close();
  }

  /**
   * Close the directory without waiting for it: the caller is done with it, and nothing waits
   * on a directory's close (it writes nothing back), where waiting costs the operation a trip
   * through the thread pool. A failure to close is ignored, as the descriptor is gone either way.
   *
   * #### Notes
   * Nothing may name an entry through {@link entry} or {@link self} after this: the descriptor's
   * number may be given to another file once it is closed.
   */
  closeSoon(): void {
    this.handle?.close().catch(() => undefined);
  }
}

/** Why a confined operation was refused; `code` as Node's system errors (see `hasErrorCode`). */
export class RootFsError extends Error {
  constructor(
    readonly code:
      'EOUTSIDEROOT' | 'EDANGLINGLINK' | 'ENOTREGULAR' | 'EISDIR' | 'ELOOP' | 'EINVAL' | 'EPERM',
    message: string
  ) {
    super(message);
    this.name = 'RootFsError';
  }
}

/** Options of an atomic write. */
export interface IWriteOptions {
  /** fsync the file and its directory (default true); false keeps only the atomic rename. */
  durable?: boolean;
  /**
   * Access and modification times to give the file. A promise is awaited once the bytes are
   * written, before the file takes its name: a copy can be written while its source still is
   * (see `FileCheckpoints.createIfMissing`). If it rejects, the write fails and leaves nothing;
   * if it resolves undefined, the file keeps the times of its writing.
   */
  times?: IFileTimes | PromiseLike<IFileTimes | undefined>;
}

/** Access and modification times of a file. */
export interface IFileTimes {
  readonly atime: Date;
  readonly mtime: Date;
}

/** What an atomic write did, for a caller that must repair it after a power cut. */
export interface IWrittenFile {
  /** Were the bytes and the new name fsynced (or the file written in place and fsynced)? */
  readonly durable: boolean;
  /** The new file as written, for a write that is not durable. */
  readonly after?: IFileIdentity;
  /** What was at the name before: inode, size and modification time (ms); null for nothing. */
  readonly before: IFileIdentity | null;
}

/** A file named by {@link RootFs.link}: its device and inode. */
export interface IFileLink {
  readonly dev: number;
  readonly ino: number;
}

/** Enough of a file's stats to tell whether it is still the same, unchanged file. */
export interface IFileIdentity {
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
}

/**
 * Crash-safe writing of `name` in a pinned directory: a hidden temporary file created there
 * exclusively (never through a symlink), fsynced, renamed over the name, and the directory
 * fsynced, so that a reader sees the old bytes or the new ones. Mode and ownership of an
 * existing file are kept. A file whose directory is read-only is rewritten in place, as Jupyter
 * does (opened without following a symlink, never created).
 *
 * @param existing - the stats of what is at `name` now (undefined when nothing is).
 */
export async function writeAtomicIn(
  dir: PinnedDir,
  name: string,
  existing: Stats | undefined,
  data: Buffer | readonly Buffer[],
  options: IWriteOptions = {}
): Promise<IWrittenFile> {
  if (existing?.isDirectory()) {
    throw httpErrors.badType(`${name} is a directory`);
  }
  const durable = options.durable !== false;
  const temporary = dir.entry(temporaryName());
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(
      temporary,
      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
      existing ? existing.mode & 0o7777 : 0o666
    );
  } catch (error) {
    // A writable file in a read-only directory: Jupyter writes it in place, and so do we.
    if (existing && hasErrorCode(error, 'EACCES', 'EPERM', 'EROFS')) {
      await writeInPlace(dir.entry(name), data, options);
      return { durable: true, before: identityOf(existing) };
    }
    throw error;
  }
  let after: IFileIdentity | undefined;
  try {
    await writeAll(handle, data);
    if (existing) await keepOwnership(handle, existing);
    const times = await options.times;
    if (times) await handle.utimes(times.atime, times.mtime);
    if (durable) await handle.sync();
    // A look at the descriptor, on this thread (as the manager's looks, see `statNow`).
    else after = identityOf(fstatSync(handle.fd));
  } catch (error) {
    await handle.close().catch(() => undefined);
    await fs.rm(temporary, { force: true });
    throw error;
  }
  await handle.close();
  try {
    await fs.rename(temporary, dir.entry(name));
  } catch (error) {
    await fs.rm(temporary, { force: true });
    throw error;
  }
  if (durable) await dir.sync();
  return { durable, after, before: existing ? identityOf(existing) : null };
}

/**
 * A hidden name for a temporary file: short and fixed in shape, so that the longest legal target
 * name still fits, and of the shape the archive's filter leaves out.
 */
function temporaryName(): string {
  return `.~jupyter-store-${randomBytes(8).toString('hex')}.tmp`;
}

function identityOf(stats: Stats): IFileIdentity {
  return { ino: stats.ino, size: stats.size, mtimeMs: stats.mtimeMs };
}

/** Is `candidate` the root or below it (both real, absolute paths)? */
export function isInside(candidate: string, root: string): boolean {
  return (
    candidate === root || candidate.startsWith(root.endsWith(path.sep) ? root : root + path.sep)
  );
}

/** Does `/proc/self/fd/<fd>` name open descriptors here? Probed once. */
export function procFdWorks(): Promise<boolean> {
  procFdProbe ??= (async () => {
    if (process.platform !== 'linux') return false;
    let handle: fs.FileHandle | undefined;
    try {
      handle = await fs.open('/', O_RDONLY | O_DIRECTORY);
      if ((await fs.readlink(fdPath(handle.fd))) !== '/') return false;
      return (await fs.lstat(`${fdPath(handle.fd)}/.`)).isDirectory();
    } catch {
      return false;
    } finally {
      await handle?.close();
    }
  })();
  return procFdProbe;
}

/** The sticky bit of a mode (not in `fs.constants`). */
const S_ISVTX = 0o1000;
/** The most files {@link RootFs.syncFiles} syncs at once. */
const SYNC_CONCURRENCY = 16;
const O_RDONLY = fsConstants.O_RDONLY;
const O_WRONLY = fsConstants.O_WRONLY;
const O_RDWR = fsConstants.O_RDWR;
const O_CREAT = fsConstants.O_CREAT;
const O_EXCL = fsConstants.O_EXCL;
const O_TRUNC = fsConstants.O_TRUNC;
const O_APPEND = fsConstants.O_APPEND;
const O_DIRECTORY = fsConstants.O_DIRECTORY ?? 0;
const O_NOFOLLOW = fsConstants.O_NOFOLLOW ?? 0;
const O_NONBLOCK = fsConstants.O_NONBLOCK ?? 0;

/** How many symlinks a write follows to find its target. */
const MAX_LINK_HOPS = 8;

/** The largest single `read` of {@link RootFs.readFile}. */
const MAX_READ_BYTES = 64 * 1024 * 1024;

/** How deep a tree walk (copy, size) goes. */
const MAX_DEPTH = 256;

/** What the kernel appends to the `/proc/self/fd` link of a removed file. */
const DELETED = ' (deleted)';

let procFdProbe: Promise<boolean> | undefined;

function fdPath(fd: number): string {
  return `/proc/self/fd/${fd}`;
}

/** A name of one path component, or EINVAL. */
function checkName(name: string): string {
  if (name === '' || name === '.' || name === '..' || name.includes('/')) {
    throw new RootFsError('EINVAL', 'not a single file name');
  }
  return name;
}

function entryName(osPath: string): string {
  return path.basename(osPath);
}

/** fsync the regular file `name` of a pinned directory (never through a symlink). */
async function syncEntry(dir: PinnedDir, name: string): Promise<void> {
  const handle = await fs.open(dir.entry(name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** {@link lstatOrUndefined} on this thread (as `lstatNow` in fileio.ts, which imports this module). */
function lstatNow(osPath: string): Stats | undefined {
  try {
    return lstatSync(osPath);
  } catch (error) {
    if (hasErrorCode(error, 'ENOENT', 'ENOTDIR')) return undefined;
    throw error;
  }
}

async function lstatOrUndefined(osPath: string): Promise<Stats | undefined> {
  try {
    return await fs.lstat(osPath);
  } catch (error) {
    if (hasErrorCode(error, 'ENOENT', 'ENOTDIR')) return undefined;
    throw error;
  }
}

/**
 * Read from `start` to the end of the file, `size` being its expected length (a file that
 * grew meanwhile is read to its end). A file of the expected size takes one `read`.
 */
async function readAllFrom(handle: fs.FileHandle, start: number, size: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let position = start;
  let total = 0;
  let want = Math.max(size - start, 0) + 1;
  for (;;) {
    const buffer = Buffer.allocUnsafe(Math.min(want, MAX_READ_BYTES));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
    if (bytesRead > 0) chunks.push(buffer.subarray(0, bytesRead));
    position += bytesRead;
    total += bytesRead;
    // Past the expected size, a short read is the end (before it, a file system may read less).
    if (bytesRead === 0 || (bytesRead < buffer.length && total >= size - start)) break;
    want = Math.max(want - bytesRead, 64 * 1024);
  }
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, total);
}

/** Write the whole buffer (`position` null: at the current offset, or the end with O_APPEND). */
async function writeFully(
  handle: fs.FileHandle,
  data: Buffer,
  position: number | null
): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    const { bytesWritten } = await handle.write(
      data,
      offset,
      data.length - offset,
      position === null ? null : position + offset
    );
    offset += bytesWritten;
  }
}

async function writeAll(handle: fs.FileHandle, data: Buffer | readonly Buffer[]): Promise<void> {
  if (Buffer.isBuffer(data)) {
    await handle.writeFile(data);
    return;
  }
  for (const piece of data) await writeFully(handle, piece, null);
}

async function writeInPlace(
  entry: string,
  data: Buffer | readonly Buffer[],
  options: IWriteOptions
): Promise<void> {
  const handle = await fs.open(entry, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_NONBLOCK);
  try {
    await writeAll(handle, data);
    const times = await options.times;
    if (times) await handle.utimes(times.atime, times.mtime);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function keepOwnership(handle: fs.FileHandle, existing: Stats): Promise<void> {
  if (process.getuid?.() !== 0) return;
  await handle.chown(existing.uid, existing.gid).catch(() => undefined);
}
