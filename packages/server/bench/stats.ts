/**
 * Statistics and number formatting shared by the benchmarks' reports: percentiles, medians,
 * means, and how times, rates and ratios are written in the tables.
 */

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

/** The middle value; for an even count, the mean of the two middle ones. */
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

/** Nearest-rank p50, p90, p99 and the maximum of the finite samples. */
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

/**
 * `+1.23 ms` or `−1.23 ms`: with the precision of {@link formatMs}, or with `digits` decimals
 * when given (differences well below a millisecond).
 */
export function formatSignedMs(ms: number, digits?: number): string {
  if (!Number.isFinite(ms)) return 'n/a';
  const size = Math.abs(ms);
  return `${ms >= 0 ? '+' : '−'}${digits === undefined ? formatMs(size) : `${size.toFixed(digits)} ms`}`;
}

/** `+1.2 %` or `−1.2 %` of a ratio (0.012 is `+1.2 %`). */
export function formatSignedPercent(ratio: number): string {
  if (!Number.isFinite(ratio)) return 'n/a';
  return `${ratio >= 0 ? '+' : '−'}${Math.abs(ratio * 100).toFixed(1)} %`;
}

/** Milliseconds written as whole microseconds (CPU time per request or save). */
export function formatUs(ms: number): string {
  return Number.isFinite(ms) ? `${Math.round(ms * 1000).toLocaleString('en-US')} µs` : 'n/a';
}

/** Bytes in MiB, with `digits` decimals. */
export function formatMiB(bytes: number, digits = 1): string {
  return `${(bytes / 1024 / 1024).toFixed(digits)} MiB`;
}

/** Mean of some numbers (NaN when there are none). */
export function mean(values: readonly number[]): number {
  return values.length === 0 ? NaN : values.reduce((a, b) => a + b, 0) / values.length;
}

/**
 * The value at index ⌊q·n⌋ of the sorted samples (the last one for q = 1; NaN when there are
 * none): the span tables' percentiles, which for q·n whole take the sample above the nearest rank.
 */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** The lower of the two middle values for an even count (a value that was measured). */
export function lowerMedian(values: readonly number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] ?? NaN;
}
