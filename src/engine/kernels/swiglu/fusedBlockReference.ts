// Float64 references for the SwiGLU gate (forward and both gradients) and the KV-cache write,
// with the seeded inputs the worker check and the Node-side tests share.
import { mulberry32 } from '../../../contract/mulberry32';

export interface BlockCaseSpec {
  /** SwiGLU elements. */
  n: number;
  /** KV cache [batch, heads, capacity, headDim], new entries for `len` slots from `start`. */
  batch: number;
  heads: number;
  capacity: number;
  headDim: number;
  len: number;
  start: number;
  seed: number;
}

export interface BlockCase {
  g: Float32Array;
  u: Float32Array;
  dy: Float32Array;
  cache: Float32Array;
  fresh: Float32Array;
}

export function blockCaseData(c: BlockCaseSpec): BlockCase {
  const rand = mulberry32(c.seed);
  const fill = (n: number, scale: number) => Float32Array.from({ length: n }, () => (rand() * 2 - 1) * scale);
  const cache = fill(c.batch * c.heads * c.capacity * c.headDim, 1);
  // A real cache holds zeros past its fill level: the stock write (pad + add) relies on it.
  for (let bh = 0; bh < c.batch * c.heads; bh++)
    cache.fill(0, (bh * c.capacity + c.start) * c.headDim, (bh + 1) * c.capacity * c.headDim);
  return {
    g: fill(c.n, 6),
    u: fill(c.n, 2),
    dy: fill(c.n, 1),
    cache,
    fresh: fill(c.batch * c.heads * c.len * c.headDim, 1),
  };
}

export function swigluF64(d: BlockCase): { y: Float64Array; dg: Float64Array; du: Float64Array } {
  const n = d.g.length;
  const y = new Float64Array(n);
  const dg = new Float64Array(n);
  const du = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const g = d.g[i];
    const s = 1 / (1 + Math.exp(-g));
    y[i] = g * s * d.u[i];
    dg[i] = d.dy[i] * d.u[i] * (s + g * s * (1 - s));
    du[i] = d.dy[i] * g * s;
  }
  return { y, dg, du };
}

export function kvWriteF64(c: BlockCaseSpec, d: BlockCase): Float64Array {
  const out = Float64Array.from(d.cache);
  for (let bh = 0; bh < c.batch * c.heads; bh++) {
    for (let j = 0; j < c.len; j++) {
      for (let k = 0; k < c.headDim; k++)
        out[(bh * c.capacity + c.start + j) * c.headDim + k] = d.fresh[(bh * c.len + j) * c.headDim + k];
    }
  }
  return out;
}
