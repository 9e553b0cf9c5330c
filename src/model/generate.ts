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
import { createKVCache, disposeKVCache, forward, type LlamaModel } from './llama';
import { sampleTokens, tokenStats } from '../engine/index';
import {
  decodeSetup,
  emptyResult,
  leftPad,
  StepRecorder,
  type GenerateOptions,
  type GenerateResult,
} from './planned/decodeSteps';
import { plannedDecodeFor } from './planned/decode';
import { checkContext } from './contextBound';

export type { GenerateOptions, GenerateResult, SamplingOptions } from './planned/decodeSteps';

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
  checkContext(model.config.maxPositionEmbeddings, prompts, opts.maxNewTokens);
  const s = decodeSetup(prompts, opts);
  const planned = plannedDecodeFor(model);
  if (planned) return planned(model, prompts, opts);
  const { B, maxNew, seed, streams, pad, temperature, topK, topP } = s;
  const result = emptyResult(B);
  if (maxNew === 0) return result;

  const { P, ids, attn } = leftPad(prompts, pad);
  const V = model.config.vocabSize;
  const cache = createKVCache(model, B, P + maxNew);
  const steps = new StepRecorder(result, s.stop, pad);
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
        const stats = tokenStats(
          temperature > 0 && temperature !== 1 ? (flat.div(temperature) as tf.Tensor2D) : flat,
          ids,
        );
        return tf.concat([ids.toFloat().reshape([B, 1]), stats], 1); // ids < 2^24 are exact in f32
      });
      const row = await packed.data();
      tf.dispose([flat, ids, packed]);
      const next: number[][] = [];
      const nextMask: number[][] = [];
      for (let b = 0; b < B; b++) {
        const r = steps.record(b, row[3 * b], row[3 * b + 1], row[3 * b + 2]);
        next.push([r.next]);
        nextMask.push([r.mask]);
      }
      if (t === maxNew - 1 || steps.allDone()) break;
      logits = forward(model, next, { attentionMask: nextMask, cache });
    }
  } finally {
    logits?.dispose();
    disposeKVCache(cache);
  }
  return result;
}
