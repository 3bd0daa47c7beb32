/**
 * Differential conformance: notebook trust (upstream test_api.py's test_trust, test_manager.py's
 * test_check_and_sign) and the round trip through a shared notary: both servers use the same
 * Jupyter data directory (`nbsignatures.db`, `notebook_secret`), so a notebook signed by Jupyter
 * opens trusted through us, and one we sign opens trusted in Jupyter.
 */
import { randomInt } from 'node:crypto';
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  conformanceSuite,
  contentsPath,
  get,
  join2,
  put,
  type Req,
  type Side
} from '../support/compare';
import { TEST_API_DIRS } from '../support/tree';

const env = conformanceSuite({ shareNotary: true });

const trust = (apiPath: string): Req => ({ method: 'POST', path: contentsPath(apiPath, 'trust') });

type Cell = { cell_type: string; metadata: Record<string, unknown>; [key: string]: unknown };
type Notebook = { cells: Cell[]; metadata: Record<string, unknown>; [key: string]: unknown };

/**
 * A notebook like test_manager.py's `new_notebook()`: a code cell with a JavaScript display (a
 * rich output, so the notebook is untrusted until signed) and a unique counter, so that no earlier
 * signature matches it.
 */
function untrustedNotebook(trusted?: boolean): Notebook {
  const meta: Record<string, unknown> = trusted === undefined ? {} : { trusted };
  return {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: { counter: randomInt(2 ** 47) },
    cells: [
      { cell_type: 'markdown', id: 'md', metadata: {}, source: '# signed?' },
      {
        cell_type: 'code',
        id: 'code',
        execution_count: 1,
        metadata: meta,
        source: "print('hi')",
        outputs: [
          {
            output_type: 'display_data',
            metadata: {},
            data: { 'application/javascript': "alert('hi');", 'text/plain': 'x' }
          }
        ]
      },
      {
        cell_type: 'code',
        id: 'code2',
        execution_count: 2,
        metadata: { ...meta, tags: ['t'] },
        source: '1.5',
        outputs: [
          {
            output_type: 'execute_result',
            execution_count: 2,
            metadata: {},
            data: { 'text/html': '<b>1.5</b>', 'text/plain': '1.5' }
          }
        ]
      }
    ]
  };
}

/** The `trusted` flags of the code cells of a GET answer. */
function trustedFlags(json: unknown): unknown[] {
  const nb = (json as { content: Notebook }).content;
  return nb.cells.filter(c => c.cell_type === 'code').map(c => c.metadata.trusted);
}

describe('trust (test_api.py, test_manager.py)', () => {
  test('test_trust', async () => {
    for (const [dir, name] of TEST_API_DIRS) {
      const { jupyter } = await env.both(trust(join2(dir, `${name}.ipynb`)));
      expect(jupyter.status).toBe(201);
    }
    // A missing notebook, a file that is not a notebook, a directory.
    await env.both(trust('nope.ipynb'));
    await env.both(trust('foo/a.txt'));
    await env.both(trust('foo'));
  });

  test('test_check_and_sign', async () => {
    const created = await env.both({
      method: 'POST',
      path: contentsPath(''),
      json: { type: 'notebook' }
    });
    expect(created.jupyter.status).toBe(201);
    const path = 'Untitled.ipynb';
    const nb = untrustedNotebook();
    expect((await env.both(put(path, { type: 'notebook', content: nb }))).jupyter.status).toBe(200);
    const before = await env.both(get(path));
    expect(trustedFlags(before.jupyter.json)).toEqual([false, false]);
    expect((await env.both(trust(path))).jupyter.status).toBe(201);
    const after = await env.both(get(path));
    expect(trustedFlags(after.jupyter.json)).toEqual([true, true]);
    // Saving what we read (cells marked trusted) keeps it signed.
    const content = (after.jupyter.json as { content: Notebook }).content;
    content.metadata.saved = true;
    expect((await env.both(put(path, { type: 'notebook', content }))).jupyter.status).toBe(200);
    expect(trustedFlags((await env.both(get(path))).jupyter.json)).toEqual([true, true]);
  });

  test('saves sign only when every code cell with rich output is trusted', async () => {
    const all = untrustedNotebook(true);
    await env.both(put('all.ipynb', { type: 'notebook', content: all }));
    expect(trustedFlags((await env.both(get('all.ipynb'))).jupyter.json)).toEqual([true, true]);
    const some = untrustedNotebook(true);
    some.cells[2].metadata.trusted = false;
    await env.both(put('some.ipynb', { type: 'notebook', content: some }));
    expect(trustedFlags((await env.both(get('some.ipynb'))).jupyter.json)).toEqual([false, false]);
    // No rich output at all: trusted without any flag.
    const plain: Notebook = {
      nbformat: 4,
      nbformat_minor: 5,
      metadata: { counter: randomInt(2 ** 47) },
      cells: [
        {
          cell_type: 'code',
          id: 'plain',
          execution_count: 1,
          metadata: {},
          source: "print('x')",
          outputs: [{ output_type: 'stream', name: 'stdout', text: 'x\n' }]
        }
      ]
    };
    await env.both(put('plain.ipynb', { type: 'notebook', content: plain }));
    expect(trustedFlags((await env.both(get('plain.ipynb'))).jupyter.json)).toEqual([true]);
  });
});

/**
 * Copy the notebook `<stem>.ipynb` and its checkpoint, byte for byte, from one server's root to
 * the other's.
 */
async function copyWithCheckpoint(stem: string, from: Side, to: Side): Promise<void> {
  await copyFile(join(env.root(from), `${stem}.ipynb`), join(env.root(to), `${stem}.ipynb`));
  const checkpoint = `${stem}-checkpoint.ipynb`;
  await copyFile(
    join(env.root(from), '.ipynb_checkpoints', checkpoint),
    join(await ensureDir(env.root(to), '.ipynb_checkpoints'), checkpoint)
  );
}

describe('trust round trip through the shared notary', () => {
  test('a notebook signed by Jupyter opens trusted through our server', async () => {
    const nb = untrustedNotebook();
    // Identical bytes on both sides, written by Jupyter's nbformat through a save.
    expect(
      (await env.one('jupyter', put('signed by jupyter.ipynb', { type: 'notebook', content: nb })))
        .status
    ).toBe(201);
    await copyWithCheckpoint('signed by jupyter', 'jupyter', 'ours');
    expect(trustedFlags((await env.both(get('signed by jupyter.ipynb'))).ours.json)).toEqual([
      false,
      false
    ]);
    // Only Jupyter is asked to trust it.
    expect((await env.one('jupyter', trust('signed by jupyter.ipynb'))).status).toBe(201);
    const { jupyter, ours } = await env.both(get('signed by jupyter.ipynb'));
    expect(trustedFlags(jupyter.json)).toEqual([true, true]);
    expect(trustedFlags(ours.json)).toEqual([true, true]);
  });

  test('a notebook saved through us with all code cells trusted opens trusted in Jupyter', async () => {
    const nb = untrustedNotebook(true);
    // Only we save it (and so sign it).
    expect(
      (await env.one('ours', put('signed by us.ipynb', { type: 'notebook', content: nb }))).status
    ).toBe(201);
    const bytes = await readFile(join(env.root('ours'), 'signed by us.ipynb'));
    await copyWithCheckpoint('signed by us', 'ours', 'jupyter');
    const { jupyter, ours } = await env.both(get('signed by us.ipynb'));
    expect(trustedFlags(jupyter.json)).toEqual([true, true]);
    expect(trustedFlags(ours.json)).toEqual([true, true]);
    // And our bytes are the bytes Jupyter writes for the same model.
    await env.one('jupyter', put('signed by us.ipynb', { type: 'notebook', content: nb }));
    expect(await readFile(join(env.root('jupyter'), 'signed by us.ipynb'))).toEqual(bytes);
  });

  test('a notebook nobody signed is untrusted on both sides', async () => {
    const nb = untrustedNotebook();
    const text = `${JSON.stringify(nb, null, 1)}\n`;
    await env.writeBoth('unsigned.ipynb', text);
    const { jupyter } = await env.both(get('unsigned.ipynb'));
    expect(trustedFlags(jupyter.json)).toEqual([false, false]);
  });
});

/** Create `root/rel` if missing; returns its path. */
async function ensureDir(root: string, rel: string): Promise<string> {
  const dir = join(root, rel);
  await mkdir(dir, { recursive: true });
  return dir;
}
