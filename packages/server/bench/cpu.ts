import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

/**
 * CPU and memory accounting from `/proc` for the benchmarks: how much CPU each process and the
 * whole machine used around a round, so that a ratio can be read against the load behind it,
 * and how much memory a process holds.
 */

/** USER_HZ: the unit of `/proc` CPU times. */
const clockTicks = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** A `/proc/<pid>/stat` line's parent pid and user + system CPU time in milliseconds. */
export function parseProcStat(stat: string): { ppid: number; cpuMs: number } {
  // The fields after the command name (which may hold spaces), from field 3 (state) on.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    ppid: Number(fields[1]),
    cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks
  };
}

/** User + system CPU time of a process, in milliseconds (0 if it cannot be read). */
export function processCpuMs(pid: number | null | undefined): number {
  if (pid === null || pid === undefined || pid < 0) return 0;
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8')).cpuMs;
  } catch {
    return 0;
  }
}

/** The pid and `/proc/<pid>/stat` figures of every process whose parent pid `test` accepts. */
function processesWhere(test: (ppid: number) => boolean): Map<number, number> {
  const found = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const { ppid, cpuMs } = parseProcStat(readFileSync(`/proc/${entry}/stat`, 'utf8'));
      if (test(ppid)) found.set(Number(entry), cpuMs);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** The processes whose parent is `pid` (Jupyter's kernels). */
export function childPids(pid: number | null): number[] {
  return pid === null ? [] : [...processesWhere(ppid => ppid === pid).keys()];
}

/**
 * CPU time of every kernel thread (children of kthreadd, pid 2: block-device and file-system
 * workers, softirq threads), by pid, in milliseconds.
 */
export function kernelThreadsCpuMs(): Map<number, number> {
  return processesWhere(ppid => ppid === 2);
}

/** Busy time of all cores since boot (`/proc/stat`: all but idle and iowait), in milliseconds. */
export function machineBusyMs(): number {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/);
    // cpu user nice system idle iowait irq softirq steal guest guest_nice; guest time is
    // already counted in user and nice.
    const ticks = fields.slice(1, 9).map(Number);
    const busy = ticks.reduce((sum, tick) => sum + tick, 0) - ticks[3] - ticks[4];
    return (busy * 1000) / clockTicks;
  } catch {
    return NaN;
  }
}

/** VmRSS and VmHWM (peak RSS) of a process, in bytes. */
export function readMemory(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string): number => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status);
    if (match === null) throw new Error(`/proc/${pid}/status has no ${name}`);
    return Number(match[1]) * 1024;
  };
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}
