// Float64 reference for one decode step of grouped-query attention (plain loops, no tfjs), and
// the seeded inputs the worker check and the Node-side test share.
import { mulberry32 } from '../../../contract/mulberry32';

export interface AttentionCaseSpec {
  batch: number;
  heads: number;
  kvHeads: number;
  capacity: number;
  headDim: number;
  /** Filled slots; slots >= len are never attended. */
  len: number;
  seed: number;
}

export interface AttentionCase {
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
  /** 0 for a real slot, -1e9 for padding (every row's first slot and slot len-1 are real). */
  bias: Float32Array;
}

export function attentionCaseData(c: AttentionCaseSpec): AttentionCase {
  const rand = mulberry32(c.seed);
  const fill = (n: number, scale: number) => Float32Array.from({ length: n }, () => (rand() * 2 - 1) * scale);
  const q = fill(c.batch * c.heads * c.headDim, 1);
  const k = fill(c.batch * c.kvHeads * c.capacity * c.headDim, 1);
  const v = fill(c.batch * c.kvHeads * c.capacity * c.headDim, 1);
  const bias = new Float32Array(c.batch * c.capacity);
  for (let b = 0; b < c.batch; b++) {
    for (let j = 0; j < c.capacity; j++) {
      // Left padding of a batch: a row-dependent run of masked slots, and ~1 in 7 masked at random.
      const pad = j !== c.len - 1 && (j < b % 3 || rand() < 1 / 7);
      bias[b * c.capacity + j] = pad && j !== 0 ? -1e9 : 0;
    }
  }
  return { q, k, v, bias };
}

/** out[b, h, d] in float64, over slots j < len with bias[b, j] > -1e8. */
export function decodeAttentionF64(c: AttentionCaseSpec, data: AttentionCase): Float64Array {
  const { batch: B, heads: nH, kvHeads: nKv, capacity: C, headDim: D, len } = c;
  const out = new Float64Array(B * nH * D);
  const G = nH / nKv;
  const scale = 1 / Math.sqrt(D);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < nH; h++) {
      const g = Math.floor(h / G);
      const kv = (b * nKv + g) * C * D;
      const s: number[] = [];
      for (let j = 0; j < len; j++) {
        if (data.bias[b * C + j] < -1e8) continue;
        let dot = 0;
        for (let d = 0; d < D; d++) dot += data.q[(b * nH + h) * D + d] * data.k[kv + j * D + d];
        s.push(j, dot * scale);
      }
      let m = -Infinity;
      for (let i = 1; i < s.length; i += 2) m = Math.max(m, s[i]);
      let z = 0;
      for (let i = 1; i < s.length; i += 2) z += Math.exp(s[i] - m);
      for (let d = 0; d < D; d++) {
        let acc = 0;
        for (let i = 0; i < s.length; i += 2) acc += Math.exp(s[i + 1] - m) * data.v[kv + s[i] * D + d];
        out[(b * nH + h) * D + d] = acc / z;
      }
    }
  }
  return out;
}
