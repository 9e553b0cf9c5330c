// generate() on the planned WebGPU path: the prompt runs through the plan's prefill (or, with
// prefillPath 'tfjs' in the engine options), op by op on tfjs with its caches and last logits copied into the plan),
// then every new token is a replay of the decode plan built once per (model, batch, capacity,
// LoRA shapes) by src/engine/plan/decodePlan.ts. The model
// layer only describes the model (its weights' GPU buffers and dimensions); the engine plans it.
//
// Same seeds, same draws: the plan samples with the tfjs path's own sampler kernel from the same
// Philox streams, and records the steps with the same StepRecorder.
import * as tf from '@tensorflow/tfjs';
import {
  customKernelsActive,
  webgpuDevice,
  alignUp,
  DecodePlan,
  PROJ_KEYS,
  prefillChunk,
  GEMM_MIN_ROWS,
  flushTfjs,
  tensorBuffer,
  engineOptions,
  gemvVariant,
  seedKey,
  type DecodeModelRef,
  type LoraRef,
  type ProjKey,
  type WeightRef,
  type ExecutionPath,
} from '../../engine/index';
import {
  decodeSetup,
  emptyResult,
  leftPad,
  StepRecorder,
  type GenerateOptions,
  type GenerateResult,
} from './decodeSteps';
import { createKVCache, disposeKVCache, forward, onDisposeLlama, type LlamaModel } from '../llama';
import { BlockedDenseWeight, DenseWeight, TransposedWeight, WeightColumns, type FrozenWeight } from '../linear';
import { plannedMismatch, plannedLayer } from '../../contract/blockDescription';
import { LoraAdapter } from '../lora';
import { F16Weight, Int4Weight, Int8Weight } from '../quant';

/** Which path decodes on WebGPU (EngineOptions.decodePath, .prefillPath). */
export type DecodePath = ExecutionPath;
let gpuMs = 0;
let prefillGpuMs = 0;

/** GPU milliseconds the planned decode steps took since the last call (timestamp queries; 0 without). */
export function takePlannedGpuMs(): number {
  const t = gpuMs;
  gpuMs = 0;
  return t;
}

/** GPU milliseconds the planned prefills took since the last call (timestamp queries; 0 without). */
export function takePlannedPrefillGpuMs(): number {
  const t = prefillGpuMs;
  prefillGpuMs = 0;
  return t;
}

function frozenRefs(w: FrozenWeight): WeightRef[] {
  if (w instanceof DenseWeight)
    return [{ kind: 'f32', rows: w.outFeatures, cols: w.inFeatures, buffer: tensorBuffer(w.w) }];
  if (w instanceof BlockedDenseWeight)
    return w.blocks.map((b) => ({ kind: 'f32', rows: b.shape[0], cols: b.shape[1], buffer: tensorBuffer(b) }));
  if (w instanceof Int8Weight || w instanceof Int4Weight || w instanceof F16Weight) {
    return w.blocks.map((b) => ({
      kind: b.kind,
      rows: b.outFeatures,
      cols: b.inFeatures,
      groupSize: b.groupSize,
      words: tensorBuffer(b.packed),
      scales: tensorBuffer(b.scales),
    }));
  }
  throw new Error(`planned decode: no plan for a ${w.kind} weight`);
}

/**
 * Why the planned path cannot run this model now (null: it can). `learning`: for the planned
 * learning step, which applies LoRA dropout itself and binds any weight held in row blocks.
 */
export function unplannableReason(model: LlamaModel, learning = false): string | null {
  // The plans run every block in their shape (pre norm, body, optional post norm, add; twice);
  // another runs on tfjs (op by op, driven by the same description).
  const shape = plannedMismatch(model.description);
  if (shape) return `${shape} (the planned paths do not run this block; this model runs on tfjs)`;
  let set: LoraAdapter['set'] | null = null;
  for (const l of model.layers) {
    for (const p of PROJ_KEYS) {
      const lin = l[p];
      const w = lin.weight;
      if (w instanceof TransposedWeight || w instanceof WeightColumns)
        return `${lin.name}: held as W^T (the wasm/cpu layout)`;
      const single =
        w instanceof DenseWeight ||
        ((w instanceof Int8Weight || w instanceof Int4Weight || w instanceof F16Weight) && w.blocks.length === 1);
      // The decode plan takes any projection in row blocks (a GEMV per block), q, k and v in
      // blocks of whole heads only (their RoPE pairs and cache rows stay within a head).
      const D = model.config.headDim;
      if (!single && !learning && (p === 'q' || p === 'k' || p === 'v') && frozenRefs(w).some((b) => b.rows % D !== 0))
        return `${lin.name}: a ${w.kind} weight in row blocks that split a head`;
      if (!lin.adapter) continue;
      if (!(lin.adapter instanceof LoraAdapter)) return `${lin.name}: an adapter that is not LoRA`;
      const s = lin.adapter.set;
      if (set && s !== set && s.enabled !== set.enabled) return 'LoRA sets switched on and off at once';
      set = s;
      if (!learning && s.training && s.dropout > 0) return 'LoRA dropout while training';
    }
  }
  if (model.lmHead.adapter) return 'an adapter on the LM head';
  if (model.lmHead.weight instanceof TransposedWeight) return 'the LM head held as W^T (the wasm/cpu layout)';
  const f = frozenRefs(model.lmHead.weight)[0];
  if (f.kind === 'int4' && f.cols % 8 !== 0) return 'int4 head';
  return null;
}

export function loraOf(model: LlamaModel): {
  shapes: DecodeModelRef['lora'];
  refs: Partial<Record<ProjKey, LoraRef>>[];
  on: boolean;
} {
  let on = true;
  const shapes: DecodeModelRef['lora'] = [];
  const refs: Partial<Record<ProjKey, LoraRef>>[] = [];
  for (const l of model.layers) {
    const s: DecodeModelRef['lora'][number] = {};
    const r: Partial<Record<ProjKey, LoraRef>> = {};
    for (const p of PROJ_KEYS) {
      const a = l[p].adapter;
      if (!(a instanceof LoraAdapter)) continue;
      const rank = a.A.shape[0];
      s[p] = { r: rank, scale: a.set.scale };
      r[p] = { A: tensorBuffer(a.A), B: tensorBuffer(a.B), r: rank, scale: a.set.scale };
      on = a.set.enabled;
    }
    shapes.push(s);
    refs.push(r);
  }
  return { shapes, refs, on };
}

/** A weight's row blocks when it is held in several (the learn plan binds each). */
function rowBlocks(w: FrozenWeight): { blocks?: WeightRef[] } {
  const refs = frozenRefs(w);
  return refs.length > 1 ? { blocks: refs } : {};
}

export function modelRef(model: LlamaModel, lora: DecodeModelRef['lora']): DecodeModelRef {
  const c = model.config;
  const vec = (t: tf.Tensor1D | null) => (t ? { buffer: tensorBuffer(t), length: t.shape[0] } : undefined);
  const single = (w: FrozenWeight) => frozenRefs(w)[0];
  let row = 0;
  if (model.embed instanceof TransposedWeight)
    throw new Error('planned decode: the embedding is in the wasm/cpu layout');
  const embedBlocks = model.embed instanceof BlockedDenseWeight ? model.embed.blocks : [model.embed];
  return {
    hidden: c.hiddenSize,
    intermediate: c.intermediateSize,
    heads: c.numHeads,
    kvHeads: c.numKvHeads,
    headDim: c.headDim,
    vocab: c.vocabSize,
    eps: c.rmsNormEps,
    invFreq: model.invFreq,
    invFreqs: model.invFreqs,
    embedScale: model.description.embedScale,
    activation: model.description.layers[0]?.find((o) => o.op === 'mlp')?.activation,
    embed: embedBlocks.map((b) => {
      const blk = { rowStart: row, rows: b.shape[0], buffer: tensorBuffer(b) };
      row += b.shape[0];
      return blk;
    }),
    layers: model.layers.map((l, li) => ({
      ...layerBlock(model, li),
      ...(Object.fromEntries(
        PROJ_KEYS.map((p) => [p, { weight: single(l[p].weight), bias: vec(l[p].bias), ...rowBlocks(l[p].weight) }]),
      ) as unknown as Record<ProjKey, { weight: WeightRef }>),
    })),
    norm: vec(model.norm)!,
    head: frozenRefs(model.lmHead.weight),
    lora,
  };
}

/** Layer li's norms and attention settings as the decode plan binds them, read from its ops in the description. */
function layerBlock(model: LlamaModel, li: number) {
  const shape = plannedLayer(model.description.layers[li]);
  if (typeof shape === 'string') throw new Error(`planned decode: layer ${li}: ${shape}`);
  const norms = model.layers[li].norms;
  const vec = (name: string | null | undefined) => {
    if (!name) return undefined;
    const t = norms[name];
    if (!t) throw new Error(`planned decode: layer ${li} has no norm ${name}`);
    return { buffer: tensorBuffer(t), length: t.shape[0] };
  };
  const a = shape.attention;
  return {
    inputNorm: vec(shape.pre1)!,
    postNorm: vec(shape.pre2)!,
    attnOutNorm: vec(shape.post1),
    mlpOutNorm: vec(shape.post2),
    qNorm: vec(a.qkNorm?.q),
    kNorm: vec(a.qkNorm?.k),
    rope: a.rope,
    window: a.window,
    // the plan's default (head_dim^-1/2) unless the family scales otherwise, so Llama's uniform is unchanged
    attnScale: a.scale === model.config.headDim ** -0.5 ? undefined : a.scale,
  };
}

interface CachedPlan {
  plan: DecodePlan;
  /** The frozen weights it borrowed: a swapped weight means a new plan. */
  weights: FrozenWeight[];
}
const plans = new WeakMap<LlamaModel, Map<string, CachedPlan>>();
const KEEP = 2;

function frozenOf(model: LlamaModel): FrozenWeight[] {
  return [...model.layers.flatMap((l) => PROJ_KEYS.map((p) => l[p].weight)), model.lmHead.weight];
}

function planFor(model: LlamaModel, B: number, capacity: number, lora: DecodeModelRef['lora']): DecodePlan {
  const { tokensPerRun, plannedGemv: gemvShape, plannedAttention: attention } = engineOptions();
  const gemm = plannedGemm();
  const key = `${B}:${capacity}:${tokensPerRun}:${gemvShape}:${gemm}:${attention}:${JSON.stringify(lora)}`;
  let byKey = plans.get(model);
  if (!byKey) plans.set(model, (byKey = new Map()));
  const weights = frozenOf(model);
  const hit = byKey.get(key);
  const device = webgpuDevice();
  // A plan is tied to its device and to the weights it borrowed: a new device (after a loss) or a
  // swapped weight means a new plan.
  if (
    hit &&
    hit.plan.device === device &&
    hit.weights.length === weights.length &&
    hit.weights.every((w, i) => w === weights[i])
  ) {
    byKey.delete(key);
    byKey.set(key, hit); // most recently used last
    return hit.plan;
  }
  hit?.plan.dispose();
  byKey.delete(key);
  while (byKey.size >= KEEP) {
    const [oldest, p] = byKey.entries().next().value as [string, CachedPlan];
    p.plan.dispose();
    byKey.delete(oldest);
  }
  const ref = modelRef(model, lora);
  flushTfjs(); // uploads of weights tfjs has encoded but not submitted land before the plan copies them
  const forced =
    gemvShape === null
      ? {}
      : gemvShape === 'tile'
        ? { gemv: 'thread' as const, tileMinRows: 1 }
        : { gemv: gemvShape, tileMinRows: Infinity };
  const plan = new DecodePlan(device, ref, {
    batch: B,
    capacity,
    tokensPerRun,
    gemv: gemvVariant() === 'thread' ? 'thread' : 'split',
    memoryBudget: engineOptions().decodeMemoryBudget,
    ...forced,
    gemmMinRows: gemm === 'tiled' ? GEMM_MIN_ROWS : Infinity,
    ...(attention ? { attention } : {}),
  });
  byKey.set(key, { plan, weights });
  return plan;
}

/** Frees the decode plans built for a model (disposeLlama does it; they borrow its weights). */
export function releaseDecodePlans(model: LlamaModel): void {
  for (const p of plans.get(model)?.values() ?? []) p.plan.dispose();
  plans.delete(model);
}
onDisposeLlama(releaseDecodePlans);

/**
 * The planned projections of many rows: EngineOptions.plannedGemm where set, else as the learn
 * GEMM picks (tiled where the GPU kernel variants run: GPUs, or forced by kernelVariants 'gpu').
 */
export function plannedGemm(): 'tiled' | 'gemv' {
  return engineOptions().plannedGemm ?? (gemvVariant() === 'splitk' ? 'tiled' : 'gemv');
}

/** Dispatch counts of the plan generate() would use for this model and batch, per token and per prefill chunk, and its decode attention (tests, benchmarks). */
export function plannedDispatches(model: LlamaModel, B: number, capacity: number) {
  const plan = planFor(model, B, alignUp(capacity, 64), loraOf(model).shapes);
  return {
    ...plan.dispatchesPerToken(),
    prefill: plan.prefillDispatches(),
    attention: plan.attention,
    /** Dispatches of the tiled GEMM (matmul/plan_gemm_tiled.wgsl) per token and per prefill chunk. */
    tiledGemm: plan.kernelDispatches('plan_gemm_tiled'),
  };
}

/** The planned generate when it can run (WebGPU, path 'planned', a plannable model), else null. */
export function plannedDecodeFor(model: LlamaModel): typeof generatePlanned | null {
  if (engineOptions().decodePath !== 'planned' || !customKernelsActive()) return null;
  const why = unplannableReason(model);
  if (why !== null && plannedMismatch(model.description) && !toldFallback.has(model)) {
    toldFallback.add(model);
    console.info(`planned decode: ${why}`);
  }
  return why === null ? generatePlanned : null;
}
/** Models whose fallback to tfjs was said once (a family the plans do not run). */
const toldFallback = new WeakSet<LlamaModel>();

/** The prefill on the plan (or on tfjs, its caches and first logits copied in), then the plan decodes. */
function startPlanned(model: LlamaModel, prompts: number[][], s: ReturnType<typeof decodeSetup>): DecodePlan {
  const { B, maxNew, pad, temperature } = s;
  const { P, ids, attn } = leftPad(prompts, pad);
  const lora = loraOf(model);
  const [seedLo, seedHi] = seedKey(s.seed);
  const rest = {
    streams: s.streams,
    sampling: { temperature, topK: s.topK, topP: s.topP, seedLo, seedHi },
    loraOn: lora.on,
    lora: lora.refs,
  };
  if (engineOptions().prefillPath === 'planned') {
    // Capacity in steps of 64 slots, so rollouts of similar lengths share one plan.
    const P2 = Math.ceil(P / prefillChunk(B)) * prefillChunk(B);
    const plan = planFor(model, B, alignUp(P2 + maxNew, 64), lora.shapes);
    // Work tfjs has encoded but not submitted (an optimiser step on the adapters, an upload)
    // must land before the plan copies the adapters and runs.
    flushTfjs();
    plan.beginPrompt({ ids, mask: attn, pad, ...rest });
    return plan;
  }
  const V = model.config.vocabSize;
  const capacity = alignUp(P + maxNew, 64);
  const plan = planFor(model, B, capacity, lora.shapes);
  const cache = createKVCache(model, B, capacity);
  try {
    const logits = forward(model, ids, { attentionMask: attn, cache, lastOnly: true }); // [B, 1, V]
    const scaled = temperature > 0 && temperature !== 1 ? tf.div(logits, temperature) : logits;
    const device = webgpuDevice();
    flushTfjs();
    const enc = device.createCommandEncoder();
    const kvBytes = B * model.config.numKvHeads * capacity * model.config.headDim * 4;
    cache.keys.forEach((k, l) => enc.copyBufferToBuffer(tensorBuffer(k), 0, plan.kCache[l], 0, kvBytes));
    cache.values.forEach((v, l) => enc.copyBufferToBuffer(tensorBuffer(v), 0, plan.vCache[l], 0, kvBytes));
    enc.copyBufferToBuffer(tensorBuffer(logits), 0, plan.logits, 0, B * V * 4);
    enc.copyBufferToBuffer(tensorBuffer(scaled), 0, plan.scaled, 0, B * V * 4);
    device.queue.submit([enc.finish()]);
    tf.dispose([logits, scaled]);
    plan.begin({ prefill: P, basePos: cache.nextPosition, slotValid: cache.slotValid, ...rest });
  } finally {
    disposeKVCache(cache);
  }
  return plan;
}

export async function generatePlanned(
  model: LlamaModel,
  prompts: number[][],
  opts: GenerateOptions,
): Promise<GenerateResult> {
  const s = decodeSetup(prompts, opts);
  const { B, maxNew } = s;
  const result = emptyResult(B);
  if (maxNew === 0) return result;
  const plan = startPlanned(model, prompts, s);
  const steps = new StepRecorder(result, s.stop, s.pad);
  const per = plan.opts.tokensPerRun;
  for (let t = 0; t < maxNew; t += per) {
    const n = Math.min(per, maxNew - t);
    const rec = await plan.run(t, n, t + n < maxNew);
    if (plan.lastGpuMs !== null) gpuMs += plan.lastGpuMs;
    if (t === 0 && plan.lastPrefillGpuMs !== null) prefillGpuMs += plan.lastPrefillGpuMs;
    for (let i = 0; i < n; i++) {
      for (let b = 0; b < B; b++) {
        const at = (i * B + b) * 3;
        steps.record(b, rec[at], rec[at + 1], rec[at + 2]);
      }
      if (t + i === maxNew - 1 || steps.allDone()) return result;
    }
  }
  return result;
}

/**
 * Teacher-forced planned decode (tests and triage): after the prompts, feeds forced[t][b] at step t
 * and returns the logits [B * V] that follow each, as the planned path computes them.
 */
export async function plannedForcedLogits(
  model: LlamaModel,
  prompts: number[][],
  forced: number[][],
): Promise<Float32Array[]> {
  const s = decodeSetup(prompts, { maxNewTokens: forced.length + 1, greedy: true });
  const plan = startPlanned(model, prompts, s);
  const out: Float32Array[] = [];
  for (let t = 0; t < forced.length; t++) out.push(await plan.forced(t, forced[t]));
  return out;
}

/** The logits [B * V] the planned path draws the first new token from, after its prefill (tests and triage). */
export async function plannedPrefillLogits(model: LlamaModel, prompts: number[][]): Promise<Float32Array> {
  return startPlanned(model, prompts, decodeSetup(prompts, { maxNewTokens: 1, greedy: true })).readLogits();
}
