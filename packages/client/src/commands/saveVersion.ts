import { Option } from 'commander';
import type { NamedVersion, ObjectVersion } from '@jupyter-store/contract';
import type { StoreClient } from '../storeClient';

/**
 * `jupyter store save-version PATH NAME [--note TEXT] [--version ID]`: give an archived version
 * of a notebook a name (and a note) that version listings show, and that outlives the archive's
 * retention. The registration in `storeCommands.ts` finds the server and the path; this module
 * says what the command is and does.
 */
export namespace SaveVersion {
  export const summary = 'save-version PATH NAME: name the newest archived version of a notebook';

  export const usage = 'PATH NAME [options]';

  export const description =
    'Give an archived version of a notebook a name, and with --note a note: the newest version ' +
    "(once the notebook's last save is archived), or the version --version names (jupyter " +
    'store versions PATH lists them). Naming a version that has a name replaces it. The server ' +
    'keeps a copy of the named version apart from the archive, so it stays when old versions ' +
    'are expired. The copy named is the one last saved: save first to include recent changes.';

  export const args: ReadonlyArray<readonly [string, string]> = [
    ['<path>', 'the notebook'],
    ['<name>', 'the name (1 to 100 characters)']
  ];

  export function options(): Option[] {
    return [
      new Option('--note <TEXT>', 'a note kept with the name (at most 500 characters)'),
      new Option('--version <ID>', 'the archived version to name (default: the newest)')
    ];
  }

  /** What `save-version` was given, besides the server. */
  export interface IRequest {
    readonly path: string;
    readonly name: string;
    readonly note?: string;
    readonly version?: string;
  }

  /** Name the version; what to print for people, and the server's answer for `--json`. */
  export async function run(
    client: StoreClient,
    request: IRequest
  ): Promise<{ text: string; json: NamedVersion }> {
    const named = await client.nameVersion(request.path, {
      name: request.name,
      ...(request.note !== undefined ? { note: request.note } : {}),
      ...(request.version !== undefined ? { object_version_id: request.version } : {})
    });
    return { text: describe(named), json: named };
  }

  /** "Named version V of PATH "NAME"", its note, and where the named copy is kept. */
  export function describe(named: NamedVersion): string {
    const lines = [
      `Named version ${named.object_version_id} of ${named.path} ${JSON.stringify(named.label.name)}.`
    ];
    if (named.label.note !== null) lines.push(`Note: ${named.label.note}`);
    lines.push(`The named copy is kept at s3://${named.object_bucket}/${named.label.object_key}.`);
    return `${lines.join('\n')}\n`;
  }

  /**
   * How a version listing shows a version's name: `  "NAME"` and, on the next line, its note
   * (indented by `indent`); empty for a version without a name.
   */
  export function labelText(version: ObjectVersion, indent: string): string {
    if (version.label === undefined) return '';
    const note =
      version.label.note === null
        ? ''
        : `\n${indent}${version.label.note.replace(/\n/g, `\n${indent}`)}`;
    return `  ${JSON.stringify(version.label.name)}${note}`;
  }
}
