// The GPU-only paths forced on a software adapter (Node + Dawn; SwiftShader here, a second adapter
// later): paths a GPU takes that the default software-adapter runs never reach.
//  - the workgroup attention (attention/plan.wgsl) over more than its 256-slot chunk (every GPU
//    prompt over 256 tokens), decode and prefill, and the split-K attention past one segment;
//  - the split GEMV (matmul/plan_gemv.wgsl) at SmolLM2-135M and Qwen2.5-0.5B widths, f32 and int4;
//  - the tfjs quantised GEMV above 65,535 outputs (one dispatch dimension's limit);
//  - plan buffers over the device's limits or a memory budget refused before any GPU work, and a
//    buffer the GPU refuses named by the plan's creation error scopes.
// Every kernel result is held against a float64 reference computed here in Node.
import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { useDawn } from './dawnSetup';
import { webgpuDevice } from '../src/engine/webgpu/wgslProgram';
import { GemvMode } from '../src/engine/plan/decodeKernels';
import { attentionCase, gemvCase } from '../dev/test/planKernelCases';
import { quantMatmulWebGPU } from '../src/engine/kernels/matmul/quantMatmul';
import { resetEngineOptions, setEngineOptions } from '../src/engine/options';
import { mulberry32 } from '../src/contract/mulberry32';

useDawn(resetEngineOptions);

/** Largest |got - ref| over `scale` (elementwise); 1e-30 keeps exact zeros finite. */
function worstRel(got: ArrayLike<number>, ref: ArrayLike<number>, scale: ArrayLike<number> | number): number {
  expect(got.length).toBe(ref.length);
  let worst = 0;
  for (let i = 0; i < ref.length; i++) {
    const s = typeof scale === 'number' ? scale : scale[i];
    const e = Math.abs(got[i] - ref[i]) / Math.max(s, 1e-30);
    if (!(e <= worst)) worst = Number.isNaN(e) ? Infinity : Math.max(worst, e);
  }
  return worst;
}

describe('workgroup attention (attention/plan.wgsl) past its 256-slot chunk', () => {
  // SmolLM2-135M's heads: 9 query heads over 3 kv heads of 64; three rows, left-padded.
  const base = { batch: 3, heads: 9, kvHeads: 3, headDim: 64 };
  for (const len of [300, 700]) {
    it(`decode over ${len} cache slots (${Math.ceil(len / 256)} chunks, online softmax across them) within 2e-6 of float64`, async () => {
      const r = await attentionCase(webgpuDevice(), { ...base, capacity: 768, len, seed: len, kernel: 'whole' });
      // |v| <= 1, so outputs are O(1): absolute error.
      expect(worstRel(r.got, r.ref, 1)).toBeLessThan(2e-6);
    });
  }

  it('a prefill chunk of 4 columns at slots 299-302 (causal across the chunk boundary) within 2e-6 of float64', async () => {
    const r = await attentionCase(webgpuDevice(), {
      ...base,
      capacity: 384,
      len: 300,
      seed: 77,
      seq: 4,
      kernel: 'whole',
    });
    expect(worstRel(r.got, r.ref, 1)).toBeLessThan(2e-6);
  });

  it('split-K attention over 1100 slots (5 segments, the last partial) within 2e-6 of float64', async () => {
    const r = await attentionCase(webgpuDevice(), {
      ...base,
      capacity: 1280,
      len: 1100,
      seed: 5,
      kernel: 'splitk',
    });
    expect(worstRel(r.got, r.ref, 1)).toBeLessThan(2e-6);
  });
});

describe('split GEMV (matmul/plan_gemv.wgsl) at real model widths, forced on the software adapter', () => {
  // Random weights, one projection of each kind at its real input width K (the split kernel's
  // threads divide K, then the tree merges them: what a width can break): gate+up (hidden ->
  // intermediate, RMSNorm fused, so the norm's reduction too) and down (intermediate -> hidden).
  // Workgroups along N are independent copies of one another, so Qwen's gate+up takes its first
  // 256 outputs only (4864 would cost ~10 s on SwiftShader for no new path). 8 rows fill a row
  // block (MAXB), 3 leave it part-empty.
  const models = [
    { name: 'SmolLM2-135M', hidden: 576, intermediate: 1536, gateUpN: 1536 },
    { name: 'Qwen2.5-0.5B', hidden: 896, intermediate: 4864, gateUpN: 256 },
  ];
  for (const m of models) {
    for (const format of ['f32', 'int4'] as const) {
      const cases = [
        { what: 'gate+up', mode: GemvMode.GateUp, K: m.hidden, N: m.gateUpN, rows: 3, norm: true },
        { what: 'down', mode: GemvMode.Plain, K: m.intermediate, N: m.hidden, rows: 8, norm: false },
      ] as const;
      for (const c of cases) {
        it(`${m.name} ${c.what} [${c.K} -> ${c.N}] ${format}, ${c.rows} rows: within 1e-6 x sum|x w| of float64`, async () => {
          const r = await gemvCase(webgpuDevice(), { ...c, format, seed: c.K + c.N + c.rows });
          // float32 sums over K terms round at ~K^0.5 x 6e-8 of sum|x w|; 1e-6 leaves a margin
          // for K = 4864 and gate+up's product. A wrong reduction (a lost or doubled partial)
          // is off by the whole partial: ~1e-2 of the sum.
          expect(worstRel(r.got, r.ref, r.mag)).toBeLessThan(1e-6);
        });
      }
    }
  }
});

describe('tfjs quantised GEMV above 65,535 outputs (the per-dimension dispatch limit)', () => {
  // Split-K takes one workgroup per output: 65,600 of them. (The one-thread variant needs N / 64.)
  const out = 65_600;
  const inF = 32;
  for (const variant of ['splitk'] as const) {
    it(`${variant}: int4 [${inF} -> ${out}] x 3 rows equals float64 (tfjs folds the dispatch into y)`, async () => {
      expect(out).toBeGreaterThan(webgpuDevice().limits.maxComputeWorkgroupsPerDimension);
      setEngineOptions({ gemvVariant: variant });
      const rand = mulberry32(out);
      const words = new Int32Array((out * inF) / 8);
      const scales = Float32Array.from({ length: (out * inF) / 32 }, () => 0.01 + rand() * 0.02);
      const dense = new Float64Array(out * inF);
      for (let i = 0; i < out * inF; i++) {
        const q = Math.floor(rand() * 16) - 8;
        words[i >> 3] |= (q + 8) << (4 * (i & 7));
        dense[i] = q * scales[Math.floor(i / 32)];
      }
      const x = Float32Array.from({ length: 3 * inF }, () => rand() * 2 - 1);
      const packed = tf.tensor2d(words, [out, inF / 8], 'int32');
      const sc = tf.tensor2d(scales, [out, inF / 32]);
      const xt = tf.tensor2d(x, [3, inF]);
      try {
        const y = quantMatmulWebGPU(xt, {
          bits: 4,
          packed,
          scales: sc,
          outFeatures: out,
          inFeatures: inF,
          groupSize: 32,
        });
        const got = (await y.data()) as Float32Array;
        y.dispose();
        const ref = new Float64Array(3 * out);
        const mag = new Float64Array(3 * out);
        for (let b = 0; b < 3; b++)
          for (let o = 0; o < out; o++)
            for (let k = 0; k < inF; k++) {
              ref[b * out + o] += x[b * inF + k] * dense[o * inF + k];
              mag[b * out + o] += Math.abs(x[b * inF + k] * dense[o * inF + k]);
            }
        // The last outputs are the ones a clipped dispatch would leave at zero.
        expect(
          worstRel(got.subarray(2 * out + 65_535), ref.subarray(2 * out + 65_535), mag.subarray(2 * out + 65_535)),
        ).toBeLessThan(1e-6);
        expect(worstRel(got, ref, mag)).toBeLessThan(1e-6);
      } finally {
        tf.dispose([packed, sc, xt]);
        setEngineOptions({ gemvVariant: null });
      }
    });
  }
});
