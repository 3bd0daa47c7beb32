/** The command line of `npm run bench:archive`, read once for all its measurements. */
import { parseArgs } from 'node:util';
import { OBSERVATION_PHASES, type ObservationPhase } from '../observe';

/** Measurements that `--only` can select: these, and those of bench/observe. */
type SavePhase = 'throughput' | 'latency' | 'onoff';
export const SAVE_PHASES: readonly SavePhase[] = ['throughput', 'latency', 'onoff'];
type Phase = SavePhase | ObservationPhase;
const PHASES: readonly Phase[] = [...SAVE_PHASES, ...OBSERVATION_PHASES];
/** Names of groups of measurements for `--only`. */
const PHASE_GROUPS: Readonly<Record<string, readonly Phase[]>> = {
  saves: SAVE_PHASES,
  observation: OBSERVATION_PHASES
};

export const { values: options } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    profile: { type: 'boolean', default: false },
    spans: { type: 'boolean', default: false },
    'skip-build': { type: 'boolean', default: false },
    'no-docs': { type: 'boolean', default: false }
  },
  strict: true,
  allowPositionals: false
});

export const phases: Phase[] =
  options.only === undefined
    ? [...PHASES]
    : options.only
        .split(',')
        .map(name => name.trim())
        .flatMap(name => PHASE_GROUPS[name] ?? [name as Phase]);
if (phases.length === 0 || phases.some(phase => !PHASES.includes(phase))) {
  process.stderr.write(
    `--only: '${options.only}' is not a list of ${PHASES.join(', ')} ` +
      `(or ${Object.keys(PHASE_GROUPS).join(', ')})\n`
  );
  process.exit(2);
}
export const savePhases = SAVE_PHASES.filter(phase => phases.includes(phase));
export const observationPhases = OBSERVATION_PHASES.filter(phase => phases.includes(phase));

/** A section of docs/benchmarks.md is rewritten by a full run of all of its measurements. */
export const writeDocs = (group: readonly Phase[]): boolean =>
  !options.quick &&
  !options.profile &&
  !options.spans &&
  !options['no-docs'] &&
  group.every(phase => phases.includes(phase));
