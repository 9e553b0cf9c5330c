// The learn-memory planner (issue 21, step 5): from the model's dims, its weight format, the LoRA
// shape, the learn batch and the device's limits, the buffers one LoRA learning step allocates,
// their peak, and the micro-batch rows and gradient-accumulation count that keep the peak inside
// the memory budget and every buffer inside one storage binding. Pure (no tfjs, no GPU): the page's
// fit check and the device panel read it before loading, and learnStep sizes its micro-batches on
// the planned WebGPU path by it (src/rl/plannedLearn.ts), so the figures shown are the ones run.
//
// What a step holds, by scope:
//   model       frozen weights (embedding, each projection in its format, norms, biases)
//   optimizer   every buffer of the planned AdamW (src/engine/plan/adamwPlan.ts) over the LoRA:
//               flat parameters, gradients, the two moments, the state readback staging, the
//               norm's partials and the uniforms (a PPO value head's few floats are not counted)
//   micro-batch every buffer the learn plan (src/engine/plan/learnLayout.ts learnBuffers) creates
//               for b rows, to the byte (16-byte rounding, one 256-byte uniform record per
//               dispatch, learnStepDispatches): its copies of the LoRA parameters and
//               gradients, the inputs, every layer's kept activations, the logits and their
//               gradient, the backward's scratch.
// The planned step keeps every layer's activations, or (recompute) only each layer's input with one
// shared set of a layer's activations that its backward rebuilds (learnPlan.ts `recompute`): both
// layouts are listed to the byte, and 'auto' keeps everything when the batch fits that way.
import type { ModelConfig } from './modelConfig';
import type { ProjName } from './loraTargets';
import { FAMILIES, layerNormNames } from './modelFamily';
import { projectionBytes, type WeightFormat } from './weightFormat';

const F32 = 4;
/** The AdamW plan's state readback staging is at most this size (adamwPlan.ts STAGING_BYTES). */
const STAGING_BYTES = 4 * 2 ** 20;
/** Bytes of each dispatch's uniform record in a plan (plan.ts: one 256-byte aligned slot). */
const UNIFORM_SLOT = 256;
/** A plan's buffer size: at least 4 bytes, rounded up to 16 (plan.ts GpuPlan.buffer). */
const planned = (bytes: number) => Math.ceil(Math.max(bytes, 4) / 16) * 16;
/** Whether the planned learning step can recompute activations in its backward (learnPlan.ts `recompute`). */
export const PLANNED_STEP_RECOMPUTES = true;

/** How a plan treats activations: kept, recomputed, or chosen by the planner ('auto'). */
export type RecomputeChoice = boolean | 'auto';
/** The name of the plan's uniform records in a buffer list (uniform bindings, not storage). */
export const UNIFORMS = 'uniform records';

/** The dims the planner reads (a parsed config.json has them all). */
export type LearnModelDims = Pick<
  ModelConfig,
  | 'vocabSize'
  | 'hiddenSize'
  | 'intermediateSize'
  | 'numLayers'
  | 'numHeads'
  | 'numKvHeads'
  | 'headDim'
  | 'tieWordEmbeddings'
  | 'qkvBias'
  | 'oBias'
  | 'mlpBias'
> &
  Partial<Pick<ModelConfig, 'family' | 'ropeLocalTheta'>>;

export interface LearnLoraShape {
  r: number;
  targets: readonly ProjName[];
  /** Adapted layers; default all. */
  layers?: readonly number[];
  /** LoRA dropout (the plan keeps one bit mask per adapter over its input). Default false. */
  dropout?: boolean;
}

export interface LearnBatchShape {
  /** Sequences in the learn batch (prompts x group size). */
  rows: number;
  promptLen: number;
  responseLen: number;
}

export interface LearnLimits {
  maxBufferSize: number;
  maxStorageBufferBindingSize: number;
  /** Bytes the step may hold in all. */
  budgetBytes: number;
  /** Bytes the learn plan alone may hold (the runtime's per-plan budget, LEARN_PLAN_BUDGET); default no cap. */
  planBudgetBytes?: number;
}

/** The planned learning step's default memory budget per plan (setLearnMemoryBudget). */
export const LEARN_PLAN_BUDGET = 2 ** 31;

export type BufferScope = 'model' | 'optimizer' | 'micro-batch';

export interface PlannedBuffer {
  name: string;
  scope: BufferScope;
  /** Bytes of one such buffer. */
  bytes: number;
  count: number;
}

export interface LearnMemoryPlan {
  microBatchRows: number;
  accumulationSteps: number;
  recompute: boolean;
  /** Every buffer at the chosen micro-batch, largest scope first. */
  buffers: PlannedBuffer[];
  bytesByScope: Record<BufferScope, number>;
  peakBytes: number;
  fits: boolean;
  /** Why it does not fit (empty when it does). */
  problems: string[];
  notes: string[];
}

/** [out, in] of each projection. */
function projShapes(c: LearnModelDims): Record<ProjName, [number, number]> {
  const H = c.hiddenSize;
  const Q = c.numHeads * c.headDim;
  const KV = c.numKvHeads * c.headDim;
  const I = c.intermediateSize;
  return { q: [Q, H], k: [KV, H], v: [KV, H], o: [H, Q], gate: [I, H], up: [I, H], down: [H, I] };
}

/** LoRA parameters: r (in + out) per adapted projection. */
export function loraParamCount(c: LearnModelDims, lora: LearnLoraShape): number {
  const shapes = projShapes(c);
  const per = lora.targets.reduce((s, t) => s + lora.r * (shapes[t][0] + shapes[t][1]), 0);
  return per * adaptedLayers(c, lora);
}

function adaptedLayers(c: LearnModelDims, lora: LearnLoraShape): number {
  return lora.layers ? new Set(lora.layers).size : c.numLayers;
}

/**
 * A frozen weight of `rows` rows as the loader stores it: one buffer when it fits a storage
 * binding, else row blocks of one binding each (linear.ts denseFromHost, the quantised blocks).
 */
function weight(name: string, rows: number, rowBytes: number, count: number, bind: number): PlannedBuffer[] {
  if (rows * rowBytes <= bind) return [{ name, scope: 'model', bytes: rows * rowBytes, count }];
  const per = Math.max(1, Math.floor(bind / rowBytes));
  const full = Math.floor(rows / per);
  const rest = rows - full * per;
  const blocks = full + (rest > 0 ? 1 : 0);
  const out: PlannedBuffer[] = [
    {
      name: `${name}, block of ${per} rows (of ${blocks})`,
      scope: 'model',
      bytes: per * rowBytes,
      count: full * count,
    },
  ];
  if (rest > 0)
    out.push({ name: `${name}, last block of ${rest} rows`, scope: 'model', bytes: rest * rowBytes, count });
  return out;
}

function modelBuffers(c: LearnModelDims, format: WeightFormat, bind: number): PlannedBuffer[] {
  const H = c.hiddenSize;
  const Lyr = c.numLayers;
  const s = projShapes(c);
  const proj = (label: string, p: ProjName, count: number) =>
    weight(`${label} (${format})`, s[p][0], projectionBytes(format, 1, s[p][1]), count, bind);
  const Q = c.numHeads * c.headDim;
  const KV = c.numKvHeads * c.headDim;
  const I = c.intermediateSize;
  const out: PlannedBuffer[] = weight('embedding (f32)', c.vocabSize, H * F32, 1, bind);
  if (!c.tieWordEmbeddings)
    out.push(...weight(`lm_head (${format})`, c.vocabSize, projectionBytes(format, 1, H), 1, bind));
  out.push(
    ...proj('q_proj', 'q', Lyr),
    ...proj('k_proj, v_proj', 'k', 2 * Lyr),
    ...proj('o_proj', 'o', Lyr),
    ...proj('gate_proj, up_proj', 'gate', 2 * Lyr),
    ...proj('down_proj', 'down', Lyr),
    {
      name: 'norm weights',
      scope: 'model',
      bytes: H * F32,
      count: layerNormNames(c.family ?? 'llama').length * Lyr + 1,
    },
  );
  if (FAMILIES[c.family ?? 'llama'].qkNorm)
    out.push({ name: 'q/k norm weights', scope: 'model', bytes: c.headDim * F32, count: 2 * Lyr });
  if (c.qkvBias) out.push({ name: 'q/k/v biases', scope: 'model', bytes: (Q + 2 * KV) * F32, count: Lyr });
  if (c.oBias) out.push({ name: 'o bias', scope: 'model', bytes: H * F32, count: Lyr });
  if (c.mlpBias) out.push({ name: 'mlp biases', scope: 'model', bytes: (2 * I + H) * F32, count: Lyr });
  return out.filter((x) => x.count > 0);
}

function optimizerBuffers(c: LearnModelDims, lora: LearnLoraShape): PlannedBuffer[] {
  const bytes = planned(loraParamCount(c, lora) * F32);
  return [
    { name: 'LoRA parameters (flat)', scope: 'optimizer', bytes, count: 1 },
    { name: 'LoRA gradients (flat)', scope: 'optimizer', bytes, count: 1 },
    { name: 'AdamW moments m, v', scope: 'optimizer', bytes, count: 2 },
    { name: 'optimizer state readback', scope: 'optimizer', bytes: Math.min(bytes, STAGING_BYTES), count: 1 },
    // The norm's 256 partials, its statistics and their readback, the dynamic and static uniforms.
    {
      name: 'grad-norm partials, statistics, uniforms',
      scope: 'optimizer',
      bytes: 1024 + 16 + 16 + 256 + 16,
      count: 1,
    },
  ];
}

/**
 * The dispatches the learn plan records for one micro-batch (learnPasses.ts's passes): each needs a
 * 256-byte uniform record.
 */
function learnStepDispatches(c: LearnModelDims, lora: LearnLoraShape, recompute: boolean): number {
  const nL = c.numLayers;
  const slots = adaptedLayers(c, lora) * lora.targets.length;
  // Each forward (reference, adapted) 16 a layer + 4 (embedding, final norm, head, statistics),
  // the adapted one 2 more per adapter; the backward 19 a layer + 3, 4 per adapter.
  // A recompute rebuilds every layer but the last in the backward: its forward less the down
  // projection's output (15), 2 per adapter, 1 for an adapted down (its x Aᵀ only).
  const rebuilt = recompute ? Math.max(0, nL - 1) : 0;
  const rebuiltAdapted = recompute ? (lora.layers ? new Set(lora.layers.filter((l) => l < nL - 1)).size : rebuilt) : 0;
  const downs = lora.targets.includes('down') ? 1 : 0;
  // Dropout: per adapter 1 packing dispatch, 1 more in the adapted forward, 2 in the backward.
  // A rebuilt adapter applies its mask again before x Aᵀ.
  const drop = lora.dropout && slots > 0;
  // Per-head q/k norms (Qwen3, Gemma 3): 2 more a layer in each forward, the backward and each
  // rebuild. Post-branch norms (Gemma 3): 2 more a layer in each forward and the backward; a
  // rebuild runs them and the down projection's output too (3 more, 1 more per adapted down).
  const decl = FAMILIES[c.family ?? 'llama'];
  const qkn = decl.qkNorm ? 2 : 0;
  const post = decl.branches.some((b) => b.post) ? 1 : 0;
  return (
    2 * ((16 + qkn + 2 * post) * nL + 4) +
    (19 + qkn + 2 * post) * nL +
    (qkn + 3 * post) * rebuilt +
    post * downs * rebuiltAdapted +
    3 +
    6 * slots +
    15 * rebuilt +
    rebuiltAdapted * (2 * (lora.targets.length - downs) + downs) +
    (drop ? 4 * slots + rebuiltAdapted * lora.targets.length : 0)
  );
}

/**
 * Every buffer the learn plan creates for `b` rows of `shape` (learnLayout.ts learnBuffers), with
 * `recompute` that of its recompute mode: each layer's input kept, one shared set of the rest
 * (x Aᵀ once per adapted projection), the backward's rebuild dispatches in the uniform records.
 */
export function learnStepBuffers(
  c: LearnModelDims,
  lora: LearnLoraShape,
  shape: Pick<LearnBatchShape, 'promptLen' | 'responseLen'>,
  b: number,
  recompute = false,
): PlannedBuffer[] {
  const H = c.hiddenSize;
  const Q = c.numHeads * c.headDim;
  const KV = c.numKvHeads * c.headDim;
  const I = c.intermediateSize;
  const V = c.vocabSize;
  const T = shape.responseLen;
  const L = shape.promptLen + T - 1;
  const N = b * L;
  const R = b * T;
  const nL = c.numLayers;
  const full = recompute ? 1 : nL;
  const slots = adaptedLayers(c, lora) * lora.targets.length;
  const keptSlots = recompute ? Math.min(slots, lora.targets.length) : slots;
  const att = b * c.numHeads * L * L;
  const mb = (name: string, floats: number, count: number): PlannedBuffer => ({
    name,
    scope: 'micro-batch',
    bytes: planned(floats * F32),
    count,
  });
  /** A layer's activations: one set, rebuilt in the backward, when recomputing. */
  const layer = (name: string) => (recompute ? `${name} (one layer's, rebuilt)` : name);
  const drop = !!lora.dropout && slots > 0;
  const decl = FAMILIES[c.family ?? 'llama'];
  const qkNorm = decl.qkNorm;
  const postNorm = decl.branches.some((b) => b.post);
  const ropes = c.ropeLocalTheta != null ? 2 : 1;
  const dispatches = learnStepDispatches(c, lora, recompute);
  const inputs = projShapes(c);
  const dropout = drop
    ? [
        ...lora.targets.map((t) =>
          mb(
            `LoRA dropout masks, 1 bit per element (${t})`,
            Math.ceil((N * inputs[t][1]) / 32),
            slots / lora.targets.length,
          ),
        ),
        mb('LoRA dropout scratch', N * Math.max(...lora.targets.map((t) => inputs[t][1])), 1),
        mb('LoRA dropout scale', 1, 1),
      ]
    : [];
  return [
    ...dropout,
    mb("LoRA parameters, gradients (the plan's flat copies)", loraParamCount(c, lora), 2),
    mb('token ids, key validity', N, 2),
    mb('targets', R, 1),
    mb('RoPE cos, sin', (N * c.headDim) / 2, 2 * ropes),
    mb('token statistics, their readback', R * 4, 2),
    mb('d statistics', R * 2, 1),
    mb('unused binding', 4, 1),
    mb('layer inputs (kept)', N * H, nL),
    mb(layer('norm outputs, mid-layer residual'), N * H, 3 * full),
    mb(layer('RMS inverses'), N, 2 * full),
    mb(layer('q (heads)'), N * Q, full),
    mb(layer('k, v (heads)'), N * KV, 2 * full),
    mb(layer('attention probabilities'), att, full),
    mb(layer('attention outputs'), N * Q, full),
    mb(layer('gate, up, act(gate) x up'), N * I, 3 * full),
    mb(layer('q before its per-head norm'), N * Q, qkNorm ? full : 0),
    mb(layer('k before its per-head norm'), N * KV, qkNorm ? full : 0),
    mb(layer('per-head RMS inverses of q'), N * c.numHeads, qkNorm ? full : 0),
    mb(layer('per-head RMS inverses of k'), N * c.numKvHeads, qkNorm ? full : 0),
    mb(layer('o, down outputs before their post norms'), N * H, postNorm ? 2 * full : 0),
    mb(layer('post-norm RMS inverses'), N, postNorm ? 2 * full : 0),
    mb(layer('LoRA x Aᵀ'), N * lora.r, keptSlots),
    mb('last layer output, final norm output', N * H, 2),
    mb('final RMS inverse', N, 1),
    mb('hidden rows (value head)', R * H, 1),
    mb('logits, their gradient', R * V, 2),
    mb('q before RoPE', N * Q, 1),
    mb('k, v before RoPE', N * KV, 2),
    mb('grad: hidden', N * H, 3),
    mb('grad: MLP', N * I, 3),
    mb('grad: q, attention outputs', N * Q, 4),
    mb('grad: k, v', N * KV, 4),
    mb('grad: attention probabilities', att, 1),
    mb('grad: LoRA x Aᵀ', N * lora.r, 1),
    mb('grad: q before its per-head norm', N * Q, qkNorm ? 1 : 0),
    mb('grad: k before its per-head norm', N * KV, qkNorm ? 1 : 0),
    mb('grad: a branch before its post norm', N * H, postNorm ? 1 : 0),
    { name: UNIFORMS, scope: 'micro-batch' as const, bytes: UNIFORM_SLOT, count: dispatches + 1 },
  ].filter((x) => x.count > 0);
}

const total = (bs: PlannedBuffer[]) => bs.reduce((s, x) => s + x.bytes * x.count, 0);

const MiB = 2 ** 20;
const fmt = (n: number) => (n >= 2 ** 30 ? `${(n / 2 ** 30).toFixed(2)} GiB` : `${(n / MiB).toFixed(1)} MiB`);

function check(shape: LearnBatchShape, lora: LearnLoraShape, c: LearnModelDims, limits: LearnLimits): void {
  const whole = (x: number) => Number.isSafeInteger(x) && x > 0;
  for (const [k, v] of Object.entries({
    rows: shape.rows,
    promptLen: shape.promptLen,
    responseLen: shape.responseLen,
    r: lora.r,
  })) {
    if (!whole(v)) throw new Error(`learn memory: ${k} must be a positive integer, got ${v}`);
  }
  for (const [k, v] of Object.entries(limits))
    if (v !== undefined && !(v > 0)) throw new Error(`learn memory: ${k} must be positive, got ${v}`);
  for (const i of lora.layers ?? [])
    if (!Number.isInteger(i) || i < 0 || i >= c.numLayers)
      throw new Error(`learn memory: LoRA layer ${i} does not exist (the model has ${c.numLayers})`);
}

/** The most rows (up to `rows`) for which `ok` holds, `ok` monotone in the rows; 0 when none. */
function largestRows(rows: number, ok: (b: number) => boolean): number {
  let lo = 0;
  let hi = rows;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (ok(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Each storage buffer within one binding (the uniform records are 256-byte uniform bindings). */
const inBinding = (bs: PlannedBuffer[], limits: Omit<LearnLimits, 'budgetBytes'>) =>
  bs.every(
    (x) => x.name === UNIFORMS || (x.bytes <= limits.maxStorageBufferBindingSize && x.bytes <= limits.maxBufferSize),
  );

/** What a step that can recompute does by default: choose ('auto'). */
export const DEFAULT_RECOMPUTE: RecomputeChoice = PLANNED_STEP_RECOMPUTES ? 'auto' : false;

/**
 * Rows per micro-batch and the layout, `ok(b, recompute)` monotone in b. 'auto': keep every
 * layer's activations when the whole batch fits that way; else recompute when that takes fewer
 * micro-batches (it costs one more forward of all layers but the last); else keep, fewer rows.
 * 0 rows: none fits.
 */
function chooseRows(
  rows: number,
  choice: RecomputeChoice,
  ok: (rec: boolean) => (b: number) => boolean,
): { b: number; rec: boolean } {
  if (choice !== 'auto') return { b: largestRows(rows, ok(choice)), rec: choice };
  const keep = largestRows(rows, ok(false));
  if (keep === rows) return { b: keep, rec: false };
  const again = largestRows(rows, ok(true));
  const passes = (b: number) => (b > 0 ? Math.ceil(rows / b) : Infinity);
  return passes(again) < passes(keep) ? { b: again, rec: true } : { b: keep, rec: false };
}

/**
 * The micro-batch rows of the planned learning step alone (the step's own buffers within
 * `limits.budgetBytes`, each within one binding) and whether it recomputes (`recompute`: forced,
 * or 'auto' as chooseRows): what learnStep runs on WebGPU when the config sets no micro-batch
 * size. 0 rows: not even one row fits (the step learns on tfjs).
 */
export function learnStepRows(
  c: LearnModelDims,
  lora: LearnLoraShape,
  shape: LearnBatchShape,
  limits: LearnLimits,
  recompute: RecomputeChoice = DEFAULT_RECOMPUTE,
): { microBatchRows: number; accumulationSteps: number; bytes: number; recompute: boolean } {
  check(shape, lora, c, limits);
  const ok = (rec: boolean) => (b: number) => {
    const bs = learnStepBuffers(c, lora, shape, b, rec);
    return total(bs) <= limits.budgetBytes && inBinding(bs, limits);
  };
  const { b, rec } = chooseRows(shape.rows, recompute, ok);
  return {
    microBatchRows: b,
    accumulationSteps: b > 0 ? Math.ceil(shape.rows / b) : 0,
    bytes: b > 0 ? total(learnStepBuffers(c, lora, shape, b, rec)) : 0,
    recompute: b > 0 && rec,
  };
}

/**
 * Plans one learning step's memory: weights, the AdamW plan and the learn plan at the largest
 * micro-batch that keeps the whole inside the budget. `recompute`: false keeps every layer's
 * activations, true recomputes each layer in the backward, 'auto' (the default: the planned step
 * can do both) keeps them when the whole batch fits that way, else recomputes when that takes
 * fewer micro-batches.
 */
export function planLearnMemory(
  c: LearnModelDims,
  format: WeightFormat,
  lora: LearnLoraShape,
  shape: LearnBatchShape,
  limits: LearnLimits,
  recompute: RecomputeChoice = DEFAULT_RECOMPUTE,
): LearnMemoryPlan {
  check(shape, lora, c, limits);
  const bind = limits.maxStorageBufferBindingSize;
  const fixed = [...modelBuffers(c, format, bind), ...optimizerBuffers(c, lora)];
  const fixedBytes = total(fixed);
  const layoutFor = (b: number, rec: boolean) => learnStepBuffers(c, lora, shape, b, rec);
  const ok = (rec: boolean) => (b: number) => {
    const bs = layoutFor(b, rec);
    return (
      fixedBytes + total(bs) <= limits.budgetBytes &&
      total(bs) <= (limits.planBudgetBytes ?? Infinity) &&
      inBinding(bs, limits)
    );
  };
  let { b, rec } = chooseRows(shape.rows, recompute, ok);
  const fits = b > 0;
  if (!fits) {
    b = 1;
    rec = recompute === 'auto' ? true : recompute;
  }
  const buffers = [...fixed, ...layoutFor(b, rec)];
  const peakBytes = total(buffers);
  const problems: string[] = [];
  const notes: string[] = [];
  const blocked = buffers
    .filter((x) => x.scope === 'model' && / block of /.test(x.name))
    .map((x) => x.name.split(',')[0]);
  for (const name of new Set(blocked))
    notes.push(
      `${name} is over maxStorageBufferBindingSize (${fmt(bind)}): stored in row blocks of one binding each (the planned learning step binds each block)`,
    );
  if (fits && rec) {
    const keep = largestRows(shape.rows, ok(false));
    notes.push(
      `the learning step keeps only each layer's input and recomputes the layer's other activations in the backward (one more forward of all layers but the last): ` +
        (keep > 0
          ? `keeping them all would need ${Math.ceil(shape.rows / keep)} micro-batches of ${keep} rows, not ${Math.ceil(shape.rows / b)} of ${b}`
          : 'keeping them all would not fit even one row'),
    );
  }
  for (const x of buffers) {
    if (x.name === UNIFORMS) continue;
    if (x.bytes > limits.maxBufferSize)
      problems.push(
        `${x.name} is one buffer of ${fmt(x.bytes)}, over this GPU's maxBufferSize of ${fmt(limits.maxBufferSize)}`,
      );
    else if (x.bytes > bind) {
      problems.push(
        `${x.name} needs ${fmt(x.bytes)} in one binding even at one row per micro-batch, over maxStorageBufferBindingSize (${fmt(bind)})`,
      );
    }
  }
  if (peakBytes > limits.budgetBytes) {
    problems.push(
      `one row per micro-batch${rec ? ' with recompute' : ''} still needs ${fmt(peakBytes)} (weights ${fmt(total(buffers.filter((x) => x.scope === 'model')))}), over the ${fmt(limits.budgetBytes)} budget`,
    );
  }
  const bytesByScope = { model: 0, optimizer: 0, 'micro-batch': 0 } as Record<BufferScope, number>;
  for (const x of buffers) bytesByScope[x.scope] += x.bytes * x.count;
  return {
    microBatchRows: b,
    accumulationSteps: Math.ceil(shape.rows / b),
    recompute: rec,
    buffers,
    bytesByScope,
    peakBytes,
    fits: problems.length === 0,
    problems,
    notes,
  };
}
