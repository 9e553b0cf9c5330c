// The loss side of the planned learning step. The formulas are src/rl's own (policyLoss.ts,
// aggregate.ts, kl.ts: the reference, defined once): the planned forward's per-token log-probs
// and entropies become small constant tensors, the caller's loss is built on them with those
// functions, and tf.grads gives d loss / d log-prob and d loss / d entropy per token, which the
// planned backward carries through the model. Every loss type, aggregation mode, KL term and
// entropy bonus therefore has its planned counterpart by construction. On the learning step's
// path all of it stays on the GPU: tfjs reads the statistics out of the plan's buffer, and the
// plan's backward reads the gradient tensors' buffers (and d loss / d hidden state, for a value
// loss into the adapters); the LoRA gradients stay in the plan's flat buffer, accumulated over
// micro-batches there, for an optimiser to read in place. The GPU side (buffers, plans) is
// src/model/planned/learnStep.ts; here is the RL side: which batches go, and the loss.
import * as tf from '@tensorflow/tfjs';
import type { LlamaModel } from '../model/llama';
import type { LoraSet } from '../model/lora';
import { engineOptions, type ExecutionPath } from '../engine/index';
import { learnMicroBatchRows, unplannableLearnReason } from '../model/planned/learn';
import {
  flatGradTensors,
  plannedPackedMicroBatch,
  plannedPackedRolloutStats,
  type PlannedLearnOptions,
  type PlannedMicroBatch,
  type StatTensors,
} from '../model/planned/learnStep';
import { packSequences, type ResponseBatch, type ValueHead } from './policy';
import type { TokenMatrix } from './types';

export interface LossGrads {
  loss: number;
  /** [B T] d loss / d log-prob and d loss / d entropy. */
  dlogp: Float32Array;
  dentropy: Float32Array;
  /** Gradients of the extra variables (a value head), by name; the caller disposes them. */
  varGrads: tf.NamedTensorMap;
}

/**
 * d loss / d (log-prob, entropy) of `lossFn` at the given per-token statistics [B T], and the
 * gradient of the variables in `vars` (a value head reading `hidden`).
 */
export async function lossGradsAt(
  logp: Float32Array,
  entropy: Float32Array,
  B: number,
  T: number,
  lossFn: (s: StatTensors) => tf.Scalar,
  extra: { hidden?: tf.Tensor3D; vars?: tf.Variable[] } = {},
): Promise<LossGrads> {
  const lp = tf.tensor2d(logp, [B, T]);
  const ent = tf.tensor2d(entropy, [B, T]);
  const vars = extra.vars ?? [];
  try {
    const f = () => {
      const s: StatTensors = { logp: lp, entropy: ent, hidden: extra.hidden };
      // 0 x sum keeps both inputs on the tape when the loss reads only one of them.
      return tf.add(lossFn(s), tf.mul(0, tf.add(tf.sum(lp), tf.sum(ent)))) as tf.Scalar;
    };
    const { value, grads } = tf.engine().gradients(f, [lp, ent, ...vars], undefined, true);
    const [loss, dlogp, dentropy] = await Promise.all([value.data(), grads[0].data(), grads[1].data()]);
    const varGrads: tf.NamedTensorMap = {};
    vars.forEach((v, i) => (varGrads[v.name] = grads[2 + i] ?? tf.zerosLike(v)));
    tf.dispose([value, grads[0], grads[1]]);
    return { loss: loss[0], dlogp: dlogp as Float32Array, dentropy: dentropy as Float32Array, varGrads };
  } finally {
    tf.dispose([lp, ent]);
  }
}

/**
 * Which path learnStep takes on WebGPU: the planned pass (default), or tfjs op by op (the reference
 * and the fallback; other backends always run tfjs).
 */
export type LearnPath = ExecutionPath;

/**
 * Why learnStep would not take the planned path for this learner now (null: it would). A value
 * head is planned either way: reading the hidden state as a constant, or sending its loss's
 * gradient into the adapters (the plan's backward takes d loss / d hidden).
 */
export function plannedLearnBlocker(model: LlamaModel, lora: LoraSet): string | null {
  if (engineOptions().learnPath !== 'planned') return 'the learn path is tfjs';
  if (!lora.enabled) return 'the adapters are switched off';
  return unplannableLearnReason(model, lora);
}

/**
 * Rows per micro-batch for this batch on the planned path, as the learn-memory planner sizes them
 * from the device's limits and the memory budget (the whole batch when it fits in one plan). When
 * not even one row fits: the whole batch (it then learns on tfjs in one pass).
 */
export function plannedMicroBatchRows(model: LlamaModel, batch: ResponseBatch): number {
  const B = batch.prompts.length;
  const rows = learnMicroBatchRows(
    model,
    B,
    Math.max(...batch.prompts.map((p) => p.length)),
    batch.responses[0].length,
  );
  return rows > 0 ? rows : B;
}

/** plannedPackedMicroBatch (src/model/planned/learnStep.ts) on this batch's packed sequences. */
export async function plannedMicroBatch(
  model: LlamaModel,
  lora: LoraSet,
  batch: ResponseBatch,
  opts: PlannedLearnOptions & { accumulate?: boolean },
  lossFn: (s: StatTensors) => tf.Scalar,
): Promise<PlannedMicroBatch | null> {
  return plannedPackedMicroBatch(model, lora, packSequences(batch, opts.padTokenId ?? 0), opts, lossFn);
}

/**
 * LoRA gradients of `lossFn` on one micro-batch by the planned forward and backward
 * (plannedMicroBatch), handed to tfjs as one tensor per LoRA variable (named as they are), with
 * the value head's and the loss value. Null as plannedMicroBatch.
 */
export async function plannedGrads(
  model: LlamaModel,
  lora: LoraSet,
  batch: ResponseBatch,
  opts: PlannedLearnOptions,
  lossFn: (s: StatTensors) => tf.Scalar,
): Promise<{ loss: number; grads: tf.NamedTensorMap } | null> {
  const r = await plannedMicroBatch(model, lora, batch, opts, lossFn);
  if (!r) return null;
  const grads = { ...r.varGrads, ...flatGradTensors(r.flat) };
  const loss = (await r.loss.data())[0];
  r.loss.dispose();
  return { loss, grads };
}

/**
 * What rlStep needs of a fresh batch before learning, by the plan the learning step replays next:
 * the reference log-probs [B, T] (the reference pass alone, adapters off) and/or a value head's
 * values [B, T] on the policy's final hidden state. Null when the planned path would not run it
 * (the caller uses the tfjs statistics).
 */
export async function plannedRolloutStats(
  model: LlamaModel,
  lora: LoraSet,
  batch: ResponseBatch,
  opts: { temperature?: number; padTokenId?: number },
  want: { reference: boolean; valueHead?: ValueHead },
): Promise<{ refLogp?: TokenMatrix; values?: TokenMatrix } | null> {
  if (plannedLearnBlocker(model, lora)) return null;
  const packed = packSequences(batch, opts.padTokenId ?? 0);
  const f = await plannedPackedRolloutStats(model, lora, packed, opts.temperature ?? 1, want.reference, want.valueHead);
  if (!f) return null;
  const [rows, cols] = [packed.ids.length, packed.responseLength];
  const out: { refLogp?: TokenMatrix; values?: TokenMatrix } = {};
  if (f.refLogp) out.refLogp = { data: f.refLogp, rows, cols };
  if (f.values) out.values = { data: f.values, rows, cols };
  return out;
}

/** Reference log-probs [B, T] by the plan's reference pass (see plannedRolloutStats), or null. */
export async function plannedReferenceLogp(
  model: LlamaModel,
  lora: LoraSet,
  batch: ResponseBatch,
  opts: { temperature?: number; padTokenId?: number },
): Promise<TokenMatrix | null> {
  return (await plannedRolloutStats(model, lora, batch, opts, { reference: true }))?.refLogp ?? null;
}
