/**
 * CPU accounting of the archive benchmark: the gateway under test, MinIO, this process and the
 * kernel threads (where fsync work lands) around every round, and the rest of the machine.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { kernelThreadsCpuMs, machineBusyMs, parseProcStat, processCpuMs } from '../cpu';
import { sleep } from '../harness';
import type { ICpu } from './model';

/** The processes whose CPU time is counted. */
export interface IPids {
  readonly gateway: number | undefined;
  readonly minio: number | undefined;
}

/** A snapshot of the counters. */
interface ICpuSnapshot {
  readonly gateway: number;
  readonly minio: number;
  readonly client: number;
  readonly kernel: Map<number, number>;
  /** The machine's total busy time. */
  readonly machine: number;
}

export function cpuNow(pids: IPids): ICpuSnapshot {
  const own = process.cpuUsage();
  return {
    gateway: processCpuMs(pids.gateway),
    minio: processCpuMs(pids.minio),
    client: (own.user + own.system) / 1000,
    kernel: kernelThreadsCpuMs(),
    machine: machineBusyMs()
  };
}

export function cpuSince(pids: IPids, start: ICpuSnapshot): ICpu {
  const now = cpuNow(pids);
  const gateway = now.gateway - start.gateway;
  const minio = now.minio - start.minio;
  const client = now.client - start.client;
  let kernel = 0;
  // Kernel workers come and go: count the ones alive at the end (new ones from zero).
  for (const [pid, ms] of now.kernel) kernel += Math.max(0, ms - (start.kernel.get(pid) ?? 0));
  const machine = now.machine - start.machine;
  return {
    gateway,
    minio,
    client,
    kernel,
    others: Math.max(0, machine - gateway - minio - client - kernel)
  };
}

export function addCpu(a: ICpu, b: ICpu): ICpu {
  return {
    gateway: a.gateway + b.gateway,
    minio: a.minio + b.minio,
    client: a.client + b.client,
    kernel: a.kernel + b.kernel,
    others: a.others + b.others
  };
}

export const NO_CPU: ICpu = { gateway: 0, minio: 0, client: 0, kernel: 0, others: 0 };

/** How busy the rest of the machine is, in cores, over `ms`. */
export async function otherLoad(ms: number, pids: IPids): Promise<number> {
  const start = cpuNow(pids);
  await sleep(ms);
  return cpuSince(pids, start).others / ms;
}

/** CPU time over an interval as the cores it kept busy, `0.42`. */
export function cores(cpuMs: number, seconds: number): string {
  return (cpuMs / (seconds * 1000)).toFixed(2);
}

/**
 * CPU time of each thread of a process, by thread (`/proc/<pid>/task/<tid>/stat`): the main
 * thread is named `main`; the others by their name (`libuv-worker`, `V8 DefaultWorke`, ...),
 * with those that kept the process's own name (native threads such as @parcel/watcher's) as
 * `other threads`.
 */
export function threadsCpuMs(pid: number | undefined): Map<number, { name: string; ms: number }> {
  const threads = new Map<number, { name: string; ms: number }>();
  if (pid === undefined) return threads;
  let own = '';
  try {
    own = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    for (const entry of readdirSync(`/proc/${pid}/task`)) {
      const tid = Number(entry);
      try {
        const stat = readFileSync(`/proc/${pid}/task/${entry}/stat`, 'utf8');
        const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        const name = tid === pid ? 'main' : comm === own ? 'other threads' : comm;
        threads.set(tid, { name, ms: parseProcStat(stat).cpuMs });
      } catch {
        // The thread ended.
      }
    }
  } catch {
    // The process ended.
  }
  return threads;
}

/** CPU per thread name since `start` (threads started meanwhile count from zero). */
export function threadsCpuSince(
  pid: number | undefined,
  start: Map<number, { name: string; ms: number }>
): Map<string, number> {
  const byName = new Map<string, number>();
  for (const [tid, { name, ms }] of threadsCpuMs(pid)) {
    const used = Math.max(0, ms - (start.get(tid)?.ms ?? 0));
    byName.set(name, (byName.get(name) ?? 0) + used);
  }
  return byName;
}
