// The loss side of the planned learning step. The formulas are src/rl's own (policyLoss.ts,
// aggregate.ts, kl.ts: the reference, defined once): the planned forward's per-token log-probs
// and entropies become small constant tensors, the caller's loss is built on them with those
// functions, and tf.grads gives d loss / d log-prob and d loss / d entropy per token, which the
// planned backward carries through the model. Every loss type, aggregation mode, KL term and
// entropy bonus therefore has its planned counterpart by construction. On the learning step's
// path all of it stays on the GPU: tfjs reads the statistics out of the plan's buffer, and the
// plan's backward reads the gradient tensors' buffers (and d loss / d hidden state, for a value
// loss into the adapters); the LoRA gradients stay in the plan's flat buffer, accumulated over
// micro-batches there, for an optimiser to read in place.
import * as tf from '@tensorflow/tfjs';
import type { LlamaModel } from '../model/llama.ts';
import type { LoraSet } from '../model/lora.ts';
import { webgpuDevice, engineOptions, STATS_COLS, emptyTensor, flushTfjs, tensorBuffer, type ExecutionPath } from '../engine/index.ts';
import { gpuScoped, learnMicroBatchRows, learnShapeBlocker, plannedLearnForward, plannedLearnForwardOnGpu, slotAdapters, unplannableLearnReason } from '../model/planned/learn.ts';
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
export type LearnPath = ExecutionPath;

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
  const rows = learnMicroBatchRows(model, B, Math.max(...batch.prompts.map((p) => p.length)), batch.responses[0].length);
  return rows > 0 ? rows : B;
}

/** A planned step's LoRA gradients, left in the plans' flat buffer (LearnPlan's layout). */
export interface FlatGrads {
  buffer: GPUBuffer;
  /** The LoRA variables in the buffer's order (model order, each adapter's A then B), end to end from 0. */
  tensors: { name: string; shape: number[] }[];
}

/** The flat gradients as one fresh tfjs tensor per variable (named as the variables; copies, no dispatch). */
export function flatGradTensors(flat: FlatGrads): tf.NamedTensorMap {
  const grads: tf.NamedTensorMap = {};
  const device = webgpuDevice();
  const enc = device.createCommandEncoder({ label: 'learn grads to tfjs' });
  let at = 0;
  for (const v of flat.tensors) {
    const size = v.shape.reduce((a, b) => a * b, 1);
    const t = emptyTensor(v.shape);
    enc.copyBufferToBuffer(flat.buffer, at * 4, t.buffer, 0, size * 4);
    grads[v.name] = t.tensor;
    at += size;
  }
  // Submitted before a next backward overwrites the buffer.
  flushTfjs();
  device.queue.submit([enc.finish()]);
  return grads;
}

/**
 * `grads` with the flat LoRA gradients added in, one tensor per variable (for tfjs's optimiser, or
 * where a micro-batch fell back to tfjs); the tensors it supersedes are disposed.
 */
export function withFlatGrads(grads: tf.NamedTensorMap, flat: FlatGrads): tf.NamedTensorMap {
  const split = flatGradTensors(flat);
  const merged: tf.NamedTensorMap = { ...grads };
  for (const [name, g] of Object.entries(split)) merged[name] = grads[name] ? tf.add(grads[name], g) : g;
  tf.dispose(Object.keys(split).flatMap((name) => (grads[name] ? [grads[name], split[name]] : [])));
  return merged;
}

export interface PlannedLearnOptions {
  temperature?: number;
  padTokenId?: number;
  /** A value head reading the hidden rows (its variables' gradients come back in varGrads). */
  valueHead?: { variables(): tf.Variable[] };
  /** The value loss's d loss / d hidden goes into the adapters too (with `valueHead`). */
  valueGradToAdapters?: boolean;
  /**
   * The loss reads `hidden` without a value head, and its d loss / d hidden goes into the adapters
   * (a loss linear in the final hidden rows, such as TokenNoiser's noise term: src/rl/tokenNoiser.ts).
   */
  hiddenGrad?: boolean;
}

export interface PlannedMicroBatch {
  /** The loss value (a scalar on the GPU; the caller disposes it). */
  loss: tf.Scalar;
  /** The LoRA gradients, added into the flat buffer when `accumulate`. */
  flat: FlatGrads;
  /** Gradients of the value head's variables, by name; the caller disposes them. */
  varGrads: tf.NamedTensorMap;
}

/**
 * One micro-batch of the learning step on the planned path with nothing read back: the planned
 * forward leaves the per-token statistics on the GPU, tfjs differentiates `lossFn` (src/rl's
 * formulas) at them there, and the backward takes d loss / d stats (and, `valueGradToAdapters`,
 * d loss / d hidden from the value head) from the gradient tensors' buffers into the plan's flat
 * gradient buffer, overwriting it or, `accumulate`, adding into it. Null when the micro-batch's
 * shape would not fit the device or the memory budget, or the device refused the plan (the caller
 * runs it on tfjs).
 */
export async function plannedMicroBatch(
  model: LlamaModel,
  lora: LoraSet,
  batch: ResponseBatch,
  opts: PlannedLearnOptions & { accumulate?: boolean },
  lossFn: (s: StatTensors) => tf.Scalar,
): Promise<PlannedMicroBatch | null> {
  const packed = packSequences(batch, opts.padTokenId ?? 0);
  const B = packed.ids.length;
  const T = packed.responseLength;
  if (learnShapeBlocker(model, B, packed.promptLength, T)) return null;
  const head = opts.valueHead;
  const withHidden = !!head || !!opts.hiddenGrad;
  const plan = await plannedLearnForwardOnGpu(model, lora, packed, opts.temperature ?? 1, withHidden);
  if (!plan) return null;
  plannedCount++;
  plannedByModel.set(model, plannedMicroBatchesOf(model) + 1);
  const toHidden = !!((head && opts.valueGradToAdapters) || opts.hiddenGrad);
  // tfjs copies the statistics (and the hidden rows) out of the plan's buffers in its own encoder.
  const stats = tf.tensor({ buffer: plan.statsBuffer }, [B, T, STATS_COLS], 'float32');
  const hidden = withHidden ? (tf.tensor({ buffer: plan.hidden }, [B, T, model.config.hiddenSize], 'float32') as tf.Tensor3D) : undefined;
  const col = (c: number) => tf.reshape(tf.slice(stats, [0, 0, c], [B, T, 1]), [B, T]) as tf.Tensor2D;
  const lp = col(0);
  const ent = col(1);
  const vars = head?.variables() ?? [];
  const held: tf.Tensor[] = [stats, lp, ent, ...(hidden ? [hidden] : [])];
  try {
    // From here the loss is evaluated (its metrics recorded): a failure throws, no fallback.
    const f = () => {
      // 0 x sum keeps every input on the tape when the loss reads only some of them.
      const keep = tf.add(tf.sum(lp), tf.sum(ent));
      return tf.add(lossFn({ logp: lp, entropy: ent, hidden }), tf.mul(0, toHidden ? tf.add(keep, tf.sum(hidden!)) : keep)) as tf.Scalar;
    };
    const xs = [lp, ent, ...(toHidden ? [hidden!] : [])];
    const { value, grads } = tf.engine().gradients(f, [...xs, ...vars], undefined, true);
    const dstats = tf.stack([grads[0], grads[1]], 2);
    const dhidden = toHidden ? grads[2] : null;
    held.push(dstats, ...grads.slice(0, xs.length));
    const varGrads: tf.NamedTensorMap = {};
    vars.forEach((v, i) => (varGrads[v.name] = grads[xs.length + i] ?? tf.zerosLike(v)));
    // Every buffer first (tensorBuffer may encode an upload), then tfjs's work submitted ahead of
    // the backward that reads its results; the tensors live until the backward is submitted.
    const dstatsBuf = tensorBuffer(dstats);
    const dhiddenBuf = dhidden ? tensorBuffer(dhidden) : undefined;
    flushTfjs();
    const back = await gpuScoped(plan.device, () => plan.backwardFrom(dstatsBuf, { dhidden: dhiddenBuf, accumulate: opts.accumulate }));
    if (back.error) {
      tf.dispose([value, ...Object.values(varGrads)]);
      throw new Error(`planned learning step: the GPU rejected the backward pass (${back.error})`);
    }
    const tensors = slotAdapters(model, plan).flatMap((a) => [a.A, a.B]).map((v) => ({ name: v.name, shape: v.shape.slice() }));
    return { loss: value as tf.Scalar, flat: { buffer: plan.grads, tensors }, varGrads };
  } finally {
    tf.dispose(held);
  }
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
