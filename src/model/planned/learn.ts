// The learning step's forward and backward on the planned WebGPU path: the model layer describes
// the model (the decode planner's description: dimensions, weight buffers, LoRA shapes) and the
// engine (src/engine/plan/learnPlan.ts) plans it once per (rows, prompt columns, response
// columns, temperature, LoRA shapes) and replays it. The loss stays the caller's: it gets the
// per-token statistics, returns d loss / d log-prob and d loss / d entropy, and reads the LoRA
// gradients from one flat buffer (LearnPlan's layout: model order, A then B, row-major).
import * as tf from '@tensorflow/tfjs';
import {
  customKernelsActive,
  webgpuDevice,
  LearnPlan,
  engineOptions,
  flushTfjs,
  gemvVariant,
  tensorBuffer,
  type LearnShape,
  type LearnRecompute,
} from '../../engine/index';
import { onDisposeLlama, PROJ_NAMES, type LlamaModel } from '../llama';
import type { FrozenWeight } from '../linear';
import { LoraAdapter, type LoraSet } from '../lora';
import {
  UNIFORMS,
  learnStepBuffers,
  learnStepRows,
  type LearnBatchShape,
  type LearnLimits,
  type LearnLoraShape,
} from '../../contract/learnMemory';
import { loraOf, modelRef, unplannableReason } from './decode';

/** A left-padded batch of prompt + response (policy.ts packSequences' shape). */
export interface PackedSequences {
  ids: number[][];
  attentionMask: number[][];
  promptLength: number;
  responseLength: number;
}

interface Cached {
  plan: LearnPlan;
  weights: FrozenWeight[];
}
const plans = new WeakMap<LlamaModel, Map<string, Cached>>();
const KEEP = 2;
/**
 * Per model, by LoRA layout: the one flat gradient buffer its learn plans fill, so a step's
 * micro-batches (plans of different shapes) accumulate into it and an optimiser reads it in place.
 */
const gradBuffers = new WeakMap<LlamaModel, Map<string, { device: GPUDevice; buffer: GPUBuffer }>>();

function sharedGradBuffer(model: LlamaModel, layout: string, ref: LearnShape, device: GPUDevice): GPUBuffer {
  let byLayout = gradBuffers.get(model);
  if (!byLayout) gradBuffers.set(model, (byLayout = new Map()));
  const held = byLayout.get(layout);
  if (held?.device === device) return held.buffer;
  held?.buffer.destroy();
  const buffer = LearnPlan.gradBuffer(device, ref);
  byLayout.set(layout, { device, buffer });
  return buffer;
}

function frozenOf(model: LlamaModel): FrozenWeight[] {
  return [...model.layers.flatMap((l) => PROJ_NAMES.map((p) => l[p].weight)), model.lmHead.weight];
}

/** Why the planned learning step cannot run this model and adapter set now (null: it can). */
export function unplannableLearnReason(model: LlamaModel, lora: LoraSet): string | null {
  if (!customKernelsActive()) return 'not on WebGPU with the custom kernels';
  const r = unplannableReason(model, true);
  if (r) return r;
  for (const l of model.layers) {
    for (const p of PROJ_NAMES) {
      const a = l[p].adapter;
      if (a && (!(a instanceof LoraAdapter) || a.set !== lora))
        return `${l[p].name}: an adapter outside the trained set`;
    }
  }
  return null;
}

/** Whether the planned learning step recomputes activations in its backward (EngineOptions.learnRecompute). */
export type { LearnRecompute };

const recomputeChoice = () => {
  const mode = engineOptions().learnRecompute;
  return mode === 'auto' ? 'auto' : mode === 'on';
};

/** Prompt columns rounded up to a multiple of this: more left padding changes no result and lets steps share plans. */
export const PROMPT_COLUMNS_STEP = 8;

/**
 * The LoRA shape in the planner's terms: rank, targets and adapted layers of the attached
 * adapters (one LoraSet: the same rank and targets in every adapted layer).
 */
function loraShapeOf(model: LlamaModel): LearnLoraShape {
  const shapes = loraOf(model).shapes;
  const layers = shapes.flatMap((s, i) => (Object.keys(s).length > 0 ? [i] : []));
  const targets = PROJ_NAMES.filter((p) => shapes.some((s) => s[p]));
  const r = Math.max(1, ...shapes.flatMap((s) => Object.values(s).map((x) => x!.r)));
  return { r, targets, layers, dropout: dropoutOf(model) };
}

/** Whether the model's adapters have LoRA dropout (the plan then takes a mask per adapter). */
function dropoutOf(model: LlamaModel): boolean {
  return model.layers.some((l) =>
    PROJ_NAMES.some((p) => {
      const a = l[p].adapter;
      return a instanceof LoraAdapter && a.set.dropout > 0;
    }),
  );
}

function stepShape(
  model: LlamaModel,
  rows: number,
  promptLength: number,
  responseLength: number,
): { shape: LearnBatchShape; limits: LearnLimits; lora: LearnLoraShape } {
  const limits = webgpuDevice().limits;
  return {
    shape: {
      rows,
      promptLen: Math.ceil(promptLength / PROMPT_COLUMNS_STEP) * PROMPT_COLUMNS_STEP,
      responseLen: responseLength,
    },
    limits: {
      maxBufferSize: limits.maxBufferSize,
      maxStorageBufferBindingSize: limits.maxStorageBufferBindingSize,
      budgetBytes: engineOptions().learnMemoryBudget,
    },
    lora: loraShapeOf(model),
  };
}

/**
 * Rows per micro-batch the learn-memory planner gives a learn batch of this shape on this device
 * within the budget (src/contract/learnMemory.ts, the plan's own buffers); 0 when not even one row fits.
 */
export function learnMicroBatchRows(
  model: LlamaModel,
  rows: number,
  promptLength: number,
  responseLength: number,
): number {
  const s = stepShape(model, rows, promptLength, responseLength);
  return learnStepRows(model.config, s.lora, s.shape, s.limits, recomputeChoice()).microBatchRows;
}

/**
 * Whether a plan of exactly these rows recomputes: forced by EngineOptions.learnRecompute, else only when its
 * activations kept would not fit the budget or a binding (a micro-batch the planner sized kept
 * stays kept; one sized for recompute does not fit kept).
 */
function recomputes(model: LlamaModel, rows: number, promptLength: number, responseLength: number): boolean {
  const mode = engineOptions().learnRecompute;
  if (mode !== 'auto') return mode === 'on';
  return learnShapeBlockerOf(model, rows, promptLength, responseLength, false) !== null;
}

/** Why a batch of this shape would not fit the device or the budget in one plan (null: it fits). */
export function learnShapeBlocker(
  model: LlamaModel,
  rows: number,
  promptLength: number,
  responseLength: number,
): string | null {
  return learnShapeBlockerOf(
    model,
    rows,
    promptLength,
    responseLength,
    recomputes(model, rows, promptLength, responseLength),
  );
}

function learnShapeBlockerOf(
  model: LlamaModel,
  rows: number,
  promptLength: number,
  responseLength: number,
  recompute: boolean,
): string | null {
  const s = stepShape(model, rows, promptLength, responseLength);
  const buffers = learnStepBuffers(model.config, s.lora, s.shape, rows, recompute);
  const cap = Math.min(s.limits.maxStorageBufferBindingSize, s.limits.maxBufferSize);
  const largest = buffers.filter((b) => b.name !== UNIFORMS).reduce((a, b) => (b.bytes > a.bytes ? b : a));
  if (largest.bytes > cap) return `${largest.name}: a buffer of ${largest.bytes} bytes, over the device's ${cap}`;
  const total = buffers.reduce((a, b) => a + b.bytes * b.count, 0);
  const budgetBytes = engineOptions().learnMemoryBudget;
  if (total > budgetBytes) return `${total} bytes for the learn plan, over the budget of ${budgetBytes}`;
  return null;
}

/** Shapes whose plan the device refused (out of memory or a limit): not tried again. */
const refused = new WeakMap<GPUDevice, Set<string>>();

/** Runs fn under out-of-memory and validation error scopes; the first error's message, or null. */
export async function gpuScoped<T>(device: GPUDevice, fn: () => T): Promise<{ value: T | null; error: string | null }> {
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  let value: T | null = null;
  let thrown: string | null = null;
  try {
    value = fn();
  } catch (e) {
    thrown = e instanceof Error ? e.message : String(e);
  }
  const invalid = await device.popErrorScope();
  const oom = await device.popErrorScope();
  return { value, error: thrown ?? oom?.message ?? invalid?.message ?? null };
}

/**
 * The plan for this batch shape (built on first use, kept for the next step of the same shape), or
 * null when the device refuses it (out of memory, a limit): the caller learns on tfjs then.
 */
export async function learnPlanFor(
  model: LlamaModel,
  rows: number,
  promptLength: number,
  responseLength: number,
  temperature: number,
): Promise<LearnPlan | null> {
  const lora = loraOf(model);
  const recompute = recomputes(model, rows, promptLength, responseLength);
  const dropout = dropoutOf(model);
  // The GEMM layout by adapter (the GEMV variant's choice: split-K workgroups on GPUs), unless forced.
  const gemm = engineOptions().learnGemm ?? (gemvVariant() === 'splitk' ? 'tiled' : 'direct');
  const key = `${rows}:${promptLength}:${responseLength}:${temperature}:${recompute ? 'recompute' : 'keep'}:${dropout}:${gemm}:${JSON.stringify(lora.shapes)}`;
  let byKey = plans.get(model);
  if (!byKey) plans.set(model, (byKey = new Map()));
  const weights = frozenOf(model);
  const device = webgpuDevice();
  const hit = byKey.get(key);
  if (hit && hit.plan.device === device && hit.weights.every((w, i) => w === weights[i])) {
    byKey.delete(key);
    byKey.set(key, hit);
    return hit.plan;
  }
  hit?.plan.dispose();
  byKey.delete(key);
  while (byKey.size >= KEEP) {
    const [oldest, p] = byKey.entries().next().value as [string, Cached];
    p.plan.dispose();
    byKey.delete(oldest);
  }
  if (refused.get(device)?.has(key)) return null;
  const ref = modelRef(model, lora.shapes);
  const grads = sharedGradBuffer(model, JSON.stringify(lora.shapes), ref, device);
  flushTfjs();
  const built = await gpuScoped(
    device,
    () =>
      new LearnPlan(device, ref, { rows, promptLength, responseLength, temperature, recompute, grads, dropout, gemm }),
  );
  // The plan made each buffer, pipeline and bind group in its own error scopes: a refusal names what it refused.
  const refusal =
    built.value && !built.error
      ? await built.value.plan.created().then(
          () => null,
          (e: Error) => e.message,
        )
      : null;
  if (built.error || refusal || !built.value) {
    built.value?.dispose();
    if (!refused.has(device)) refused.set(device, new Set());
    refused.get(device)!.add(key);
    console.warn(
      `planned learning step: the device refused the plan for ${key} (${built.error ?? refusal}); this shape learns on tfjs`,
    );
    return null;
  }
  byKey.set(key, { plan: built.value, weights });
  return built.value;
}

export function releaseLearnPlans(model: LlamaModel): void {
  for (const p of plans.get(model)?.values() ?? []) p.plan.dispose();
  plans.delete(model);
  for (const g of gradBuffers.get(model)?.values() ?? []) g.buffer.destroy();
  gradBuffers.delete(model);
}
onDisposeLlama(releaseLearnPlans);

/** The adapter of each of the plan's LoRA slots (the flat buffers' order: layer, projection). */
export function slotAdapters(model: LlamaModel, plan: LearnPlan): LoraAdapter[] {
  return plan.slots.map((s) => model.layers[s.layer][s.proj].adapter as LoraAdapter);
}

export interface PlannedStats {
  plan: LearnPlan;
  /** [B T] per response token. */
  logp: Float32Array;
  entropy: Float32Array;
  /** Under the adapters switched off (when asked for). */
  refLogp: Float32Array | null;
}

/**
 * Forward of the packed batch with the adapters' current factors: per-token log-prob and entropy
 * (and the reference log-prob); the plan keeps the activations for `plan.backward`. Null when the
 * device refused the plan or rejected its forward (nothing was learned: run the batch on tfjs).
 */
export async function plannedLearnForward(
  model: LlamaModel,
  lora: LoraSet,
  packed: PackedSequences,
  temperature = 1,
  reference = false,
  withHidden = false,
  policy = true,
): Promise<PlannedStats | null> {
  const r = await forwardWith(model, lora, packed, temperature, policy, (plan) =>
    plan.forward(reference, withHidden, policy),
  );
  return r && { plan: r.plan, ...r.value };
}

/**
 * The policy forward of `plannedLearnForward` with nothing read back: the statistics stay in the
 * plan's `statsBuffer` (and, `withHidden`, the final hidden rows in `hidden`) for a loss built on
 * the GPU. The plan, or null as there.
 */
export async function plannedLearnForwardOnGpu(
  model: LlamaModel,
  lora: LoraSet,
  packed: PackedSequences,
  temperature = 1,
  withHidden = false,
): Promise<LearnPlan | null> {
  return (
    (await forwardWith(model, lora, packed, temperature, true, (plan) => plan.forwardOnGpu(false, withHidden)))?.plan ??
    null
  );
}

/** `policy`: the adapted pass runs (its dropout masks are drawn). */
async function forwardWith<T>(
  model: LlamaModel,
  lora: LoraSet,
  packed: PackedSequences,
  temperature: number,
  policy: boolean,
  run: (plan: LearnPlan) => T | Promise<T>,
): Promise<{ plan: LearnPlan; value: T } | null> {
  const why = unplannableLearnReason(model, lora);
  if (why) throw new Error(`planned learning step: ${why}`);
  // Extra left padding up to a multiple of PROMPT_COLUMNS_STEP: masked keys add exact zeros.
  const extra = Math.ceil(packed.promptLength / PROMPT_COLUMNS_STEP) * PROMPT_COLUMNS_STEP - packed.promptLength;
  const plan = await learnPlanFor(
    model,
    packed.ids.length,
    packed.promptLength + extra,
    packed.responseLength,
    temperature,
  );
  if (!plan) return null;
  plan.writeInputs({
    ids: packed.ids.map((r) => [...Array<number>(extra).fill(0), ...r]),
    attentionMask: packed.attentionMask.map((r) => [...Array<number>(extra).fill(0), ...r]),
  });
  // tensorBuffer may encode an upload of host values: take every buffer, then submit tfjs's work,
  // so the copy reads the factors' latest values.
  const adapters = slotAdapters(model, plan);
  const factors = adapters.map((a) => ({ A: tensorBuffer(a.A), B: tensorBuffer(a.B) }));
  const calls = adapters.map((a) => a.calls);
  flushTfjs();
  plan.loadParams(factors);
  if (policy && plan.dropout) loadDropoutMasks(plan, adapters, packed, extra);
  plan.device.pushErrorScope('out-of-memory');
  plan.device.pushErrorScope('validation');
  const s = await Promise.resolve()
    .then(() => run(plan))
    .catch((e: unknown) => (e instanceof Error ? e : new Error(String(e))));
  const invalid = await plan.device.popErrorScope();
  const oom = await plan.device.popErrorScope();
  const error = s instanceof Error ? s.message : (oom ?? invalid)?.message;
  if (error || s instanceof Error) {
    // The tfjs pass that learns this batch instead draws the same masks again.
    adapters.forEach((a, i) => (a.calls = calls[i]));
    console.warn(`planned learning step: the forward failed (${error}); this batch learns on tfjs`);
    return null;
  }
  return { plan, value: s };
}

/**
 * Draws this pass's dropout multipliers, one per adapter in the plan's slot order, as each
 * adapter's tfjs forward would (LoraAdapter.dropoutMultiplier over its input [B (P + T - 1), in],
 * advancing the same call counters), lays them out in the plan's token order (the `extra` left pad
 * columns first, their multipliers unused) and loads them into the plan a group of about
 * EngineOptions.dropoutMaskGroupBytes at a time, so the f32 draws never all live at once. Not training: no dropout.
 */
function loadDropoutMasks(plan: LearnPlan, adapters: LoraAdapter[], packed: PackedSequences, extra: number): void {
  const B = packed.ids.length;
  const L0 = packed.promptLength + packed.responseLength - 1;
  let group: tf.Tensor[] = [];
  let bytes = 0;
  let first = 0;
  const groupBytes = engineOptions().dropoutMaskGroupBytes;
  const load = () => {
    const buffers = group.map((t) => tensorBuffer(t));
    flushTfjs();
    plan.loadMasks(buffers, first);
    tf.dispose(group);
    first += group.length;
    group = [];
    bytes = 0;
  };
  for (const a of adapters) {
    const inF = a.A.shape[1];
    const m = a.dropoutMultiplier([B * L0, inF]);
    if (!m) {
      // Not training: no dropout (the set's flag, so this is the first adapter and nothing is drawn yet).
      tf.dispose(group);
      return plan.loadMasks(null);
    }
    group.push(
      extra === 0
        ? m
        : tf.tidy(() =>
            tf
              .pad(
                m.reshape([B, L0, inF]),
                [
                  [0, 0],
                  [extra, 0],
                  [0, 0],
                ],
                1,
              )
              .reshape([B * (L0 + extra), inF]),
          ),
    );
    if (extra > 0) m.dispose();
    bytes += B * (L0 + extra) * inF * 4;
    if (bytes >= groupBytes) load();
  }
  if (group.length > 0) load();
}
