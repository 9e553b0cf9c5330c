// The nine recipes, each with the smallest config that still takes a learning step on every model
// it trains (one prompt or item, groups of 2, 3 new tokens, no samples), on one model reference and
// the "letters" judge of recipeTesting.ts. Shared by the audits that run every recipe: the planned
// path on Dawn (e2e/recipesPlanned.e2e.ts) and the model families on tfjs
// (src/recipes/familyRecipes.test.ts).
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Judge } from '../../src/judges/types';
import { PROJ_NAMES, type LlamaModel } from '../../src/model/llama';
import { LoraAdapter, type LoraSet } from '../../src/model/lora';
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

/**
 * A dense "harm" score (the mean of each character's code mod 7, over 6), registered as "letters":
 * two different responses almost never tie, so every group of 2 has a spread to learn from.
 */
export function denseJudge(): Judge {
  return {
    name: 'letters',
    score: async (items) =>
      items.map(({ response }) => {
        const unsafe = [...response].reduce((a, c) => a + (c.charCodeAt(0) % 7) / 6, 0) / Math.max(1, response.length);
        return { unsafe, refused: false, benignCorrect: null, category: null, label: 'scored' };
      }),
  };
}

export const FAMILY_FIXTURES = resolve('dev/fixtures/families');

/**
 * Copies of family fixtures (dev/fixtures/families/<name>) in a temporary folder with a context of
 * 512: minmax's monitor prompt is 130 character tokens, over the fixtures' 128; the logits do not
 * depend on it. Returns the folder holding the copies.
 */
export function familyCopies(names: readonly string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'family-fixtures-'));
  for (const n of names) {
    cpSync(join(FAMILY_FIXTURES, n), join(dir, n), { recursive: true });
    const c = JSON.parse(readFileSync(join(FAMILY_FIXTURES, n, 'config.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(dir, n, 'config.json'), JSON.stringify({ ...c, max_position_embeddings: 512 }));
  }
  return dir;
}

/** The LoRA set attached to a model (a model a recipe trains), or null. */
export function trainedLora(m: LlamaModel): LoraSet | null {
  for (const l of m.layers)
    for (const p of PROJ_NAMES) if (l[p].adapter instanceof LoraAdapter) return (l[p].adapter as LoraAdapter).set;
  return null;
}
