// Float64 references for RMSNorm and RoPE, forward and backward (closed forms, plain loops), and
// the seeded inputs the worker check and the Node-side tests share.
import { mulberry32 } from '../../../contract/mulberry32';

export interface NormCaseSpec {
  rows: number;
  hidden: number;
  /** RoPE input [batch, heads, len, headDim]. */
  batch: number;
  heads: number;
  len: number;
  headDim: number;
  seed: number;
}

export interface NormCase {
  x: Float32Array;
  w: Float32Array;
  dy: Float32Array;
  q: Float32Array;
  cos: Float32Array;
  sin: Float32Array;
  dq: Float32Array;
}

export const NORM_EPS = 1e-5;

export function normCaseData(c: NormCaseSpec): NormCase {
  const rand = mulberry32(c.seed);
  const fill = (n: number, lo: number, hi: number) => Float32Array.from({ length: n }, () => lo + (hi - lo) * rand());
  const qn = c.batch * c.heads * c.len * c.headDim;
  const pn = c.batch * c.len * c.headDim;
  const half = c.headDim / 2;
  const cos = new Float32Array(pn);
  const sin = new Float32Array(pn);
  for (let p = 0; p < c.batch * c.len; p++) {
    for (let j = 0; j < half; j++) {
      const a = (p % c.len) * 10000 ** (-j / half) + 0.1 * rand();
      cos[p * c.headDim + j] = cos[p * c.headDim + half + j] = Math.cos(a);
      sin[p * c.headDim + j] = -Math.sin(a);
      sin[p * c.headDim + half + j] = Math.sin(a);
    }
  }
  return {
    x: fill(c.rows * c.hidden, -2, 2),
    w: fill(c.hidden, 0.5, 1.5),
    dy: fill(c.rows * c.hidden, -1, 1),
    q: fill(qn, -1, 1),
    cos,
    sin,
    dq: fill(qn, -1, 1),
  };
}

/** y = x r w with r = (mean x^2 + eps)^-1/2; dx = r w dy - x r^3 / H sum(dy w x); dw = sum_rows dy x r. */
export function rmsNormF64(c: NormCaseSpec, d: NormCase): { y: Float64Array; dx: Float64Array; dw: Float64Array } {
  const H = c.hidden;
  const y = new Float64Array(c.rows * H);
  const dx = new Float64Array(c.rows * H);
  const dw = new Float64Array(H);
  for (let r = 0; r < c.rows; r++) {
    let ss = 0;
    for (let i = 0; i < H; i++) ss += d.x[r * H + i] ** 2;
    const rr = 1 / Math.sqrt(ss / H + NORM_EPS);
    let dot = 0;
    for (let i = 0; i < H; i++) dot += d.dy[r * H + i] * d.w[i] * d.x[r * H + i];
    for (let i = 0; i < H; i++) {
      const k = r * H + i;
      y[k] = d.x[k] * rr * d.w[i];
      dx[k] = rr * d.w[i] * d.dy[k] - (d.x[k] * rr ** 3 * dot) / H;
      dw[i] += d.dy[k] * d.x[k] * rr;
    }
  }
  return { y, dx, dw };
}

/** y = q cos + swap(q) sinS; dq = dy cos + swap(dy sinS), swap([a, b]) = [b, a] over the head dim. */
export function ropeF64(c: NormCaseSpec, d: NormCase): { y: Float64Array; dx: Float64Array } {
  const D = c.headDim;
  const half = D / 2;
  const n = c.batch * c.heads * c.len * D;
  const y = new Float64Array(n);
  const dx = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const dd = i % D;
    const l = Math.floor(i / D) % c.len;
    const b = Math.floor(i / (D * c.len * c.heads));
    const t = (b * c.len + l) * D;
    const partner = dd < half ? i + half : i - half;
    const tp = t + (dd < half ? dd + half : dd - half);
    y[i] = d.q[i] * d.cos[t + dd] + d.q[partner] * d.sin[t + dd];
    dx[i] = d.dq[i] * d.cos[t + dd] + d.dq[partner] * d.sin[tp];
  }
  return { y, dx };
}
