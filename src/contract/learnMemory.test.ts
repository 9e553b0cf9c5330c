import { describe, expect, it } from 'vitest';
import { learnStepRows, loraParamCount, planLearnMemory, type LearnModelDims } from './learnMemory';

const GiB = 2 ** 30;
const MiB = 2 ** 20;
const ALL = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] as const;
const roomy = { maxBufferSize: GiB, maxStorageBufferBindingSize: GiB };

// H 4, I 8, 2 heads of 2 (Q 4), 1 kv head (KV 2), vocabulary 10, tied, no biases.
const tiny = (numLayers: number): LearnModelDims => ({
  vocabSize: 10,
  hiddenSize: 4,
  intermediateSize: 8,
  numLayers,
  numHeads: 2,
  numKvHeads: 1,
  headDim: 2,
  tieWordEmbeddings: true,
  qkvBias: false,
  oBias: false,
  mlpBias: false,
});
const total = (p: ReturnType<typeof planLearnMemory>) => p.buffers.reduce((s, b) => s + b.bytes * b.count, 0);

describe('learn-memory planner, worked by hand on a tiny model', () => {
  // 2 rows of 3 prompt + 2 response tokens: L = 4 positions, N = b x 4 tokens, T = 2.
  const shape = { rows: 2, promptLen: 3, responseLen: 2 };

  it('one layer, LoRA r 2 on q and v: every scope to the byte, one micro-batch when the budget allows', () => {
    // Weights (f32): embedding 10x4x4 = 160; q 4x4x4 = 64; k, v 2x4x4 = 32 each; o 64; gate, up
    // 8x4x4 = 128 each; down 128; norms 3 x 16 = 48. Sum 784 (= 196 parameters x 4).
    // LoRA: q 2 (4 + 4) + v 2 (4 + 2) = 28 parameters = 112 bytes; the AdamW plan's params, grads,
    // m, v and readback staging (min(112, 4 MiB)): 5 x 112 = 560, its 256 partials 1024, statistics
    // and readback 2 x 16, dynamic uniform 256, static uniforms (none) 16: 1888.
    // The learn plan for 2 rows (N = 8 tokens, R = 4 response rows), its constructor's buffers,
    // each rounded up to 16 bytes: params, grads 2 x 112; ids, valid 2 x 32; targets 16; cos, sin
    // (N x headDim / 2 = 8) 2 x 32; stats and readback (R x 4) 2 x 64; dstats 32; dummy 16 = 560.
    // Layer 0: x, h1, xmid, h2 4 x 128; inv1, inv2 2 x 32; qh 128; kh, vh 2 x 64; p (2 rows x 2
    // heads x 4 x 4) 256; ao 128; g, u, act 3 x 256; x Aᵀ of q, v 2 x 64 = 2112.
    // x out, hn 2 x 128; inv final 32; hidden rows (R x 4) 64; logits, dlogits (R x 10) 2 x 160;
    // q, k, v tok 128 + 2 x 64; dhn, dres, dh 3 x 128; dact, dg, du 3 x 256; dao, daoh, dqh, dq
    // 4 x 128; dkh, dvh, dk, dv 4 x 64; dP 256; dxa 64 = 3152.
    // Dispatches: ref forward 16 + 4 = 20; forward 20 + 2 x 2 adapters = 24; backward 19 + 3 +
    // 4 x 2 = 30: 74 uniform records and the dynamic slot, 75 x 256 = 19200.
    // The plan: 560 + 2112 + 3152 + 19200 = 25024.
    const p = planLearnMemory(tiny(1), 'f32', { r: 2, targets: ['q', 'v'] }, shape, { ...roomy, budgetBytes: 27696 });
    expect(p.bytesByScope).toEqual({ model: 784, optimizer: 1888, 'micro-batch': 25024 });
    expect(p.peakBytes).toBe(27696);
    expect(total(p)).toBe(27696);
    expect(p).toMatchObject({ microBatchRows: 2, accumulationSteps: 1, recompute: false, fits: true, problems: [] });
    expect(p.buffers.find((b) => b.name === 'attention probabilities')).toEqual({
      name: 'attention probabilities',
      scope: 'micro-batch',
      bytes: 256,
      count: 1,
    });
    expect(loraParamCount(tiny(1), { r: 2, targets: ['q', 'v'] })).toBe(28);
    // LoRA dropout adds, per adapter, a mask of one bit per input element (N x 4 = 32 bits: 4
    // bytes, rounded to 16), the f32 scratch N x 4 = 128, the scale 16, and 4 dispatches per
    // adapter (pack, forward, 2 backward): 8 x 256 = 2048. 25024 + 2 x 16 + 128 + 16 + 2048 = 27248.
    expect(
      learnStepRows(tiny(1), { r: 2, targets: ['q', 'v'], dropout: true }, shape, { ...roomy, budgetBytes: 27248 }),
    ).toEqual({ microBatchRows: 2, accumulationSteps: 1, bytes: 27248, recompute: false });
    // The step alone (what learnStep sizes on WebGPU): the same 25024 bytes for 2 rows.
    expect(learnStepRows(tiny(1), { r: 2, targets: ['q', 'v'] }, shape, { ...roomy, budgetBytes: 25024 })).toEqual({
      microBatchRows: 2,
      accumulationSteps: 1,
      bytes: 25024,
      recompute: false,
    });
  });

  it('one byte less: one row per micro-batch, two accumulation passes', () => {
    // One row (N = 4, R = 2): the row-sized buffers halve, those of 4 floats or fewer round up to
    // 16: 512 + 1056 + 1472 = 3040, the uniforms unchanged: 22240; peak 24912.
    const p = planLearnMemory(tiny(1), 'f32', { r: 2, targets: ['q', 'v'] }, shape, { ...roomy, budgetBytes: 27695 });
    expect(p).toMatchObject({ microBatchRows: 1, accumulationSteps: 2, peakBytes: 24912, fits: true });
    // (With one layer a recompute rebuilds nothing: its layout is the same, so it is not chosen.)
    expect(learnStepRows(tiny(1), { r: 2, targets: ['q', 'v'] }, shape, { ...roomy, budgetBytes: 25023 })).toEqual({
      microBatchRows: 1,
      accumulationSteps: 2,
      bytes: 22240,
      recompute: false,
    });
    expect(
      learnStepRows(tiny(1), { r: 2, targets: ['q', 'v'] }, shape, { ...roomy, budgetBytes: 22239 }).microBatchRows,
    ).toBe(0);
    // The runtime's per-plan budget binds the same way inside a roomy device budget.
    expect(
      planLearnMemory(tiny(1), 'f32', { r: 2, targets: ['q', 'v'] }, shape, {
        ...roomy,
        budgetBytes: GiB,
        planBudgetBytes: 25023,
      }),
    ).toMatchObject({ microBatchRows: 1, accumulationSteps: 2, peakBytes: 24912 });
  });

  it('two layers, kept: 2 rows in one pass, or one row in two', () => {
    // Weights 160 + 2 x 152 x 4 + 16 = 1392; LoRA 56 parameters: 5 x 224 + 1328 = 2448; fixed 3840.
    // Kept, 2 rows: params, grads 2 x 224 + 336 (the other inputs) + 2 layers x 2112 + 3152 +
    // (137 dispatches + 1) x 256 = 43488 (peak 47328); one row: 39648 (peak 43488).
    const plan = (budgetBytes: number, recompute?: boolean | 'auto') =>
      planLearnMemory(tiny(2), 'f32', { r: 2, targets: ['q', 'v'] }, shape, { ...roomy, budgetBytes }, recompute);
    expect(plan(47328, false)).toMatchObject({
      recompute: false,
      microBatchRows: 2,
      accumulationSteps: 1,
      peakBytes: 47328,
    });
    expect(plan(46328, false)).toMatchObject({
      recompute: false,
      microBatchRows: 1,
      accumulationSteps: 2,
      peakBytes: 43488,
    });
    expect(plan(47328)).toMatchObject({ recompute: false, microBatchRows: 2 });
    const none = plan(43328, false);
    expect(none.fits).toBe(false);
    expect(none.recompute).toBe(false);
    expect(none.problems[0]).toMatch(/one row per micro-batch still needs/);
  });

  it('two layers, 8 rows: auto recomputes exactly when that saves a micro-batch', () => {
    // Per row (N = 4 tokens, R = 2), kept: inputs 32 + 8 (targets) + 32 + 64 + 16 = 152; each layer
    // 1056 (x 64, h1 xmid h2 192, inv1 inv2 32, qh 64, kh vh 64, p 128, ao 64, g u act 384, x Aᵀ of
    // q, v 64); x out, hn 128, inv 16, hidden rows 32, logits and gradient 160, q k v tok 128; the
    // backward's 192 + 384 + 256 + 128 + 128 + 32 = 1120: 152 + 2112 + 464 + 1120 = 3848 a row. The
    // rest (even rows: targets need no rounding): params, grads 448, dummy 16, 138 x 256 uniforms
    // 35328 = 35792; with the 3840 fixed: peak 39632 + 3848 b.
    // Recompute: layer 1's activations but its input (928 a row) and its x Aᵀ (64) are not kept
    // (-992 a row), layer 0 is rebuilt by 15 dispatches + 2 x 2 for its adapters (19 x 256 = 4864):
    // peak 44496 + 2856 b.
    const plan = (budgetBytes: number, recompute?: boolean | 'auto') =>
      planLearnMemory(
        tiny(2),
        'f32',
        { r: 2, targets: ['q', 'v'] },
        { rows: 8, promptLen: 3, responseLen: 2 },
        { ...roomy, budgetBytes },
        recompute,
      );
    expect(plan(GiB, false).peakBytes).toBe(39632 + 3848 * 8);
    expect(plan(GiB, true).peakBytes).toBe(44496 + 2856 * 8);
    // All 8 rows kept fit 70416: kept.
    expect(plan(70416)).toMatchObject({
      recompute: false,
      microBatchRows: 8,
      accumulationSteps: 1,
      peakBytes: 70416,
      notes: [],
    });
    // 67344: kept, 7 rows (39632 + 7 x 3848 + 8 for the odd rows' rounded targets = 66576) in 2
    // passes; recomputed, 8 rows in one: recompute, and the note says what keeping would cost.
    expect(plan(67344, false)).toMatchObject({ microBatchRows: 7, accumulationSteps: 2, peakBytes: 66576 });
    const rec = plan(67344);
    expect(rec).toMatchObject({
      recompute: true,
      microBatchRows: 8,
      accumulationSteps: 1,
      peakBytes: 67344,
      fits: true,
    });
    expect(rec.notes.join(' ')).toMatch(
      /recomputes the layer's other activations.*keeping them all would need 2 micro-batches of 7 rows, not 1 of 8/,
    );
    expect(
      learnStepRows(
        tiny(2),
        { r: 2, targets: ['q', 'v'] },
        { rows: 8, promptLen: 3, responseLen: 2 },
        { ...roomy, budgetBytes: 67344 - 3840 },
      ),
    ).toEqual({ microBatchRows: 8, accumulationSteps: 1, bytes: 67344 - 3840, recompute: true });
    // One byte less: recomputing takes 7 rows, 2 passes too: no gain, kept.
    expect(plan(67343)).toMatchObject({ recompute: false, microBatchRows: 7, accumulationSteps: 2 });
    expect(plan(67343, true)).toMatchObject({
      recompute: true,
      microBatchRows: 7,
      accumulationSteps: 2,
      peakBytes: 44496 + 2856 * 7 + 8,
    });
  });

  it('a micro-batch buffer over one storage binding shrinks the micro-batch', () => {
    // The probabilities and the MLP tensors are 128 bytes per row: a 200-byte binding allows one row.
    const p = planLearnMemory(tiny(1), 'f32', { r: 2, targets: ['q', 'v'] }, shape, {
      maxBufferSize: GiB,
      maxStorageBufferBindingSize: 200,
      budgetBytes: GiB,
    });
    expect(p.microBatchRows).toBe(1);
    expect(p.buffers.every((b) => b.scope !== 'micro-batch' || b.name === 'uniform records' || b.bytes <= 200)).toBe(
      true,
    );
  });

  it("weights over one binding are stored in row blocks (the loader's split): 10 embedding rows of 16 bytes in blocks of 3", () => {
    const p = planLearnMemory(
      tiny(1),
      'f32',
      { r: 2, targets: ['q', 'v'] },
      { rows: 1, promptLen: 1, responseLen: 1 },
      { maxBufferSize: GiB, maxStorageBufferBindingSize: 48, budgetBytes: GiB },
    );
    const emb = p.buffers.filter((b) => b.name.startsWith('embedding'));
    expect(emb.map((b) => [b.bytes, b.count])).toEqual([
      [48, 3],
      [16, 1],
    ]);
    expect(p.notes.join(' ')).toMatch(/embedding \(f32\) is over maxStorageBufferBindingSize/);
  });

  it('rejects a malformed shape with the field named', () => {
    expect(() =>
      planLearnMemory(tiny(1), 'f32', { r: 0, targets: ['q'] }, shape, { ...roomy, budgetBytes: GiB }),
    ).toThrow(/r must be a positive integer, got 0/);
    expect(() =>
      planLearnMemory(tiny(1), 'f32', { r: 2, targets: ['q'], layers: [3] }, shape, { ...roomy, budgetBytes: GiB }),
    ).toThrow(/LoRA layer 3 does not exist/);
  });
});

// Hub config.json values (SmolLM2-360M-Instruct; Qwen2.5-0.5B-Instruct, head_dim = 896 / 14).
const smol360: LearnModelDims = {
  vocabSize: 49152,
  hiddenSize: 960,
  intermediateSize: 2560,
  numLayers: 32,
  numHeads: 15,
  numKvHeads: 5,
  headDim: 64,
  tieWordEmbeddings: true,
  qkvBias: false,
  oBias: false,
  mlpBias: false,
};
const qwen05: LearnModelDims = {
  vocabSize: 151936,
  hiddenSize: 896,
  intermediateSize: 4864,
  numLayers: 24,
  numHeads: 14,
  numKvHeads: 2,
  headDim: 64,
  tieWordEmbeddings: true,
  qkvBias: true,
  oBias: false,
  mlpBias: false,
};

describe("learn-memory planner on the issue's 4 GB target", () => {
  const limits = { maxBufferSize: 2 * GiB, maxStorageBufferBindingSize: GiB, budgetBytes: 4 * GiB };
  for (const [name, c] of [
    ['SmolLM2-360M', smol360],
    ['Qwen2.5-0.5B', qwen05],
  ] as const) {
    it(`${name} in int4-g32, LoRA r 16 on every projection, trains within 4 GiB`, () => {
      const lora = { r: 16, targets: ALL };
      // The issue's benchmark shape, 8 prompts x 8 samples x (64 prompt + 64 new): keeping every
      // layer's activations takes several micro-batches, recomputing fewer, so recompute is chosen.
      const bench = { rows: 64, promptLen: 64, responseLen: 64 };
      const p = planLearnMemory(c, 'int4-g32', lora, bench, limits, false);
      expect(p).toMatchObject({ fits: true, recompute: false });
      expect(p.accumulationSteps).toBeGreaterThan(1);
      expect(p.peakBytes).toBeLessThanOrEqual(4 * GiB);
      const auto = planLearnMemory(c, 'int4-g32', lora, bench, limits);
      expect(auto).toMatchObject({ fits: true, recompute: true });
      expect(auto.accumulationSteps).toBeLessThan(p.accumulationSteps);
      expect(auto.peakBytes).toBeLessThanOrEqual(4 * GiB);
      expect(auto.microBatchRows * auto.accumulationSteps).toBeGreaterThanOrEqual(64);
      // Longer: 16 prompts x 8 x (128 + 256) fits only as several micro-batches.
      const long = planLearnMemory(c, 'int4-g32', lora, { rows: 128, promptLen: 128, responseLen: 256 }, limits);
      expect(long.fits).toBe(true);
      expect(long.accumulationSteps).toBeGreaterThan(1);
      expect(long.microBatchRows * long.accumulationSteps).toBeGreaterThanOrEqual(128);
      expect(long.peakBytes).toBeLessThanOrEqual(4 * GiB);
      // The optimiser holds 4 copies of the LoRA, a 4 MiB readback staging and 1328 bytes besides.
      expect(p.bytesByScope.optimizer).toBe(4 * 4 * loraParamCount(c, lora) + 4 * MiB + 1328);
    });
  }

  it("on WebGPU's floor limits (128 MiB bindings) Qwen2.5-0.5B still fits: the embedding in row blocks, more micro-batches", () => {
    const p = planLearnMemory(
      qwen05,
      'int4-g32',
      { r: 16, targets: ALL },
      { rows: 64, promptLen: 64, responseLen: 64 },
      { maxBufferSize: 256 * MiB, maxStorageBufferBindingSize: 128 * MiB, budgetBytes: 4 * GiB },
    );
    expect(p.fits).toBe(true);
    expect(p.accumulationSteps).toBeGreaterThan(1);
    expect(p.buffers.every((b) => b.bytes <= 128 * MiB)).toBe(true);
  });
});

describe("learn-memory planner: recompute at the issue's benchmark shape, worked by hand", () => {
  const limits = { maxBufferSize: 2 * GiB, maxStorageBufferBindingSize: GiB, budgetBytes: 4 * GiB };
  const bench = { rows: 64, promptLen: 64, responseLen: 64 };
  const lora = { r: 16, targets: ALL };
  const buffer = (p: ReturnType<typeof planLearnMemory>, name: string) => p.buffers.find((b) => b.name === name);

  it('SmolLM2-360M int4: 6 micro-batches of 12 rows kept, 2 of 62 recomputed; the attention probabilities once instead of 32 times', () => {
    const keep = planLearnMemory(smol360, 'int4-g32', lora, bench, limits, false);
    const auto = planLearnMemory(smol360, 'int4-g32', lora, bench, limits);
    expect(keep).toMatchObject({ microBatchRows: 12, accumulationSteps: 6 });
    expect(auto).toMatchObject({ recompute: true, microBatchRows: 62, accumulationSteps: 2, fits: true });
    // L = 64 + 64 - 1 = 127 positions, 15 heads: 62 x 15 x 127 x 127 floats = 59,999,880 bytes,
    // rounded up to 16: 59,999,888, one shared buffer; kept, 12 x 15 x 127² x 4 = 11,612,880 per layer.
    expect(buffer(auto, "attention probabilities (one layer's, rebuilt)")).toMatchObject({
      bytes: 59_999_888,
      count: 1,
    });
    expect(buffer(keep, 'attention probabilities')).toMatchObject({ bytes: 11_612_880, count: 32 });
    // Each layer's input kept in both: 62 x 127 x 960 x 4 = 30,236,160 bytes, 32 of them.
    expect(buffer(auto, 'layer inputs (kept)')).toMatchObject({ bytes: 30_236_160, count: 32 });
    // x Aᵀ once per projection (7), 62 x 127 x 16 x 4 = 503,936 bytes each.
    expect(buffer(auto, "LoRA x Aᵀ (one layer's, rebuilt)")).toMatchObject({ bytes: 503_936, count: 7 });
    expect(auto.peakBytes).toBeLessThanOrEqual(4 * GiB);
  });

  it('Qwen2.5-0.5B int4: 8 micro-batches of 9 rows kept, 3 of 27 recomputed', () => {
    const keep = planLearnMemory(qwen05, 'int4-g32', lora, bench, limits, false);
    const auto = planLearnMemory(qwen05, 'int4-g32', lora, bench, limits);
    expect(keep).toMatchObject({ microBatchRows: 9, accumulationSteps: 8 });
    expect(auto).toMatchObject({ recompute: true, microBatchRows: 27, accumulationSteps: 3, fits: true });
    // The MLP's gate, up and act(gate) x up: 27 x 127 x 4864 x 4 = 66,714,624 bytes, 3 of them.
    expect(buffer(auto, "gate, up, act(gate) x up (one layer's, rebuilt)")).toMatchObject({
      bytes: 66_714_624,
      count: 3,
    });
    expect(auto.peakBytes).toBeLessThanOrEqual(4 * GiB);
  });
});
