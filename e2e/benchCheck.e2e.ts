// The GPU benchmark's check before timing (dev/bench/benchCheck.ts) on the lane's CPU driver: on a
// correct planned path every line passes (prompts over 256 and 1024 tokens included), and a planned
// learning step that falls back to tfjs is a failed line, not a pass.
import { describe, expect, it } from 'vitest';
import { CHECK_SMALL_CONFIG, checkModel, learnLine } from '../dev/bench/benchCheck';
import { syntheticModel } from '../dev/bench/synthetic';
import { resetEngineOptions, setEngineOptions } from '../src/engine/options';
import { disposeLlama } from '../src/model/llama';
import { releaseLearnPlans } from '../src/model/planned/learn';
import { int4Quantizer } from '../src/model/quant';
import { laneKernels } from './dawnLane';
import { useDawn } from './dawnSetup';

useDawn(() => resetEngineOptions());

describe(`the benchmark's planned-vs-tfjs check (${laneKernels} kernels)`, () => {
  it('passes every line on the small int4 model: logits after 16 and 300 prompt tokens (and 1030 with split-K on GPU kernels), seeded draws, one learning step', async () => {
    const model = await syntheticModel(CHECK_SMALL_CONFIG, 1, { quantize: int4Quantizer(32) });
    try {
      const lines = await checkModel(model, 'small int4', true);
      expect(lines.map((l) => l.what)).toEqual([
        expect.stringMatching(/logits after a 16-token prompt \(whole attention/),
        expect.stringMatching(/logits after a 300-token prompt \(whole attention, 303 slots\)/),
        // the GPU layout takes split-K attention past 1024 slots; the software one keeps the whole-cache kernel
        ...(laneKernels === 'gpu'
          ? [expect.stringMatching(/logits after a 1030-token prompt \(splitk attention/)]
          : []),
        expect.stringMatching(/seeded draws/),
        expect.stringMatching(/learning step/),
      ]);
      expect(lines.filter((l) => !l.ok)).toEqual([]);
      // The learn line reports the planned micro-batch it checked, not a pass by default.
      expect(lines.at(-1)!.detail).toMatch(/1 micro-batch\(es\) planned/);
    } finally {
      disposeLlama(model);
    }
  });

  it('fails the learn line when the planned learning step falls back to tfjs', async () => {
    const model = await syntheticModel(CHECK_SMALL_CONFIG);
    try {
      // A plan budget of 1 KiB: no micro-batch fits, so learnStep learns on tfjs.
      setEngineOptions({ learnMemoryBudget: 1024 });
      const learn = await learnLine(model, 'small f32');
      expect(learn.ok).toBe(false);
      expect(learn.detail).toMatch(/fell back to tfjs/);
    } finally {
      setEngineOptions({ learnMemoryBudget: 2 ** 31 });
      releaseLearnPlans(model);
      disposeLlama(model);
    }
  });
});
