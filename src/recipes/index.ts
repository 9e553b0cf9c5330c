// The recipes layer: config schemas, the recipe registry and the built-in recipes.
export * from '../contract/report.ts';
export * from '../contract/schema.ts';
export * from './types.ts';
export * from './env.ts';
export * from './state.ts';
export * from './registry.ts';
export { redteamRecipe, redteamSchema, greedyAsr, redteamEvalPrompts, type RedteamConfig } from './redteam.ts';
export { attackerSftRecipe, attackerSftSchema, parseGoalPromptJsonl, encodeSftPair, tacticMix, type AttackerSftConfig, type GoalPromptPair } from './attackerSft.ts';
export { attackRecipe, attackSchema, groupDiversity, ATTACK_ADVANTAGES, DIVERSITY_MODES, type AttackConfig, type DiversityMode } from './attack.ts';
