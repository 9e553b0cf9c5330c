// The lab's WGSL kernels in Node through Dawn (the `webgpu` package): the path `npm run bench:gpu`
// takes on a GPU machine, here on Chromium's SwiftShader Vulkan driver so it runs in CI. It checks
// Sparring's own backend registration (subgroups requested, the directive hoist accepted by
// Dawn's compiler, the layout probe) and each kernel family against float64 references.
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { CHROMIUM_VULKAN_LOADER } from '../src/cli/node/dawn';
import { laneVulkan, startLaneDawn } from './dawnLane';
import { subgroupStatus } from '../src/engine/webgpu/gpuFeatures';
import { customKernelsActive, webgpuDevice } from '../src/engine/webgpu/wgslProgram';
import { decodeAttention, decodeAttentionFused } from '../src/engine/kernels/attention/decodeAttention';
import {
  attentionCaseData,
  decodeAttentionF64,
  type AttentionCaseSpec,
} from '../src/engine/kernels/attention/decodeAttentionReference';
import { sampleTokens } from '../src/engine/kernels/sample/sample';
import { sampleReference, type SamplingOptions } from '../src/engine/kernels/sample/sampleReference';
import { tokenStats, tokenStatsReduceKey } from '../src/engine/kernels/token-stats/tokenStats';
import { tokenStatsF64, tokenStatsGradF64 } from '../src/engine/kernels/token-stats/tokenStatsReference';
import { quantCaseData, type QuantCaseSpec } from '../dev/test/quantCase';
import { seededLogits, seededUpstream } from '../dev/test/seededLogits';
import { parseModelConfig } from '../src/contract/modelConfig';
import { generate } from '../src/model/generate';
import { disposeLlama, forward, loadLlama } from '../src/model/llama';
import { DenseWeight } from '../src/model/linear';
import { f16Quantizer, packF16x2, unpackF16x2 } from '../src/model/quant';
import { parseSafetensors } from '../src/model/safetensors';
import { quantCaseDense, quantCaseWeight, quantMatmulF64 } from '../dev/test/quantReference';
import { maxAbs } from '../dev/test/maxAbs';
import { setEngineOptions } from '../src/engine/options';

const gpuErrors: string[] = [];

let adapter = '';
beforeAll(async () => {
  adapter = await startLaneDawn();
  webgpuDevice().addEventListener('uncapturederror', (e) =>
    gpuErrors.push((e as GPUUncapturedErrorEvent).error.message),
  );
});
afterAll(() => {
  setEngineOptions({ subgroups: true, gemvVariant: null });
});

describe('Node + Dawn (SwiftShader Vulkan): the webgpu backend Sparring registers', () => {
  it('runs on Dawn with subgroups requested and laid out contiguously, and custom kernels on', () => {
    expect(adapter.toLowerCase()).toContain(laneVulkan === 'lavapipe' ? 'llvmpipe' : 'swiftshader');
    expect(tf.getBackend()).toBe('webgpu');
    expect(customKernelsActive()).toBe(true);
    expect(webgpuDevice().features.has('subgroups' as GPUFeatureName)).toBe(true);
    const s = subgroupStatus();
    expect(s.active).toBe(true);
    expect(s.layout?.contiguous).toBe(true);
  });

  it.skipIf(laneVulkan !== 'swiftshader')("uses Chromium's Vulkan loader, so it needs no system libvulkan1", () => {
    const loaders = new Set(
      readFileSync('/proc/self/maps', 'utf8')
        .split('\n')
        .filter((l) => /libvulkan\.so/.test(l))
        .map((l) => l.split(/\s+/).pop()),
    );
    expect([...loaders]).toEqual([CHROMIUM_VULKAN_LOADER]);
  });
});

for (const variant of ['subgroups', 'tree'] as const) {
  describe(`Dawn: token stats with the ${variant} row reduction`, () => {
    beforeAll(() => setEngineOptions({ subgroups: variant === 'subgroups' }));
    for (const [rows, vocab] of [
      [3, 4099],
      [4, 49152],
    ] as const) {
      it(`[${rows}, ${vocab}] log-prob, entropy and reference log-prob match float64 within 1e-5`, async () => {
        const seed = 3000 + vocab;
        expect(tokenStatsReduceKey(vocab)).toMatch(variant === 'tree' ? /^tree$/ : /^sg\d+x\d+$/);
        const c = seededLogits(rows, vocab, seed);
        const r = seededLogits(rows, vocab, seed + 1);
        const out = tf.tidy(() =>
          tokenStats(
            tf.tensor2d(c.logits, [rows, vocab]),
            tf.tensor1d(c.ids, 'int32'),
            tf.tensor2d(r.logits, [rows, vocab]),
          ),
        );
        const got = await out.data();
        out.dispose();
        const own = tokenStatsF64(c.logits, rows, vocab, c.ids);
        const ref = tokenStatsF64(r.logits, rows, vocab, c.ids);
        for (let i = 0; i < rows; i++) {
          expect(Math.abs(got[i * 3] - own.logp[i])).toBeLessThan(1e-5);
          expect(Math.abs(got[i * 3 + 1] - own.entropy[i])).toBeLessThan(1e-5);
          expect(Math.abs(got[i * 3 + 2] - ref.logp[i])).toBeLessThan(1e-5);
        }
      });
    }
  });
}

describe('Dawn: the token-stats gradient', () => {
  it('d(logp, entropy)/d logits for [3, 1000] matches float64 within 1e-5', async () => {
    const [rows, vocab, seed] = [3, 1000, 41];
    const c = seededLogits(rows, vocab, seed);
    const ids = tf.tensor1d(c.ids, 'int32');
    const dy = tf.tensor2d(seededUpstream(rows, seed), [rows, 2]);
    const g = tf.grad((x: tf.Tensor) => tf.sum(tf.mul(tokenStats(x as tf.Tensor2D, ids), dy)))(
      tf.tensor2d(c.logits, [rows, vocab]),
    );
    const got = await g.data();
    tf.dispose([ids, dy, g]);
    expect(maxAbs(got, tokenStatsGradF64(c.logits, rows, vocab, c.ids, seededUpstream(rows, seed)))).toBeLessThan(1e-5);
  });
});

describe('Dawn: quantised matmul, forward and backward through the frozen weight', () => {
  const cases: QuantCaseSpec[] = [
    { kind: 'int8', rows: 1, out: 75, in: 138, groupSize: 0, seed: 21 },
    { kind: 'int4', rows: 5, out: 75, in: 160, groupSize: 32, seed: 22, gemv: 'splitk' },
    { kind: 'int8', rows: 41, out: 77, in: 1000, groupSize: 8, seed: 23 },
    { kind: 'int4', rows: 40, out: 70, in: 1024, groupSize: 32, seed: 24 },
    // f16: both GEMVs, an odd input size (a half-empty last word) and the tiled GEMM both ways.
    { kind: 'f16', rows: 1, out: 75, in: 137, groupSize: 137, seed: 25 },
    { kind: 'f16', rows: 5, out: 75, in: 137, groupSize: 137, seed: 26, gemv: 'splitk' },
    { kind: 'f16', rows: 41, out: 77, in: 1001, groupSize: 1001, seed: 27 },
  ];
  for (const c of cases) {
    it(`${c.kind} rows=${c.rows} [${c.out}, ${c.in}]${c.gemv ? ` (${c.gemv} GEMV)` : ''} matches float64`, async () => {
      const { w, x, dy } = quantCaseData(c);
      const weight = quantCaseWeight(c, w);
      setEngineOptions({ gemvVariant: c.gemv ?? null });
      const xt = tf.tensor2d(x, [c.rows, c.in]);
      const dyt = tf.tensor2d(dy, [c.rows, c.out]);
      const y = weight.matmul(xt);
      const dx = tf.grad((v: tf.Tensor) => tf.sum(tf.mul(weight.matmul(v as tf.Tensor2D), dyt)))(xt);
      const got = { y: await y.data(), dx: await dx.data() };
      tf.dispose([xt, dyt, y, dx]);
      weight.dispose();
      const ref = quantMatmulF64(c);
      // f32 accumulation of up to 1,024 products of size <= 0.5 (as in the browser test).
      const tol = c.in > 500 || c.out > 500 ? 3e-4 : 1e-4;
      expect(maxAbs(got.y, ref.y)).toBeLessThan(tol);
      expect(maxAbs(got.dx, ref.dx)).toBeLessThan(tol);
    });
  }
  // tfjs-webgpu has no BitwiseAnd: toDense (merged export, mergeLora) goes through the GEMM.
  it('toDense on WebGPU gives the host-stored weights exactly (int8, int4, f16; several identity slices)', async () => {
    for (const c of [cases[2], cases[3], { ...cases[5], out: 600 }]) {
      const weight = quantCaseWeight(c, quantCaseData(c).w);
      const dense = weight.toDense();
      expect(dense.shape).toEqual([c.out, c.in]);
      const got = await dense.data();
      tf.dispose(dense);
      weight.dispose();
      const ref = quantCaseDense(c);
      expect(maxAbs(got, ref)).toBe(0);
    }
  });
});

describe('Dawn: sampling and decode attention', () => {
  it('top-k / top-p sampling picks the ids of the CPU reference, and repeats them for the same seed', async () => {
    const [rows, vocab] = [6, 4099];
    const o: SamplingOptions = { temperature: 0.8, topK: 40, topP: 0.9, seed: 7, step: 3 };
    const c = seededLogits(rows, vocab, vocab + 5);
    const draw = async () => {
      const logits = tf.tensor2d(c.logits, [rows, vocab]);
      const ids = await sampleTokens(logits, o);
      const v = Array.from(await ids.data());
      tf.dispose([logits, ids]);
      return v;
    };
    const first = await draw();
    expect(first).toEqual(Array.from(sampleReference(c.logits, rows, vocab, o)));
    expect(await draw()).toEqual(first);
  });

  it('GQA decode attention over a KV cache (9 query / 3 kv heads of 64, 37 of 64 slots) matches float64 within 1e-5', async () => {
    const c: AttentionCaseSpec = { batch: 2, heads: 9, kvHeads: 3, capacity: 64, headDim: 64, len: 37, seed: 31 };
    expect(decodeAttentionFused(c.len)).toBe(true);
    const d = attentionCaseData(c);
    const t = tf.tidy(() =>
      decodeAttention(
        tf.tensor3d(d.q, [c.batch, c.heads, c.headDim]),
        tf.tensor4d(d.k, [c.batch, c.kvHeads, c.capacity, c.headDim]),
        tf.tensor4d(d.v, [c.batch, c.kvHeads, c.capacity, c.headDim]),
        tf.tensor2d(d.bias, [c.batch, c.capacity]),
        c.len,
      ),
    );
    const got = await t.data();
    t.dispose();
    expect(maxAbs(got, decodeAttentionF64(c, d))).toBeLessThan(1e-5);
  });

  it('the tiny-llama-f32 golden fixture reproduces: logits within 1e-3 and the exact greedy continuation', async () => {
    const dir = resolve('dev', 'fixtures', 'tiny-llama-f32');
    const golden = JSON.parse(readFileSync(resolve(dir, 'golden.json'), 'utf8')) as {
      input_ids: number[];
      logits: number[][];
      greedy_continuation: number[];
    };
    const model = loadLlama(
      parseModelConfig(readFileSync(resolve(dir, 'config.json'), 'utf8')),
      parseSafetensors(new Uint8Array(readFileSync(resolve(dir, 'model.safetensors')))),
    );
    try {
      const logits = forward(model, [golden.input_ids]);
      const got = await logits.data();
      logits.dispose();
      expect(maxAbs(got, golden.logits.flat())).toBeLessThan(1e-3);
      const r = await generate(model, [golden.input_ids], {
        maxNewTokens: golden.greedy_continuation.length,
        greedy: true,
      });
      expect(r.tokens[0]).toEqual(golden.greedy_continuation);
    } finally {
      disposeLlama(model);
    }
  });

  it('an f16 model: logits equal the f32 model on the f16-rounded weights within 1e-5 (GEMV and tiled GEMM)', async () => {
    const dir = resolve('dev', 'fixtures', 'tiny-llama-f32');
    const golden = JSON.parse(readFileSync(resolve(dir, 'golden.json'), 'utf8')) as { input_ids: number[] };
    const config = parseModelConfig(readFileSync(resolve(dir, 'config.json'), 'utf8'));
    const st = parseSafetensors(new Uint8Array(readFileSync(resolve(dir, 'model.safetensors'))));
    const half = loadLlama(config, st, { quantize: f16Quantizer('tiny') });
    const ref = loadLlama(config, st, {
      quantize: (_n, w, shape) => new DenseWeight(tf.tensor2d(unpackF16x2(packF16x2(w, shape), ...shape), shape)),
    });
    try {
      expect(half.layers[0].q.weight.kind).toBe('f16');
      // 12 prompt rows take the tiled GEMM, 5 the decode GEMV.
      for (const ids of [golden.input_ids, golden.input_ids.slice(0, 5)]) {
        const [a, b] = [half, ref].map((m) => forward(m, [ids]));
        const got = await a.data();
        const want = await b.data();
        tf.dispose([a, b]);
        expect(maxAbs(got, want)).toBeLessThan(1e-5);
      }
    } finally {
      disposeLlama(half);
      disposeLlama(ref);
    }
  });

  it('left no uncaptured WebGPU error (a shader Dawn refused to compile would show here)', () => {
    expect(gpuErrors).toEqual([]);
  });
});
