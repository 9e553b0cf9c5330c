// kit/groupStep's sharedRolloutStep, the step minmax and rlhf run on: its hooks are called in the
// game's order (rollout, then dualAscent on the whole rollout, then rewards), the KL in the reward
// is subtracted by the kit with the controller's value, the update keeps the first `target`
// groups whose reward varies (filterGroups) and learns at the timescale's learning rate, and the
// controller steps on the kept rows' KL.
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { folderSource } from '../../cli/fs-source';
import { hash3 } from '../../model/random';
import { AdamW } from '../../rl/optim';
import { loadWithCharCodec } from '../../../dev/test/recipeTesting';
import { KlCtrl } from './common';
import { attachConfiguredLora } from './commonFields';
import { sharedRolloutStep, type SharedRows } from './groupStep';
import { modelWrittenPrompts } from './promptBudget';
import { klAndEntropy, sampleReplies } from './rollout';
import { PhaseTimer } from './run';

const base = {
  advantage: 'grpo' as const,
  normAdvByStd: true,
  policyLoss: 'ppo' as const,
  clipRatio: 0.2,
  maxGradNorm: 1,
  filterGroups: true,
  maxNumGenBatches: 2,
  filterGroupsMetric: 'seq_reward',
  groupSize: 3,
  samples: 0,
};

describe('kit/sharedRolloutStep: the game hooks of a shared rollout', () => {
  it('calls rollout, dualAscent, rewards in order; subtracts beta x KL; keeps the varying groups; steps the controller', async () => {
    const m = await loadWithCharCodec(folderSource(resolve('dev/fixtures/tiny-llama-f32')), 'tiny');
    const lora = attachConfiguredLora(
      m.model,
      { loraRank: 2, loraAlpha: 4, loraTargets: 'all', loraDropout: 0 },
      hash3(1, 0x10a, 0),
    );
    const optimizer = new AdamW({ lr: 1e-2 });
    const klCtrl = new KlCtrl({ klBeta: 0.5, klController: 'adaptive', klTarget: 1, klHorizon: 10 });
    const calls: string[] = [];
    let lambda = 0;
    try {
      const roll = await sampleReplies(
        m,
        ['Say a.', 'Say b.', 'Say c.'],
        3,
        { maxNewTokens: 4, temperature: 1, topP: 1 },
        7,
        modelWrittenPrompts,
      );
      const { refLogp, kl: k1 } = await klAndEntropy(m, lora, roll, 1);
      // A fresh adapter's KL is 0: spread it so the kit's beta x KL term shows in every reward.
      const kl = k1.map((x, i) => x + 0.01 * i);
      const rows: SharedRows = {
        gen: { rows: roll.rows, gen: roll.gen, texts: roll.answers },
        refLogp,
        kl,
        group: roll.rowGroup,
      };
      // Group 0 alike (the filter drops it), groups 1 and 2 vary; the multiplier scales every reward.
      const score = [1, 1, 1, 0, 1, 2, 3, 1, 0];
      const r = await sharedRolloutStep(0, new PhaseTimer(), {
        recipe: 'game',
        config: base,
        timescale: { player: 'monitor', lr: 3e-2 },
        learner: { model: m.model, lora, optimizer },
        tokens: m.codec,
        temperature: 1,
        klCtrl,
        rollout: async () => {
          calls.push('rollout');
          return { batch: { rows }, genBatches: 1, target: 1 };
        },
        dualAscent: () => {
          calls.push('dualAscent');
          lambda = 2;
        },
        rewards: () => {
          calls.push('rewards');
          return score.map((x) => lambda * x);
        },
        acc: () => score,
        rewardDetail: (_, row, b) => `reward ${b[row]}`,
      });
      expect(calls).toEqual(['rollout', 'dualAscent', 'rewards']);
      expect(r.beta).toBe(0.5);
      // target 1: the first group whose reward (seq_reward, after the dual step) varies: group 1.
      expect(r.kept).toEqual([3, 4, 5]);
      expect(r.groups).toEqual([1, 1, 1]);
      r.kept.forEach((k, j) => expect(r.rewards[j]).toBeCloseTo(2 * score[k] - 0.5 * kl[k], 12));
      expect(r.filter['filter/kept_groups']).toBe(1);
      expect(r.learn['optim/lr']).toBeCloseTo(3e-2, 12);
      // The adaptive controller stepped on the kept rows' KL (below target: beta shrinks).
      expect(klCtrl.value).toBeLessThan(0.5);
    } finally {
      lora.dispose();
      optimizer.dispose();
      m.dispose();
    }
  }, 60_000);
});
