import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { learnStepFlops } from './learnFlops';
import type { LearnModelDims } from '../../src/contract/learnMemory';

// H 4, I 8, 2 heads of 2 (Q 4), 1 kv head (KV 2), vocabulary 10.
const shape4 = { rows: 1, promptLen: 2, responseLen: 2 };
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

describe('learnStepFlops equals the matrix work the learning plan dispatches', () => {
  // The plan built on a stand-in device (no GPU: only the calls the constructor makes), every GEMM
  // dispatch of the step's phases (forward with adapters, backward; not the reference pass) read
  // back from its uniform: M x N x K per z-slice, times the dispatch's z count.
  const g = globalThis as Record<string, unknown>;
  const stubs = {
    GPUBufferUsage: { MAP_READ: 1, COPY_SRC: 4, COPY_DST: 8, UNIFORM: 64, STORAGE: 128, QUERY_RESOLVE: 512 },
    GPUShaderStage: { COMPUTE: 4 },
  };
  beforeAll(() => Object.assign(g, stubs));
  afterAll(() => {
    for (const k of Object.keys(stubs)) delete g[k];
  });

  it('one layer, LoRA r 1 on q and down, 1 row x (2 + 2)', async () => {
    const { LearnPlan } = await import('../../src/engine/plan/learnPlan');
    const { GpuPlan } = await import('../../src/engine/plan/plan');
    const obj = () => ({});
    const buffer = (d: { size: number }) => ({ size: d.size, destroy() {} });
    const device = {
      limits: { maxComputeWorkgroupsPerDimension: 65535 },
      createBuffer: buffer,
      createBindGroupLayout: obj,
      createShaderModule: obj,
      createComputePipeline: obj,
      createPipelineLayout: obj,
      createBindGroup: obj,
      queue: { writeBuffer() {} },
      // The plan makes its buffers and pipelines inside error scopes (a refusal names the buffer).
      pushErrorScope() {},
      popErrorScope: async () => null,
    } as unknown as GPUDevice;
    const buf = buffer({ size: 4 }) as unknown as GPUBuffer;
    const f32 = (rows: number, cols: number) => ({ weight: { kind: 'f32' as const, rows, cols, buffer: buf } });
    const vec = (length: number) => ({ buffer: buf, length });
    const layer = {
      inputNorm: vec(4),
      postNorm: vec(4),
      q: f32(4, 4),
      k: f32(2, 4),
      v: f32(2, 4),
      o: f32(4, 4),
      gate: f32(8, 4),
      up: f32(8, 4),
      down: f32(4, 8),
    };
    const ref = {
      hidden: 4,
      intermediate: 8,
      heads: 2,
      kvHeads: 1,
      headDim: 2,
      vocab: 10,
      eps: 1e-5,
      invFreq: new Float64Array([1]),
      embed: [{ rowStart: 0, rows: 10, buffer: buf }],
      layers: [layer],
      norm: vec(4),
      head: [{ kind: 'f32' as const, rows: 10, cols: 4, buffer: buf }],
      lora: [{ q: { r: 1, scale: 2 }, down: { r: 1, scale: 2 } }],
    };
    let macs = 0;
    const add = vi.spyOn(GpuPlan.prototype, 'add').mockImplementation(function (phase, kernel, values, workgroups) {
      if (phase === 'ref' || !kernel.key.startsWith('learn_gemm')) return;
      const u = new Uint32Array((values[0] as { uniform: ArrayBuffer }).uniform);
      macs += u[0] * u[1] * u[2] * workgroups[2];
    });
    try {
      new LearnPlan(device, ref, { rows: 1, promptLength: 2, responseLength: 2, temperature: 1 });
    } finally {
      add.mockRestore();
    }
    expect(2 * macs).toBe(learnStepFlops(tiny(1), { r: 1, targets: ['q', 'down'] }, shape4).total);
    expect(2 * macs).toBe(2840);
  });
});
