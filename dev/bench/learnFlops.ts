// Floating-point operations of one LoRA learning step (forward with the adapters, backward to the
// LoRA factors), defined once: the learn benchmark divides it by each path's time for its achieved
// GFLOP/s against the matmul roofline. Pure (no tfjs, no GPU).
//
// What is counted: the matrix products the planned step (src/engine/plan/learnPlan.ts) runs, 2
// FLOPs per multiply-add, over the padded batch (rows x (prompt + response - 1) columns, the last
// response token predicts nothing; the LM head on the response-predicting rows only). Attention
// scores and values are counted over the whole L x L square, as the plan computes them (the causal
// mask zeroes half of it after the product). Norms, RoPE, softmax, SwiGLU, the token statistics
// and the optimiser are left out: a few FLOPs per element against 2 x hidden per output of a
// projection. The tfjs path does the same products, so one count serves both paths.
import type { LearnLoraShape, LearnModelDims } from '../../src/contract/learnMemory';
import type { ProjName } from '../../src/model/llama';

export interface LearnFlops {
  /** Forward with the adapters on: projections, LoRA factors, attention, LM head. */
  forward: number;
  /** Backward: d input through every frozen projection and the head, LoRA dA / dB and their d input, attention. */
  backward: number;
  total: number;
}

/** [in, out] features of each projection. */
function projDims(c: LearnModelDims): Record<ProjName, [number, number]> {
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const H = c.hiddenSize;
  const I = c.intermediateSize;
  return { q: [H, q], k: [H, kv], v: [H, kv], o: [q, H], gate: [H, I], up: [H, I], down: [I, H] };
}

/**
 * FLOPs of one learning step of `rows` sequences of `promptLen` prompt (the longest, as padded) and
 * `responseLen` response tokens, LoRA `lora` (rank r on `targets` in `layers`, default all).
 */
export function learnStepFlops(
  c: LearnModelDims,
  lora: LearnLoraShape,
  shape: { rows: number; promptLen: number; responseLen: number },
): LearnFlops {
  const { rows: B, promptLen: P, responseLen: T } = shape;
  const L = P + T - 1;
  const N = B * L;
  const dims = projDims(c);
  const adapted = new Set(lora.layers ?? Array.from({ length: c.numLayers }, (_, i) => i));
  // One layer's frozen projections: sum of in x out, the same product forward (x W^T) and backward (dy W).
  const projMacs = (Object.keys(dims) as ProjName[]).reduce((s, p) => s + dims[p][0] * dims[p][1], 0);
  // One adapted layer's LoRA: forward x A^T (r in) and (x A^T) B^T (out r); backward dB, d(xA), dA, dx: twice that.
  const loraMacs = lora.targets.reduce((s, p) => s + lora.r * (dims[p][0] + dims[p][1]), 0);
  // Attention per layer: forward S = q k^T and P v; backward dP, dq, dk, dv.
  const attnMacs = B * c.numHeads * L * L * c.headDim;
  const headMacs = B * T * c.hiddenSize * c.vocabSize;
  let fwd = 0;
  let bwd = 0;
  for (let l = 0; l < c.numLayers; l++) {
    const lm = adapted.has(l) ? loraMacs : 0;
    fwd += N * (projMacs + lm) + 2 * attnMacs;
    bwd += N * (projMacs + 2 * lm) + 4 * attnMacs;
  }
  fwd += headMacs;
  bwd += headMacs;
  return { forward: 2 * fwd, backward: 2 * bwd, total: 2 * (fwd + bwd) };
}
