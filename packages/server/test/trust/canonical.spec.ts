/**
 * The canonical walk and HMAC must reproduce nbformat's `yield_everything` byte for byte. The
 * expected values below were produced with nbformat 5.11.1 (`yield_everything`,
 * `NotebookNotary.compute_signature`) under CPython 3.11.
 */
import { createHmac } from 'node:crypto';
import { PyNumber, compareCodePoints } from '@jupyter-store/nbformat';
import {
  NotebookNotary,
  NotebookSignatureError,
  walkJson,
  walkNotebook
} from '../../src/contents/trust';

function pieces(value: unknown): string[] {
  const out: string[] = [];
  walkJson(value, { push: piece => out.push(piece) });
  return out;
}

function notebookPieces(notebook: object): string[] {
  const out: string[] = [];
  walkNotebook(notebook, { push: piece => out.push(piece) });
  return out;
}

const float = (text: string): PyNumber => new PyNumber('float', text);

describe('canonical walk (yield_everything)', () => {
  it('renders booleans and None as Python str() does, keys sorted', () => {
    expect(pieces({ b: true, a: null, c: false })).toEqual([
      'a',
      'None',
      'b',
      'True',
      'c',
      'False'
    ]);
  });

  it('renders ints as digits, big ints as Python kept them', () => {
    expect(pieces({ x: 0, y: -5, z: new PyNumber('int', '1180591620717411303424') })).toEqual([
      'x',
      '0',
      'y',
      '-5',
      'z',
      '1180591620717411303424'
    ]);
  });

  it('renders floats by repr, integral floats kept as PyNumber', () => {
    const values = [
      1.5,
      float('1.0'),
      float('1e+16'),
      1e-5,
      0.1,
      float('-0.0'),
      123456789.123,
      float('1e+22'),
      5e-324,
      new PyNumber('int', '1180591620717411303424'),
      -5,
      0,
      float('1000000000000000.0'),
      0.0001
    ];
    // Python: [str(v) for v in [1.5, 1.0, 1e16, 1e-5, 0.1, -0.0, 123456789.123, 1e22, 5e-324,
    //          2**70, -5, 0, 1e15, 0.0001]]
    expect(pieces(values)).toEqual([
      '1.5',
      '1.0',
      '1e+16',
      '1e-05',
      '0.1',
      '-0.0',
      '123456789.123',
      '1e+22',
      '5e-324',
      '1180591620717411303424',
      '-5',
      '0',
      '1000000000000000.0',
      '0.0001'
    ]);
  });

  it('sorts unicode keys by code point as Python sorts str', () => {
    const keys = [
      'b',
      'a',
      'B',
      'é',
      '\uFFFF',
      '\u{1F600}',
      '\u{10000}',
      'aa',
      '',
      'ä',
      '\uE000',
      '\uD7FF',
      'Z'
    ];
    const dict = Object.fromEntries(keys.map((key, index) => [key, index]));
    const walked = pieces(dict).filter((_, index) => index % 2 === 0);
    // Python: sorted(keys)
    expect(walked).toEqual([
      '',
      'B',
      'Z',
      'a',
      'aa',
      'b',
      'ä',
      'é',
      '\uD7FF',
      '\uE000',
      '\uFFFF',
      '\u{10000}',
      '\u{1F600}'
    ]);
    expect(pieces(dict).slice(0, 6)).toEqual(['', '8', 'B', '2', 'Z', '12']);
    // JavaScript's default order puts the astral keys before U+E000..U+FFFF; ours must not.
    expect(compareCodePoints('\u{1F600}', '\uFFFF')).toBeGreaterThan(0);
    expect(compareCodePoints('\uE000', '\u{10000}')).toBeLessThan(0);
    expect(compareCodePoints('ab', 'a')).toBeGreaterThan(0);
    expect(compareCodePoints('same', 'same')).toBe(0);
  });

  it('flattens nested lists and yields nothing for empty containers', () => {
    expect(pieces([[1, [2, []]], {}, 'x', { k: [] }, [{ a: [null] }]])).toEqual([
      '1',
      '2',
      'x',
      'k',
      'a',
      'None'
    ]);
  });

  it('skips undefined members as JSON output would, but an undefined list item is null', () => {
    expect(pieces({ a: undefined, b: [undefined, 1] })).toEqual(['b', 'None', '1']);
  });

  it('leaves out metadata.signature of the notebook only', () => {
    const notebook = {
      metadata: { signature: 'sha256:old', a: 1 },
      signature: 'top-level is hashed',
      cells: [{ metadata: { signature: 'cell-level is hashed' } }]
    };
    expect(notebookPieces(notebook)).toEqual([
      'cells',
      'metadata',
      'signature',
      'cell-level is hashed',
      'metadata',
      'a',
      '1',
      'signature',
      'top-level is hashed'
    ]);
  });

  it('refuses strings with unpaired surrogates, which Python cannot encode', () => {
    expect(() => pieces({ a: 'bad \uD800 text' })).toThrow(NotebookSignatureError);
    expect(() => pieces({ ['\uDC00']: 1 })).toThrow(NotebookSignatureError);
    expect(pieces({ a: 'good \u{1F600}' })).toEqual(['a', 'good \u{1F600}']);
  });
});

/** The notebook the HMAC vectors were computed on (Python literal equivalent). */
function sampleNotebook(): Record<string, unknown> {
  return {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {
      signature: 'sha256:old',
      kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' },
      x: [float('1.0'), 2, null, true]
    },
    cells: [
      {
        cell_type: 'code',
        id: 'c1',
        metadata: { signature: 'kept', tags: [] },
        source: "x = 1.0\nprint('héllo 😀')",
        execution_count: 3,
        outputs: [
          {
            output_type: 'execute_result',
            execution_count: 3,
            metadata: {},
            data: { 'text/plain': '1.0', 'text/html': '<b>1</b>' }
          },
          { output_type: 'stream', name: 'stdout', text: 'héllo 😀\n' }
        ]
      },
      { cell_type: 'markdown', id: 'm1', metadata: {}, source: '# Títle' }
    ]
  };
}

describe('computeSignature', () => {
  const vectors: Record<string, string> = {
    sha256: 'e3fe5f9f0a54159c9a61ae4accabeaac31af30f799d51597ab11395aab7dd772',
    blake2b:
      '327a36371d669c33f0e82f97f5dc7975595152c38ab7fd15cf0c21cead4d35235f4fe6f4f5acb9958d045ef11b29c7313148a50ee68238afaa1718fe8a415642',
    sha3_256: '1ae5c7c46eb798178980243948fcc4ee1931288f8ca1ea71ba9b7801b81b5b88',
    md5: 'c45bea3a4758bea34aa9ba6578abbdbf'
  };

  it.each(Object.entries(vectors))('matches Python for %s', async (algorithm, expected) => {
    const notary = new NotebookNotary({
      dataDir: '/nonexistent',
      dbFile: ':memory:',
      secret: 'unit-test-secret',
      algorithm
    });
    expect(notary.computeSignature(sampleNotebook())).toBe(expected);
    await notary.close();
  });

  it('does not depend on the old signature, and changes with any value', async () => {
    const notary = new NotebookNotary({ dataDir: '/x', dbFile: ':memory:', secret: 's' });
    const nb = sampleNotebook();
    const before = notary.computeSignature(nb);
    (nb.metadata as Record<string, unknown>).signature = 'sha256:something-else';
    expect(notary.computeSignature(nb)).toBe(before);
    expect((nb.metadata as Record<string, unknown>).signature).toBe('sha256:something-else');
    // 1.0 and 1 are different to Python (str gives "1.0" vs "1").
    ((nb.metadata as Record<string, unknown>).x as unknown[])[0] = 1;
    expect(notary.computeSignature(nb)).not.toBe(before);
    await notary.close();
  });

  it('drops a null metadata.signature for good, as Python pops it and does not restore None', async () => {
    const notary = new NotebookNotary({ dataDir: '/x', dbFile: ':memory:', secret: 's' });
    const nb = sampleNotebook();
    const withString = notary.computeSignature(nb);
    (nb.metadata as Record<string, unknown>).signature = null;
    expect(notary.computeSignature(nb)).toBe(withString);
    expect('signature' in (nb.metadata as object)).toBe(false);
    await notary.close();
  });

  it('rejects unknown algorithms', () => {
    expect(
      () => new NotebookNotary({ dataDir: '/x', dbFile: ':memory:', algorithm: 'constructor' })
    ).toThrow(/Unknown notary algorithm/);
    expect(
      () => new NotebookNotary({ dataDir: '/x', dbFile: ':memory:', algorithm: 'shake_128' })
    ).toThrow(/Unknown notary algorithm/);
  });

  it('streams a 50 MB notebook quickly, hashing the same bytes as one update per piece', async () => {
    const line = 'x'.repeat(1000);
    const cells = Array.from({ length: 2500 }, (_, index) => ({
      cell_type: 'code',
      id: `cell-${index}`,
      metadata: { trusted: index % 2 === 0, n: index + 0.5 },
      source: [line, '\n', 'ünï\u{1F600}'],
      execution_count: index,
      outputs: [
        {
          output_type: 'display_data',
          metadata: {},
          data: {
            'image/png': 'A'.repeat(19_000),
            'text/plain': Array.from({ length: 20 }, (_, k) => `${k} ${line.slice(0, 20)}`)
          }
        },
        {
          output_type: 'stream',
          name: 'stdout',
          text: Array.from({ length: 50 }, (_, k) => k * 1.25)
        }
      ]
    }));
    const nb = { nbformat: 4, nbformat_minor: 5, metadata: {}, cells };
    const notary = new NotebookNotary({ dataDir: '/x', dbFile: ':memory:', secret: 'perf' });

    const started = process.hrtime.bigint();
    const fast = notary.computeSignature(nb);
    const elapsedMs = Number(process.hrtime.bigint() - started) / 1e6;

    const reference = createHmac('sha256', 'perf');
    let bytes = 0;
    walkNotebook(nb, {
      push: piece => {
        reference.update(piece, 'utf8');
        bytes += Buffer.byteLength(piece);
      }
    });
    expect(bytes).toBeGreaterThan(50_000_000);
    expect(fast).toBe(reference.digest('hex'));
    // Generous bound for slow CI machines; it takes a fraction of this on a laptop.
    expect(elapsedMs).toBeLessThan(5000);
    await notary.close();
  });
});
