// The learning plan's layout, its first two steps: `learnSizes` (pure) reads the model's
// description and the batch shape into the plan's dimensions, its flat LoRA layout and the parts of
// the block it carries; `learnBuffers` makes every buffer of the step from them, in the order
// src/contract/learnMemory.ts's learnStepBuffers lists them (a change here changes that list).
import { GpuPlan } from './plan';
import { STATS_COLS, type GemmLayout } from './learnKernels';
import { PROJ_KEYS, type DecodeModelRef, type ProjKey } from './modelRef';

/** Bytes of a float32. */
export const F = 4;

export interface LearnPlanOptions {
  /** Rows B. */
  rows: number;
  /** Prompt columns P (left-padded). */
  promptLength: number;
  /** Response columns T. */
  responseLength: number;
  /** Logits are divided by it before the statistics. */
  temperature: number;
  /** Keep only each layer's input and rebuild the rest of its activations in the backward. */
  recompute?: boolean;
  /**
   * The flat gradient buffer to fill (LearnPlan.gradBuffer's, shared by every plan of one LoRA
   * layout, so micro-batches of different shapes accumulate into one buffer an optimiser reads in
   * place); absent: the plan makes its own.
   */
  grads?: GPUBuffer;
  /**
   * LoRA dropout: each adapter's input is multiplied by a mask (loadMasks) before x A^T, and its
   * backward by the same mask. Default false.
   */
  dropout?: boolean;
  /** The GEMM layout of every product of the step: 'tiled' (GPUs) or 'direct' (default; software adapters). */
  gemm?: GemmLayout;
}

/** One adapter's place in the flat parameter / gradient buffers (float offsets). */
export interface LoraSlot {
  layer: number;
  proj: ProjKey;
  r: number;
  scale: number;
  inF: number;
  outF: number;
  aOff: number;
  bOff: number;
}

/** The dimensions and LoRA shapes of a description (one `lora` entry per layer), no buffers. */
export type LearnShape = Pick<
  DecodeModelRef,
  'hidden' | 'intermediate' | 'heads' | 'kvHeads' | 'headDim' | 'vocab' | 'lora'
>;

/** The flat LoRA layout of a model description (learnPlan.ts's file comment describes it). */
export function loraSlots(m: LearnShape): { slots: LoraSlot[]; count: number } {
  const dims = projDims(m);
  const slots: LoraSlot[] = [];
  let at = 0;
  m.lora.forEach((layer, li) => {
    for (const p of PROJ_KEYS) {
      const s = layer[p];
      if (!s) continue;
      const [inF, outF] = dims[p];
      slots.push({ layer: li, proj: p, r: s.r, scale: s.scale, inF, outF, aOff: at, bOff: at + s.r * inF });
      at += s.r * inF + outF * s.r;
    }
  });
  return { slots, count: at };
}

export function projDims(m: LearnShape): Record<ProjKey, [number, number]> {
  const q = m.heads * m.headDim;
  const kv = m.kvHeads * m.headDim;
  return {
    q: [m.hidden, q],
    k: [m.hidden, kv],
    v: [m.hidden, kv],
    o: [q, m.hidden],
    gate: [m.hidden, m.intermediate],
    up: [m.hidden, m.intermediate],
    down: [m.intermediate, m.hidden],
  };
}

/** One layer's activations: kept for its backward, or (recompute) one set rebuilt per layer. */
export interface LayerBufs {
  xin: GPUBuffer;
  h1: GPUBuffer;
  inv1: GPUBuffer;
  qh: GPUBuffer;
  kh: GPUBuffer;
  vh: GPUBuffer;
  p: GPUBuffer;
  ao: GPUBuffer;
  xmid: GPUBuffer;
  h2: GPUBuffer;
  inv2: GPUBuffer;
  g: GPUBuffer;
  u: GPUBuffer;
  act: GPUBuffer;
  xa: Partial<Record<ProjKey, GPUBuffer>>;
  /** Per-head q/k norms (Qwen3): q and k before their norm and each head's inverse RMS. */
  qk?: { q: GPUBuffer; qInv: GPUBuffer; k: GPUBuffer; kInv: GPUBuffer };
  /** Post-branch norms (Gemma 3): the o and down outputs before their norm and its inverse RMS. */
  post?: { o: GPUBuffer; oInv: GPUBuffer; down: GPUBuffer; downInv: GPUBuffer };
}

/** What the learning plan sizes from its model and options, before any GPU work. */
export interface LearnSizes {
  B: number;
  P: number;
  T: number;
  /** Columns L = P + T - 1, tokens in the forward N = B L, response rows R = B T. */
  L: number;
  N: number;
  R: number;
  H: number;
  D: number;
  half: number;
  qF: number;
  kvF: number;
  I: number;
  V: number;
  /** Query heads per kv head. */
  G: number;
  slots: LoraSlot[];
  /** Floats in `params` and `grads`. */
  count: number;
  /** The largest LoRA rank (at least 1): the backward's dxa scratch. */
  rmax: number;
  recompute: boolean;
  /** Every RoPE the layers name (DecodeModelRef.invFreqs, or [invFreq]). */
  invFreqs: Float64Array[];
  /** The block's parts past Llama's: per-head q/k norms and post-branch norms. */
  qkNormed: boolean;
  postNormed: boolean;
}

/** Step 1 (pure): the plan's dimensions and LoRA layout, the inputs checked. */
export function learnSizes(m: DecodeModelRef, opts: LearnPlanOptions): LearnSizes {
  const { rows: B, promptLength: P, responseLength: T } = opts;
  if (!(B > 0 && P > 0 && T > 0)) throw new Error(`learn plan: rows ${B}, prompt ${P}, response ${T} must be positive`);
  if (m.embed.length === 0 || m.head.length === 0) throw new Error('learn plan: no embedding or head');
  const { slots, count } = loraSlots(m);
  if (opts.grads && opts.grads.size < count * F)
    throw new Error(
      `learn plan: the gradient buffer given has ${opts.grads.size} bytes, ${count} parameters need ${count * F}`,
    );
  // The block's parts past Llama's (the decode plan's DecodeLayerRef): per-head q/k norms and
  // post-branch norms keep their inputs and inverses; windows, RoPEs, scales, the embedding scale
  // and GeGLU are uniforms or kernel variants.
  const invFreqs = m.invFreqs ?? [m.invFreq];
  for (const [i, l] of m.layers.entries())
    if ((l.rope ?? 0) >= invFreqs.length) throw new Error(`learn plan: layer ${i} names RoPE ${l.rope}`);
  const L = P + T - 1;
  return {
    B,
    P,
    T,
    L,
    N: B * L,
    R: B * T,
    H: m.hidden,
    D: m.headDim,
    half: m.headDim / 2,
    qF: m.heads * m.headDim,
    kvF: m.kvHeads * m.headDim,
    I: m.intermediate,
    V: m.vocab,
    G: m.heads / m.kvHeads,
    slots,
    count,
    rmax: Math.max(1, ...slots.map((s) => s.r)),
    recompute: !!opts.recompute,
    invFreqs,
    qkNormed: m.layers.some((l) => l.qNorm && l.kNorm),
    postNormed: m.layers.some((l) => l.attnOutNorm && l.mlpOutNorm),
  };
}

/** Step 2: the plan and every buffer of the sizes. */
export function learnBuffers(device: GPUDevice, m: DecodeModelRef, s: LearnSizes, opts: LearnPlanOptions) {
  const { B, N, L, R, H, half, qF, kvF, I, V, slots } = s;
  const plan = new GpuPlan(device, 1, 'learn', true);
  const buf = (name: string, floats: number) => plan.buffer(name, floats * F);
  const params = buf('lora params', s.count);
  const grads = opts.grads ?? buf('lora grads', s.count);
  // A shared gradient buffer still counts here: the learn-memory planner lists it with the plan's.
  if (opts.grads) plan.bytes += opts.grads.size;
  const ids = buf('ids', N);
  const targets = buf('targets', R);
  const valid = buf('valid', N);
  const cos = buf('cos', N * half);
  const sin = buf('sin', N * half);
  // cos / sin of every RoPE past the first (DecodeModelRef.invFreqs[1..]: Gemma 3's sliding layers)
  const ropeTables: { cos: GPUBuffer; sin: GPUBuffer }[] = [];
  for (let r = 1; r < s.invFreqs.length; r++)
    ropeTables.push({ cos: buf(`cos ${r}`, N * half), sin: buf(`sin ${r}`, N * half) });
  const stats = buf('stats', R * STATS_COLS);
  const dstats = buf('dstats', R * 2);
  const statsRead = plan.buffer(
    'stats readback',
    R * STATS_COLS * F,
    GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
  );
  const dummy = buf('dummy', 4);
  const postBufs = (tag: string) =>
    s.postNormed
      ? {
          o: buf(`o out before norm ${tag}`, N * H),
          oInv: buf(`o out inv ${tag}`, N),
          down: buf(`down out before norm ${tag}`, N * H),
          downInv: buf(`down out inv ${tag}`, N),
        }
      : undefined;
  const qkBufs = (tag: string) =>
    s.qkNormed
      ? {
          q: buf(`q before norm ${tag}`, N * qF),
          qInv: buf(`q inv ${tag}`, N * m.heads),
          k: buf(`k before norm ${tag}`, N * kvF),
          kInv: buf(`k inv ${tag}`, N * m.kvHeads),
        }
      : undefined;
  /** A layer's activations (all but its input), named by `tag`; `xa`: its x A^T buffers. */
  const activations = (tag: string, xa: LayerBufs['xa']): Omit<LayerBufs, 'xin'> => ({
    h1: buf(`h1 ${tag}`, N * H),
    inv1: buf(`inv1 ${tag}`, N),
    qh: buf(`qh ${tag}`, N * qF),
    kh: buf(`kh ${tag}`, N * kvF),
    vh: buf(`vh ${tag}`, N * kvF),
    p: buf(`p ${tag}`, B * m.heads * L * L),
    ao: buf(`ao ${tag}`, N * qF),
    xmid: buf(`xmid ${tag}`, N * H),
    h2: buf(`h2 ${tag}`, N * H),
    inv2: buf(`inv2 ${tag}`, N),
    g: buf(`g ${tag}`, N * I),
    u: buf(`u ${tag}`, N * I),
    act: buf(`act ${tag}`, N * I),
    xa,
    qk: qkBufs(tag),
    post: postBufs(tag),
  });
  // Recompute: one set of layer activations (x A^T per adapted projection at its largest rank)
  // that every layer's forward writes and its backward reads; each layer keeps its input only.
  let shared: Omit<LayerBufs, 'xin'> | null = null;
  if (s.recompute) {
    const xa: LayerBufs['xa'] = {};
    for (const p of PROJ_KEYS) {
      const r = Math.max(0, ...slots.filter((x) => x.proj === p).map((x) => x.r));
      if (r > 0) xa[p] = buf(`xa ${p} (rebuilt)`, N * r);
    }
    shared = activations('(rebuilt)', xa);
  }
  const layers: LayerBufs[] = [];
  for (let l = 0; l < m.layers.length; l++) {
    if (shared) {
      layers.push({ ...shared, xin: buf(`x ${l}`, N * H) });
      continue;
    }
    const xa: LayerBufs['xa'] = {};
    for (const x of slots) if (x.layer === l) xa[x.proj] = buf(`xa ${l} ${x.proj}`, N * x.r);
    const xin = buf(`x ${l}`, N * H);
    layers.push({ xin, ...activations(`${l}`, xa) });
  }
  // LoRA dropout: one bit mask per adapter (each draws its own), the kept multiplier, and one
  // scratch for the dropped input (forward, dA), the masked dx (backward) or a mask to pack.
  const masks = (opts.dropout ? slots : []).map((x) =>
    plan.buffer(`dropout ${x.layer} ${x.proj}`, Math.ceil((N * x.inF) / 32) * 4),
  );
  const dropScratch =
    opts.dropout && slots.length > 0 ? buf('dropout scratch', N * Math.max(...slots.map((x) => x.inF))) : null;
  const dropScale = dropScratch ? buf('dropout scale', 1) : null;
  return {
    plan,
    params,
    grads,
    ids,
    targets,
    valid,
    cos,
    sin,
    ropeTables,
    stats,
    dstats,
    statsRead,
    dummy,
    layers,
    masks,
    dropScratch,
    dropScale,
    // the last layer's output, the final norm's inverse and output, the response rows' hidden state, their logits
    xOut: buf('x out', N * H),
    invF: buf('inv final', N),
    hn: buf('hn', N * H),
    hidden: buf('hidden rows', R * H),
    logits: buf('logits', R * V),
    // forward scratch: token-major projections before RoPE
    qt: buf('q tok', N * qF),
    kt: buf('k tok', N * kvF),
    vt: buf('v tok', N * kvF),
    // backward scratch
    dlogits: buf('dlogits', R * V),
    dhn: buf('dhn', N * H),
    dres: buf('dres', N * H),
    dh: buf('dh', N * H),
    dact: buf('dact', N * I),
    dg: buf('dg', N * I),
    du: buf('du', N * I),
    dao: buf('dao', N * qF),
    daoh: buf('daoh', N * qF),
    dP: buf('dP', B * m.heads * L * L),
    dqh: buf('dqh', N * qF),
    dkh: buf('dkh', N * kvF),
    dvh: buf('dvh', N * kvF),
    dq: buf('dq', N * qF),
    dk: buf('dk', N * kvF),
    dv: buf('dv', N * kvF),
    dxa: buf('dxa', N * s.rmax),
    // the gradients of q and k before their per-head norms, of a branch's output before its post norm
    dqk: s.qkNormed ? { q: buf('dq pre-norm', N * qF), k: buf('dk pre-norm', N * kvF) } : null,
    dpost: s.postNormed ? buf('d branch pre-norm', N * H) : null,
  };
}

/** The plan and every buffer of the step (step 2). */
export type LearnBuffers = ReturnType<typeof learnBuffers>;
