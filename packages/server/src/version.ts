import { readFileSync } from 'node:fs';
import * as path from 'node:path';

let cached: string | undefined;

/** This package's version, read from its package.json (both from `src/` and from `lib/`). */
export function packageVersion(): string {
  cached ??= (
    JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as {
      version: string;
    }
  ).version;
  return cached;
}
