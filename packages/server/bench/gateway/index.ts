/**
 * `npm run bench:gateway`: what the gateway costs in front of JupyterLab. In one run, side by
 * side, the same traffic goes through the gateway and straight to the Jupyter Server behind it
 * (the upstream address of the gateway's runtime record): kernel execute round trips over the
 * kernel websocket, and proxied HTTP throughput for a static Lab asset and `api/kernelspecs`.
 *
 * #### Notes
 * - `jupyter-store lab` is started from the built CLI, once per upstream transport (`unix`, the
 *   default, then `tcp`). "Direct" requests use the upstream address of the record: the unix
 *   socket (`socketPath`) or the loopback port. Both paths send the same Host and Authorization
 *   headers, so Jupyter sees the same requests.
 * - Kernel round trips: one kernel (POST `api/kernels` through the gateway); only one websocket
 *   is connected to it at a time, since Jupyter copies every iopub message to every connection
 *   of a kernel, which would make each path pay for the other. Blocks of iterations alternate
 *   between the paths (the one that goes first alternates too); each block opens its socket and
 *   runs a few unrecorded executes first. A round trip is the time from sending
 *   `execute_request` to receiving its `execute_result`; the next request is sent only after the
 *   kernel reported `idle` and the `execute_reply` arrived.
 * - HTTP throughput: a fixed number of workers (keep-alive `node:http` agent, one connection per
 *   worker, each request sent when the previous answer was read to its last byte) for a fixed
 *   time per round; rounds alternate between the paths. Every round opens its connections with
 *   one unrecorded request per worker before the clock starts. The throughput target is checked
 *   against the median of the gateway/direct ratios of adjacent rounds, which a burst of load
 *   from another process moves less than the ratio of the totals (also printed).
 * - CPU time of the gateway, of Jupyter and of this load generator is read around every round
 *   (`/proc/<pid>/stat`, `process.cpuUsage`), and the busy time of the whole machine
 *   (`/proc/stat`), so that the report shows where the cores went and how much of them other
 *   processes took: on a small shared machine that is the main source of noise.
 * - A measurement, not a test: it exits 0 whether the targets are met or not, and non-zero only
 *   when something failed (a server did not start, a request got an unexpected answer).
 *
 * The same command also runs the phase `contents` (bench/relay: the contents API with the
 * `jupyter` backend, relayed to Python's contents manager, against plain JupyterLab), after
 * these; it writes its own section of docs/benchmarks.md.
 *
 * The phase `proxy` is in this folder: the two routes and the HTTP load (http.ts), the kernel
 * round trips (kernel.ts), one configuration (proxy.ts) and the report (report.ts); this file
 * runs the phases.
 *
 * Options: `--quick` (smoke run), `--only proxy|contents` (one phase: `proxy` is the kernel round
 * trips and HTTP throughput above; default both), `--transport unix|tcp|both` (default both; for
 * `proxy`), `--skip-minio` (`contents` without its MinIO side), `--profile` (the gateway profiled
 * through the V8 inspector, as `node --cpu-prof` would, with a summary of where its time went),
 * `--skip-build`, `--no-docs` (do not update docs/benchmarks.md; implied by --quick and
 * --profile, and for `proxy` by a single transport, for `contents` by --skip-minio). The phase

/** The whole run is aborted (servers stopped) after this long (per phase). */
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../test/support/jupyterServer';
import { build } from '../build';
import { log } from '../cleanup';
import { DOCS_FILE, reportText, writeGeneratedSection } from '../docs';
import { commandLine, machineWithPython, runBenchmark } from '../harness';
import { formatProfileSummary, summariseProfile } from '../profile';
import {
  CONTENTS_SECTION,
  contentsChecks,
  contentsInvalid,
  contentsReport,
  runContents
} from '../relay';
import type { IConfigResult } from './model';
import { options, phases, transports, writeDocs } from './options';
import { runConfiguration } from './proxy';
import { GATEWAY_SECTION, report } from './report';

const RUN_DEADLINE_MS = { proxy: 8 * 60_000, contents: 15 * 60_000 };

/** The machine, and the Python packages both phases run. */
function machine(): string {
  return machineWithPython(['jupyter_server', 'jupyterlab', 'ipykernel']);
}

/** The phase `contents` (relay/): the contents API relayed to Jupyter, against plain Jupyter. */
async function runContentsPhase(command: string): Promise<boolean> {
  const started = Date.now();
  const result = await runContents({
    quick: options.quick,
    minio: !options['skip-minio'],
    profile: options.profile
  });
  const { head, sections } = contentsReport(result);
  const { text, allMet } = reportText({
    title: 'Contents API relayed to Jupyter: results',
    command,
    machine: machine(),
    seconds: (Date.now() - started) / 1000,
    head,
    sections,
    checks: contentsChecks(result)
  });
  process.stdout.write(`\n${text}\n`);
  const invalid = contentsInvalid(result);
  if (invalid !== undefined) throw new Error(`${invalid}: the figures above are not written`);
  if (writeDocs.contents) {
    writeGeneratedSection(CONTENTS_SECTION, text);
    log(`wrote ${DOCS_FILE}`);
  }
  if (result.profile !== undefined) {
    process.stdout.write(`\n${result.profile}\n`);
  }
  return allMet;
}

/** The phase `proxy`: kernel round trips and proxied HTTP, through the gateway and direct. */
async function runProxyPhase(command: string): Promise<boolean> {
  const started = Date.now();
  const profileDir = options.profile
    ? join(tmpdir(), 'jupyter-store-bench-profiles', `gateway-${Date.now()}`)
    : undefined;
  const results: IConfigResult[] = [];
  for (const transport of transports) results.push(await runConfiguration(transport, profileDir));

  const { text, allMet } = report(results, machine(), command, (Date.now() - started) / 1000);
  process.stdout.write(`\n${text}\n`);
  if (writeDocs.proxy) {
    writeGeneratedSection(GATEWAY_SECTION, text);
    log(`wrote ${DOCS_FILE}`);
  }

  if (profileDir !== undefined) {
    // Jupyter runs Node tools at start-up (the build check) that load the preload too: only the
    // gateway's own profile is summarised.
    for (const config of results) {
      const dir = join(profileDir, config.transport);
      const file = join(dir, `${config.gatewayPid}.cpuprofile`);
      if (!(await readdir(dir)).includes(`${config.gatewayPid}.cpuprofile`)) {
        log(`no ${file}: did the gateway exit cleanly?`);
        continue;
      }
      const summary = await summariseProfile(file, REPO_ROOT);
      process.stdout.write(
        `\n### CPU profile of the gateway (${config.transport}; ${file})\n\n${formatProfileSummary(summary)}\n`
      );
    }
  }
  return allMet;
}

async function run(): Promise<void> {
  if (!options['skip-build']) build();
  const command = commandLine('bench:gateway');
  let allMet = true;
  if (phases.includes('proxy')) allMet = (await runProxyPhase(command)) && allMet;
  if (phases.includes('contents')) allMet = (await runContentsPhase(command)) && allMet;
  if (!allMet) log('some targets were missed (a measurement: the exit status stays 0)');
}

void runBenchmark(
  run,
  phases.reduce((sum, phase) => sum + RUN_DEADLINE_MS[phase], 0)
);
