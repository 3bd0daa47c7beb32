import { Option } from 'commander';
import { MAX_DELETED_LIMIT, type DeletedListing } from '@jupyter-store/contract';
import type { StoreClient } from '../storeClient';
import { parseLimitOption } from './commandLine';

/**
 * `jupyter store deleted [PREFIX] [--limit N]`: the notebooks deleted from the server whose
 * versions the archive keeps, newest deletion first. The registration in `storeCommands.ts`
 * finds the server and the prefix; this module says what the command is and does.
 */
export namespace DeletedCommand {
  export const summary = 'deleted [PREFIX]: list the recently deleted notebooks';

  export const usage = '[PREFIX] [options]';

  export const description =
    'List the notebooks deleted from the server whose versions the archive keeps, newest ' +
    'deletion first, each with when it was deleted and its last version (what jupyter store ' +
    'restore PATH writes back). With PREFIX, only those below that directory. A renamed ' +
    'notebook is not listed under its old name. The server lists the whole archive of the ' +
    'workspace for this: it takes a while in a large one.';

  export const args: ReadonlyArray<readonly [string, string]> = [
    ['[prefix]', 'only the notebooks below this directory']
  ];

  export function options(): Option[] {
    return [
      new Option(
        '--limit <N>',
        `list at most N notebooks (1 to ${MAX_DELETED_LIMIT}; default: the server's, 100)`
      )
    ];
  }

  /** What `deleted` was given, besides the server. */
  export interface IRequest {
    readonly prefix?: string;
    readonly limit?: string;
  }

  /** List them; what to print for people, and the server's answer for `--json`. */
  export async function run(
    client: StoreClient,
    request: IRequest
  ): Promise<{ text: string; json: DeletedListing }> {
    const limit = parseLimitOption(request.limit, MAX_DELETED_LIMIT);
    const listing = await client.deleted({ prefix: request.prefix, limit });
    return { text: describe(listing, request.prefix), json: listing };
  }

  /** One line per deleted notebook: path, when deleted, the version a restore writes back. */
  export function describe(listing: DeletedListing, prefix?: string): string {
    const where = prefix ? ` below ${prefix}` : '';
    if (listing.deleted.length === 0) return `No deleted notebooks${where}.\n`;
    const lines = [`Deleted notebooks${where}, newest deletion first:`];
    for (const entry of listing.deleted) {
      const last = entry.last_version;
      lines.push(
        `  ${entry.path}  deleted ${entry.deleted_at}`,
        `    last version ${last.object_version_id}  ${last.last_modified}  ${last.size} bytes`
      );
    }
    if (listing.left_out > 0) {
      lines.push(`${listing.left_out} more not listed: raise --limit to see them.`);
    }
    lines.push('Restore one with: jupyter store restore PATH [--version ID]');
    return `${lines.join('\n')}\n`;
  }
}
