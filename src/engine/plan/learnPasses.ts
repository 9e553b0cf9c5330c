// The learning plan's last two steps over its sizes and buffers (learnLayout.ts): the kernels
// (`LearnOps`: each operation of the step, forward and backward, as the dispatches it adds: which
// kernel, its bindings, its grid and its FLOPs) and the passes (`recordLearnPasses`: the
// reference and adapted forwards through the block read from each layer's description, then the
// backward in mirror order).
import { type BindingValue, type GpuPlan } from './plan';
import type { DecodeModelRef, ProjKey, VectorRef, WeightRef } from './modelRef';
import {
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
  type GemmUniform,
  type Operand,
} from './learnKernels';
import { projDims, type LearnBuffers, type LearnPlanOptions, type LearnSizes, type LoraSlot } from './learnLayout';

const u = (b: ArrayBuffer): BindingValue => ({ uniform: b });
const rowMajor = (cols: number, off = 0): Operand => ({ off, s0: cols, s1: 1 });
/** A product's optional bias and residual operands. */
type Extra = { bias?: GPUBuffer; res?: GPUBuffer };

/** Step 3, the kernels: each operation of the learning step as the dispatches it adds to a phase. */
export class LearnOps {
  private readonly dummy: BindingValue;

  constructor(
    readonly plan: GpuPlan,
    readonly m: DecodeModelRef,
    readonly s: LearnSizes,
    readonly b: LearnBuffers,
    readonly opts: LearnPlanOptions,
  ) {
    this.dummy = { buffer: b.dummy };
  }

  private tail(C: GPUBuffer, extra: Extra): BindingValue[] {
    return [
      { buffer: C },
      extra.bias ? { buffer: extra.bias } : this.dummy,
      extra.res ? { buffer: extra.res } : this.dummy,
    ];
  }

  /** C = alpha A B (+ ...), B a plain buffer. */
  gemm(phase: string, A: GPUBuffer, Bm: GPUBuffer, C: GPUBuffer, g: GemmUniform, extra: Extra = {}, Z = 1): void {
    this.plan.add(
      phase,
      gemmKernel('buf', 0, this.opts.gemm),
      [u(packGemm(g)), { buffer: A }, { buffer: Bm }, ...this.tail(C, extra)],
      gemmWorkgroups(g.M, g.N, Z),
      2 * g.M * g.N * g.K * Z,
    );
  }

  /** C = x W^T (transposed) or dy W through a frozen weight [rows, cols]. */
  gemmW(
    phase: string,
    A: GPUBuffer,
    a: Operand,
    w: WeightRef,
    transposed: boolean,
    C: GPUBuffer,
    g: Omit<GemmUniform, 'a' | 'b'>,
    extra: Extra = {},
    Z = 1,
  ): void {
    const grid = gemmWorkgroups(g.M, g.N, Z);
    const flops = 2 * g.M * g.N * g.K * Z;
    if (w.kind === 'f32') {
      const b: Operand = transposed ? { off: 0, s0: 1, s1: w.cols } : { off: 0, s0: w.cols, s1: 1 };
      this.plan.add(
        phase,
        gemmKernel('buf', 0, this.opts.gemm),
        [u(packGemm({ ...g, a, b })), { buffer: A }, { buffer: w.buffer }, ...this.tail(C, extra)],
        grid,
        flops,
      );
    } else {
      const full: GemmUniform = { ...g, a, b: { off: 0, s0: 0, s1: 0 }, wK: w.cols, wT: transposed };
      this.plan.add(
        phase,
        gemmKernel(w.kind, w.groupSize, this.opts.gemm),
        [u(packGemm(full)), { buffer: A }, { buffer: w.words }, ...this.tail(C, extra), { buffer: w.scales }],
        grid,
        flops,
      );
    }
  }

  elem(phase: string, k: ReturnType<typeof swigluKernel>, values: BindingValue[], n: number): void {
    this.plan.add(phase, k, values, elemWorkgroups(n));
  }

  /** y = RMSNorm(x) w over rows of `width` (`rows` of them), the inverse kept. */
  rmsNorm(phase: string, rows: number, width: number, x: GPUBuffer, w: GPUBuffer, y: GPUBuffer, inv: GPUBuffer): void {
    this.elem(
      phase,
      rmsNormKernel(),
      [u(packRow(rows, width, this.m.eps, false)), { buffer: x }, { buffer: w }, { buffer: y }, { buffer: inv }],
      rows,
    );
  }

  /** dx (+)= RMSNorm's backward of dy (`accumulate`: added into dx, a residual's gradient). */
  rmsNormBack(
    rows: number,
    width: number,
    x: GPUBuffer,
    w: GPUBuffer,
    inv: GPUBuffer,
    dy: GPUBuffer,
    dx: GPUBuffer,
    accumulate: boolean,
  ): void {
    this.elem(
      'bwd',
      rmsNormGradKernel(),
      [
        u(packRow(rows, width, this.m.eps, accumulate)),
        { buffer: x },
        { buffer: w },
        { buffer: inv },
        { buffer: dy },
        { buffer: dx },
      ],
      rows,
    );
  }

  /** RMSNorm of every head (rows of D in a token-major [N, n D]): the row kernel over N n rows. */
  headNorm(phase: string, x: GPUBuffer, w: VectorRef, y: GPUBuffer, inv: GPUBuffer, n: number): void {
    this.rmsNorm(phase, this.s.N * n, this.s.D, x, w.buffer, y, inv);
  }

  headNormBack(x: GPUBuffer, w: VectorRef, inv: GPUBuffer, dy: GPUBuffer, dx: GPUBuffer, n: number): void {
    this.rmsNormBack(this.s.N * n, this.s.D, x, w.buffer, inv, dy, dx, false);
  }

  /** The cos / sin tables of layer l's RoPE. */
  ropeOf(l: number): { cos: GPUBuffer; sin: GPUBuffer } {
    const r = this.m.layers[l].rope ?? 0;
    return r === 0 ? { cos: this.b.cos, sin: this.b.sin } : this.b.ropeTables[r - 1];
  }

  /** Token-major [N, n D] to heads [B, n, L, D] (or back), rotated by RoPE with sign sgn (0: none). */
  heads(
    phase: string,
    src: GPUBuffer,
    dst: GPUBuffer,
    n: number,
    toHeads: boolean,
    sgn: number,
    rope = { cos: this.b.cos, sin: this.b.sin },
  ): void {
    const { N, L, D, half } = this.s;
    this.elem(
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
  }

  /** y = res + RMSNorm(x) w (a post-branch norm and its residual add), the inverse kept. */
  normRes(phase: string, x: GPUBuffer, w: VectorRef, res: GPUBuffer, y: GPUBuffer, inv: GPUBuffer): void {
    const { N, H } = this.s;
    this.elem(
      phase,
      rmsNormResKernel(),
      [
        u(packRow(N, H, this.m.eps, false)),
        { buffer: x },
        { buffer: w.buffer },
        { buffer: res },
        { buffer: y },
        { buffer: inv },
      ],
      N,
    );
  }

  /** A mask in the dropout scratch -> slot i's bits (loadMasks encodes each slot's phase after its copy). */
  dropPack(i: number, s: LoraSlot): void {
    const n = this.s.N * s.inF;
    this.plan.add(
      `dropout pack ${i}`,
      dropPackKernel(),
      [u(packCnt(n)), { buffer: this.b.dropScratch! }, { buffer: this.b.masks[i] }, { buffer: this.b.dropScale! }],
      elemWorkgroups(Math.ceil(n / 32)),
    );
  }

  /** out = x M (the slot's dropout multiplier), or out += x M; x itself without dropout (out null). */
  private dropped(phase: string, s: LoraSlot, x: GPUBuffer, out: GPUBuffer | null, accumulate = false): GPUBuffer {
    if (!out) return x;
    this.elem(
      phase,
      dropMulKernel(),
      [
        u(packDrop(this.s.N * s.inF, accumulate)),
        { buffer: x },
        { buffer: this.b.masks[this.s.slots.indexOf(s)] },
        { buffer: this.b.dropScale! },
        { buffer: out },
      ],
      this.s.N * s.inF,
    );
    return out;
  }

  private slotOf(l: number, p: ProjKey): LoraSlot | undefined {
    return this.s.slots.find((s) => s.layer === l && s.proj === p);
  }

  /** A projection's weight by row blocks (one binding each) and the first row of each. */
  private blocksOf(l: number, p: ProjKey): { w: WeightRef; row: number }[] {
    let row = 0;
    const pr = this.m.layers[l][p];
    return (pr.blocks ?? [pr.weight]).map((w) => ((row += w.rows), { w, row: row - w.rows }));
  }

  /**
   * y = x W^T + bias [+ residual], then y += s (x A^T) B^T when the projection is adapted and on;
   * `xaOnly`: x A^T alone (a rebuild that needs the adapter's input product, not y).
   */
  project(
    phase: string,
    lora: boolean,
    l: number,
    p: ProjKey,
    x: GPUBuffer,
    y: GPUBuffer,
    res?: GPUBuffer,
    xaOnly = false,
  ): void {
    const { N } = this.s;
    const pr = this.m.layers[l][p];
    const [inF, outF] = projDims(this.m)[p];
    if (!xaOnly) {
      // y[:, block rows] = x W_block^T (+ bias, residual) per row block
      for (const { w, row } of this.blocksOf(l, p)) {
        this.gemmW(
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
    const s = this.slotOf(l, p);
    if (!lora || !s) return;
    const xa = this.b.layers[l].xa[p]!;
    // xa = drop(x) A^T
    this.gemm(phase, this.dropped(phase, s, x, this.b.dropScratch), this.b.params, xa, {
      M: N,
      N: s.r,
      K: inF,
      a: rowMajor(inF),
      b: { off: s.aOff, s0: 1, s1: inF },
      c: rowMajor(s.r),
    });
    if (xaOnly) return;
    // y += s xa B^T
    this.gemm(phase, xa, this.b.params, y, {
      M: N,
      N: outF,
      K: s.r,
      a: rowMajor(s.r),
      b: { off: s.bOff, s0: 1, s1: s.r },
      c: rowMajor(outF),
      alpha: s.scale,
      accumulate: true,
    });
  }

  /** Backward of `project` for its input: dx (+)= dy W, and the adapter's dA, dB. */
  projectBack(l: number, p: ProjKey, dy: GPUBuffer, x: GPUBuffer, dx: GPUBuffer, accumulate: boolean): void {
    const { N } = this.s;
    const { params, grads, dxa, dropScratch: xd } = this.b;
    const [inF, outF] = projDims(this.m)[p];
    // dx (+)= dy W, summed over the row blocks: dy[:, block rows] W_block
    this.blocksOf(l, p).forEach(({ w, row }, i) => {
      this.gemmW('bwd', dy, rowMajor(outF, row), w, false, dx, {
        M: N,
        N: inF,
        K: w.rows,
        c: rowMajor(inF),
        accumulate: accumulate || i > 0,
      });
    });
    const s = this.slotOf(l, p);
    if (!s) return;
    const xa = this.b.layers[l].xa[p]!;
    // dB = s dy^T xa
    this.gemm('bwd', dy, xa, grads, {
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
    this.gemm('bwd', dy, params, dxa, {
      M: N,
      N: s.r,
      K: outF,
      a: rowMajor(outF),
      b: rowMajor(s.r, s.bOff),
      c: rowMajor(s.r),
      alpha: s.scale,
    });
    // dA = dxa^T drop(x)
    this.gemm('bwd', dxa, this.dropped('bwd', s, x, xd), grads, {
      M: s.r,
      N: inF,
      K: N,
      a: { off: 0, s0: 1, s1: s.r },
      b: rowMajor(inF),
      c: rowMajor(inF, s.aOff),
      accumulate: true,
    });
    // dx += (dxa A) M, or dx += dxa A without dropout
    const dxaA = { M: N, N: inF, K: s.r, a: rowMajor(s.r), b: rowMajor(inF, s.aOff), c: rowMajor(inF) };
    if (xd) {
      this.gemm('bwd', dxa, params, xd, dxaA);
      this.dropped('bwd', s, xd, dx, true);
    } else this.gemm('bwd', dxa, params, dx, { ...dxaA, accumulate: true });
  }

  /** The operands of attention's batched products: P [B, nH, L, L], q heads [B, nH, L, D], k / v heads read by each query head's group. */
  attOperands() {
    const { m } = this;
    const { L, D, G } = this.s;
    return {
      pOp: (off = 0): Operand => ({ off, s0: L, s1: 1, sb: m.heads * L * L, sh: L * L }),
      qHead: { off: 0, s0: D, s1: 1, sb: m.heads * L * D, sh: L * D } as Operand,
      kvHead: (transposed: boolean): Operand => ({
        off: 0,
        s0: transposed ? 1 : D,
        s1: transposed ? D : 1,
        sb: m.kvHeads * L * D,
        sh: L * D,
        div: G,
      }),
    };
  }
}

/** The forward through layers [from, to); `rebuild`: those layers' activations again (recompute), no embedding, head or layer output. */
function forward(ops: LearnOps, phase: string, lora: boolean, from = 0, to = ops.m.layers.length, rebuild = false) {
  const { m, s, b } = ops;
  const { B, N, L, H, D, I, P, T, R, V, qF } = s;
  const nL = m.layers.length;
  const xs = (l: number) => (l < nL ? b.layers[l].xin : b.xOut);
  const zH = B * m.heads;
  const { pOp, qHead, kvHead } = ops.attOperands();
  // x = embed[ids]
  if (!rebuild)
    for (const e of m.embed)
      ops.elem(
        phase,
        embedRowsKernel(),
        [
          u(packEmb(N, H, e.rowStart, e.rows, m.embedScale)),
          { buffer: b.ids },
          { buffer: e.buffer },
          { buffer: xs(0) },
        ],
        N * H,
      );
  for (let l = from; l < to; l++) {
    const lb = b.layers[l];
    const lw = m.layers[l];
    // h1 = norm1(x)
    ops.rmsNorm(phase, N, H, lb.xin, lw.inputNorm.buffer, lb.h1, lb.inv1);
    // q, k, v = h1 W^T (+ LoRA); [per-head norms of q and k, their inputs kept;] heads, RoPE on q and k
    const qk = lb.qk;
    ops.project(phase, lora, l, 'q', lb.h1, qk ? qk.q : b.qt);
    ops.project(phase, lora, l, 'k', lb.h1, qk ? qk.k : b.kt);
    ops.project(phase, lora, l, 'v', lb.h1, b.vt);
    if (qk) {
      ops.headNorm(phase, qk.q, lw.qNorm!, b.qt, qk.qInv, m.heads);
      ops.headNorm(phase, qk.k, lw.kNorm!, b.kt, qk.kInv, m.kvHeads);
    }
    const rope = ops.ropeOf(l);
    const scale = lw.attnScale ?? 1 / Math.sqrt(D);
    ops.heads(phase, b.qt, lb.qh, m.heads, true, 1, rope);
    ops.heads(phase, b.kt, lb.kh, m.kvHeads, true, 1, rope);
    ops.heads(phase, b.vt, lb.vh, m.kvHeads, true, 0);
    // S = q k^T / sqrt(D); P = softmax(S + mask)
    ops.gemm(
      phase,
      lb.qh,
      lb.kh,
      lb.p,
      { M: L, N: L, K: D, Z1: m.heads, a: qHead, b: kvHead(true), c: pOp(), alpha: scale },
      {},
      zH,
    );
    ops.elem(
      phase,
      softmaxKernel(),
      [u(packSm(zH * L, L, m.heads, lw.window ?? 0)), { buffer: lb.p }, { buffer: b.valid }],
      zH * L,
    );
    // ao = P v (token-major)
    ops.gemm(
      phase,
      lb.p,
      lb.vh,
      lb.ao,
      { M: L, N: D, K: L, Z1: m.heads, a: pOp(), b: kvHead(false), c: { off: 0, s0: qF, s1: 1, sb: L * qF, sh: D } },
      {},
      zH,
    );
    // xmid = x + ao Wo^T, or x + norm(ao Wo^T) (a post-branch norm)
    const post = lb.post;
    if (post && lw.attnOutNorm) {
      ops.project(phase, lora, l, 'o', lb.ao, post.o);
      ops.normRes(phase, post.o, lw.attnOutNorm, lb.xin, lb.xmid, post.oInv);
    } else ops.project(phase, lora, l, 'o', lb.ao, lb.xmid, lb.xin);
    // h2 = norm2(xmid); act = silu(h2 Wg^T) (h2 Wu^T)
    ops.rmsNorm(phase, N, H, lb.xmid, lw.postNorm.buffer, lb.h2, lb.inv2);
    ops.project(phase, lora, l, 'gate', lb.h2, lb.g);
    ops.project(phase, lora, l, 'up', lb.h2, lb.u);
    ops.elem(
      phase,
      swigluKernel(m.activation),
      [u(packCnt(N * I)), { buffer: lb.g }, { buffer: lb.u }, { buffer: lb.act }],
      N * I,
    );
    // x' = xmid + act Wd^T (a rebuild needs only act A^T: x' is kept), or xmid + norm(act Wd^T)
    // (a rebuild needs the norm's input and inverse too; x' is rewritten with the same bits)
    if (post && lw.mlpOutNorm) {
      ops.project(phase, lora, l, 'down', lb.act, post.down);
      ops.normRes(phase, post.down, lw.mlpOutNorm, lb.xmid, xs(l + 1), post.downInv);
    } else ops.project(phase, lora, l, 'down', lb.act, xs(l + 1), lb.xmid, rebuild);
  }
  if (rebuild) return;
  // hn = norm(x); logits of the response-predicting rows; token statistics
  ops.rmsNorm(phase, N, H, b.xOut, m.norm.buffer, b.hn, b.invF);
  let row = 0;
  for (const w of m.head) {
    ops.gemmW(
      phase,
      b.hn,
      { off: (P - 1) * H, s0: H, s1: 1, sb: L * H },
      w,
      true,
      b.logits,
      { M: T, N: w.rows, K: H, c: { off: row, s0: V, s1: 1, sb: T * V } },
      {},
      B,
    );
    row += w.rows;
  }
  ops.plan.add(
    phase,
    statsKernel(),
    [
      u(packSt(R, V, !lora, 1 / ops.opts.temperature)),
      { buffer: b.logits },
      { buffer: b.targets },
      { buffer: b.stats },
    ],
    [R, 1, 1],
  );
}

/** The backward from d loss / d statistics to the LoRA gradients, in mirror order of `forward`. */
function backward(ops: LearnOps): void {
  const { m, s, b } = ops;
  const { B, N, L, H, D, I, P, T, R, V, G } = s;
  const nL = m.layers.length;
  const zH = B * m.heads;
  const zKV = B * m.kvHeads;
  const { pOp, qHead, kvHead } = ops.attOperands();
  // d logits = (dlogp (onehot - p) - dH p (log p + H)) / T
  ops.plan.add(
    'bwd',
    statsGradKernel(),
    [
      u(packSt(R, V, false, 1 / ops.opts.temperature)),
      { buffer: b.logits },
      { buffer: b.targets },
      { buffer: b.stats },
      { buffer: b.dstats },
      { buffer: b.dlogits },
    ],
    [R, 1, 1],
  );
  // d hn[response rows] += d logits W_head (the rows start as a value loss's d hidden, or zero;
  // the other rows stay zero)
  let row = 0;
  m.head.forEach((w) => {
    ops.gemmW(
      'bwd',
      b.dlogits,
      { off: row, s0: V, s1: 1, sb: T * V },
      w,
      false,
      b.dhn,
      { M: T, N: H, K: w.rows, c: { off: (P - 1) * H, s0: H, s1: 1, sb: L * H }, accumulate: true },
      {},
      B,
    );
    row += w.rows;
  });
  // d x = norm_bwd(d hn)
  ops.rmsNormBack(N, H, b.xOut, m.norm.buffer, b.invF, b.dhn, b.dres, false);
  for (let l = nL - 1; l >= 0; l--) {
    const lb = b.layers[l];
    const lw = m.layers[l];
    // h1 .. act, x A^T = layer l's forward again from its kept input (the last layer's are current)
    if (s.recompute && l < nL - 1) forward(ops, 'bwd', true, l, l + 1, true);
    const post = lb.post;
    /** d branch = norm_bwd(d x) through a post-branch norm (the residual's d x passes on unchanged). */
    const postBack = (x: GPUBuffer, w: VectorRef, inv: GPUBuffer) => {
      ops.rmsNormBack(N, H, x, w.buffer, inv, b.dres, b.dpost!, false);
      return b.dpost!;
    };
    // d act = d x · W_down (+ LoRA) [through the post norm]
    const ddown = post && lw.mlpOutNorm ? postBack(post.down, lw.mlpOutNorm, post.downInv) : b.dres;
    ops.projectBack(l, 'down', ddown, lb.act, b.dact, false);
    // d g, d u = swiglu_bwd(d act)
    ops.elem(
      'bwd',
      swigluGradKernel(m.activation),
      [u(packCnt(N * I)), { buffer: lb.g }, { buffer: lb.u }, { buffer: b.dact }, { buffer: b.dg }, { buffer: b.du }],
      N * I,
    );
    // d h2 = d g · W_gate + d u · W_up
    ops.projectBack(l, 'gate', b.dg, lb.h2, b.dh, false);
    ops.projectBack(l, 'up', b.du, lb.h2, b.dh, true);
    // d xmid = d x + norm2_bwd(d h2)
    ops.rmsNormBack(N, H, lb.xmid, lw.postNorm.buffer, lb.inv2, b.dh, b.dres, true);
    // d ao = d xmid · W_o [through the post norm]
    const dout = post && lw.attnOutNorm ? postBack(post.o, lw.attnOutNorm, post.oInv) : b.dres;
    ops.projectBack(l, 'o', dout, lb.ao, b.dao, false);
    ops.heads('bwd', b.dao, b.daoh, m.heads, true, 0);
    const rope = ops.ropeOf(l);
    const scale = lw.attnScale ?? 1 / Math.sqrt(D);
    // d P = d ao · v^T; d S = P (d P - sum P d P)
    ops.gemm(
      'bwd',
      b.daoh,
      lb.vh,
      b.dP,
      { M: L, N: L, K: D, Z1: m.heads, a: qHead, b: kvHead(true), c: pOp() },
      {},
      zH,
    );
    ops.elem('bwd', softmaxGradKernel(), [u(packSm(zH * L, L, m.heads)), { buffer: lb.p }, { buffer: b.dP }], zH * L);
    // d q = d S · k / sqrt(D)
    ops.gemm(
      'bwd',
      b.dP,
      lb.kh,
      b.dqh,
      { M: L, N: D, K: L, Z1: m.heads, a: pOp(), b: kvHead(false), c: qHead, alpha: scale },
      {},
      zH,
    );
    // d k = sum over the group's heads of d S^T · q / sqrt(D); d v = sum of P^T · d ao
    const grouped: Operand = { off: 0, s0: 1, s1: L, sb: m.heads * L * L, sh: G * L * L };
    const qGroup: Operand = { off: 0, s0: D, s1: 1, sb: m.heads * L * D, sh: G * L * D };
    const kvOut: Operand = { off: 0, s0: D, s1: 1, sb: m.kvHeads * L * D, sh: L * D };
    ops.gemm(
      'bwd',
      b.dP,
      lb.qh,
      b.dkh,
      { M: L, N: D, K: G * L, Z1: m.kvHeads, a: grouped, b: qGroup, c: kvOut, alpha: scale },
      {},
      zKV,
    );
    ops.gemm(
      'bwd',
      lb.p,
      b.daoh,
      b.dvh,
      { M: L, N: D, K: G * L, Z1: m.kvHeads, a: grouped, b: qGroup, c: kvOut },
      {},
      zKV,
    );
    // undo RoPE (its transpose) and the head layout
    ops.heads('bwd', b.dqh, b.dq, m.heads, false, -1, rope);
    ops.heads('bwd', b.dkh, b.dk, m.kvHeads, false, -1, rope);
    ops.heads('bwd', b.dvh, b.dv, m.kvHeads, false, 0);
    // [through the per-head norms;] d h1 = d q · W_q + d k · W_k + d v · W_v
    const qk = lb.qk;
    const dqk = b.dqk;
    if (qk && dqk) {
      ops.headNormBack(qk.q, lw.qNorm!, qk.qInv, b.dq, dqk.q, m.heads);
      ops.headNormBack(qk.k, lw.kNorm!, qk.kInv, b.dk, dqk.k, m.kvHeads);
    }
    ops.projectBack(l, 'q', qk && dqk ? dqk.q : b.dq, lb.h1, b.dh, false);
    ops.projectBack(l, 'k', qk && dqk ? dqk.k : b.dk, lb.h1, b.dh, true);
    ops.projectBack(l, 'v', b.dv, lb.h1, b.dh, true);
    // d x = d xmid + norm1_bwd(d h1)
    ops.rmsNormBack(N, H, lb.xin, lw.inputNorm.buffer, lb.inv1, b.dh, b.dres, true);
  }
}

/**
 * Step 4, the passes: the dropout masks' packing (one phase per slot), the reference forward
 * ('ref', adapters off), the adapted forward ('fwd'), and the backward ('bwd') in mirror order.
 */
export function recordLearnPasses(ops: LearnOps): void {
  if (ops.b.dropScratch) ops.s.slots.forEach((s, i) => ops.dropPack(i, s));
  forward(ops, 'ref', false);
  forward(ops, 'fwd', true);
  backward(ops);
}
