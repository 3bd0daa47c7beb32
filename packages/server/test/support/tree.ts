/**
 * The directory tree of Jupyter Server's own contents API tests (`tests/conftest.py`'s `contents`
 * fixture, used by `tests/services/contents/test_api.py`), plus extras: hidden entries, hide_globs,
 * symlinks (inside, leading outside the root, broken), unicode, NFD and URL-special names, and a
 * large binary file.
 *
 * The template is built once per process; each differential test gets two identical copies of it,
 * one served by Jupyter Server and one by our contents manager, each inside its own "sandbox"
 * directory whose other entries (the parent of the root) must never change.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cp,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  symlink,
  writeFile
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findVenvPython } from './jupyterServer';

/** `(directory, name)` pairs of upstream `tests/conftest.py` `dirs`. */
export const TEST_API_DIRS: ReadonlyArray<readonly [dir: string, name: string]> = [
  ['', 'inroot'],
  ['Directory with spaces in', 'inspace'],
  ['unicodé', 'innonascii'],
  ['foo', 'a'],
  ['foo', 'b'],
  ['foo', 'name with spaces'],
  ['foo', 'unicodé'],
  ['foo/bar', 'baz'],
  ['ordering', 'A'],
  ['ordering', 'b'],
  ['ordering', 'C'],
  ['å b', 'ç d']
];

/** The distinct directories of {@link TEST_API_DIRS} (upstream's `folders` fixture). */
export const TEST_API_FOLDERS: readonly string[] = [...new Set(TEST_API_DIRS.map(([dir]) => dir))];

/** Size of `large.bin` in the template (above Lab's 1 MiB chunking threshold). */
export const TEMPLATE_LARGE_FILE_SIZE = 3 * 1024 * 1024 + 17;

/** Names with characters that URL quoting treats differently (Python `quote` vs `encodeURIComponent`). */
export const SPECIAL_NAMES: readonly string[] = [
  "quote !'()*.txt",
  'amp & plus + semi ; eq = at @ dollar $ comma ,.txt',
  'hash # question ? percent %.txt',
  'tilde ~ under _ dash -.txt',
  'emoji 😀 file.txt',
  // NFD: "e" + combining acute; must be kept byte for byte, never normalised.
  'cafe\u0301 nfd.txt'
];

/** The text of `outside/secret.txt` next to the root (the target of the outside symlinks). */
export const OUTSIDE_SECRET = 'secret outside the root\n';

/** Deterministic pseudo-random bytes (xorshift32), so both trees and reruns have the same large files. */
export function pseudoRandomBytes(size: number, seed = 0x9e3779b9): Buffer {
  const out = Buffer.allocUnsafe(size);
  let x = seed >>> 0 || 1;
  let i = 0;
  for (; i + 4 <= size; i += 4) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out.writeUInt32LE(x, i);
  }
  for (; i < size; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

let newNotebookBytes: Buffer | undefined;

/**
 * The bytes of `nbformat.writes(nbformat.v4.new_notebook(), version=4)` as the venv's nbformat
 * produces them (what upstream's fixture writes), computed once per process.
 */
export function newNotebookFromPython(): Buffer {
  if (newNotebookBytes === undefined) {
    newNotebookBytes = execFileSync(
      findVenvPython(),
      [
        '-c',
        'import sys, nbformat\n' +
          'sys.stdout.buffer.write(nbformat.writes(nbformat.v4.new_notebook(), version=4).encode("utf-8"))'
      ],
      { timeout: 60_000 }
    );
  }
  return newNotebookBytes;
}

/**
 * Write the template tree into `dir` (which must exist and be empty).
 *
 * @param dir - the directory that becomes the contents root.
 */
export async function writeTree(dir: string): Promise<void> {
  const notebook = newNotebookFromPython();
  for (const [sub, name] of TEST_API_DIRS) {
    const d = join(dir, sub);
    await mkdir(d, { recursive: true });
    await writeFile(join(d, `${name}.ipynb`), notebook);
    await writeFile(join(d, `${name}.txt`), `${name} text file`, 'utf8');
    await writeFile(
      join(d, `${name}.blob`),
      Buffer.concat([Buffer.from(name, 'utf8'), Buffer.from([0xff])])
    );
  }
  // Hidden entries (test_get_404_hidden and friends).
  await mkdir(join(dir, '.hidden'));
  await writeFile(join(dir, '.hidden', 'visible.txt'), 'visible text file in hidden dir', 'utf8');
  await writeFile(join(dir, '.hidden.txt'), 'hidden text file', 'utf8');
  // hide_globs: never listed, even though not hidden.
  await mkdir(join(dir, 'globs', '__pycache__'), { recursive: true });
  await writeFile(
    join(dir, 'globs', '__pycache__', 'mod.cpython-311.pyc'),
    Buffer.from([0x6f, 0x0d, 0x0d, 0x0a])
  );
  await writeFile(join(dir, 'globs', 'mod.pyc'), Buffer.from([0x6f, 0x0d]));
  await writeFile(join(dir, 'globs', 'backup.txt~'), 'old', 'utf8');
  await writeFile(join(dir, 'globs', 'kept.py'), 'print("kept")\n', 'utf8');
  // Symlinks: one inside, two leading outside the root, one broken.
  await mkdir(join(dir, 'links'));
  await writeFile(join(dir, 'links', 'plain.txt'), 'plain file next to the links', 'utf8');
  await symlink('../foo/a.txt', join(dir, 'links', 'inside.txt'));
  await symlink('../../outside/secret.txt', join(dir, 'links', 'outside.txt'));
  await symlink('../../outside', join(dir, 'links', 'outside-dir'));
  await symlink('does-not-exist.txt', join(dir, 'links', 'broken.txt'));
  // Unicode, NFD and URL-special names.
  await mkdir(join(dir, 'special ünï cødé'));
  for (const name of SPECIAL_NAMES) {
    await writeFile(join(dir, 'special ünï cødé', name), `${name} text`, 'utf8');
  }
  await writeFile(join(dir, 'special ünï cødé', 'ünï.ipynb'), notebook);
  // Binary files: a large one and one with every byte value.
  await writeFile(join(dir, 'large.bin'), pseudoRandomBytes(TEMPLATE_LARGE_FILE_SIZE));
  await writeFile(join(dir, 'allbytes.bin'), Buffer.from(Array.from({ length: 256 }, (_, i) => i)));
  await writeFile(join(dir, 'empty.txt'), '');
  await writeFile(join(dir, 'latin1.txt'), Buffer.from('caf\xe9\n', 'latin1'));
}

/**
 * Write the entries that live next to the root, in its parent directory (the "sandbox"): the
 * target of the outside symlinks and upstream test_escape_root's `foo` and `bar`.
 */
export async function writeOutside(sandbox: string): Promise<void> {
  await mkdir(join(sandbox, 'outside'), { recursive: true });
  await writeFile(join(sandbox, 'outside', 'secret.txt'), OUTSIDE_SECRET, 'utf8');
  await writeFile(join(sandbox, 'foo'), 'foo', 'utf8');
  await writeFile(join(sandbox, 'bar'), 'bar', 'utf8');
}

let templateDir: Promise<string> | undefined;

/** The template tree, built once per process in a temporary directory. */
export function templateTree(): Promise<string> {
  templateDir ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), 'jupyter-store-tree-'));
    await writeTree(dir);
    return dir;
  })();
  return templateDir;
}

/** Remove the template tree of this process (call when no more pairs will be reset). */
export async function disposeTemplateTree(): Promise<void> {
  const pending = templateDir;
  templateDir = undefined;
  if (pending !== undefined) await rm(await pending, { recursive: true, force: true });
}

/** One side of a pair: the sandbox (parent) and the contents root inside it. */
export interface TreeSide {
  /** The parent of the root; besides `root/`, it holds `outside/`, `foo` and `bar`. */
  readonly sandbox: string;
  /** The contents root. */
  readonly root: string;
}

/** Two identical trees: one for Jupyter Server, one for our contents manager. */
export interface TreePair {
  readonly base: string;
  readonly jupyter: TreeSide;
  readonly ours: TreeSide;
}

/**
 * Create the directories of a tree pair under `base` (roots empty until {@link resetTreePair}).
 *
 * @param base - a directory for this pair; created if missing.
 */
export async function createTreePair(base: string): Promise<TreePair> {
  const side = async (name: string): Promise<TreeSide> => {
    const sandbox = join(base, name);
    const root = join(sandbox, 'root');
    await mkdir(root, { recursive: true });
    return { sandbox, root };
  };
  return { base, jupyter: await side('jupyter'), ours: await side('ours') };
}

/** Empty a directory without removing it (a running server keeps its root). */
export async function emptyDir(dir: string): Promise<void> {
  for (const name of await readdir(dir))
    await rm(join(dir, name), { recursive: true, force: true });
}

/**
 * Give both sides a fresh copy of the template: empty each sandbox (keeping `root/` itself, which a
 * running server holds), copy the tree into the root, and rewrite the outside entries.
 */
export async function resetTreePair(pair: TreePair): Promise<void> {
  const template = await templateTree();
  for (const side of [pair.jupyter, pair.ours]) {
    for (const name of await readdir(side.sandbox)) {
      if (name !== 'root') await rm(join(side.sandbox, name), { recursive: true, force: true });
    }
    await emptyDir(side.root);
    await cp(template, side.root, {
      recursive: true,
      verbatimSymlinks: true,
      preserveTimestamps: false
    });
    await writeOutside(side.sandbox);
  }
}

/** One entry of a {@link snapshotDir} snapshot. */
export interface DiskEntry {
  readonly type: 'file' | 'dir' | 'symlink' | 'other';
  /** sha256 of the bytes (files), the link text (symlinks), or '' (directories). */
  readonly digest: string;
  /** Size in bytes (files). */
  readonly size?: number;
}

/**
 * Snapshot a directory tree: relative path → type and sha256 of the bytes. Symlinks are recorded,
 * never followed; mtimes and modes are ignored.
 *
 * @param dir - the directory to walk.
 * @param skip - top-level names to leave out (e.g. `root` when snapshotting a sandbox).
 */
export async function snapshotDir(
  dir: string,
  skip: readonly string[] = []
): Promise<Map<string, DiskEntry>> {
  const out = new Map<string, DiskEntry>();
  const walk = async (rel: string): Promise<void> => {
    const names = (await readdir(join(dir, rel))).sort();
    for (const name of names) {
      if (rel === '' && skip.includes(name)) continue;
      const relPath = rel === '' ? name : `${rel}/${name}`;
      const full = join(dir, relPath);
      const st = await lstat(full);
      if (st.isSymbolicLink()) {
        out.set(relPath, { type: 'symlink', digest: await readlink(full) });
      } else if (st.isDirectory()) {
        out.set(relPath, { type: 'dir', digest: '' });
        await walk(relPath);
      } else if (st.isFile()) {
        const bytes = await readFile(full);
        out.set(relPath, {
          type: 'file',
          digest: createHash('sha256').update(bytes).digest('hex'),
          size: bytes.length
        });
      } else {
        out.set(relPath, { type: 'other', digest: '' });
      }
    }
  };
  await walk('');
  return out;
}

/** One difference between two snapshots. */
export interface SnapshotDifference {
  /** The relative path. */
  readonly path: string;
  /** A one-line description. */
  readonly text: string;
}

/**
 * Describe the differences between two snapshots; empty when they are equal.
 *
 * @param a - the first snapshot (e.g. Jupyter's root).
 * @param b - the second snapshot (e.g. ours).
 * @param labels - names for the two sides in the messages.
 */
export function diffSnapshots(
  a: Map<string, DiskEntry>,
  b: Map<string, DiskEntry>,
  labels: readonly [string, string] = ['jupyter', 'ours']
): SnapshotDifference[] {
  const out: SnapshotDifference[] = [];
  const show = (e: DiskEntry): string =>
    e.type === 'file'
      ? `file ${e.size} bytes sha256 ${e.digest.slice(0, 12)}`
      : `${e.type} ${e.digest}`.trim();
  for (const key of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const x = a.get(key);
    const y = b.get(key);
    const name = JSON.stringify(key);
    if (x === undefined && y !== undefined)
      out.push({ path: key, text: `${name}: only in ${labels[1]} (${show(y)})` });
    else if (y === undefined && x !== undefined)
      out.push({ path: key, text: `${name}: only in ${labels[0]} (${show(x)})` });
    else if (x !== undefined && y !== undefined && (x.type !== y.type || x.digest !== y.digest))
      out.push({ path: key, text: `${name}: ${labels[0]} ${show(x)}, ${labels[1]} ${show(y)}` });
  }
  return out;
}
