// An audit that every recipe's learning step takes the planned WebGPU path (issue 21: "every
// recipe's learning step runs on the planned path on WebGPU"), Node + Dawn on SwiftShader: each of
// the nine recipes runs on the tiny fixture with a tiny config, and every model it trains (each
// model a LoRA is attached to; both players where a recipe trains two) learned at least one
// micro-batch on the planned path, counted per model. LoRA dropout 0.05 (PEFT's usual value) is
// set everywhere: it once sent every step to tfjs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolve } from 'node:path';
import { startDawn } from '../src/cli/node/dawn';
import { nodeRecipeEnv } from '../src/cli/recipe-env';
import { webgpuDevice } from '../src/engine/kernels/wgslProgram';
import { PROJ_NAMES, type LlamaModel } from '../src/model/llama';
import { createRun, recipeNames } from '../src/recipes/registry';
import { letterJudge, loadWithCharCodec } from '../src/recipes/testing';
import { plannedMicroBatchesOf, plannedLearnBlocker } from '../src/rl/plannedLearn';
import { LoraAdapter, type LoraSet } from '../src/model/lora';

const gpuErrors: string[] = [];
beforeAll(async () => {
  await startDawn({ swiftshader: true });
  webgpuDevice().addEventListener('uncapturederror', (e) => gpuErrors.push((e as GPUUncapturedErrorEvent).error.message));
});
afterAll(() => expect(gpuErrors).toEqual([]));

const M = 'tiny-llama-f32';
const loaded: LlamaModel[] = [];
const env = nodeRecipeEnv({
  modelsDir: resolve('..', 'shared', 'fixtures'),
  load: async (folder, ref, opts) => {
    const m = await loadWithCharCodec(folder, ref, opts);
    loaded.push(m.model);
    return m;
  },
  judges: { letters: letterJudge },
});

const lora = { loraDropout: 0.05 };
/** Per recipe: a tiny config and the steps that train every model it trains (arena: one per side). */
const RECIPES: Record<string, { config: Record<string, unknown>; steps: number }> = {
  redteam: { config: { defender: M, judge: 'letters', prompts: 1, groupSize: 2, maxNewTokens: 3, promptPool: 4, samples: 0 }, steps: 1 },
  defend: { config: { attacker: M, defender: M, judge: 'letters', goals: 1, benignPrompts: 0, groupSize: 2, attackerMaxTokens: 3, maxNewTokens: 3, goalPool: 4, samples: 0 }, steps: 1 },
  attack: { config: { attacker: M, defender: M, judge: 'letters', goals: 1, groupSize: 2, attackerMaxTokens: 3, defenderMaxTokens: 3, samples: 0 }, steps: 1 },
  arena: { config: { attacker: M, defender: M, judge: 'letters', goals: 1, groupSize: 2, benignPrompts: 0, attackerMaxTokens: 3, defenderMaxTokens: 3, goalPool: 4, samples: 0, phaseSteps: 1 }, steps: 2 },
  multiturn: { config: { defender: M, judge: 'letters', episodes: 1, benignEpisodes: 0, groupSize: 2, maxNewTokens: 3, goalPool: 4, samples: 0 }, steps: 1 },
  tokenbuncher: { config: { defender: M, judge: 'letters', prompts: 1, benignPrompts: 0, groupSize: 2, maxNewTokens: 3, promptPool: 4, samples: 0 }, steps: 1 },
  minmax: { config: { policy: M, monitor: M, rm: 'letters', items: 1, groupSize: 2, policyMaxTokens: 3, monitorMaxTokens: 3, itemPool: 4, samples: 0, monitorStepsPerPolicy: 1 }, steps: 2 },
  rlhf: { config: { policy: M, monitor: M, rm: 'letters', judge: 'none', items: 1, groupSize: 2, policyMaxTokens: 3, itemPool: 4, samples: 0 }, steps: 1 },
  'attacker-sft': { config: { attacker: M, batchSize: 2, sampleEvery: 0 }, steps: 1 },
};

/** Recipes that train two models (both players). */
const TRAINED: Record<string, number> = { arena: 2, minmax: 2 };

/** The LoRA set attached to a model (a model it trains), or null. */
function loraOf(m: LlamaModel): LoraSet | null {
  for (const l of m.layers) for (const p of PROJ_NAMES) if (l[p].adapter instanceof LoraAdapter) return (l[p].adapter as LoraAdapter).set;
  return null;
}

describe('every recipe learns on the planned path on WebGPU (Dawn, SwiftShader)', () => {
  it('the audit covers the nine built-in recipes', () => {
    expect(Object.keys(RECIPES).sort()).toEqual([...recipeNames()].sort());
  });

  const cases = [
    ...Object.entries(RECIPES).map(([name, c]) => ({ label: name, name, ...c })),
    // A PPO critic (value head on the plan's final hidden rows, its own AdamW).
    { label: 'defend with a gae critic', name: 'defend', config: { ...RECIPES.defend.config, advantage: 'gae', criticLr: 1e-2 }, steps: 1 },
  ];
  for (const { label, name, config, steps } of cases) {
    it(`${label}: every trained model's learning step took the planned path`, async () => {
      loaded.length = 0;
      const { run } = await createRun(env, name, { ...config, ...lora }, 1);
      try {
        for (let s = 0; s < steps; s++) await run.step();
        const trained = loaded.flatMap((m) => {
          const set = loraOf(m);
          return set ? [{ planned: plannedMicroBatchesOf(m), blocker: plannedLearnBlocker(m, set, false) }] : [];
        });
        expect(trained.length).toBe(TRAINED[name] ?? 1);
        for (const x of trained) {
          expect(x.blocker).toBeNull();
          expect(x.planned).toBeGreaterThan(0);
        }
      } finally {
        run.dispose();
      }
    });
  }
});
