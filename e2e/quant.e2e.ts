import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import type { QuantCaseSpec } from '../dev/test/quantCase';
import { quantMatmulF64 as reference } from '../dev/test/quantReference';
import { sharedHarnessPage } from './browser';
import type { HarnessEngine } from '../dev/harness/harnessApi';
import { maxAbs } from '../dev/test/maxAbs';

// WebGPU is forced: on headless Chromium's software adapter (SwiftShader) the lab's auto choice is wasm.
const lab = sharedHarnessPage('?backend=webgpu');

describe('quantised matmul kernels on WebGPU', () => {
  // Rows 1 and 5 take the decode GEMV, 37 the tiled GEMM; no dimension is a multiple of 16, and
  // int8 per channel with in = 138 exercises a zero-padded last word.
  const cases: QuantCaseSpec[] = [
    { kind: 'int8', rows: 1, out: 75, in: 138, groupSize: 0, seed: 1 },
    { kind: 'int8', rows: 5, out: 75, in: 136, groupSize: 8, seed: 2 },
    { kind: 'int8', rows: 37, out: 75, in: 138, groupSize: 0, seed: 3 },
    { kind: 'int4', rows: 1, out: 75, in: 160, groupSize: 32, seed: 4 },
    { kind: 'int4', rows: 8, out: 75, in: 160, groupSize: 32, seed: 5 },
    { kind: 'int4', rows: 37, out: 75, in: 160, groupSize: 32, seed: 6 },
    // Tiled over several 32-wide slices and tiles both ways: int8 groups of 8 (one scale per
    // packed word), groups of 2 (scales change inside a word), int4 groups of 32.
    { kind: 'int8', rows: 41, out: 77, in: 1000, groupSize: 8, seed: 15 },
    { kind: 'int8', rows: 33, out: 70, in: 130, groupSize: 2, seed: 16 },
    { kind: 'int4', rows: 40, out: 70, in: 1024, groupSize: 32, seed: 17 },
    // The split-K GEMV that hardware GPUs get (SwiftShader picks the one-thread-per-output one).
    { kind: 'int8', rows: 1, out: 75, in: 138, groupSize: 0, seed: 7, gemv: 'splitk' },
    { kind: 'int8', rows: 5, out: 77, in: 1000, groupSize: 8, seed: 8, gemv: 'splitk' },
    { kind: 'int4', rows: 8, out: 75, in: 160, groupSize: 32, seed: 9, gemv: 'splitk' },
    // f16 halves (unpack2x16float, no shader-f16): odd input (half-empty last word), all three kernels.
    { kind: 'f16', rows: 1, out: 75, in: 137, groupSize: 137, seed: 31 },
    { kind: 'f16', rows: 5, out: 75, in: 137, groupSize: 137, seed: 32, gemv: 'splitk' },
    { kind: 'f16', rows: 37, out: 75, in: 137, groupSize: 137, seed: 33 },
  ];
  for (const c of cases) {
    it(`${c.kind} rows=${c.rows} [${c.out}, ${c.in}] group ${c.groupSize || 'channel'}${c.gemv ? ` (${c.gemv} GEMV)` : ''}: forward and backward match float64`, async () => {
      const got = await lab.page.evaluate((cc) => (window.sparring!.engine as HarnessEngine).quantMatmulCheck(cc), c);
      expect(got.backend).toBe('webgpu');
      const ref = reference(c);
      // Sums of up to 1,024 products of size <= 0.5: f32 accumulation error stays under 1e-4 for
      // ~150 terms, 3e-4 for 1,000.
      const tol = c.in > 500 || c.out > 500 ? 3e-4 : 1e-4;
      expect(maxAbs(got.y, ref.y)).toBeLessThan(tol);
      expect(maxAbs(got.dx, ref.dx)).toBeLessThan(tol);
    });
  }
});

describe('quantised weights over the storage-binding limit on WebGPU', () => {
  // A pretend limit of 1,000 bytes: int8 rows of 138 inputs are 35 words (140 B), 7 rows a binding,
  // so W [75, 138] is 11 row blocks; int4 rows of 160 are 20 words, 12 rows a binding, 7 blocks.
  const cases: QuantCaseSpec[] = [
    { kind: 'int8', rows: 1, out: 75, in: 138, groupSize: 0, seed: 11 },
    { kind: 'int8', rows: 37, out: 75, in: 138, groupSize: 0, seed: 12 },
    { kind: 'int4', rows: 8, out: 75, in: 160, groupSize: 32, seed: 13, gemv: 'splitk' },
    { kind: 'int4', rows: 37, out: 75, in: 160, groupSize: 32, seed: 14 },
    // f16 rows of 137 inputs are 69 words (276 B), 3 rows a binding: 25 blocks.
    { kind: 'f16', rows: 37, out: 75, in: 137, groupSize: 137, seed: 34 },
  ];
  for (const c of cases) {
    it(`${c.kind} rows=${c.rows} [${c.out}, ${c.in}] in row blocks: forward and backward match float64`, async () => {
      await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).setBindingLimit(1000));
      try {
        const got = await lab.page.evaluate((cc) => (window.sparring!.engine as HarnessEngine).quantMatmulCheck(cc), c);
        const ref = reference(c);
        expect(maxAbs(got.y, ref.y)).toBeLessThan(1e-4);
        expect(maxAbs(got.dx, ref.dx)).toBeLessThan(1e-4);
        expect(got.blocks).toBe({ int8: 11, int4: 7, f16: 25 }[c.kind]);
      } finally {
        await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).setBindingLimit(null));
      }
    });
  }
});

describe('quantised golden fixtures on WebGPU', () => {
  // Same stated bounds as the CPU unit tests (src/model/quant.test.ts): these tiny random models
  // average little quantisation error away.
  const bounds = { int8: { max: 0.5, mean: 0.07 }, int4: { max: 9, mean: 1.0 } } as const;
  for (const kind of ['int8', 'int4'] as const) {
    it(`tiny-llama-f32 with ${kind} weights: logits within the stated bounds`, async () => {
      const golden = JSON.parse(readFileSync(resolve('dev', 'fixtures', 'tiny-llama-f32', 'golden.json'), 'utf8')) as {
        input_ids: number[];
        logits: number[][];
      };
      const baseUrl = `${inject('fixturesURL')}tiny-llama-f32/`;
      const quantize = kind === 'int8' ? { kind } : { kind, groupSize: 32 };
      await lab.page.evaluate(
        ([u, q]) =>
          (window.sparring!.engine as HarnessEngine).loadModel('q', { kind: 'url', baseUrl: u }, { quantize: q }),
        [baseUrl, quantize] as const,
      );
      const out = await lab.page.evaluate(
        (ids) => (window.sparring!.engine as HarnessEngine).logits('q', ids),
        golden.input_ids,
      );
      const want = golden.logits.flat();
      const got = out.logits.flat();
      const mean = want.reduce((s, v, i) => s + Math.abs(v - got[i]), 0) / want.length;
      expect(maxAbs(got, want)).toBeLessThan(bounds[kind].max);
      expect(mean).toBeLessThan(bounds[kind].mean);
      expect((await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).status())).gpuErrors).toEqual(
        [],
      );
    });
  }

  it('tiny-llama-f32 with int8 weights in row blocks (256-byte binding limit) gives the unsplit logits', async () => {
    const golden = JSON.parse(readFileSync(resolve('dev', 'fixtures', 'tiny-llama-f32', 'golden.json'), 'utf8')) as {
      input_ids: number[];
    };
    const baseUrl = `${inject('fixturesURL')}tiny-llama-f32/`;
    const load = (name: string) =>
      lab.page.evaluate(
        ([n, u]) =>
          (window.sparring!.engine as HarnessEngine).loadModel(
            n,
            { kind: 'url', baseUrl: u },
            { quantize: { kind: 'int8' } },
          ),
        [name, baseUrl] as const,
      );
    const tensors = async () =>
      (await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).status())).memory.numTensors;
    const t0 = await tensors();
    await load('whole');
    const t1 = await tensors();
    const whole = await lab.page.evaluate(
      (ids) => (window.sparring!.engine as HarnessEngine).logits('whole', ids),
      golden.input_ids,
    );
    // 256 B = 8 int8 rows of 32 inputs: every projection is split (q: 4 blocks, down: 8).
    await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).setBindingLimit(256));
    try {
      const t2 = await tensors();
      await load('blocks');
      // Each block holds its own words and scales: the split model is held in many more tensors.
      expect((await tensors()) - t2).toBeGreaterThan(2 * (t1 - t0));
      const split = await lab.page.evaluate(
        (ids) => (window.sparring!.engine as HarnessEngine).logits('blocks', ids),
        golden.input_ids,
      );
      expect(maxAbs(split.logits.flat(), whole.logits.flat())).toBeLessThan(1e-5);
    } finally {
      await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).setBindingLimit(null));
      await lab.page.evaluate(() =>
        Promise.all([
          (window.sparring!.engine as HarnessEngine).unloadModel('whole'),
          (window.sparring!.engine as HarnessEngine).unloadModel('blocks'),
        ]),
      );
    }
  });

  it('tiny-llama-f32 in float32 row blocks (256-byte binding limit: embedding and tied head in 32 blocks) gives the golden logits', async () => {
    const golden = JSON.parse(readFileSync(resolve('dev', 'fixtures', 'tiny-llama-f32', 'golden.json'), 'utf8')) as {
      input_ids: number[];
      logits: number[][];
    };
    const baseUrl = `${inject('fixturesURL')}tiny-llama-f32/`;
    await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).setBindingLimit(256));
    try {
      const before = (await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).status())).memory
        .numTensors;
      await lab.page.evaluate(
        (u) => (window.sparring!.engine as HarnessEngine).loadModel('f32blocks', { kind: 'url', baseUrl: u }),
        baseUrl,
      );
      // Unsplit it is 21 tensors (embedding, final norm, 2 x (2 norms + 7 projections)); in blocks,
      // 32 for the embedding alone and 4-8 per projection.
      expect(
        (await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).status())).memory.numTensors - before,
      ).toBeGreaterThan(80);
      const out = await lab.page.evaluate(
        (ids) => (window.sparring!.engine as HarnessEngine).logits('f32blocks', ids),
        golden.input_ids,
      );
      expect(maxAbs(out.logits.flat(), golden.logits.flat())).toBeLessThan(1e-3);
      expect((await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).status())).gpuErrors).toEqual(
        [],
      );
    } finally {
      await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).setBindingLimit(null));
      await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).unloadModel('f32blocks'));
    }
  });
});
