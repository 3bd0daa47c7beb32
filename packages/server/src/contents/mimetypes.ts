import { readFileSync } from 'node:fs';
import { splitExtension } from './paths';
import defaults from './python-mimetypes.json';

/**
 * Python's `mimetypes.guess_type(path)[0]`, which Jupyter reports as a file's `mimetype`: the
 * built-in table of Python 3.11, overridden by the system's `mime.types` files read in Python's
 * order, with its suffix aliases (`.tgz` → `.tar.gz`) and encodings (`.gz`) handled as Python does.
 */
export class MimeTypes {
  constructor(systemFiles: readonly string[] = defaults.knownFiles) {
    this.types = new Map(Object.entries(defaults.types));
    for (const file of systemFiles) this.readSystemFile(file);
  }

  /** The type of a file name, or null when unknown. */
  guess(name: string): string | null {
    let { name: base, ext } = splitExtension(name);
    const suffixes = defaults.suffixes as Record<string, string>;
    while (Object.hasOwn(suffixes, ext))
      ({ name: base, ext } = splitExtension(base + suffixes[ext]));
    if (Object.hasOwn(defaults.encodings, ext)) ({ name: base, ext } = splitExtension(base));
    return this.types.get(ext) ?? this.types.get(ext.toLowerCase()) ?? null;
  }

  private readSystemFile(file: string): void {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return;
    }
    for (const line of text.split('\n')) {
      const words = line.split(/\s+/).filter(word => word !== '');
      const comment = words.findIndex(word => word.startsWith('#'));
      if (comment >= 0) words.length = comment;
      const [type, ...extensions] = words;
      if (type === undefined) continue;
      for (const extension of extensions) this.types.set(`.${extension}`, type);
    }
  }

  private readonly types: Map<string, string>;
}

let shared: MimeTypes | undefined;

/** The process-wide table, read once on first use. */
export function guessMimeType(name: string): string | null {
  shared ??= new MimeTypes();
  return shared.guess(name);
}
