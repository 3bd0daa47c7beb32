import { readFileSync } from 'node:fs';
import * as path from 'node:path';

/** The name in this package's package.json. */
const PACKAGE_NAME = '@jupyter-store/server';

let cached: string | undefined;

/**
 * This package's version, read from its package.json: the nearest one up from this module that
 * names this package. That is `../package.json` from `src/` and from `lib/`, and
 * `../../package.json` from the single-file bundle in `lib/cli/` that the Python package and the
 * npm tarball ship (scripts/package.sh).
 */
export function packageVersion(): string {
  if (cached !== undefined) return cached;
  let dir = __dirname;
  for (;;) {
    let manifest: { name?: string; version?: string } | undefined;
    try {
      manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
    } catch {
      // none here (or unreadable): look further up
    }
    if (manifest?.name === PACKAGE_NAME && typeof manifest.version === 'string') {
      cached = manifest.version;
      return cached;
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json of ${PACKAGE_NAME} above ${__dirname}`);
    dir = parent;
  }
}
