// The planned learning step in Chromium (SwiftShader) through the worker: one learnStep on the same
// fixed, left-padded batch from the same seeded adapters on the planned path and on tfjs (the
// reference), on the tiny fixture in f32 and int4. The update is made linear in the gradient
// (src/rl/learnBench.ts learnCheck), so equal adapter changes mean equal gradients.
import { describe, expect, inject, it } from 'vitest';
import { sharedLabPage } from './browser';

const lab = sharedLabPage();
const CASE = { prompts: 2, groupSize: 2, promptLen: 6, newTokens: 4, rank: 4 };

const relErr = (got: number, want: number) => Math.abs(got - want) / Math.max(Math.abs(want), 1e-12);

describe('the planned learning step in Chromium on WebGPU', () => {
  for (const [label, quantize] of [['f32', undefined], ['int4', { bits: 4 as const, groupSize: 32 }]] as const) {
    it(`${label}: the planned step's loss, grad norm and adapter update match tfjs within 1e-4`, async () => {
      const name = `learn-${label}`;
      const baseUrl = `${inject('fixturesURL')}tiny-llama-f32/`;
      await lab.page.evaluate(([n, u, q]) => window.sparring!.engine.loadModel(n, { kind: 'url', baseUrl: u }, q ? { quantize: q } : {}), [name, baseUrl, quantize] as const);
      const run = (path: 'planned' | 'tfjs') => lab.page.evaluate(([n, p, c]) => window.sparring!.engine.learnCheck(n, p, c), [name, path, CASE] as const);
      const ref = await run('tfjs');
      const got = await run('planned');
      // The planned pass really ran (no silent fallback), with fewer dispatches; the reference did not.
      expect(ref.plannedMicroBatches).toBe(0);
      expect(got.plannedMicroBatches).toBeGreaterThan(0);
      expect(got.dispatches).toBeLessThan(ref.dispatches);
      expect(got.metrics['grad/skipped']).toBe(0);
      expect(relErr(got.metrics['loss/total'], ref.metrics['loss/total'])).toBeLessThan(1e-4);
      expect(relErr(got.metrics['grad/norm'], ref.metrics['grad/norm'])).toBeLessThan(1e-4);
      expect(got.deltas.length).toBe(ref.deltas.length);
      const scale = Math.max(...ref.deltas.map(Math.abs));
      expect(scale).toBeGreaterThan(0);
      let worst = 0;
      got.deltas.forEach((d, i) => (worst = Math.max(worst, Math.abs(d - ref.deltas[i]))));
      expect(worst / scale).toBeLessThan(1e-4);
      expect((await lab.page.evaluate(() => window.sparring!.engine.status())).gpuErrors).toEqual([]);
      await lab.page.evaluate((n) => window.sparring!.engine.unloadModel(n), name);
    });
  }
});
