import { describe, expect, it } from 'vitest';
import {
  createRun,
  getRecipe,
  hasRecipe,
  listRecipes,
  recipeNames,
  registerRecipe,
  unregisterRecipe,
} from './registry';
import { ConfigError, int, validateConfig } from '../contract/schema';
import type { Recipe, RecipeEnv } from './kit/types';

const noEnv: RecipeEnv = {
  loadModel: () => Promise.reject(new Error('no models here')),
  judge: () => {
    throw new Error('no judges here');
  },
};

describe('recipe registry', () => {
  it('gives every registered recipe its own lesson, with a formula and something to watch', () => {
    for (const r of listRecipes()) {
      expect(r.lesson?.recipe, r.name).toBe(r.name);
      expect(r.lesson!.formula.length).toBeGreaterThan(10);
      expect(r.lesson!.watch.length).toBeGreaterThan(0);
    }
  });

  it('has the built-in recipes under the names researchers type, with valid default configs', () => {
    expect(recipeNames()).toEqual(expect.arrayContaining(['redteam', 'attacker-sft']));
    for (const r of listRecipes()) {
      expect(r.title.length).toBeGreaterThan(0);
      expect(r.source.length).toBeGreaterThan(0);
      expect(validateConfig(r.schema, {}).ok).toBe(true);
      for (const [k, f] of Object.entries(r.schema))
        expect(f.help.length, `${r.name}.${k} has help`).toBeGreaterThan(10);
      if (r.modelField) expect(r.schema[r.modelField]?.type).toBe('string');
    }
    expect(getRecipe('redteam').schema.groupSize.default).toBe(8);
  });

  it('unknown names fail with the list of recipes', () => {
    expect(() => getRecipe('redtem')).toThrow(/unknown recipe "redtem" \(recipes: .*redteam.*attacker-sft/);
  });

  it('createRun validates the config before touching the env', async () => {
    await expect(createRun(noEnv, 'redteam', { groupSize: 1 }, 0)).rejects.toThrow(ConfigError);
    await expect(createRun(noEnv, 'redteam', { groupSize: 1 }, 0)).rejects.toThrow(
      /field "groupSize" must be an integer in \[2, 64\], got 1/,
    );
    await expect(createRun(noEnv, 'redteam', {}, 0.5)).rejects.toThrow(/seed must be an integer/);
    await expect(createRun(noEnv, 'redteam', {}, 0)).rejects.toThrow(/no judges here/);
  });

  it('registers and removes a custom recipe; duplicate and malformed names are refused', async () => {
    const schema = { n: int(1, 'how many steps the toy does') };
    const toy: Recipe<typeof schema> = {
      name: 'toy-recipe',
      title: 'Toy',
      source: 'test',
      description: 'a recipe for the registry test',
      schema,
      async create(_env, config, seed) {
        let k = 0;
        return {
          recipe: 'toy-recipe',
          seed,
          done: false,
          stopReason: null,
          get stepsDone() {
            return k;
          },
          step: async () => ({
            runId: 't',
            recipe: 'toy-recipe',
            step: k++,
            time: 0,
            metrics: { 'x/n': config.n },
            samples: [],
            timings: { rollout_ms: 0, score_ms: 0, learn_ms: 0, total_ms: 0 },
          }),
          state: async () => ({
            format: 1,
            recipe: 'toy-recipe',
            seed,
            step: k,
            config,
            tensors: [],
            optimizer: { state: { step: 0 }, tensors: [] },
            rng: {},
            extra: {},
          }),
          restore: async (p) => {
            k = p.step;
          },
          dispose: () => {},
        };
      },
    };
    registerRecipe(toy);
    try {
      expect(hasRecipe('toy-recipe')).toBe(true);
      expect(() => registerRecipe(toy)).toThrow(/already registered/);
      const { run, config } = await createRun(noEnv, 'toy-recipe', { n: '3' }, 1);
      expect(config).toEqual({ n: 3 });
      expect((await run.step()).metrics['x/n']).toBe(3);
    } finally {
      unregisterRecipe('toy-recipe');
    }
    expect(hasRecipe('toy-recipe')).toBe(false);
    expect(() => registerRecipe({ ...toy, name: 'Bad Name' })).toThrow(/lower-case/);
  });
});

describe('user-facing text', () => {
  it('no help line, description or lesson of a recipe carries an issue number (history belongs in EXPERIMENTS and the journal)', () => {
    const issue = /\bissues?\s*#?\d+|#\d{2,}\b/i;
    const texts = listRecipes().flatMap((r) => [
      ...Object.entries(r.schema).map(([k, f]) => [`${r.name}.${k}`, f.help] as const),
      [`${r.name} description`, r.description] as const,
      [`${r.name} lesson`, JSON.stringify(r.lesson ?? {})] as const,
    ]);
    expect(texts.length).toBeGreaterThan(100);
    expect(texts.filter(([, t]) => issue.test(t)).map(([w]) => w)).toEqual([]);
  });
});
