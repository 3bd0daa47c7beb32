/**
 * The notary's behaviour as nbformat's `NotebookNotary`: the trust round trip, the cell rules of
 * `mark_cells`/`check_cells`, and the secret file.
 */
import { encodeBase64Lines } from '../../src/contents/model';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PyNumber } from '@jupyter-store/nbformat';
import { MemorySignatureStore, NotebookNotary, pythonTruthy } from '../../src/contents/trust';

type Json = Record<string, unknown>;

let tmp: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trust-notary-'));
});
afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

function codeCell(outputs: Json[], metadata: Json = {}): Json {
  return { cell_type: 'code', id: 'c', metadata, source: 'x', execution_count: 1, outputs };
}

function notebook(cells: Json[], nbformat = 4): Json {
  return { nbformat, nbformat_minor: 5, metadata: { kernelspec: { name: 'python3' } }, cells };
}

const html = (): Json => ({
  output_type: 'display_data',
  metadata: {},
  data: { 'text/html': '<script>alert(1)</script>' }
});

describe('check / sign / unsign', () => {
  it('round-trips through the signature database on disk', async () => {
    const notary = new NotebookNotary({ dataDir: tmp });
    const nb = notebook([codeCell([html()])]);
    expect(await notary.checkSignature(nb)).toBe(false);
    await notary.sign(nb);
    expect(await notary.checkSignature(nb)).toBe(true);

    // A second notary on the same data dir (a restarted server) sees the same trust.
    const again = new NotebookNotary({ dataDir: tmp });
    expect(await again.checkSignature(structuredClone(nb))).toBe(true);

    // Any change to the content makes it a different notebook.
    const tampered = structuredClone(nb);
    ((tampered.cells as Json[])[0].outputs as Json[])[0].metadata = { isolated: true };
    expect(await again.checkSignature(tampered)).toBe(false);

    await again.unsign(nb);
    expect(await notary.checkSignature(nb)).toBe(false);
    await notary.close();
    await again.close();
    expect(fs.existsSync(path.join(tmp, 'nbsignatures.db'))).toBe(true);
  });

  it('keeps nothing on disk with db_file :memory:', async () => {
    const notary = new NotebookNotary({ dataDir: tmp, dbFile: ':memory:' });
    const nb = notebook([]);
    await notary.sign(nb);
    expect(await notary.checkSignature(nb)).toBe(true);
    expect(fs.existsSync(path.join(tmp, 'nbsignatures.db'))).toBe(false);
    const other = new NotebookNotary({ dataDir: tmp, dbFile: ':memory:' });
    expect(await other.checkSignature(nb)).toBe(false);
    await notary.close();
    await other.close();
  });

  it('never trusts or signs notebooks older than nbformat 3, but unsign still works', async () => {
    const store = new MemorySignatureStore();
    const notary = new NotebookNotary({ dataDir: tmp, store, secret: 's' });
    const old = { nbformat: 2, metadata: {}, worksheets: [] };
    await notary.sign(old);
    expect(await store.checkSignature(notary.computeSignature(old), 'sha256')).toBe(false);
    await store.storeSignature(notary.computeSignature(old), 'sha256');
    expect(await notary.checkSignature(old)).toBe(false);
    await notary.unsign(old);
    expect(await store.checkSignature(notary.computeSignature(old), 'sha256')).toBe(false);
  });

  it('stores the Python algorithm name with the digest', async () => {
    const store = new MemorySignatureStore();
    const notary = new NotebookNotary({ dataDir: tmp, store, secret: 's', algorithm: 'sha3_256' });
    const nb = notebook([]);
    await notary.sign(nb);
    expect(await store.checkSignature(notary.computeSignature(nb), 'sha3_256')).toBe(true);
    expect(notary.computeSignature(nb)).toHaveLength(64);
  });

  it('neither signs nor trusts a notebook Python could not encode', async () => {
    const store = new MemorySignatureStore();
    const notary = new NotebookNotary({ dataDir: tmp, store, secret: 's' });
    const nb = notebook([{ cell_type: 'markdown', metadata: {}, source: 'lone \uD800' }]);
    await notary.sign(nb);
    expect(await notary.checkSignature(nb)).toBe(false);
    await expect(notary.unsign(nb)).resolves.toBeUndefined();
  });
});

describe('markCells / checkCells', () => {
  const notary = new NotebookNotary({ dataDir: '/x', dbFile: ':memory:', secret: 's' });
  afterAll(() => notary.close());

  it('marks code cells only, in v4 cells and v3 worksheets', () => {
    const nb4 = notebook([codeCell([]), { cell_type: 'markdown', metadata: {}, source: '' }]);
    notary.markCells(nb4, true);
    const cells = nb4.cells as Json[];
    expect(cells[0].metadata).toEqual({ trusted: true });
    expect(cells[1].metadata).toEqual({});
    notary.markCells(nb4, false);
    expect(cells[0].metadata).toEqual({ trusted: false });

    const nb3 = {
      nbformat: 3,
      metadata: {},
      worksheets: [
        { cells: [{ cell_type: 'code', metadata: {}, outputs: [] }] },
        { cells: [{ cell_type: 'heading', metadata: {} }] }
      ]
    };
    notary.markCells(nb3, true);
    expect(nb3.worksheets[0].cells[0].metadata).toEqual({ trusted: true });
    expect(nb3.worksheets[1].cells[0].metadata).toEqual({});

    const nb2 = { nbformat: 2, metadata: {}, cells: [codeCell([])] };
    notary.markCells(nb2, true);
    expect(nb2.cells[0].metadata).toEqual({});
  });

  it('trusts cells whose outputs cannot run code, and no code cells at all', () => {
    expect(notary.checkCells(notebook([]))).toBe(true);
    expect(
      notary.checkCells(notebook([{ cell_type: 'markdown', metadata: {}, source: '<b>' }]))
    ).toBe(true);
    const harmless = [
      { output_type: 'stream', name: 'stdout', text: 'hi' },
      { output_type: 'error', ename: 'E', evalue: 'v', traceback: [] },
      // Rich output types are harmless when they carry nothing but the safe keys.
      { output_type: 'execute_result', execution_count: 1, metadata: { a: 1 } },
      { output_type: 'display_data', metadata: {} }
    ];
    expect(notary.checkCells(notebook([codeCell(harmless)]))).toBe(true);
  });

  it('distrusts rich output unless the cell is flagged trusted', () => {
    expect(notary.checkCells(notebook([codeCell([html()])]))).toBe(false);
    const executeResult = {
      output_type: 'execute_result',
      execution_count: 1,
      metadata: {},
      data: {}
    };
    // Even an empty data bundle is a key outside the safe set.
    expect(notary.checkCells(notebook([codeCell([executeResult])]))).toBe(false);
    expect(notary.checkCells(notebook([codeCell([html()], { trusted: true })]))).toBe(true);
    expect(notary.checkCells(notebook([codeCell([html()], { trusted: false })]))).toBe(false);
    // One untrusted cell makes the notebook untrusted.
    expect(
      notary.checkCells(notebook([codeCell([html()], { trusted: true }), codeCell([html()])]))
    ).toBe(false);
  });

  it('uses Python truthiness for the flag and pops it from every code cell', () => {
    const flags = [1, 'yes', [0], { a: 1 }, new PyNumber('float', '2.0')];
    for (const flag of flags) {
      expect(notary.checkCells(notebook([codeCell([html()], { trusted: flag })]))).toBe(true);
    }
    const falsy = [0, '', [], {}, null, new PyNumber('float', '0.0')];
    for (const flag of falsy) {
      expect(notary.checkCells(notebook([codeCell([html()], { trusted: flag })]))).toBe(false);
    }
    const cells = [
      codeCell([html()]),
      codeCell([], { trusted: true, tags: ['a'] }),
      codeCell([html()], { trusted: false })
    ];
    expect(notary.checkCells(notebook(cells))).toBe(false);
    // Every flag is gone, even after the first untrusted cell.
    expect(cells.map(cell => cell.metadata)).toEqual([{}, { tags: ['a'] }, {}]);
  });

  it('applies the v3 output names and safe keys', () => {
    const v3 = (outputs: Json[]) => ({
      nbformat: 3,
      metadata: {},
      worksheets: [{ cells: [{ cell_type: 'code', metadata: {}, outputs }] }]
    });
    expect(notary.checkCells(v3([{ output_type: 'pyout', prompt_number: 1, metadata: {} }]))).toBe(
      true
    );
    expect(notary.checkCells(v3([{ output_type: 'pyout', prompt_number: 1, html: '<b>' }]))).toBe(
      false
    );
    // execution_count is not a v3 safe key.
    expect(notary.checkCells(v3([{ output_type: 'pyout', execution_count: 1 }]))).toBe(false);
    // execute_result is not a v3 rich type.
    expect(notary.checkCells(v3([{ output_type: 'execute_result', html: '<b>' }]))).toBe(true);
  });

  it('never trusts notebooks older than nbformat 3', () => {
    expect(notary.checkCells({ nbformat: 2, cells: [] })).toBe(false);
    expect(notary.checkCells({ cells: [] })).toBe(false);
  });

  it('mark then check is the identity for a trusted notebook', () => {
    const nb = notebook([codeCell([html()]), codeCell([])]);
    notary.markCells(nb, true);
    expect(notary.checkCells(nb)).toBe(true);
    expect((nb.cells as Json[]).map(cell => cell.metadata)).toEqual([{}, {}]);
  });
});

describe('pythonTruthy', () => {
  it('follows bool() of JSON values', () => {
    expect([true, 1, -1, 0.5, NaN, 'a', [null], { a: null }].map(pythonTruthy)).toEqual(
      Array(8).fill(true)
    );
    expect([false, 0, -0, '', [], {}, null, undefined].map(pythonTruthy)).toEqual(
      Array(8).fill(false)
    );
  });
});

describe('secret file', () => {
  it('is created as Python creates it: base64 of 1024 bytes in 76-char lines, mode 0600', async () => {
    const dataDir = path.join(tmp, 'nested', 'data');
    const notary = new NotebookNotary({ dataDir, dbFile: ':memory:' });
    notary.computeSignature(notebook([]));
    const file = path.join(dataDir, 'notebook_secret');
    const text = fs.readFileSync(file, 'ascii');
    const lines = text.split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toHaveLength(18);
    expect(lines.every(line => line.length === 76 && /^[A-Za-z0-9+/=]+$/.test(line))).toBe(true);
    expect(Buffer.from(lines.join(''), 'base64')).toHaveLength(1024);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    // A data dir we had to create is private, as jupyter_core makes it.
    expect(fs.statSync(dataDir).mode & 0o077).toBe(0);
    await notary.close();
  });

  it('keys the HMAC with the file bytes as they are, never decoded', async () => {
    const file = path.join(tmp, 'notebook_secret');
    fs.writeFileSync(file, 'not base64 at all\n');
    const fromFile = new NotebookNotary({ dataDir: tmp, dbFile: ':memory:' });
    const fixed = new NotebookNotary({
      dataDir: tmp,
      dbFile: ':memory:',
      secret: 'not base64 at all\n'
    });
    const nb = notebook([codeCell([html()])]);
    expect(fromFile.loadSecret().toString()).toBe('not base64 at all\n');
    expect(fromFile.computeSignature(nb)).toBe(fixed.computeSignature(nb));
    // An existing file is never rewritten.
    expect(fs.readFileSync(file, 'utf8')).toBe('not base64 at all\n');
    await fromFile.close();
    await fixed.close();
  });

  it('is created once and reused, and a replaced key takes effect', async () => {
    const notary = new NotebookNotary({ dataDir: tmp, dbFile: ':memory:' });
    const nb = notebook([]);
    const first = notary.computeSignature(nb);
    expect(notary.computeSignature(nb)).toBe(first);
    fs.writeFileSync(path.join(tmp, 'notebook_secret'), encodeBase64Lines(Buffer.alloc(1024, 7)));
    expect(notary.computeSignature(nb)).not.toBe(first);
    await notary.close();
  });

  it('encodes like base64.encodebytes', () => {
    expect(encodeBase64Lines(Buffer.from(''))).toBe('');
    expect(encodeBase64Lines(Buffer.from('hi'))).toBe('aGk=\n');
    expect(encodeBase64Lines(Buffer.alloc(60, 0xff))).toBe(`${'/'.repeat(76)}\n${'/'.repeat(4)}\n`);
  });
});
