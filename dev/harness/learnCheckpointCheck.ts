// The checkpoint check of the Chromium tests of the planned learning step (e2e/learnChromium.e2e.ts):
// a recipe checkpoint at step k, restored into a fresh run, reproduces step k + 1 exactly on the
// planned path (planned rollouts, learning step and AdamW).
import type { LlamaModel } from '../../src/model/llama';
import { attachLora } from '../../src/model/lora';
import { rlStep, type RlLoopConfig } from '../../src/rl/loop';
import { readAll } from './learnGradCheck';
import { AdamW } from '../../src/rl/optim';
import { plannedMicroBatches } from '../../src/model/planned/learnStep';
import type { LearnMetrics } from '../../src/rl/trainer';
import { engineOptions, setEngineOptions } from '../../src/engine/index';
import { loraRunState, restoreLoraRun, type LoraRunParts } from '../../src/recipes/kit/state';

export interface CheckpointCheckResult {
  /** Adapters after steps 0, 1, 2 straight through. */
  straight: number[][];
  /** Adapters after steps 0, 1 in one run, its checkpoint restored into a fresh run, then step 2 there. */
  resumed: number[][];
  /** The restored run's adapters before its step (they must be the saved ones, not its own draw). */
  restored: number[][];
  savedStep: number;
  plannedMicroBatches: number;
  metrics: LearnMetrics[];
}

/**
 * Checkpoint at step k reproduces step k + 1 on the planned path (planned rollouts, learning step
 * and AdamW): rlStep x 3 in one run; rlStep x 2 in another, its recipe checkpoint (loraRunState,
 * through a structured clone as IndexedDB stores it) restored into a fresh run (restoreLoraRun),
 * which takes step 2.
 */
export async function learnCheckpointCheck(model: LlamaModel): Promise<CheckpointCheckResult> {
  const PROMPTS = [
    [1, 5, 9, 13],
    [1, 40, 2, 7, 30],
  ];
  const config: RlLoopConfig = {
    groupSize: 3,
    maxNewTokens: 4,
    temperature: 1,
    seed: 17,
    advantage: 'grpo',
    klInReward: { estimator: 'k1', coef: 0.05 },
    lr: (k) => 5e-3 * Math.min(1, (k + 1) / 2),
    trainer: { policyLoss: 'ppo', entropyCoeff: 0.01, kl: { estimator: 'k3', coef: 0.02 }, maxGradNorm: 0.5 },
  };
  const fresh = (seed: number): LoraRunParts => ({
    recipe: 'learn-check',
    seed: 17,
    stepsDone: 0,
    config: { rank: 4 },
    lora: attachLora(model, { r: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed }),
    optimizer: new AdamW({ lr: 5e-3, beta2: 0.95, weightDecay: 0.1 }),
  });
  const reward = ({ response }: { response: number[] }) => response.filter((t) => t % 3 === 0).length / response.length;
  const metrics: LearnMetrics[] = [];
  const step = async (run: LoraRunParts) => {
    const rep = await rlStep(
      { learner: { model, lora: run.lora, optimizer: run.optimizer }, rewardFn: reward },
      PROMPTS,
      run.stepsDone,
      config,
    );
    run.stepsDone++;
    metrics.push(rep.metrics);
  };
  const weights = async (run: LoraRunParts) => (await readAll(run.lora.variables())).map((v) => v.values);
  const dispose = (run: LoraRunParts) => {
    run.optimizer.dispose();
    run.lora.dispose();
  };
  const [l0, o0] = [engineOptions().learnPath, engineOptions().optimizerPath];
  setEngineOptions({ learnPath: 'planned', optimizerPath: 'planned' });
  const n0 = plannedMicroBatches();
  try {
    const a = fresh(3);
    let straight: number[][];
    try {
      for (let s = 0; s < 3; s++) await step(a);
      straight = await weights(a);
    } finally {
      dispose(a);
    }
    const b = fresh(3);
    let saved;
    try {
      for (let s = 0; s < 2; s++) await step(b);
      saved = structuredClone(await loraRunState(b));
    } finally {
      dispose(b);
    }
    // A different A draw: only the checkpoint can make this run equal to the straight one.
    const c = fresh(99);
    try {
      restoreLoraRun(c, saved);
      c.stepsDone = saved.step;
      const restored = await weights(c);
      await step(c);
      return {
        straight,
        resumed: await weights(c),
        restored,
        savedStep: saved.step,
        plannedMicroBatches: plannedMicroBatches() - n0,
        metrics,
      };
    } finally {
      dispose(c);
    }
  } finally {
    setEngineOptions({ learnPath: l0, optimizerPath: o0 });
  }
}
