// CPU reference of the GPU sampler, step for step: temperature, then top-k, then top-p (the order
// of Hugging Face's logits warpers), then one Philox uniform per (row, step). Thresholds are
// found exactly by building the largest order-key bit by bit, so ties at the cut are all kept
// (as HF's top-k keeps them) and the GPU and CPU agree on the kept set.
import { samplerUniform } from '../../rng/philox';

export interface SamplingOptions {
  /** 0 means greedy (argmax, first index on ties). */
  temperature: number;
  /** Keep the k most likely tokens; 0 (or >= vocab) keeps all. */
  topK: number;
  /** Keep the smallest set of most likely tokens whose mass reaches topP; 1 keeps all. */
  topP: number;
  seed: number;
  /** Decode step: the second Philox counter word, so every step draws fresh numbers. */
  step: number;
}

export function checkSamplingOptions(o: SamplingOptions): void {
  if (!(o.temperature >= 0) || !Number.isFinite(o.temperature))
    throw new Error(`temperature must be >= 0, got ${o.temperature}`);
  if (!Number.isInteger(o.topK) || o.topK < 0) throw new Error(`topK must be a whole number >= 0, got ${o.topK}`);
  if (!(o.topP > 0 && o.topP <= 1)) throw new Error(`topP must be in (0, 1], got ${o.topP}`);
  if (!Number.isInteger(o.step) || o.step < 0 || o.step >= 2 ** 32)
    throw new Error(`step must be a u32, got ${o.step}`);
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** Monotone map from f32 to u32: a < b as floats iff key(a) < key(b). */
export function orderKey(x: number): number {
  f32[0] = x;
  const b = u32[0];
  return (b & 0x80000000 ? ~b : b | 0x80000000) >>> 0;
}

/** Largest t with f(t) true, for f true at 0 and monotone non-increasing in t. */
function largestKey(f: (t: number) => boolean, floor = 0): number {
  let t = 0;
  for (let bit = 31; bit >= 0; bit--) {
    const cand = (t | (1 << bit)) >>> 0;
    if (f(Math.max(cand, floor))) t = cand;
  }
  return Math.max(t, floor);
}

/**
 * One id per row. streams[r] (default r) is row r's Philox stream: the uniform of row r at this
 * step is samplerUniform(seed, streams[r], step).
 */
export function sampleReference(
  logits: ArrayLike<number>,
  rows: number,
  vocab: number,
  o: SamplingOptions,
  streams?: ArrayLike<number>,
): Int32Array {
  checkSamplingOptions(o);
  const out = new Int32Array(rows);
  const keys = new Uint32Array(vocab);
  const w = new Float64Array(vocab);
  for (let r = 0; r < rows; r++) {
    const off = r * vocab;
    let m = -Infinity;
    let argmax = 0;
    for (let v = 0; v < vocab; v++) {
      if (logits[off + v] > m) {
        m = logits[off + v];
        argmax = v;
      }
    }
    if (o.temperature === 0) {
      out[r] = argmax;
      continue;
    }
    for (let v = 0; v < vocab; v++) {
      keys[v] = orderKey(logits[off + v]);
      w[v] = Math.exp((logits[off + v] - m) / o.temperature);
    }
    const mass = (t: number) => {
      let s = 0;
      for (let v = 0; v < vocab; v++) if (keys[v] >= t) s += w[v];
      return s;
    };
    const count = (t: number) => {
      let c = 0;
      for (let v = 0; v < vocab; v++) if (keys[v] >= t) c++;
      return c;
    };
    const tauK = o.topK > 0 && o.topK < vocab ? largestKey((t) => count(t) >= o.topK) : 0;
    const thr = o.topP < 1 ? largestKey((t) => mass(t) >= o.topP * mass(tauK), tauK) : tauK;
    const u = samplerUniform(o.seed, streams ? streams[r] : r, o.step) * mass(thr);
    let acc = 0;
    let pick = argmax;
    for (let v = 0; v < vocab; v++) {
      if (keys[v] < thr) continue;
      acc += w[v];
      if (acc > u) {
        pick = v;
        break;
      }
    }
    out[r] = pick;
  }
  return out;
}
