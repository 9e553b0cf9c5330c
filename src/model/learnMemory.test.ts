import { describe, expect, it } from 'vitest';
import { loraParamCount, planLearnMemory, type LearnModelDims } from './learnMemory';

const GiB = 2 ** 30;
const MiB = 2 ** 20;
const ALL = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] as const;
const roomy = { maxBufferSize: GiB, maxStorageBufferBindingSize: GiB };

// H 4, I 8, 2 heads of 2 (Q 4), 1 kv head (KV 2), vocabulary 10, tied, no biases.
const tiny = (numLayers: number): LearnModelDims => ({
  vocabSize: 10, hiddenSize: 4, intermediateSize: 8, numLayers, numHeads: 2, numKvHeads: 1, headDim: 2,
  tieWordEmbeddings: true, qkvBias: false, oBias: false, mlpBias: false,
});
const total = (p: ReturnType<typeof planLearnMemory>) => p.buffers.reduce((s, b) => s + b.bytes * b.count, 0);

describe('learn-memory planner, worked by hand on a tiny model', () => {
  // 2 rows of 3 prompt + 2 response tokens: L = 4 positions, N = b x 4 tokens, T = 2.
  const shape = { rows: 2, promptLen: 3, responseLen: 2 };

  it('one layer, LoRA r 2 on q and v: every scope to the byte, one micro-batch when the budget allows', () => {
    // Weights (f32): embedding 10x4x4 = 160; q 4x4x4 = 64; k, v 2x4x4 = 32 each; o 64; gate, up
    // 8x4x4 = 128 each; down 128; norms 3 x 16 = 48. Sum 784 (= 196 parameters x 4).
    // LoRA: q 2 (4 + 4) + v 2 (4 + 2) = 28 parameters = 112 bytes; params, grads, m, v and the
    // readback staging (min(112, 4 MiB)): 5 x 112 = 560.
    // Micro-batch of 2 rows (N = 8): layer input 8x4x4 = 128; attention norm out 128; q 128;
    // k, v 64 each; probabilities 2 rows x 2 heads x 4 x 4 x 4 = 256; attention out 128; MLP in
    // 128; MLP norm out 128; gate, up, act 256 each; x Aᵀ 8 x 2 x 2 targets x 4 = 128; RMS
    // inverses 8 x 2 x 4 = 64; grads: hidden 2 x 128, MLP 2 x 256, probabilities 256, q/k/v
    // 8 x 8 x 4 = 256; final hidden 2 x 2 x 4 x 4 = 64; logits and grad of 4 rows 2 x 160;
    // token stats 2 x 2 x 3 x 4 = 48; inputs 8 x 2 x 4 + 2 x 2 x 6 x 4 = 160. Sum 3984.
    const p = planLearnMemory(tiny(1), 'f32', { r: 2, targets: ['q', 'v'] }, shape, { ...roomy, budgetBytes: 5328 });
    expect(p.bytesByScope).toEqual({ model: 784, optimizer: 560, 'micro-batch': 3984 });
    expect(p.peakBytes).toBe(5328);
    expect(total(p)).toBe(5328);
    expect(p).toMatchObject({ microBatchRows: 2, accumulationSteps: 1, headChunkRows: 4, fits: true, problems: [] });
    expect(p.buffers.find((b) => b.name === 'attention probabilities')).toEqual({ name: 'attention probabilities', scope: 'micro-batch', bytes: 256, count: 1 });
    expect(loraParamCount(tiny(1), { r: 2, targets: ['q', 'v'] })).toBe(28);
  });

  it('one byte less: one row per micro-batch, two accumulation passes (every micro-batch buffer halves)', () => {
    // One row: 64 + 992 (the layer set) + 640 (grads) + 32 + 2 x 80 + 24 + 80 = 1992; peak 3336.
    const p = planLearnMemory(tiny(1), 'f32', { r: 2, targets: ['q', 'v'] }, shape, { ...roomy, budgetBytes: 5327 });
    expect(p).toMatchObject({ microBatchRows: 1, accumulationSteps: 2, peakBytes: 3336, fits: true });
  });

  it('two layers: recompute when it buys a larger micro-batch, keep the activations when all rows fit', () => {
    // Weights 160 + 2 x 152 x 4 + 16 = 1392; LoRA 56 parameters: 5 x 224 = 1120.
    // Kept: 2 layer inputs of 128 + 2 layer sets of 1984 + 1280 + 592 (head, stats, inputs) = 6096
    // at 2 rows (peak 8608); recomputing keeps one layer set: 4112 (peak 6624). At one row: 5560 and 4568.
    const plan = (budgetBytes: number, recompute: boolean | 'auto' = 'auto') => planLearnMemory(tiny(2), 'f32', { r: 2, targets: ['q', 'v'] }, shape, { ...roomy, budgetBytes }, recompute);
    expect(plan(9000)).toMatchObject({ recompute: false, microBatchRows: 2, accumulationSteps: 1, peakBytes: 8608 });
    expect(plan(7000)).toMatchObject({ recompute: true, microBatchRows: 2, accumulationSteps: 1, peakBytes: 6624 });
    expect(plan(7000, false)).toMatchObject({ recompute: false, microBatchRows: 1, accumulationSteps: 2, peakBytes: 5560 });
    expect(plan(5000)).toMatchObject({ recompute: true, microBatchRows: 1, accumulationSteps: 2, peakBytes: 4568, fits: true });
    const none = plan(4000);
    expect(none.fits).toBe(false);
    expect(none.problems[0]).toMatch(/one row per micro-batch with recompute still needs/);
  });

  it('a micro-batch buffer over one storage binding shrinks the micro-batch; the LM head is chunked to a binding', () => {
    // The probabilities are 128 bytes per row: a 200-byte binding allows one row. One logits row
    // is 40 bytes: 5 rows per chunk.
    const p = planLearnMemory(tiny(1), 'f32', { r: 2, targets: ['q', 'v'] }, shape, { maxBufferSize: GiB, maxStorageBufferBindingSize: 200, budgetBytes: GiB });
    expect(p.microBatchRows).toBe(1);
    expect(p.headChunkRows).toBe(2); // min(1 row x T 2, 5)
    expect(p.buffers.every((b) => b.scope === 'model' || b.bytes <= 200)).toBe(true);
  });

  it('weights over one binding are stored in row blocks (the loader\'s split): 10 embedding rows of 16 bytes in blocks of 3', () => {
    const p = planLearnMemory(tiny(1), 'f32', { r: 2, targets: ['q', 'v'] }, { rows: 1, promptLen: 1, responseLen: 1 }, { maxBufferSize: GiB, maxStorageBufferBindingSize: 48, budgetBytes: GiB });
    const emb = p.buffers.filter((b) => b.name.startsWith('embedding'));
    expect(emb.map((b) => [b.bytes, b.count])).toEqual([[48, 3], [16, 1]]);
    expect(p.notes.join(' ')).toMatch(/embedding \(f32\) is over maxStorageBufferBindingSize/);
  });

  it('rejects a malformed shape with the field named', () => {
    expect(() => planLearnMemory(tiny(1), 'f32', { r: 0, targets: ['q'] }, shape, { ...roomy, budgetBytes: GiB })).toThrow(/r must be a positive integer, got 0/);
    expect(() => planLearnMemory(tiny(1), 'f32', { r: 2, targets: ['q'], layers: [3] }, shape, { ...roomy, budgetBytes: GiB })).toThrow(/LoRA layer 3 does not exist/);
  });
});

// Hub config.json values (SmolLM2-360M-Instruct; Qwen2.5-0.5B-Instruct, head_dim = 896 / 14).
const smol360: LearnModelDims = { vocabSize: 49152, hiddenSize: 960, intermediateSize: 2560, numLayers: 32, numHeads: 15, numKvHeads: 5, headDim: 64, tieWordEmbeddings: true, qkvBias: false, oBias: false, mlpBias: false };
const qwen05: LearnModelDims = { vocabSize: 151936, hiddenSize: 896, intermediateSize: 4864, numLayers: 24, numHeads: 14, numKvHeads: 2, headDim: 64, tieWordEmbeddings: true, qkvBias: true, oBias: false, mlpBias: false };

describe('learn-memory planner on the issue\'s 4 GB target', () => {
  const limits = { maxBufferSize: 2 * GiB, maxStorageBufferBindingSize: GiB, budgetBytes: 4 * GiB };
  for (const [name, c] of [['SmolLM2-360M', smol360], ['Qwen2.5-0.5B', qwen05]] as const) {
    it(`${name} in int4-g32, LoRA r 16 on every projection, trains within 4 GiB`, () => {
      const lora = { r: 16, targets: ALL };
      // The benchmark shape, 8 prompts x 8 samples x (64 prompt + 64 new): every row in
      // one pass once the layers are recomputed; keeping them all would need several passes.
      const bench = { rows: 64, promptLen: 64, responseLen: 64 };
      const p = planLearnMemory(c, 'int4-g32', lora, bench, limits);
      expect(p).toMatchObject({ fits: true, recompute: true, microBatchRows: 64 });
      expect(p.peakBytes).toBeLessThanOrEqual(4 * GiB);
      expect(planLearnMemory(c, 'int4-g32', lora, bench, limits, false).accumulationSteps).toBeGreaterThan(1);
      // Longer: 16 prompts x 8 x (128 + 256) fits only as several micro-batches.
      const long = planLearnMemory(c, 'int4-g32', lora, { rows: 128, promptLen: 128, responseLen: 256 }, limits);
      expect(long.fits).toBe(true);
      expect(long.accumulationSteps).toBeGreaterThan(1);
      expect(long.microBatchRows * long.accumulationSteps).toBeGreaterThanOrEqual(128);
      expect(long.peakBytes).toBeLessThanOrEqual(4 * GiB);
      // The optimiser holds 4 copies of the LoRA and a 4 MiB readback staging.
      expect(p.bytesByScope.optimizer).toBe(4 * 4 * loraParamCount(c, lora) + 4 * MiB);
    });
  }

  it('on WebGPU\'s floor limits (128 MiB bindings) Qwen2.5-0.5B still fits: the embedding in row blocks, more micro-batches', () => {
    const p = planLearnMemory(qwen05, 'int4-g32', { r: 16, targets: ALL }, { rows: 64, promptLen: 64, responseLen: 64 }, { maxBufferSize: 256 * MiB, maxStorageBufferBindingSize: 128 * MiB, budgetBytes: 4 * GiB });
    expect(p.fits).toBe(true);
    expect(p.accumulationSteps).toBeGreaterThan(1);
    expect(p.buffers.every((b) => b.bytes <= 128 * MiB)).toBe(true);
  });
});
