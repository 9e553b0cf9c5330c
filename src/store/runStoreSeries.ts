// Metric series for the run store: fixed-capacity ring buffers of (step, value) pairs on typed
// arrays, EMA smoothing and the alignment of several series on one x axis for uPlot.
//
// A ring is a mutable buffer owned by the run store: appending writes in place (O(1), no
// allocation) so a run of 10k steps with a dozen metrics costs the same per step as a run of 10.
// The store bumps a version number after each append so views know to redraw.

export const DEFAULT_RING_CAPACITY = 10_000;

export interface Ring {
  readonly capacity: number;
  /** Index of the oldest point in the backing arrays. */
  start: number;
  /** Number of points held (<= capacity). */
  length: number;
  readonly x: Float64Array;
  readonly y: Float64Array;
}

export function ringCreate(capacity = DEFAULT_RING_CAPACITY): Ring {
  if (!Number.isInteger(capacity) || capacity < 1)
    throw new Error(`ring capacity must be a positive integer, got ${capacity}`);
  return { capacity, start: 0, length: 0, x: new Float64Array(capacity), y: new Float64Array(capacity) };
}

/** Appends one point; when full, the oldest point is overwritten. O(1). */
export function ringPush(r: Ring, x: number, y: number): void {
  let slot: number;
  if (r.length < r.capacity) {
    slot = (r.start + r.length) % r.capacity;
    r.length++;
  } else {
    slot = r.start;
    r.start = (r.start + 1) % r.capacity;
  }
  r.x[slot] = x;
  r.y[slot] = y;
}

/** The i-th point counted from the oldest (0) to the newest (length - 1). */
export function ringAt(r: Ring, i: number): { x: number; y: number } {
  if (i < 0 || i >= r.length) throw new RangeError(`ring index ${i} outside 0..${r.length - 1}`);
  const k = (r.start + i) % r.capacity;
  return { x: r.x[k], y: r.y[k] };
}

/** x of the newest point, or undefined when empty. */
export function ringLastX(r: Ring): number | undefined {
  return r.length === 0 ? undefined : r.x[(r.start + r.length - 1) % r.capacity];
}

/** Drops points from the newest end while their x >= `fromX` (a resumed run re-reporting steps). */
export function ringTruncateFrom(r: Ring, fromX: number): void {
  while (r.length > 0 && r.x[(r.start + r.length - 1) % r.capacity] >= fromX) r.length--;
}

/** Copies of the points, oldest first. */
export function ringArrays(r: Ring): { x: Float64Array; y: Float64Array } {
  const x = new Float64Array(r.length);
  const y = new Float64Array(r.length);
  const head = Math.min(r.length, r.capacity - r.start);
  x.set(r.x.subarray(r.start, r.start + head));
  y.set(r.y.subarray(r.start, r.start + head));
  if (head < r.length) {
    x.set(r.x.subarray(0, r.length - head), head);
    y.set(r.y.subarray(0, r.length - head), head);
  }
  return { x, y };
}

/**
 * Exponential moving average, s_0 = y_0 and s_t = alpha * y_t + (1 - alpha) * s_{t-1}.
 * alpha = 1 returns the raw values; smaller alpha smooths more. Non-finite points (a NaN loss)
 * stay NaN in the output and do not poison the average after them.
 */
export function ema(y: ArrayLike<number>, alpha: number): Float64Array {
  const a = Math.min(1, Math.max(0, alpha));
  const out = new Float64Array(y.length);
  let s = NaN;
  for (let i = 0; i < y.length; i++) {
    const v = y[i];
    if (!Number.isFinite(v)) {
      out[i] = NaN;
      continue;
    }
    s = Number.isNaN(s) ? v : a * v + (1 - a) * s;
    out[i] = s;
  }
  return out;
}

/** The slider's "smoothing" in [0, 1) (0 = raw, like TensorBoard's) as an EMA alpha. */
export function smoothingToAlpha(smoothing: number): number {
  return 1 - Math.min(0.999, Math.max(0, smoothing));
}

export interface XY {
  x: ArrayLike<number>;
  y: ArrayLike<number>;
}

/** One y column for uPlot: a number, null for a gap (NaN / Infinity), undefined where this series
 *  has no point at that x (uPlot draws across those). */
export type Column = (number | null | undefined)[];

/**
 * Aligns series (each sorted by x ascending) on the union of their x values, as uPlot's aligned
 * data wants: [xs, ys_0, ys_1, ...]. O(total points).
 */
export function alignSeries(series: XY[]): [number[], ...Column[]] {
  const all = new Set<number>();
  for (const s of series) for (let i = 0; i < s.x.length; i++) all.add(s.x[i]);
  const xs = Array.from(all).sort((a, b) => a - b);
  const cols = series.map((s) => {
    const col: Column = new Array(xs.length).fill(undefined);
    let j = 0;
    for (let i = 0; i < s.x.length; i++) {
      while (xs[j] < s.x[i]) j++;
      const v = s.y[i];
      col[j] = Number.isFinite(v) ? v : null;
    }
    return col;
  });
  return [xs, ...cols];
}
