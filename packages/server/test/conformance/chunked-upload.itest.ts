/**
 * Differential conformance: chunked uploads (Jupyter's AsyncLargeFileManager), sent exactly as
 * JupyterLab's file browser sends files above 1 MiB: `PUT {type: 'file', format: 'base64', name,
 * chunk, content}` with chunk = 1, 2, …, -1 (the last), each chunk 1 MiB of the file.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { conformanceSuite, get, put, type Req } from '../support/compare';
import { pseudoRandomBytes } from '../support/tree';

const env = conformanceSuite();

/** JupyterLab's CHUNK_SIZE (packages/filebrowser/src/model.ts). */
const CHUNK_SIZE = 1024 * 1024;

/** The chunk numbers and slices Lab's uploader makes of a file. */
function labChunks(bytes: Buffer): Array<{ chunk: number; data: Buffer }> {
  const out: Array<{ chunk: number; data: Buffer }> = [];
  for (let start = 0; ; start += CHUNK_SIZE) {
    const end = start + CHUNK_SIZE;
    const last = end >= bytes.length;
    out.push({ chunk: last ? -1 : end / CHUNK_SIZE, data: bytes.subarray(start, end) });
    if (last) break;
  }
  return out;
}

/** Upload like Lab; returns the statuses Jupyter answered. */
async function uploadLikeLab(apiPath: string, bytes: Buffer): Promise<number[]> {
  const name = apiPath.split('/').pop() ?? apiPath;
  const statuses: number[] = [];
  for (const { chunk, data } of labChunks(bytes)) {
    const r = await env.both(
      put(apiPath, {
        type: 'file',
        format: 'base64',
        name,
        chunk,
        content: data.toString('base64')
      })
    );
    statuses.push(r.jupyter.status);
  }
  return statuses;
}

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

describe('chunked uploads as JupyterLab sends them', () => {
  test('a 20 MB binary file in 1 MiB chunks', async () => {
    const bytes = pseudoRandomBytes(20 * 1024 * 1024 + 12345, 7);
    await env.mkdirBoth('uploads');
    const ok = await uploadLikeLab('uploads/twenty.bin', bytes);
    expect(ok).toEqual([201, ...Array(20).fill(200)]);
    expect(sha256(await readFile(join(env.root('jupyter'), 'uploads/twenty.bin')))).toBe(
      sha256(bytes)
    );
    await env.both(get('uploads/twenty.bin', 'content=0&hash=1'));
  });

  test('two chunks (1, -1), an exact multiple of the chunk size, unicode names', async () => {
    expect(await uploadLikeLab('two chunks é.bin', pseudoRandomBytes(CHUNK_SIZE + 10, 3))).toEqual([
      201, 200
    ]);
    expect(await uploadLikeLab('exact 😀.bin', pseudoRandomBytes(2 * CHUNK_SIZE, 4))).toEqual([
      201, 200
    ]);
    await env.both(get('two chunks é.bin', 'content=0&hash=1'));
    await env.both(get('exact 😀.bin', 'content=0&hash=1'));
  });

  test('a large notebook uploaded as a file keeps its bytes', async () => {
    const cells = Array.from({ length: 3000 }, (_, i) => ({
      cell_type: 'markdown',
      id: `c${i}`,
      metadata: {},
      source: `cell ${i} ${'x'.repeat(400)}`
    }));
    const text = `${JSON.stringify({ cells, metadata: {}, nbformat: 4, nbformat_minor: 5 }, null, 1)}\n`;
    const bytes = Buffer.from(text, 'utf8');
    expect(bytes.length).toBeGreaterThan(CHUNK_SIZE);
    const statuses = await uploadLikeLab('big notebook.ipynb', bytes);
    expect(statuses[0]).toBe(201);
    await env.both(get('big notebook.ipynb', 'content=0&hash=1'));
    await env.both(get('big notebook.ipynb'));
  });

  test('re-uploading over an existing file: chunk 1 truncates', async () => {
    await uploadLikeLab('large.bin', pseudoRandomBytes(CHUNK_SIZE + 1, 9));
    expect(sha256(await readFile(join(env.root('jupyter'), 'large.bin')))).toBe(
      sha256(pseudoRandomBytes(CHUNK_SIZE + 1, 9))
    );
    await env.both(get('large.bin', 'content=0&hash=1'));
  });

  test('an upload interrupted after chunk 2 leaves the partial file; listing shows its size', async () => {
    const bytes = pseudoRandomBytes(3 * CHUNK_SIZE + 5, 11);
    const chunks = labChunks(bytes);
    for (const { chunk, data } of chunks.slice(0, 2)) {
      await env.both(
        put('partial.bin', {
          type: 'file',
          format: 'base64',
          name: 'partial.bin',
          chunk,
          content: data.toString('base64')
        })
      );
      await env.both(get('partial.bin', 'content=0'));
    }
    await env.both(get(''));
  });
});

describe('chunk edge cases', () => {
  test('text chunks, chunk 2 first, chunk without format, wrong types, hidden targets', async () => {
    const seen: Array<[string, number]> = [];
    const step = async (label: string, req: Req): Promise<void> => {
      seen.push([label, (await env.both(req)).jupyter.status]);
    };
    await step(
      'text 1',
      put('chunks.txt', { type: 'file', format: 'text', chunk: 1, content: 'héllo ' })
    );
    await step(
      'text -1',
      put('chunks.txt', { type: 'file', format: 'text', chunk: -1, content: 'wörld\n' })
    );
    await step('get', get('chunks.txt'));
    await step(
      '2 first',
      put('second-first.bin', { type: 'file', format: 'base64', chunk: 2, content: 'AAEC' })
    );
    await step('no format', put('chunks.txt', { type: 'file', chunk: 2, content: 'x' }));
    await step(
      'bad format',
      put('chunks.txt', { type: 'file', format: 'json', chunk: 2, content: 'x' })
    );
    await step('no type', put('chunks.txt', { format: 'text', chunk: 2, content: 'x' }));
    await step(
      'notebook',
      put('nb.ipynb', { type: 'notebook', format: 'json', chunk: 1, content: {} })
    );
    await step('directory', put('dir', { type: 'directory', chunk: 1 }));
    await step('no content', put('chunks.txt', { type: 'file', format: 'text', chunk: 2 }));
    await step(
      'bad base64',
      put('bad.bin', { type: 'file', format: 'base64', chunk: 2, content: '@@@' })
    );
    await step(
      'hidden',
      put('.hidden/chunk.bin', { type: 'file', format: 'base64', chunk: 1, content: 'AAEC' })
    );
    await step(
      'chunk 0',
      put('zero.bin', { type: 'file', format: 'base64', chunk: 0, content: 'AAEC' })
    );
    await step(
      'chunk 3',
      put('chunks.txt', { type: 'file', format: 'text', chunk: 3, content: '!' })
    );
    await step('get again', get('chunks.txt'));
    expect(seen).toEqual([
      ['text 1', 201],
      ['text -1', 200],
      ['get', 200],
      ['2 first', 201],
      ['no format', 400],
      ['bad format', 400],
      ['no type', 400],
      ['notebook', 400],
      ['directory', 400],
      ['no content', 400],
      // Python's b64decode (non-validating) drops the characters outside the alphabet.
      ['bad base64', 201],
      ['hidden', 400],
      ['chunk 0', 201],
      ['chunk 3', 200],
      ['get again', 200]
    ]);
  });
});
