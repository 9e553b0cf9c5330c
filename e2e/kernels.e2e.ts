import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenStatsF64, tokenStatsGradF64 } from '../src/engine/ops/tokenStatsReference';
import { seededLogits, seededUpstream } from '../src/engine/testing/seededLogits';
import { launch, openLab } from './browser';

let browser: Browser;
let page: Page;
beforeAll(async () => {
  browser = await launch();
  ({ page } = await openLab(browser));
});
afterAll(async () => {
  await browser?.close();
});

describe('WGSL token-stats kernel on WebGPU', () => {
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
      const got = await page.evaluate(([r, v, s]) => window.sparring!.engine.tokenStatsCheck(r, v, s), [rows, vocab, seed]);
      expect(got.backend).toBe('webgpu');
      expect(got.path).toBe('wgsl');
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

describe('WGSL token-stats gradient on WebGPU', () => {
  for (const [rows, vocab] of [[3, 1000], [2, 49152]] as const) {
    it(`matches the closed-form float64 gradient for [${rows}, ${vocab}]`, async () => {
      const seed = 31 + vocab;
      const got = await page.evaluate(([r, v, s]) => window.sparring!.engine.tokenStatsGradCheck(r, v, s).then((g) => ({ ...g, grad: Array.from(g.grad) })), [rows, vocab, seed]);
      expect(got.backend).toBe('webgpu');
      const c = seededLogits(rows, vocab, seed);
      const ref = tokenStatsGradF64(c.logits, rows, vocab, c.ids, seededUpstream(rows, seed));
      let worst = 0;
      for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs(got.grad[i] - ref[i]));
      expect(worst).toBeLessThan(1e-5); // f32 rounding of log-sum-exp at |x| ~ 30
    });
  }
});
