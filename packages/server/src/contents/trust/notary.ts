import { createHmac, randomBytes, type Hmac } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { encodeBase64Lines } from '../model';
import { PyNumber, compareCodePoints, pythonStr, pythonTruthy } from '@jupyter-store/nbformat';

export { pythonTruthy };
import { ensureJupyterDir } from './paths';
import { type ISignature, type ISignatureStore, SQLiteSignatureStore } from './signatureStore';

/**
 * Notebook trust exactly as nbformat's `NotebookNotary` (`nbformat/sign.py`) does it, on the same
 * secret and the same signature database, so that a notebook trusted by a stock Jupyter is trusted
 * here and the other way round.
 */

/**
 * Python's hashlib names (`NotebookNotary.algorithm` accepts `hashlib.algorithms_guaranteed`
 * without the shake ones) and the OpenSSL digest that gives the same HMAC. The Python name is
 * what the database stores.
 */
const DIGESTS: Readonly<Record<string, string>> = {
  md5: 'md5',
  sha1: 'sha1',
  sha224: 'sha224',
  sha256: 'sha256',
  sha384: 'sha384',
  sha512: 'sha512',
  blake2b: 'blake2b512',
  blake2s: 'blake2s256',
  sha3_224: 'sha3-224',
  sha3_256: 'sha3-256',
  sha3_384: 'sha3-384',
  sha3_512: 'sha3-512'
};

/** The signing algorithms nbformat accepts, by their Python names. */
export const NOTARY_ALGORITHMS: readonly string[] = Object.keys(DIGESTS);

/** The notebook cannot be signed at all: Python would fail to encode it. */
export class NotebookSignatureError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotebookSignatureError';
  }
}

/**
 * Computes, checks and records notebook signatures, and marks or checks the trust of code cells.
 *
 * #### Notes
 * Jupyter's contents manager uses it thus: on GET, `checkSignature` then `markCells` with the
 * answer; on save, `sign` if `checkCells` says every code cell is trusted.
 */
export class NotebookNotary {
  /** @param options - the Jupyter data directory and optional overrides, as nbformat's traits. */
  constructor(options: NotebookNotary.IOptions) {
    const algorithm = options.algorithm ?? 'sha256';
    const digest = Object.hasOwn(DIGESTS, algorithm) ? DIGESTS[algorithm] : undefined;
    if (digest === undefined) {
      throw new Error(
        `Unknown notary algorithm ${JSON.stringify(algorithm)}; use one of ${NOTARY_ALGORITHMS.join(', ')}`
      );
    }
    this.algorithm = algorithm;
    this.digest = digest;
    this.dataDir = options.dataDir;
    this.secretFile = options.secretFile ?? path.join(options.dataDir, 'notebook_secret');
    this.secret = options.secret === undefined ? undefined : Buffer.from(options.secret);
    this.store =
      options.store ??
      new SQLiteSignatureStore({
        dbFile: options.dbFile ?? path.join(options.dataDir, 'nbsignatures.db'),
        cacheSize: options.cacheSize,
        busyTimeoutMs: options.busyTimeoutMs,
        warn: options.warn
      });
  }

  /** The Python name of the hash (`sha256` unless configured), as stored in the database. */
  readonly algorithm: string;

  /** The Jupyter data directory. */
  readonly dataDir: string;

  /** The file holding the HMAC key. */
  readonly secretFile: string;

  /** Where signatures are recorded. */
  readonly store: ISignatureStore;

  /**
   * The HMAC key: the bytes of the secret file as they are (base64 text, newlines included, never
   * decoded), which is what Python keys its HMAC with. A missing file is created as Python creates
   * it. The file is read afresh each time, so a key reset by `jupyter trust --reset` takes effect.
   */
  loadSecret(): Buffer {
    if (this.secret) return this.secret;
    try {
      return fs.readFileSync(this.secretFile);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    return writeNewSecret(this.secretFile);
  }

  /**
   * The hex HMAC of the notebook under the secret, over nbformat's canonical walk of the whole
   * notebook with `metadata.signature` left out.
   *
   * #### Notes
   * Like Python, a `metadata.signature` of `null` is removed from the notebook for good.
   * Throws {@link NotebookSignatureError} for a string with an unpaired surrogate, which Python
   * cannot UTF-8 encode either.
   */
  computeSignature(notebook: object): string {
    dropNullSignature(notebook);
    const hmac = createHmac(this.digest, this.loadSecret());
    const sink = new HmacSink(hmac);
    walkNotebook(notebook, sink);
    sink.flush();
    return hmac.digest('hex');
  }

  /**
   * Is this exact notebook (as signed) recorded as trusted? A hit refreshes its `last_seen`.
   * With a `contentKey` (see {@link signatureOf}), an unchanged file is not hashed again.
   * Notebooks older than nbformat 3 are never trusted. Never rejects: a signature that cannot be
   * computed or a database that cannot be read (after waiting for Python) answers `false`.
   */
  async checkSignature(notebook: object, contentKey?: string): Promise<boolean> {
    if (nbformatOf(notebook) < 3) return false;
    try {
      return await this.store.checkSignature(
        this.signatureOf(notebook, contentKey),
        this.algorithm
      );
    } catch {
      return false;
    }
  }

  /**
   * The notebook's signature, reusing the one computed for the same `contentKey` under the same
   * secret. The HMAC walks the whole notebook (a few hundred ms at 50 MB), and a notebook that
   * is opened again unchanged need not be walked again.
   *
   * @param contentKey - identifies the exact bytes the notebook was read from (for a file: its
   *   inode, size and times); undefined computes afresh.
   */
  private signatureOf(notebook: object, contentKey: string | undefined): string {
    if (contentKey === undefined) return this.computeSignature(notebook);
    const secret = this.loadSecret();
    const cached = this.signatureCache.get(contentKey);
    if (cached && cached.secret.equals(secret)) return cached.signature;
    const signature = this.computeSignature(notebook);
    this.signatureCache.delete(contentKey);
    this.signatureCache.set(contentKey, { secret, signature });
    if (this.signatureCache.size > 1024) {
      this.signatureCache.delete(this.signatureCache.keys().next().value as string);
    }
    return signature;
  }

  private readonly signatureCache = new Map<string, { secret: Buffer; signature: string }>();

  /**
   * Record the notebook's signature as trusted. Does nothing for notebooks older than nbformat 3
   * or that cannot be signed (unpaired surrogates: Python would fail the save instead). Rejects
   * with {@link SignatureStoreBusyError} if the database stays locked, as Python raises then.
   */
  async sign(notebook: object): Promise<void> {
    if (nbformatOf(notebook) < 3) return;
    const signature = this.signatureOrUndefined(notebook);
    if (signature !== undefined) await this.store.storeSignature(signature, this.algorithm);
  }

  /**
   * {@link sign} without waiting for the database: the notebook is trusted in this process at
   * once, and its signature is committed with the next group of writes. For a caller that keeps
   * the returned signature durable itself until `written` settles (the archive journal records
   * it, and {@link restoreSignatures} brings it back after a crash).
   *
   * @returns undefined when there is nothing to sign (as {@link sign}); otherwise the signature
   *   and its write, which rejects as {@link sign} would.
   */
  signSoon(notebook: object): { signature: ISignature; written: Promise<void> } | undefined {
    if (nbformatOf(notebook) < 3) return undefined;
    const digest = this.signatureOrUndefined(notebook);
    if (digest === undefined) return undefined;
    const signature = { digest, algorithm: this.algorithm };
    const written =
      this.store.storeSignatureSoon?.(digest, this.algorithm) ??
      this.store.storeSignature(digest, this.algorithm);
    return { signature, written };
  }

  /** Record signatures again (from the archive journal, after a crash), in one commit. */
  async restoreSignatures(signatures: readonly ISignature[]): Promise<void> {
    await this.store.storeSignatures(signatures);
  }

  /** Resolves once every signature written through {@link signSoon} so far has settled. */
  async flushed(): Promise<void> {
    await this.store.flushed?.();
  }

  /** Forget the notebook's signature (any nbformat), so that it is no longer trusted. */
  async unsign(notebook: object): Promise<void> {
    const signature = this.signatureOrUndefined(notebook);
    if (signature !== undefined) await this.store.removeSignature(signature, this.algorithm);
  }

  /**
   * Set `metadata.trusted` to `trusted` on every code cell (nbformat 3 worksheets or 4 cells);
   * no-op before nbformat 3. The inverse of {@link checkCells}.
   */
  markCells(notebook: object, trusted: boolean): void {
    if (nbformatOf(notebook) < 3) return;
    for (const cell of codeCells(notebook)) {
      if (!isDict(cell.metadata)) cell.metadata = {};
      (cell.metadata as Dict).trusted = trusted;
    }
  }

  /**
   * Remove `metadata.trusted` from every code cell and say whether all of them were trusted: a
   * cell is trusted if its flag was truthy (in Python's sense) or it has no output that could run
   * code, i.e. no `execute_result`/`display_data` (v3: `pyout`/`display_data`) carrying anything
   * beyond `output_type`, `execution_count` (v3: `prompt_number`) and `metadata`. No code cells
   * means trusted; before nbformat 3 nothing is.
   */
  checkCells(notebook: object): boolean {
    const version = nbformatOf(notebook);
    if (version < 3) return false;
    let trusted = true;
    // Every cell is visited, not just up to the first distrusted one, so every flag is removed.
    for (const cell of codeCells(notebook)) {
      if (!cellIsTrusted(cell, version)) trusted = false;
    }
    return trusted;
  }

  /** Release the signature store. */
  async close(): Promise<void> {
    await this.store.close();
  }

  private signatureOrUndefined(notebook: object): string | undefined {
    try {
      return this.computeSignature(notebook);
    } catch (error) {
      if (error instanceof NotebookSignatureError) return undefined;
      throw error;
    }
  }

  private readonly digest: string;
  private readonly secret: Buffer | undefined;
}

/** Options of {@link NotebookNotary}. */
export namespace NotebookNotary {
  export interface IOptions {
    /** The Jupyter data directory (see `jupyterDataDir()`); created 0700 if a secret is needed. */
    dataDir: string;
    /** nbformat's `NotebookNotary.algorithm`, a Python hashlib name; default `sha256`. */
    algorithm?: string;
    /** nbformat's `db_file`: default `<dataDir>/nbsignatures.db`; `:memory:` keeps nothing. */
    dbFile?: string;
    /** nbformat's `secret_file`: default `<dataDir>/notebook_secret`. */
    secretFile?: string;
    /** nbformat's `secret`: a fixed key instead of the secret file. */
    secret?: Buffer | string;
    /** nbformat's `SQLiteSignatureStore.cache_size`; default 65535. */
    cacheSize?: number;
    /** How long to wait for a Python transaction on the database; default 5000 ms. */
    busyTimeoutMs?: number;
    /** A store to use instead of the SQLite database (nbformat's `store_factory`). */
    store?: ISignatureStore;
    /** Where store warnings go; default `console.warn`. */
    warn?: (message: string) => void;
  }
}

type Dict = Record<string, unknown>;

function isDict(value: unknown): value is Dict {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof PyNumber)
  );
}

/**
 * A new key as Python makes it: 1024 random bytes, base64 in 76-character lines each ending in a
 * newline (`base64.encodebytes`), file mode 0600. Unlike Python the file is created with that mode
 * rather than chmod-ed afterwards, and never replaces a secret another process wrote meanwhile.
 */
function writeNewSecret(secretFile: string): Buffer {
  const secret = Buffer.from(encodeBase64Lines(randomBytes(1024)), 'ascii');
  // Python relies on JupyterApp having made the data dir (0700); we may run before any Jupyter.
  ensureJupyterDir(path.dirname(secretFile));
  try {
    fs.writeFileSync(secretFile, secret, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return fs.readFileSync(secretFile);
    throw error;
  }
  try {
    // The umask may have taken bits away; Python ends with exactly 0600, so do we.
    fs.chmodSync(secretFile, 0o600);
  } catch {
    // Python only warns when it cannot set the mode.
  }
  return secret;
}

/** `nb.nbformat` as a number; a notebook without one counts as too old to trust. */
function nbformatOf(notebook: object): number {
  const version = Number((notebook as Dict).nbformat);
  return Number.isFinite(version) ? version : 0;
}

/** nbformat's `yield_code_cells`: `cells` from v4 on, the worksheets' cells in v3. */
function codeCells(notebook: object): Dict[] {
  const nb = notebook as Dict;
  const version = nbformatOf(notebook);
  let cells: unknown[] = [];
  if (version >= 4) {
    cells = Array.isArray(nb.cells) ? nb.cells : [];
  } else if (version === 3 && Array.isArray(nb.worksheets)) {
    cells = nb.worksheets.flatMap(ws => (isDict(ws) && Array.isArray(ws.cells) ? ws.cells : []));
  }
  return cells.filter((cell): cell is Dict => isDict(cell) && cell.cell_type === 'code');
}

/** nbformat's `_check_cell`: pops the flag first, whatever the outputs. */
function cellIsTrusted(cell: Dict, version: number): boolean {
  if (isDict(cell.metadata) && 'trusted' in cell.metadata) {
    const flag = cell.metadata.trusted;
    delete cell.metadata.trusted;
    if (pythonTruthy(flag)) return true;
  }
  const unsafeTypes = version >= 4 ? ['execute_result', 'display_data'] : ['pyout', 'display_data'];
  const safeKeys = version >= 4 ? SAFE_KEYS_V4 : SAFE_KEYS_V3;
  const outputs = Array.isArray(cell.outputs) ? cell.outputs : [];
  for (const output of outputs) {
    if (!isDict(output) || !unsafeTypes.includes(output.output_type as string)) continue;
    for (const key of Object.keys(output)) {
      if (output[key] !== undefined && !safeKeys.has(key)) return false;
    }
  }
  return true;
}

const SAFE_KEYS_V4 = new Set(['output_type', 'execution_count', 'metadata']);
const SAFE_KEYS_V3 = new Set(['output_type', 'prompt_number', 'metadata']);

/** Python pops `metadata.signature` while hashing and puts it back only if it was not None. */
function dropNullSignature(notebook: object): void {
  const metadata = (notebook as Dict).metadata;
  if (isDict(metadata) && metadata.signature === null) delete metadata.signature;
}

/**
 * Anything that takes the canonical walk's pieces in order; each piece stands for its UTF-8 bytes.
 */
export interface ICanonicalSink {
  /** Take the next piece. */
  push(piece: string): void;
}

/**
 * Feed `notebook` to `sink` as nbformat's `yield_everything` yields it, with `metadata.signature`
 * left out: dict keys in Python's order (by code point), each key then its value; list items in
 * order; strings as themselves; every other leaf as Python's `str()` (`True`, `None`, `1.0`).
 * Containers themselves yield nothing. Keys whose value is `undefined` are skipped, as they would
 * be when the notebook is written out as JSON.
 *
 * Throws {@link NotebookSignatureError} on a string with an unpaired surrogate.
 */
export function walkNotebook(notebook: object, sink: ICanonicalSink): void {
  walk(notebook, sink, true);
}

/** The same walk on any JSON value, without the signature exclusion. */
export function walkJson(value: unknown, sink: ICanonicalSink): void {
  walk(value, sink, false);
}

function walk(value: unknown, sink: ICanonicalSink, isNotebookRoot: boolean): void {
  if (typeof value === 'string') {
    pushString(value, sink);
  } else if (Array.isArray(value)) {
    for (const item of value) walk(item, sink, false);
  } else if (isDict(value)) {
    for (const key of sortedKeys(value)) {
      const child = value[key];
      if (child === undefined) continue;
      pushString(key, sink);
      if (isNotebookRoot && key === 'metadata' && isDict(child)) {
        walkDict(child, sink, 'signature');
      } else {
        walk(child, sink, false);
      }
    }
  } else {
    sink.push(pythonStr(value));
  }
}

function walkDict(dict: Dict, sink: ICanonicalSink, omit: string): void {
  for (const key of sortedKeys(dict)) {
    const child = dict[key];
    if (key === omit || child === undefined) continue;
    pushString(key, sink);
    walk(child, sink, false);
  }
}

function pushString(text: string, sink: ICanonicalSink): void {
  if (!isWellFormed(text)) {
    throw new NotebookSignatureError(
      'The notebook contains a string with an unpaired surrogate, which cannot be encoded as UTF-8'
    );
  }
  sink.push(text);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const nativeIsWellFormed = (String.prototype as { isWellFormed?: () => boolean }).isWellFormed;

function isWellFormed(text: string): boolean {
  return nativeIsWellFormed ? nativeIsWellFormed.call(text) : !LONE_SURROGATE.test(text);
}

function sortedKeys(dict: Dict): string[] {
  return Object.keys(dict).sort(compareCodePoints);
}

/**
 * Streams pieces into the HMAC. Small pieces (keys, numbers, short strings) are gathered into
 * chunks of about 64 KiB first, since one `update` call per piece costs more than hashing it;
 * strings of 1 KiB and more go straight in rather than being copied into a chunk. Pieces are whole
 * well-formed strings, so joining them never splits a character and hashes exactly the bytes
 * Python hashes.
 */
class HmacSink implements ICanonicalSink {
  constructor(private readonly hmac: Hmac) {}

  push(piece: string): void {
    if (piece.length >= DIRECT) {
      this.flush();
      this.hmac.update(piece, 'utf8');
      return;
    }
    this.pending.push(piece);
    this.pendingLength += piece.length;
    if (this.pendingLength >= CHUNK) this.flush();
  }

  flush(): void {
    if (this.pending.length === 0) return;
    this.hmac.update(this.pending.join(''), 'utf8');
    this.pending = [];
    this.pendingLength = 0;
  }

  private pending: string[] = [];
  private pendingLength = 0;
}

const CHUNK = 64 * 1024;
const DIRECT = 1024;
