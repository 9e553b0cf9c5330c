// tokenbuncher's veRL / TRL export: the defender's entropy-minimising defence, scored by reward.py
// (this folder); the entropy itself goes into the loss (see unsupported).
import { benignPrompts, harmfulPrompts } from '../../data/sandbox/index';
import {
  judgeConstants,
  judgeNotes,
  KL_SUM_NOTE,
  n,
  POLICY_LOSS_NOTES,
  sandboxItems,
  type ExportRecipe,
} from '../../export/verl/entry';
import { tacticList, type RedteamTacticMix } from '../kit/goals';
import computeScore from './reward.py?raw';

export const tokenbuncherExport: ExportRecipe = {
  name: 'tokenbuncher',
  modelField: 'defender',
  batchPrompts: (c) => n(c, 'prompts') + n(c, 'benignPrompts'),
  dataset: (c, seed) => {
    const tactics = tacticList(c.tactics as RedteamTacticMix);
    const harm = n(c, 'promptPool');
    const benign = Math.round((harm * n(c, 'benignPrompts')) / Math.max(1, n(c, 'prompts')));
    const held = seed + 9001;
    return sandboxItems({
      train: [
        ...harmfulPrompts(harm, seed, { tactics, split: 'train' }),
        ...benignPrompts(benign, seed, { split: 'train' }),
      ],
      val: [...harmfulPrompts(32, held, { tactics, split: 'eval' }), ...benignPrompts(8, held, { split: 'eval' })],
    });
  },
  rewardConstants: (c) => ({
    ...judgeConstants(c),
    safetyWeight: c.safetyWeight,
    utilityWeight: c.utilityWeight,
    klBeta: c.klBeta,
  }),
  computeScore,
  verl: () => ({ 'actor_rollout_ref.actor.entropy_coeff': -1 }),
  unsupported: (c) => [
    ...judgeNotes(c),
    "Entropy as the reward: Token Buncher's defence reward on harmful prompts is -(mean full-vocabulary entropy of the response); veRL computes entropies after the reward, so compute_score cannot see them. The export minimises entropy through the loss instead (actor.entropy_coeff = -1; TRL entropy_coef = -1), which also acts on benign prompts. The exact reward needs a reward manager that reads the old-policy entropies veRL computes with the log-probs (actor.calculate_entropy), after the reward today.",
    KL_SUM_NOTE(n(c, 'klBeta')),
    ...(c.noiser
      ? [
          `TokenNoiser SFT (every even step from step ${c.noiserStart}: SFT on the step's own rollouts, tokens with advantage >= 0, noised NLL) is not a veRL phase; run it as a separate SFT job on saved rollouts (trainer.rollout_data_dir).`,
        ]
      : []),
    ...(n(c, 'evalAfter') > 0
      ? [
          'The built-in redteam comparison after training (evalAfter) is a second job: export the redteam recipe against the trained adapter.',
        ]
      : []),
    ...POLICY_LOSS_NOTES(c),
  ],
  trl: true,
};
