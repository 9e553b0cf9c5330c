// The learning step on the planned path, GPU side: the planned forward's per-token statistics
// wrapped as tfjs tensors where they lie, tfjs differentiating the caller's loss at them, and the
// plan's backward reading the gradient tensors' buffers; the LoRA gradients stay in the plan's flat
// buffer (FlatGrads) for an optimiser to read in place. The loss and the batch are the caller's
// (src/rl/plannedLearn.ts): nothing here knows RL.
import * as tf from '@tensorflow/tfjs';
import { webgpuDevice, STATS_COLS, emptyTensor, flushTfjs, tensorBuffer } from '../../engine/index';
import type { LlamaModel } from '../llama';
import type { LoraSet } from '../lora';
import {
  gpuScoped,
  learnShapeBlocker,
  plannedLearnForward,
  plannedLearnForwardOnGpu,
  slotAdapters,
  type PackedSequences,
} from './learn';

export interface StatTensors {
  /** [B, T] */
  logp: tf.Tensor2D;
  entropy: tf.Tensor2D;
  /** [B, T, H] final normed hidden state of the response-predicting rows (a constant here). */
  hidden?: tf.Tensor3D;
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
 * One micro-batch of the learning step on the planned path with nothing read back (its sequences
 * packed by the caller): the planned
 * forward leaves the per-token statistics on the GPU, tfjs differentiates `lossFn` (src/rl's
 * formulas) at them there, and the backward takes d loss / d stats (and, `valueGradToAdapters`,
 * d loss / d hidden from the value head) from the gradient tensors' buffers into the plan's flat
 * gradient buffer, overwriting it or, `accumulate`, adding into it. Null when the micro-batch's
 * shape would not fit the device or the memory budget, or the device refused the plan (the caller
 * runs it on tfjs).
 */
export async function plannedPackedMicroBatch(
  model: LlamaModel,
  lora: LoraSet,
  packed: PackedSequences,
  opts: PlannedLearnOptions & { accumulate?: boolean },
  lossFn: (s: StatTensors) => tf.Scalar,
): Promise<PlannedMicroBatch | null> {
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
  const hidden = withHidden
    ? (tf.tensor({ buffer: plan.hidden }, [B, T, model.config.hiddenSize], 'float32') as tf.Tensor3D)
    : undefined;
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
      return tf.add(
        lossFn({ logp: lp, entropy: ent, hidden }),
        tf.mul(0, toHidden ? tf.add(keep, tf.sum(hidden!)) : keep),
      ) as tf.Scalar;
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
    const back = await gpuScoped(plan.device, () =>
      plan.backwardFrom(dstatsBuf, { dhidden: dhiddenBuf, accumulate: opts.accumulate }),
    );
    if (back.error) {
      tf.dispose([value, ...Object.values(varGrads)]);
      throw new Error(`planned learning step: the GPU rejected the backward pass (${back.error})`);
    }
    const tensors = slotAdapters(model, plan)
      .flatMap((a) => [a.A, a.B])
      .map((v) => ({ name: v.name, shape: v.shape.slice() }));
    return { loss: value as tf.Scalar, flat: { buffer: plan.grads, tensors }, varGrads };
  } finally {
    tf.dispose(held);
  }
}

/**
 * The reference log-probs [B T] (the reference pass alone, adapters off) and/or a value head's
 * values [B T] on the policy's final hidden state, by the plan the learning step replays next.
 * Null when the planned path would not run it.
 */
export async function plannedPackedRolloutStats(
  model: LlamaModel,
  lora: LoraSet,
  packed: PackedSequences,
  temperature: number,
  reference: boolean,
  valueHead?: { forward(hidden: tf.Tensor3D): tf.Tensor },
): Promise<{ refLogp?: Float32Array; values?: Float32Array } | null> {
  const B = packed.ids.length;
  const T = packed.responseLength;
  if (learnShapeBlocker(model, B, packed.promptLength, T)) return null;
  const head = valueHead;
  const f = await plannedLearnForward(model, lora, packed, temperature, reference, !!head, !!head);
  if (!f) return null;
  const out: { refLogp?: Float32Array; values?: Float32Array } = {};
  if (reference) out.refLogp = f.refLogp!;
  if (head) {
    const hidden = tf.tensor({ buffer: f.plan.hidden }, [B, T, model.config.hiddenSize], 'float32') as tf.Tensor3D;
    const v = head.forward(hidden);
    out.values = (await v.data()) as Float32Array;
    tf.dispose([hidden, v]);
  }
  return out;
}
