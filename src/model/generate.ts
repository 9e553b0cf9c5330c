// Batched autoregressive decoding with a KV cache and seeded sampling.
//
// Prompts of different lengths are left-padded into one batch; the prefill runs them together,
// then one token per row per step. Sampling runs on the device (temperature, top-k, top-p, then
// inverse-CDF with a uniform from random.ts) so each step reads back only B ids and 2B floats,
// never a vocabulary-sized row.
//
// What is reported per generated token, all under the sampling distribution
// softmax(logits / temperature) over the FULL vocabulary (before top-k / top-p truncation;
// temperature 1 when greedy):
//   logprob  log p(token)        entropy  -sum_v p(v) log p(v)
// This is the distribution an RL loss recomputes (logits / temperature, full vocabulary), so
// rollout and training log-probs agree up to float error.

import * as tf from '@tensorflow/tfjs';
import { createKVCache, disposeKVCache, forward, type LlamaModel } from './llama.ts';
import { uniformAt } from './random.ts';

export interface SamplingOptions {
  /** Argmax instead of sampling (also implied by temperature 0). */
  greedy?: boolean;
  /** Logits are divided by this before softmax. Default 1. */
  temperature?: number;
  /** Keep only the k most likely tokens (0 or >= vocab: off). Ties at the k-th value are kept. */
  topK?: number;
  /** Keep the smallest set of most likely tokens whose mass reaches p (1: off). */
  topP?: number;
}

export interface GenerateOptions extends SamplingOptions {
  maxNewTokens: number;
  /** A row stops after emitting one of these (the stop token itself is kept, mask 1). Default none. */
  stopTokens?: number[];
  /** Seed of every random draw. Default 0. */
  seed?: number;
  /**
   * Random stream of each row (default: the row index). Draw t of row b is
   * uniformAt(seed, streams[b], t), so a row gives the same sample alone or in any batch.
   */
  streams?: number[];
  /** Id written into `tokens` after a row has stopped (mask 0 there). Default 0. */
  padTokenId?: number;
}

export interface GenerateResult {
  /** [B][T] generated ids; T = steps run (<= maxNewTokens; fewer when every row stopped). */
  tokens: number[][];
  /** [B][T] log-prob of each generated token (0 where mask is 0). */
  logprobs: number[][];
  /** [B][T] entropy of each step's next-token distribution (0 where mask is 0). */
  entropy: number[][];
  /** [B][T] 1 for a generated token (up to and including a stop token), 0 after. */
  mask: number[][];
  /** Generated tokens per row (sum of its mask). */
  lengths: number[];
}

/** Entropy of softmax over the last axis, from logits (any leading shape). */
export function entropyFromLogits(logits: tf.Tensor): tf.Tensor {
  return tf.tidy(() => {
    const lp = tf.logSoftmax(logits, -1);
    return lp.exp().mul(lp).sum(-1).neg();
  });
}

/** Large negative logit for tokens removed by top-k / top-p. */
const REMOVED = -1e30;

/**
 * One sampling step on the device. logits [B, V]; u: one uniform in [0, 1) per row (ignored
 * when greedy). Returns int32 ids [B], logprob [B] and entropy [B] (see the header).
 */
export function sampleFromLogits(
  logits: tf.Tensor2D,
  u: ArrayLike<number>,
  opts: SamplingOptions = {},
): { ids: tf.Tensor1D; logprob: tf.Tensor1D; entropy: tf.Tensor1D } {
  const temperature = opts.temperature ?? 1;
  const greedy = opts.greedy || temperature === 0;
  if (!greedy && !(temperature > 0)) throw new Error(`sampling: temperature must be > 0, got ${temperature}`);
  const topP = opts.topP ?? 1;
  if (!(topP > 0 && topP <= 1)) throw new Error(`sampling: topP must be in (0, 1], got ${topP}`);
  const topK = opts.topK ?? 0;
  if (!Number.isInteger(topK) || topK < 0) throw new Error(`sampling: topK must be a non-negative integer, got ${topK}`);
  const [B, V] = logits.shape;
  return tf.tidy(() => {
    const scaled: tf.Tensor2D = greedy || temperature === 1 ? logits : logits.div(temperature);
    const logp = tf.logSoftmax(scaled, -1);
    const entropy = logp.exp().mul(logp).sum(-1).neg() as tf.Tensor1D;
    let ids: tf.Tensor1D;
    if (greedy) {
      ids = scaled.argMax(-1) as tf.Tensor1D;
    } else {
      let filtered: tf.Tensor2D = scaled;
      if (topK > 0 && topK < V) {
        const kth = tf.topk(scaled, topK).values.slice([0, topK - 1], [B, 1]);
        filtered = tf.where(scaled.less(kth), REMOVED, scaled) as tf.Tensor2D;
      }
      if (topP < 1) {
        // Sort descending; keep token i while the mass before it is < p (so the first is always
        // kept); the smallest kept logit is the cut.
        const sorted = tf.topk(filtered, V).values;
        const massBefore = tf.cumsum(tf.softmax(sorted, -1), 1, true);
        const cut = tf.where(massBefore.less(topP), sorted, Infinity).min(-1, true);
        filtered = tf.where(filtered.less(cut), REMOVED, filtered) as tf.Tensor2D;
      }
      // Inverse CDF: the first index whose cumulative probability exceeds u * total.
      const cdf = tf.cumsum(tf.softmax(filtered, -1), 1);
      const total = cdf.slice([0, V - 1], [B, 1]);
      const target = tf.tensor2d(Float32Array.from(u), [B, 1]).mul(total);
      ids = cdf.lessEqual(target).sum(-1).minimum(V - 1).toInt() as tf.Tensor1D;
    }
    const logprob = logp.mul(tf.oneHot(ids, V)).sum(-1) as tf.Tensor1D;
    return { ids: ids.toInt() as tf.Tensor1D, logprob, entropy };
  });
}

/**
 * Generates up to maxNewTokens for each prompt (unpadded id lists, lengths may differ).
 * Deterministic for a given seed, backend and batch composition of streams.
 */
export async function generate(model: LlamaModel, prompts: number[][], opts: GenerateOptions): Promise<GenerateResult> {
  const B = prompts.length;
  if (B === 0) throw new Error('generate: no prompts');
  prompts.forEach((p, b) => {
    if (p.length === 0) throw new Error(`generate: prompt ${b} is empty (at least one token, e.g. BOS, is needed)`);
  });
  const maxNew = opts.maxNewTokens;
  if (!Number.isInteger(maxNew) || maxNew < 0) throw new Error(`generate: maxNewTokens must be a non-negative integer, got ${maxNew}`);
  const seed = opts.seed ?? 0;
  const streams = opts.streams ?? prompts.map((_, b) => b);
  if (streams.length !== B) throw new Error(`generate: streams has ${streams.length} entries for ${B} prompts`);
  const stop = new Set(opts.stopTokens ?? []);
  const pad = opts.padTokenId ?? 0;

  const result: GenerateResult = {
    tokens: prompts.map(() => []),
    logprobs: prompts.map(() => []),
    entropy: prompts.map(() => []),
    mask: prompts.map(() => []),
    lengths: prompts.map(() => 0),
  };
  if (maxNew === 0) return result;

  const P = Math.max(...prompts.map((p) => p.length));
  const ids = prompts.map((p) => [...Array(P - p.length).fill(pad), ...p]);
  const attn = prompts.map((p) => [...Array(P - p.length).fill(0), ...Array(p.length).fill(1)]);
  const V = model.config.vocabSize;
  const cache = createKVCache(model, B, P + maxNew);
  const done = new Array<boolean>(B).fill(false);
  let logits: tf.Tensor3D | null = null;
  try {
    logits = forward(model, ids, { attentionMask: attn, cache, lastOnly: true }); // [B, 1, V]
    for (let t = 0; t < maxNew; t++) {
      const u = streams.map((s) => uniformAt(seed, s, t));
      const step = tf.tidy(() => sampleFromLogits(logits!.reshape([B, V]) as tf.Tensor2D, u, opts));
      logits.dispose();
      logits = null;
      const [idA, lpA, entA] = await Promise.all([step.ids.data(), step.logprob.data(), step.entropy.data()]);
      tf.dispose([step.ids, step.logprob, step.entropy]);
      const next: number[][] = [];
      const nextMask: number[][] = [];
      for (let b = 0; b < B; b++) {
        if (done[b]) {
          result.tokens[b].push(pad);
          result.logprobs[b].push(0);
          result.entropy[b].push(0);
          result.mask[b].push(0);
          next.push([pad]);
          nextMask.push([0]);
          continue;
        }
        const tok = idA[b];
        result.tokens[b].push(tok);
        result.logprobs[b].push(lpA[b]);
        result.entropy[b].push(entA[b]);
        result.mask[b].push(1);
        result.lengths[b]++;
        if (stop.has(tok)) done[b] = true;
        next.push([tok]);
        nextMask.push([1]);
      }
      if (t === maxNew - 1 || done.every(Boolean)) break;
      logits = forward(model, next, { attentionMask: nextMask, cache });
    }
  } finally {
    logits?.dispose();
    disposeKVCache(cache);
  }
  return result;
}
