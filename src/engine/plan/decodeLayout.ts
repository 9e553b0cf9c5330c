// The decode plan's layout, its first two steps: `decodeSizes` (pure) reads the model's description
// and the options into every size and offset the plan needs (the LoRA buffer's groups, the work and
// aux sections, the params' norms and biases, the decode attention) and checks them against the
// device's limits and the budget before anything is made; `decodeBuffers` then makes the plan and
// its buffers from those sizes and uploads what is fixed (RoPE tables, norms, biases).
import { GEMM_TILE } from './gemmTile';
import { GpuPlan, alignUp, checkPlanBuffers, type PlannedBuffer } from './plan';
import { attentionWorkgroupSize, splitKPartialFloats, SPLITK_SEGMENT, type GemvShape } from './decodeKernels';
import { PROJ_KEYS, type DecodeModelRef, type ProjKey, type VectorRef } from './modelRef';
import type { DecodeAttention } from '../options';

/**
 * Decode attention: 'whole', a workgroup (GPUs) or thread (software adapters) per (head, row)
 * walking the row's whole cache; 'splitk', flash-decoding: a workgroup per (head, row, segment of
 * SPLITK_SEGMENT slots) and a combine dispatch (one more per layer).
 */
export type { DecodeAttention };

/**
 * Cache capacity above which GPUs take split-K attention. Up to 1024 slots a (head, row)
 * workgroup walks at most four 256-slot chunks, short enough that the extra dispatch and the
 * partials' round trip would eat what splitting saves; past it that serial walk grows with the
 * cache while a decode step at batch 1 has only `heads` workgroups (9 for SmolLM2-135M) for a
 * GPU of 100+ compute units. Software adapters keep the one-thread kernel: their threads are a
 * few CPU cores, already busy. A reasoned choice, not measured (no GPU was lent).
 */
export const SPLITK_MIN_CAPACITY = 1024;

export interface DecodePlanOptions {
  /** Decode attention; default 'splitk' on the 'split' (GPU) layout when capacity exceeds SPLITK_MIN_CAPACITY, else 'whole'. */
  attention?: DecodeAttention;
  /** GEMV layout; default by adapter (software adapters get 'thread'). */
  gemv?: GemvShape;
  /**
   * GEMVs of at least this many rows take the tiled kernel where the layout is 'thread' (a
   * prefill chunk, a large batch); default TILE_MIN_ROWS. Infinity keeps the one-thread kernel.
   */
  tileMinRows?: number;
  /**
   * GEMVs of at least this many rows take the workgroup-tiled GEMM (matmul/plan_gemm_tiled.wgsl)
   * whatever the layout; default Infinity (never). The engine passes GEMM_MIN_ROWS on GPUs.
   */
  gemmMinRows?: number;
  batch: number;
  /** KV-cache slots per row (prompt + new tokens). */
  capacity: number;
  /** Tokens per run (one readback each); per-token uniform slots. */
  tokensPerRun: number;
  /** Bytes one storage binding may span; default the device's maxStorageBufferBindingSize. */
  maxBinding?: number;
  /** Bytes the plan's own buffers (caches, work, logits ...; not the weights) may hold together; default no budget. */
  memoryBudget?: number | null;
}

/** Rows from which a GEMV on a software adapter takes the tiled kernel (see matmul/plan_gemm_tile.wgsl). */
export const TILE_MIN_ROWS = 8;
/**
 * Rows from which the GPU path takes the tiled GEMM: one tile's height (32). The split GEMV keeps 8
 * rows per workgroup, so it streams every weight ceil(rows / 8) times; the tiled GEMM streams it
 * once per 32 rows but always multiplies a whole 32-row tile. From 32 rows no tile row is padding
 * (bar the last tile's) and the GEMV would read each weight 4 times or more; at 16 rows the tile
 * would do twice the multiply-adds to save one weight pass, and has 8x fewer workgroups along the
 * outputs (32 columns each against the GEMV's 4) to spread over a GPU. Reasoned from the kernels'
 * shapes, not measured on a GPU (none was lent). A prefill chunk has B x prefillChunk(B) rows, so a
 * single prompt (16 rows a chunk) stays on the GEMV; batches of 2 or more take the tiled GEMM.
 */
export const GEMM_MIN_ROWS = GEMM_TILE;

/** Prompt columns a prefill chunk holds for a batch of B rows (GEMV rows = B x chunk, at most 1024). */
export function prefillChunk(B: number): number {
  return Math.max(1, Math.min(16, Math.floor(1024 / B)));
}

/** Floats of every work section, offsets in floats (each section 256-byte aligned). */
function sections(sizes: Record<string, number>): { offsets: Record<string, number>; total: number } {
  let at = 0;
  const offsets: Record<string, number> = {};
  for (const [k, n] of Object.entries(sizes)) {
    offsets[k] = at;
    at += alignUp(n * 4) / 4;
  }
  return { offsets, total: at };
}

/** LoRA-A groups: projections that read the same input share one x·A dispatch. */
const LORA_GROUPS: { input: 'norm1' | 'attn' | 'norm2' | 'act'; projs: ProjKey[] }[] = [
  { input: 'norm1', projs: ['q', 'k', 'v'] },
  { input: 'attn', projs: ['o'] },
  { input: 'norm2', projs: ['gate', 'up'] },
  { input: 'act', projs: ['down'] },
];

/** Where a projection's LoRA A and B sit in the plan's lora buffer (floats), its rank and dims. */
export interface LoraAt {
  a: number;
  b: number;
  r: number;
  out: number;
  inp: number;
}

/** A LoRA group's A rows of one layer stacked [rows, inp] at float `off` (one x·A GEMV). */
export interface LoraGroupA {
  layer: number;
  group: number;
  off: number;
  rows: number;
  inp: number;
}

/** Where each of a layer's norms and biases sits in the params buffer (floats; undefined: absent). */
export interface LayerParams {
  norm1: number;
  norm2: number;
  attnOut: number | undefined;
  mlpOut: number | undefined;
  qNorm: number | undefined;
  kNorm: number | undefined;
  bias: Record<ProjKey, number | undefined>;
}

/** Everything the decode plan sizes from its model and options, before any GPU work. */
export interface DecodeSizes {
  B: number;
  /** Cache capacity (slots per row). */
  C: number;
  D: number;
  /** Prompt columns per prefill chunk, and the GEMV rows of a prefill chunk (B x Pc). */
  Pc: number;
  R: number;
  qDim: number;
  kvDim: number;
  tokensPerRun: number;
  /** Every RoPE's inverse frequencies (the layers' DecodeLayerRef.rope index them). */
  invFreqs: Float64Array[];
  lora: { floats: number; groups: LoraGroupA[]; at: Partial<Record<ProjKey, LoraAt>>[]; maxGroupR: number };
  /** The work buffer's sections (activations of R rows) and the aux buffer's (RoPE tables, slot masks), in floats. */
  work: { offsets: Record<string, number>; total: number };
  aux: { offsets: { pos: number; valid: number; ppos: number } & Record<string, number>; total: number };
  params: {
    floats: number;
    /** Norm and bias vectors copied into the params buffer once. */
    copies: { src: GPUBuffer; dst: number; n: number }[];
    layers: LayerParams[];
    finalNorm: number;
  };
  gemvShape: GemvShape;
  attention: DecodeAttention;
  kvBytes: number;
  partialBytes: number;
}

/** Step 1 (pure): the plan's sizes from the model and options, checked against the device's limits. */
export function decodeSizes(m: DecodeModelRef, opts: DecodePlanOptions, limits: GPUSupportedLimits): DecodeSizes {
  const { batch: B, capacity: C, tokensPerRun } = opts;
  const D = m.headDim;
  if (D % 4 !== 0) throw new Error(`decode plan: head_dim ${D} must be a multiple of 4 (RoPE pairs per workgroup)`);
  if (m.heads % m.kvHeads !== 0)
    throw new Error(`decode plan: ${m.heads} heads are not a multiple of ${m.kvHeads} kv heads`);
  if (attentionWorkgroupSize(D) > limits.maxComputeInvocationsPerWorkgroup)
    throw new Error(`decode plan: head_dim ${D} exceeds the device's workgroup size`);
  const Pc = prefillChunk(B);
  const R = B * Pc; // GEMV rows of a prefill chunk
  const qDim = m.heads * D;
  const kvDim = m.kvHeads * D;
  const lora = loraLayout(m, qDim, kvDim);

  // k before its norm, and a branch before its output norm, where the block has them
  const kNormed = m.layers.some((l) => l.kNorm);
  const outNormed = m.layers.some((l) => l.attnOutNorm || l.mlpOutNorm);
  const work = sections({
    x: R * m.hidden,
    q: R * qDim,
    a: R * qDim,
    act: R * m.intermediate,
    t: R * Math.max(1, lora.maxGroupR),
    ...(kNormed ? { k: R * kvDim } : {}),
    ...(outNormed ? { h: R * m.hidden } : {}),
  });
  const half = D / 2;
  // One cos / sin table per RoPE: 'cos', 'sin' for the first, 'cos1', 'sin1' ... after.
  const invFreqs = m.invFreqs ?? [m.invFreq];
  const tables = Object.fromEntries(
    invFreqs.flatMap((_, r) => [
      [`cos${r || ''}`, C * half],
      [`sin${r || ''}`, C * half],
    ]),
  );
  const aux = sections({ ...tables, pos: B, valid: B * C, ppos: B * C }) as DecodeSizes['aux'];
  const params = paramLayout(m);

  const gemvShape: GemvShape = opts.gemv ?? 'split';
  const attention = opts.attention ?? (gemvShape === 'split' && C > SPLITK_MIN_CAPACITY ? 'splitk' : 'whole');
  const sizes: DecodeSizes = {
    B,
    C,
    D,
    Pc,
    R,
    qDim,
    kvDim,
    tokensPerRun,
    invFreqs,
    lora,
    work,
    aux,
    params,
    gemvShape,
    attention,
    kvBytes: B * kvDim * C * 4,
    partialBytes: splitKPartialFloats(B, m.heads, D, C) * 4,
  };
  checkPlanBuffers(
    `decode plan (batch ${B}, capacity ${C})`,
    plannedBuffers(m, sizes),
    {
      maxBinding: opts.maxBinding ?? limits.maxStorageBufferBindingSize,
      maxBuffer: limits.maxBufferSize,
      budget: opts.memoryBudget ?? null,
    },
    'lower the batch or the cache capacity (prompt + new tokens)',
  );
  return sizes;
}

/**
 * The LoRA layout: per group, the A rows of its projections stacked [sum r, in] (one x·A GEMV),
 * 256-byte aligned so the GEMV can bind it as its weight; each layer's B matrices after.
 */
function loraLayout(m: DecodeModelRef, qDim: number, kvDim: number): DecodeSizes['lora'] {
  let floats = 0;
  const groups: LoraGroupA[] = [];
  const at: Partial<Record<ProjKey, LoraAt>>[] = [];
  let maxGroupR = 0;
  const inDim = (p: ProjKey) => (p === 'o' ? qDim : p === 'down' ? m.intermediate : m.hidden);
  const outDim = (p: ProjKey) =>
    p === 'q' ? qDim : p === 'k' || p === 'v' ? kvDim : p === 'gate' || p === 'up' ? m.intermediate : m.hidden;
  m.layers.forEach((_, li) => {
    const shapes = m.lora[li] ?? {};
    const layer: Partial<Record<ProjKey, LoraAt>> = {};
    LORA_GROUPS.forEach((g, gi) => {
      const rs = g.projs.map((p) => shapes[p]?.r ?? 0);
      const rows = rs.reduce((a, b) => a + b, 0);
      if (rows === 0) return;
      const inp = inDim(g.projs[0]);
      floats = alignUp(floats * 4) / 4;
      const off = floats;
      groups.push({ layer: li, group: gi, off, rows, inp });
      let row = 0;
      g.projs.forEach((p, j) => {
        if (rs[j] > 0) layer[p] = { a: off + row * inp, b: 0, r: rs[j], out: outDim(p), inp };
        row += rs[j];
      });
      floats += rows * inp;
      maxGroupR = Math.max(maxGroupR, rows);
    });
    for (const p of PROJ_KEYS) {
      const e = layer[p];
      if (!e) continue;
      e.b = floats;
      floats += e.out * e.r;
    }
    at.push(layer);
  });
  return { floats, groups, at, maxGroupR };
}

/** The params buffer: every norm and bias of the model, in layer order, copied once from its buffer. */
function paramLayout(m: DecodeModelRef): DecodeSizes['params'] {
  const copies: { src: GPUBuffer; dst: number; n: number }[] = [];
  let floats = 0;
  const param = (v: VectorRef | undefined): number | undefined => {
    if (!v) return undefined;
    const at = floats;
    copies.push({ src: v.buffer, dst: at, n: v.length });
    floats += v.length;
    return at;
  };
  const layers = m.layers.map((l) => ({
    norm1: param(l.inputNorm)!,
    norm2: param(l.postNorm)!,
    attnOut: param(l.attnOutNorm),
    mlpOut: param(l.mlpOutNorm),
    qNorm: param(l.qNorm),
    kNorm: param(l.kNorm),
    bias: Object.fromEntries(PROJ_KEYS.map((p) => [p, param(l[p].bias)])) as Record<ProjKey, number | undefined>,
  }));
  const finalNorm = param(m.norm)!;
  return { floats, copies, layers, finalNorm };
}

/** The buffers the plan makes, with where each size comes from (what a refusal names). */
function plannedBuffers(m: DecodeModelRef, s: DecodeSizes): PlannedBuffer[] {
  const { B, C, D, R } = s;
  const planned: PlannedBuffer[] = [
    ...m.layers.flatMap((_, l) =>
      ['k', 'v'].map((kv) => ({
        name: `${kv}${l}`,
        bytes: s.kvBytes,
        size: `${kv === 'k' ? 'key' : 'value'} cache of layer ${l}: batch ${B} x ${m.kvHeads} kv heads x capacity ${C} x head_dim ${D} x 4`,
      })),
    ),
    { name: 'logits', bytes: B * m.vocab * 4, size: `batch ${B} x vocabulary ${m.vocab} x 4` },
    { name: 'scaled', bytes: B * m.vocab * 4, size: `batch ${B} x vocabulary ${m.vocab} x 4` },
    { name: 'work', bytes: s.work.total * 4, size: `${R} prefill rows of activations` },
    { name: 'aux', bytes: s.aux.total * 4, size: `RoPE tables and slot masks for capacity ${C}` },
    { name: 'prompt ids', bytes: B * C * 4, size: `batch ${B} x capacity ${C} x 4` },
    { name: 'lora', bytes: s.lora.floats * 4 },
    { name: 'params', bytes: s.params.floats * 4 },
  ];
  if (s.attention === 'splitk')
    planned.push({
      name: 'attention partials',
      bytes: s.partialBytes,
      size: `split-K: batch ${B} x ${m.heads} heads x ${Math.ceil(C / SPLITK_SEGMENT)} segments x (head_dim + 2) x 4`,
    });
  return planned;
}

/** Step 2: the plan and every buffer of the sizes, with the RoPE tables written and the norms and biases copied in. */
export function decodeBuffers(device: GPUDevice, m: DecodeModelRef, s: DecodeSizes) {
  const { B, C, Pc, tokensPerRun } = s;
  // Per-token uniform slots: the decode run's tokens, then one per prefill chunk.
  const plan = new GpuPlan(device, tokensPerRun + Math.ceil(C / Pc), `decode B${B} C${C}`, true);
  const lora = plan.buffer('lora', s.lora.floats * 4);
  const work = plan.buffer('work', s.work.total * 4);
  const aux = plan.buffer('aux', s.aux.total * 4);
  device.queue.writeBuffer(aux, 0, ropeTables(s));
  // key and value caches per layer, [B, nKV, capacity, D] float32
  const kCache: GPUBuffer[] = [];
  const vCache: GPUBuffer[] = [];
  for (let l = 0; l < m.layers.length; l++) {
    kCache.push(plan.buffer(`k${l}`, s.kvBytes));
    vCache.push(plan.buffer(`v${l}`, s.kvBytes));
  }
  const logits = plan.buffer('logits', B * m.vocab * 4);
  const scaled = plan.buffer('scaled', B * m.vocab * 4);
  const ids = plan.buffer('ids', B * 4);
  const promptIds = plan.buffer('prompt ids', B * C * 4);
  const streams = plan.buffer('streams', B * 4);
  const stats = plan.buffer('stats', B * 2 * 4);
  const record = plan.buffer('record', tokensPerRun * B * 3 * 4);
  const timer = device.features.has('timestamp-query')
    ? {
        // [0, 1] around a run's pass, [2, 3] around a prefill's
        set: device.createQuerySet({ type: 'timestamp', count: 4 }),
        resolve: plan.buffer('timestamps', 32, GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC),
        read: plan.buffer('timestamps readback', 32, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST),
      }
    : null;
  const readback = plan.buffer('readback', tokensPerRun * B * 3 * 4, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);

  const params = plan.buffer('params', s.params.floats * 4);
  const enc = device.createCommandEncoder();
  for (const c of s.params.copies) enc.copyBufferToBuffer(c.src, 0, params, c.dst * 4, c.n * 4);
  device.queue.submit([enc.finish()]);
  // split-K attention's partials (null: whole attention)
  const partials = s.attention === 'splitk' ? plan.buffer('attention partials', s.partialBytes) : null;
  return {
    plan,
    lora,
    work,
    aux,
    kCache,
    vCache,
    logits,
    scaled,
    ids,
    promptIds,
    streams,
    stats,
    record,
    timer,
    readback,
    params,
    partials,
  };
}

/** The plan and its buffers (step 2). */
export type DecodeBuffers = ReturnType<typeof decodeBuffers>;

/** The aux buffer's first sections: cos and sin of every RoPE at every cache slot's position. */
function ropeTables(s: DecodeSizes): Float32Array {
  const { C, D } = s;
  const half = D / 2;
  const cosSin = new Float32Array(s.aux.total);
  s.invFreqs.forEach((inv, r) => {
    const [cos, sin] = [s.aux.offsets[`cos${r || ''}`], s.aux.offsets[`sin${r || ''}`]];
    for (let pos = 0; pos < C; pos++) {
      for (let j = 0; j < half; j++) {
        const angle = pos * inv[j];
        cosSin[cos + pos * half + j] = Math.cos(angle);
        cosSin[sin + pos * half + j] = Math.sin(angle);
      }
    }
  });
  return cosSin;
}
