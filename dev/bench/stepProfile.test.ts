import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { folderSource } from '../../src/cli/fs-source';
import { disposeLlama } from '../../src/model/llama';
import { loadModel } from '../../src/model/load';
import { profileGrpoStep } from './stepProfile';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');

describe('profileGrpoStep', () => {
  it('reports the step phases that add up to its total, and the tfjs kernels the learn step ran (matmuls among them)', async () => {
    const model = await loadModel(folderSource(FIXTURE));
    try {
      const p = await profileGrpoStep(model, { prompts: 2, groupSize: 2, promptLen: 4, newTokens: 3, rank: 2 });
      expect(p.gpu).toBeNull(); // the CPU backend: no WebGPU work to count
      const { rollout_ms, score_ms, learn_ms, total_ms } = p.phases;
      expect(rollout_ms + score_ms + learn_ms).toBeCloseTo(total_ms, 6);
      expect(learn_ms).toBeGreaterThan(0);
      expect(p.kernels.find((k) => k.name === 'BatchMatMul')?.count).toBeGreaterThan(0);
      expect(p.kernels.reduce((a, k) => a + k.count, 0)).toBe(p.tfjsKernels);
    } finally {
      disposeLlama(model);
    }
  });
});
