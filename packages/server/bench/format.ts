/** Number formatting and statistics shared by the benchmarks' reports. */

/** Milliseconds with a precision that suits their size. */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return 'n/a';
  if (ms < 10) return `${ms.toFixed(2)} ms`;
  if (ms < 100) return `${ms.toFixed(1)} ms`;
  return `${Math.round(ms).toLocaleString('en-US')} ms`;
}

/** A rate (per second) with a precision that suits its size. */
export function formatRate(rate: number): string {
  if (!Number.isFinite(rate)) return 'n/a';
  if (rate < 10) return rate.toFixed(2);
  if (rate < 100) return rate.toFixed(1);
  return Math.round(rate).toLocaleString('en-US');
}

/** `1.23x`, or `n/a` when undefined. */
export function formatRatio(ratio: number): string {
  return Number.isFinite(ratio) ? `${ratio.toFixed(2)}x` : 'n/a';
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** Nearest-rank percentiles of some samples (NaN samples left out). */
export interface ILatency {
  readonly n: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

export function latency(samples: readonly number[]): ILatency {
  const sorted = [...samples].filter(Number.isFinite).sort((a, b) => a - b);
  const rank = (p: number): number => sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? NaN;
  return {
    n: sorted.length,
    p50: rank(0.5),
    p90: rank(0.9),
    p99: rank(0.99),
    max: sorted.at(-1) ?? NaN
  };
}

/** `+1.23 ms` or `−1.23 ms`. */
export function formatSignedMs(ms: number): string {
  if (!Number.isFinite(ms)) return 'n/a';
  return `${ms >= 0 ? '+' : '−'}${formatMs(Math.abs(ms))}`;
}
