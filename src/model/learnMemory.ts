// The learn-memory planner (issue 21, step 5): from the model's dims, its weight format, the LoRA
// shape, the learn batch and the device's limits, the buffers one LoRA learning step allocates,
// their peak, and the micro-batch rows, gradient-accumulation count and activation recompute that
// keep the peak inside the memory budget and every buffer inside one storage binding.
// Pure (no tfjs, no GPU): the page's fit check and the device panel read it before loading.
//
// What a step holds, by scope:
//   model       frozen weights (embedding, each projection in its format, norms, biases)
//   optimizer   LoRA parameters, their gradients (accumulated over micro-batches) and AdamW's two
//               moments, one flat f32 buffer each (src/engine/plan/adamwPlan.ts), plus its readback
//               staging; buffers under 4 KiB (uniforms, the norm's partials) are left out
//   micro-batch per layer for backprop (b rows of L = prompt + response - 1 positions, N = b L):
//               the layer input, and, for every layer or (recompute) only the one being
//               recomputed: both norm outputs, q, k, v, the attention probabilities [b, heads, L, L]
//               and output, the MLP input, gate, up and their product, the LoRA x Aᵀ of the
//               layer's targets and the two RMS inverses; the backward's gradient scratch (two
//               hidden-wide, two MLP-wide, the probabilities' and q/k/v's); the final hidden state
//               of the response rows, the LM head's logits and their gradient over a chunk of
//               response rows that fits one binding, token statistics and the batch's inputs.
import type { ModelConfig } from './config.ts';
import type { ProjName } from './llama.ts';
import { projectionBytes, type WeightFormat } from './weightFormat.ts';

const F32 = 4;
/** The AdamW plan's state readback staging is at most this size (adamwPlan.ts STAGING_BYTES). */
const STAGING_BYTES = 4 * 2 ** 20;
/**
 * Most response rows the LM head and its gradient take per pass: enough rows to keep a GEMM busy,
 * few enough that a 150k vocabulary's logits (0.6 MB a row) do not crowd out the micro-batch.
 */
const HEAD_ROWS = 512;

/** The dims the planner reads (a parsed config.json has them all). */
export type LearnModelDims = Pick<ModelConfig, 'vocabSize' | 'hiddenSize' | 'intermediateSize' | 'numLayers' | 'numHeads' | 'numKvHeads' | 'headDim' | 'tieWordEmbeddings' | 'qkvBias' | 'oBias' | 'mlpBias'>;

export interface LearnLoraShape {
  r: number;
  targets: readonly ProjName[];
  /** Adapted layers; default all. */
  layers?: readonly number[];
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
}

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
  /** Response rows the LM head and its gradient take per pass (one binding's worth). */
  headChunkRows: number;
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
  const out: PlannedBuffer[] = [{ name: `${name}, block of ${per} rows (of ${blocks})`, scope: 'model', bytes: per * rowBytes, count: full * count }];
  if (rest > 0) out.push({ name: `${name}, last block of ${rest} rows`, scope: 'model', bytes: rest * rowBytes, count });
  return out;
}

function modelBuffers(c: LearnModelDims, format: WeightFormat, bind: number): PlannedBuffer[] {
  const H = c.hiddenSize;
  const Lyr = c.numLayers;
  const s = projShapes(c);
  const proj = (label: string, p: ProjName, count: number) => weight(`${label} (${format})`, s[p][0], projectionBytes(format, 1, s[p][1]), count, bind);
  const Q = c.numHeads * c.headDim;
  const KV = c.numKvHeads * c.headDim;
  const I = c.intermediateSize;
  const out: PlannedBuffer[] = weight('embedding (f32)', c.vocabSize, H * F32, 1, bind);
  if (!c.tieWordEmbeddings) out.push(...weight(`lm_head (${format})`, c.vocabSize, projectionBytes(format, 1, H), 1, bind));
  out.push(
    ...proj('q_proj', 'q', Lyr),
    ...proj('k_proj, v_proj', 'k', 2 * Lyr),
    ...proj('o_proj', 'o', Lyr),
    ...proj('gate_proj, up_proj', 'gate', 2 * Lyr),
    ...proj('down_proj', 'down', Lyr),
    { name: 'norm weights', scope: 'model', bytes: H * F32, count: 2 * Lyr + 1 },
  );
  if (c.qkvBias) out.push({ name: 'q/k/v biases', scope: 'model', bytes: (Q + 2 * KV) * F32, count: Lyr });
  if (c.oBias) out.push({ name: 'o bias', scope: 'model', bytes: H * F32, count: Lyr });
  if (c.mlpBias) out.push({ name: 'mlp biases', scope: 'model', bytes: (2 * I + H) * F32, count: Lyr });
  return out.filter((x) => x.count > 0);
}

function optimizerBuffers(c: LearnModelDims, lora: LearnLoraShape): PlannedBuffer[] {
  const bytes = loraParamCount(c, lora) * F32;
  return [
    { name: 'LoRA parameters (flat)', scope: 'optimizer', bytes, count: 1 },
    { name: 'LoRA gradients (flat, accumulated)', scope: 'optimizer', bytes, count: 1 },
    { name: 'AdamW moments m, v', scope: 'optimizer', bytes, count: 2 },
    { name: 'optimizer state readback', scope: 'optimizer', bytes: Math.min(bytes, STAGING_BYTES), count: 1 },
  ];
}

function microBatchBuffers(c: LearnModelDims, lora: LearnLoraShape, shape: LearnBatchShape, b: number, recompute: boolean, headRows: number): PlannedBuffer[] {
  const H = c.hiddenSize;
  const Q = c.numHeads * c.headDim;
  const KV = c.numKvHeads * c.headDim;
  const I = c.intermediateSize;
  const T = shape.responseLen;
  const L = shape.promptLen + T - 1;
  const N = b * L;
  const full = recompute ? 1 : c.numLayers;
  const adapted = recompute ? Math.min(1, adaptedLayers(c, lora)) : adaptedLayers(c, lora);
  const mb = (name: string, bytes: number, count: number): PlannedBuffer => ({ name, scope: 'micro-batch', bytes, count });
  const probs = b * c.numHeads * L * L * F32;
  return [
    mb('layer inputs (kept)', N * H * F32, c.numLayers),
    mb('attention norm outputs', N * H * F32, full),
    mb('q', N * Q * F32, full),
    mb('k, v', N * KV * F32, 2 * full),
    mb('attention probabilities', probs, full),
    mb('attention outputs', N * Q * F32, full),
    mb('MLP inputs', N * H * F32, full),
    mb('MLP norm outputs', N * H * F32, full),
    mb('gate, up, act(gate) x up', N * I * F32, 3 * full),
    mb('LoRA x Aᵀ', N * lora.r * lora.targets.length * F32, adapted),
    mb('RMS inverses', N * 2 * F32, full),
    mb('grad: hidden', N * H * F32, 2),
    mb('grad: MLP', N * I * F32, 2),
    mb('grad: attention probabilities', probs, 1),
    mb('grad: q, k, v', N * (Q + 2 * KV) * F32, 1),
    mb('final hidden (response rows)', b * T * H * F32, 1),
    mb('LM head logits, their gradient', headRows * c.vocabSize * F32, 2),
    mb('token statistics', b * T * 3 * F32, 1),
    mb('batch inputs', N * 2 * F32 + b * T * 6 * F32, 1),
  ].filter((x) => x.count > 0 && x.bytes > 0);
}

const total = (bs: PlannedBuffer[]) => bs.reduce((s, x) => s + x.bytes * x.count, 0);

const MiB = 2 ** 20;
const fmt = (n: number) => (n >= 2 ** 30 ? `${(n / 2 ** 30).toFixed(2)} GiB` : `${(n / MiB).toFixed(1)} MiB`);

function check(shape: LearnBatchShape, lora: LearnLoraShape, c: LearnModelDims, limits: LearnLimits): void {
  const whole = (x: number) => Number.isSafeInteger(x) && x > 0;
  for (const [k, v] of Object.entries({ rows: shape.rows, promptLen: shape.promptLen, responseLen: shape.responseLen, r: lora.r })) {
    if (!whole(v)) throw new Error(`learn memory: ${k} must be a positive integer, got ${v}`);
  }
  for (const [k, v] of Object.entries(limits)) if (!(v > 0)) throw new Error(`learn memory: ${k} must be positive, got ${v}`);
  for (const i of lora.layers ?? []) if (!Number.isInteger(i) || i < 0 || i >= c.numLayers) throw new Error(`learn memory: LoRA layer ${i} does not exist (the model has ${c.numLayers})`);
}

/**
 * Plans one learning step's memory. `recompute`: 'auto' keeps every layer's activations when the
 * whole batch fits as one micro-batch that way; otherwise it recomputes each layer in the
 * backward when that allows larger micro-batches (fewer accumulation passes).
 */
export function planLearnMemory(c: LearnModelDims, format: WeightFormat, lora: LearnLoraShape, shape: LearnBatchShape, limits: LearnLimits, recompute: boolean | 'auto' = 'auto'): LearnMemoryPlan {
  check(shape, lora, c, limits);
  const bind = limits.maxStorageBufferBindingSize;
  const fixed = [...modelBuffers(c, format, bind), ...optimizerBuffers(c, lora)];
  const fixedBytes = total(fixed);
  const rowBytes = c.vocabSize * F32;
  if (rowBytes > bind) throw new Error(`learn memory: one row of logits (${c.vocabSize} x 4 bytes) is over maxStorageBufferBindingSize (${bind})`);
  const headRowsFor = (b: number) => Math.max(1, Math.min(b * shape.responseLen, HEAD_ROWS, Math.floor(bind / rowBytes)));
  const layoutFor = (b: number, rec: boolean) => microBatchBuffers(c, lora, shape, b, rec, headRowsFor(b));
  const ok = (b: number, rec: boolean) => {
    const bs = layoutFor(b, rec);
    return fixedBytes + total(bs) <= limits.budgetBytes && bs.every((x) => x.bytes <= bind);
  };
  // The peak grows with b: the largest b that passes (0: none does).
  const largest = (rec: boolean) => {
    let lo = 0;
    let hi = shape.rows;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (ok(mid, rec)) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  let rec: boolean;
  let b: number;
  if (recompute !== 'auto') {
    rec = recompute;
    b = largest(rec);
  } else {
    const keep = largest(false);
    const again = keep === shape.rows ? keep : largest(true);
    rec = again > keep;
    b = rec ? again : keep;
  }
  const fits = b > 0;
  if (!fits) {
    b = 1;
    rec = recompute === 'auto' ? true : recompute;
  }
  const buffers = [...fixed, ...layoutFor(b, rec)];
  const peakBytes = total(buffers);
  const problems: string[] = [];
  const notes: string[] = [];
  const blocked = buffers.filter((x) => x.scope === 'model' && / block of /.test(x.name)).map((x) => x.name.split(',')[0]);
  for (const name of new Set(blocked)) notes.push(`${name} is over maxStorageBufferBindingSize (${fmt(bind)}): stored in row blocks of one binding each`);
  for (const x of buffers) {
    if (x.bytes > limits.maxBufferSize) problems.push(`${x.name} is one buffer of ${fmt(x.bytes)}, over this GPU's maxBufferSize of ${fmt(limits.maxBufferSize)}`);
    else if (x.bytes > bind) {
      problems.push(`${x.name} needs ${fmt(x.bytes)} in one binding even at one row per micro-batch, over maxStorageBufferBindingSize (${fmt(bind)})`);
    }
  }
  if (peakBytes > limits.budgetBytes) {
    problems.push(`one row per micro-batch${rec ? ' with recompute' : ''} still needs ${fmt(peakBytes)} (weights ${fmt(total(buffers.filter((x) => x.scope === 'model')))}), over the ${fmt(limits.budgetBytes)} budget`);
  }
  const bytesByScope = { model: 0, optimizer: 0, 'micro-batch': 0 } as Record<BufferScope, number>;
  for (const x of buffers) bytesByScope[x.scope] += x.bytes * x.count;
  return {
    microBatchRows: b,
    accumulationSteps: Math.ceil(shape.rows / b),
    recompute: rec,
    headChunkRows: headRowsFor(b),
    buffers,
    bytesByScope,
    peakBytes,
    fits: problems.length === 0,
    problems,
    notes,
  };
}
