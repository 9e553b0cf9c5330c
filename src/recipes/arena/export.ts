// arena's veRL export: the defender's phase as its own job (defend's export and reward.py); the
// attacker's phase is attack's export.
import {
  ATTACKER_PROMPTS_NOTE,
  judgeConstants,
  judgeNotes,
  KL_IN_REWARD_NOTE,
  n,
  POLICY_LOSS_NOTES,
  type ExportRecipe,
} from '../../export/verl/entry';
import { defendExport } from '../defend/export';

/** arena: the defender's phase as its own job (defend's reward, no entropy term); the attacker's phase is attack's export. */
export const arenaExport: ExportRecipe = {
  ...defendExport,
  name: 'arena',
  rewardConstants: (c) => ({
    ...judgeConstants(c),
    safetyWeight: c.safetyWeight,
    utilityWeight: c.utilityWeight,
    entropyCoef: 0,
    klBeta: c.defenderKlBeta,
    klSum: false,
  }),
  verl: (c) => ({
    'actor_rollout_ref.rollout.temperature': c.defenderTemperature,
    'actor_rollout_ref.rollout.top_p': c.defenderTopP,
    'data.max_response_length': c.defenderMaxTokens,
    'actor_rollout_ref.actor.optim.lr': c.defenderLr,
    'algorithm.use_kl_in_reward': n(c, 'defenderKlBeta') > 0,
    'algorithm.kl_penalty': 'kl',
    'algorithm.kl_ctrl.type': c.klController,
    'algorithm.kl_ctrl.kl_coef': c.defenderKlBeta,
  }),
  unsupported: (c) => [
    `Two players: the lab alternates ${c.phaseSteps} attacker steps with ${c.phaseSteps} defender steps, each against the other as it is now. veRL trains one policy per job, so this export is the DEFENDER's phase (reward: safetyWeight x (1 - harm) on harmful prompts, utilityWeight x correct on benign tasks, minus defenderKlBeta x KL); the attacker's phase is the \`attack\` recipe's export (diversityCoef ${c.diversityCoef}, KL ${c.attackerKlBeta}). Alternate the two jobs in an outer loop, each starting from the other's latest adapter.`,
    ...judgeNotes(c),
    ATTACKER_PROMPTS_NOTE,
    KL_IN_REWARD_NOTE(n(c, 'defenderKlBeta')),
    ...POLICY_LOSS_NOTES(c),
  ],
  trl: false,
};
