import type { IGatewayProcess } from './gateway';

/** The contents model a client saves for a notebook of one markdown cell holding `text`. */
export function markdownNotebookModel(text: string): Record<string, unknown> {
  return {
    type: 'notebook',
    content: {
      cells: [{ cell_type: 'markdown', id: 'a', metadata: {}, source: text }],
      metadata: {},
      nbformat: 4,
      nbformat_minor: 5
    }
  };
}

/**
 * Save a notebook of one markdown cell holding `text` at `path`, through the gateway's contents
 * API with its token, as a client's save: the gateway archives it like any other.
 *
 * @returns the answer's status (a new notebook is 201, a saved one 200).
 */
export async function saveMarkdownNotebook(
  gateway: IGatewayProcess,
  path: string,
  text: string
): Promise<number> {
  const response = await fetch(gateway.url(`api/contents/${encodeURI(path)}`), {
    method: 'PUT',
    headers: { Authorization: `token ${gateway.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(markdownNotebookModel(text))
  });
  return response.status;
}

/**
 * The file text of a Python notebook with these cells, as nbformat writes it (one-space
 * indentation, a final newline): for tests that write notebooks to disk as Jupyter would.
 */
export function pythonNotebookFile(cells: readonly unknown[]): string {
  return `${JSON.stringify(
    {
      cells,
      metadata: {
        kernelspec: { display_name: 'Python 3', language: 'python', name: 'python3' },
        language_info: { name: 'python' }
      },
      nbformat: 4,
      nbformat_minor: 5
    },
    null,
    1
  )}\n`;
}
