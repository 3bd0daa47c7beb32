/** Small nbformat 4 notebooks for the tests. */

let counter = 0;

/** A valid notebook whose cells are code cells with these sources. */
export function notebook(sources: string[], cellMetadata: Record<string, unknown> = {}): object {
  return {
    cells: sources.map(source => ({
      cell_type: 'code',
      execution_count: null,
      id: `cell-${++counter}`,
      metadata: { ...cellMetadata },
      outputs: [],
      source
    })),
    metadata: {
      kernelspec: { display_name: 'Python 3 (ipykernel)', language: 'python', name: 'python3' },
      language_info: { name: 'python' }
    },
    nbformat: 4,
    nbformat_minor: 5
  };
}

/** The same, as the text of an `.ipynb` file. */
export function notebookJson(
  sources: string[],
  cellMetadata: Record<string, unknown> = {}
): string {
  return `${JSON.stringify(notebook(sources, cellMetadata), null, 1)}\n`;
}

/** The sources of a notebook's cells, each joined into one string. */
export function cellSources(notebookContent: unknown): string[] {
  const cells = (notebookContent as { cells?: { source: string | string[] }[] }).cells ?? [];
  return cells.map(cell => (Array.isArray(cell.source) ? cell.source.join('') : cell.source));
}
