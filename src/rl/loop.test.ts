import * as tf from '@tensorflow/tfjs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { folderSource } from '../cli/fs-source';
import { disposeLlama, forward, type LlamaModel } from '../model/llama';
import { loadModel } from '../model/load';
import { attachLora, type LoraSet } from '../model/lora';
import { rlStep, type RlLoopConfig } from './loop';
import { adaptiveKlController } from './kl';
import { AdamW } from './optim';
import { ValueHead } from './policy';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');

// Verifiable reward: 1 when the first sampled token is TARGET. Prompts picked (by a search over
// random prompts) so that TARGET's initial probability is low but not tiny on each of them.
const TARGET = 23;
const PROMPTS = [
  [1, 14, 5, 29],
  [1, 22, 58, 55],
  [1, 22, 29, 56],
  [1, 35, 37, 42],
];
const reward = ({ response }: { response: number[] }) => (response[0] === TARGET ? 1 : 0);

let model: LlamaModel;
beforeAll(async () => {
  model = await loadModel(folderSource(FIXTURE));
});
afterAll(() => disposeLlama(model));

/** Exact probability of TARGET as the first token, per prompt, under the current adapters. */
function targetProbs(): number[] {
  return tf.tidy(() => {
    const logits = forward(model, PROMPTS, { lastOnly: true }).reshape([PROMPTS.length, 64]);
    const p = tf.softmax(logits).arraySync() as number[][];
    return p.map((row) => row[TARGET]);
  });
}

interface Setup {
  name: string;
  config: RlLoopConfig;
  lr: number;
  rank: number;
  valueHead?: boolean;
}

const BASE = { groupSize: 8, maxNewTokens: 2, temperature: 1, seed: 1234 } as const;
// lr 1e-2, r 4 on every projection, G 8 x 4 prompts: a sweep over loop seeds 1-5 solved every
// algorithm in 3-7 steps (lr 5e-3: 5-9 steps; 2e-2: 2-5 steps), so MAX_STEPS leaves a wide margin.
const SETUPS: Setup[] = [
  {
    name: 'GRPO',
    lr: 1e-2,
    rank: 4,
    config: { ...BASE, advantage: 'grpo', trainer: { policyLoss: 'ppo', kl: { estimator: 'k3', coef: 0.001 } } },
  },
  { name: 'RLOO', lr: 1e-2, rank: 4, config: { ...BASE, advantage: 'rloo', trainer: { policyLoss: 'ppo' } } },
  {
    name: 'PPO+GAE',
    lr: 1e-2,
    rank: 4,
    valueHead: true,
    config: { ...BASE, advantage: 'gae', trainer: { policyLoss: 'ppo', vfCoef: 0.5 } },
  },
  { name: 'ReMax', lr: 1e-2, rank: 4, config: { ...BASE, advantage: 'remax', trainer: { policyLoss: 'ppo' } } },
];
// The README's claim, tested as stated: mean reward from 0.03 to above 0.9 after 5 updates, i.e.
// on the 6th rollout at the latest (step index 5; all four reach it there on the wasm backend).
const MAX_STEPS = 6;

const newLora = (rank: number): LoraSet =>
  attachLora(model, { r: rank, alpha: 2 * rank, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 7 });

async function train(setup: Setup, maxSteps: number) {
  const lora = newLora(setup.rank);
  const head = setup.valueHead ? new ValueHead(model.config.hiddenSize) : undefined;
  const optimizer = new AdamW({ lr: setup.lr, weightDecay: 0 });
  const curve: number[] = [];
  const t0 = performance.now();
  let solvedAt = -1;
  try {
    for (let step = 0; step < maxSteps; step++) {
      const rep = await rlStep(
        { learner: { model, lora, optimizer, valueHead: head }, rewardFn: reward },
        PROMPTS,
        step,
        setup.config,
      );
      curve.push(rep.metrics['reward/mean']);
      if (rep.metrics['reward/mean'] > 0.9) {
        solvedAt = step;
        break;
      }
    }
    return { curve, solvedAt, ms: performance.now() - t0, finalProbs: targetProbs() };
  } finally {
    optimizer.dispose();
    head?.dispose();
    lora.dispose();
  }
}

describe('rlStep', () => {
  const CONFIG: RlLoopConfig = {
    ...BASE,
    groupSize: 4,
    maxNewTokens: 3,
    stopTokens: [2],
    advantage: 'grpo',
    trainer: { kl: { estimator: 'k3', coef: 0.01 } },
  };

  it('returns a StepReport: metrics by area/name, samples from different groups, timings', async () => {
    const lora = newLora(2);
    const optimizer = new AdamW({ lr: 1e-3 });
    const rep = await rlStep(
      { learner: { model, lora, optimizer }, rewardFn: reward, runId: 'r1', recipe: 'test' },
      PROMPTS,
      0,
      CONFIG,
    );
    for (const k of [
      'reward/mean',
      'reward/std',
      'loss/policy',
      'loss/kl',
      'kl/mean',
      'entropy/mean',
      'grad/norm',
      'ppo/clipfrac',
      'response/length_mean',
      'perf/step_ms',
      'perf/tokens_per_s',
    ]) {
      expect(Number.isFinite(rep.metrics[k]), k).toBe(true);
    }
    expect(rep.runId).toBe('r1');
    expect(rep.recipe).toBe('test');
    expect(rep.step).toBe(0);
    expect(rep.samples.map((s) => s.group)).toEqual([0, 1]);
    for (const s of rep.samples) {
      const tr = s.messages[1].tokens!;
      expect(tr.ids.length).toBe(tr.logp.length);
      expect(tr.ids.length).toBe(tr.entropy.length);
      expect(s.reward).toBe(tr.ids[0] === TARGET ? 1 : 0);
    }
    expect(rep.timings.total_ms).toBeGreaterThanOrEqual(rep.timings.rollout_ms);
    expect(JSON.parse(JSON.stringify(rep))).toEqual(rep); // plain JSON-safe data
    optimizer.dispose();
    lora.dispose();
  });

  it('same seed, same run: two fresh runs give identical metrics; no tensor leaks across steps', async () => {
    const run = async () => {
      const lora = newLora(2);
      const optimizer = new AdamW({ lr: 1e-2 });
      const out: number[][] = [];
      let n0 = 0;
      for (let step = 0; step < 3; step++) {
        const rep = await rlStep({ learner: { model, lora, optimizer }, rewardFn: reward }, PROMPTS, step, CONFIG);
        out.push([
          rep.metrics['reward/mean'],
          rep.metrics['loss/policy'],
          rep.metrics['kl/mean'],
          rep.metrics['grad/norm'],
        ]);
        if (step === 0) n0 = tf.memory().numTensors;
      }
      expect(tf.memory().numTensors).toBe(n0);
      optimizer.dispose();
      lora.dispose();
      return out;
    };
    expect(await run()).toEqual(await run());
  });

  it('gae needs a value head; KL in the reward reports kl/reward_kl; PPO epochs move the ratio', async () => {
    const lora = newLora(2);
    const optimizer = new AdamW({ lr: 1e-3 });
    const ctx = { learner: { model, lora, optimizer }, rewardFn: reward };
    await expect(rlStep(ctx, PROMPTS, 0, { ...CONFIG, advantage: 'gae' })).rejects.toThrow(/value head/);
    const rep = await rlStep(ctx, PROMPTS, 0, {
      ...CONFIG,
      advantage: 'reinforce_plus_plus',
      klInReward: { estimator: 'k1', coef: 0.1 },
    });
    expect(Number.isFinite(rep.metrics['kl/reward_kl'])).toBe(true);
    // PPO epochs: later updates on the same batch see ratio != 1 (old log-probs stay the rollout's).
    const rep2 = await rlStep(ctx, PROMPTS, 1, { ...CONFIG, updatesPerBatch: 3, lr: 5e-2 });
    expect(Math.abs(rep2.metrics['ppo/ratio_mean'] - 1)).toBeGreaterThan(1e-3);
    expect(rep2.metrics['ppo/approx_kl']).not.toBe(0);
    optimizer.dispose();
    lora.dispose();
  });
});

describe('rlStep extras', () => {
  it('remax scores one greedy rollout per prompt as the baseline', async () => {
    const lora = newLora(2);
    const optimizer = new AdamW({ lr: 1e-3 });
    const greedyCalls: { row: number; first: number }[] = [];
    const rewardFn = (s: { response: number[]; row: number }) => {
      if (s.row < 0) greedyCalls.push({ row: s.row, first: s.response[0] });
      return reward(s);
    };
    await rlStep({ learner: { model, lora, optimizer }, rewardFn }, PROMPTS, 0, { ...BASE, advantage: 'remax' });
    // One call per prompt, rows -1..-4, each response starting with the prompt's argmax token.
    expect(greedyCalls.map((c) => c.row)).toEqual([-1, -2, -3, -4]);
    const argmax = tf.tidy(
      () => forward(model, PROMPTS, { lastOnly: true }).reshape([4, 64]).argMax(1).arraySync() as number[],
    );
    expect(greedyCalls.map((c) => c.first)).toEqual(argmax);
    optimizer.dispose();
    lora.dispose();
  });

  it('an adaptive KL controller sets the in-reward coefficient and moves it toward its target', async () => {
    const lora = newLora(2);
    const optimizer = new AdamW({ lr: 5e-2 });
    const ctx = {
      learner: { model, lora, optimizer },
      rewardFn: reward,
      klController: adaptiveKlController(0.1, 1e-9, 10000),
    };
    const config: RlLoopConfig = { ...BASE, advantage: 'grpo', klInReward: { estimator: 'abs', coef: 123 } };
    await rlStep(ctx, PROMPTS, 0, config); // adapters move away from the reference
    const before = ctx.klController.value;
    const rep = await rlStep(ctx, PROMPTS, 1, config);
    expect(rep.metrics['kl/coef']).toBe(before); // the controller's value, not klInReward.coef
    expect(rep.metrics['kl/reward_kl']).toBeGreaterThan(1.2e-9);
    // KL far above target: the error clips at +0.2, so beta grows by 1 + 0.2 * (32 rows) / 10000.
    expect(ctx.klController.value).toBeCloseTo(before * (1 + (0.2 * 32) / 10000), 12);
    optimizer.dispose();
    lora.dispose();
  });
});

describe('end-to-end learning on the tiny fixture (issue 4)', () => {
  it('the target token starts near chance', () => {
    const p = targetProbs();
    console.log(
      `initial P(first token = ${TARGET}) per prompt: ${p.map((x) => x.toFixed(3)).join(', ')}; mean ${(p.reduce((a, b) => a + b) / p.length).toFixed(3)}`,
    );
    for (const x of p) expect(x).toBeGreaterThan(0.02);
    for (const x of p) expect(x).toBeLessThan(0.15);
  });

  for (const setup of SETUPS) {
    it(`${setup.name} raises the mean reward above 0.9`, async () => {
      const r = await train(setup, MAX_STEPS);
      console.log(
        `${setup.name}: solved at step ${r.solvedAt} in ${(r.ms / 1000).toFixed(1)} s; reward/mean ${r.curve.map((x) => x.toFixed(2)).join(' ')}; final P(target) ${r.finalProbs.map((x) => x.toFixed(3)).join(', ')}`,
      );
      expect(r.curve[0]).toBeLessThan(0.3);
      expect(r.solvedAt).toBeGreaterThan(0); // reached within MAX_STEPS
      expect(r.ms).toBeLessThan(60_000);
      expect(Math.min(...r.finalProbs)).toBeGreaterThan(0.7);
    });
  }
});
