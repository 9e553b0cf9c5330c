// The decode plan's last two steps over its sizes and buffers (decodeLayout.ts): the kernels
// (`DecodeOps`: for each operation of the step, which kernel variant it takes, its bindings, its
// grid and its FLOPs) and the passes (`recordDecodePasses`: the order of those operations per
// phase, the block read from each layer's description).
import { type BufferRange, type GpuPlan } from './plan';
import {
  GemvMode,
  gemvMaxRows,
  attentionKernel,
  attentionThreadKernel,
  attentionSplitKKernel,
  attentionCombineKernel,
  SPLITK_SEGMENT,
  ATT_THREAD_WG,
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
  sampleKernel,
  statsKernel,
  type GemvLayout,
  type GemvUniform,
  type WeightKind,
} from './decodeKernels';
import type { DecodeModelRef, DecodeLayerRef, ProjectionRef, ProjKey, WeightRef } from './modelRef';
import { TILE_MIN_ROWS, type DecodeBuffers, type DecodePlanOptions, type DecodeSizes } from './decodeLayout';

export function specOf(w: WeightRef): { kind: WeightKind; groupSize?: number } {
  return w.kind === 'f32' ? { kind: 'f32' } : { kind: w.kind, groupSize: w.groupSize };
}

function weightBindings(w: WeightRef): BufferRange[] {
  return w.kind === 'f32' ? [{ buffer: w.buffer }] : [{ buffer: w.words }, { buffer: w.scales }];
}

/** A projection's row blocks (one unless its weight is held in several) and the first row of each. */
function blocksOf(pr: ProjectionRef): { w: WeightRef; row: number }[] {
  let row = 0;
  return (pr.blocks ?? [pr.weight]).map((w) => ((row += w.rows), { w, row: row - w.rows }));
}

function checkShape(pr: ProjectionRef, rows: number, cols: number, what: string): void {
  const bl = blocksOf(pr);
  const total = bl.reduce((a, b) => a + b.w.rows, 0);
  if (total !== rows || bl.some((b) => b.w.cols !== cols))
    throw new Error(`decode plan: ${what} is [${total}, ${pr.weight.cols}], expected [${rows}, ${cols}]`);
}

/** A GEMV's input fields (what its output fields complete). */
type GemvInput = Omit<GemvUniform, 'N' | 'outOff' | 'outStride'>;

/** Step 3, the kernels: each operation of a decode step as the dispatch it adds to a phase. */
export class DecodeOps {
  private readonly common: { work: BufferRange; params: BufferRange; lora: BufferRange };
  private readonly tileMin: number;
  private readonly gemmMin: number;

  constructor(
    readonly plan: GpuPlan,
    readonly m: DecodeModelRef,
    readonly s: DecodeSizes,
    readonly b: DecodeBuffers,
    opts: Pick<DecodePlanOptions, 'tileMinRows' | 'gemmMinRows'>,
    private readonly device: GPUDevice,
  ) {
    this.common = { work: { buffer: b.work }, params: { buffer: b.params }, lora: { buffer: b.lora } };
    this.tileMin = opts.tileMinRows ?? TILE_MIN_ROWS;
    this.gemmMin = opts.gemmMinRows ?? Infinity;
  }

  /** The GEMV layout of u's rows: the tiled GEMM from gemmMinRows, the tile kernel on 'thread' from tileMinRows. */
  private layoutFor(u: GemvUniform): GemvLayout {
    const shape = this.s.gemvShape;
    return u.rows >= this.gemmMin
      ? 'gemm'
      : shape === 'thread' && u.rows >= this.tileMin && [u.K, u.xOff, u.xStride].every((n) => n % 4 === 0)
        ? 'tile'
        : shape;
  }

  gemv(phase: string, mode: GemvMode, w: WeightRef, u: GemvUniform, extra: BufferRange[] = [], w2?: WeightRef): void {
    const layout = this.layoutFor(u);
    const k = gemvKernel({ shape: layout, mode, ...specOf(w), norm: u.normOff !== undefined, act: this.m.activation });
    const { work, params, lora } = this.common;
    const values = [
      { uniform: packGemv(u) },
      'dyn' as const,
      work,
      params,
      lora,
      ...weightBindings(w),
      ...(w2 ? weightBindings(w2) : []),
      ...extra,
    ];
    this.plan.add(
      phase,
      k,
      values,
      [gemvWorkgroupsX(layout, mode, u.N, this.s.D), Math.ceil(u.rows / gemvMaxRows(layout)), 1],
      2 * u.K * u.N * u.rows * (w2 ? 2 : 1),
    );
  }

  /**
   * A GEMV over a weight in row blocks: one dispatch per block, its outputs, biases and LoRA B
   * rows shifted by the block's first row. q, k and v take blocks of whole heads only (RoPE pairs
   * and cache rows stay within a head); their cache writes find the head from outOff.
   */
  gemvBlocks(
    phase: string,
    mode: GemvMode,
    pr: ProjectionRef,
    u: GemvUniform,
    extra: BufferRange[] = [],
    pr2?: ProjectionRef,
  ): void {
    const D = this.s.D;
    const bl2 = pr2 ? blocksOf(pr2) : null;
    blocksOf(pr).forEach(({ w, row }, i) => {
      const w2 = bl2?.[i];
      if (bl2 && (!w2 || w2.row !== row || w2.w.rows !== w.rows))
        throw new Error('decode plan: gate and up are held in different row blocks');
      const shift = (o: number | undefined) => (o === undefined || o < 0 ? o : o + row);
      if (mode !== GemvMode.Plain && mode !== GemvMode.GateUp && (row % D !== 0 || w.rows % D !== 0))
        throw new Error(`decode plan: a row block of ${w.rows} rows from row ${row} splits a head of ${D}`);
      this.gemv(
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
  }

  private groupOf(li: number, gi: number) {
    return this.s.lora.groups.find((g) => g.layer === li && g.group === gi);
  }

  /** Layer li's x·A of LoRA group gi (one GEMV over the group's stacked A rows into t); none where the group is not adapted. */
  loraA(phase: string, rows: number, li: number, gi: number, u: GemvInput): void {
    const g = this.groupOf(li, gi);
    if (!g) return;
    const W = this.s.work.offsets;
    const layout = this.layoutFor({ ...u, N: g.rows, outOff: W.t, outStride: g.rows });
    const k = gemvKernel({ shape: layout, mode: GemvMode.Plain, kind: 'f32', norm: u.normOff !== undefined });
    const { work, params, lora } = this.common;
    this.plan.add(
      phase,
      k,
      [
        { uniform: packGemv({ ...u, N: g.rows, outOff: W.t, outStride: g.rows }) },
        'dyn',
        work,
        params,
        lora,
        { buffer: this.b.lora, offset: g.off * 4, size: g.rows * g.inp * 4 },
      ],
      [gemvWorkgroupsX(layout, GemvMode.Plain, g.rows), Math.ceil(rows / gemvMaxRows(layout)), 1],
      2 * u.K * g.rows * rows,
    );
  }

  /** The LoRA epilogue fields of layer li's projection p: its slice of group gi's x·A and its B. */
  loraU(li: number, p: ProjKey, gi: number): Partial<GemvUniform> {
    const e = this.s.lora.at[li][p];
    const g = this.groupOf(li, gi);
    if (!e || !g) return {};
    return {
      tOff: this.s.work.offsets.t + (e.a - g.off) / g.inp,
      tStride: g.rows,
      bOff: e.b,
      r: e.r,
      scale: this.m.lora[li]?.[p]?.scale ?? 0,
    };
  }

  /** The RoPE fields of a layer's q and k: its cos / sin tables and the positions of a decode step or a prefill chunk (seq > 0). */
  ropeU(layer: DecodeLayerRef, seq: number) {
    const { s } = this;
    const r = layer.rope ?? 0;
    if (r >= s.invFreqs.length) throw new Error(`decode plan: a layer names RoPE ${r} of ${s.invFreqs.length}`);
    return {
      headDim: s.D,
      cap: s.C,
      cosOff: s.aux.offsets[`cos${r || ''}`],
      sinOff: s.aux.offsets[`sin${r || ''}`],
      posOff: seq ? s.aux.offsets.ppos : s.aux.offsets.pos,
      seq,
    };
  }

  /**
   * With q/k norms the projection writes plain and rope/plan_head_norm.wgsl norms each head,
   * rotates it and writes q in place or k into the cache.
   */
  headNormRope(
    phase: string,
    rows: number,
    ropeU: ReturnType<DecodeOps['ropeU']>,
    normOff: number,
    inOff: number,
    width: number,
    nH: number,
    cache?: GPUBuffer,
  ): void {
    const { work, params } = this.common;
    this.plan.add(
      phase,
      headNormRopeKernel(this.s.D, cache !== undefined),
      [
        {
          uniform: packHeadNorm({
            ...ropeU,
            inOff,
            inStride: width,
            normOff,
            eps: this.m.eps,
            nKV: cache ? this.m.kvHeads : 0,
          }),
        },
        'dyn',
        work,
        params,
        { buffer: this.b.aux },
        ...(cache ? [{ buffer: cache }] : []),
      ],
      [nH, rows, 1],
    );
  }

  /** Layer li's attention of q over its caches into a: split-K (decode steps only) or whole. */
  attention(phase: string, rows: number, seq: number, li: number, layer: DecodeLayerRef): void {
    const { m, s, b } = this;
    const { C, D } = s;
    const W = s.work.offsets;
    const att = {
      uniform: packAtt({
        nH: m.heads,
        nKV: m.kvHeads,
        D,
        cap: C,
        qOff: W.q,
        aOff: W.a,
        validOff: s.aux.offsets.valid,
        seq,
        rows,
        scale: layer.attnScale,
        window: layer.window,
      }),
    };
    const caches = [{ buffer: b.kCache[li] }, { buffer: b.vCache[li] }];
    const auxB = { buffer: b.aux };
    // q·k and p·v over at most the capacity per (row, head): the bound a submit budget needs.
    const attFlops = 4 * rows * m.heads * C * D;
    if (b.partials && seq === 0) {
      // split-K: segments past the filled length return at once, so the grid covers the capacity
      this.plan.add(
        phase,
        attentionSplitKKernel(D),
        [att, 'dyn', this.common.work, auxB, ...caches, { buffer: b.partials }],
        [m.heads, rows, Math.ceil(C / SPLITK_SEGMENT)],
        attFlops,
      );
      this.plan.add(
        phase,
        attentionCombineKernel(D),
        [att, 'dyn', { buffer: b.partials }, this.common.work],
        [m.heads, rows, 1],
      );
    } else {
      // GPUs: a workgroup per (head, row); software adapters: a barrier-free thread per (head, row).
      const split = s.gemvShape === 'split';
      this.plan.add(
        phase,
        split ? attentionKernel(D) : attentionThreadKernel(D),
        [att, 'dyn', this.common.work, auxB, ...caches],
        split ? [m.heads, rows, 1] : [Math.ceil((m.heads * rows) / ATT_THREAD_WG), 1, 1],
        attFlops,
      );
    }
  }

  /**
   * A branch's last projection and its residual add: added in the GEMV's epilogue, or (an
   * output norm) written to h and added normed by rms-norm/plan_add.wgsl.
   */
  residual(
    phase: string,
    pr: ProjectionRef,
    xin: GemvInput,
    biasOff: number | undefined,
    lora: Partial<GemvUniform>,
    outNorm: number | undefined,
  ): void {
    const { m } = this;
    const W = this.s.work.offsets;
    const out = outNorm === undefined ? { outOff: W.x, resid: true } : { outOff: W.h, resid: false };
    this.gemvBlocks(phase, GemvMode.Plain, pr, { ...xin, N: m.hidden, outStride: m.hidden, biasOff, ...lora, ...out });
    if (outNorm !== undefined)
      this.plan.add(
        phase,
        normAddKernel(),
        [
          { uniform: packNormAdd({ H: m.hidden, hOff: W.h, xOff: W.x, normOff: outNorm, eps: m.eps }) },
          this.common.work,
          this.common.params,
        ],
        [xin.rows, 1, 1],
      );
  }

  /** draw: the ids from the logits, and the statistics under logits / statT. */
  draw(): void {
    const { b, m } = this;
    const B = this.s.B;
    this.plan.add(
      'draw',
      sampleKernel(m.vocab),
      ['dyn', { buffer: b.logits }, { buffer: b.streams }, { buffer: b.ids }],
      [B, 1, 1],
    );
    this.plan.add(
      'draw',
      statsKernel(m.vocab, this.device),
      ['dyn', { buffer: b.scaled }, { buffer: b.ids }, { buffer: b.stats }],
      [B, 1, 1],
    );
  }

  /** x of embedding block i: of the drawn ids (+ their record) in a decode step, of the prompt ids in a prefill chunk. */
  embed(phase: 'embed' | 'pembed', i: number): void {
    const { b, m, s } = this;
    const blk = m.embed[i];
    const prefill = phase === 'pembed';
    this.plan.add(
      phase,
      embedKernel(),
      [
        {
          uniform: packEmb({
            H: m.hidden,
            rowStart: blk.rowStart,
            rowCount: blk.rows,
            xOff: s.work.offsets.x,
            rec: !prefill && i === 0,
            B: s.B,
            ...(prefill ? { seq: s.Pc, cap: s.C } : {}),
            scale: m.embedScale,
          }),
        },
        'dyn',
        this.common.work,
        { buffer: prefill ? b.promptIds : b.ids },
        { buffer: blk.buffer },
        { buffer: b.stats },
        { buffer: b.record },
      ],
      [prefill ? s.R : s.B, 1, 1],
    );
  }

  /** Final norm + LM head block `blk` from vocabulary row `col`: of each row (head), or of each row's last prompt column (phead). */
  head(phase: 'head' | 'phead', blk: WeightRef, col: number): void {
    const { b, m, s } = this;
    const x = s.work.offsets.x;
    const u = {
      K: m.hidden,
      rows: s.B,
      normOff: s.params.finalNorm,
      eps: m.eps,
      N: blk.rows,
      outOff: col,
      outStride: m.vocab,
    };
    // the prefill's head reads each row's last prompt column: row b * Pc + Pc - 1
    const xin =
      phase === 'head' ? { xOff: x, xStride: m.hidden } : { xOff: x + (s.Pc - 1) * m.hidden, xStride: s.Pc * m.hidden };
    this.gemv(phase, GemvMode.Head, blk, { ...u, ...xin }, [{ buffer: b.logits }, { buffer: b.scaled }]);
  }
}

/**
 * One layer of a decode step (rows B, seq 0) or of a prefill chunk (rows B x Pc, seq Pc), read
 * from its description: norm1 -> q, k (+ norms, RoPE, cache), v (cache) -> attention -> o
 * (+ residual) -> norm2 -> gate + up (activation) -> down (+ residual), each adapted input with
 * its x·A first.
 */
function layerPass(ops: DecodeOps, phase: string, rows: number, seq: number, li: number): void {
  const { m, s, b } = ops;
  const layer = m.layers[li];
  const lp = s.params.layers[li];
  const W = s.work.offsets;
  const { qDim, kvDim } = s;
  const x1 = { K: m.hidden, rows, xOff: W.x, xStride: m.hidden, normOff: lp.norm1, eps: m.eps };
  checkShape(layer.q, qDim, m.hidden, `layer ${li} q`);
  checkShape(layer.k, kvDim, m.hidden, `layer ${li} k`);
  checkShape(layer.v, kvDim, m.hidden, `layer ${li} v`);
  checkShape(layer.o, m.hidden, qDim, `layer ${li} o`);
  checkShape(layer.gate, m.intermediate, m.hidden, `layer ${li} gate`);
  checkShape(layer.up, m.intermediate, m.hidden, `layer ${li} up`);
  checkShape(layer.down, m.hidden, m.intermediate, `layer ${li} down`);
  ops.loraA(phase, rows, li, 0, x1);
  const ropeU = ops.ropeU(layer, seq);
  const auxB = { buffer: b.aux };
  // Without q/k norms RoPE is the GEMV's epilogue; with them, a head-norm dispatch after it.
  ops.gemvBlocks(
    phase,
    lp.qNorm === undefined ? GemvMode.RopeQ : GemvMode.Plain,
    layer.q,
    { ...x1, ...ropeU, N: qDim, outOff: W.q, outStride: qDim, biasOff: lp.bias.q, ...ops.loraU(li, 'q', 0) },
    lp.qNorm === undefined ? [auxB] : [],
  );
  if (lp.qNorm !== undefined) ops.headNormRope(phase, rows, ropeU, lp.qNorm, W.q, qDim, m.heads);
  if (lp.kNorm === undefined) {
    ops.gemvBlocks(
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
        ...ops.loraU(li, 'k', 0),
      },
      [auxB, { buffer: b.kCache[li] }],
    );
  } else {
    ops.gemvBlocks(phase, GemvMode.Plain, layer.k, {
      ...x1,
      N: kvDim,
      outOff: W.k,
      outStride: kvDim,
      biasOff: lp.bias.k,
      ...ops.loraU(li, 'k', 0),
    });
    ops.headNormRope(phase, rows, ropeU, lp.kNorm, W.k, kvDim, m.kvHeads, b.kCache[li]);
  }
  ops.gemvBlocks(
    phase,
    GemvMode.CacheV,
    layer.v,
    {
      ...x1,
      headDim: s.D,
      cap: s.C,
      seq,
      N: kvDim,
      nKV: m.kvHeads,
      outOff: 0,
      outStride: 0,
      biasOff: lp.bias.v,
      ...ops.loraU(li, 'v', 0),
    },
    [{ buffer: b.vCache[li] }],
  );
  ops.attention(phase, rows, seq, li, layer);
  const xa = { K: qDim, rows, xOff: W.a, xStride: qDim };
  ops.loraA(phase, rows, li, 1, xa);
  ops.residual(phase, layer.o, xa, lp.bias.o, ops.loraU(li, 'o', 1), lp.attnOut);
  const x2 = { K: m.hidden, rows, xOff: W.x, xStride: m.hidden, normOff: lp.norm2, eps: m.eps };
  ops.loraA(phase, rows, li, 2, x2);
  const up = ops.loraU(li, 'up', 2);
  if (specOf(layer.gate.weight).kind !== specOf(layer.up.weight).kind)
    throw new Error(`decode plan: layer ${li} gate and up differ in weight format`);
  ops.gemvBlocks(
    phase,
    GemvMode.GateUp,
    layer.gate,
    {
      ...x2,
      N: m.intermediate,
      outOff: W.act,
      outStride: m.intermediate,
      biasOff: lp.bias.gate,
      ...ops.loraU(li, 'gate', 2),
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
  ops.loraA(phase, rows, li, 3, xd);
  ops.residual(phase, layer.down, xd, lp.bias.down, ops.loraU(li, 'down', 3), lp.mlpOut);
}

/**
 * Step 4, the passes: every phase's dispatches in order. A decode token: draw, embed, layers,
 * head; a prefill chunk: pembed, players, and phead after its last chunk.
 */
export function recordDecodePasses(ops: DecodeOps): void {
  const { m, s } = ops;
  ops.draw();
  m.embed.forEach((_, i) => {
    ops.embed('embed', i);
    ops.embed('pembed', i);
  });
  m.layers.forEach((_, li) => layerPass(ops, 'layers', s.B, 0, li));
  m.layers.forEach((_, li) => layerPass(ops, 'players', s.R, s.Pc, li));
  let col = 0;
  for (const blk of m.head) {
    if (blk.cols !== m.hidden)
      throw new Error(`decode plan: LM head block has ${blk.cols} columns, hidden size is ${m.hidden}`);
    ops.head('head', blk, col);
    ops.head('phead', blk, col);
    col += blk.rows;
  }
  if (col !== m.vocab) throw new Error(`decode plan: LM head blocks hold ${col} rows, vocabulary is ${m.vocab}`);
}
