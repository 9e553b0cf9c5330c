import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenStatsF64, tokenStatsGradF64 } from '../src/engine/kernels/token-stats/tokenStatsReference';
import { sampleReference, type SamplingOptions } from '../src/engine/kernels/sample/sampleReference';
import {
  attentionCaseData,
  decodeAttentionF64,
  type AttentionCaseSpec,
} from '../src/engine/kernels/attention/decodeAttentionReference';
import {
  normCaseData,
  rmsNormF64,
  ropeF64,
  type NormCaseSpec,
} from '../src/engine/kernels/rms-norm/fusedNormReference';
import {
  blockCaseData,
  kvWriteF64,
  swigluF64,
  type BlockCaseSpec,
} from '../src/engine/kernels/swiglu/fusedBlockReference';
import { seededLogits, seededUpstream } from '../dev/test/seededLogits';
import { sharedHarnessPage } from './browser';
import type { HarnessEngine } from '../dev/harness/harnessApi';

// WebGPU is forced: on headless Chromium's software adapter (SwiftShader) the lab's auto choice is wasm.
const lab = sharedHarnessPage('?backend=webgpu');

// Both row reductions: subgroup operations (Debian's Chromium gives SwiftShader the subgroups
// feature, 4 lanes wide, laid out contiguously) and the workgroup-memory tree other adapters use.
for (const variant of ['subgroups', 'tree'] as const) {
  const expectReduce = (reduce: string | null) =>
    variant === 'tree' ? expect(reduce).toBe('tree') : expect(reduce).toMatch(/^sg\d+x4$/);
  describe(`row reduction: ${variant}`, () => {
    beforeAll(async () => {
      const s = await lab.page.evaluate(
        (on) => (window.sparring!.engine as HarnessEngine).setSubgroups(on),
        variant === 'subgroups',
      );
      if (variant === 'subgroups') {
        expect(s.layout).toEqual({ contiguous: true, sizes: [4], minSize: 4 });
        expect(s.active).toBe(true);
      } else expect(s.active).toBe(false);
    });
    afterAll(async () => {
      await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).setSubgroups(true));
    });

    describe(`WGSL token-stats kernel on WebGPU (${variant})`, () => {
      // Shapes off the 256-wide workgroup, and real vocabularies (SmolLM2 49152, Qwen2.5 151936).
      const shapes: [number, number, number][] = [
        [1, 7, 1e-5],
        [5, 1000, 1e-5],
        [3, 4099, 1e-5],
        [4, 49152, 1e-5],
        [2, 151936, 1e-5],
      ];
      for (const [rows, vocab, tol] of shapes) {
        it(`matches the float64 CPU reference for [${rows}, ${vocab}] within ${tol}`, async () => {
          const seed = 1000 + vocab;
          const got = await lab.page.evaluate(
            ([r, v, s]) => (window.sparring!.engine as HarnessEngine).tokenStatsCheck(r, v, s),
            [rows, vocab, seed],
          );
          expect(got.backend).toBe('webgpu');
          expect(got.path).toBe('wgsl');
          expectReduce(got.reduce);
          // The reference is computed here in Node from the same seeded inputs.
          const c = seededLogits(rows, vocab, seed);
          const ref = tokenStatsF64(c.logits, rows, vocab, c.ids);
          for (let r = 0; r < rows; r++) {
            expect(Math.abs(got.logp[r] - ref.logp[r])).toBeLessThan(tol);
            expect(Math.abs(got.entropy[r] - ref.entropy[r])).toBeLessThan(tol);
          }
        });
      }
    });

    describe(`WGSL token-stats kernel with reference logits (KL) on WebGPU (${variant})`, () => {
      // The reference policy's log-prob of the same ids comes from the same pass: a third column.
      for (const [rows, vocab] of [
        [5, 1000],
        [3, 4099],
        [4, 49152],
        [2, 151936],
      ] as const) {
        it(`third column is the float64 log-prob under the reference logits for [${rows}, ${vocab}]; the first two are unchanged`, async () => {
          const seed = 2000 + vocab;
          const got = await lab.page.evaluate(
            ([r, v, s]) => (window.sparring!.engine as HarnessEngine).tokenStatsCheck(r, v, s, true),
            [rows, vocab, seed],
          );
          expect(got.path).toBe('wgsl');
          expectReduce(got.reduce);
          const c = seededLogits(rows, vocab, seed);
          const own = tokenStatsF64(c.logits, rows, vocab, c.ids);
          const ref = tokenStatsF64(seededLogits(rows, vocab, seed + 1).logits, rows, vocab, c.ids);
          expect(got.refLogp).toHaveLength(rows);
          // float32 log-sum-exp of a row (|lse| ~ 25 here): 1e-5, and 3e-5 over 151936 terms.
          const tol = vocab > 100_000 ? 3e-5 : 1e-5;
          const close = (a: number, b: number) => expect(Math.abs(a - b)).toBeLessThan(tol);
          for (let r = 0; r < rows; r++) {
            close(got.logp[r], own.logp[r]);
            close(got.entropy[r], own.entropy[r]);
            close(got.refLogp![r], ref.logp[r]);
            // The two distributions differ, so a kernel that read the wrong tensor would fail here.
            expect(Math.abs(ref.logp[r] - own.logp[r])).toBeGreaterThan(1e-3);
          }
        });
      }
    });
  });
}

describe('WGSL token-stats gradient on WebGPU', () => {
  for (const [rows, vocab] of [
    [3, 1000],
    [2, 49152],
  ] as const) {
    it(`matches the closed-form float64 gradient for [${rows}, ${vocab}]`, async () => {
      const seed = 31 + vocab;
      const got = await lab.page.evaluate(
        ([r, v, s]) =>
          (window.sparring!.engine as HarnessEngine)
            .tokenStatsGradCheck(r, v, s)
            .then((g) => ({ ...g, grad: Array.from(g.grad) })),
        [rows, vocab, seed],
      );
      expect(got.backend).toBe('webgpu');
      const c = seededLogits(rows, vocab, seed);
      const ref = tokenStatsGradF64(c.logits, rows, vocab, c.ids, seededUpstream(rows, seed));
      let worst = 0;
      for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs(got.grad[i] - ref[i]));
      expect(worst).toBeLessThan(1e-5); // f32 rounding of log-sum-exp at |x| ~ 30
    });
  }

  it('with reference logits: the same gradient, the reference column sends none back', async () => {
    const [rows, vocab, seed] = [3, 4099, 4242];
    const got = await lab.page.evaluate(
      ([r, v, s]) =>
        (window.sparring!.engine as HarnessEngine)
          .tokenStatsGradCheck(r, v, s, true)
          .then((g) => ({ ...g, grad: Array.from(g.grad) })),
      [rows, vocab, seed],
    );
    const c = seededLogits(rows, vocab, seed);
    const ref = tokenStatsGradF64(c.logits, rows, vocab, c.ids, seededUpstream(rows, seed));
    let worst = 0;
    for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs(got.grad[i] - ref[i]));
    expect(worst).toBeLessThan(1e-5);
  });
});

describe('WGSL sampler on WebGPU', () => {
  const cases: [string, number, number, Omit<SamplingOptions, 'seed' | 'step'>][] = [
    ['greedy', 6, 1000, { temperature: 0, topK: 0, topP: 1 }],
    ['plain T=1', 6, 1003, { temperature: 1, topK: 0, topP: 1 }],
    ['top-k 40, T=0.7', 6, 4099, { temperature: 0.7, topK: 40, topP: 1 }],
    ['top-p 0.9, T=0.7', 6, 4099, { temperature: 0.7, topK: 0, topP: 0.9 }],
    ['top-k 50 + top-p 0.9 on 49152', 3, 49152, { temperature: 0.8, topK: 50, topP: 0.9 }],
    ['top-p 0.95 on 151936', 1, 151936, { temperature: 1.2, topK: 0, topP: 0.95 }],
    ['top-p 0.9, T=2 on 49152', 3, 49152, { temperature: 2, topK: 0, topP: 0.9 }],
    ['top-p 0.6, T=4 on 4099', 4, 4099, { temperature: 4, topK: 0, topP: 0.6 }],
  ];
  // Plain top-p first tries the 256 most likely tokens: the cases must cover rows whose nucleus
  // fits in them and rows where it spills over (the full-row fallback).
  it('covers plain top-p rows inside and outside the 256-token speculation', () => {
    const seen = new Set<boolean>();
    for (const [, rows, vocab, o] of cases) {
      if (o.topK !== 0 || o.topP >= 1 || vocab <= 256) continue;
      const c = seededLogits(rows, vocab, vocab + 5);
      for (let r = 0; r < rows; r++) {
        const row = Array.from(c.logits.subarray(r * vocab, (r + 1) * vocab));
        const m = row.reduce((a, b) => (Number.isFinite(b) && b > a ? b : a), -Infinity);
        const w = row.map((x) => Math.exp((x - m) / o.temperature)).sort((a, b) => b - a);
        const total = w.reduce((a, b) => a + b, 0);
        const top = w.slice(0, 256).reduce((a, b) => a + b, 0);
        seen.add(top >= o.topP * total);
      }
    }
    expect([...seen].sort()).toEqual([false, true]);
  });
  for (const [name, rows, vocab, o] of cases) {
    it(`draws the same ids as the CPU reference: ${name}`, async () => {
      // Flatter logits (scale 2) so the truncations keep many tokens and the draws differ.
      for (const step of [0, 1, 17]) {
        const options = { ...o, seed: 1234567, step };
        const got = await lab.page.evaluate(
          ([r, v, s, opt]) => (window.sparring!.engine as HarnessEngine).sampleCheck(r, v, s, opt),
          [rows, vocab, vocab + 5, options] as const,
        );
        expect(got.backend).toBe('webgpu');
        const c = seededLogits(rows, vocab, vocab + 5);
        expect(got.ids).toEqual(Array.from(sampleReference(c.logits, rows, vocab, options)));
      }
    });
  }

  it('repeats the same ids for the same seed and step, and changes with the step', async () => {
    // A hot temperature: the seeded logits have one confident peak per row that T=1 nearly always picks.
    const o = { temperature: 20, topK: 0, topP: 1, seed: 5 };
    const draw = (step: number) =>
      lab.page.evaluate(([opt]) => (window.sparring!.engine as HarnessEngine).sampleCheck(8, 500, 3, opt), [
        { ...o, step },
      ] as const);
    const a = await draw(0);
    expect((await draw(0)).ids).toEqual(a.ids);
    expect((await draw(1)).ids).not.toEqual(a.ids);
  });
});

describe('GPU health after every kernel above', () => {
  it('reported no uncaptured WebGPU error (a shader that fails to compile would show here)', async () => {
    const status = await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).status());
    expect(status.gpuErrors).toEqual([]);
  });
});

describe('kernels under a small storage-binding limit', () => {
  it('split rows into chunks and still match the references', async () => {
    const [rows, vocab] = [8, 4099];
    // Room for 3 rows per binding: 8 rows go as 3 + 3 + 2.
    await lab.page.evaluate((b) => (window.sparring!.engine as HarnessEngine).setBindingLimit(b), 3 * vocab * 4 + 100);
    try {
      const c = seededLogits(rows, vocab, 77);
      const stats = await lab.page.evaluate(
        ([r, v]) => (window.sparring!.engine as HarnessEngine).tokenStatsCheck(r, v, 77),
        [rows, vocab],
      );
      const ref = tokenStatsF64(c.logits, rows, vocab, c.ids);
      for (let r = 0; r < rows; r++) expect(Math.abs(stats.entropy[r] - ref.entropy[r])).toBeLessThan(1e-5);
      const grad = await lab.page.evaluate(
        ([r, v]) =>
          (window.sparring!.engine as HarnessEngine).tokenStatsGradCheck(r, v, 77).then((g) => Array.from(g.grad)),
        [rows, vocab],
      );
      const gref = tokenStatsGradF64(c.logits, rows, vocab, c.ids, seededUpstream(rows, 77));
      expect(Math.max(...grad.map((g, i) => Math.abs(g - gref[i])))).toBeLessThan(1e-5);
      const o = { temperature: 1.3, topK: 0, topP: 0.9, seed: 3, step: 4 };
      const s = seededLogits(rows, vocab, vocab + 5);
      const ids = await lab.page.evaluate(
        ([r, v, sd, opt]) => (window.sparring!.engine as HarnessEngine).sampleCheck(r, v, sd, opt),
        [rows, vocab, vocab + 5, o] as const,
      );
      expect(ids.ids).toEqual(Array.from(sampleReference(s.logits, rows, vocab, o)));
    } finally {
      await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).setBindingLimit(null));
    }
  });
});

describe('WGSL decode attention on WebGPU', () => {
  // Head dims and fill levels off the 64-wide workgroup; GQA groups 1, 2, 3; SmolLM2-135M's
  // 9 query / 3 kv heads of 64; a capacity far past the fill level.
  const cases: AttentionCaseSpec[] = [
    { batch: 1, heads: 1, kvHeads: 1, capacity: 1, headDim: 4, len: 1, seed: 11 },
    { batch: 3, heads: 4, kvHeads: 2, capacity: 37, headDim: 24, len: 37, seed: 12 },
    { batch: 2, heads: 9, kvHeads: 3, capacity: 300, headDim: 64, len: 129, seed: 13 },
    { batch: 5, heads: 6, kvHeads: 6, capacity: 1030, headDim: 100, len: 1030, seed: 14 },
  ];
  for (const c of cases) {
    it(`matches the float64 loops: B${c.batch} H${c.heads}/${c.kvHeads} C${c.capacity} D${c.headDim} len ${c.len}`, async () => {
      const got = await lab.page.evaluate((spec) => (window.sparring!.engine as HarnessEngine).attentionCheck(spec), c);
      expect(got.backend).toBe('webgpu');
      expect(got.path).toBe('wgsl');
      const ref = decodeAttentionF64(c, attentionCaseData(c));
      let worst = 0;
      for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs(got.out[i] - ref[i]));
      expect(worst).toBeLessThan(1e-5);
    });
  }
});

describe('WGSL RMSNorm and RoPE on WebGPU (forward and gradients)', () => {
  // Hidden sizes off the workgroup (37, SmolLM2's 576, 1000), odd head counts and lengths.
  const cases: NormCaseSpec[] = [
    { rows: 5, hidden: 37, batch: 2, heads: 3, len: 4, headDim: 6, seed: 21 },
    { rows: 9, hidden: 576, batch: 1, heads: 9, len: 13, headDim: 64, seed: 22 },
    { rows: 3, hidden: 1000, batch: 3, heads: 2, len: 1, headDim: 24, seed: 23 },
  ];
  for (const c of cases) {
    it(`match the float64 closed forms: rows ${c.rows} x ${c.hidden}, rope [${c.batch}, ${c.heads}, ${c.len}, ${c.headDim}]`, async () => {
      const got = await lab.page.evaluate((spec) => (window.sparring!.engine as HarnessEngine).fusedNormCheck(spec), c);
      expect(got.backend).toBe('webgpu');
      const d = normCaseData(c);
      const rms = rmsNormF64(c, d);
      const rp = ropeF64(c, d);
      const worst = (a: number[], b: Float64Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);
      expect(worst(got.rms.y, rms.y)).toBeLessThan(1e-5);
      expect(worst(got.rms.dx, rms.dx)).toBeLessThan(1e-5);
      expect(worst(got.rms.dw, rms.dw)).toBeLessThan(1e-4);
      expect(worst(got.rope.y, rp.y)).toBeLessThan(1e-6);
      expect(worst(got.rope.dx, rp.dx)).toBeLessThan(1e-6);
    });
  }
});

describe('WGSL SwiGLU gate and KV-cache write on WebGPU', () => {
  const cases: BlockCaseSpec[] = [
    { n: 1, batch: 1, heads: 1, capacity: 1, headDim: 2, len: 1, start: 0, seed: 31 },
    { n: 1537, batch: 3, heads: 3, capacity: 37, headDim: 64, len: 1, start: 20, seed: 32 },
    { n: 4099, batch: 2, heads: 2, capacity: 50, headDim: 24, len: 7, start: 43, seed: 33 },
  ];
  for (const c of cases) {
    it(`match float64: ${c.n} gates; cache [${c.batch}, ${c.heads}, ${c.capacity}, ${c.headDim}] slots ${c.start}..${c.start + c.len}`, async () => {
      const got = await lab.page.evaluate(
        (spec) => (window.sparring!.engine as HarnessEngine).fusedBlockCheck(spec),
        c,
      );
      expect(got.backend).toBe('webgpu');
      const d = blockCaseData(c);
      const sw = swigluF64(d);
      const worst = (a: number[], b: Float64Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);
      expect(worst(got.y, sw.y)).toBeLessThan(1e-5);
      expect(worst(got.dg, sw.dg)).toBeLessThan(1e-5);
      expect(worst(got.du, sw.du)).toBeLessThan(1e-5);
      expect(worst(got.kv, kvWriteF64(c, d))).toBe(0);
    });
  }
});
