/**
 * `npm run bench:archive`: what archiving every notebook save costs, against one local MinIO, in
 * one run. Three measurements:
 *
 * 1. Sustained archive throughput: N saves of a ~20 KB notebook over P paths, C at a time,
 *    through `jupyter-store lab`'s contents API, timed from the first PUT until the gateway has
 *    confirmed the last version (its journal holds no record); beside it, the same
 *    object bodies written with the AWS SDK's `PutObject` straight from this process to MinIO,
 *    with the same concurrency and key pattern, and (to tell archiving's share from the contents
 *    API's) the same saves through a gateway with archiving off, and (the reference) the same
 *    saves to plain Jupyter Server, no gateway and no archiving. Rounds alternate.
 * 2. Save-to-archived latency of a paced stream of saves (well below saturation): from sending
 *    the PUT until the version is listed by MinIO (`ListObjectVersions` on the keys with saves
 *    outstanding, every few milliseconds), with the gateway's own breakdown from its debug log
 *    (`archived` lines: `queuedMs`, `uploadMs`).
 * 3. Save latency (the contents PUT) with archiving on and off: the same paced saves through a
 *    gateway that archives to MinIO and through one with archiving off (`workspace_prefix` empty,
 *    everything else equal), and to plain Jupyter Server (the reference row: the venv's
 *    `jupyter_server` with its default contents manager, same client and schedule), in rotating
 *    rounds.
 *
 * #### Notes
 * - Every save embeds a unique id (`metadata.jupyter_store_bench.save_id`, fixed width) in the
 *   notebook, so every archived version differs, and versions can be matched to saves: the
 *   gateway keeps save order per path, and the client sends the saves of one path one at a time,
 *   so the k-th version of a key is the k-th save to its path (checked by reading the versions
 *   back). The raw `PutObject` bodies are the bytes the gateway wrote to disk for a save, with
 *   another id in the same place: byte for byte the size of an archived version, with the same
 *   content type and user metadata (`save-id`, `sha256`).
 * - Three gateways run, each with its own Jupyter, root and journal, all archiving to one
 *   versioned bucket: "on" (default settings, `--log-level info`; measurements 1 and 3), "off"
 *   (`--StoreSettings.workspace_prefix=`, checked by its `archiving is off` log line;
 *   measurements 1 and 3) and "debug" (like "on" with `--log-level debug`; measurement 2), so that the
 *   debug log's cost (a line per request and per archive, written synchronously to a pipe) is in
 *   none of the compared figures. Credentials reach the gateways through `STORE_OBJECT_*`.
 * - CPU time of the gateway under test, of MinIO and of this process is read around every round
 *   (`/proc/<pid>/stat`, `process.cpuUsage`), and the busy time of the whole machine
 *   (`/proc/stat`), and of the kernel threads (fsync work lands there): "other processes" is the
 *   rest, i.e. other jobs on the machine, the main source of noise on a small shared machine.
 * - A measurement, not a test: it exits 0 whether the targets are met or not, and non-zero only
 *   when something failed (a server did not start, a save got an unexpected answer, a version is
 *   missing or out of order).
 *
 * The same command also runs the measurements of bench/observe (how the archive keeps up with
 * writers other than the contents API: a bulk first start against `mc mirror`, an unchanged
 * re-scan against `git status`, a kernel's writes until their versions are listed), after these
 * three; they write their own section of docs/benchmarks.md.
 *
 * The measurements are in this folder, one file each (throughput.ts, latency.ts, onoff.ts), with
 * the servers (servers.ts), the CPU accounting (cpu.ts) and the report (report.ts,
 * pacedReport.ts); savePhases.ts runs the three, and this file runs them and the observation.
 *
 * Options: `--quick` (smoke run), `--only PHASES` (a comma-separated subset of `throughput`,
 * `latency`, `onoff`, `bulk`, `rescan`, `observed`, or the groups `saves` for the first three and
 * `observation` for the last three), `--profile` (the "on" gateway, and the bulk gateways of
 * bench/observe, under the V8 CPU profiler, with a summary of where their time went),
 * `--spans` (the "on" and "off" gateways with the stage timers of spans.ts: wall and CPU time
 * of each stage of a save, printed at the end),
 * `--skip-build`, `--no-docs` (do not update docs/benchmarks.md; implied by --quick and
 * --profile). A section of docs/benchmarks.md is rewritten only by a run of all its measurements
 * (`--only saves`, about two and a half minutes; `--only observation`, about five minutes; or
 * everything, the default).
 */
import { build } from '../build';
import { log } from '../cleanup';
import { DOCS_FILE, writeGeneratedSection } from '../docs';
import { commandLine, runBenchmark } from '../harness';
import {
  OBSERVATION_PHASES,
  OBSERVATION_SECTION,
  observationProfiles,
  observationReport,
  runObservation
} from '../observe';
import { observationPhases, options, savePhases, writeDocs } from './options';
import { runSaves } from './savePhases';

/** The whole run is aborted (servers stopped) after this long (the saves, the observation). */
const RUN_DEADLINE_MS = { saves: 8 * 60_000, observation: 30 * 60_000 };

async function run(): Promise<void> {
  if (!options['skip-build']) build();
  const command = commandLine('bench:archive');
  let allMet = true;
  if (observationPhases.length > 0) {
    const started = Date.now();
    const result = await runObservation({
      phases: observationPhases,
      quick: options.quick,
      profile: options.profile
    });
    const { text, allMet: met } = observationReport(result, command, (Date.now() - started) / 1000);
    process.stdout.write(`\n${text}\n`);
    if (writeDocs(OBSERVATION_PHASES)) {
      writeGeneratedSection(OBSERVATION_SECTION, text);
      log(`wrote ${DOCS_FILE}`);
    }
    if (options.profile) process.stdout.write(`\n${observationProfiles(result)}`);
    allMet &&= met;
  }
  if (savePhases.length > 0) allMet = (await runSaves(command)) && allMet;
  if (!allMet) log('some targets were missed (a measurement: the exit status stays 0)');
}

void runBenchmark(
  run,
  (savePhases.length > 0 ? RUN_DEADLINE_MS.saves : 0) +
    (observationPhases.length > 0 ? RUN_DEADLINE_MS.observation : 0)
);
