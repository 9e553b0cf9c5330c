// LoRA dropout on the planned learning step in Chromium (SwiftShader) through the worker: one
// learnStep with dropout 0.1 on the planned path and on tfjs from the same seeded adapters (so the
// same masks: each adapter's seeded stream and call counter), the update linear in the gradient
// (dev/bench/learnBench.ts learnCheck): equal adapter changes mean equal gradients with the same masks.
import { describe, expect, inject, it } from 'vitest';
import { sharedHarnessPage } from './browser';
import type { HarnessEngine } from '../dev/harness/harnessApi';

// WebGPU is forced: on headless Chromium's software adapter (SwiftShader) the lab's auto choice is wasm.
const lab = sharedHarnessPage('?backend=webgpu');
const relErr = (got: number, want: number) => Math.abs(got - want) / Math.max(Math.abs(want), 1e-12);

describe('LoRA dropout on the planned learning step in Chromium on WebGPU', () => {
  it('f32, dropout 0.1: the planned step ran and its loss, grad norm and adapter update match tfjs within 1e-4; without dropout they differ', async () => {
    const name = 'learn-dropout';
    await lab.page.evaluate(
      ([n, u]) => (window.sparring!.engine as HarnessEngine).loadModel(n, { kind: 'url', baseUrl: u }),
      [name, `${inject('fixturesURL')}tiny-llama-f32/`] as const,
    );
    const run = (path: 'planned' | 'tfjs', dropout: number) =>
      lab.page.evaluate(([n, p, c]) => (window.sparring!.engine as HarnessEngine).learnCheck(n, p, c), [
        name,
        path,
        { prompts: 2, groupSize: 2, promptLen: 6, newTokens: 4, rank: 4, dropout },
      ] as const);
    const ref = await run('tfjs', 0.1);
    const got = await run('planned', 0.1);
    expect(ref.plannedMicroBatches).toBe(0);
    expect(got.plannedMicroBatches).toBeGreaterThan(0);
    expect(got.metrics['grad/skipped']).toBe(0);
    expect(relErr(got.metrics['loss/total'], ref.metrics['loss/total'])).toBeLessThan(1e-4);
    expect(relErr(got.metrics['grad/norm'], ref.metrics['grad/norm'])).toBeLessThan(1e-4);
    const scale = Math.max(...ref.deltas.map(Math.abs));
    const worst = (a: number[], b: number[]) => a.reduce((m, d, i) => Math.max(m, Math.abs(d - b[i])), 0) / scale;
    expect(scale).toBeGreaterThan(0);
    expect(worst(got.deltas, ref.deltas)).toBeLessThan(1e-4);
    // The masks matter: the same step without dropout moves the adapters otherwise.
    const plain = await run('planned', 0);
    expect(worst(plain.deltas, ref.deltas)).toBeGreaterThan(1e-2);
    expect((await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).status())).gpuErrors).toEqual([]);
    await lab.page.evaluate((n) => (window.sparring!.engine as HarnessEngine).unloadModel(n), name);
  });
});
