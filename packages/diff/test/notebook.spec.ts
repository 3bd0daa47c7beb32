import { diffNotebooks, joinMultilineStrings, patch, type INotebookContent } from '../src';
import type { IJSONObject } from '../src/types';

// Expected diffs are the output of Python nbdime 4.0.4 (`diff_notebooks`) on the same notebooks.

function notebook(cells: IJSONObject[], minor = 5): INotebookContent & IJSONObject {
  return { cells, metadata: {}, nbformat: 4, nbformat_minor: minor };
}

function code(
  id: string | null,
  source: string,
  outputs: IJSONObject[] = [],
  count = 1
): IJSONObject {
  const cell: IJSONObject = {
    cell_type: 'code',
    source,
    metadata: {},
    execution_count: count,
    outputs
  };
  if (id !== null) cell.id = id;
  return cell;
}

function markdown(id: string | null, source: string): IJSONObject {
  const cell: IJSONObject = { cell_type: 'markdown', source, metadata: {} };
  if (id !== null) cell.id = id;
  return cell;
}

function stream(text: string): IJSONObject {
  return { output_type: 'stream', name: 'stdout', text };
}

/** Three cells with ids: a title, a cell that prints, an assignment. */
function small(): IJSONObject[] {
  return [
    markdown('a', '# Title\n\nSome text.'),
    code('b', 'x = 1\nprint(x)\n', [stream('1\n')]),
    code('c', 'y = 2')
  ];
}

/** Four cells without ids (nbformat 4.4), aligned by content. */
function analysis(): IJSONObject[] {
  return [
    markdown(null, '# Analysis\n\nWe load the data.'),
    code(null, "import pandas as pd\ndf = pd.read_csv('data.csv')\n"),
    code(
      null,
      'df.describe()',
      [
        {
          output_type: 'execute_result',
          execution_count: 2,
          metadata: {},
          data: { 'text/plain': 'count 10\nmean 0.5\n', 'image/png': 'iVBORw0KGgo=' }
        }
      ],
      2
    ),
    code(
      null,
      'for epoch in range(3):\n    train()\n',
      [stream('epoch 1 loss 0.1234\nepoch 2 loss 0.0991\n')],
      3
    )
  ];
}

/** The diff, after checking that it turns base into remote. */
function roundTrip(base: INotebookContent, remote: INotebookContent): unknown {
  const result = diffNotebooks(base, remote);
  expect(patch(joinMultilineStrings(base) as IJSONObject, result)).toEqual(
    joinMultilineStrings(remote)
  );
  return result;
}

/** A diff that patches down `path` (keys of objects, indices of lists) and ends in `diff`. */
function patchAt(path: ReadonlyArray<string | number>, diff: unknown[]): unknown[] {
  return path.reduceRight<unknown[]>((inner, key) => [{ op: 'patch', key, diff: inner }], diff);
}

/** The `addrange` then `removerange` at one index with which nbdime replaces items. */
function replaceAt(key: number, valuelist: unknown, length: number): unknown[] {
  return [
    { op: 'addrange', key, valuelist },
    { op: 'removerange', key, length }
  ];
}

describe('notebook', () => {
  describe('#diffNotebooks()', () => {
    it('gives an empty diff for equal notebooks', () => {
      expect(roundTrip(notebook(small()), notebook(small()))).toEqual([]);
    });

    it('patches an edited source line by line', () => {
      const remote = small();
      remote[1].source = 'x = 10\nprint(x)\n';
      expect(roundTrip(notebook(small()), notebook(remote))).toEqual(
        patchAt(['cells', 1, 'source', 0], [{ op: 'addrange', key: 5, valuelist: '0' }])
      );
    });

    it('adds an inserted cell with addrange', () => {
      const remote = small();
      remote.splice(1, 0, markdown('n', 'New cell'));
      expect(roundTrip(notebook(small()), notebook(remote))).toEqual(
        patchAt(['cells'], [{ op: 'addrange', key: 1, valuelist: [markdown('n', 'New cell')] }])
      );
    });

    it('removes a deleted cell with removerange', () => {
      const remote = small().slice(1);
      expect(roundTrip(notebook(small()), notebook(remote))).toEqual(
        patchAt(['cells'], [{ op: 'removerange', key: 0, length: 1 }])
      );
    });

    it('shows a moved cell as removed and added', () => {
      const [first, ...rest] = small();
      expect(roundTrip(notebook(small()), notebook([...rest, first]))).toEqual(
        patchAt(
          ['cells'],
          [
            { op: 'removerange', key: 0, length: 1 },
            { op: 'addrange', key: 3, valuelist: [first] }
          ]
        )
      );
    });

    it('aligns cells without ids by content, a moved and edited one included', () => {
      const remote = analysis();
      const moved = remote.splice(3, 1)[0];
      moved.source = 'for epoch in range(3):\n    train(model)\n';
      remote.splice(1, 0, moved);
      expect(roundTrip(notebook(analysis(), 4), notebook(remote, 4))).toEqual(
        patchAt(
          ['cells'],
          [
            { op: 'addrange', key: 1, valuelist: [moved] },
            { op: 'removerange', key: 3, length: 1 }
          ]
        )
      );
    });

    it('aligns cells by id before content', () => {
      const remote = small();
      remote[2] = { ...remote[2], id: 'z' };
      expect(roundTrip(notebook(small()), notebook(remote))).toEqual(
        patchAt(['cells', 2], [{ op: 'replace', key: 'id', value: 'z' }])
      );
    });

    it('replaces an output that is no longer similar, and the execution count', () => {
      const remote = small();
      remote[1].execution_count = 5;
      remote[1].outputs = [stream('1\n2\n')];
      expect(roundTrip(notebook(small()), notebook(remote))).toEqual(
        patchAt(
          ['cells', 1],
          [
            { op: 'replace', key: 'execution_count', value: 5 },
            ...patchAt(['outputs'], replaceAt(0, [stream('1\n2\n')], 1))
          ]
        )
      );
    });

    it('patches a similar stream output line by line', () => {
      const remote = analysis();
      remote[3].outputs = [stream('epoch 1 loss 0.1234\nepoch 2 loss 0.0871\n')];
      expect(roundTrip(notebook(analysis(), 4), notebook(remote, 4))).toEqual(
        patchAt(['cells', 3, 'outputs', 0, 'text', 1], replaceAt(16, '87', 2))
      );
    });

    it('replaces binary data and patches text in a MIME bundle', () => {
      const remote = analysis();
      const output = (remote[2].outputs as IJSONObject[])[0];
      output.data = { 'text/plain': 'count 10\nmean 0.6\n', 'image/png': 'iVBORw0KGgoAAA=' };
      expect(roundTrip(notebook(analysis(), 4), notebook(remote, 4))).toEqual(
        patchAt(
          ['cells', 2, 'outputs', 0, 'data'],
          [
            { op: 'replace', key: 'image/png', value: 'iVBORw0KGgoAAA=' },
            ...patchAt(['text/plain', 1], replaceAt(7, '6', 1))
          ]
        )
      );
    });

    it('adds cell metadata with add', () => {
      const remote = small();
      remote[1].metadata = { tags: ['x'] };
      expect(roundTrip(notebook(small()), notebook(remote))).toEqual(
        patchAt(['cells', 1, 'metadata'], [{ op: 'add', key: 'tags', value: ['x'] }])
      );
    });

    it('diffs attachments as MIME bundles by file name', () => {
      const base = analysis();
      base[1].attachments = { 'a.png': { 'image/png': 'BBBB' }, 'b.png': { 'image/png': 'CC' } };
      const remote = analysis();
      remote[1].attachments = { 'a.png': { 'image/png': 'AAAA' } };
      expect(roundTrip(notebook(base, 4), notebook(remote, 4))).toEqual(
        patchAt(
          ['cells', 1, 'attachments'],
          [
            ...patchAt(['a.png'], [{ op: 'replace', key: 'image/png', value: 'AAAA' }]),
            { op: 'remove', key: 'b.png' }
          ]
        )
      );
    });

    it('diffs split and joined multiline strings alike', () => {
      const split = small();
      split[1] = { ...split[1], source: ['x = 1\n', 'print(x)\n'] };
      expect(diffNotebooks(notebook(split), notebook(small()))).toEqual([]);
    });
  });

  describe('#joinMultilineStrings()', () => {
    it('joins sources, stream texts and text MIME data, but not JSON data', () => {
      const cell = code(null, '', [
        { output_type: 'stream', name: 'stdout', text: ['a\n', 'b'] },
        {
          output_type: 'display_data',
          metadata: {},
          data: { 'text/html': ['<b>\n', '</b>'], 'application/json': ['kept'] }
        }
      ]);
      cell.source = ['x\n', 'y'];
      const base = notebook([cell]);
      const joined = joinMultilineStrings(base);
      const out = joined.cells[0] as IJSONObject;
      expect(out.source).toBe('x\ny');
      expect(out.outputs).toEqual([
        { output_type: 'stream', name: 'stdout', text: 'a\nb' },
        {
          output_type: 'display_data',
          metadata: {},
          data: { 'text/html': '<b>\n</b>', 'application/json': ['kept'] }
        }
      ]);
      expect(cell.source).toEqual(['x\n', 'y']);
    });
  });
});
