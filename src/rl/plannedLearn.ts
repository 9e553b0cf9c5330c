// The loss side of the planned learning step. The formulas are src/rl's own (policyLoss.ts,
// aggregate.ts, kl.ts: the reference, defined once): the planned forward's per-token log-probs
// and entropies become small constant tensors, the caller's loss is built on them with those
// functions, and tf.grads gives d loss / d log-prob and d loss / d entropy per token, which the
// planned backward carries through the model. Every loss type, aggregation mode, KL term and
// entropy bonus therefore has its planned counterpart by construction.
import * as tf from '@tensorflow/tfjs';
import type { LlamaModel } from '../model/llama.ts';
import type { LoraSet } from '../model/lora.ts';
import { emptyTensor, flushTfjs } from '../engine/plan/tfjsInterop.ts';
import { gpuScoped, learnMicroBatchRows, learnShapeBlocker, plannedLearnForward, slotAdapters, unplannableLearnReason } from '../model/plannedLearn.ts';
import { packSequences, type ResponseBatch, type ValueHead } from './policy';
import type { TokenMatrix } from './types';

export interface StatTensors {
  /** [B, T] */
  logp: tf.Tensor2D;
  entropy: tf.Tensor2D;
  /** [B, T, H] final normed hidden state of the response-predicting rows (a constant here). */
  hidden?: tf.Tensor3D;
}

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
export type LearnPath = 'planned' | 'tfjs';
let learnPath: LearnPath = 'planned';

export function setLearnPath(p: LearnPath): void {
  learnPath = p;
}

export function getLearnPath(): LearnPath {
  return learnPath;
}

let plannedCount = 0;
const plannedByModel = new WeakMap<LlamaModel, number>();

/** Micro-batches learned on the planned path so far (tests and benchmarks check which path ran). */
export function plannedMicroBatches(): number {
  return plannedCount;
}

/** Micro-batches of this model learned on the planned path so far (a recipe training two models). */
export function plannedMicroBatchesOf(model: LlamaModel): number {
  return plannedByModel.get(model) ?? 0;
}

/**
 * Why learnStep would not take the planned path for this learner now (null: it would). A value
 * head is planned when it reads the hidden state as a constant (valueGradToAdapters off, the
 * default); its loss's gradient into the adapters is not carried by the plan.
 */
export function plannedLearnBlocker(model: LlamaModel, lora: LoraSet, valueGradToAdapters: boolean): string | null {
  if (learnPath !== 'planned') return 'the learn path is tfjs';
  if (valueGradToAdapters) return 'the value loss sends gradient into the adapters';
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
  const rows = learnMicroBatchRows(model, B, Math.max(...batch.prompts.map((p) => p.length)), batch.responses[0].length);
  return rows > 0 ? rows : B;
}

/**
 * LoRA gradients of `lossFn` on one micro-batch by the planned forward and backward: the stats come
 * back, the loss (src/rl's formulas) is differentiated with respect to them, the backward fills the
 * plan's flat gradient buffer, and it is handed to tfjs as one tensor per LoRA variable (named as
 * they are), with the loss value. Null when the micro-batch's shape
 * would not fit the device or the memory budget (the caller runs it on tfjs).
 */
export async function plannedGrads(
  model: LlamaModel,
  lora: LoraSet,
  batch: ResponseBatch,
  opts: { temperature?: number; padTokenId?: number; valueHead?: { variables(): tf.Variable[] } },
  lossFn: (s: StatTensors) => tf.Scalar,
): Promise<{ loss: number; grads: tf.NamedTensorMap } | null> {
  const packed = packSequences(batch, opts.padTokenId ?? 0);
  const B = packed.ids.length;
  const T = packed.responseLength;
  if (learnShapeBlocker(model, B, packed.promptLength, T)) return null;
  const head = opts.valueHead;
  const fwd = await plannedLearnForward(model, lora, packed, opts.temperature ?? 1, false, !!head);
  if (!fwd) return null;
  plannedCount++;
  plannedByModel.set(model, plannedMicroBatchesOf(model) + 1);
  const H = model.config.hiddenSize;
  const hidden = head ? (tf.tensor({ buffer: fwd.plan.hidden }, [B, T, H], 'float32') as tf.Tensor3D) : undefined;
  // From here the loss has been evaluated (its metrics recorded): a failure throws, no fallback.
  const lg = await lossGradsAt(fwd.logp, fwd.entropy, B, T, lossFn, { hidden, vars: head?.variables() }).finally(() => hidden?.dispose());
  const back = await gpuScoped(fwd.plan.device, () => fwd.plan.backward(lg.dlogp, lg.dentropy));
  if (back.error) throw new Error(`planned learning step: the GPU rejected the backward pass (${back.error})`);
  const vars = slotAdapters(model, fwd.plan).flatMap((a) => [a.A, a.B]);
  const grads: tf.NamedTensorMap = { ...lg.varGrads };
  // Each variable's gradient copied out of the flat buffer into a fresh pooled tensor: copies in
  // one encoder, no dispatch; submitted before a next backward overwrites the buffer.
  const enc = fwd.plan.device.createCommandEncoder({ label: 'learn grads to tfjs' });
  let at = 0;
  for (const v of vars) {
    const t = emptyTensor(v.shape);
    enc.copyBufferToBuffer(fwd.plan.grads, at * 4, t.buffer, 0, v.size * 4);
    grads[v.name] = t.tensor;
    at += v.size;
  }
  flushTfjs();
  fwd.plan.device.queue.submit([enc.finish()]);
  return { loss: lg.loss, grads };
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
  if (plannedLearnBlocker(model, lora, false)) return null;
  const packed = packSequences(batch, opts.padTokenId ?? 0);
  const B = packed.ids.length;
  const T = packed.responseLength;
  if (learnShapeBlocker(model, B, packed.promptLength, T)) return null;
  const head = want.valueHead;
  const f = await plannedLearnForward(model, lora, packed, opts.temperature ?? 1, want.reference, !!head, !!head);
  if (!f) return null;
  const out: { refLogp?: TokenMatrix; values?: TokenMatrix } = {};
  if (want.reference) out.refLogp = { data: f.refLogp!, rows: B, cols: T };
  if (head) {
    const hidden = tf.tensor({ buffer: f.plan.hidden }, [B, T, model.config.hiddenSize], 'float32') as tf.Tensor3D;
    const v = head.forward(hidden);
    out.values = { data: (await v.data()) as Float32Array, rows: B, cols: T };
    tf.dispose([hidden, v]);
  }
  return out;
}

/** Reference log-probs [B, T] by the plan's reference pass (see plannedRolloutStats), or null. */
export async function plannedReferenceLogp(model: LlamaModel, lora: LoraSet, batch: ResponseBatch, opts: { temperature?: number; padTokenId?: number }): Promise<TokenMatrix | null> {
  return (await plannedRolloutStats(model, lora, batch, opts, { reference: true }))?.refLogp ?? null;
}
