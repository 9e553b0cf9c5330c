import { describe, expect, it } from 'vitest';
import { bool, int, num, oneOf, str, type Schema } from '../contract/schema';
import { recipeListing } from '../../dev/test/recipeListings';
import { decodeSetup, encodeSetup, formDefaults, type RunSetup } from './setupUrl';

const schema: Schema = {
  defender: str('defender', 'model', { nonEmpty: true }),
  groupSize: int(8, 'G', { min: 2, max: 64 }),
  lr: num(0.002, 'learning rate', { min: 0, max: 1 }),
  earlyStop: bool(true, 'early stop'),
  advantage: oneOf(['grpo', 'rloo'] as const, 'grpo', 'estimator'),
};
const schemas = { redteam: schema, other: { x: int(1, 'x') } };

describe('shareable setup URL', () => {
  it('round-trips a setup, keeping unrelated parameters', () => {
    const setup: RunSetup = {
      recipe: 'redteam',
      values: {
        defender: 'https://example.org/m/a b/',
        groupSize: '16',
        lr: '1e-4',
        earlyStop: false,
        advantage: 'rloo',
      },
      seed: '42',
      maxSteps: '30',
      atMax: 'stop',
    };
    const search = encodeSetup(setup, schema, '?backend=wasm&recipe=old&c.stale=1');
    const q = new URLSearchParams(search);
    expect(q.get('backend')).toBe('wasm');
    expect(q.get('c.stale')).toBeNull();
    expect(q.get('c.defender')).toBe('https://example.org/m/a b/');
    expect(q.get('c.earlyStop')).toBe('false');
    expect(decodeSetup(search, schemas)).toEqual({ setup, errors: {} });
  });

  it('writes every field (defaults too) and omits steps when there is no limit', () => {
    const search = encodeSetup({ recipe: 'redteam', values: {}, seed: '0', maxSteps: '', atMax: 'pause' }, schema);
    const q = new URLSearchParams(search);
    expect([...q.keys()]).toEqual([
      'recipe',
      'seed',
      'c.defender',
      'c.groupSize',
      'c.lr',
      'c.earlyStop',
      'c.advantage',
    ]);
    expect(q.get('c.groupSize')).toBe('8');
    expect(q.get('c.earlyStop')).toBe('true');
  });

  it("carries a model's weight format with the real redteam schema, and names a bad one", () => {
    const real = recipeListing('redteam').schema;
    const setup: RunSetup = {
      recipe: 'redteam',
      values: { ...formDefaults(real), defenderWeights: 'int4-g64' },
      seed: '1',
      maxSteps: '',
      atMax: 'pause',
    };
    const search = encodeSetup(setup, real);
    expect(new URLSearchParams(search).get('c.defenderWeights')).toBe('int4-g64');
    expect(decodeSetup(search, { redteam: real })).toEqual({ setup, errors: {} });
    const bad = decodeSetup(search.replace('int4-g64', 'bf16'), { redteam: real });
    expect(bad?.errors.defenderWeights).toMatch(
      /must be one of f32, f16, int8, int4-g32, int4-g64, int4-g128, got "bf16"/,
    );
  });

  it('keeps bad values on their field and names each problem', () => {
    const d = decodeSetup(
      '?recipe=redteam&seed=-3&steps=0&at=later&c.groupSize=1&c.lr=abc&c.earlyStop=maybe&c.advantage=ppo&c.nope=2',
      schemas,
    )!;
    expect(d.setup.values.groupSize).toBe('1');
    expect(d.setup.values.lr).toBe('abc');
    expect(d.setup.values.advantage).toBe('ppo');
    expect(d.setup.values.earlyStop).toBe(true);
    expect(d.setup.values.defender).toBe('defender');
    expect(Object.keys(d.errors).sort()).toEqual([
      'advantage',
      'at',
      'earlyStop',
      'groupSize',
      'lr',
      'nope',
      'seed',
      'steps',
    ]);
    expect(d.errors.groupSize).toMatch(/an integer in \[2, 64\], got "1"/);
    expect(d.errors.earlyStop).toMatch(/true or false, got "maybe"/);
    expect(d.errors.advantage).toMatch(/one of grpo, rloo, got "ppo"/);
    // No field is near "nope": the message names it and does not list every field.
    expect(d.errors.nope).toBe('the link sets "nope", which recipe redteam does not have');
    expect(d.errors.seed).toMatch(/"-3"/);
    expect(d.errors.steps).toMatch(/"0"/);
    expect(d.errors.at).toMatch(/"later"/);
  });

  it('offers at most the few closest field names for a mistyped one', () => {
    const d = decodeSetup('?recipe=redteam&c.groupSzie=4', schemas)!;
    expect(d.errors.groupSzie).toBe(
      'the link sets "groupSzie", which recipe redteam does not have (did you mean groupSize?)',
    );
    expect(d.setup.values.groupSize).toBe(String(schemas.redteam.groupSize.default));
  });

  it('names an unregistered recipe and ignores a link without one', () => {
    const d = decodeSetup('?recipe=ghost&c.x=1', schemas)!;
    expect(d.errors.recipe).toMatch(/"ghost".*recipes: redteam, other/);
    expect(decodeSetup('?backend=wasm', schemas)).toBeNull();
  });

  it('a veRL key or a TRL name in the link sets the lab field it aliases (values translated); later parameters win', () => {
    const d = decodeSetup(
      '?recipe=redteam&c.actor_rollout_ref.rollout.n=16&c.learning_rate=1e-4&c.algorithm.adv_estimator=rloo',
      schemas,
    )!;
    expect(d.errors).toEqual({});
    expect(d.setup.values).toMatchObject({ groupSize: '16', lr: '1e-4', advantage: 'rloo' });
    const appended = decodeSetup('?recipe=redteam&c.groupSize=8&c.num_generations=4', schemas)!;
    expect(appended.setup.values.groupSize).toBe('4');
    const bad = decodeSetup('?recipe=redteam&c.num_generations=1', schemas)!;
    expect(bad.errors.groupSize).toMatch(/must be an integer in \[2, 64\], got "1"/);
  });
});

describe('setup URL: hostile values (issue 24)', () => {
  it('a million-character value or name is named in a short message, field by field', () => {
    const long = 'x'.repeat(1_000_000);
    const d = decodeSetup(`?recipe=redteam&seed=${long}&c.groupSize=${long}&c.${long}=1&at=${long}`, schemas)!;
    for (const m of Object.values(d.errors)) expect(m.length).toBeLessThan(400);
    expect(d.errors.groupSize).toBe(
      `field "groupSize" must be an integer in [2, 64], got "${'x'.repeat(60)}"… (1000000 chars)`,
    );
    expect(d.errors.seed).toMatch(/^seed must be a non-negative integer, got "x+"… \(1000000 chars\)$/);
    expect(d.errors[long]).toMatch(/^the link sets "x+"… \(1000000 chars\), which recipe redteam does not have/);
    expect(decodeSetup(`?recipe=${long}`, schemas)!.errors.recipe.length).toBeLessThan(400);
  });

  it('a link setting c.__proto__ gets an error like any unknown name', () => {
    const d = decodeSetup('?recipe=redteam&c.__proto__=1', schemas)!;
    expect(Object.keys(d.errors)).toEqual(['__proto__']);
  });
});
