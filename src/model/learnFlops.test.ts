import { describe, expect, it } from 'vitest';
import { learnStepFlops } from './learnFlops';
import type { LearnModelDims } from './learnMemory';

// H 4, I 8, 2 heads of 2 (Q 4), 1 kv head (KV 2), vocabulary 10.
const tiny = (numLayers: number): LearnModelDims => ({
  vocabSize: 10, hiddenSize: 4, intermediateSize: 8, numLayers, numHeads: 2, numKvHeads: 1, headDim: 2,
  tieWordEmbeddings: true, qkvBias: false, oBias: false, mlpBias: false,
});

describe('learnStepFlops, worked by hand on a tiny model', () => {
  // 1 row of 2 prompt + 2 response tokens: L = 3 columns, N = 3 tokens, 2 response rows.
  const shape = { rows: 1, promptLen: 2, responseLen: 2 };

  it('one layer, LoRA r 1 on q and down', () => {
    // Frozen projections, multiply-adds per token: q 4x4 16, k 4x2 8, v 8, o 16, gate 4x8 32, up
    // 32, down 32 = 144; x 3 tokens = 432, the same again backward.
    // LoRA r 1: q 1 (4 + 4) = 8, down 1 (8 + 4) = 12: 20 per token, 60 forward, 120 backward.
    // Attention: 1 row x 2 heads x 3 x 3 x 2 = 36 per product; 2 forward (72), 4 backward (144).
    // Head: 2 response rows x 4 x 10 = 80, forward and backward.
    // Forward 432 + 60 + 72 + 80 = 644 MACs = 1288 FLOPs; backward 432 + 120 + 144 + 80 = 776 = 1552.
    const f = learnStepFlops(tiny(1), { r: 1, targets: ['q', 'down'] }, shape);
    expect(f).toEqual({ forward: 1288, backward: 1552, total: 2840 });
  });

  it('LoRA only in the adapted layers', () => {
    // Two layers, LoRA in layer 1 only: the frozen part twice (432 + 72 forward, 432 + 144 backward
    // per layer), the LoRA part once (60 / 120), the head once (80 each way).
    // Forward 2 x 504 + 60 + 80 = 1148 MACs; backward 2 x 576 + 120 + 80 = 1352. Total 2500 MACs.
    const f = learnStepFlops(tiny(2), { r: 1, targets: ['q', 'down'], layers: [1] }, shape);
    expect(f).toEqual({ forward: 2296, backward: 2704, total: 5000 });
  });

  it('grows with the square of the columns only through attention', () => {
    // Without LoRA and with a 0-wide head the count is 2 x (3 N x 144 + 6 x attention): doubling
    // the columns doubles the projection part and quadruples the attention part.
    const noHead = { ...tiny(1), vocabSize: 0 };
    const a = learnStepFlops(noHead, { r: 1, targets: [] }, { rows: 1, promptLen: 2, responseLen: 2 }); // L 3
    const b = learnStepFlops(noHead, { r: 1, targets: [] }, { rows: 1, promptLen: 4, responseLen: 3 }); // L 6
    expect(a.total).toBe(2 * (2 * 3 * 144 + 6 * 36));
    expect(b.total).toBe(2 * (2 * 6 * 144 + 6 * 144));
  });
});
