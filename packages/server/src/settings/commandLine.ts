import { SettingsError } from './settingsError';

/**
 * Split `--StoreSettings.<name>=<value>` (and `--StoreSettings.<name> <value>`) out of a command
 * line, as traitlets reads them; the rest is returned for the command's own flags. Apart from
 * the rest of the settings, so that the command line splits them without loading the rest.
 */
export function splitSettingsFlags(argv: readonly string[]): {
  flags: Record<string, string>;
  rest: string[];
} {
  const flags: Record<string, string> = {};
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const match = /^--StoreSettings\.([A-Za-z_][A-Za-z0-9_]*)(?:=(.*))?$/s.exec(argv[i]);
    if (!match) {
      rest.push(argv[i]);
      continue;
    }
    const value = match[2] ?? argv[i + 1];
    if (value === undefined) {
      throw new SettingsError(match[1], 'the command line', 'needs a value');
    }
    if (match[2] === undefined) i++;
    flags[match[1]] = value;
  }
  return { flags, rest };
}
