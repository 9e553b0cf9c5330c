// The learning planner: from a description of a decoder-only model (the decode planner's
// DecodeModelRef: dimensions, weight buffers, LoRA shapes; no model names) and a batch shape
// (rows B, prompt columns P, response columns T), it builds once every buffer, pipeline and bind
// group of a forward over the whole left-padded sequence and its backward to the LoRA factors,
// and then replays them. Per learning step: one write of the inputs, the forward pass (and the
// reference pass with the adapters left out) leaving B T x (log-prob, entropy, reference log-prob)
// on the GPU (or read back); the caller turns those into d loss / d log-prob and d loss / d
// entropy (the loss formulas live in src/rl) on the GPU, hands them over as buffers (or host
// arrays), and the backward pass fills, or adds into, one flat f32 gradient buffer.
//
// Columns: L = P + T - 1 (the last response token predicts nothing); response token t is predicted
// by column P - 1 + t. Activations are kept per layer, or (`recompute`) only each layer's input
// residual is kept and the backward re-runs that layer's forward kernels into one shared scratch
// set just before the layer's backward (the last layer's still hold the forward's values, so it is
// not re-run): the same kernels on the same inputs, so the same values. The buffers it creates
// are listed, to the byte, by src/contract/learnMemory.ts's learnStepBuffers (the planner that sizes
// learnStep's micro-batches and the page's fit check); a change here changes that list.
//
// LoRA parameter and gradient layout (`params`, `grads`, the same for both, what an optimiser
// over one flat buffer reads): adapters in model order, layer by layer, projections q k v o gate up
// down; per adapter A [r, in] then B [out, r], each row-major. LoRA stays factored: x A^T is
// kept per adapted projection and y += s (x A^T) B^T.
import { GpuPlan, alignUp, type BindingValue, type BufferRange } from './plan';
import { submitFlopBudget } from '../options';
import { PROJ_KEYS, type DecodeModelRef, type ProjKey, type VectorRef, type WeightRef } from './decodePlan';
import {
  STATS_COLS,
  elemWorkgroups,
  embedRowsKernel,
  gemmKernel,
  gemmWorkgroups,
  headsKernel,
  packCnt,
  packEmb,
  packGemm,
  packHeads,
  packRow,
  packSm,
  packSt,
  rmsNormGradKernel,
  rmsNormKernel,
  rmsNormResKernel,
  softmaxGradKernel,
  softmaxKernel,
  statsGradKernel,
  statsKernel,
  swigluGradKernel,
  swigluKernel,
  dropMulKernel,
  dropPackKernel,
  packDrop,
  type GemmLayout,
  type GemmUniform,
  type Operand,
} from './learnKernels';

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

/** Host inputs of one step: ids and mask [B][P + T] (left-padded prompt, then response). */
export interface LearnInputs {
  ids: ArrayLike<number>[];
  attentionMask: ArrayLike<number>[];
}

/** The dimensions and LoRA shapes of a description (one `lora` entry per layer), no buffers. */
export type LearnShape = Pick<
  DecodeModelRef,
  'hidden' | 'intermediate' | 'heads' | 'kvHeads' | 'headDim' | 'vocab' | 'lora'
>;

/** The flat LoRA layout of a model description (see the file comment). */
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

function projDims(m: LearnShape): Record<ProjKey, [number, number]> {
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

interface LayerBufs {
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

const F = 4;

export class LearnPlan {
  readonly plan: GpuPlan;
  readonly B: number;
  readonly P: number;
  readonly T: number;
  readonly L: number;
  /** Tokens in the forward (B L) and response rows (B T). */
  readonly N: number;
  readonly R: number;
  readonly slots: LoraSlot[];
  /** Floats in `params` and `grads`. */
  readonly paramCount: number;
  /** LoRA factors the passes read (copied in by loadParams, or written by an optimiser). */
  readonly params: GPUBuffer;
  /** d loss / d params after backward(), same layout as params. */
  readonly grads: GPUBuffer;
  private readonly ids: GPUBuffer;
  private readonly targets: GPUBuffer;
  private readonly valid: GPUBuffer;
  private readonly cos: GPUBuffer;
  private readonly sin: GPUBuffer;
  /** cos / sin of every RoPE past the first (DecodeModelRef.invFreqs[1..]: Gemma 3's sliding layers). */
  private readonly ropeTables: { cos: GPUBuffer; sin: GPUBuffer }[] = [];
  private readonly stats: GPUBuffer;
  private readonly dstats: GPUBuffer;
  private readonly statsRead: GPUBuffer;
  private gradsRead: GPUBuffer | null = null;
  private readonly hn: GPUBuffer;
  private readonly dhn: GPUBuffer;
  /** The final normed hidden state of the response-predicting rows [B T, H] (forward(.., true)). */
  readonly hidden: GPUBuffer;
  private readonly dummy: GPUBuffer;
  private readonly layers: LayerBufs[] = [];
  /** Per LoRA slot (slot order), its dropout mask [N, in], one bit per element (with opts.dropout). */
  private readonly masks: GPUBuffer[] = [];
  /** Whether each mask keeps every element now (dropout off for this pass). */
  private readonly masksOnes: boolean[] = [];
  /** The kept elements' multiplier 1 / (1 - p) (1 with dropout off), and the f32 staging of a mask to pack. */
  private dropScale: GPUBuffer | null = null;
  private dropStaging: GPUBuffer | null = null;

  constructor(
    readonly device: GPUDevice,
    readonly model: DecodeModelRef,
    readonly opts: LearnPlanOptions,
  ) {
    const m = model;
    const { rows: B, promptLength: P, responseLength: T } = opts;
    if (!(B > 0 && P > 0 && T > 0))
      throw new Error(`learn plan: rows ${B}, prompt ${P}, response ${T} must be positive`);
    if (m.embed.length === 0 || m.head.length === 0) throw new Error('learn plan: no embedding or head');
    this.B = B;
    this.P = P;
    this.T = T;
    this.L = P + T - 1;
    this.N = B * this.L;
    this.R = B * T;
    const { slots, count } = loraSlots(m);
    this.slots = slots;
    this.paramCount = count;
    const plan = (this.plan = new GpuPlan(device, 1, 'learn', true));
    const N = this.N;
    const L = this.L;
    const H = m.hidden;
    const D = m.headDim;
    const half = D / 2;
    const qF = m.heads * D;
    const kvF = m.kvHeads * D;
    const I = m.intermediate;
    const V = m.vocab;
    const R = this.R;
    const buf = (name: string, floats: number) => plan.buffer(name, floats * F);
    this.params = buf('lora params', count);
    if (opts.grads && opts.grads.size < count * F)
      throw new Error(
        `learn plan: the gradient buffer given has ${opts.grads.size} bytes, ${count} parameters need ${count * F}`,
      );
    this.grads = opts.grads ?? buf('lora grads', count);
    // A shared gradient buffer still counts here: the learn-memory planner lists it with the plan's.
    if (opts.grads) plan.bytes += opts.grads.size;
    this.ids = buf('ids', N);
    this.targets = buf('targets', R);
    this.valid = buf('valid', N);
    this.cos = buf('cos', N * half);
    this.sin = buf('sin', N * half);
    for (let r = 1; r < (m.invFreqs ?? [m.invFreq]).length; r++)
      this.ropeTables.push({ cos: buf(`cos ${r}`, N * half), sin: buf(`sin ${r}`, N * half) });
    this.stats = buf('stats', R * STATS_COLS);
    this.dstats = buf('dstats', R * 2);
    this.statsRead = plan.buffer(
      'stats readback',
      R * STATS_COLS * F,
      GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    );
    this.dummy = buf('dummy', 4);
    const rmax = Math.max(1, ...slots.map((s) => s.r));
    const recompute = !!opts.recompute;
    // The block's parts past Llama's (the decode plan's DecodeLayerRef): per-head q/k norms and
    // post-branch norms keep their inputs and inverses; windows, RoPEs, scales, the embedding scale
    // and GeGLU are uniforms or kernel variants.
    const invFreqs = m.invFreqs ?? [m.invFreq];
    for (const [i, l] of m.layers.entries())
      if ((l.rope ?? 0) >= invFreqs.length) throw new Error(`learn plan: layer ${i} names RoPE ${l.rope}`);
    const qkNormed = m.layers.some((l) => l.qNorm && l.kNorm);
    const postNormed = m.layers.some((l) => l.attnOutNorm && l.mlpOutNorm);
    const postBufs = (tag: string) =>
      postNormed
        ? {
            o: buf(`o out before norm ${tag}`, N * H),
            oInv: buf(`o out inv ${tag}`, N),
            down: buf(`down out before norm ${tag}`, N * H),
            downInv: buf(`down out inv ${tag}`, N),
          }
        : undefined;
    const qkBufs = (tag: string) =>
      qkNormed
        ? {
            q: buf(`q before norm ${tag}`, N * qF),
            qInv: buf(`q inv ${tag}`, N * m.heads),
            k: buf(`k before norm ${tag}`, N * kvF),
            kInv: buf(`k inv ${tag}`, N * m.kvHeads),
          }
        : undefined;
    // Recompute: one set of layer activations (x A^T per adapted projection at its largest rank)
    // that every layer's forward writes and its backward reads; each layer keeps its input only.
    let shared: Omit<LayerBufs, 'xin'> | null = null;
    if (recompute) {
      const xa: LayerBufs['xa'] = {};
      for (const p of PROJ_KEYS) {
        const r = Math.max(0, ...slots.filter((s) => s.proj === p).map((s) => s.r));
        if (r > 0) xa[p] = buf(`xa ${p} (rebuilt)`, N * r);
      }
      shared = {
        h1: buf('h1 (rebuilt)', N * H),
        inv1: buf('inv1 (rebuilt)', N),
        qh: buf('qh (rebuilt)', N * qF),
        kh: buf('kh (rebuilt)', N * kvF),
        vh: buf('vh (rebuilt)', N * kvF),
        p: buf('p (rebuilt)', B * m.heads * L * L),
        ao: buf('ao (rebuilt)', N * qF),
        xmid: buf('xmid (rebuilt)', N * H),
        h2: buf('h2 (rebuilt)', N * H),
        inv2: buf('inv2 (rebuilt)', N),
        g: buf('g (rebuilt)', N * I),
        u: buf('u (rebuilt)', N * I),
        act: buf('act (rebuilt)', N * I),
        xa,
        qk: qkBufs('(rebuilt)'),
        post: postBufs('(rebuilt)'),
      };
    }
    for (let l = 0; l < m.layers.length; l++) {
      if (shared) {
        this.layers.push({ ...shared, xin: buf(`x ${l}`, N * H) });
        continue;
      }
      const xa: LayerBufs['xa'] = {};
      for (const s of slots) if (s.layer === l) xa[s.proj] = buf(`xa ${l} ${s.proj}`, N * s.r);
      this.layers.push({
        xin: buf(`x ${l}`, N * H),
        h1: buf(`h1 ${l}`, N * H),
        inv1: buf(`inv1 ${l}`, N),
        qh: buf(`qh ${l}`, N * qF),
        kh: buf(`kh ${l}`, N * kvF),
        vh: buf(`vh ${l}`, N * kvF),
        p: buf(`p ${l}`, B * m.heads * L * L),
        ao: buf(`ao ${l}`, N * qF),
        xmid: buf(`xmid ${l}`, N * H),
        h2: buf(`h2 ${l}`, N * H),
        inv2: buf(`inv2 ${l}`, N),
        g: buf(`g ${l}`, N * I),
        u: buf(`u ${l}`, N * I),
        act: buf(`act ${l}`, N * I),
        xa,
        qk: qkBufs(`${l}`),
        post: postBufs(`${l}`),
      });
    }
    // LoRA dropout: one bit mask per adapter (each draws its own), the kept multiplier, and one
    // scratch for the dropped input (forward, dA), the masked dx (backward) or a mask to pack.
    for (const s of opts.dropout ? slots : []) {
      this.masks.push(plan.buffer(`dropout ${s.layer} ${s.proj}`, Math.ceil((N * s.inF) / 32) * 4));
      this.masksOnes.push(false);
    }
    const xd =
      opts.dropout && slots.length > 0 ? buf('dropout scratch', N * Math.max(...slots.map((s) => s.inF))) : null;
    if (xd) {
      this.dropStaging = xd;
      this.dropScale = buf('dropout scale', 1);
    }
    const xOut = buf('x out', N * H);
    const invF = buf('inv final', N);
    const hn = (this.hn = buf('hn', N * H));
    this.hidden = buf('hidden rows', R * H);
    const logits = buf('logits', R * V);
    // forward scratch: token-major projections before RoPE
    const qt = buf('q tok', N * qF);
    const kt = buf('k tok', N * kvF);
    const vt = buf('v tok', N * kvF);
    // backward scratch
    const dlogits = buf('dlogits', R * V);
    const dhn = (this.dhn = buf('dhn', N * H));
    const dres = buf('dres', N * H);
    const dh = buf('dh', N * H);
    const dact = buf('dact', N * I);
    const dg = buf('dg', N * I);
    const du = buf('du', N * I);
    const dao = buf('dao', N * qF);
    const daoh = buf('daoh', N * qF);
    const dP = buf('dP', B * m.heads * L * L);
    const dqh = buf('dqh', N * qF);
    const dkh = buf('dkh', N * kvF);
    const dvh = buf('dvh', N * kvF);
    const dq = buf('dq', N * qF);
    const dk = buf('dk', N * kvF);
    const dv = buf('dv', N * kvF);
    const dxa = buf('dxa', N * rmax);
    // the gradients of q and k before their norms
    const dqk = qkNormed ? { q: buf('dq pre-norm', N * qF), k: buf('dk pre-norm', N * kvF) } : null;
    // the gradient of a branch's output before its post norm
    const dpost = postNormed ? buf('d branch pre-norm', N * H) : null;

    const nL = m.layers.length;
    const xs = (l: number) => (l < nL ? this.layers[l].xin : xOut);
    const G = m.heads / m.kvHeads;
    const u = (b: ArrayBuffer): BindingValue => ({ uniform: b });
    const dummy = { buffer: this.dummy };

    /** C = alpha A B (+ ...), B a plain buffer. */
    const gemm = (
      phase: string,
      A: GPUBuffer,
      Bm: GPUBuffer,
      C: GPUBuffer,
      g: GemmUniform,
      extra: { bias?: GPUBuffer; res?: GPUBuffer } = {},
      Z = 1,
    ) => {
      plan.add(
        phase,
        gemmKernel('buf', 0, opts.gemm),
        [
          u(packGemm(g)),
          { buffer: A },
          { buffer: Bm },
          { buffer: C },
          extra.bias ? { buffer: extra.bias } : dummy,
          extra.res ? { buffer: extra.res } : dummy,
        ],
        gemmWorkgroups(g.M, g.N, Z),
        2 * g.M * g.N * g.K * Z,
      );
    };
    /** C = x W^T (transposed) or dy W through a frozen weight [rows, cols]. */
    const gemmW = (
      phase: string,
      A: GPUBuffer,
      a: Operand,
      w: WeightRef,
      transposed: boolean,
      C: GPUBuffer,
      g: Omit<GemmUniform, 'a' | 'b'>,
      extra: { bias?: GPUBuffer; res?: GPUBuffer } = {},
      Z = 1,
    ) => {
      const common: BindingValue[] = [{ buffer: A }];
      const tail: BindingValue[] = [
        { buffer: C },
        extra.bias ? { buffer: extra.bias } : dummy,
        extra.res ? { buffer: extra.res } : dummy,
      ];
      if (w.kind === 'f32') {
        const b: Operand = transposed ? { off: 0, s0: 1, s1: w.cols } : { off: 0, s0: w.cols, s1: 1 };
        plan.add(
          phase,
          gemmKernel('buf', 0, opts.gemm),
          [u(packGemm({ ...g, a, b })), ...common, { buffer: w.buffer }, ...tail],
          gemmWorkgroups(g.M, g.N, Z),
          2 * g.M * g.N * g.K * Z,
        );
      } else {
        const full: GemmUniform = { ...g, a, b: { off: 0, s0: 0, s1: 0 }, wK: w.cols, wT: transposed };
        plan.add(
          phase,
          gemmKernel(w.kind, w.groupSize, opts.gemm),
          [u(packGemm(full)), ...common, { buffer: w.words }, ...tail, { buffer: w.scales }],
          gemmWorkgroups(g.M, g.N, Z),
          2 * g.M * g.N * g.K * Z,
        );
      }
    };
    const rowMajor = (cols: number, off = 0): Operand => ({ off, s0: cols, s1: 1 });
    const elem = (phase: string, k: ReturnType<typeof swigluKernel>, values: BindingValue[], n: number) =>
      plan.add(phase, k, values, elemWorkgroups(n));
    /** RMSNorm of every head (rows of D in a token-major [N, n D]): the row kernel over N n rows. */
    const headNorm = (phase: string, x: GPUBuffer, w: VectorRef, y: GPUBuffer, inv: GPUBuffer, n: number) =>
      elem(
        phase,
        rmsNormKernel(),
        [u(packRow(N * n, D, m.eps, false)), { buffer: x }, { buffer: w.buffer }, { buffer: y }, { buffer: inv }],
        N * n,
      );
    const headNormBack = (x: GPUBuffer, w: VectorRef, inv: GPUBuffer, dy: GPUBuffer, dx: GPUBuffer, n: number) =>
      elem(
        'bwd',
        rmsNormGradKernel(),
        [
          u(packRow(N * n, D, m.eps, false)),
          { buffer: x },
          { buffer: w.buffer },
          { buffer: inv },
          { buffer: dy },
          { buffer: dx },
        ],
        N * n,
      );
    /** The cos / sin tables of layer l's RoPE. */
    const ropeOf = (l: number) => {
      const r = m.layers[l].rope ?? 0;
      return r === 0 ? { cos: this.cos, sin: this.sin } : this.ropeTables[r - 1];
    };
    const heads = (
      phase: string,
      src: GPUBuffer,
      dst: GPUBuffer,
      n: number,
      toHeads: boolean,
      sgn: number,
      rope = { cos: this.cos, sin: this.sin },
    ) =>
      elem(
        phase,
        headsKernel(),
        [
          u(packHeads(N, L, n, D, toHeads, sgn)),
          { buffer: src },
          { buffer: dst },
          { buffer: rope.cos },
          { buffer: rope.sin },
        ],
        N * n * half,
      );
    /** y = res + RMSNorm(x) w (a post-branch norm and its residual add), the inverse kept. */
    const normRes = (phase: string, x: GPUBuffer, w: VectorRef, res: GPUBuffer, y: GPUBuffer, inv: GPUBuffer) =>
      elem(
        phase,
        rmsNormResKernel(),
        [
          u(packRow(N, H, m.eps, false)),
          { buffer: x },
          { buffer: w.buffer },
          { buffer: res },
          { buffer: y },
          { buffer: inv },
        ],
        N,
      );
    const slotOf = (l: number, p: ProjKey) => slots.find((s) => s.layer === l && s.proj === p);
    // a mask in the staging -> its bits (loadMasks encodes each slot's phase after its copy)
    if (xd)
      slots.forEach((s, i) =>
        plan.add(
          `dropout pack ${i}`,
          dropPackKernel(),
          [u(packCnt(N * s.inF)), { buffer: xd }, { buffer: this.masks[i] }, { buffer: this.dropScale! }],
          elemWorkgroups(Math.ceil((N * s.inF) / 32)),
        ),
      );
    /** xd = x M (the slot's dropout multiplier), or dx += xd M; x itself without dropout. */
    const dropped = (
      phase: string,
      s: LoraSlot,
      x: GPUBuffer,
      out: GPUBuffer | null,
      accumulate = false,
    ): GPUBuffer => {
      if (!out) return x;
      elem(
        phase,
        dropMulKernel(),
        [
          u(packDrop(N * s.inF, accumulate)),
          { buffer: x },
          { buffer: this.masks[slots.indexOf(s)] },
          { buffer: this.dropScale! },
          { buffer: out },
        ],
        N * s.inF,
      );
      return out;
    };

    /** A projection's weight by row blocks (one binding each) and the first row of each. */
    const blocksOf = (l: number, p: ProjKey): { w: WeightRef; row: number }[] => {
      let row = 0;
      return (m.layers[l][p].blocks ?? [m.layers[l][p].weight]).map((w) => ((row += w.rows), { w, row: row - w.rows }));
    };

    /**
     * y = x W^T + bias [+ residual], then y += s (x A^T) B^T when the projection is adapted and on;
     * `xaOnly`: x A^T alone (a rebuild that needs the adapter's input product, not y).
     */
    const project = (
      phase: string,
      lora: boolean,
      l: number,
      p: ProjKey,
      x: GPUBuffer,
      y: GPUBuffer,
      res?: GPUBuffer,
      xaOnly = false,
    ) => {
      const pr = m.layers[l][p];
      const [inF, outF] = projDims(m)[p];
      if (!xaOnly) {
        // y[:, block rows] = x W_block^T (+ bias, residual) per row block
        for (const { w, row } of blocksOf(l, p)) {
          gemmW(
            phase,
            x,
            rowMajor(inF),
            w,
            true,
            y,
            { M: N, N: w.rows, K: inF, c: rowMajor(outF, row), biasOff: pr.bias ? row : undefined, residual: !!res },
            { bias: pr.bias?.buffer, res },
          );
        }
      }
      const s = slotOf(l, p);
      if (!lora || !s) return;
      const xa = this.layers[l].xa[p]!;
      // xa = drop(x) A^T
      gemm(phase, dropped(phase, s, x, xd), this.params, xa, {
        M: N,
        N: s.r,
        K: inF,
        a: rowMajor(inF),
        b: { off: s.aOff, s0: 1, s1: inF },
        c: rowMajor(s.r),
      });
      if (xaOnly) return;
      // y += s xa B^T
      gemm(phase, xa, this.params, y, {
        M: N,
        N: outF,
        K: s.r,
        a: rowMajor(s.r),
        b: { off: s.bOff, s0: 1, s1: s.r },
        c: rowMajor(outF),
        alpha: s.scale,
        accumulate: true,
      });
    };

    /** Backward of `project` for its input: dx (+)= dy W, and the adapter's dA, dB. */
    const projectBack = (l: number, p: ProjKey, dy: GPUBuffer, x: GPUBuffer, dx: GPUBuffer, accumulate: boolean) => {
      const [inF, outF] = projDims(m)[p];
      // dx (+)= dy W, summed over the row blocks: dy[:, block rows] W_block
      blocksOf(l, p).forEach(({ w, row }, i) => {
        gemmW('bwd', dy, rowMajor(outF, row), w, false, dx, {
          M: N,
          N: inF,
          K: w.rows,
          c: rowMajor(inF),
          accumulate: accumulate || i > 0,
        });
      });
      const s = slotOf(l, p);
      if (!s) return;
      const xa = this.layers[l].xa[p]!;
      // dB = s dy^T xa
      gemm('bwd', dy, xa, this.grads, {
        M: outF,
        N: s.r,
        K: N,
        a: { off: 0, s0: 1, s1: outF },
        b: rowMajor(s.r),
        c: rowMajor(s.r, s.bOff),
        alpha: s.scale,
        accumulate: true,
      });
      // dxa = s dy B
      gemm('bwd', dy, this.params, dxa, {
        M: N,
        N: s.r,
        K: outF,
        a: rowMajor(outF),
        b: rowMajor(s.r, s.bOff),
        c: rowMajor(s.r),
        alpha: s.scale,
      });
      // dA = dxa^T drop(x)
      gemm('bwd', dxa, dropped('bwd', s, x, xd), this.grads, {
        M: s.r,
        N: inF,
        K: N,
        a: { off: 0, s0: 1, s1: s.r },
        b: rowMajor(inF),
        c: rowMajor(inF, s.aOff),
        accumulate: true,
      });
      if (xd) {
        // dx += (dxa A) M
        gemm('bwd', dxa, this.params, xd, {
          M: N,
          N: inF,
          K: s.r,
          a: rowMajor(s.r),
          b: rowMajor(inF, s.aOff),
          c: rowMajor(inF),
        });
        dropped('bwd', s, xd, dx, true);
      } else {
        // dx += dxa A
        gemm('bwd', dxa, this.params, dx, {
          M: N,
          N: inF,
          K: s.r,
          a: rowMajor(s.r),
          b: rowMajor(inF, s.aOff),
          c: rowMajor(inF),
          accumulate: true,
        });
      }
    };

    const headDims = { nH: m.heads, nKV: m.kvHeads };
    const zH = B * headDims.nH;
    const zKV = B * headDims.nKV;
    const pOp = (off = 0): Operand => ({ off, s0: L, s1: 1, sb: m.heads * L * L, sh: L * L });
    const qHead: Operand = { off: 0, s0: D, s1: 1, sb: m.heads * L * D, sh: L * D };
    const kvHead = (transposed: boolean): Operand => ({
      off: 0,
      s0: transposed ? 1 : D,
      s1: transposed ? D : 1,
      sb: m.kvHeads * L * D,
      sh: L * D,
      div: G,
    });

    /** The forward through layers [from, to); `rebuild`: those layers' activations again (recompute), no embedding, head or layer output. */
    const forward = (phase: string, lora: boolean, from = 0, to = nL, rebuild = false) => {
      // x = embed[ids]
      if (!rebuild)
        for (const e of m.embed)
          elem(
            phase,
            embedRowsKernel(),
            [
              u(packEmb(N, H, e.rowStart, e.rows, m.embedScale)),
              { buffer: this.ids },
              { buffer: e.buffer },
              { buffer: xs(0) },
            ],
            N * H,
          );
      for (let l = from; l < to; l++) {
        const lb = this.layers[l];
        const lw = m.layers[l];
        // h1 = norm1(x)
        elem(
          phase,
          rmsNormKernel(),
          [
            u(packRow(N, H, m.eps, false)),
            { buffer: lb.xin },
            { buffer: lw.inputNorm.buffer },
            { buffer: lb.h1 },
            { buffer: lb.inv1 },
          ],
          N,
        );
        // q, k, v = h1 W^T (+ LoRA); [per-head norms of q and k, their inputs kept;] heads, RoPE on q and k
        const qk = lb.qk;
        project(phase, lora, l, 'q', lb.h1, qk ? qk.q : qt);
        project(phase, lora, l, 'k', lb.h1, qk ? qk.k : kt);
        project(phase, lora, l, 'v', lb.h1, vt);
        if (qk) {
          headNorm(phase, qk.q, lw.qNorm!, qt, qk.qInv, m.heads);
          headNorm(phase, qk.k, lw.kNorm!, kt, qk.kInv, m.kvHeads);
        }
        const rope = ropeOf(l);
        const scale = lw.attnScale ?? 1 / Math.sqrt(D);
        heads(phase, qt, lb.qh, m.heads, true, 1, rope);
        heads(phase, kt, lb.kh, m.kvHeads, true, 1, rope);
        heads(phase, vt, lb.vh, m.kvHeads, true, 0);
        // S = q k^T / sqrt(D); P = softmax(S + mask)
        gemm(
          phase,
          lb.qh,
          lb.kh,
          lb.p,
          { M: L, N: L, K: D, Z1: m.heads, a: qHead, b: kvHead(true), c: pOp(), alpha: scale },
          {},
          zH,
        );
        elem(
          phase,
          softmaxKernel(),
          [u(packSm(zH * L, L, m.heads, lw.window ?? 0)), { buffer: lb.p }, { buffer: this.valid }],
          zH * L,
        );
        // ao = P v (token-major)
        gemm(
          phase,
          lb.p,
          lb.vh,
          lb.ao,
          {
            M: L,
            N: D,
            K: L,
            Z1: m.heads,
            a: pOp(),
            b: kvHead(false),
            c: { off: 0, s0: qF, s1: 1, sb: L * qF, sh: D },
          },
          {},
          zH,
        );
        // xmid = x + ao Wo^T, or x + norm(ao Wo^T) (a post-branch norm)
        const post = lb.post;
        if (post && lw.attnOutNorm) {
          project(phase, lora, l, 'o', lb.ao, post.o);
          normRes(phase, post.o, lw.attnOutNorm, lb.xin, lb.xmid, post.oInv);
        } else project(phase, lora, l, 'o', lb.ao, lb.xmid, lb.xin);
        // h2 = norm2(xmid); act = silu(h2 Wg^T) (h2 Wu^T)
        elem(
          phase,
          rmsNormKernel(),
          [
            u(packRow(N, H, m.eps, false)),
            { buffer: lb.xmid },
            { buffer: lw.postNorm.buffer },
            { buffer: lb.h2 },
            { buffer: lb.inv2 },
          ],
          N,
        );
        project(phase, lora, l, 'gate', lb.h2, lb.g);
        project(phase, lora, l, 'up', lb.h2, lb.u);
        elem(
          phase,
          swigluKernel(m.activation),
          [u(packCnt(N * I)), { buffer: lb.g }, { buffer: lb.u }, { buffer: lb.act }],
          N * I,
        );
        // x' = xmid + act Wd^T (a rebuild needs only act A^T: x' is kept), or xmid + norm(act Wd^T)
        // (a rebuild needs the norm's input and inverse too; x' is rewritten with the same bits)
        if (post && lw.mlpOutNorm) {
          project(phase, lora, l, 'down', lb.act, post.down);
          normRes(phase, post.down, lw.mlpOutNorm, lb.xmid, xs(l + 1), post.downInv);
        } else project(phase, lora, l, 'down', lb.act, xs(l + 1), lb.xmid, rebuild);
      }
      if (rebuild) return;
      // hn = norm(x); logits of the response-predicting rows; token statistics
      elem(
        phase,
        rmsNormKernel(),
        [u(packRow(N, H, m.eps, false)), { buffer: xOut }, { buffer: m.norm.buffer }, { buffer: hn }, { buffer: invF }],
        N,
      );
      let row = 0;
      for (const w of m.head) {
        gemmW(
          phase,
          hn,
          { off: (P - 1) * H, s0: H, s1: 1, sb: L * H },
          w,
          true,
          logits,
          { M: T, N: w.rows, K: H, c: { off: row, s0: V, s1: 1, sb: T * V } },
          {},
          B,
        );
        row += w.rows;
      }
      plan.add(
        phase,
        statsKernel(),
        [
          u(packSt(R, V, !lora, 1 / opts.temperature)),
          { buffer: logits },
          { buffer: this.targets },
          { buffer: this.stats },
        ],
        [R, 1, 1],
      );
    };

    forward('ref', false);
    forward('fwd', true);

    // ---- backward, in mirror order
    // d logits = (dlogp (onehot - p) - dH p (log p + H)) / T
    plan.add(
      'bwd',
      statsGradKernel(),
      [
        u(packSt(R, V, false, 1 / opts.temperature)),
        { buffer: logits },
        { buffer: this.targets },
        { buffer: this.stats },
        { buffer: this.dstats },
        { buffer: dlogits },
      ],
      [R, 1, 1],
    );
    // d hn[response rows] += d logits W_head (the rows start as a value loss's d hidden, or zero;
    // the other rows stay zero)
    let row = 0;
    m.head.forEach((w) => {
      gemmW(
        'bwd',
        dlogits,
        { off: row, s0: V, s1: 1, sb: T * V },
        w,
        false,
        dhn,
        { M: T, N: H, K: w.rows, c: { off: (P - 1) * H, s0: H, s1: 1, sb: L * H }, accumulate: true },
        {},
        B,
      );
      row += w.rows;
    });
    // d x = norm_bwd(d hn)
    elem(
      'bwd',
      rmsNormGradKernel(),
      [
        u(packRow(N, H, m.eps, false)),
        { buffer: xOut },
        { buffer: m.norm.buffer },
        { buffer: invF },
        { buffer: dhn },
        { buffer: dres },
      ],
      N,
    );
    for (let l = nL - 1; l >= 0; l--) {
      const lb = this.layers[l];
      const lw = m.layers[l];
      // h1 .. act, x A^T = layer l's forward again from its kept input (the last layer's are current)
      if (recompute && l < nL - 1) forward('bwd', true, l, l + 1, true);
      const post = lb.post;
      /** d branch = norm_bwd(d x) through a post-branch norm (the residual's d x passes on unchanged). */
      const postBack = (x: GPUBuffer, w: VectorRef, inv: GPUBuffer) => {
        elem(
          'bwd',
          rmsNormGradKernel(),
          [
            u(packRow(N, H, m.eps, false)),
            { buffer: x },
            { buffer: w.buffer },
            { buffer: inv },
            { buffer: dres },
            { buffer: dpost! },
          ],
          N,
        );
        return dpost!;
      };
      // d act = d x · W_down (+ LoRA) [through the post norm]
      const ddown = post && lw.mlpOutNorm ? postBack(post.down, lw.mlpOutNorm, post.downInv) : dres;
      projectBack(l, 'down', ddown, lb.act, dact, false);
      // d g, d u = swiglu_bwd(d act)
      elem(
        'bwd',
        swigluGradKernel(m.activation),
        [u(packCnt(N * I)), { buffer: lb.g }, { buffer: lb.u }, { buffer: dact }, { buffer: dg }, { buffer: du }],
        N * I,
      );
      // d h2 = d g · W_gate + d u · W_up
      projectBack(l, 'gate', dg, lb.h2, dh, false);
      projectBack(l, 'up', du, lb.h2, dh, true);
      // d xmid = d x + norm2_bwd(d h2)
      elem(
        'bwd',
        rmsNormGradKernel(),
        [
          u(packRow(N, H, m.eps, true)),
          { buffer: lb.xmid },
          { buffer: lw.postNorm.buffer },
          { buffer: lb.inv2 },
          { buffer: dh },
          { buffer: dres },
        ],
        N,
      );
      // d ao = d xmid · W_o [through the post norm]
      const dout = post && lw.attnOutNorm ? postBack(post.o, lw.attnOutNorm, post.oInv) : dres;
      projectBack(l, 'o', dout, lb.ao, dao, false);
      heads('bwd', dao, daoh, m.heads, true, 0);
      const rope = ropeOf(l);
      const scale = lw.attnScale ?? 1 / Math.sqrt(D);
      // d P = d ao · v^T; d S = P (d P - sum P d P)
      gemm('bwd', daoh, lb.vh, dP, { M: L, N: L, K: D, Z1: m.heads, a: qHead, b: kvHead(true), c: pOp() }, {}, zH);
      elem('bwd', softmaxGradKernel(), [u(packSm(zH * L, L, m.heads)), { buffer: lb.p }, { buffer: dP }], zH * L);
      // d q = d S · k / sqrt(D)
      gemm(
        'bwd',
        dP,
        lb.kh,
        dqh,
        { M: L, N: D, K: L, Z1: m.heads, a: pOp(), b: kvHead(false), c: qHead, alpha: scale },
        {},
        zH,
      );
      // d k = sum over the group's heads of d S^T · q / sqrt(D); d v = sum of P^T · d ao
      const grouped: Operand = { off: 0, s0: 1, s1: L, sb: m.heads * L * L, sh: G * L * L };
      const qGroup: Operand = { off: 0, s0: D, s1: 1, sb: m.heads * L * D, sh: G * L * D };
      const kvOut: Operand = { off: 0, s0: D, s1: 1, sb: m.kvHeads * L * D, sh: L * D };
      gemm(
        'bwd',
        dP,
        lb.qh,
        dkh,
        { M: L, N: D, K: G * L, Z1: m.kvHeads, a: grouped, b: qGroup, c: kvOut, alpha: scale },
        {},
        zKV,
      );
      gemm('bwd', lb.p, daoh, dvh, { M: L, N: D, K: G * L, Z1: m.kvHeads, a: grouped, b: qGroup, c: kvOut }, {}, zKV);
      // undo RoPE (its transpose) and the head layout
      heads('bwd', dqh, dq, m.heads, false, -1, rope);
      heads('bwd', dkh, dk, m.kvHeads, false, -1, rope);
      heads('bwd', dvh, dv, m.kvHeads, false, 0);
      // [through the per-head norms;] d h1 = d q · W_q + d k · W_k + d v · W_v
      const qk = lb.qk;
      if (qk && dqk) {
        headNormBack(qk.q, lw.qNorm!, qk.qInv, dq, dqk.q, m.heads);
        headNormBack(qk.k, lw.kNorm!, qk.kInv, dk, dqk.k, m.kvHeads);
      }
      projectBack(l, 'q', qk && dqk ? dqk.q : dq, lb.h1, dh, false);
      projectBack(l, 'k', qk && dqk ? dqk.k : dk, lb.h1, dh, true);
      projectBack(l, 'v', dv, lb.h1, dh, true);
      // d x = d xmid + norm1_bwd(d h1)
      elem(
        'bwd',
        rmsNormGradKernel(),
        [
          u(packRow(N, H, m.eps, true)),
          { buffer: lb.xin },
          { buffer: lw.inputNorm.buffer },
          { buffer: lb.inv1 },
          { buffer: dh },
          { buffer: dres },
        ],
        N,
      );
    }
    plan.finalize();
  }

  /** Dispatches per phase ('ref', 'fwd', 'bwd'). */
  dispatches(): Record<'ref' | 'fwd' | 'bwd', number> {
    return { ref: this.plan.count('ref'), fwd: this.plan.count('fwd'), bwd: this.plan.count('bwd') };
  }

  /** A flat gradient buffer for plans of this model description's LoRA layout (`opts.grads`). */
  static gradBuffer(device: GPUDevice, m: LearnShape): GPUBuffer {
    const bytes = loraSlots(m).count * F;
    // GpuPlan.buffer's size and usage, so the plan's byte count is the same either way.
    return device.createBuffer({
      label: 'learn:lora grads',
      size: alignUp(Math.max(bytes, 4), 16),
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
    });
  }

  /** The per-token statistics after a forward, [B T, STATS_COLS]: log-prob, entropy, reference log-prob, logsumexp. */
  get statsBuffer(): GPUBuffer {
    return this.stats;
  }

  /** Writes ids, targets, key validity and RoPE tables (positions = real tokens before, as the tfjs path). */
  writeInputs(inp: LearnInputs): void {
    const { B, L, P, T } = this;
    const half = this.model.headDim / 2;
    if (inp.ids.length !== B || inp.attentionMask.length !== B)
      throw new Error(`learn plan: ${inp.ids.length} rows given, the plan has ${B}`);
    const ids = new Int32Array(B * L);
    const targets = new Int32Array(B * T);
    const valid = new Float32Array(B * L);
    // one table of B L x half per RoPE, one after another
    const invFreqs = this.model.invFreqs ?? [this.model.invFreq];
    const cos = new Float32Array(invFreqs.length * B * L * half);
    const sin = new Float32Array(invFreqs.length * B * L * half);
    for (let b = 0; b < B; b++) {
      const row = inp.ids[b];
      const mask = inp.attentionMask[b];
      if (row.length !== P + T || mask.length !== P + T)
        throw new Error(`learn plan: row ${b} has ${row.length} ids, the plan takes ${P + T}`);
      let pos = 0;
      for (let i = 0; i < L; i++) {
        const t = b * L + i;
        ids[t] = row[i];
        const real = mask[i] !== 0;
        valid[t] = real ? 1 : 0;
        const at = real ? pos++ : 0;
        invFreqs.forEach((inv, r) => {
          for (let j = 0; j < half; j++) {
            const angle = at * inv[j];
            cos[(r * B * L + t) * half + j] = Math.cos(angle);
            sin[(r * B * L + t) * half + j] = Math.sin(angle);
          }
        });
      }
      for (let t = 0; t < T; t++) targets[b * T + t] = row[P + t];
    }
    const q = this.device.queue;
    q.writeBuffer(this.ids, 0, ids);
    q.writeBuffer(this.targets, 0, targets);
    q.writeBuffer(this.valid, 0, valid);
    const n = B * L * half;
    [{ cos: this.cos, sin: this.sin }, ...this.ropeTables].forEach((tab, r) => {
      q.writeBuffer(tab.cos, 0, cos, r * n, n);
      q.writeBuffer(tab.sin, 0, sin, r * n, n);
    });
  }

  /** Copies the adapters' factors (device buffers, slot order, A then B each) into `params`. */
  loadParams(factors: { A: GPUBuffer; B: GPUBuffer }[]): void {
    if (factors.length !== this.slots.length)
      throw new Error(`learn plan: ${factors.length} adapters given, the plan has ${this.slots.length}`);
    const enc = this.device.createCommandEncoder({ label: 'learn: load params' });
    this.slots.forEach((s, i) => {
      enc.copyBufferToBuffer(factors[i].A, 0, this.params, s.aOff * F, s.r * s.inF * F);
      enc.copyBufferToBuffer(factors[i].B, 0, this.params, s.bOff * F, s.outF * s.r * F);
    });
    this.device.queue.submit([enc.finish()]);
  }

  /** Whether the plan applies LoRA dropout (opts.dropout with at least one adapter). */
  get dropout(): boolean {
    return this.masks.length > 0;
  }

  /**
   * The dropout multipliers of the next forward and backward for the slots from `first` on, one
   * [N, in] f32 device buffer each in the plan's token order (copied in and packed to bits), or
   * null for no dropout (every mask keeps every element).
   */
  loadMasks(masks: GPUBuffer[] | null, first = 0): void {
    if (masks && first + masks.length > this.masks.length)
      throw new Error(
        `learn plan: dropout masks for slots ${first} to ${first + masks.length - 1}, the plan has ${this.masks.length}`,
      );
    const enc = this.device.createCommandEncoder({ label: 'learn: load dropout masks' });
    this.masks.forEach((m, i) => {
      const n = this.N * this.slots[i].inF;
      if (masks) {
        if (i < first || i >= first + masks.length) return;
        // The f32 multiplier into the staging, then packed to bits by the plan's dispatch.
        enc.copyBufferToBuffer(masks[i - first], 0, this.dropStaging!, 0, n * F);
        const pass = enc.beginComputePass();
        this.plan.encode(pass, `dropout pack ${i}`, 0);
        pass.end();
      } else if (!this.masksOnes[i]) {
        this.device.queue.writeBuffer(m, 0, new Uint32Array(Math.ceil(n / 32)).fill(0xffffffff));
        this.device.queue.writeBuffer(this.dropScale!, 0, new Float32Array([1]));
      }
      this.masksOnes[i] = !masks;
    });
    this.device.queue.submit([enc.finish()]);
  }

  private pass(
    phases: string[],
    after?: (enc: GPUCommandEncoder) => void,
    before?: (enc: GPUCommandEncoder) => void,
  ): void {
    // Cut into submits under the watchdog budget (EngineOptions.submitBudgetMs): a learning pass
    // of 64 x 128 tokens through SmolLM2-135M is ~2 TFLOP, seconds on a slow GPU.
    this.lastSubmits = this.plan.submitSplit(
      phases.map((phase) => ({ phase, slot: 0 })),
      submitFlopBudget(),
      { label: `learn: ${phases.join('+')}`, before, after },
    );
  }

  /** Submits the last forward or backward pass was cut into (EngineOptions.submitBudgetMs). */
  lastSubmits = 0;

  /** Estimated FLOPs per phase ('ref', 'fwd', 'bwd'): what the submit budget counts. */
  flops(): Record<'ref' | 'fwd' | 'bwd', number> {
    return { ref: this.plan.flops('ref'), fwd: this.plan.flops('fwd'), bwd: this.plan.flops('bwd') };
  }

  /**
   * Runs the forward (and first the reference pass when `reference`) and reads back per response
   * token [B T] log-prob, entropy, and the reference log-prob (0 without); `withHidden` also fills
   * `hidden`. With `policy` false only the reference pass runs (log-prob and entropy are stale).
   */
  async forward(
    reference: boolean,
    withHidden = false,
    policy = true,
  ): Promise<{ logp: Float32Array; entropy: Float32Array; refLogp: Float32Array | null }> {
    const bytes = this.R * STATS_COLS * F;
    this.forwardOnGpu(reference, withHidden, policy, (enc) =>
      enc.copyBufferToBuffer(this.stats, 0, this.statsRead, 0, bytes),
    );
    await this.statsRead.mapAsync(GPUMapMode.READ, 0, bytes);
    const s = new Float32Array(this.statsRead.getMappedRange(0, bytes).slice(0));
    this.statsRead.unmap();
    const col = (c: number) => Float32Array.from({ length: this.R }, (_, i) => s[i * STATS_COLS + c]);
    return { logp: col(0), entropy: col(1), refLogp: reference ? col(2) : null };
  }

  /**
   * The forward of `forward` with nothing read back: the statistics stay in `statsBuffer` (and the
   * hidden rows in `hidden`) for a loss on the GPU; `after` records more into the same encoder.
   */
  forwardOnGpu(reference: boolean, withHidden = false, policy = true, after?: (enc: GPUCommandEncoder) => void): void {
    const H = this.model.hidden;
    this.pass([...(reference ? ['ref'] : []), ...(policy ? ['fwd'] : [])], (enc) => {
      after?.(enc);
      // The response-predicting rows (the last T of each row's L) for a value head.
      for (let b = 0; withHidden && b < this.B; b++)
        enc.copyBufferToBuffer(
          this.hn,
          (b * this.L + this.P - 1) * H * F,
          this.hidden,
          b * this.T * H * F,
          this.T * H * F,
        );
    });
  }

  /** Backward from d loss / d log-prob and d loss / d entropy per response token [B T] into `grads`. */
  backward(dlogp: ArrayLike<number>, dentropy: ArrayLike<number>): void {
    if (dlogp.length !== this.R || dentropy.length !== this.R)
      throw new Error(`learn plan: gradients of ${dlogp.length} / ${dentropy.length} tokens, the plan has ${this.R}`);
    const d = new Float32Array(this.R * 2);
    for (let i = 0; i < this.R; i++) {
      d[2 * i] = dlogp[i];
      d[2 * i + 1] = dentropy[i];
    }
    this.device.queue.writeBuffer(this.dstats, 0, d);
    this.backwardFrom(null);
  }

  /**
   * Backward from GPU buffers: `dstats` [B T, 2] (d loss / d log-prob, d loss / d entropy per
   * token, interleaved; null: already in place), and `dhidden` [B T, H], d loss / d hidden at the
   * final hidden rows (a value loss into the adapters). `accumulate` adds into `grads` (the next
   * micro-batch of a step) instead of overwriting them. Copies in, one pass, one submit.
   */
  backwardFrom(dstats: GPUBuffer | null, opts: { dhidden?: GPUBuffer; accumulate?: boolean } = {}): void {
    const before = (enc: GPUCommandEncoder) => {
      if (dstats) enc.copyBufferToBuffer(dstats, 0, this.dstats, 0, this.R * 2 * F);
      // The head's product adds into the response rows of d hn: d hidden there, or zeros.
      const rowBytes = this.T * this.model.hidden * F;
      for (let b = 0; b < this.B; b++) {
        const at = (b * this.L + this.P - 1) * this.model.hidden * F;
        if (opts.dhidden) enc.copyBufferToBuffer(opts.dhidden, b * rowBytes, this.dhn, at, rowBytes);
        else enc.clearBuffer(this.dhn, at, rowBytes);
      }
      // The weight-gradient products add into grads too: zero them first unless accumulating.
      if (!opts.accumulate) enc.clearBuffer(this.grads, 0, this.paramCount * F);
    };
    this.pass(['bwd'], undefined, before);
  }

  /** The gradient buffer read back (tests; one staging buffer made on first use). */
  async readGrads(): Promise<Float32Array> {
    const bytes = this.paramCount * F;
    this.gradsRead ??= this.plan.buffer('grads readback', bytes, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
    const enc = this.device.createCommandEncoder();
    enc.copyBufferToBuffer(this.grads, 0, this.gradsRead, 0, bytes);
    this.device.queue.submit([enc.finish()]);
    await this.gradsRead.mapAsync(GPUMapMode.READ, 0, bytes);
    const g = new Float32Array(this.gradsRead.getMappedRange(0, bytes).slice(0));
    this.gradsRead.unmap();
    return g;
  }

  dispose(): void {
    this.plan.dispose();
  }
}

export type { BufferRange };
