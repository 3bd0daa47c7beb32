/** The command line of `npm run bench:gateway`, read once for all its phases. */
import { parseArgs } from 'node:util';
import type { Transport } from './model';

/** The phases `--only` can select. */
type Phase = 'proxy' | 'contents';
const PHASES: readonly Phase[] = ['proxy', 'contents'];

export const { values: options } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    transport: { type: 'string', default: 'both' },
    only: { type: 'string' },
    'skip-minio': { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    'skip-build': { type: 'boolean', default: false },
    'no-docs': { type: 'boolean', default: false }
  },
  strict: true,
  allowPositionals: false
});

export const transports: Transport[] =
  options.transport === 'both'
    ? ['unix', 'tcp']
    : options.transport === 'unix' || options.transport === 'tcp'
      ? [options.transport]
      : [];
if (transports.length === 0) {
  process.stderr.write(`--transport: '${options.transport}' is not unix, tcp or both\n`);
  process.exit(2);
}

export const phases: Phase[] =
  options.only === undefined
    ? [...PHASES]
    : options.only.split(',').map(name => name.trim() as Phase);
if (phases.length === 0 || phases.some(phase => !PHASES.includes(phase))) {
  process.stderr.write(`--only: '${options.only}' is not a list of ${PHASES.join(', ')}\n`);
  process.exit(2);
}

/** A section of docs/benchmarks.md is rewritten only by a full run of its phase. */
export const writeDocs = {
  proxy: !options.quick && !options.profile && transports.length === 2 && !options['no-docs'],
  contents: !options.quick && !options.profile && !options['skip-minio'] && !options['no-docs']
};
