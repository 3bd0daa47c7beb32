import { Option } from 'commander';
import type { RestoreResponse } from '@jupyter-store/contract';
import type { StoreClient } from '../storeClient';

/**
 * `jupyter store restore PATH [--version ID]`: write a deleted notebook back from the archive.
 * The registration in `storeCommands.ts` finds the server and the path; this module says what
 * the command is and does.
 */
export namespace RestoreCommand {
  export const summary = 'restore PATH: bring back a deleted notebook from the archive';

  export const usage = 'PATH [options]';

  export const description =
    'Write a notebook back from the archive: its last version before it was deleted (jupyter ' +
    'store deleted lists them), or the archived version --version names. Nothing is ' +
    'overwritten: when PATH exists again, the notebook is written at name-1.ipynb, ' +
    'name-2.ipynb, …; the command says where. Its directory must exist.';

  export const args: ReadonlyArray<readonly [string, string]> = [
    ['<path>', 'the notebook, as it was named before it was deleted']
  ];

  export function options(): Option[] {
    return [new Option('--version <ID>', 'the archived version to restore (default: the last)')];
  }

  /** Restore; what to print for people, and the server's answer for `--json`. */
  export async function run(
    client: StoreClient,
    request: { readonly path: string; readonly version?: string }
  ): Promise<{ text: string; json: RestoreResponse }> {
    const restored = await client.restore(request.path, request.version);
    return { text: describe(restored), json: restored };
  }

  /** "Restored PATH (version V) to WHERE", and why it is elsewhere when it is. */
  export function describe(restored: RestoreResponse): string {
    const from = restored.restored_from;
    const lines = [`Restored ${from.path} (version ${from.object_version_id}) to ${restored.path}`];
    if (restored.path !== from.path) lines.push(`(${from.path} exists: nothing was overwritten)`);
    return `${lines.join('\n')}\n`;
  }
}
