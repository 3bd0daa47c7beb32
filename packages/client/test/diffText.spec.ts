import type { DiffEntry, NotebookDiff } from '@jupyter-store/contract';
import { describeNotebookDiff } from '../src/commands/diffText';

const BASE = {
  cells: [
    { cell_type: 'markdown', id: 'a', metadata: {}, source: '# Title\nintro' },
    {
      cell_type: 'code',
      execution_count: 1,
      id: 'b',
      metadata: {},
      outputs: [{ output_type: 'stream', name: 'stdout', text: '1\n' }],
      source: 'x = 1\nprint(x)'
    },
    { cell_type: 'markdown', id: 'c', metadata: {}, source: 'old note' }
  ],
  metadata: { kernelspec: { name: 'python3' } },
  nbformat: 4,
  nbformat_minor: 5
};

/** An answer diffing two archived versions of `nb.ipynb` with this diff. */
function answer(diff: DiffEntry[]): NotebookDiff {
  return {
    path: 'nb.ipynb',
    base: BASE,
    diff,
    base_ref: { ref: 'v1', source: 'workspace', object_version_id: 'v1' },
    remote_ref: { ref: 'current', source: 'current', object_version_id: null }
  };
}

describe('#describeNotebookDiff()', () => {
  test('says there are no differences for an empty diff', () => {
    expect(describeNotebookDiff(answer([]))).toBe(
      'No differences between nb.ipynb (archived version v1) and nb.ipynb (current file).\n'
    );
  });

  test('shows changed lines, character patches, outputs and execution counts', () => {
    const text = describeNotebookDiff(
      answer([
        {
          op: 'patch',
          key: 'cells',
          diff: [
            {
              op: 'patch',
              key: 1,
              diff: [
                { op: 'replace', key: 'execution_count', value: 2 },
                {
                  op: 'patch',
                  key: 'outputs',
                  diff: [
                    {
                      op: 'addrange',
                      key: 1,
                      valuelist: [{ output_type: 'display_data', data: { 'image/png': '' } }]
                    },
                    { op: 'removerange', key: 0, length: 1 }
                  ]
                },
                {
                  op: 'patch',
                  key: 'source',
                  diff: [
                    {
                      op: 'patch',
                      key: 0,
                      diff: [
                        { op: 'addrange', key: 4, valuelist: '2' },
                        { op: 'removerange', key: 4, length: 1 }
                      ]
                    },
                    { op: 'addrange', key: 2, valuelist: ['y = x\n'] }
                  ]
                }
              ]
            }
          ]
        }
      ])
    );
    expect(text).toBe(
      [
        '--- nb.ipynb (archived version v1)',
        '+++ nb.ipynb (current file)',
        'cell 1 (code) changed:',
        '  execution_count: 1 → 2',
        '  outputs changed: 1 added (image/png), 1 removed (stream (stdout))',
        '  -x = 1',
        '  +x = 2',
        '  +y = x',
        ''
      ].join('\n')
    );
  });

  test('numbers removed cells as in the base and added cells as in the remote', () => {
    const text = describeNotebookDiff(
      answer([
        {
          op: 'patch',
          key: 'cells',
          diff: [
            { op: 'removerange', key: 0, length: 1 },
            { op: 'addrange', key: 0, valuelist: [{ cell_type: 'raw', source: 'new' }] },
            { op: 'addrange', key: 2, valuelist: [{ cell_type: 'code', source: 'z' }] },
            {
              op: 'patch',
              key: 2,
              diff: [
                { op: 'patch', key: 'metadata', diff: [{ op: 'add', key: 'tags', value: [] }] }
              ]
            }
          ]
        },
        {
          op: 'patch',
          key: 'metadata',
          diff: [{ op: 'remove', key: 'kernelspec' }]
        },
        { op: 'replace', key: 'nbformat_minor', value: 4 }
      ])
    );
    expect(text.split('\n').slice(2)).toEqual([
      'cell 0 (markdown) removed:',
      '  -# Title',
      '  -intro',
      'cell 0 (raw) added:',
      '  +new',
      'cell 2 (code) added:',
      '  +z',
      'cell 2 (markdown, now cell 3) changed:',
      '  metadata changed: tags (added)',
      'notebook metadata changed: kernelspec (removed)',
      'notebook nbformat_minor: 5 → 4',
      ''
    ]);
  });
});
