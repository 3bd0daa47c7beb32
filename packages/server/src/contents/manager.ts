import type { CheckpointModel, ContentsModel, ContentsType } from '@jupyter-store/contract';
import { createHash } from 'node:crypto';
import type { Stats } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { HttpError, hasErrorCode } from '../errors';
import { httpErrors } from '../http/errorCatalogue';
import { errnoError } from '../http/errors';
import { FileCheckpoints, CHECKPOINT_DIR } from './checkpoints';
import { canAccessNow, lstatNow, statNow, statOrUndefined } from './fileio';
import { DEFAULT_HIDE_GLOBS, compileGlobs, isHidden, isItemHidden } from './hidden';
import {
  baseModel,
  decodeBase64Lenient,
  encodeBase64Lines,
  guessMimeType,
  isNotebookName
} from './model';
import { UNTITLED_NAMES, copySourceName, incrementName } from './naming';
import {
  type INotebookFacts,
  NotebookParseError,
  newNotebook,
  prepareValidation,
  readNotebook,
  serializeNotebook,
  type NotebookNode
} from '@jupyter-store/nbformat';
import { baseName, joinApiPath, normalizeApiPath, parentPath, RootResolver } from './paths';
import {
  RootFs,
  type IFileIdentity,
  type IFileLink,
  type IWrittenFile,
  type PinnedDir
} from './rootFs';
import { moveToTrash } from './trash';
import { NotebookNotary, type ISignature } from './trust';
import { VersionCheckpoints } from './versionCheckpoints';

/** What the save hook receives after every successful save. */
export interface ISavedEvent {
  /** API path of the saved item. */
  readonly path: string;
  /** Its model type. */
  readonly type: 'file' | 'notebook';
  /** Exactly the bytes now on disk. */
  readonly bytes: Buffer;
  /** When the save finished (ms since the epoch). */
  readonly savedAt: number;
  /**
   * The file as written: not yet fsynced when a journalling hook is installed (see
   * {@link AwaitedSaveHook}), with what was at the path before, to repair it after a power cut.
   */
  readonly written?: IWrittenSave;
  /**
   * The notebook's signature, when the save trusted it and its database write may still be on
   * its way (a journalling hook records it, and the notary restores it after a crash).
   */
  readonly signature?: ISignature;
}

/** A save written without fsyncs, and what a repair needs to tell whether it reached the disk. */
export interface IWrittenSave {
  /** The new file as written. */
  readonly after?: IFileIdentity;
  /** What was at the path before the save; null for nothing. */
  readonly before: IFileIdentity | null;
}

/** A save hook listener. It runs after the save is answered and must not throw or block. */
export type SaveListener = (event: ISavedEvent) => void;

/**
 * A save hook the save waits for (the archive journal), before the save is answered. If it
 * rejects, the save answers 503: the bytes are on disk, but what the hook promises (an archive)
 * is not guaranteed, so the user is told to save again.
 *
 * #### Notes
 * A hook added with `journals: true` is a write-ahead log: while one is installed, a save writes
 * its file without fsyncs and does not wait for its signature's database commit, and the hook
 * resolves `true` once it holds the bytes (and the event's `written` and `signature`) durably.
 * A save no hook answers `true` for (unchanged bytes, a path the archive does not cover) is made
 * durable by the manager itself before it is answered: one fsync on the answer path, not four.
 */
export type AwaitedSaveHook = (event: ISavedEvent) => Promise<boolean | void>;

/**
 * A change the manager made, as Jupyter's `contents_service` events name them: every successful
 * save (files, notebooks, directories, uploads, new untitled items), copy, rename and delete.
 * Listeners run after the change is done and must not throw or block.
 */
export type ContentsChange =
  | { readonly action: 'save'; readonly path: string }
  | { readonly action: 'copy'; readonly from: string; readonly to: string }
  | { readonly action: 'rename'; readonly from: string; readonly to: string }
  | { readonly action: 'delete'; readonly path: string };

/**
 * A listener of {@link ContentsManager.onChanged}. An announcing one returns a promise that
 * resolves once the change was announced; the others return nothing.
 */
export type ChangeListener = (change: ContentsChange) => void | Promise<void>;

/** Options of a save or create call. */
export interface ISaveRequest {
  type?: string | null;
  format?: string | null;
  content?: unknown;
  chunk?: number;
}

/**
 * A contents manager over one root directory that behaves like Jupyter Server 2's
 * `AsyncFileContentsManager` with `AsyncLargeFileManager` (chunked uploads): the same models,
 * status codes, naming, hidden-file rules, checkpoint layout, notebook bytes and trust.
 *
 * #### Notes
 * Deviations, all on the safe side, are listed in the README: symlinks that lead outside the
 * root are refused, writes are temp-file-and-rename, messages name API paths instead of OS paths.
 * Every read, write, listing, copy, rename and delete goes through {@link RootFs}, which checks
 * the descriptor it opened, so that swapping a directory for a symlink meanwhile cannot lead it
 * out of the root; nothing is ever written through a symlink that leads to nothing.
 */
export class ContentsManager {
  constructor(options: ContentsManager.IOptions) {
    this.resolver = new RootResolver(options.rootDir);
    this.files = new RootFs(options.rootDir);
    this.checkpoints = new FileCheckpoints(this.resolver, this.files);
    this.notary = options.notary;
    this.allowHidden = options.allowHidden ?? false;
    this.deleteToTrash = options.deleteToTrash ?? true;
    this.alwaysDeleteDir = options.alwaysDeleteDir ?? false;
    this.hashAlgorithm = options.hashAlgorithm ?? 'sha256';
    this.maxCopyFolderBytes = (options.maxCopyFolderSizeMb ?? 500) * 1024 * 1024;
    this.shouldHide = compileGlobs(options.hideGlobs ?? DEFAULT_HIDE_GLOBS);
    this.log = options.log ?? (message => process.stderr.write(`[jupyter-store] ${message}\n`));
    this.announceTimeoutMs = options.announceTimeoutMs ?? 2000;
  }

  /** The root directory, absolute. */
  get rootDir(): string {
    return this.resolver.rootDir;
  }

  /** Subscribe to saves; returns a function that unsubscribes. */
  onSaved(listener: SaveListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Subscribe to changes (see {@link ContentsChange}); returns a function that unsubscribes.
   *
   * @param options.announces - the listener tells another process of each change (Python's
   *   event bus) and returns a promise that resolves once that process has taken it in. While
   *   such a listener is subscribed, a file is renamed by giving it its new name first and
   *   removing the old one only after that promise (see {@link rename}).
   */
  onChanged(listener: ChangeListener, options: { announces?: boolean } = {}): () => void {
    const subscription = { listener, announces: options.announces === true };
    this.changeListeners.add(subscription);
    return () => this.changeListeners.delete(subscription);
  }

  /**
   * Add a write gate: called with an API path before the manager (or a caller that reserves a
   * name through {@link beginWrite}) writes it, it returns the function to call when the write
   * is over. The archive uses it so that its watcher does not mistake the gateway's own writes,
   * half done, for another writer's.
   */
  addWriteGate(gate: (apiPath: string) => () => void): () => void {
    this.writeGates.add(gate);
    return () => this.writeGates.delete(gate);
  }

  /** Announce a write of `apiPath` to the write gates; call the result when it is over. */
  beginWrite(apiPath: string): () => void {
    const normalized = normalizeApiPath(apiPath);
    const releases = [...this.writeGates].map(gate => gate(normalized));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const release of releases) release();
    };
  }

  /**
   * Add a save hook that every save waits for; returns a function that removes it.
   *
   * @param options.journals - the hook journals saves durably (see {@link AwaitedSaveHook}).
   */
  addSaveHook(hook: AwaitedSaveHook, options: { journals?: boolean } = {}): () => void {
    this.hooks.add(hook);
    if (options.journals) this.journals.add(hook);
    return () => {
      this.hooks.delete(hook);
      this.journals.delete(hook);
    };
  }

  /**
   * Make saves that a journalling hook recorded durable on their own, so that the journal may
   * forget them: fsync each file (whatever is at its path now) and its directory, and wait for
   * the signatures' commits.
   *
   * #### Notes
   * The journal hands over a window of saves at once: a path saved several times in it is
   * synced once (the file there now is the newest save's, or a later one's), and a directory
   * once for all its files ({@link RootFs.syncFiles}). The paths are not resolved first: the
   * pinned directories refuse a place outside the root, and follow a link inside it.
   */
  async settleJournalled(
    saves: readonly { path: string; written?: unknown; signature?: unknown }[]
  ): Promise<void> {
    const osPaths = new Set<string>();
    for (const save of saves) {
      if (!save.written) continue;
      try {
        osPaths.add(this.resolver.osPath(save.path));
      } catch {
        // Not a path the manager could have written: nothing of it to sync.
      }
    }
    const failed = await this.files.syncFiles(osPaths);
    for (const error of failed.values()) {
      // Only a failed write-back keeps the records: anything else (the file or its folder
      // gone, replaced by a directory or a link leading out) means that what is there now is
      // not what the save wrote, and a record kept for it would never settle.
      if (hasErrorCode(error, 'EIO')) throw error;
    }
    if (saves.some(save => save.signature)) await this.notary?.flushed();
  }

  /**
   * After a crash, finish the saves a journalling hook holds but the disk may not: restore
   * their signatures, and rewrite a file whose save did not reach the disk (what is there is
   * still what was there before it, or the save's own file, torn). A file someone changed since
   * is left alone; so is a path whose newest record is not a save.
   *
   * @param records - the journal's records left by the earlier run, in journal order.
   */
  async recoverJournalled(
    records: readonly {
      path: string;
      action?: string;
      content: Buffer;
      sha256: string;
      written?: IWrittenSave;
      signature?: ISignature;
    }[]
  ): Promise<void> {
    const signatures = records.flatMap(record => (record.signature ? [record.signature] : []));
    if (signatures.length > 0 && this.notary) {
      try {
        await this.notary.restoreSignatures(signatures);
      } catch (error) {
        this.log(`could not restore ${signatures.length} notebook signatures: ${String(error)}`);
      }
    }
    const newest = new Map(records.map(record => [record.path, record]));
    for (const record of newest.values()) {
      if (record.action === 'delete' || !record.written) continue;
      try {
        const osPath = await this.resolver.resolve(record.path);
        let found: { bytes: Buffer; stats: Stats } | undefined;
        try {
          found = await this.files.readFile(osPath);
        } catch (error) {
          if (!hasErrorCode(error, 'ENOENT', 'ENOTDIR')) throw error;
        }
        if (!Private.saveWasLost(record.written, found, record.sha256)) continue;
        this.log(`${record.path}: rewriting a save that a crash kept from reaching the disk`);
        await this.files.writeFileAtomic(osPath, record.content);
      } catch (error) {
        this.log(`${record.path}: could not check the last save after a crash: ${String(error)}`);
      }
    }
  }

  /** Is the API path hidden (and so not served unless hidden files are allowed)? */
  async isHidden(apiPath: string): Promise<boolean> {
    if (this.allowHidden) return false;
    const normalized = normalizeApiPath(apiPath);
    return isHidden(normalized, this.resolver.osPath(normalized));
  }

  /** Is there a regular file (symlinks followed) at the API path? */
  async fileExists(apiPath: string): Promise<boolean> {
    return this.resolvedNow(apiPath, statNow)?.isFile() ?? false;
  }

  /** Is there a directory (symlinks followed) at the API path? */
  async dirExists(apiPath: string): Promise<boolean> {
    return this.resolvedNow(apiPath, statNow)?.isDirectory() ?? false;
  }

  /** Does anything exist at the API path? */
  async exists(apiPath: string): Promise<boolean> {
    return this.resolvedNow(apiPath, lstatNow) !== undefined;
  }

  /**
   * Create an empty file at the API path exclusively (`O_EXCL`, never through a symlink, in its
   * directory checked to be inside the root), to reserve the name; returns its identity.
   *
   * @throws the `open` error as is (EEXIST when the name is taken, ENOENT …); 404 `outside root`.
   */
  async createEmptyFile(apiPath: string): Promise<{ dev: number; ino: number }> {
    const normalized = normalizeApiPath(apiPath);
    try {
      const stats = await this.files.createExclusive(this.resolver.osPath(normalized));
      return { dev: stats.dev, ino: stats.ino };
    } catch (error) {
      if (hasErrorCode(error, 'EOUTSIDEROOT')) throw fileError(error, normalized, 'creating');
      throw error;
    }
  }

  /**
   * Remove the file at the API path if it is still the empty file {@link createEmptyFile} made
   * (a failed reservation); anything else there is left alone. Never fails.
   */
  async removeEmptyFile(apiPath: string, identity: { dev: number; ino: number }): Promise<void> {
    const osPath = this.resolver.osPath(normalizeApiPath(apiPath));
    await this.files
      .atEntry(osPath, async (dir, name) => {
        const now = await fs.lstat(dir.entry(name));
        if (now.dev === identity.dev && now.ino === identity.ino && now.size === 0) {
          await fs.unlink(dir.entry(name));
        }
      })
      .catch(() => undefined);
  }

  /**
   * The model of an item.
   *
   * @param options.type - the type the caller expects; a mismatch is a 400 `bad type`.
   * @param options.format - `text` or `base64` for files; undefined tries UTF-8 then base64.
   */
  async get(apiPath: string, options: ContentsManager.IGetOptions = {}): Promise<ContentsModel> {
    const normalized = normalizeApiPath(apiPath);
    const lstats = this.resolvedNow(normalized, lstatNow);
    const osPath = this.resolver.osPath(normalized);
    // Made only when thrown: an error captures a stack, which every answered get would pay for.
    const notFound = () => httpErrors.notFound(`file or directory does not exist: '${normalized}'`);
    if (!lstats) throw notFound();
    const stats = lstats.isSymbolicLink() ? statNow(osPath) : lstats;
    if (!this.allowHidden && (await isHidden(normalized, osPath, stats))) throw notFound();
    const content = options.content ?? true;
    if (stats?.isDirectory()) {
      if (options.hash) {
        // Jupyter fails with a 500 here (its model check wants a hash no directory has).
        throw httpErrors.badHash(`${normalized} is a directory, which has no hash`);
      }
      if (options.type && options.type !== 'directory') {
        throw httpErrors.badType(`${normalized} is a directory, not a ${options.type}`);
      }
      return this.directoryModel(normalized, osPath, lstats, content);
    }
    if (options.type === 'notebook' || (!options.type && isNotebookName(normalized))) {
      return this.notebookModel(normalized, osPath, lstats, content, options.hash ?? false);
    }
    if (options.type === 'directory') {
      throw httpErrors.badType(`${normalized} is not a directory`);
    }
    return this.fileModel(
      normalized,
      osPath,
      lstats,
      content,
      options.format,
      options.hash ?? false
    );
  }

  /**
   * PUT: save over an existing file, or create a new item. Returns the model without content and
   * whether the item was created.
   */
  async put(
    apiPath: string,
    request: ISaveRequest
  ): Promise<{ model: ContentsModel; created: boolean }> {
    const normalized = normalizeApiPath(apiPath);
    const type = normalizeType(request.type);
    const existed = await this.fileExists(normalized);
    const model = existed
      ? await this.save(normalized, { ...request, type })
      : await this.create(normalized, { ...request, type });
    return { model, created: !existed };
  }

  /** Create an item at an exact path (`new` in Jupyter): defaults fill a missing content. */
  async create(apiPath: string, request: ISaveRequest): Promise<ContentsModel> {
    const normalized = normalizeApiPath(apiPath);
    const type = request.type || (isNotebookName(normalized) ? 'notebook' : 'file');
    if (request.content === undefined && type !== 'directory') {
      if (type === 'notebook') {
        return this.save(normalized, { type, content: newNotebook(), format: 'json' });
      }
      return this.save(normalized, { type: 'file', content: '', format: 'text' });
    }
    return this.save(normalized, { ...request, type });
  }

  /** Save a model at a path, as Jupyter's `save` (with chunked uploads). */
  async save(apiPath: string, request: ISaveRequest): Promise<ContentsModel> {
    // Saves of one path run one at a time, so that the order their bytes reach the disk is the
    // order the save hooks (the archive journal) see them: the newest archive is the file on disk.
    const key = normalizeApiPath(apiPath);
    const previous = this.saveLocks.get(key) ?? Promise.resolve();
    const current = previous.then(async () => {
      const release = this.beginWrite(key);
      try {
        return await this.saveNow(apiPath, request);
      } finally {
        release();
      }
    });
    const settled = current.then(
      () => undefined,
      () => undefined
    );
    this.saveLocks.set(key, settled);
    void settled.then(() => {
      if (this.saveLocks.get(key) === settled) this.saveLocks.delete(key);
    });
    return current;
  }

  private async saveNow(apiPath: string, request: ISaveRequest): Promise<ContentsModel> {
    const normalized = normalizeApiPath(apiPath);
    if (!request.type) throw httpErrors.badRequest('No file type provided');
    if (request.content === undefined && request.type !== 'directory') {
      throw httpErrors.badRequest('No file content provided');
    }
    const chunk = request.chunk;
    if (chunk !== undefined && chunk !== null && request.type !== 'file') {
      throw httpErrors.badRequest(`Only files may be uploaded in chunks, not ${request.type}`);
    }
    if (normalized === '' && request.type !== 'directory') {
      throw httpErrors.badRequest('Cannot save over the root directory');
    }
    const osPath = await this.resolver.resolve(normalized);
    await this.checkParentDirectory(normalized);
    let validationMessage: string | undefined;
    let saved: Buffer | undefined;
    // With a journal installed, a whole save is written without fsyncs: the journal makes it
    // durable (see AwaitedSaveHook).
    const journalled = this.journals.size > 0;
    let written: IWrittenSave | undefined;
    let signing: { signature: ISignature; written: Promise<void> } | undefined;
    try {
      if (request.type === 'notebook') {
        const notebook = asNotebook(request.content);
        const serialized = await this.serializeNotebook(normalized, notebook, journalled);
        const bytes = serialized.bytes;
        validationMessage = serialized.validationMessage;
        signing = serialized.signing;
        const writing = this.files.writeFileAtomic(osPath, bytes, { durable: !journalled });
        // Its first checkpoint, if it has none, is written meanwhile (see createIfMissing).
        // Marked as handled at once: it may fail while the write is still under way, before it
        // is awaited (an unhandled rejection would end the process).
        const checkpointing = settledLater(
          this.checkpoints.createIfMissing(normalized, bytes, writing)
        );
        try {
          written = Private.notDurable(await writing);
        } catch (error) {
          await checkpointing.catch(() => undefined);
          throw error;
        }
        saved = bytes;
        await checkpointing;
      } else if (request.type === 'file') {
        const bytes = decodeFileContent(normalized, request.content, request.format);
        const whole = chunk === undefined || chunk === null;
        if (whole || chunk === 1) {
          // The first chunk of an upload is no save yet: nothing journals it.
          written = Private.notDurable(
            await this.files.writeFileAtomic(osPath, bytes, { durable: !(journalled && whole) })
          );
          if (whole) saved = bytes;
        } else {
          // The last chunk reports the whole file, read back from the descriptor appended to.
          saved = await this.files.appendFile(osPath, bytes, { readBack: chunk === -1 });
        }
      } else if (request.type === 'directory') {
        await this.saveDirectory(normalized, osPath);
      } else {
        throw httpErrors.badType(`Unhandled contents type: ${request.type}`);
      }
    } catch (error) {
      void signing?.written.catch(() => undefined);
      throw fileError(error, normalized, 'saving');
    }
    // Whatever happens next, a signature that could not be committed is reported once.
    const signed = signing?.written.then(
      () => true,
      (error: unknown) => {
        this.logUnsigned(normalized, error);
        return false;
      }
    );
    const model = await this.get(normalized, { content: false });
    if (validationMessage) model.message = validationMessage;
    let carried = false;
    if (saved && request.type !== 'directory') {
      const event: ISavedEvent = {
        path: normalized,
        type: request.type as 'file' | 'notebook',
        bytes: saved,
        savedAt: Date.now(),
        ...(written ? { written } : {}),
        ...(signing ? { signature: signing.signature } : {})
      };
      for (const hook of this.hooks) {
        try {
          if ((await hook(event)) === true && this.journals.has(hook)) carried = true;
        } catch (error) {
          throw httpErrors.archiveUnavailable(
            `${normalized} was saved, but could not be queued for archiving ` +
              `(${(error as Error).message}); save again to retry`
          );
        }
      }
      this.emitSaved(event);
    }
    if (!carried) {
      // No journal holds this save: it is made durable here before it is answered.
      if (written) {
        try {
          await this.files.syncFile(osPath);
        } catch (error) {
          // Removed (or its folder) since it was written: nothing of this save is left to sync.
          if (!hasErrorCode(error, 'ENOENT', 'ENOTDIR')) {
            throw fileError(error, normalized, 'saving');
          }
        }
      }
      await signed;
    }
    this.emitChanged({ action: 'save', path: normalized });
    return model;
  }

  /** POST with no `copy_from`: a new untitled item in a directory. */
  async newUntitled(directory: string, type = '', ext = ''): Promise<ContentsModel> {
    const normalized = normalizeApiPath(directory);
    if (!(await this.dirExists(normalized))) {
      throw httpErrors.notFound(`No such directory: ${normalized}`);
    }
    const itemType = normalizeType(type) || (ext === '.ipynb' ? 'notebook' : 'file');
    let untitled: string;
    let insert = '';
    let extension = ext;
    if (itemType === 'directory') {
      untitled = UNTITLED_NAMES.directory;
      insert = ' ';
    } else if (itemType === 'notebook') {
      untitled = UNTITLED_NAMES.notebook;
      extension = '.ipynb';
    } else {
      untitled = UNTITLED_NAMES.file;
    }
    // The directory was resolved above: a name with nothing at it (nearly always the first
    // tried) needs no resolving of its own, whose answer would be its directory's; a name taken
    // is looked at as `exists` looks (a link there leading outside is a 404, as before).
    const name = await incrementName(
      untitled + extension,
      async candidate => {
        const candidatePath = joinApiPath(normalized, candidate);
        return (
          lstatNow(this.resolver.osPath(candidatePath)) !== undefined &&
          (await this.exists(candidatePath))
        );
      },
      insert
    );
    return this.create(joinApiPath(normalized, name), { type: itemType });
  }

  /**
   * Copy a file or directory. Into a directory, the copy gets a free `-Copy<n>` name; to a free
   * path whose parent exists, it takes that exact path.
   */
  async copy(fromPath: string, toPath?: string): Promise<ContentsModel> {
    const source = normalizeApiPath(fromPath);
    const model = await this.get(source);
    const destinationGiven = toPath !== undefined;
    const destination = destinationGiven ? normalizeApiPath(toPath) : parentPath(source);
    const freeCopyName = () =>
      incrementName(
        copySourceName(baseName(source)),
        candidate => this.exists(joinApiPath(destination, candidate)),
        '-Copy'
      );
    if (model.type === 'directory') {
      // Jupyter always copies a directory *into* the destination, creating it when missing.
      const name = (await this.dirExists(destination))
        ? await freeCopyName()
        : copySourceName(baseName(source));
      const copied = await this.copyDirectory(source, joinApiPath(destination, name));
      this.emitChanged({ action: 'copy', from: source, to: copied.path });
      return copied;
    }
    let target = destination;
    if (await this.dirExists(destination)) {
      target = joinApiPath(destination, await freeCopyName());
    } else if (!destinationGiven) {
      throw httpErrors.notFound(`No such directory: ${destination}`);
    } else if (destination.includes('/') && !(await this.dirExists(parentPath(destination)))) {
      throw httpErrors.notFound(
        `No such parent directory: ${parentPath(destination)} to copy file in`
      );
    }
    const copied = await this.save(target, {
      type: model.type,
      format: model.format,
      content: model.content
    });
    this.emitChanged({ action: 'copy', from: source, to: copied.path });
    return copied;
  }

  /**
   * PATCH: rename (move) an item with its checkpoints.
   *
   * #### Notes
   * While a listener announces changes to another process (see {@link onChanged}: Python's
   * event bus, whose file-id manager moves the file's id and whose collaboration room then
   * follows the file), a regular file is renamed in three steps, so that no one who still knows
   * it by its old name meets a missing file: the room polls the path of its file id every
   * second, and that path is the old name until Python has heard of the rename.
   *
   * 1. `link(2)` gives the file its new name (never replacing anything: a file created there
   *    meanwhile is a 409, as one found before). Both names are the same inode, with the same
   *    bytes and mtime, so a poll by either name finds the file, unchanged.
   * 2. The listeners are told, and the announcing ones awaited, at most `announceTimeoutMs`.
   * 3. The old name is removed, unless it names another file by then (a save replaced it: that
   *    file stays, see {@link RootFs.unlinkIfSame}).
   *
   * A kill between 1 and 3 leaves both names: a duplicate, never a loss (the crash test checks
   * it). If the link is refused (a file system without hard links, another device, too many
   * links, a directory or symlink, an old name that could not be removed), the item is renamed
   * with `rename(2)`, as when no listener announces. The write gates (the archive's) hold both
   * names from the link until the old name is gone, so that the archive's watcher and scan take
   * neither the new name for a new file nor the old one, still there, for a file to archive
   * again; the archive hears of the rename at step 2, with the other listeners. The checkpoints
   * follow after step 3, as they follow `rename(2)`.
   *
   * A directory is renamed with `rename(2)`: hard links to directories do not exist, and a
   * stand-in at the old name (a symlink) would be listed, archived and left by a kill. So a
   * room open on a notebook inside a renamed directory can still find the old path missing
   * until Python has heard of the rename (a few ms, against its one-second poll), and then logs
   * one error.
   */
  async rename(oldPath: string, newPath: string): Promise<ContentsModel> {
    const from = normalizeApiPath(oldPath);
    const to = normalizeApiPath(newPath);
    if (from !== to) {
      if (from === '') throw httpErrors.badRequest('Cannot rename the root directory');
      // Answered in Jupyter's order: hidden names first, then where they lead (all looks on
      // this thread, see statNow).
      const hidden = [await this.isHidden(from), await this.isHidden(to)];
      if (hidden.includes(true)) {
        throw httpErrors.hiddenPath(`Cannot rename file or directory '${from}'`);
      }
      const fromOs = this.resolver.resolveNow(from);
      const existing = this.resolvedNow(to, lstatNow);
      const toOs = this.resolver.osPath(to);
      if (existing && !sameFile(fromOs, toOs)) {
        throw httpErrors.conflict(`File already exists: ${to}`);
      }
      if (!existing && (await this.renameByLink(from, to, fromOs, toOs))) {
        return this.get(to, { content: false });
      }
      try {
        await this.files.rename(fromOs, toOs);
      } catch (error) {
        if (hasErrorCode(error, 'ENOENT')) {
          throw httpErrors.notFound(`File or directory does not exist: ${from}`);
        }
        if (!hasErrorCode(error, 'EXDEV')) throw fileError(error, from, 'renaming');
        try {
          const stats = await fs.lstat(fromOs);
          if (stats.isDirectory()) await this.files.copyTree(fromOs, toOs);
          else if (stats.isSymbolicLink()) {
            const link = await fs.readlink(fromOs);
            await this.files.atEntry(toOs, (dir, name) => fs.symlink(link, dir.entry(name)));
          } else {
            const read = await this.files.readFile(fromOs, { followSymlinks: false });
            await this.files.writeFileAtomic(toOs, read.bytes, { times: read.stats });
          }
          await this.files.remove(fromOs);
        } catch (failure) {
          throw fileError(failure, from, 'renaming');
        }
      }
      await this.checkpoints.renameAll(from, to);
      this.emitChanged({ action: 'rename', from, to });
    }
    return this.get(to, { content: false });
  }

  /**
   * The three steps of {@link rename} for a regular file, while a listener announces changes.
   *
   * @returns false when nothing was done (no listener announces, or the link was refused): the
   *   caller renames with `rename(2)`.
   */
  private async renameByLink(
    from: string,
    to: string,
    fromOs: string,
    toOs: string
  ): Promise<boolean> {
    if (![...this.changeListeners].some(subscription => subscription.announces)) return false;
    // Two renames of one file at once would both link it before either removed the old name,
    // leaving two files where rename(2) answers the second with 404: they go one at a time. (A
    // promise chain per path, as the archive intake's looks: p-limit cannot say when a key's
    // limiter is idle and may be dropped.)
    const before = this.renamingFrom.get(from);
    let endTurn = () => {};
    const turn = new Promise<void>(resolve => (endTurn = resolve));
    const chain = (before ?? DONE).then(() => turn);
    this.renamingFrom.set(from, chain);
    try {
      await before;
      return await this.renameByLinkNow(from, to, fromOs, toOs);
    } finally {
      endTurn();
      if (this.renamingFrom.get(from) === chain) this.renamingFrom.delete(from);
    }
  }

  private async renameByLinkNow(
    from: string,
    to: string,
    fromOs: string,
    toOs: string
  ): Promise<boolean> {
    let linked: IFileLink;
    try {
      linked = await this.files.link(fromOs, toOs);
    } catch (error) {
      if (hasErrorCode(error, 'EEXIST')) throw httpErrors.conflict(`File already exists: ${to}`);
      return false;
    }
    // Taken at once: a look at either name needs I/O before it could queue anything.
    const releases = [this.beginWrite(from), this.beginWrite(to)];
    try {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.announceChanged({ action: 'rename', from, to }),
        new Promise<void>(resolve => (timer = setTimeout(resolve, this.announceTimeoutMs)))
      ]);
      clearTimeout(timer);
      try {
        await this.files.unlinkIfSame(fromOs, linked);
      } catch (error) {
        // Both names stay: a duplicate that the user can delete, the rename itself is done.
        this.log(`renamed ${from} to ${to}, but the old name stays: ${(error as Error).message}`);
      }
      await this.checkpoints.renameAll(from, to);
      return true;
    } finally {
      for (const release of releases) release();
    }
  }

  /** DELETE an item and its checkpoints. The root can't be deleted. */
  async delete(apiPath: string): Promise<void> {
    const normalized = normalizeApiPath(apiPath);
    if (normalized === '') throw httpErrors.badRequest("Can't delete root");
    const [stats, lstats] = this.resolvedNow(normalized, osPath => [
      statNow(osPath),
      lstatNow(osPath)
    ]);
    const osPath = this.resolver.osPath(normalized);
    if (!this.allowHidden && (await isHidden(normalized, osPath, stats))) {
      throw httpErrors.hiddenPath(`Cannot delete file or directory '${normalized}'`);
    }
    // Existence follows symlinks, as Jupyter's os.path.exists: a dangling link is not there.
    if (!stats || !lstats) {
      throw httpErrors.notFound(`File or directory does not exist: ${normalized}`);
    }
    try {
      if (this.deleteToTrash) {
        // The item is moved from its directory, pinned: a directory swapped for a symlink
        // meanwhile cannot make the trash take something outside the root.
        await this.files.atEntry(osPath, async (dir, name) => {
          if (!canAccessNow(dir.entry(name), fs.constants.W_OK)) {
            throw httpErrors.permissionDenied(`Permission denied: ${normalized}`);
          }
          await moveToTrash(osPath, process.env, { from: dir.entry(name) });
        });
      } else if (lstats.isDirectory()) {
        if (!this.alwaysDeleteDir && (await this.isNonEmptyDirectory(osPath))) {
          throw httpErrors.notEmpty(`Directory ${normalized} not empty`);
        }
        await this.files.remove(osPath);
      } else {
        await this.files.unlink(osPath);
      }
    } catch (error) {
      throw fileError(error, normalized, 'deleting');
    }
    await this.checkpoints.deleteAll(normalized);
    this.emitChanged({ action: 'delete', path: normalized });
  }

  /**
   * Offer the archived versions of the paths the archive covers as their checkpoints (see
   * {@link VersionCheckpoints}); without it, checkpoints are Jupyter's file copies only.
   */
  useVersionCheckpoints(versions: VersionCheckpoints | undefined): void {
    this.versionCheckpoints = versions;
  }

  /**
   * Create a checkpoint of a file. Jupyter's copy is made as always; where the archive covers
   * the path, the answer is the current archived version, which restores the same bytes.
   */
  async createCheckpoint(apiPath: string): Promise<CheckpointModel> {
    const normalized = normalizeApiPath(apiPath);
    await this.resolver.resolve(normalized);
    const created = await this.checkpoints.create(normalized);
    const versions = this.versionsOf(normalized);
    if (!versions) return created;
    try {
      return (await versions.current(normalized)) ?? created;
    } catch (error) {
      // Object storage out of reach: Jupyter's copy was made, and that is the checkpoint.
      this.log(`no archived version of ${normalized} to answer: ${(error as Error).message}`);
      return created;
    }
  }

  /** List a file's checkpoints: its archived versions where the archive covers it. */
  async listCheckpoints(apiPath: string): Promise<CheckpointModel[]> {
    const normalized = normalizeApiPath(apiPath);
    await this.resolver.resolve(normalized);
    const versions = this.versionsOf(normalized);
    if (versions) {
      // Jupyter creates the checkpoint directory when it lists; so do we, for identical trees.
      await this.checkpoints.checkpointPath(normalized);
      try {
        const listed = await versions.list(normalized);
        // Not archived yet (a file older than archiving, before the first scan): Jupyter's copy.
        if (listed.length > 0) return listed;
      } catch (error) {
        // Object storage out of reach: Jupyter's copy is still there to revert to.
        this.log(`cannot list the versions of ${normalized}: ${(error as Error).message}`);
      }
    }
    return this.checkpoints.list(normalized);
  }

  /**
   * Restore a file from a checkpoint. An archived version is saved over the file through the
   * save path, so that the restore is archived as a new version and hooks see it.
   */
  async restoreCheckpoint(apiPath: string, checkpointId: string): Promise<void> {
    const normalized = normalizeApiPath(apiPath);
    await this.resolver.resolve(normalized);
    const versions = this.versionsOf(normalized);
    if (versions && !VersionCheckpoints.isFileCheckpoint(checkpointId)) {
      const bytes = await versions.read(normalized, checkpointId);
      await this.saveRestored(normalized, bytes);
      return;
    }
    await this.checkpoints.restore(normalized, checkpointId);
  }

  /** Delete a checkpoint; archived versions are immutable and refused. */
  async deleteCheckpoint(apiPath: string, checkpointId: string): Promise<void> {
    const normalized = normalizeApiPath(apiPath);
    await this.resolver.resolve(normalized);
    const versions = this.versionsOf(normalized);
    if (versions && !VersionCheckpoints.isFileCheckpoint(checkpointId)) {
      return versions.delete(normalized, checkpointId);
    }
    await this.checkpoints.delete(normalized, checkpointId);
  }

  /** Explicitly trust a notebook (`POST …/trust`): sign it as it is on disk. */
  async trust(apiPath: string): Promise<void> {
    const model = await this.get(apiPath, { type: 'notebook' });
    if (!this.notary) return;
    // As Jupyter's trust_notebook: mark every cell trusted, then check and sign.
    const notebook = model.content as NotebookNode;
    this.notary.markCells(notebook, true);
    await this.signIfTrusted(apiPath, notebook);
  }

  /**
   * Do now what the first save would otherwise pay for: compile the notebook validators and
   * start the notary's database (a lookup of an empty notebook's signature, which writes
   * nothing). A failure is only logged: the first save then does the work as before.
   *
   * #### Notes
   * A server calls this while it starts, so that its first save costs what a later one does.
   */
  async prepare(): Promise<void> {
    try {
      prepareValidation();
      await this.notary?.checkSignature(newNotebook());
    } catch (error) {
      this.log(`could not prepare for the first save: ${(error as Error).message}`);
    }
  }

  /** Release the notary's database. */
  async close(): Promise<void> {
    await this.notary?.close();
  }

  /** The version checkpoints answering for a path, if the archive covers it. */
  private versionsOf(apiPath: string): VersionCheckpoints | undefined {
    const versions = this.versionCheckpoints;
    return versions?.covers(apiPath) ? versions : undefined;
  }

  /**
   * Save restored bytes over a file. A notebook keeps the trust its bytes had, as Jupyter's
   * restore (a copy) leaves it: trusted only if that exact notebook was signed. Also the
   * store API's restore of a deleted notebook writes through it.
   */
  async saveRestored(apiPath: string, bytes: Buffer): Promise<ContentsModel> {
    if (isNotebookName(apiPath)) {
      let notebook: NotebookNode | undefined;
      try {
        notebook = readNotebook(bytes).notebook;
      } catch (error) {
        if (!(error instanceof NotebookParseError)) throw error;
      }
      if (notebook !== undefined) {
        if (this.notary) {
          this.notary.markCells(notebook, await this.notary.checkSignature(notebook));
        }
        return this.save(apiPath, { type: 'notebook', format: 'json', content: notebook });
      }
    }
    return this.save(apiPath, {
      type: 'file',
      format: 'base64',
      content: bytes.toString('base64')
    });
  }

  private async directoryModel(
    apiPath: string,
    osPath: string,
    lstats: Stats,
    content: boolean
  ): Promise<ContentsModel> {
    const model = await baseModel(apiPath, osPath, lstats, 'directory');
    if (!content) return model;
    // Listed through the opened directory: its names and stats are never another's.
    model.content = await this.files
      .inDirectory(osPath, dir => this.listChildren(apiPath, dir))
      .catch((error: unknown) => {
        throw fileError(error, apiPath, 'listing');
      });
    model.format = 'json';
    return model;
  }

  private async listChildren(apiPath: string, dir: PinnedDir): Promise<ContentsModel[]> {
    const entries = await fs.readdir(dir.self, { withFileTypes: true });
    const children = await Promise.all(
      entries.map(async entry => {
        if (this.shouldHide(entry.name)) return undefined;
        if (!entry.isFile() && !entry.isDirectory() && !entry.isSymbolicLink()) return undefined;
        const childOs = dir.entry(entry.name);
        try {
          if (
            entry.isSymbolicLink() &&
            !(await this.resolver.isInsideRoot(path.join(dir.realPath, entry.name)))
          )
            return undefined;
          const childLstats = await fs.lstat(childOs);
          const childStats = entry.isSymbolicLink()
            ? ((await statOrUndefined(childOs)) ?? childLstats)
            : childLstats;
          if (!this.allowHidden && (await isItemHidden(entry.name, childOs, childStats)))
            return undefined;
          const childPath = joinApiPath(apiPath, entry.name);
          const type: ContentsType = childStats.isDirectory()
            ? 'directory'
            : isNotebookName(entry.name)
              ? 'notebook'
              : 'file';
          const child = await baseModel(childPath, childOs, childLstats, type);
          if (type === 'file') child.mimetype = guessMimeType(entry.name);
          return child;
        } catch {
          // An entry that vanished or can't be read is left out, as Jupyter does.
          return undefined;
        }
      })
    );
    return children.filter(child => child !== undefined);
  }

  private async fileModel(
    apiPath: string,
    osPath: string,
    lstats: Stats,
    content: boolean,
    format: string | undefined,
    hash: boolean
  ): Promise<ContentsModel> {
    const model = await baseModel(apiPath, osPath, lstats, 'file');
    model.mimetype = guessMimeType(baseName(apiPath));
    if (!content && !hash) return model;
    const { bytes } = await this.readRegularFile(apiPath, osPath);
    if (content) {
      let text: string | undefined;
      if (format !== 'base64') {
        text = decodeUtf8(bytes);
        if (text === undefined && format === 'text') {
          throw httpErrors.badFormat(`${apiPath} is not UTF-8 encoded`);
        }
      }
      model.format = text === undefined ? 'base64' : 'text';
      model.content = text ?? encodeBase64Lines(bytes);
      model.mimetype ??= text === undefined ? 'application/octet-stream' : 'text/plain';
    }
    if (hash) this.addHash(model, bytes);
    return model;
  }

  private async notebookModel(
    apiPath: string,
    osPath: string,
    lstats: Stats,
    content: boolean,
    hash: boolean
  ): Promise<ContentsModel> {
    if (!content && !hash) return baseModel(apiPath, osPath, lstats, 'notebook');
    // Both at once: each waits for a thread-pool round trip. The trust cache is keyed by the
    // stats of the file read (the link's target for a symlink).
    const [model, { bytes, stats: readStats }] = await Promise.all([
      baseModel(apiPath, osPath, lstats, 'notebook'),
      this.readRegularFile(apiPath, osPath)
    ]);
    if (content) {
      const key = contentKey(readStats);
      const facts = this.notebookFacts.get(key) ?? {};
      let parsed: ReturnType<typeof readNotebook>;
      try {
        parsed = readNotebook(bytes, { facts });
      } catch (error) {
        if (error instanceof NotebookParseError) {
          throw httpErrors.unreadableNotebook(`Unreadable Notebook: ${apiPath} ${error.message}`);
        }
        throw error;
      }
      this.rememberFacts(key, facts);
      if (this.notary) {
        const trusted = await this.notary.checkSignature(parsed.notebook, key);
        this.notary.markCells(parsed.notebook, trusted);
      }
      model.content = parsed.notebook;
      model.format = 'json';
      if (parsed.validationMessage) model.message = parsed.validationMessage;
    }
    if (hash) this.addHash(model, bytes);
    return model;
  }

  /**
   * Keep what reading the file with this {@link contentKey} learnt (see `INotebookFacts`: it
   * passed the schema check, it needs no scan for Python's numbers), so that reading it again
   * skips that work: about a third of a GET's CPU; the least recently read of 1024 is forgotten.
   *
   * #### Notes
   * The key is the one the trust signature cache relies on: a changed file has another size,
   * inode or times. Only the verdict "valid" is kept: an invalid notebook's message quotes the
   * failing value, which may hold a cell id generated for this read.
   */
  private rememberFacts(key: string, facts: INotebookFacts): void {
    this.notebookFacts.delete(key);
    if (!facts.valid && !facts.plainJson) return;
    this.notebookFacts.set(key, facts);
    if (this.notebookFacts.size > 1024) {
      this.notebookFacts.delete(this.notebookFacts.keys().next().value as string);
    }
  }

  /** The bytes of a regular file, read from a descriptor checked to be inside the root. */
  private async readRegularFile(
    apiPath: string,
    osPath: string
  ): Promise<{ bytes: Buffer; stats: Stats }> {
    try {
      return await this.files.readFile(osPath);
    } catch (error) {
      if (hasErrorCode(error, 'EISDIR', 'ENOENT', 'ENOTREGULAR')) {
        throw httpErrors.badType(`Cannot read non-file ${apiPath}`);
      }
      throw fileError(error, apiPath, 'reading');
    }
  }

  private addHash(model: ContentsModel, bytes: Buffer): void {
    model.hash = createHash(this.hashAlgorithm).update(bytes).digest('hex');
    model.hash_algorithm = this.hashAlgorithm;
  }

  /**
   * Sign (when every cell is trusted) and serialise a notebook from a request, with the validation
   * message Jupyter would add. A model nbformat cannot write (no `nbformat` 1 to 4, cells that are not objects, strings Python cannot
   * encode, nesting too deep) is a 400, and nothing is written.
   */
  private async serializeNotebook(
    apiPath: string,
    notebook: NotebookNode,
    signLater = false
  ): Promise<{
    bytes: Buffer;
    validationMessage?: string;
    signing?: { signature: ISignature; written: Promise<void> };
  }> {
    if (![1, 2, 3, 4].includes(notebook.nbformat)) {
      const found = JSON.stringify(notebook.nbformat) ?? 'missing';
      throw httpErrors.badNotebook(
        `Unsupported notebook: 'nbformat' must be an integer from 1 to 4, not ${found}`
      );
    }
    try {
      if (signLater) {
        const signing = this.signSoon(apiPath, notebook);
        return { ...serializeNotebook(notebook), ...(signing ? { signing } : {}) };
      }
      await this.signIfTrusted(apiPath, notebook);
      return serializeNotebook(notebook);
    } catch (error) {
      if (error instanceof HttpError) throw error;
      const detail =
        error instanceof RangeError ? 'it is nested too deeply' : (error as Error).message;
      throw httpErrors.badNotebook(`The notebook model of ${apiPath} cannot be written: ${detail}`);
    }
  }

  /**
   * Jupyter's `check_and_sign`. A notary that can't be reached (its database busy with another
   * Jupyter process) leaves the notebook unsigned rather than losing the save.
   */
  private async signIfTrusted(apiPath: string, notebook: NotebookNode): Promise<void> {
    await this.signSoon(apiPath, notebook)?.written.catch((error: unknown) =>
      this.logUnsigned(apiPath, error)
    );
  }

  /**
   * {@link signIfTrusted} without waiting for the database commit (see
   * {@link NotebookNotary.signSoon}); the caller reports a failed write.
   */
  private signSoon(
    apiPath: string,
    notebook: NotebookNode
  ): { signature: ISignature; written: Promise<void> } | undefined {
    if (!this.notary || !this.notary.checkCells(notebook)) return undefined;
    try {
      return this.notary.signSoon(notebook);
    } catch (error) {
      this.logUnsigned(apiPath, error);
      return undefined;
    }
  }

  private logUnsigned(apiPath: string, error: unknown): void {
    this.log(`could not sign ${apiPath}; it stays untrusted: ${(error as Error).message}`);
  }

  private async saveDirectory(apiPath: string, osPath: string): Promise<void> {
    if (await this.isHidden(apiPath)) {
      throw httpErrors.hiddenPath(`Cannot create directory '${apiPath}'`);
    }
    await this.files.atEntry(osPath, async (dir, name) => {
      const stats = statNow(dir.entry(name));
      // A symlink to nothing is not a free name: nothing is created through it.
      if (!stats && !lstatNow(dir.entry(name))) await fs.mkdir(dir.entry(name));
      else if (!stats?.isDirectory()) throw httpErrors.badType(`Not a directory: ${apiPath}`);
    });
  }

  private async checkParentDirectory(apiPath: string): Promise<void> {
    const parent = parentPath(apiPath);
    if (apiPath !== '' && !(await this.dirExists(parent))) {
      throw httpErrors.notFound(`No such directory: ${parent}`);
    }
  }

  private async copyDirectory(source: string, target: string): Promise<ContentsModel> {
    const fromOs = await this.resolver.resolve(source);
    const toOs = await this.resolver.resolve(target);
    const size = await this.files.treeSize(fromOs).catch((error: unknown) => {
      throw fileError(error, source, 'copying');
    });
    if (size > this.maxCopyFolderBytes) {
      throw httpErrors.folderTooLarge(
        `Can't copy folders larger than ${this.maxCopyFolderBytes / 1024 / 1024}MB, "${source}" is ${size} bytes`
      );
    }
    try {
      // Symlinks inside the root are followed, those that lead out are left out.
      await this.files.copyTree(fromOs, toOs);
    } catch (error) {
      if (hasErrorCode(error, 'EOUTSIDEROOT')) throw fileError(error, source, 'copying');
      throw httpErrors.copyFailed(`Can't copy '${source}' into read-only Folder '${target}'`, {
        cause: error
      });
    }
    return this.get(target, { content: false });
  }

  private async isNonEmptyDirectory(osPath: string): Promise<boolean> {
    const names = await this.files.inDirectory(osPath, dir => fs.readdir(dir.self));
    return names.some(name => name !== CHECKPOINT_DIR);
  }

  /**
   * `look` at the API path's OS path once the path is known to stay inside the root; both on
   * this thread (see {@link statNow}: a trip to the thread pool costs more than the call).
   */
  private resolvedNow<T>(apiPath: string, look: (osPath: string) => T): T {
    this.resolver.resolveNow(apiPath);
    return look(this.resolver.osPath(apiPath));
  }

  private emitSaved(event: ISavedEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A listener's failure must never fail a save the user already made.
      }
    }
  }

  private emitChanged(change: ContentsChange): void {
    for (const { listener } of this.changeListeners) {
      try {
        // As for saves: a listener never fails what the user already did.
        const result = listener(change);
        if (result instanceof Promise) result.catch(() => undefined);
      } catch {
        // Likewise.
      }
    }
  }

  /**
   * {@link emitChanged}, and a promise that resolves once the announcing listeners (see
   * {@link onChanged}) are done; it never rejects.
   */
  private announceChanged(change: ContentsChange): Promise<void> {
    let announced: Promise<unknown>[] | undefined;
    for (const { listener, announces } of this.changeListeners) {
      try {
        const result = listener(change);
        if (result instanceof Promise) {
          // As for saves: a listener never fails what the user already did.
          const settled = result.catch(() => undefined);
          if (announces) (announced ??= []).push(settled);
        }
      } catch {
        // Likewise.
      }
    }
    return announced ? Promise.all(announced).then(() => undefined) : DONE;
  }

  private readonly resolver: RootResolver;
  private readonly files: RootFs;
  private readonly checkpoints: FileCheckpoints;
  private versionCheckpoints: VersionCheckpoints | undefined;
  private readonly notary: NotebookNotary | undefined;
  /** What reads of notebook files learnt, by {@link contentKey} (see {@link rememberFacts}). */
  private readonly notebookFacts = new Map<string, INotebookFacts>();
  private readonly allowHidden: boolean;
  private readonly deleteToTrash: boolean;
  private readonly alwaysDeleteDir: boolean;
  private readonly hashAlgorithm: string;
  private readonly maxCopyFolderBytes: number;
  private readonly shouldHide: (name: string) => boolean;
  private readonly announceTimeoutMs: number;
  /** Renames by link under way, by old API path (see {@link renameByLink}). */
  private readonly renamingFrom = new Map<string, Promise<void>>();
  private readonly listeners = new Set<SaveListener>();
  private readonly hooks = new Set<AwaitedSaveHook>();
  private readonly journals = new Set<AwaitedSaveHook>();
  private readonly changeListeners = new Set<{ listener: ChangeListener; announces: boolean }>();
  private readonly writeGates = new Set<(apiPath: string) => () => void>();
  private readonly saveLocks = new Map<string, Promise<void>>();
  private readonly log: (message: string) => void;
}

export namespace ContentsManager {
  export interface IOptions {
    /** The root directory served. */
    rootDir: string;
    /** The notary that checks and signs notebooks; without one every notebook is untrusted. */
    notary?: NotebookNotary;
    /** Serve hidden files (Jupyter's `allow_hidden`, default false). */
    allowHidden?: boolean;
    /** Move deleted items to the trash (Jupyter's default, true). */
    deleteToTrash?: boolean;
    /** Delete non-empty directories without the trash (default false). */
    alwaysDeleteDir?: boolean;
    /** Name globs never listed (Jupyter's `hide_globs`). */
    hideGlobs?: readonly string[];
    /** Hash algorithm of `hash=1` (default sha256). */
    hashAlgorithm?: string;
    /** Largest directory a copy accepts, in MB (default 500). */
    maxCopyFolderSizeMb?: number;
    /** Where warnings go (default: stderr). */
    log?: (message: string) => void;
    /**
     * How long a rename keeps the old name at most while announcing listeners tell others of it
     * (see {@link ContentsManager.rename}), in ms (default 2000).
     */
    announceTimeoutMs?: number;
  }

  export interface IGetOptions {
    type?: ContentsType;
    format?: 'text' | 'base64';
    content?: boolean;
    hash?: boolean;
  }
}

/** Jupyter treats any `type` other than the three known ones as `file`; empty stays empty. */
export function normalizeType(type: unknown): '' | ContentsType {
  if (type === undefined || type === null || type === '') return '';
  return type === 'directory' || type === 'notebook' ? type : 'file';
}

function asNotebook(content: unknown): NotebookNode {
  if (typeof content !== 'object' || content === null || Array.isArray(content)) {
    throw httpErrors.badRequest('Notebook content must be a JSON object');
  }
  return content as NotebookNode;
}

function decodeFileContent(
  apiPath: string,
  content: unknown,
  format: string | null | undefined
): Buffer {
  if (format !== 'text' && format !== 'base64') {
    throw httpErrors.badFormat("Must specify format of file contents as 'text' or 'base64'");
  }
  if (typeof content !== 'string') {
    throw httpErrors.badFormat(`Encoding error saving ${apiPath}: content must be a string`);
  }
  if (format === 'text') {
    // Python refuses to encode lone surrogates; Buffer.from would silently replace them.
    if (!content.isWellFormed()) {
      throw httpErrors.badFormat(`Encoding error saving ${apiPath}: lone surrogate in the text`);
    }
    return Buffer.from(content, 'utf8');
  }
  const bytes = decodeBase64Lenient(content);
  if (!bytes) throw httpErrors.badFormat(`Encoding error saving ${apiPath}: invalid base64`);
  return bytes;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** What {@link ContentsManager.announceChanged} returns when no listener announces. */
const DONE = Promise.resolve();

function decodeUtf8(bytes: Buffer): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * Identifies a file's exact bytes for caches: a write through us or anyone else changes the
 * inode (rename) or the size and times.
 */
function contentKey(stats: Stats): string {
  return `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`;
}

/**
 * The promise itself, marked as handled: it is awaited later, after another that was started
 * with it, and its rejection must not count as unhandled meanwhile.
 */
function settledLater<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

function sameFile(a: string, b: string): boolean {
  const [first, second] = [statNow(a), statNow(b)];
  return !!first && !!second && first.dev === second.dev && first.ino === second.ino;
}

/**
 * A file-system failure as Jupyter answers it, by the one errno table; a failure the table does
 * not know is a 500 that names the action and the API path, never the OS path.
 */
function fileError(error: unknown, apiPath: string, action: string): Error {
  if (error instanceof HttpError) return error;
  return (
    errnoError(error, apiPath, action) ??
    httpErrors.unexpected(`Unexpected error while ${action} file: ${apiPath}`, { cause: error })
  );
}

namespace Private {
  /** The written save, when it was written without fsyncs and so needs the journal. */
  export function notDurable(file: IWrittenFile): IWrittenSave | undefined {
    return file.durable ? undefined : { after: file.after, before: file.before };
  }

  /**
   * Did a save written without fsyncs fail to reach the disk? Yes when the path holds exactly
   * what it held before the save (same inode, size and time), or the save's own file (same inode
   * and time) with other bytes (torn), or nothing where nothing was before. Anything else is a
   * later change by someone else, which is left alone: another writer may rewrite our file in
   * place (Jupyter does), but that gives it a new time.
   */
  export function saveWasLost(
    written: IWrittenSave,
    found: { bytes: Buffer; stats: Stats } | undefined,
    sha256: string
  ): boolean {
    if (!found) return written.before === null;
    if (createHash('sha256').update(found.bytes).digest('hex') === sha256) return false;
    const { ino, size, mtimeMs } = found.stats;
    // Within a millisecond: times set by other tools (a backup restored, `touch -r`) pass
    // through a float of seconds and come back a few nanoseconds off, while two writers' turns
    // are much further apart than that.
    const sameTime = (time: number): boolean => Math.abs(time - mtimeMs) < 1;
    const after = written.after;
    if (after && after.ino === ino && sameTime(after.mtimeMs)) return true;
    const before = written.before;
    return (
      before !== null && before.ino === ino && before.size === size && sameTime(before.mtimeMs)
    );
  }
}
