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
import { sampleTokens } from '../engine/ops/sample.ts';
import { checkSamplingOptions } from '../engine/ops/sampleReference.ts';
import { tokenStats } from '../engine/ops/tokenStats.ts';

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
   * Philox(seed; streams[b], t) (src/engine/rng/philox.ts), so a row gives the same sample alone
   * or in any batch, on the GPU kernel and the CPU reference alike.
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
  // Statistics are under softmax(logits / T); greedy reports them at T = 1.
  const temperature = opts.greedy ? 0 : (opts.temperature ?? 1);
  const topK = opts.topK ?? 0;
  const topP = opts.topP ?? 1;
  checkSamplingOptions({ temperature, topK, topP, seed, step: 0 });

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
      // Sampling and token statistics run as the engine's ops (fused WGSL kernels on WebGPU):
      // only B ids and 2B floats come back per step.
      const flat = logits.reshape([B, V]) as tf.Tensor2D;
      logits.dispose();
      logits = null;
      const ids = await sampleTokens(flat, { temperature, topK, topP, seed, step: t }, streams);
      // One readback per step: a readback drains the GPU queue, and each costs a round trip.
      const packed = tf.tidy(() => {
        const stats = tokenStats(temperature > 0 && temperature !== 1 ? (flat.div(temperature) as tf.Tensor2D) : flat, ids);
        return tf.concat([ids.toFloat().reshape([B, 1]), stats], 1); // ids < 2^24 are exact in f32
      });
      const row = await packed.data();
      tf.dispose([flat, ids, packed]);
      const idA = Array.from({ length: B }, (_, b) => row[3 * b]);
      const stA = Array.from({ length: 2 * B }, (_, i) => row[3 * (i >> 1) + 1 + (i & 1)]);
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
        result.logprobs[b].push(stA[2 * b]);
        result.entropy[b].push(stA[2 * b + 1]);
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
