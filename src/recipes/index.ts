// The recipes layer: config schemas, the recipe registry and the built-in recipes.
export * from '../contract/report.ts';
export * from '../contract/schema.ts';
export * from './kit/types.ts';
export * from './kit/env.ts';
export * from './kit/state.ts';
export * from './registry.ts';
export { redteamRecipe, redteamSchema, greedyAsr, redteamEvalPrompts, type RedteamConfig } from './redteam/redteam.ts';
export { attackerSftRecipe, attackerSftSchema, parseGoalPromptJsonl, encodeSftPair, tacticMix, type AttackerSftConfig, type GoalPromptPair } from './attacker-sft/attackerSft.ts';
export { attackRecipe, attackSchema, groupDiversity, ATTACK_ADVANTAGES, DIVERSITY_MODES, type AttackConfig, type DiversityMode } from './attack/attack.ts';
