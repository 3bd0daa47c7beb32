/**
 * Validation messages as Jupyter Server 2.21.1 / nbformat 5.11.1 produce them
 * (`validate_notebook_model` after `nbformat.reads`), and Python's `pprint.pformat(width=78)`.
 * Every expected string was produced by CPython 3.11.
 */
import { PyNumber, pythonPrettyFormat, readNotebook, validateNotebook } from '../src';

/** [notebook file, Jupyter's model message] */
const MESSAGES: Record<string, [string, string]> = {
  required: [
    '{"cells": [{"id": "c1", "cell_type": "code", "metadata": {}, "source": "print(1)\\n", "execution_count": null}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
    "Notebook validation failed: 'outputs' is a required property\n\nFailed validating 'required' in code_cell:\n\nOn instance['cells'][0]:\n{'cell_type': 'code',\n 'execution_count': None,\n 'id': 'c1',\n 'metadata': {},\n 'source': 'print(1)\\n'}:\n{\n \"id\": \"c1\",\n \"cell_type\": \"code\",\n \"metadata\": {},\n \"source\": \"print(1)\\n\",\n \"execution_count\": null\n}"
  ],
  'execution_count float': [
    '{"cells": [{"id": "c1", "cell_type": "code", "metadata": {}, "source": "", "outputs": [], "execution_count": 1.0}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
    "Notebook validation failed: 1.0 is not of type 'integer', 'null'\n\nFailed validating 'type' in code_cell['properties']['execution_count']:\n\nOn instance['cells'][0]['execution_count']:\n1.0:\n1.0"
  ],
  'stream text': [
    '{"cells": [{"id": "c1", "cell_type": "code", "metadata": {}, "source": "print(1)\\n", "outputs": [{"output_type": "stream", "name": "stdout", "text": {"a": 5}}], "execution_count": null}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
    "Notebook validation failed: {'a': 5} is not valid under any of the given schemas\n\nFailed validating 'oneOf' in stream['properties']['text']:\n\nOn instance['cells'][0]['outputs'][0]['text']:\n{'a': 5}:\n{\n \"a\": 5\n}"
  ],
  'unknown output': [
    '{"cells": [{"id": "c1", "cell_type": "code", "metadata": {}, "source": "print(1)\\n", "outputs": [{"output_type": "bogus", "data": {}}], "execution_count": null}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
    "Notebook validation failed: {'output_type': 'bogus', 'data': {}} is not valid under any of the given schemas\n\nFailed validating 'oneOf' in bogus['properties']['outputs']['items']:\n\nOn instance['cells'][0]['outputs'][0]:\n{'data': {}, 'output_type': 'bogus'}:\n{\n \"output_type\": \"bogus\",\n \"data\": {}\n}"
  ],
  'unknown cell': [
    '{"cells": [{"id": "x", "cell_type": "bogus", "metadata": {}, "source": ""}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
    "Notebook validation failed: {'id': 'x', 'cell_type': 'bogus', 'metadata': {}, 'source': ''} is not valid under any of the given schemas\n\nFailed validating 'oneOf' in bogus_cell['properties']['cells']['items']:\n\nOn instance['cells'][0]:\n{'cell_type': 'bogus', 'id': 'x', 'metadata': {}, 'source': ''}:\n{\n \"id\": \"x\",\n \"cell_type\": \"bogus\",\n \"metadata\": {},\n \"source\": \"\"\n}"
  ],
  'extra key': [
    '{"cells": [{"id": "x", "cell_type": "markdown", "metadata": {}, "source": "word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word \\nsecond line \\nsecond line \\nsecond line ", "extra": 1}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
    "Notebook validation failed: Additional properties are not allowed ('extra' was unexpected)\n\nFailed validating 'additionalProperties' in markdown_cell:\n\nOn instance['cells'][0]:\n{'cell_type': 'markdown',\n 'extra': 1,\n 'id': 'x',\n 'metadata': {},\n 'source': 'word word word word word word word word word word word word '\n           'word...'}:\n{\n \"id\": \"x\",\n \"cell_type\": \"markdown\",\n \"metadata\": {},\n \"source\": \"word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word \\nsecond line \\nsecond line \\nsecond line \",\n \"extra\": 1\n}"
  ],
  tags: [
    '{"cells": [{"id": "c1", "cell_type": "code", "metadata": {"tags": ["a", "a"]}, "source": "print(1)\\n", "outputs": [], "execution_count": null}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
    "Notebook validation failed: ['a', 'a'] has non-unique elements\n\nFailed validating 'uniqueItems' in code_cell['properties']['metadata']['properties']['tags']:\n\nOn instance['cells'][0]['metadata']['tags']:\n['a', 'a']:\n[\n \"a\",\n \"a\"\n]"
  ],
  top: [
    '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5, "extra": {"\\u00e9": "\\ud83d\\ude00"}}',
    "Notebook validation failed: Additional properties are not allowed ('extra' was unexpected)\n\nFailed validating 'additionalProperties' in notebook:\n\nOn instance:\n{'cells': ['...0 cells...'],\n 'extra': {'\u00e9': '\ud83d\ude00'},\n 'metadata': {},\n 'nbformat': 4,\n 'nbformat_minor': 5}:\n{\n \"cells\": [],\n \"metadata\": {},\n \"nbformat\": 4,\n \"nbformat_minor\": 5,\n \"extra\": {\n  \"\\u00e9\": \"\\ud83d\\ude00\"\n }\n}"
  ],
  'no schema': [
    '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": -1}',
    'Notebook validation failed: No schema for validating v4.-1 notebooks:\n"<UNKNOWN>"'
  ],
  'minor 4 with id': [
    '{"cells": [{"id": "c1", "cell_type": "code", "metadata": {}, "source": "print(1)\\n", "outputs": [], "execution_count": null}], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}',
    "Notebook validation failed: Additional properties are not allowed ('id' was unexpected)\n\nFailed validating 'additionalProperties' in code_cell:\n\nOn instance['cells'][0]:\n{'cell_type': 'code',\n 'execution_count': None,\n 'id': 'c1',\n 'metadata': {},\n 'outputs': ['...0 outputs...'],\n 'source': 'print(1)\\n'}:\n{\n \"id\": \"c1\",\n \"cell_type\": \"code\",\n \"metadata\": {},\n \"source\": \"print(1)\\n\",\n \"outputs\": [],\n \"execution_count\": null\n}"
  ]
};

/** [value, pprint.pformat(value, width=78)] */
const PRETTY: [unknown, string][] = [
  [
    {
      b: ['xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', 'short'],
      a: {
        nested: [
          0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
          25, 26, 27, 28, 29
        ]
      }
    },
    "{'a': {'nested': [0,\n                  1,\n                  2,\n                  3,\n                  4,\n                  5,\n                  6,\n                  7,\n                  8,\n                  9,\n                  10,\n                  11,\n                  12,\n                  13,\n                  14,\n                  15,\n                  16,\n                  17,\n                  18,\n                  19,\n                  20,\n                  21,\n                  22,\n                  23,\n                  24,\n                  25,\n                  26,\n                  27,\n                  28,\n                  29]},\n 'b': ['xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',\n       'short']}"
  ],
  [
    'word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word ',
    "('word word word word word word word word word word word word word word word '\n 'word word word word word word word word word word word word word word '\n 'word ')"
  ],
  [
    {
      source:
        'line one\nline two is a bit longer than the others line one\nline two is a bit longer than the others line one\nline two is a bit longer than the others '
    },
    "{'source': 'line one\\n'\n           'line two is a bit longer than the others line one\\n'\n           'line two is a bit longer than the others line one\\n'\n           'line two is a bit longer than the others '}"
  ],
  [
    [
      {
        cell_type: 'code',
        outputs: ['...3 outputs...'],
        metadata: { tags: ['t', 't', 't', 't', 't'] }
      },
      {
        cell_type: 'code',
        outputs: ['...3 outputs...'],
        metadata: { tags: ['t', 't', 't', 't', 't'] }
      }
    ],
    "[{'cell_type': 'code',\n  'metadata': {'tags': ['t', 't', 't', 't', 't']},\n  'outputs': ['...3 outputs...']},\n {'cell_type': 'code',\n  'metadata': {'tags': ['t', 't', 't', 't', 't']},\n  'outputs': ['...3 outputs...']}]"
  ]
];
describe('#readNotebook() validation messages', () => {
  it.each(Object.entries(MESSAGES))('words %s as Jupyter does', (_name, [text, message]) => {
    expect(readNotebook(Buffer.from(text, 'utf8')).validationMessage).toBe(message);
  });
});

describe('#validateNotebook()', () => {
  const valid = {
    cells: [
      { id: 'a', cell_type: 'markdown', metadata: {}, source: 'x' },
      { cell_type: 'raw', metadata: {}, source: 'no id' },
      { id: 'a', cell_type: 'raw', metadata: {}, source: 'repeated id' }
    ],
    metadata: { kernelspec: { name: 'python3', display_name: 'Python 3' } },
    nbformat: 4,
    nbformat_minor: 5
  };

  it('accepts missing and repeated cell ids, as nbformat repairs them first', () => {
    expect(validateNotebook(valid)).toBeUndefined();
  });

  it('does not modify the notebook', () => {
    const copy = structuredClone(valid);
    validateNotebook(valid);
    expect(valid).toEqual(copy);
  });

  it('reports the same message as a read', () => {
    const [text, message] = MESSAGES['execution_count float'];
    const notebook = JSON.parse(text);
    notebook.cells[0].execution_count = new PyNumber('float', '1.0');
    expect(validateNotebook(notebook)?.message).toBe(message);
  });

  it('tells what is wrong and where, as the message words them', () => {
    const [text] = MESSAGES['stream text'];
    expect(validateNotebook(JSON.parse(text))).toEqual({
      message: MESSAGES['stream text'][1],
      reason: "{'a': 5} is not valid under any of the given schemas",
      path: ['cells', 0, 'outputs', 0, 'text']
    });
  });

  it('gives keys as they are, where the message quotes them', () => {
    const notebook = JSON.parse(MESSAGES.required[0]);
    notebook.cells[0].outputs = [
      { output_type: 'display_data', metadata: {}, data: { "text/it's": 5 } }
    ];
    const error = validateNotebook(notebook);
    expect(error?.path).toEqual(['cells', 0, 'outputs', 0, 'data', "text/it's"]);
    expect(error?.message).toContain(`On instance['cells'][0]['outputs'][0]['data']["text/it's"]:`);
  });

  it('reports a notebook version it has no schema for', () => {
    const notebook = { ...valid, nbformat_minor: -1 };
    const reason = 'No schema for validating v4.-1 notebooks:\n"<UNKNOWN>"';
    expect(validateNotebook(notebook)).toEqual({
      message: `Notebook validation failed: ${reason}`,
      reason,
      path: []
    });
  });

  it("accepts an id with a final newline, as Python's `$` does", () => {
    const notebook = structuredClone(valid);
    notebook.cells[0].id = 'abc\n';
    expect(validateNotebook(notebook)).toBeUndefined();
  });

  it('relaxes the schema for a minor version from the future', () => {
    const future = {
      cells: [{ cell_type: 'future', metadata: {}, anything: 1 }],
      metadata: {},
      nbformat: 4,
      nbformat_minor: 9
    };
    expect(validateNotebook(future)).toBeUndefined();
  });

  it('accepts a big integer where an integer is expected, unlike a float', () => {
    const notebook = {
      cells: [
        {
          id: 'a',
          cell_type: 'code',
          metadata: {},
          source: '',
          outputs: [],
          execution_count: new PyNumber('int', '123456789012345678901')
        }
      ],
      metadata: {},
      nbformat: 4,
      nbformat_minor: 5
    };
    expect(validateNotebook(notebook)).toBeUndefined();
  });
});

describe('#pythonPrettyFormat()', () => {
  it.each(PRETTY.map(([value, text], index) => [index, value, text] as const))(
    'formats value %i as pprint does',
    (_index, value, expected) => {
      expect(pythonPrettyFormat(value, 78)).toBe(expected);
    }
  );
});
