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
import { attentionCase, gemmCase, gemvCase, threadMajorGemv } from '../dev/test/planKernelCases';
import { quantMatmulWebGPU } from '../src/engine/kernels/matmul/quantMatmul';
import { resetEngineOptions, setEngineOptions } from '../src/engine/options';
import { mulberry32 } from '../src/contract/mulberry32';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { DecodePlan } from '../src/engine/plan/decodePlan';
import { GpuPlan } from '../src/engine/plan/plan';
import { parseModelConfig } from '../src/contract/modelConfig';
import { parseSafetensors } from '../src/model/safetensors';
import { disposeLlama, loadLlama } from '../src/model/llama';
import { generate } from '../src/model/generate';
import { modelRef, releaseDecodePlans } from '../src/model/planned/decode';
import { releaseLearnPlans } from '../src/model/planned/learn';
import { int4Quantizer } from '../src/model/quant';
import {
  adapters as drawnAdapters,
  fixture as learnFixture,
  maxAbs,
  plannedPgGrads,
  relErrors,
  tfjsPgGrads,
} from './learnFixture';

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
          kind: 'int4',
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

describe('plan buffers the device cannot hold are refused before any GPU work, by name', () => {
  const load = () => {
    const dir = resolve('dev', 'fixtures', 'tiny-llama-f32');
    return loadLlama(
      parseModelConfig(readFileSync(resolve(dir, 'config.json'), 'utf8')),
      parseSafetensors(new Uint8Array(readFileSync(resolve(dir, 'model.safetensors')))),
    );
  };
  /** Runs `f` counting the device's createBuffer calls. */
  function counting<T>(f: () => T): { made: () => number; result: () => T } {
    const device = webgpuDevice();
    const create = device.createBuffer.bind(device);
    let made = 0;
    device.createBuffer = (d: GPUBufferDescriptor) => (made++, create(d));
    try {
      let out: T;
      let err: unknown = null;
      try {
        out = f();
      } catch (e) {
        err = e;
      }
      return {
        made: () => made,
        result: () => {
          if (err) throw err as Error;
          return out;
        },
      };
    } finally {
      device.createBuffer = create;
    }
  }

  it("a KV cache over the device's storage binding limit: the decode plan names the cache buffer and its shape, and makes no buffer", () => {
    const model = load();
    try {
      const device = webgpuDevice();
      const limit = device.limits.maxStorageBufferBindingSize;
      const B = 64;
      const kvRow = model.config.numKvHeads * model.config.headDim * 4; // bytes per (row, slot)
      const C = Math.ceil((limit + 1) / (B * kvRow) / 64) * 64;
      const kvBytes = B * kvRow * C;
      expect(kvBytes).toBeGreaterThan(limit);
      const ref = modelRef(model, []); // uploads the weights (tfjs makes their buffers lazily)
      const run = counting(() => new DecodePlan(device, ref, { batch: B, capacity: C, tokensPerRun: 8 }));
      expect(run.result).toThrow(
        new RegExp(
          `buffer "k0" needs ${kvBytes} bytes \\(.* MiB: key cache of layer 0: batch ${B} x ${model.config.numKvHeads} kv heads x capacity ${C} x head_dim ${model.config.headDim} x 4\\), over (the storage binding limit of ${limit}|the device's buffer limit).*lower the batch or the cache capacity`,
        ),
      );
      expect(run.made()).toBe(0);
    } finally {
      disposeLlama(model);
    }
  });

  it('a decode plan over EngineOptions.decodeMemoryBudget: generate() fails naming the budget and the largest buffer, no buffer made', async () => {
    const model = load();
    const device = webgpuDevice();
    const create = device.createBuffer.bind(device);
    try {
      // 2 rows, 20 prompt tokens (32 in prefill chunks of 16) + 200 new: capacity 256 slots of 2 kv heads x 8.
      const kvBytes = 2 * model.config.numKvHeads * model.config.headDim * 256 * 4;
      setEngineOptions({ decodeMemoryBudget: 4 * kvBytes }); // under the 2 layers x (k, v) caches alone
      // The plan's buffers are labelled `decode B.. C..:name` (tfjs's own uploads are not counted).
      let made = 0;
      device.createBuffer = (d: GPUBufferDescriptor) => (/^decode/.test(d.label ?? '') && made++, create(d));
      const prompts = [Array.from({ length: 20 }, (_, i) => (i * 7) % 64), [3, 4, 5]];
      await expect(generate(model, prompts, { maxNewTokens: 200, greedy: true })).rejects.toThrow(
        new RegExp(
          `over the memory budget of ${4 * kvBytes} bytes .*the largest is "k0" of ${kvBytes} bytes \\(key cache of layer 0: batch 2 .* capacity 256`,
        ),
      );
      expect(made).toBe(0);
    } finally {
      device.createBuffer = create;
      setEngineOptions({ decodeMemoryBudget: null });
      releaseDecodePlans(model);
      disposeLlama(model);
    }
  });

  it("a buffer the GPU refuses is named by the plan's creation scopes (GpuPlan.created), and a decode plan's first run fails with that name", async () => {
    const device = webgpuDevice();
    const plan = new GpuPlan(device, 1, 'scope check', true);
    try {
      plan.buffer('fits', 1024);
      plan.buffer('too large', device.limits.maxBufferSize + 256);
      await expect(plan.created()).rejects.toThrow(/^scope check: the GPU refused buffer "too large" of \d+ bytes/);
    } finally {
      plan.dispose();
    }
    const ok = new GpuPlan(device, 1, 'scope check ok', true);
    ok.buffer('fits', 1024);
    await expect(ok.created()).resolves.toBeUndefined();
    ok.dispose();

    const model = load();
    try {
      const dp = new DecodePlan(device, modelRef(model, []), {
        batch: 1,
        capacity: 64,
        tokensPerRun: 1,
        gemv: 'thread',
        tileMinRows: Infinity,
      }); // (the split kernels take ~20 s to compile on SwiftShader)
      dp.plan.buffer('late extra', device.limits.maxBufferSize + 256); // refused after the plan was made
      dp.begin({
        prefill: 1,
        basePos: [1],
        slotValid: [[1]],
        streams: [1],
        sampling: { temperature: 1, topK: 0, topP: 1, seedLo: 1, seedHi: 0 },
        loraOn: false,
      });
      await expect(dp.run(0, 1, false)).rejects.toThrow(/the GPU refused buffer "late extra"/);
      dp.dispose();
    } finally {
      disposeLlama(model);
    }
  });
});

describe('the split GEMV reduction laid out sum-major equals the thread-major layout it replaced, bit for bit', () => {
  // The same tree in the same order: only the workgroup-memory addresses move (no bank conflicts).
  // (f32 only: the weight format changes the loads, not the reduction; each layout is a ~7 s compile here.)
  for (const format of ['f32'] as const) {
    it(`Qwen2.5-0.5B gate+up [896 -> 256] ${format}, RMSNorm fused, 5 rows`, async () => {
      const spec = { format, mode: GemvMode.GateUp, K: 896, N: 256, rows: 5, norm: true, seed: 9 } as const;
      const now = await gemvCase(webgpuDevice(), spec);
      const before = await gemvCase(webgpuDevice(), spec, { patch: threadMajorGemv });
      expect(now.got).toEqual(before.got);
      expect(worstRel(now.got, now.ref, now.mag)).toBeLessThan(1e-6);
    });
  }
});

describe('learn GEMM, tiled (workgroup tiles, register blocks) against the direct kernel and float64', () => {
  // Edges off the 32 x 32 tile and the 32-wide K step; batches; transposed B (x W^T); every epilogue.
  const cases = [
    {
      M: 70,
      N: 45,
      K: 77,
      Z: 2,
      transB: false,
      format: 'buf',
      alpha: 0.5,
      accumulate: true,
      bias: true,
      residual: true,
    },
    { M: 33, N: 96, K: 130, Z: 1, transB: true, format: 'buf' },
    { M: 37, N: 72, K: 128, Z: 1, transB: true, format: 'int4', bias: true },
    { M: 64, N: 576, K: 576, Z: 1, transB: true, format: 'buf' }, // a SmolLM2-135M projection, 64 rows
  ] as const;
  for (const c of cases) {
    it(`${c.format} ${c.M}x${c.N}x${c.K}${c.Z > 1 ? ` x${c.Z}` : ''}${c.transB ? ' (B transposed)' : ''}: within 1e-6 x sum|a b| of float64 and of the direct kernel`, async () => {
      const seed = c.M * 7 + c.N;
      const tiled = await gemmCase(webgpuDevice(), { ...c, layout: 'tiled', seed });
      const direct = await gemmCase(webgpuDevice(), { ...c, layout: 'direct', seed });
      expect(worstRel(tiled.got, tiled.ref, tiled.mag)).toBeLessThan(1e-6);
      expect(worstRel(direct.got, direct.ref, direct.mag)).toBeLessThan(1e-6);
      expect(worstRel(tiled.got, direct.got, tiled.mag)).toBeLessThan(1e-6);
    });
  }
});

describe('the planned learning step with the tiled GEMM forced (the GPU default): statistics and LoRA gradients equal tfjs autodiff', () => {
  for (const name of ['tiny-llama-f32'] as const) {
    // f32 only: the int4 tiled GEMM is held to float64 above; a learning step here costs ~10 s.
    for (const quant of [false]) {
      it(`${name}${quant ? ' as int4' : ''}: log-probs and entropies within 1e-4, every LoRA gradient within 1e-4 (relative)`, async () => {
        const model = learnFixture(name, quant ? { quantize: int4Quantizer() } : {});
        const set = drawnAdapters(model);
        try {
          const want = await tfjsPgGrads(model, set);
          setEngineOptions({ learnGemm: 'tiled' });
          const got = await plannedPgGrads(model, set);
          expect(maxAbs(got.logp, want.logp)).toBeLessThan(1e-4);
          expect(maxAbs(got.entropy, want.entropy)).toBeLessThan(1e-4);
          for (const g of want.grads) expect(Math.max(...Array.from(g).map(Math.abs))).toBeGreaterThan(1e-6);
          expect(Math.max(...relErrors(got.flat, want.grads))).toBeLessThan(1e-4);
        } finally {
          setEngineOptions({ learnGemm: null });
          releaseLearnPlans(model);
          set.dispose();
          disposeLlama(model);
        }
      });
    }
  }
});
