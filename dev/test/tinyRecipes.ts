// The nine recipes, each with the smallest config that still takes a learning step on every model
// it trains (one prompt or item, groups of 2, 3 new tokens, no samples), on one model reference and
// the "letters" judge of recipeTesting.ts. Shared by the audits that run every recipe: the planned
// path on Dawn (e2e/recipesPlanned.e2e.ts) and the model families on tfjs
// (src/recipes/familyRecipes.test.ts).
import type { Schema } from '../../src/contract/schema';
import { weightsFieldOf } from '../../src/contract/weightFields';
import type { WeightFormat } from '../../src/contract/weightFormat';

export interface TinyRecipe {
  config: Record<string, unknown>;
  /** Steps that train every model the recipe trains (arena and minmax: one per side). */
  steps: number;
}

/** Per recipe: a tiny config on model `m` (every model field) and the steps that train every trained model. */
export function tinyRecipes(m: string): Record<string, TinyRecipe> {
  return {
    redteam: {
      config: { defender: m, judge: 'letters', prompts: 1, groupSize: 2, maxNewTokens: 3, promptPool: 4, samples: 0 },
      steps: 1,
    },
    defend: {
      config: {
        attacker: m,
        defender: m,
        judge: 'letters',
        goals: 1,
        benignPrompts: 0,
        groupSize: 2,
        attackerMaxTokens: 3,
        maxNewTokens: 3,
        goalPool: 4,
        samples: 0,
      },
      steps: 1,
    },
    attack: {
      config: {
        attacker: m,
        defender: m,
        judge: 'letters',
        goals: 1,
        groupSize: 2,
        attackerMaxTokens: 3,
        defenderMaxTokens: 3,
        samples: 0,
      },
      steps: 1,
    },
    arena: {
      config: {
        attacker: m,
        defender: m,
        judge: 'letters',
        goals: 1,
        groupSize: 2,
        benignPrompts: 0,
        attackerMaxTokens: 3,
        defenderMaxTokens: 3,
        goalPool: 4,
        samples: 0,
        phaseSteps: 1,
      },
      steps: 2,
    },
    multiturn: {
      config: {
        defender: m,
        judge: 'letters',
        episodes: 1,
        benignEpisodes: 0,
        groupSize: 2,
        maxNewTokens: 3,
        goalPool: 4,
        samples: 0,
      },
      steps: 1,
    },
    tokenbuncher: {
      config: {
        defender: m,
        judge: 'letters',
        prompts: 1,
        benignPrompts: 0,
        groupSize: 2,
        maxNewTokens: 3,
        promptPool: 4,
        samples: 0,
      },
      steps: 1,
    },
    minmax: {
      config: {
        policy: m,
        monitor: m,
        rm: 'letters',
        items: 1,
        groupSize: 2,
        policyMaxTokens: 3,
        monitorMaxTokens: 3,
        itemPool: 4,
        samples: 0,
        monitorStepsPerPolicy: 1,
      },
      steps: 2,
    },
    rlhf: {
      config: {
        policy: m,
        monitor: m,
        rm: 'letters',
        judge: 'none',
        items: 1,
        groupSize: 2,
        policyMaxTokens: 3,
        itemPool: 4,
        samples: 0,
      },
      steps: 1,
    },
    'attacker-sft': { config: { attacker: m, batchSize: 2, sampleEvery: 0 }, steps: 1 },
  };
}

/** Recipes that train two models (both players); the others train one. */
export const TRAINED_MODELS: Readonly<Record<string, number>> = { arena: 2, minmax: 2 };

/** The model fields of a schema: each field that has a weights field beside it. */
export function modelFields(schema: Schema): string[] {
  return Object.keys(schema).filter((k) => Object.hasOwn(schema, weightsFieldOf(k)));
}

/** `config` with every model field's weights field set to `format`. */
export function withWeights(schema: Schema, config: Record<string, unknown>, format: WeightFormat) {
  return { ...config, ...Object.fromEntries(modelFields(schema).map((k) => [weightsFieldOf(k), format])) };
}
