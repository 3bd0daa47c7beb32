/**
 * Aligning two sequences: nbdime's "snakes" (runs of items deemed the same), found by a longest
 * common subsequence under a predicate, refined level by level with looser predicates.
 */

/** Whether two items are deemed the same. */
export type Predicate<T> = (x: T, y: T) => boolean;

/** A snake: `n` items from `a[i]` and `b[j]` on, pairwise deemed the same. */
export type Snake = readonly [i: number, j: number, n: number];

/**
 * The number of grid cells above which a rectangle is not aligned item by item: beyond it, only
 * its common head and tail are matched.
 *
 * #### Notes
 * nbdime compares every pair of items (O(n·m) predicate calls and memory). Python takes minutes
 * on rectangles this size; here the bound keeps memory in check (one byte and two to four bytes
 * per cell).
 */
const MAX_GRID_CELLS = 40_000_000;

/**
 * The snakes of the longest common subsequence of `a[i0:i1]` and `b[j0:j1]` under `same`.
 *
 * #### Notes
 * The subsequence is the one nbdime's brute-force search picks: a full table of common lengths,
 * walked back from the end, taking a diagonal step whenever the two items are the same, else
 * stepping up in `a` when that keeps the length and left in `b` otherwise. Other longest
 * subsequences exist; this walk decides which items a diff reports as changed.
 */
export function longestCommonSnakes<T>(
  a: readonly T[],
  b: readonly T[],
  same: Predicate<T>,
  i0 = 0,
  j0 = 0,
  i1 = a.length,
  j1 = b.length
): Snake[] {
  const rows = i1 - i0;
  const columns = j1 - j0;
  if (rows <= 0 || columns <= 0) return [];
  if (rows * columns > MAX_GRID_CELLS) {
    return Private.headAndTail(a, b, same, i0, j0, i1, j1);
  }
  const width = columns + 1;
  const grid = new Uint8Array(rows * columns);
  const lengths =
    Math.min(rows, columns) < 0xffff
      ? new Uint16Array((rows + 1) * width)
      : new Uint32Array((rows + 1) * width);
  for (let x = 1; x <= rows; x++) {
    const item = a[i0 + x - 1];
    const gridRow = (x - 1) * columns;
    const row = x * width;
    const above = row - width;
    for (let y = 1; y <= columns; y++) {
      if (same(item, b[j0 + y - 1])) {
        grid[gridRow + y - 1] = 1;
        lengths[row + y] = lengths[above + y - 1] + 1;
      } else {
        const up = lengths[above + y];
        const left = lengths[row + y - 1];
        lengths[row + y] = up > left ? up : left;
      }
    }
  }
  // Walk back from the end, collecting matched pairs last first.
  const pairs: number[] = [];
  let x = rows;
  let y = columns;
  while (x > 0 && y > 0) {
    if (grid[(x - 1) * columns + y - 1] === 1) {
      x--;
      y--;
      pairs.push(x, y);
    } else if (lengths[x * width + y] === lengths[(x - 1) * width + y]) {
      x--;
    } else {
      y--;
    }
  }
  const snakes: Array<[number, number, number]> = [];
  for (let p = pairs.length - 2; p >= 0; p -= 2) {
    const i = pairs[p] + i0;
    const j = pairs[p + 1] + j0;
    const last = snakes[snakes.length - 1];
    if (last !== undefined && last[0] + last[2] === i && last[1] + last[2] === j) last[2]++;
    else snakes.push([i, j, 1]);
  }
  return snakes;
}

/**
 * Snakes under a list of predicates, loosest first: align with the strictest, then align the
 * items between its snakes with the next one, and so on (nbdime's multilevel comparison).
 *
 * #### Notes
 * The recursion, and merging a snake into the one before when they touch, follow nbdime's
 * `compute_snakes_multilevel`: the order in which rectangles are refined decides the alignment.
 */
export function multilevelSnakes<T>(
  a: readonly T[],
  b: readonly T[],
  predicates: readonly Predicate<T>[],
  rectangle: readonly [number, number, number, number] = [0, 0, a.length, b.length],
  level = predicates.length - 1
): Snake[] {
  const [top, left, bottom, right] = rectangle;
  const coarse = longestCommonSnakes(a, b, predicates[level], top, left, bottom, right);
  if (level === 0) return coarse;
  const snakes: Array<[number, number, number]> = [];
  let i0 = top;
  let j0 = left;
  const append = (i: number, j: number, n: number): void => {
    const last = snakes[snakes.length - 1];
    if (last !== undefined && last[0] + last[2] === i && last[1] + last[2] === j) last[2] += n;
    else snakes.push([i, j, n]);
  };
  for (const [i, j, n] of [...coarse, [bottom, right, 0] as const]) {
    if (i > i0 && j > j0) {
      for (const [si, sj, sn] of multilevelSnakes(a, b, predicates, [i0, j0, i, j], level - 1)) {
        append(si, sj, sn);
      }
    }
    if (n > 0) append(i, j, n);
    i0 = i + n;
    j0 = j + n;
  }
  return snakes;
}

namespace Private {
  /** Snakes for the same items at the start and at the end only (for oversized rectangles). */
  export function headAndTail<T>(
    a: readonly T[],
    b: readonly T[],
    same: Predicate<T>,
    i0: number,
    j0: number,
    i1: number,
    j1: number
  ): Snake[] {
    let head = 0;
    while (i0 + head < i1 && j0 + head < j1 && same(a[i0 + head], b[j0 + head])) head++;
    let tail = 0;
    while (
      i1 - tail > i0 + head &&
      j1 - tail > j0 + head &&
      same(a[i1 - tail - 1], b[j1 - tail - 1])
    ) {
      tail++;
    }
    const snakes: Snake[] = [];
    if (head > 0) snakes.push([i0, j0, head]);
    if (tail > 0) snakes.push([i1 - tail, j1 - tail, tail]);
    return snakes;
  }
}
