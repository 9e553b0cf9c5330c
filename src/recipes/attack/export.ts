// attack's veRL / TRL export: the attacker writes prompts for the sandbox's goals; reward.py (this
// folder) asks the frozen defender and scores harm plus in-group diversity.
import { attackerSource } from '../../data/sandbox/index';
import {
  judgeConstants,
  judgeNotes,
  KL_IN_REWARD_NOTE,
  n,
  POLICY_LOSS_NOTES,
  type DatasetItem,
  type ExportRecipe,
} from '../../export/verl/entry';
import { harmfulGoals, type Goal } from '../kit/goals';
import computeScore from './reward.py?raw';

export const attackExport: ExportRecipe = {
  name: 'attack',
  modelField: 'attacker',
  batchPrompts: (c) => n(c, 'goals'),
  dataset: (c, seed) => {
    const goal = (g: Goal): DatasetItem => ({
      id: g.id,
      text: attackerSource(g.text),
      groundTruth: { kind: 'harmful', category: g.category, expected: null, goal: g.text },
    });
    return {
      train: harmfulGoals(n(c, 'goalPool'), seed, 'train').map(goal),
      val: harmfulGoals(32, seed + 9001, 'eval').map(goal),
    };
  },
  rewardConstants: (c) => ({
    ...judgeConstants(c),
    defender: c.defender,
    defenderGreedy: c.defenderGreedy,
    defenderTemperature: c.defenderTemperature,
    defenderTopP: c.defenderTopP,
    defenderMaxTokens: c.defenderMaxTokens,
    diversity: c.diversity,
    diversityCoef: c.diversityCoef,
    klBeta: c.klBeta,
  }),
  computeScore,
  frozen: () => [{ field: 'defender', env: 'SPARRING_DEFENDER_URL', role: 'defender' }],
  // veRL's batch reward manager (the legacy reward path; its reward loop scores one response at a time).
  verl: () => ({
    'reward_model.use_reward_loop': false,
    'reward_model.reward_manager': 'batch',
    'custom_reward_function.name': 'compute_score_batch',
  }),
  unsupported: (c) => [
    ...judgeNotes(c),
    `The frozen defender answers every attacker prompt inside reward.py (README: "Frozen models" says how to serve it). ${c.defenderGreedy ? 'It answers greedily (temperature 0).' : `It samples at temperature ${c.defenderTemperature} / top_p ${c.defenderTopP}; the lab seeds that draw per (seed, step, row), a server does not.`}`,
    "Diversity is computed over the responses of one prompt in the batch (veRL's batch reward manager); if a prompt appears twice in one batch its two groups count as one.",
    KL_IN_REWARD_NOTE(n(c, 'klBeta')),
    ...POLICY_LOSS_NOTES(c),
  ],
  trl: true,
};
