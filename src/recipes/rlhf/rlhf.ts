// `rlhf` — the single-player baseline of the Monitor-vs-LLM game: the QA policy is trained on the
// same reward R = 0.5 clamp(RM(O), -15, 15) + 0.5 x 5 x J, but nobody trains the monitor: J comes
// from the untrained monitor (judge = monitor; the base model with the monitor prompt, no adapter)
// or is left out (judge = none, R = 0.5 clamp(RM)). Every step is a policy step; no lambda.
// The game itself is minmax.ts (GameRun); this module is the recipe's schema and entry.
import { createGameRun, gameFields, minmaxSchema } from '../minmax/minmax';
import { defaultConfig, oneOf, type ConfigOf } from '../../contract/schema';
import type { Recipe, RecipeEnv, RecipeRun } from '../kit/types';
import { rlhfLesson } from './lesson';

export const rlhfSchema = {
  ...gameFields,
  judge: oneOf(
    ['monitor', 'none'] as const,
    'monitor',
    "J of the policy reward: monitor (the frozen, untrained monitor's verdict) or none (RM only)",
  ),
};
export type RlhfConfig = ConfigOf<typeof rlhfSchema>;

export const rlhfRecipe: Recipe<typeof rlhfSchema> = {
  lesson: rlhfLesson,
  name: 'rlhf',
  title: 'RLHF baseline: QA policy, frozen judge',
  source: 'Monitor-vs-LLM (its traditional RLHF baseline)',
  description:
    'The QA policy alone, trained by GRPO on the minmax policy reward 0.5 clamp(RM) + 2.5 J, with J from a frozen monitor ' +
    "(or without J). The baseline to compare minmax's policy accuracy and monitor verdict accuracy against.",
  schema: rlhfSchema,
  modelField: 'policy',
  create(env: RecipeEnv, config: RlhfConfig, seed: number): Promise<RecipeRun> {
    return createGameRun(env, 'rlhf', { ...defaultConfig(minmaxSchema), ...config }, config, seed);
  },
};
