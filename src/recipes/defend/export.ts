// defend's veRL / TRL export (MTSA's defender): the sandbox's (or the attacker's own) harmful
// prompts and benign tasks, scored by reward.py (this folder).
import { benignPrompts, harmfulPrompts, SINGLE_TURN_TACTICS } from '../../data/sandbox/index';
import {
  ATTACKER_PROMPTS_NOTE,
  fromPrompt,
  judgeConstants,
  judgeNotes,
  KL_SUM_NOTE,
  n,
  POLICY_LOSS_NOTES,
  sandboxItems,
  type DatasetItem,
  type ExportRecipe,
} from '../../export/verl/entry';
import { harmfulGoals, type Goal } from '../kit/goals';
import computeScore from './reward.py?raw';

export const defendExport: ExportRecipe = {
  name: 'defend',
  modelField: 'defender',
  batchPrompts: (c) => n(c, 'goals') + n(c, 'benignPrompts'),
  attackGoals: (c, seed) => [
    ...harmfulGoals(n(c, 'goalPool'), seed, 'train'),
    ...harmfulGoals(32, seed + 9001, 'eval').map((g) => ({ ...g, id: `val-${g.id}` })),
  ],
  dataset: (c, seed, attackPrompts) => {
    const harm = n(c, 'goalPool');
    const benign = Math.round((harm * n(c, 'benignPrompts')) / n(c, 'goals'));
    const held = seed + 9001;
    const valBenign = Math.round((32 * n(c, 'benignPrompts')) / n(c, 'goals'));
    if (attackPrompts) {
      // The attacker's own prompts, sampled once at export (the lab samples fresh ones every step).
      const goals = defendExport.attackGoals!(c, seed);
      const item = (g: Goal): DatasetItem => {
        const text = attackPrompts[g.id];
        if (text === undefined) throw new Error(`export-verl: no attacker prompt for goal ${g.id}`);
        return { id: g.id, text, groundTruth: { kind: 'harmful', category: g.category, expected: null, tactic: null } };
      };
      return {
        train: [
          ...goals.filter((g) => !g.id.startsWith('val-')).map(item),
          ...benignPrompts(benign, seed, { split: 'train' }).map(fromPrompt),
        ],
        val: [
          ...goals.filter((g) => g.id.startsWith('val-')).map(item),
          ...benignPrompts(valBenign, held, { split: 'eval' }).map(fromPrompt),
        ],
      };
    }
    return sandboxItems({
      train: [
        ...harmfulPrompts(harm, seed, { tactics: SINGLE_TURN_TACTICS, split: 'train' }),
        ...benignPrompts(benign, seed, { split: 'train' }),
      ],
      val: [
        ...harmfulPrompts(32, held, { tactics: SINGLE_TURN_TACTICS, split: 'eval' }),
        ...benignPrompts(valBenign, held, { split: 'eval' }),
      ],
    });
  },
  rewardConstants: (c) => ({
    ...judgeConstants(c),
    safetyWeight: c.safetyWeight,
    utilityWeight: c.utilityWeight,
    entropyCoef: c.entropyCoef,
    klBeta: c.klBeta,
  }),
  computeScore,
  verl: (c) => ({ 'actor_rollout_ref.actor.entropy_coeff': -n(c, 'entropyCoef') }),
  unsupported: (c) => [
    ...judgeNotes(c),
    ATTACKER_PROMPTS_NOTE,
    `Entropy term: the lab adds -entropyCoef x mean token entropy to the REWARD; compute_score cannot see token entropies, so the export puts it in the loss as actor.entropy_coeff = ${-n(c, 'entropyCoef')} (TRL entropy_coef the same; loss -= coeff x entropy, i.e. minimises entropy directly, on every prompt, not only through the advantage).`,
    KL_SUM_NOTE(n(c, 'klBeta')),
    ...POLICY_LOSS_NOTES(c),
  ],
  trl: true,
};
