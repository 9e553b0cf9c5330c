// redteam's veRL / TRL export: the defender trained against the sandbox's tactic-wrapped harmful
// prompts, scored by reward.py (this folder) under the red-team trainer's reward.
import { harmfulPrompts } from '../../data/sandbox/index';
import {
  judgeConstants,
  judgeNotes,
  KL_IN_REWARD_NOTE,
  n,
  POLICY_LOSS_NOTES,
  sandboxItems,
  type ExportRecipe,
} from '../../export/verl/entry';
import { tacticList, type RedteamTacticMix } from '../kit/goals';
import computeScore from './reward.py?raw';

export const redteamExport: ExportRecipe = {
  name: 'redteam',
  modelField: 'defender',
  batchPrompts: (c) => n(c, 'prompts'),
  dataset: (c, seed) => {
    const tactics = tacticList(c.tactics as RedteamTacticMix);
    return sandboxItems({
      train: harmfulPrompts(n(c, 'promptPool'), seed, { tactics, split: 'train' }),
      val: harmfulPrompts(Math.min(64, n(c, 'promptPool')), seed + 9001, { tactics, split: 'eval' }),
    });
  },
  rewardConstants: (c) => ({ ...judgeConstants(c), repetitionPenalty: c.repetitionPenalty, klBeta: c.klBeta }),
  computeScore,
  verl: () => ({}),
  unsupported: (c) => [
    ...judgeNotes(c),
    `The red-team trainer clips harm - rp x rep - beta x KL to [0, 1] AFTER the KL term; veRL adds its KL penalty after compute_score, so the export clips harm - rp x rep only and the KL is outside the clip.`,
    KL_IN_REWARD_NOTE(n(c, 'klBeta')),
    ...POLICY_LOSS_NOTES(c),
    ...(c.zScoreRewards
      ? [
          "zScoreRewards (per-batch z-score of the rewards before the advantages) has no veRL switch; GRPO's group normalisation is closest.",
        ]
      : []),
    ...(c.earlyStop
      ? [
          `Early stop (batch mean reward > ${c.earlyStopReward} or mean repetition > ${c.earlyStopRepetition}) has no veRL switch: watch critic/score/mean and the "repetition" reward extra in the log and stop the job by hand.`,
        ]
      : []),
    'Groups whose advantages are all zero are skipped in the lab; in veRL they contribute zero gradient anyway (their advantages are 0) but still count in token-mean denominators.',
  ],
  trl: true,
};
