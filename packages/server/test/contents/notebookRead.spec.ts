/**
 * The model of a notebook GET (`notebookModel`) and its answer bytes, held to the output of the
 * implementation before the read path was made faster: the validation verdict remembered per
 * file, and the answer written without a `JSON.stringify` replacer.
 */
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { stringifyPythonNumbers } from '@jupyter-store/nbformat';
import { stringifyWithReplacer } from '../../../nbformat/src/stringify';
import { ContentsManager } from '../../src/contents/manager';
import { MemorySignatureStore, NotebookNotary } from '../../src/contents/trust';

/** A code cell as nbformat writes it, with its own id. */
function codeCell(id: string, outputs: unknown[] = []): Record<string, unknown> {
  return {
    cell_type: 'code',
    execution_count: 1,
    id,
    metadata: { tags: ['t'] },
    outputs,
    source: ['x = 1.0\n', 'print(x)']
  };
}

const PNG = 'iVBORw0KGgo'.repeat(300);

const OUTPUTS = [
  { name: 'stdout', output_type: 'stream', text: ['a\n', 'é😀\n'] },
  {
    data: { 'image/png': PNG, 'text/plain': ['<Figure>'], 'application/json': { k: [1, 0.5] } },
    metadata: { 'image/png': { width: 10 } },
    output_type: 'display_data'
  },
  {
    data: { 'text/html': ['<b>\n', 'x</b>'] },
    execution_count: 1,
    metadata: {},
    output_type: 'execute_result'
  }
];

/** A notebook of nbformat 4.`minor` (ids only from 4.5 on). */
function notebookV4(minor: number): string {
  const cells = [
    { cell_type: 'markdown', id: 'md', metadata: {}, source: ['# Title\n', 'text'] },
    codeCell('c1', OUTPUTS),
    codeCell('c2')
  ].map(cell => {
    if (minor < 5) delete (cell as { id?: string }).id;
    return cell;
  });
  return JSON.stringify(
    {
      cells,
      metadata: { kernelspec: { display_name: 'Python 3', name: 'python3' } },
      nbformat: 4,
      nbformat_minor: minor
    },
    null,
    1
  );
}

/**
 * Files, and the `content` and `message` of their model (as `JSON.stringify` writes them, with
 * `metadata.trusted` false on code cells), as the implementation before this change answered.
 */
const FILES: Record<string, string> = {
  'v40.ipynb': notebookV4(0),
  'v41.ipynb': notebookV4(1),
  'v42.ipynb': notebookV4(2),
  'v43.ipynb': notebookV4(3),
  'v44.ipynb': notebookV4(4),
  'v45.ipynb': notebookV4(5),
  // Python's numbers: integral floats, a big integer, small and large floats.
  'numbers.ipynb':
    '{"cells": [], "metadata": {"a": 1.0, "b": 18446744073709551616, "c": 1e-07, "d": 1e16, "e": 0.5}, "nbformat": 4, "nbformat_minor": 5}',
  // A code cell without outputs: a validation message.
  'invalid.ipynb':
    '{"cells": [{"cell_type": "code", "execution_count": null, "id": "a", "metadata": {}, "source": "x"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
  // nbformat 3, upgraded on read.
  'v3.ipynb':
    '{"metadata": {"name": "old"}, "nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": [{"cell_type": "code", "collapsed": false, "input": ["a = 1"], "language": "python", "metadata": {}, "outputs": [{"output_type": "pyout", "prompt_number": 1, "metadata": {}, "text": ["1"]}], "prompt_number": 1}], "metadata": {}}]}'
};

describe('ContentsManager notebook GET', () => {
  let root: string;
  let manager: ContentsManager;
  let notary: NotebookNotary;
  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'notebook-read-'));
    notary = new NotebookNotary({
      dataDir: root,
      secret: 'secret',
      store: new MemorySignatureStore()
    });
    manager = new ContentsManager({ rootDir: root, notary });
    for (const [name, text] of Object.entries(FILES)) {
      await fs.writeFile(path.join(root, name), text);
    }
  });
  afterEach(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  /** What the answer holds of the notebook, without the cell ids generated for this read. */
  async function read(name: string): Promise<{ answer: Buffer; content: string }> {
    const model = await manager.get(name, { type: 'notebook' });
    const answer = stringifyPythonNumbers(model);
    // The answer is exactly what the replacer writes.
    expect(answer.toString('utf8')).toBe(stringifyWithReplacer(model).toString('utf8'));
    const notebook = model.content as { cells: Record<string, unknown>[] };
    if (name === 'v3.ipynb') for (const cell of notebook.cells) cell.id = 'generated';
    const part = { content: notebook, message: model.message };
    return { answer, content: stringifyPythonNumbers(part).toString('utf8') };
  }

  it('answers as before, and the same when it reads the file again', async () => {
    for (const name of Object.keys(FILES)) {
      const first = await read(name);
      const second = await read(name);
      expect({ name, content: second.content }).toEqual({ name, content: first.content });
      expect({ name, content: first.content }).toEqual({ name, content: EXPECTED[name] });
    }
  });

  it('marks the code cells of a trusted notebook trusted', async () => {
    await manager.trust('v45.ipynb');
    const { content } = await read('v45.ipynb');
    expect(content).toBe(EXPECTED['v45.ipynb'].replaceAll('"trusted":false', '"trusted":true'));
  });

  it('validates a file again once it changed, even at the same size', async () => {
    const file = path.join(root, 'v45.ipynb');
    expect((await read('v45.ipynb')).content).not.toContain('"message"');
    const valid = await fs.readFile(file, 'utf8');
    // The same size, but the first output lacks its `name`.
    const invalid = valid.replace('"name": "stdout"', '"nbme": "stdout"');
    expect(invalid.length).toBe(valid.length);
    await fs.writeFile(file, invalid);
    const { content } = await read('v45.ipynb');
    expect(content).toContain('"message":"Notebook validation failed: ');
    // As a manager that never read the file before answers.
    manager = new ContentsManager({ rootDir: root, notary });
    expect((await read('v45.ipynb')).content).toBe(content);
  });

  it('reports a validation message on every read of an invalid notebook', async () => {
    for (let i = 0; i < 2; i++) {
      const { content } = await read('invalid.ipynb');
      expect(content).toBe(EXPECTED['invalid.ipynb']);
    }
  });
});

/** Generated with the implementation before this change (see the describe block's `read`). */
const EXPECTED: Record<string, string> = Object.fromEntries(
  Object.entries({
    'v40.ipynb':
      '{"content":{"cells":[{"cell_type":"markdown","metadata":{},"source":"# Title\\ntext"},{"cell_type":"code","execution_count":1,"metadata":{"tags":["t"],"trusted":false},"outputs":[{"name":"stdout","output_type":"stream","text":"a\\né😀\\n"},{"data":{"image/png":"<png>","text/plain":"<Figure>","application/json":{"k":[1,0.5]}},"metadata":{"image/png":{"width":10}},"output_type":"display_data"},{"data":{"text/html":"<b>\\nx</b>"},"execution_count":1,"metadata":{},"output_type":"execute_result"}],"source":"x = 1.0\\nprint(x)"},{"cell_type":"code","execution_count":1,"metadata":{"tags":["t"],"trusted":false},"outputs":[],"source":"x = 1.0\\nprint(x)"}],"metadata":{"kernelspec":{"display_name":"Python 3","name":"python3"}},"nbformat":4,"nbformat_minor":0}}',
    'v41.ipynb':
      '{"content":{"cells":[{"cell_type":"markdown","metadata":{},"source":"# Title\\ntext"},{"cell_type":"code","execution_count":1,"metadata":{"tags":["t"],"trusted":false},"outputs":[{"name":"stdout","output_type":"stream","text":"a\\né😀\\n"},{"data":{"image/png":"<png>","text/plain":"<Figure>","application/json":{"k":[1,0.5]}},"metadata":{"image/png":{"width":10}},"output_type":"display_data"},{"data":{"text/html":"<b>\\nx</b>"},"execution_count":1,"metadata":{},"output_type":"execute_result"}],"source":"x = 1.0\\nprint(x)"},{"cell_type":"code","execution_count":1,"metadata":{"tags":["t"],"trusted":false},"outputs":[],"source":"x = 1.0\\nprint(x)"}],"metadata":{"kernelspec":{"display_name":"Python 3","name":"python3"}},"nbformat":4,"nbformat_minor":1}}',
    'v42.ipynb':
      '{"content":{"cells":[{"cell_type":"markdown","metadata":{},"source":"# Title\\ntext"},{"cell_type":"code","execution_count":1,"metadata":{"tags":["t"],"trusted":false},"outputs":[{"name":"stdout","output_type":"stream","text":"a\\né😀\\n"},{"data":{"image/png":"<png>","text/plain":"<Figure>","application/json":{"k":[1,0.5]}},"metadata":{"image/png":{"width":10}},"output_type":"display_data"},{"data":{"text/html":"<b>\\nx</b>"},"execution_count":1,"metadata":{},"output_type":"execute_result"}],"source":"x = 1.0\\nprint(x)"},{"cell_type":"code","execution_count":1,"metadata":{"tags":["t"],"trusted":false},"outputs":[],"source":"x = 1.0\\nprint(x)"}],"metadata":{"kernelspec":{"display_name":"Python 3","name":"python3"}},"nbformat":4,"nbformat_minor":2}}',
    'v43.ipynb':
      '{"content":{"cells":[{"cell_type":"markdown","metadata":{},"source":"# Title\\ntext"},{"cell_type":"code","execution_count":1,"metadata":{"tags":["t"],"trusted":false},"outputs":[{"name":"stdout","output_type":"stream","text":"a\\né😀\\n"},{"data":{"image/png":"<png>","text/plain":"<Figure>","application/json":{"k":[1,0.5]}},"metadata":{"image/png":{"width":10}},"output_type":"display_data"},{"data":{"text/html":"<b>\\nx</b>"},"execution_count":1,"metadata":{},"output_type":"execute_result"}],"source":"x = 1.0\\nprint(x)"},{"cell_type":"code","execution_count":1,"metadata":{"tags":["t"],"trusted":false},"outputs":[],"source":"x = 1.0\\nprint(x)"}],"metadata":{"kernelspec":{"display_name":"Python 3","name":"python3"}},"nbformat":4,"nbformat_minor":3}}',
    'v44.ipynb':
      '{"content":{"cells":[{"cell_type":"markdown","metadata":{},"source":"# Title\\ntext"},{"cell_type":"code","execution_count":1,"metadata":{"tags":["t"],"trusted":false},"outputs":[{"name":"stdout","output_type":"stream","text":"a\\né😀\\n"},{"data":{"image/png":"<png>","text/plain":"<Figure>","application/json":{"k":[1,0.5]}},"metadata":{"image/png":{"width":10}},"output_type":"display_data"},{"data":{"text/html":"<b>\\nx</b>"},"execution_count":1,"metadata":{},"output_type":"execute_result"}],"source":"x = 1.0\\nprint(x)"},{"cell_type":"code","execution_count":1,"metadata":{"tags":["t"],"trusted":false},"outputs":[],"source":"x = 1.0\\nprint(x)"}],"metadata":{"kernelspec":{"display_name":"Python 3","name":"python3"}},"nbformat":4,"nbformat_minor":4}}',
    'v45.ipynb':
      '{"content":{"cells":[{"cell_type":"markdown","id":"md","metadata":{},"source":"# Title\\ntext"},{"cell_type":"code","execution_count":1,"id":"c1","metadata":{"tags":["t"],"trusted":false},"outputs":[{"name":"stdout","output_type":"stream","text":"a\\né😀\\n"},{"data":{"image/png":"<png>","text/plain":"<Figure>","application/json":{"k":[1,0.5]}},"metadata":{"image/png":{"width":10}},"output_type":"display_data"},{"data":{"text/html":"<b>\\nx</b>"},"execution_count":1,"metadata":{},"output_type":"execute_result"}],"source":"x = 1.0\\nprint(x)"},{"cell_type":"code","execution_count":1,"id":"c2","metadata":{"tags":["t"],"trusted":false},"outputs":[],"source":"x = 1.0\\nprint(x)"}],"metadata":{"kernelspec":{"display_name":"Python 3","name":"python3"}},"nbformat":4,"nbformat_minor":5}}',
    'numbers.ipynb':
      '{"content":{"cells":[],"metadata":{"a":1.0,"b":18446744073709551616,"c":1e-07,"d":1e+16,"e":0.5},"nbformat":4,"nbformat_minor":5}}',
    'invalid.ipynb':
      '{"content":{"cells":[{"cell_type":"code","execution_count":null,"id":"a","metadata":{"trusted":false},"source":"x"}],"metadata":{},"nbformat":4,"nbformat_minor":5},"message":"Notebook validation failed: \'outputs\' is a required property\\n\\nFailed validating \'required\' in code_cell:\\n\\nOn instance[\'cells\'][0]:\\n{\'cell_type\': \'code\',\\n \'execution_count\': None,\\n \'id\': \'a\',\\n \'metadata\': {},\\n \'source\': \'x\'}:\\n{\\n \\"cell_type\\": \\"code\\",\\n \\"execution_count\\": null,\\n \\"id\\": \\"a\\",\\n \\"metadata\\": {},\\n \\"source\\": \\"x\\"\\n}"}',
    'v3.ipynb':
      '{"content":{"metadata":{"orig_nbformat":3,"orig_nbformat_minor":0},"nbformat":4,"nbformat_minor":5,"cells":[{"cell_type":"code","metadata":{"collapsed":false,"trusted":false},"outputs":[{"output_type":"execute_result","metadata":{},"execution_count":1,"data":{"text/plain":"1"}}],"id":"generated","source":"a = 1","execution_count":1}]}}'
  }).map(([name, text]) => [name, text.replaceAll('<png>', PNG)])
);
