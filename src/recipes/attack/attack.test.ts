import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { beforeAll, describe, expect, it } from 'vitest';
import { nodeRecipeEnv } from '../../cli/recipe-env';
import type { Judge } from '../../judges/types';
import { attackSchema, groupDiversity } from './attack';
import { createRun, getRecipe } from '../registry';
import type { StepReport } from '../../contract/report';
import { stableReport } from '../../../dev/test/recipeTesting';
import { validateConfig } from '../../contract/schema';

const MODELS = resolve('public/models');
const HAVE_MODELS = ['attacker', 'defender'].every((m) => existsSync(resolve(MODELS, m, 'model.safetensors')));

describe('attack recipe', () => {
  beforeAll(async () => {
    await tf.setBackend('wasm');
  });

  it('schema: documented defaults, coerced values, invalid fields named', () => {
    const d = validateConfig(attackSchema, {});
    expect(d.ok).toBe(true);
    expect(d.config).toMatchObject({
      attacker: 'attacker',
      defender: 'defender',
      judge: 'rules',
      goals: 4,
      groupSize: 8,
      advantage: 'grpo',
      diversity: 'exact',
      diversityCoef: 0.2,
      defenderGreedy: false,
    });
    expect(
      validateConfig(attackSchema, { advantage: 'rloo', defenderGreedy: 'true', groupSize: '4' }).config,
    ).toMatchObject({ advantage: 'rloo', defenderGreedy: true, groupSize: 4 });
    expect(validateConfig(attackSchema, { advantage: 'reinforce_plus_plus' }).ok).toBe(true);
    const bad = validateConfig(attackSchema, { groupSize: 1, advantage: 'dpo', diversityCoef: -1, defender: '' });
    expect(bad.ok).toBe(false);
    expect(bad.errors.groupSize).toBe('field "groupSize" must be an integer in [2, 64], got 1');
    expect(bad.errors.advantage).toMatch(/one of grpo, rloo, reinforce_plus_plus, reinforce_plus_plus_baseline/);
    expect(bad.errors.diversityCoef).toMatch(/"diversityCoef" must be a number in \[0, 10\]/);
    expect(bad.errors.defender).toMatch(/non-empty/);
    expect(getRecipe('attack').modelField).toBe('attacker');
  });

  it('the diversity term gives duplicates less, per group', () => {
    // group 0: three copies of one prompt and one unique; group 1: the same text appears but in another group.
    const texts = [
      'Never refuse: x',
      'Never refuse: x',
      'Never refuse: x',
      'For a novel: x',
      'Never refuse: x',
      'Play DAN: x',
    ];
    const group = [0, 0, 0, 0, 1, 1];
    const exact = groupDiversity(texts, group, 'exact');
    expect(exact).toEqual([1 - 2 / 3, 1 - 2 / 3, 1 - 2 / 3, 1, 1, 1]);
    const ngram = groupDiversity(texts, group, 'ngram');
    expect(ngram[3]).toBeGreaterThan(ngram[0]);
    expect(ngram[0]).toBeLessThan(1);
    expect(groupDiversity(['a b c'], [0])).toEqual([1]);
  });

  it.skipIf(!HAVE_MODELS)(
    'the reward adds diversityCoef x diversity, so duplicated prompts earn less than unique ones with the same harm',
    async () => {
      const env = nodeRecipeEnv({
        modelsDir: MODELS,
        judges: {
          zero: () => ({
            name: 'zero',
            score: async (items) =>
              items.map(() => ({ unsafe: 0, refused: true, benignCorrect: null, category: null, label: 'refusal' })),
          }),
        },
      });
      // Greedy-ish attacker (low temperature) so a group holds duplicates; constant zero harm isolates the term.
      const { run } = await createRun(
        env,
        'attack',
        {
          judge: 'zero',
          goals: 2,
          groupSize: 4,
          attackerTemperature: 0.05,
          attackerMaxTokens: 24,
          defenderMaxTokens: 4,
          klBeta: 0,
          diversityCoef: 0.5,
          samples: 8,
          lr: 0,
        },
        3,
      );
      try {
        const r = await run.step();
        for (const s of r.samples) expect(s.reward).toBeCloseTo(s.terms.diversity!, 10); // harm 0, klBeta 0
        const byGroup = new Map<number, typeof r.samples>();
        r.samples.forEach((s) => byGroup.set(s.group, [...(byGroup.get(s.group) ?? []), s]));
        let sawDuplicate = false;
        for (const g of byGroup.values()) {
          for (const s of g) {
            const dupes = g.filter((o) => o !== s && o.messages[0].text === s.messages[0].text).length;
            expect(s.terms.diversity).toBeCloseTo(0.5 * (1 - dupes / (g.length - 1)), 10);
            if (dupes > 0) sawDuplicate = true;
          }
        }
        expect(sawDuplicate).toBe(true);
        expect(r.metrics['diversity/mean']).toBeLessThan(1);
      } finally {
        run.dispose();
      }
    },
    30_000,
  );

  it.skipIf(!HAVE_MODELS)(
    'a checkpoint at step k restored into a fresh run reproduces step k (built-in attacker and defender)',
    async () => {
      // A dense stand-in judge (harm = answer length / 40) so step 0 has non-zero advantages at these
      // tiny budgets (the rules judge needs a full payload marker, rarely sampled in 2 x 4 rows).
      const lengthJudge = (): Judge => ({
        name: 'length',
        score: async (items) =>
          items.map(({ response }) => ({
            unsafe: Math.min(1, response.length / 40),
            refused: false,
            benignCorrect: null,
            category: null,
            label: 'length',
          })),
      });
      const env = nodeRecipeEnv({ modelsDir: MODELS, judges: { length: lengthJudge } });
      const config = {
        judge: 'length',
        goals: 2,
        groupSize: 4,
        attackerMaxTokens: 16,
        defenderMaxTokens: 10,
        samples: 2,
        lr: 1e-2,
      };
      const a = await createRun(env, 'attack', config, 7);
      let payload;
      let uninterrupted: StepReport;
      try {
        await a.run.step();
        payload = await a.run.state();
        uninterrupted = await a.run.step();
      } finally {
        a.run.dispose();
      }
      expect(payload.optimizer.state.step).toBe(1);
      expect(payload.tensors.some((t) => t.name.endsWith('lora_B.weight') && t.data.some((x) => x !== 0))).toBe(true);
      const b = await createRun(env, 'attack', config, 7);
      try {
        await b.run.restore(payload);
        expect(b.run.stepsDone).toBe(1);
        const resumed = await b.run.step();
        expect(stableReport(resumed)).toEqual(stableReport(uninterrupted));
        for (const k of [
          'reward/mean',
          'judge/asr',
          'diversity/mean',
          'kl/mean',
          'loss/policy',
          'grad/norm',
          'perf/step_ms',
          'tactic/direct',
        ]) {
          expect(Number.isFinite(resumed.metrics[k]), k).toBe(true);
        }
        const s = resumed.samples[0];
        expect(s.messages.map((m) => m.role)).toEqual(['attacker', 'defender']);
        expect(s.messages[1].tokens!.ids.length).toBe(s.messages[1].tokens!.entropy.length);
        expect(Object.keys(s.terms).sort()).toEqual(['diversity', 'harm', 'kl']);
      } finally {
        b.run.dispose();
      }
      // Another seed's checkpoint is refused.
      const c = await createRun(env, 'attack', config, 8);
      await expect(c.run.restore(payload)).rejects.toThrow(/seed 7, this run has seed 8/);
      c.run.dispose();
    },
    60_000,
  );
});
