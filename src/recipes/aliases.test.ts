import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { aliasNote, FIELD_ALIASES, METRIC_ALIASES, renameMetrics, resolveAliases } from '../contract/aliases';
import { listRecipes } from './registry';
import { validateConfig } from '../contract/schema';

describe('veRL / TRL aliases', () => {
  it('every row names a field some registered recipe has, and no alias points at two fields of one recipe', () => {
    const recipes = listRecipes();
    for (const a of FIELD_ALIASES) {
      expect(
        recipes.some((r) => Object.hasOwn(r.schema, a.lab) && (!a.recipes || a.recipes.includes(r.name))),
        a.lab,
      ).toBe(true);
    }
    for (const r of recipes) {
      const seen = new Map<string, string>();
      for (const a of FIELD_ALIASES.filter(
        (x) => Object.hasOwn(r.schema, x.lab) && (!x.recipes || x.recipes.includes(r.name)),
      )) {
        for (const name of [a.verl, a.trl].filter((x): x is string => !!x)) {
          expect(seen.get(name) ?? a.lab, `${r.name}: ${name}`).toBe(a.lab);
          seen.set(name, a.lab);
        }
      }
    }
  });

  it("every veRL alias is a key of veRL's trainer config (the export's key fixture, commit named there)", () => {
    const verl = JSON.parse(
      readFileSync(new URL('../../dev/fixtures/verl/verl-keys.json', import.meta.url), 'utf8'),
    ) as { keys: string[] };
    expect(FIELD_ALIASES.flatMap((a) => (a.verl && !verl.keys.includes(a.verl) ? [a.verl] : []))).toEqual([]);
  });

  it("translates names and values per recipe: temperature is the attacker's in attack, the defender's in redteam", () => {
    const redteam = listRecipes().find((r) => r.name === 'redteam')!;
    const attack = listRecipes().find((r) => r.name === 'attack')!;
    expect(
      resolveAliases('redteam', redteam.schema, {
        'actor_rollout_ref.rollout.temperature': '0.9',
        scale_rewards: 'none',
        lora_target_modules: 'all-linear',
      }).input,
    ).toEqual({ temperature: '0.9', normAdvByStd: 'false', loraTargets: 'all' });
    expect(resolveAliases('attack', attack.schema, { temperature: '0.9' }).input).toEqual({
      attackerTemperature: '0.9',
    });
    const v = validateConfig(
      redteam.schema,
      resolveAliases('redteam', redteam.schema, { num_generations: '12', epsilon: '0.28' }).input,
    );
    expect(v.config).toMatchObject({ groupSize: 12, clipRatio: 0.28 });
    // An unmapped TRL value reaches the schema, which names it.
    const batch = validateConfig(
      redteam.schema,
      resolveAliases('redteam', redteam.schema, { scale_rewards: 'batch' }).input,
    );
    expect(batch.errors.normAdvByStd).toMatch(/true or false, got "batch"/);
    expect(aliasNote('redteam', redteam.schema, 'klBeta')).toBe('veRL algorithm.kl_ctrl.kl_coef');
    expect(aliasNote('redteam', redteam.schema, 'earlyStop')).toBe('');
  });

  it("renames metrics for veRL and TRL, milliseconds to veRL's seconds, unknown names kept", () => {
    expect(renameMetrics({ 'loss/policy': 0.5, 'perf/step_ms': 1500, 'judge/asr': 0.25 }, 'verl')).toEqual({
      'actor/pg_loss': 0.5,
      'timing_s/step': 1.5,
      'judge/asr': 0.25,
    });
    expect(renameMetrics({ 'loss/policy': 0.5, 'reward/mean': 0.1 }, 'trl')).toEqual({ loss: 0.5, reward: 0.1 });
    expect(new Set(METRIC_ALIASES.map((m) => m.lab)).size).toBe(METRIC_ALIASES.length);
  });
});

describe("the lab's earlier field names", () => {
  it("multiturn's klCoef / klEstimator are read as klLossCoef / klLossEstimator, and both names at once is an error", async () => {
    const { validateRecipeConfig, getRecipe } = await import('./registry');
    const mt = getRecipe('multiturn');
    const v = validateRecipeConfig(mt, { klCoef: 0.02, klEstimator: 'k1' });
    expect(v.ok).toBe(true);
    expect(v.config).toMatchObject({ klLossCoef: 0.02, klLossEstimator: 'k1' });
    expect(v.config).not.toHaveProperty('klCoef');
    const both = validateRecipeConfig(mt, { klCoef: 0.02, klLossCoef: 0.03 });
    expect(both.ok).toBe(false);
    expect(both.errors.klLossCoef).toMatch(/set twice: as "klLossCoef" and as "klCoef"/);
  });

  it('a checkpoint saved under the earlier name is checked against the field under its new name', async () => {
    const { checkPayload } = await import('./kit/state');
    const payload = { format: 1, recipe: 'multiturn', seed: 1, step: 0, config: { klCoef: 0.001 }, extra: {}, rng: {} };
    expect(() => checkPayload(payload as never, 'multiturn', 1, { klLossCoef: 0.001 })).not.toThrow();
    expect(() => checkPayload(payload as never, 'multiturn', 1, { klLossCoef: 0.002 })).toThrow(
      /field "klLossCoef" was 0.001 when saved, this run has 0.002/,
    );
  });
});
