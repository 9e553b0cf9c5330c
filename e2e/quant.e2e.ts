import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { quantCaseData, type QuantCaseSpec } from '../src/engine/testing/quantCase';
import { quantizeInt4, quantizeInt8 } from '../src/model/quant';
import { sharedLabPage } from './browser';

const lab = sharedLabPage();

/** Float64 reference from the host-quantised weights (q * scale), independent of any kernel. */
function reference(c: QuantCaseSpec) {
  const { w, x, dy } = quantCaseData(c);
  const m = c.bits === 8 ? quantizeInt8(w, [c.out, c.in], { groupSize: c.groupSize }) : quantizeInt4(w, [c.out, c.in], c.groupSize);
  const nG = c.in / m.groupSize;
  const W = (o: number, k: number) => m.q[o * c.in + k] * m.scales[o * nG + Math.floor(k / m.groupSize)];
  const y = new Float64Array(c.rows * c.out);
  const dx = new Float64Array(c.rows * c.in);
  for (let n = 0; n < c.rows; n++) {
    for (let o = 0; o < c.out; o++) {
      let s = 0;
      for (let k = 0; k < c.in; k++) s += x[n * c.in + k] * W(o, k);
      y[n * c.out + o] = s;
    }
    for (let k = 0; k < c.in; k++) {
      let s = 0;
      for (let o = 0; o < c.out; o++) s += dy[n * c.out + o] * W(o, k);
      dx[n * c.in + k] = s;
    }
  }
  return { y, dx };
}

const maxAbs = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};

describe('quantised matmul kernels on WebGPU', () => {
  // Rows 1 and 5 take the decode GEMV, 37 the tiled GEMM; no dimension is a multiple of 16, and
  // int8 per channel with in = 138 exercises a zero-padded last word.
  const cases: QuantCaseSpec[] = [
    { bits: 8, rows: 1, out: 75, in: 138, groupSize: 0, seed: 1 },
    { bits: 8, rows: 5, out: 75, in: 136, groupSize: 8, seed: 2 },
    { bits: 8, rows: 37, out: 75, in: 138, groupSize: 0, seed: 3 },
    { bits: 4, rows: 1, out: 75, in: 160, groupSize: 32, seed: 4 },
    { bits: 4, rows: 8, out: 75, in: 160, groupSize: 32, seed: 5 },
    { bits: 4, rows: 37, out: 75, in: 160, groupSize: 32, seed: 6 },
    // The split-K GEMV that hardware GPUs get (SwiftShader picks the one-thread-per-output one).
    { bits: 8, rows: 1, out: 75, in: 138, groupSize: 0, seed: 7, gemv: 'splitk' },
    { bits: 8, rows: 5, out: 77, in: 1000, groupSize: 8, seed: 8, gemv: 'splitk' },
    { bits: 4, rows: 8, out: 75, in: 160, groupSize: 32, seed: 9, gemv: 'splitk' },
  ];
  for (const c of cases) {
    it(`int${c.bits} rows=${c.rows} [${c.out}, ${c.in}] group ${c.groupSize || 'channel'}${c.gemv ? ` (${c.gemv} GEMV)` : ''}: forward and backward match float64`, async () => {
      const got = await lab.page.evaluate((cc) => window.sparring!.engine.quantMatmulCheck(cc), c);
      expect(got.backend).toBe('webgpu');
      const ref = reference(c);
      // Sums of ~150 products of size <= 0.5: f32 accumulation error stays well under 1e-4.
      expect(maxAbs(got.y, ref.y)).toBeLessThan(1e-4);
      expect(maxAbs(got.dx, ref.dx)).toBeLessThan(1e-4);
    });
  }
});

describe('quantised golden fixtures on WebGPU', () => {
  // Same stated bounds as the CPU unit tests (src/model/quant.test.ts): these tiny random models
  // average little quantisation error away.
  const bounds = { 8: { max: 0.5, mean: 0.07 }, 4: { max: 9, mean: 1.0 } } as const;
  for (const bits of [8, 4] as const) {
    it(`tiny-llama-f32 with int${bits} weights: logits within the stated bounds`, async () => {
      const golden = JSON.parse(readFileSync(resolve('..', 'shared', 'fixtures', 'tiny-llama-f32', 'golden.json'), 'utf8')) as { input_ids: number[]; logits: number[][] };
      const baseUrl = `${inject('fixturesURL')}tiny-llama-f32/`;
      const quantize = bits === 8 ? { bits } : { bits, groupSize: 32 };
      await lab.page.evaluate(([u, q]) => window.sparring!.engine.loadModel('q', { kind: 'url', baseUrl: u }, { quantize: q }), [baseUrl, quantize] as const);
      const out = await lab.page.evaluate((ids) => window.sparring!.engine.logits('q', ids), golden.input_ids);
      const want = golden.logits.flat();
      const got = out.logits.flat();
      const mean = want.reduce((s, v, i) => s + Math.abs(v - got[i]), 0) / want.length;
      expect(maxAbs(got, want)).toBeLessThan(bounds[bits].max);
      expect(mean).toBeLessThan(bounds[bits].mean);
      expect((await lab.page.evaluate(() => window.sparring!.engine.status())).gpuErrors).toEqual([]);
    });
  }
});
