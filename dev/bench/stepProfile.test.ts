import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { folderSource } from '../../src/cli/fs-source';
import { disposeLlama } from '../../src/model/llama';
import { loadModel } from '../../src/model/load';
import { profileGrpoStep } from './stepProfile';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');

describe('profileGrpoStep', () => {
  it('counts the kernels the step runs: one more sampled token adds the decode step matmuls the architecture has, and the step leaks no tensor', async () => {
    const model = await loadModel(folderSource(FIXTURE));
    try {
      const c = { prompts: 2, groupSize: 2, promptLen: 4, rank: 2 };
      const a = await profileGrpoStep(model, { ...c, newTokens: 2 });
      const b = await profileGrpoStep(model, { ...c, newTokens: 3 });
      expect(a.gpu).toBeNull(); // the CPU backend: no WebGPU work to count
      const count = (p: typeof a, name: string) => p.kernels.find((k) => k.name === name)?.count ?? 0;
      // One decode step (the learn step's kernel count does not depend on the response length), by
      // hand from the config: per layer 7 projections, each with LoRA's x A and (x A) B, plus the
      // attention's Q K^T and P V; then the LM head. Fixture: 2 x (7 + 14 + 2) + 1 = 47.
      const L = model.config.numLayers;
      expect(count(b, 'BatchMatMul') - count(a, 'BatchMatMul')).toBe(L * (7 + 2 * 7 + 2) + 1);
      // One attention softmax per layer per decode step.
      expect(count(b, 'Softmax') - count(a, 'Softmax')).toBe(L);
      // Nothing the step makes outlives it: the one new tensor is the profile's own result scalar.
      expect(a.newTensors).toBe(1);
      expect(b.newTensors).toBe(1);
      expect(a.phases.learn_ms).toBeGreaterThan(0);
      expect(a.phases.rollout_ms).toBeGreaterThan(0);
    } finally {
      disposeLlama(model);
    }
  });
});
