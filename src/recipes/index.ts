// The recipes layer: config schemas, the recipe registry and the built-in recipes.
export * from '../contract/report';
export * from '../contract/schema';
export * from './kit/types';
export * from './kit/env';
export * from './kit/state';
export * from './registry';
export { redteamRecipe, redteamSchema, greedyAsr, redteamEvalPrompts, type RedteamConfig } from './redteam/redteam';
export {
  attackerSftRecipe,
  attackerSftSchema,
  parseGoalPromptJsonl,
  encodeSftPair,
  tacticMix,
  type AttackerSftConfig,
  type GoalPromptPair,
} from './attacker-sft/attackerSft';
export {
  attackRecipe,
  attackSchema,
  groupDiversity,
  ATTACK_ADVANTAGES,
  DIVERSITY_MODES,
  type AttackConfig,
  type DiversityMode,
} from './attack/attack';
