// The decode planner: from a description of a decoder-only model (dimensions and the GPU buffers
// of its weights; it knows no model names), a batch size and a cache capacity, it builds once
// every buffer, pipeline and bind group of a cached decode step, and then runs tokens as replays:
// per run of n tokens one write of n uniform slots, one compute pass, one submit and one
// readback of n x B x (id, log-prob, entropy).
//
// Per token, in one pass:
//   sample   sample (sample/op.wgsl), token statistics (token-stats/op.wgsl), embed + record
//   layers   per layer: [x·A for LoRA] q(+norm, RoPE), k(+norm, RoPE, cache), v(+norm, cache),
//            attention, [a·A] o(+residual), [x·A] gate+up(+norm, SwiGLU), [act·A] down(+residual)
//            (attention is two dispatches where it is split-K: segments, then their combine)
//   head     final norm + LM head (row blocks), writing the logits and the scaled logits
// 7 dispatches per layer (8 with split-K attention) and 4 + head blocks per token without LoRA;
// each adapted input adds one small x·A dispatch (up to 4 per layer).
//
// The prompt goes through the same kernels as a prefill: chunks of `prefillChunk(B)` prompt
// columns of every row at once (GEMV rows = B x chunk), each row's RoPE position read from a
// (row, slot) table so left pads do not advance it, attention causal within the chunk, and the
// LM head on the chunk's last column only:
//   pembed   prompt ids of the chunk's columns -> x
//   players  the layers above over B x chunk rows, keys and values written into the cache
//   phead    final norm + LM head of each row's last prompt column
import { GEMM_TILE } from './gemmTile';
import { GpuPlan, alignUp, checkPlanBuffers, type BufferRange, type PhaseAt, type PlannedBuffer } from './plan';
import {
  GemvMode,
  gemvMaxRows,
  attentionKernel,
  attentionThreadKernel,
  attentionSplitKKernel,
  attentionCombineKernel,
  splitKPartialFloats,
  SPLITK_SEGMENT,
  ATT_THREAD_WG,
  attentionWorkgroupSize,
  embedKernel,
  gemvKernel,
  headNormRopeKernel,
  normAddKernel,
  packHeadNorm,
  packNormAdd,
  gemvWorkgroupsX,
  packAtt,
  packEmb,
  packGemv,
  packTok,
  sampleKernel,
  statsKernel,
  type GemvLayout,
  type GemvShape,
  type GemvUniform,
  type WeightKind,
} from './decodeKernels';
import { DYN_SLOT_BYTES } from './plan';
import { submitFlopBudget, type DecodeAttention } from '../options';
import type { MlpActivation } from '../../contract/modelFamily';

/** A weight matrix [rows, cols] (PyTorch nn.Linear layout) on the device. */
export type WeightRef =
  | { kind: 'f32'; rows: number; cols: number; buffer: GPUBuffer }
  | {
      kind: Exclude<WeightKind, 'f32'>;
      rows: number;
      cols: number;
      groupSize: number;
      words: GPUBuffer;
      scales: GPUBuffer;
    };

/** A float32 vector on the device (a norm weight or a bias). */
export interface VectorRef {
  buffer: GPUBuffer;
  length: number;
}

/** A LoRA branch: A [r, in], B [out, r] (float32 device buffers), scale s. */
export interface LoraRef {
  A: GPUBuffer;
  B: GPUBuffer;
  r: number;
  scale: number;
}

export interface ProjectionRef {
  weight: WeightRef;
  bias?: VectorRef;
  /** All row blocks of a weight held in several (`weight` is the first); the learn plan takes them, the decode plan does not. */
  blocks?: WeightRef[];
}

export type ProjKey = 'q' | 'k' | 'v' | 'o' | 'gate' | 'up' | 'down';
export const PROJ_KEYS: readonly ProjKey[] = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'];

/**
 * A layer as the planner runs it: the block of the model's description (contract/blockDescription.ts)
 * read into the planned shape `x += post1(attention(pre1 x)); x += post2(mlp(pre2 x))`. The
 * optional parts are absent on the Llama block, whose dispatches they leave unchanged.
 */
export interface DecodeLayerRef extends Record<ProjKey, ProjectionRef> {
  /** The pre-norms of the attention and the MLP branch. */
  inputNorm: VectorRef;
  postNorm: VectorRef;
  /** Norms of each branch's output before its residual add (Gemma 3); absent: none. */
  attnOutNorm?: VectorRef;
  mlpOutNorm?: VectorRef;
  /** Per-head q and k norms ([head_dim]) before RoPE (Qwen3, Gemma 3); absent: none. */
  qNorm?: VectorRef;
  kNorm?: VectorRef;
  /** Index into DecodeModelRef.invFreqs (default 0). */
  rope?: number;
  /** Key slots a query sees, itself included (null / absent: all). */
  window?: number | null;
  /** Multiplies q.k (default head_dim^-1/2). */
  attnScale?: number;
}

export interface DecodeModelRef {
  hidden: number;
  intermediate: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  vocab: number;
  eps: number;
  /** RoPE inverse frequencies (float64). */
  invFreq: Float64Array;
  /** Every RoPE the layers name (DecodeLayerRef.rope); absent: [invFreq]. */
  invFreqs?: Float64Array[];
  /** x = embed[ids] * embedScale (default 1). */
  embedScale?: number;
  /** The MLP's gate activation (default SiLU). */
  activation?: MlpActivation;
  /** Embedding table [vocab, hidden] in row blocks (float32). */
  embed: { rowStart: number; rows: number; buffer: GPUBuffer }[];
  layers: DecodeLayerRef[];
  norm: VectorRef;
  /** LM head [vocab, hidden] in row blocks. */
  head: WeightRef[];
  /** Rank and scale of the LoRA branch per layer and projection (absent: none); fixes the layout. */
  lora: Partial<Record<ProjKey, { r: number; scale: number }>>[];
}

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

export interface RunSampling {
  temperature: number;
  topK: number;
  topP: number;
  seedLo: number;
  seedHi: number;
}

/** Inputs of one generation: positions and valid slots after the prefill, streams, sampling. */
/** Prompt columns a prefill chunk holds for a batch of B rows (GEMV rows = B x chunk, at most 1024). */
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

export function prefillChunk(B: number): number {
  return Math.max(1, Math.min(16, Math.floor(1024 / B)));
}

/** A planned prefill's input: the left-padded prompts and what the decode after it needs. */
export interface PromptBegin extends Omit<DecodeBegin, 'prefill' | 'basePos' | 'slotValid'> {
  /** [B][P] left-padded prompt ids and their 0/1 mask (1: a real token). */
  ids: ArrayLike<number>[];
  mask: ArrayLike<number>[];
  /** Id of the extra left pads that round P up to whole chunks. */
  pad: number;
}

export interface DecodeBegin {
  /** Slots the prefill filled (the same for every row: rows are left-padded). */
  prefill: number;
  /** Per row: RoPE position of its first generated token (its real prompt tokens). */
  basePos: ArrayLike<number>;
  /** Per row: 1 where a prefill slot holds a real token ([B][prefill] at least). */
  slotValid: ArrayLike<number>[];
  streams: ArrayLike<number>;
  sampling: RunSampling;
  loraOn: boolean;
  /** LoRA branches per layer and projection, matching the model's `lora` shapes (copied into the plan). */
  lora?: Partial<Record<ProjKey, LoraRef>>[];
}

/** The GPU failed under a plan (device lost, out of memory, a rejected command): nothing it ran is usable. */
export class PlanGpuError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PlanGpuError';
  }
}

const lostDevices = new WeakMap<GPUDevice, string>();
const watched = new WeakSet<GPUDevice>();

/** Remembers why a device was lost, so every plan on it fails with that reason instead of hanging. */
function watchDevice(device: GPUDevice): void {
  if (watched.has(device)) return;
  watched.add(device);
  void device.lost.then((info) => lostDevices.set(device, `${info.reason}: ${info.message}`));
}

export function deviceLostReason(device: GPUDevice): string | null {
  return lostDevices.get(device) ?? null;
}

function specOf(w: WeightRef): { kind: WeightKind; groupSize?: number } {
  return w.kind === 'f32' ? { kind: 'f32' } : { kind: w.kind, groupSize: w.groupSize };
}

function weightBindings(w: WeightRef): BufferRange[] {
  return w.kind === 'f32' ? [{ buffer: w.buffer }] : [{ buffer: w.words }, { buffer: w.scales }];
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

export class DecodePlan {
  readonly plan: GpuPlan;
  readonly gemvShape: GemvShape;
  /** The decode steps' attention (a prefill chunk's always walks whole: its B x chunk rows already fill a GPU). */
  readonly attention: DecodeAttention;
  /** Key and value caches per layer, [B, nKV, capacity, D] float32 (the tfjs cache layout). */
  readonly kCache: GPUBuffer[] = [];
  readonly vCache: GPUBuffer[] = [];
  /** Logits [B, V] the sampler reads, and logits / statT the statistics read. */
  readonly logits: GPUBuffer;
  readonly scaled: GPUBuffer;
  private readonly aux: GPUBuffer;
  private readonly streams: GPUBuffer;
  private readonly record: GPUBuffer;
  private readonly readback: GPUBuffer;
  private readonly loraBuf: GPUBuffer;
  private readonly ids: GPUBuffer;
  private readonly auxOff: { pos: number; valid: number; ppos: number } & Record<string, number>;
  /** Prompt columns per prefill chunk, and the prompt ids table [B, capacity] the prefill embeds. */
  readonly chunk: number;
  private readonly promptIds: GPUBuffer;
  /** Validation and out-of-memory scopes of the last prefill, checked by the next run. */
  private prefillScopes: Promise<[GPUError | null, GPUError | null]> | null = null;
  private prefillTimed = false;
  /** Submits the last planned prefill was cut into (EngineOptions.submitBudgetMs). */
  lastPrefillSubmits = 0;
  /** GPU milliseconds of the last planned prefill (null without timestamp queries or none run). */
  lastPrefillGpuMs: number | null = null;
  /** Where each LoRA A and B goes in the plan's lora buffer (floats), per layer and projection. */
  private readonly loraAt: Partial<Record<ProjKey, { a: number; b: number; r: number; out: number; inp: number }>>[] =
    [];
  private begun: (DecodeBegin & { statT: number }) | null = null;
  /** Timestamp queries around each run's pass, where the device has them (GPU time per token). */
  private readonly timer: { set: GPUQuerySet; resolve: GPUBuffer; read: GPUBuffer } | null = null;
  /** GPU milliseconds of the last run's compute pass (null without timestamp queries). */
  lastGpuMs: number | null = null;
  private busy = false;
  /** Whether the GPU has accepted every buffer, pipeline and bind group of the plan (checked before the first run). */
  private accepted = false;

  constructor(
    readonly device: GPUDevice,
    readonly model: DecodeModelRef,
    readonly opts: DecodePlanOptions,
  ) {
    const m = model;
    const { batch: B, capacity: C, tokensPerRun } = opts;
    watchDevice(device);
    const D = m.headDim;
    if (D % 4 !== 0) throw new Error(`decode plan: head_dim ${D} must be a multiple of 4 (RoPE pairs per workgroup)`);
    if (m.heads % m.kvHeads !== 0)
      throw new Error(`decode plan: ${m.heads} heads are not a multiple of ${m.kvHeads} kv heads`);
    if (attentionWorkgroupSize(D) > device.limits.maxComputeInvocationsPerWorkgroup)
      throw new Error(`decode plan: head_dim ${D} exceeds the device's workgroup size`);
    const maxBinding = opts.maxBinding ?? device.limits.maxStorageBufferBindingSize;
    const Pc = (this.chunk = prefillChunk(B));
    const R = B * Pc; // GEMV rows of a prefill chunk
    const qDim = m.heads * D;
    const kvDim = m.kvHeads * D;

    // --- LoRA layout: per group, the A rows of its projections stacked [sum r, in] (one x·A
    // GEMV), 256-byte aligned so the GEMV can bind it as its weight; B matrices after.
    let loraFloats = 0;
    const groupA: { layer: number; group: number; off: number; rows: number; inp: number }[] = [];
    let maxGroupR = 0;
    const inDim = (p: ProjKey) => (p === 'o' ? qDim : p === 'down' ? m.intermediate : m.hidden);
    const outDim = (p: ProjKey) =>
      p === 'q' ? qDim : p === 'k' || p === 'v' ? kvDim : p === 'gate' || p === 'up' ? m.intermediate : m.hidden;
    m.layers.forEach((_, li) => {
      const shapes = m.lora[li] ?? {};
      const at: (typeof this.loraAt)[number] = {};
      LORA_GROUPS.forEach((g, gi) => {
        const rs = g.projs.map((p) => shapes[p]?.r ?? 0);
        const rows = rs.reduce((a, b) => a + b, 0);
        if (rows === 0) return;
        const inp = inDim(g.projs[0]);
        loraFloats = alignUp(loraFloats * 4) / 4;
        const off = loraFloats;
        groupA.push({ layer: li, group: gi, off, rows, inp });
        let row = 0;
        g.projs.forEach((p, j) => {
          if (rs[j] > 0) at[p] = { a: off + row * inp, b: 0, r: rs[j], out: outDim(p), inp };
          row += rs[j];
        });
        loraFloats += rows * inp;
        maxGroupR = Math.max(maxGroupR, rows);
      });
      for (const p of PROJ_KEYS) {
        const e = at[p];
        if (!e) continue;
        e.b = loraFloats;
        loraFloats += e.out * e.r;
      }
      this.loraAt.push(at);
    });

    // --- sizes, checked against the device's limits (and the budget) before anything is made
    // k before its norm, and a branch before its output norm, where the block has them
    const kNormed = m.layers.some((l) => l.kNorm);
    const outNormed = m.layers.some((l) => l.attnOutNorm || l.mlpOutNorm);
    const work = sections({
      x: R * m.hidden,
      q: R * qDim,
      a: R * qDim,
      act: R * m.intermediate,
      t: R * Math.max(1, maxGroupR),
      ...(kNormed ? { k: R * kvDim } : {}),
      ...(outNormed ? { h: R * m.hidden } : {}),
    });
    const W = work.offsets;
    const half = D / 2;
    // One cos / sin table per RoPE: 'cos', 'sin' for the first, 'cos1', 'sin1' ... after.
    const invFreqs = m.invFreqs ?? [m.invFreq];
    const tables = Object.fromEntries(
      invFreqs.flatMap((_, r) => [
        [`cos${r || ''}`, C * half],
        [`sin${r || ''}`, C * half],
      ]),
    );
    const aux = sections({ ...tables, pos: B, valid: B * C, ppos: B * C });
    this.auxOff = aux.offsets as typeof this.auxOff;

    // --- params: norms and biases, copied once from the model's buffers
    const copies: { src: GPUBuffer; dst: number; n: number }[] = [];
    let pf = 0;
    const param = (v: VectorRef | undefined): number | undefined => {
      if (!v) return undefined;
      const at = pf;
      copies.push({ src: v.buffer, dst: at, n: v.length });
      pf += v.length;
      return at;
    };
    const layerParams = m.layers.map((l) => ({
      norm1: param(l.inputNorm)!,
      norm2: param(l.postNorm)!,
      attnOut: param(l.attnOutNorm),
      mlpOut: param(l.mlpOutNorm),
      qNorm: param(l.qNorm),
      kNorm: param(l.kNorm),
      bias: Object.fromEntries(PROJ_KEYS.map((p) => [p, param(l[p].bias)])) as Record<ProjKey, number | undefined>,
    }));
    const finalNorm = param(m.norm)!;

    const shape: GemvShape = opts.gemv ?? 'split';
    this.gemvShape = shape;
    const attention = (this.attention =
      opts.attention ?? (shape === 'split' && C > SPLITK_MIN_CAPACITY ? 'splitk' : 'whole'));
    const partialBytes = splitKPartialFloats(B, m.heads, D, C) * 4;
    const kvBytes = B * kvDim * C * 4;
    const planned: PlannedBuffer[] = [
      ...m.layers.flatMap((_, l) =>
        ['k', 'v'].map((kv) => ({
          name: `${kv}${l}`,
          bytes: kvBytes,
          size: `${kv === 'k' ? 'key' : 'value'} cache of layer ${l}: batch ${B} x ${m.kvHeads} kv heads x capacity ${C} x head_dim ${D} x 4`,
        })),
      ),
      { name: 'logits', bytes: B * m.vocab * 4, size: `batch ${B} x vocabulary ${m.vocab} x 4` },
      { name: 'scaled', bytes: B * m.vocab * 4, size: `batch ${B} x vocabulary ${m.vocab} x 4` },
      { name: 'work', bytes: work.total * 4, size: `${R} prefill rows of activations` },
      { name: 'aux', bytes: aux.total * 4, size: `RoPE tables and slot masks for capacity ${C}` },
      { name: 'prompt ids', bytes: B * C * 4, size: `batch ${B} x capacity ${C} x 4` },
      { name: 'lora', bytes: loraFloats * 4 },
      { name: 'params', bytes: pf * 4 },
    ];
    if (attention === 'splitk')
      planned.push({
        name: 'attention partials',
        bytes: partialBytes,
        size: `split-K: batch ${B} x ${m.heads} heads x ${Math.ceil(C / SPLITK_SEGMENT)} segments x (head_dim + 2) x 4`,
      });
    checkPlanBuffers(
      `decode plan (batch ${B}, capacity ${C})`,
      planned,
      { maxBinding, maxBuffer: device.limits.maxBufferSize, budget: opts.memoryBudget ?? null },
      'lower the batch or the cache capacity (prompt + new tokens)',
    );

    // --- buffers
    // Per-token uniform slots: the decode run's tokens, then one per prefill chunk.
    const plan = (this.plan = new GpuPlan(device, tokensPerRun + Math.ceil(C / Pc), `decode B${B} C${C}`, true));
    this.loraBuf = plan.buffer('lora', loraFloats * 4);
    const workBuf = plan.buffer('work', work.total * 4);
    this.aux = plan.buffer('aux', aux.total * 4);
    const cosSin = new Float32Array(aux.total);
    invFreqs.forEach((inv, r) => {
      const [cos, sin] = [this.auxOff[`cos${r || ''}`], this.auxOff[`sin${r || ''}`]];
      for (let pos = 0; pos < C; pos++) {
        for (let j = 0; j < half; j++) {
          const angle = pos * inv[j];
          cosSin[cos + pos * half + j] = Math.cos(angle);
          cosSin[sin + pos * half + j] = Math.sin(angle);
        }
      }
    });
    device.queue.writeBuffer(this.aux, 0, cosSin);
    for (let l = 0; l < m.layers.length; l++) {
      this.kCache.push(plan.buffer(`k${l}`, kvBytes));
      this.vCache.push(plan.buffer(`v${l}`, kvBytes));
    }
    this.logits = plan.buffer('logits', B * m.vocab * 4);
    this.scaled = plan.buffer('scaled', B * m.vocab * 4);
    const ids = plan.buffer('ids', B * 4);
    this.promptIds = plan.buffer('prompt ids', B * C * 4);
    this.streams = plan.buffer('streams', B * 4);
    const stats = plan.buffer('stats', B * 2 * 4);
    this.record = plan.buffer('record', tokensPerRun * B * 3 * 4);
    this.ids = ids;
    if (device.features.has('timestamp-query')) {
      this.timer = {
        // [0, 1] around a run's pass, [2, 3] around a prefill's
        set: device.createQuerySet({ type: 'timestamp', count: 4 }),
        resolve: plan.buffer('timestamps', 32, GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC),
        read: plan.buffer('timestamps readback', 32, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST),
      };
    }
    this.readback = plan.buffer(
      'readback',
      tokensPerRun * B * 3 * 4,
      GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    );

    const params = plan.buffer('params', pf * 4);
    const enc = device.createCommandEncoder();
    for (const c of copies) enc.copyBufferToBuffer(c.src, 0, params, c.dst * 4, c.n * 4);
    device.queue.submit([enc.finish()]);

    // --- the dispatches
    const partials = attention === 'splitk' ? plan.buffer('attention partials', partialBytes) : null;
    const common = { work: { buffer: workBuf }, params: { buffer: params }, lora: { buffer: this.loraBuf } };
    const tileMin = opts.tileMinRows ?? TILE_MIN_ROWS;
    const gemmMin = opts.gemmMinRows ?? Infinity;
    const layoutFor = (u: GemvUniform): GemvLayout =>
      u.rows >= gemmMin
        ? 'gemm'
        : shape === 'thread' && u.rows >= tileMin && [u.K, u.xOff, u.xStride].every((n) => n % 4 === 0)
          ? 'tile'
          : shape;
    const gemv = (
      phase: string,
      mode: GemvMode,
      w: WeightRef,
      u: GemvUniform,
      extra: BufferRange[] = [],
      w2?: WeightRef,
    ) => {
      const layout = layoutFor(u);
      const k = gemvKernel({ shape: layout, mode, ...specOf(w), norm: u.normOff !== undefined, act: m.activation });
      const wb = weightBindings(w);
      const values = [
        { uniform: packGemv(u) },
        'dyn' as const,
        common.work,
        common.params,
        common.lora,
        ...wb,
        ...(w2 ? weightBindings(w2) : []),
        ...extra,
      ];
      plan.add(
        phase,
        k,
        values,
        [gemvWorkgroupsX(layout, mode, u.N, D), Math.ceil(u.rows / gemvMaxRows(layout)), 1],
        2 * u.K * u.N * u.rows * (w2 ? 2 : 1),
      );
    };
    /** A projection's row blocks (one unless its weight is held in several) and the first row of each. */
    const blocksOf = (pr: ProjectionRef): { w: WeightRef; row: number }[] => {
      let row = 0;
      return (pr.blocks ?? [pr.weight]).map((w) => ((row += w.rows), { w, row: row - w.rows }));
    };
    const check = (pr: ProjectionRef, rows: number, cols: number, what: string) => {
      const bl = blocksOf(pr);
      const total = bl.reduce((a, b) => a + b.w.rows, 0);
      if (total !== rows || bl.some((b) => b.w.cols !== cols))
        throw new Error(`decode plan: ${what} is [${total}, ${pr.weight.cols}], expected [${rows}, ${cols}]`);
    };
    /**
     * A GEMV over a weight in row blocks: one dispatch per block, its outputs, biases and LoRA B
     * rows shifted by the block's first row. q, k and v take blocks of whole heads only (RoPE pairs
     * and cache rows stay within a head); their cache writes find the head from outOff.
     */
    const gemvBlocks = (
      phase: string,
      mode: GemvMode,
      pr: ProjectionRef,
      u: GemvUniform,
      extra: BufferRange[] = [],
      pr2?: ProjectionRef,
    ) => {
      const bl2 = pr2 ? blocksOf(pr2) : null;
      blocksOf(pr).forEach(({ w, row }, i) => {
        const w2 = bl2?.[i];
        if (bl2 && (!w2 || w2.row !== row || w2.w.rows !== w.rows))
          throw new Error('decode plan: gate and up are held in different row blocks');
        const shift = (o: number | undefined) => (o === undefined || o < 0 ? o : o + row);
        if (mode !== GemvMode.Plain && mode !== GemvMode.GateUp && (row % D !== 0 || w.rows % D !== 0))
          throw new Error(`decode plan: a row block of ${w.rows} rows from row ${row} splits a head of ${D}`);
        gemv(
          phase,
          mode,
          w,
          {
            ...u,
            N: w.rows,
            outOff: u.outOff + row,
            biasOff: shift(u.biasOff),
            bias2Off: shift(u.bias2Off),
            bOff: (u.bOff ?? 0) + row * (u.r ?? 0),
            b2Off: (u.b2Off ?? 0) + row * (u.r2 ?? 0),
          },
          extra,
          w2?.w,
        );
      });
    };
    const auxB = { buffer: this.aux };
    const ropeOf = (layer: DecodeLayerRef) => {
      const r = layer.rope ?? 0;
      if (r >= invFreqs.length) throw new Error(`decode plan: a layer names RoPE ${r} of ${invFreqs.length}`);
      return { cosOff: this.auxOff[`cos${r || ''}`], sinOff: this.auxOff[`sin${r || ''}`] };
    };
    const ropeU0 = { headDim: D, cap: C, posOff: this.auxOff.pos };

    // draw: ids from the logits, statistics under logits / statT; embed: x of the ids, + record
    plan.add(
      'draw',
      sampleKernel(m.vocab),
      ['dyn', { buffer: this.logits }, { buffer: this.streams }, { buffer: ids }],
      [B, 1, 1],
    );
    plan.add(
      'draw',
      statsKernel(m.vocab, device),
      ['dyn', { buffer: this.scaled }, { buffer: ids }, { buffer: stats }],
      [B, 1, 1],
    );
    m.embed.forEach((blk, i) => {
      plan.add(
        'embed',
        embedKernel(),
        [
          {
            uniform: packEmb({
              H: m.hidden,
              rowStart: blk.rowStart,
              rowCount: blk.rows,
              xOff: W.x,
              rec: i === 0,
              B,
              scale: m.embedScale,
            }),
          },
          'dyn',
          common.work,
          { buffer: ids },
          { buffer: blk.buffer },
          { buffer: stats },
          { buffer: this.record },
        ],
        [B, 1, 1],
      );
      plan.add(
        'pembed',
        embedKernel(),
        [
          {
            uniform: packEmb({
              H: m.hidden,
              rowStart: blk.rowStart,
              rowCount: blk.rows,
              xOff: W.x,
              rec: false,
              B,
              seq: Pc,
              cap: C,
              scale: m.embedScale,
            }),
          },
          'dyn',
          common.work,
          { buffer: this.promptIds },
          { buffer: blk.buffer },
          { buffer: stats },
          { buffer: this.record },
        ],
        [R, 1, 1],
      );
    });

    // The layers of a decode step (rows B, seq 0) and of a prefill chunk (rows B x Pc, seq Pc).
    const layers = (phase: string, rows: number, seq: number) =>
      m.layers.forEach((layer, li) => {
        const lp = layerParams[li];
        const at = this.loraAt[li];
        const groupOf = (gi: number) => groupA.find((g) => g.layer === li && g.group === gi);
        const loraA = (gi: number, u: Omit<GemvUniform, 'N' | 'outOff' | 'outStride'>) => {
          const g = groupOf(gi);
          if (!g) return;
          const layout = layoutFor({ ...u, N: g.rows, outOff: W.t, outStride: g.rows });
          const k = gemvKernel({ shape: layout, mode: GemvMode.Plain, kind: 'f32', norm: u.normOff !== undefined });
          plan.add(
            phase,
            k,
            [
              { uniform: packGemv({ ...u, N: g.rows, outOff: W.t, outStride: g.rows }) },
              'dyn',
              common.work,
              common.params,
              common.lora,
              { buffer: this.loraBuf, offset: g.off * 4, size: g.rows * g.inp * 4 },
            ],
            [gemvWorkgroupsX(layout, GemvMode.Plain, g.rows), Math.ceil(rows / gemvMaxRows(layout)), 1],
            2 * u.K * g.rows * rows,
          );
        };
        // LoRA epilogue fields of projection p: its slice of the group's x·A and its B.
        const loraU = (p: ProjKey, gi: number) => {
          const e = at[p];
          const g = groupOf(gi);
          if (!e || !g) return {};
          return {
            tOff: W.t + (e.a - g.off) / g.inp,
            tStride: g.rows,
            bOff: e.b,
            r: e.r,
            scale: m.lora[li]?.[p]?.scale ?? 0,
          };
        };
        const x1 = { K: m.hidden, rows, xOff: W.x, xStride: m.hidden, normOff: lp.norm1, eps: m.eps };
        check(layer.q, qDim, m.hidden, `layer ${li} q`);
        check(layer.k, kvDim, m.hidden, `layer ${li} k`);
        check(layer.v, kvDim, m.hidden, `layer ${li} v`);
        check(layer.o, m.hidden, qDim, `layer ${li} o`);
        check(layer.gate, m.intermediate, m.hidden, `layer ${li} gate`);
        check(layer.up, m.intermediate, m.hidden, `layer ${li} up`);
        check(layer.down, m.hidden, m.intermediate, `layer ${li} down`);
        loraA(0, x1);
        const ropeU = { ...ropeU0, ...ropeOf(layer), posOff: seq ? this.auxOff.ppos : this.auxOff.pos, seq };
        // With q/k norms the projection writes plain and rope/plan_head_norm.wgsl norms each head,
        // rotates it and writes q in place or k into the cache; without, RoPE is the GEMV's epilogue.
        const headNorm = (normOff: number, inOff: number, width: number, nH: number, cache?: GPUBuffer) =>
          plan.add(
            phase,
            headNormRopeKernel(D, cache !== undefined),
            [
              {
                uniform: packHeadNorm({
                  ...ropeU,
                  inOff,
                  inStride: width,
                  normOff,
                  eps: m.eps,
                  nKV: cache ? m.kvHeads : 0,
                }),
              },
              'dyn',
              common.work,
              common.params,
              auxB,
              ...(cache ? [{ buffer: cache }] : []),
            ],
            [nH, rows, 1],
          );
        gemvBlocks(
          phase,
          lp.qNorm === undefined ? GemvMode.RopeQ : GemvMode.Plain,
          layer.q,
          { ...x1, ...ropeU, N: qDim, outOff: W.q, outStride: qDim, biasOff: lp.bias.q, ...loraU('q', 0) },
          lp.qNorm === undefined ? [auxB] : [],
        );
        if (lp.qNorm !== undefined) headNorm(lp.qNorm, W.q, qDim, m.heads);
        if (lp.kNorm === undefined) {
          gemvBlocks(
            phase,
            GemvMode.RopeK,
            layer.k,
            {
              ...x1,
              ...ropeU,
              N: kvDim,
              nKV: m.kvHeads,
              outOff: 0,
              outStride: 0,
              biasOff: lp.bias.k,
              ...loraU('k', 0),
            },
            [auxB, { buffer: this.kCache[li] }],
          );
        } else {
          gemvBlocks(phase, GemvMode.Plain, layer.k, {
            ...x1,
            N: kvDim,
            outOff: W.k,
            outStride: kvDim,
            biasOff: lp.bias.k,
            ...loraU('k', 0),
          });
          headNorm(lp.kNorm, W.k, kvDim, m.kvHeads, this.kCache[li]);
        }
        gemvBlocks(
          phase,
          GemvMode.CacheV,
          layer.v,
          {
            ...x1,
            headDim: D,
            cap: C,
            seq,
            N: kvDim,
            nKV: m.kvHeads,
            outOff: 0,
            outStride: 0,
            biasOff: lp.bias.v,
            ...loraU('v', 0),
          },
          [{ buffer: this.vCache[li] }],
        );
        const att = {
          uniform: packAtt({
            nH: m.heads,
            nKV: m.kvHeads,
            D,
            cap: C,
            qOff: W.q,
            aOff: W.a,
            validOff: this.auxOff.valid,
            seq,
            rows,
            scale: layer.attnScale,
            window: layer.window,
          }),
        };
        // q·k and p·v over at most the capacity per (row, head): the bound a submit budget needs.
        const attFlops = 4 * rows * m.heads * C * D;
        if (partials && seq === 0) {
          // split-K: segments past the filled length return at once, so the grid covers the capacity
          plan.add(
            phase,
            attentionSplitKKernel(D),
            [
              att,
              'dyn',
              common.work,
              auxB,
              { buffer: this.kCache[li] },
              { buffer: this.vCache[li] },
              { buffer: partials },
            ],
            [m.heads, rows, Math.ceil(C / SPLITK_SEGMENT)],
            attFlops,
          );
          plan.add(
            phase,
            attentionCombineKernel(D),
            [att, 'dyn', { buffer: partials }, common.work],
            [m.heads, rows, 1],
          );
        } else {
          // GPUs: a workgroup per (head, row); software adapters: a barrier-free thread per (head, row).
          plan.add(
            phase,
            shape === 'split' ? attentionKernel(D) : attentionThreadKernel(D),
            [att, 'dyn', common.work, auxB, { buffer: this.kCache[li] }, { buffer: this.vCache[li] }],
            shape === 'split' ? [m.heads, rows, 1] : [Math.ceil((m.heads * rows) / ATT_THREAD_WG), 1, 1],
            attFlops,
          );
        }
        const xa = { K: qDim, rows, xOff: W.a, xStride: qDim };
        loraA(1, xa);
        residual(layer.o, xa, lp.bias.o, loraU('o', 1), lp.attnOut);
        const x2 = { K: m.hidden, rows, xOff: W.x, xStride: m.hidden, normOff: lp.norm2, eps: m.eps };
        loraA(2, x2);
        const up = loraU('up', 2);
        if (specOf(layer.gate.weight).kind !== specOf(layer.up.weight).kind)
          throw new Error(`decode plan: layer ${li} gate and up differ in weight format`);
        gemvBlocks(
          phase,
          GemvMode.GateUp,
          layer.gate,
          {
            ...x2,
            N: m.intermediate,
            outOff: W.act,
            outStride: m.intermediate,
            biasOff: lp.bias.gate,
            ...loraU('gate', 2),
            bias2Off: lp.bias.up,
            t2Off: up.tOff,
            b2Off: up.bOff,
            r2: up.r,
            scale2: up.scale,
          },
          [],
          layer.up,
        );
        const xd = { K: m.intermediate, rows, xOff: W.act, xStride: m.intermediate };
        loraA(3, xd);
        residual(layer.down, xd, lp.bias.down, loraU('down', 3), lp.mlpOut);
        /**
         * A branch's last projection and its residual add: added in the GEMV's epilogue, or (an
         * output norm) written to h and added normed by rms-norm/plan_add.wgsl.
         */
        function residual(
          pr: ProjectionRef,
          xin: Omit<GemvUniform, 'N' | 'outOff' | 'outStride'>,
          biasOff: number | undefined,
          lora: Partial<GemvUniform>,
          outNorm: number | undefined,
        ) {
          const out = outNorm === undefined ? { outOff: W.x, resid: true } : { outOff: W.h, resid: false };
          gemvBlocks(phase, GemvMode.Plain, pr, { ...xin, N: m.hidden, outStride: m.hidden, biasOff, ...lora, ...out });
          if (outNorm !== undefined)
            plan.add(
              phase,
              normAddKernel(),
              [
                { uniform: packNormAdd({ H: m.hidden, hOff: W.h, xOff: W.x, normOff: outNorm, eps: m.eps }) },
                common.work,
                common.params,
              ],
              [rows, 1, 1],
            );
        }
      });
    layers('layers', B, 0);
    layers('players', R, Pc);

    let col = 0;
    for (const blk of m.head) {
      if (blk.cols !== m.hidden)
        throw new Error(`decode plan: LM head block has ${blk.cols} columns, hidden size is ${m.hidden}`);
      const head = {
        K: m.hidden,
        rows: B,
        normOff: finalNorm,
        eps: m.eps,
        N: blk.rows,
        outOff: col,
        outStride: m.vocab,
      };
      gemv('head', GemvMode.Head, blk, { ...head, xOff: W.x, xStride: m.hidden }, [
        { buffer: this.logits },
        { buffer: this.scaled },
      ]);
      // the prefill's head reads each row's last prompt column: row b * Pc + Pc - 1
      gemv('phead', GemvMode.Head, blk, { ...head, xOff: W.x + (Pc - 1) * m.hidden, xStride: Pc * m.hidden }, [
        { buffer: this.logits },
        { buffer: this.scaled },
      ]);
      col += blk.rows;
    }
    if (col !== m.vocab) throw new Error(`decode plan: LM head blocks hold ${col} rows, vocabulary is ${m.vocab}`);
    plan.finalize();
  }

  /** Dispatches per token: sampling, the embedding (+ record), the layers and the head. */
  dispatchesPerToken(): { draw: number; embed: number; layers: number; head: number; perLayer: number; total: number } {
    const [draw, embed, layers, head] = ['draw', 'embed', 'layers', 'head'].map((p) => this.plan.count(p));
    return {
      draw,
      embed,
      layers,
      head,
      perLayer: layers / this.model.layers.length,
      total: draw + embed + layers + head,
    };
  }

  /**
   * Starts a generation: uploads positions, valid slots and streams, and copies the LoRA
   * branches in. The caller has put the prefill's caches and first logits into kCache / vCache,
   * logits and scaled (logits / statT) before the first run.
   */
  begin(b: DecodeBegin): void {
    const { batch: B, capacity: C } = this.opts;
    if (b.basePos.length !== B || b.streams.length !== B || b.slotValid.length !== B)
      throw new Error(`decode plan: begin needs ${B} rows of positions, slots and streams`);
    if (b.prefill < 1 || b.prefill > C) throw new Error(`decode plan: prefill of ${b.prefill} slots outside [1, ${C}]`);
    const pos = new Float32Array(B);
    const valid = new Float32Array(B * C);
    for (let r = 0; r < B; r++) {
      pos[r] = b.basePos[r];
      for (let j = 0; j < C; j++) valid[r * C + j] = j < b.prefill ? (b.slotValid[r][j] ? 1 : 0) : 1;
    }
    const q = this.device.queue;
    q.writeBuffer(this.aux, this.auxOff.pos * 4, pos);
    q.writeBuffer(this.aux, this.auxOff.valid * 4, valid);
    q.writeBuffer(this.streams, 0, Int32Array.from(b.streams));
    const enc = this.device.createCommandEncoder();
    this.loraAt.forEach((at, li) => {
      for (const p of PROJ_KEYS) {
        const e = at[p];
        if (!e) continue;
        const ref = b.lora?.[li]?.[p];
        if (!ref || ref.r !== e.r || ref.scale !== this.model.lora[li]?.[p]?.scale) {
          throw new Error(
            `decode plan: layer ${li} ${p} needs the LoRA branch of rank ${e.r} and scale ${this.model.lora[li]?.[p]?.scale} it was planned with`,
          );
        }
        enc.copyBufferToBuffer(ref.A, 0, this.loraBuf, e.a * 4, e.r * e.inp * 4);
        enc.copyBufferToBuffer(ref.B, 0, this.loraBuf, e.b * 4, e.out * e.r * 4);
      }
    });
    q.submit([enc.finish()]);
    const t = b.sampling.temperature;
    this.begun = { ...b, statT: t > 0 && t !== 1 ? t : 1 };
  }

  /** Prompt columns the planned prefill fills for prompts of P columns: P rounded up to whole chunks. */
  prefillColumns(P: number): number {
    return Math.ceil(P / this.chunk) * this.chunk;
  }

  /**
   * Starts a generation from the prompts themselves: the prefill runs on the plan (one submit, no
   * readback), leaving the caches and the first logits where the decode runs read them. The
   * prompts are left-padded further to whole chunks; those pads, like the caller's, are invalid
   * slots no query sees, and positions count real tokens only, so the result is the tfjs
   * prefill's.
   */
  beginPrompt(p: PromptBegin): void {
    const { batch: B, capacity: C } = this.opts;
    if (p.ids.length !== B || p.mask.length !== B)
      throw new Error(`decode plan: beginPrompt needs ${B} rows of prompt ids and mask`);
    const P = p.ids[0].length;
    const P2 = this.prefillColumns(P);
    if (P < 1 || P2 > C)
      throw new Error(`decode plan: a prompt of ${P} columns (${P2} in whole prefill chunks) outside [1, ${C}]`);
    const shift = P2 - P;
    const ids = new Int32Array(B * C).fill(p.pad);
    const pos = new Float32Array(B * C);
    const slotValid: Uint8Array[] = [];
    const basePos: number[] = [];
    for (let b = 0; b < B; b++) {
      if (p.ids[b].length !== P || p.mask[b].length !== P)
        throw new Error(
          `decode plan: prompt row ${b} has ${p.ids[b].length} ids and ${p.mask[b].length} mask entries, expected ${P}`,
        );
      const valid = new Uint8Array(P2);
      let n = 0;
      for (let j = 0; j < P; j++) {
        ids[b * C + shift + j] = p.ids[b][j];
        if (p.mask[b][j] === 0) continue;
        valid[shift + j] = 1;
        pos[b * C + shift + j] = n++;
      }
      slotValid.push(valid);
      basePos.push(n);
    }
    this.begin({ ...p, prefill: P2, basePos, slotValid });
    const q = this.device.queue;
    q.writeBuffer(this.aux, this.auxOff.ppos * 4, pos);
    q.writeBuffer(this.promptIds, 0, ids);
    const b = this.begun!;
    const chunks = P2 / this.chunk;
    const first = this.opts.tokensPerRun; // prefill slots follow the run's
    const slots = new ArrayBuffer(chunks * DYN_SLOT_BYTES);
    for (let i = 0; i < chunks; i++) {
      packTok(
        {
          vocab: this.model.vocab,
          ...b.sampling,
          step: 0,
          slot: i * this.chunk,
          loraOn: b.loraOn,
          kvLen: 0,
          rec: 0,
          statT: b.statT,
        },
        slots,
        i * DYN_SLOT_BYTES,
      );
    }
    this.device.pushErrorScope('out-of-memory');
    this.device.pushErrorScope('validation');
    q.writeBuffer(this.plan.dyn, first * DYN_SLOT_BYTES, slots);
    const timer = this.timer;
    const items: PhaseAt[] = [];
    for (let i = 0; i < chunks; i++)
      items.push({ phase: 'pembed', slot: first + i }, { phase: 'players', slot: first + i });
    items.push({ phase: 'phead', slot: first + chunks - 1 });
    // Cut into submits under the watchdog budget (EngineOptions.submitBudgetMs): a long prompt at
    // a large batch is seconds of work on a slow GPU.
    this.lastPrefillSubmits = this.plan.submitSplit(items, submitFlopBudget(), {
      label: 'decode prefill',
      timestamps: timer ? { querySet: timer.set, begin: 2, end: 3 } : undefined,
    });
    const invalid = this.device.popErrorScope();
    const oom = this.device.popErrorScope();
    this.prefillScopes = Promise.all([invalid, oom]);
    this.prefillTimed = timer !== null;
  }

  /** Estimated FLOPs of a prefill chunk and of the prefill's head (what the submit budget counts). */
  prefillFlops(): { perChunk: number; head: number } {
    return { perChunk: this.plan.flops('pembed') + this.plan.flops('players'), head: this.plan.flops('phead') };
  }

  /** Dispatches of a prefill chunk and of the prefill's head (tests, benchmarks). */
  /** Dispatches of kernels whose key starts with `prefix`: per decode token and per prefill chunk (with its head). */
  kernelDispatches(prefix: string): { decode: number; prefill: number } {
    const n = (phases: string[]) => phases.reduce((a, p) => a + this.plan.countKernels(p, prefix), 0);
    return { decode: n(['draw', 'embed', 'layers', 'head']), prefill: n(['pembed', 'players', 'phead']) };
  }

  prefillDispatches(): { perChunk: number; head: number } {
    return { perChunk: this.plan.count('pembed') + this.plan.count('players'), head: this.plan.count('phead') };
  }

  /**
   * Runs tokens first .. first + n - 1 (sampling each from the current logits; `forwardLast`
   * false skips the forward after the last one) and returns [n][B][id, log-prob, entropy].
   */
  async run(first: number, n: number, forwardLast: boolean): Promise<Float32Array> {
    const b = this.begun;
    if (!b) throw new Error('decode plan: run before begin');
    if (this.busy) throw new Error('decode plan: a run is already in flight');
    this.checkDevice();
    if (!this.accepted) {
      // A refused buffer (out of memory, over a limit) named here, not as a rejected decode step.
      await this.plan.created().catch((e: Error) => {
        throw new PlanGpuError(e.message);
      });
      this.accepted = true;
    }
    if (n < 1 || n > this.opts.tokensPerRun)
      throw new Error(`decode plan: ${n} tokens per run outside [1, ${this.opts.tokensPerRun}]`);
    if (b.prefill + first + n - (forwardLast ? 0 : 1) > this.opts.capacity)
      throw new Error(`decode plan: cache capacity ${this.opts.capacity} exceeded`);
    this.busy = true;
    try {
      const slots = new ArrayBuffer(n * DYN_SLOT_BYTES);
      for (let i = 0; i < n; i++) {
        const t = first + i;
        packTok(
          {
            vocab: this.model.vocab,
            ...b.sampling,
            step: t,
            slot: b.prefill + t,
            loraOn: b.loraOn,
            kvLen: b.prefill + t + 1,
            rec: i,
            statT: b.statT,
          },
          slots,
          i * DYN_SLOT_BYTES,
        );
      }
      const q = this.device.queue;
      this.device.pushErrorScope('out-of-memory');
      this.device.pushErrorScope('validation');
      q.writeBuffer(this.plan.dyn, 0, slots);
      const enc = this.device.createCommandEncoder();
      const timer = this.timer;
      const pass = enc.beginComputePass(
        timer
          ? { timestampWrites: { querySet: timer.set, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } }
          : undefined,
      );
      for (let i = 0; i < n; i++) {
        this.plan.encode(pass, 'draw', i);
        this.plan.encode(pass, 'embed', i);
        if (i < n - 1 || forwardLast) {
          this.plan.encode(pass, 'layers', i);
          this.plan.encode(pass, 'head', i);
        }
      }
      pass.end();
      const bytes = n * this.opts.batch * 3 * 4;
      enc.copyBufferToBuffer(this.record, 0, this.readback, 0, bytes);
      if (timer) {
        enc.resolveQuerySet(timer.set, 0, this.prefillTimed ? 4 : 2, timer.resolve, 0);
        enc.copyBufferToBuffer(timer.resolve, 0, timer.read, 0, 32);
      }
      q.submit([enc.finish()]);
      // Scopes pop in reverse order of pushing; the readback is requested at once beside them.
      const invalid = this.device.popErrorScope();
      const oom = this.device.popErrorScope();
      const mapped = this.readback.mapAsync(GPUMapMode.READ, 0, bytes).then(
        () => null,
        (e: Error) => e,
      );
      const prefill = this.prefillScopes ?? Promise.resolve([null, null] as [null, null]);
      this.prefillScopes = null;
      const [badRun, oomRun, mapError, [badPrefill, oomPrefill]] = await Promise.all([invalid, oom, mapped, prefill]);
      const badStep = badRun ?? badPrefill;
      const noMemory = oomRun ?? oomPrefill;
      if (badStep || noMemory || mapError) {
        if (!mapError) this.readback.unmap();
        this.checkDevice();
        if (noMemory)
          throw new PlanGpuError(
            `decode plan: the GPU ran out of memory during a decode step (${noMemory.message}); the plan holds ${this.plan.bytes} bytes`,
          );
        if (badStep) throw new PlanGpuError(`decode plan: the GPU rejected a decode step (${badStep.message})`);
        throw mapError!;
      }
      const out = new Float32Array(this.readback.getMappedRange(0, bytes).slice(0));
      this.readback.unmap();
      if (timer) {
        await timer.read.mapAsync(GPUMapMode.READ);
        const [t0, t1, t2, t3] = new BigUint64Array(timer.read.getMappedRange().slice(0));
        timer.read.unmap();
        this.lastGpuMs = Number(t1 - t0) / 1e6;
        this.lastPrefillGpuMs = this.prefillTimed ? Number(t3 - t2) / 1e6 : null;
        this.prefillTimed = false;
      }
      return out;
    } finally {
      this.busy = false;
    }
  }

  /**
   * Teacher-forced step t: feeds `ids` (one per row) instead of sampling and returns the logits
   * [B, V] that follow (tests and triage; its readback buffer is made on first use).
   */
  async forced(t: number, ids: ArrayLike<number>): Promise<Float32Array> {
    const b = this.begun;
    if (!b) throw new Error('decode plan: forced before begin');
    const slots = new ArrayBuffer(DYN_SLOT_BYTES);
    packTok(
      {
        vocab: this.model.vocab,
        ...b.sampling,
        step: t,
        slot: b.prefill + t,
        loraOn: b.loraOn,
        kvLen: b.prefill + t + 1,
        rec: 0,
        statT: b.statT,
      },
      slots,
      0,
    );
    const q = this.device.queue;
    q.writeBuffer(this.plan.dyn, 0, slots);
    q.writeBuffer(this.ids, 0, Int32Array.from(ids));
    const enc = this.device.createCommandEncoder();
    const pass = enc.beginComputePass();
    for (const phase of ['embed', 'layers', 'head']) this.plan.encode(pass, phase, 0);
    pass.end();
    q.submit([enc.finish()]);
    return this.readLogits();
  }

  /** The logits [B, V] the next token would be drawn from (tests and triage; its readback buffer is made on first use). */
  async readLogits(): Promise<Float32Array> {
    const bytes = this.opts.batch * this.model.vocab * 4;
    this.logitsReadback ??= this.plan.buffer(
      'logits readback',
      bytes,
      GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    );
    const enc = this.device.createCommandEncoder();
    enc.copyBufferToBuffer(this.logits, 0, this.logitsReadback, 0, bytes);
    this.device.queue.submit([enc.finish()]);
    await this.logitsReadback.mapAsync(GPUMapMode.READ);
    const out = new Float32Array(this.logitsReadback.getMappedRange().slice(0, bytes));
    this.logitsReadback.unmap();
    return out;
  }

  private logitsReadback: GPUBuffer | null = null;

  /** Throws a PlanGpuError when the device this plan was built on is gone. */
  checkDevice(): void {
    const lost = deviceLostReason(this.device);
    if (lost)
      throw new PlanGpuError(
        `the GPU device was lost (${lost}); decoding stopped. Saved checkpoints are kept: reload the lab to get a new device and resume from the newest one`,
      );
  }

  dispose(): void {
    this.timer?.set.destroy();
    this.plan.dispose();
  }
}
