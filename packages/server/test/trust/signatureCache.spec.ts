import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { NotebookNotary } from '../../src/contents/trust/notary';
import { MemorySignatureStore } from '../../src/contents/trust/signatureStore';

const notebook = () => ({
  cells: [{ cell_type: 'code', metadata: {}, source: 'x', outputs: [], execution_count: null }],
  metadata: {},
  nbformat: 4,
  nbformat_minor: 5
});

describe('NotebookNotary#checkSignature() with a content key', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'signature-cache-'));
  });

  it('hashes an unchanged file once, and again when its content key changes', async () => {
    const notary = new NotebookNotary({ dataDir, store: new MemorySignatureStore() });
    const hashing = jest.spyOn(notary, 'computeSignature');
    await notary.sign(notebook());
    hashing.mockClear();
    expect(await notary.checkSignature(notebook(), 'file@1')).toBe(true);
    expect(await notary.checkSignature(notebook(), 'file@1')).toBe(true);
    expect(hashing).toHaveBeenCalledTimes(1);
    expect(await notary.checkSignature(notebook(), 'file@2')).toBe(true);
    expect(hashing).toHaveBeenCalledTimes(2);
  });

  it('hashes again after the secret changes (jupyter trust --reset)', async () => {
    const notary = new NotebookNotary({ dataDir, store: new MemorySignatureStore() });
    await notary.sign(notebook());
    expect(await notary.checkSignature(notebook(), 'file@1')).toBe(true);
    fs.writeFileSync(path.join(dataDir, 'notebook_secret'), 'a different key\n');
    expect(await notary.checkSignature(notebook(), 'file@1')).toBe(false);
  });
});
