/**
 * A rename that keeps the old name while it is announced (link, announce, unlink: see
 * `ContentsManager.rename`) loses nothing when the process is killed: a kill between the link
 * and the unlink leaves both names, one file; at any other moment one name or the other.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { ContentsManager } from '../../src/contents/manager';

const MANAGER = path.resolve(__dirname, '../../lib/contents/manager.js');

/**
 * A child that renames `x.ipynb` to `y.ipynb` and back forever, with an announcing listener that
 * says `announcing` and waits `argv[2]` ms (forever for -1) before the old name goes.
 */
const RENAMER = `
const { ContentsManager } = require(${JSON.stringify(MANAGER)});
const [root, wait] = process.argv.slice(1);
const manager = new ContentsManager({ rootDir: root, deleteToTrash: false, announceTimeoutMs: 60000 });
manager.onChanged(() => {
  process.stdout.write('announcing\\n');
  return Number(wait) < 0 ? new Promise(() => {}) : new Promise(r => setTimeout(r, Number(wait)));
}, { announces: true });
(async () => {
  process.stdout.write('ready\\n');
  for (let i = 0; ; i++) {
    await manager.rename(i % 2 ? 'y.ipynb' : 'x.ipynb', i % 2 ? 'x.ipynb' : 'y.ipynb');
  }
})();
`;

const NOTEBOOK = JSON.stringify({ cells: [], metadata: {}, nbformat: 4, nbformat_minor: 5 });

function start(root: string, waitMs: number): ChildProcess {
  return spawn(process.execPath, ['-e', RENAMER, root, String(waitMs)], {
    stdio: ['ignore', 'pipe', 'inherit']
  });
}

function said(child: ChildProcess, line: string): Promise<void> {
  return new Promise(resolve => {
    let seen = '';
    const listen = (data: Buffer) => {
      seen += data.toString();
      if (seen.includes(`${line}\n`)) {
        child.stdout!.off('data', listen);
        resolve();
      }
    };
    child.stdout!.on('data', listen);
  });
}

async function kill(child: ChildProcess): Promise<void> {
  const exited = new Promise(resolve => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/** The visible names in the root, sorted (hidden temporaries and checkpoints left out). */
async function visible(root: string): Promise<string[]> {
  return (await fs.readdir(root)).filter(name => !name.startsWith('.')).sort();
}

describe('crash safety of renames that keep the old name while announced', () => {
  let root: string;
  beforeAll(async () => {
    await fs.access(MANAGER).catch(() => {
      throw new Error(`${MANAGER} is missing: run "npm run build" first (scripts/test.sh does)`);
    });
  });
  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'rename-crash-itest-'));
    await fs.writeFile(path.join(root, 'x.ipynb'), NOTEBOOK);
  });
  afterEach(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it('leaves both names, one whole file, when killed while the rename is announced; a restart serves both', async () => {
    const child = start(root, -1);
    await said(child, 'announcing');
    await kill(child);
    expect(await visible(root)).toEqual(['x.ipynb', 'y.ipynb']);
    const [x, y] = await Promise.all(
      ['x.ipynb', 'y.ipynb'].map(name => fs.stat(path.join(root, name)))
    );
    expect(y.ino).toBe(x.ino);

    // After a restart both names are served, whole; saving one leaves the other as it was.
    const manager = new ContentsManager({ rootDir: root, deleteToTrash: false });
    for (const name of ['x.ipynb', 'y.ipynb']) {
      const model = await manager.get(name);
      expect(model).toMatchObject({ type: 'notebook', content: { cells: [] } });
    }
    await manager.put('y.ipynb', {
      type: 'notebook',
      content: {
        cells: [{ cell_type: 'markdown', source: 'new', metadata: {} }],
        metadata: {},
        nbformat: 4,
        nbformat_minor: 5
      }
    });
    expect(await fs.readFile(path.join(root, 'x.ipynb'), 'utf8')).toBe(NOTEBOOK);
    expect(await fs.readFile(path.join(root, 'y.ipynb'), 'utf8')).toContain('new');
  });

  it('leaves the file whole under one name or both whenever the renamer is killed', async () => {
    // Kill at a spread of moments, so some land between the link and the unlink.
    for (const delayMs of [3, 10, 25, 40, 70, 110, 160]) {
      const child = start(root, 1);
      await said(child, 'ready');
      await new Promise(resolve => setTimeout(resolve, delayMs));
      await kill(child);
      const names = await visible(root);
      expect(names.length).toBeGreaterThanOrEqual(1);
      expect(names.every(name => name === 'x.ipynb' || name === 'y.ipynb')).toBe(true);
      for (const name of names) {
        expect(await fs.readFile(path.join(root, name), 'utf8')).toBe(NOTEBOOK);
      }
      // Start the next round from one name, the duplicate removed as a user would.
      if (names.length === 2) await fs.unlink(path.join(root, 'y.ipynb'));
      else if (names[0] === 'y.ipynb')
        await fs.rename(path.join(root, 'y.ipynb'), path.join(root, 'x.ipynb'));
    }
  });
});
