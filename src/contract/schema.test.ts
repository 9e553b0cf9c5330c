import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  bool,
  defaultConfig,
  describeSchema,
  int,
  num,
  oneOf,
  parseConfig,
  str,
  validateConfig,
  type ConfigOf,
} from './schema';

const schema = {
  groupSize: int(8, 'G', { min: 2, max: 64 }),
  lr: num(1e-3, 'learning rate', { min: 0, max: 1 }),
  zScore: bool(false, 'z-score rewards'),
  loss: oneOf(['importance_sampling', 'ppo'] as const, 'importance_sampling', 'policy loss'),
  model: str('defender', 'model reference', { nonEmpty: true }),
};

describe('config schema', () => {
  it('fills defaults and types the config', () => {
    const r = validateConfig(schema, {});
    expect(r.ok).toBe(true);
    expect(r.errors).toEqual({});
    const c: ConfigOf<typeof schema> = r.config;
    expect(c).toEqual({ groupSize: 8, lr: 1e-3, zScore: false, loss: 'importance_sampling', model: 'defender' });
    expect(defaultConfig(schema)).toEqual(c);
  });

  it('accepts typed values and coerces strings from forms, URLs and --set', () => {
    const r = validateConfig(schema, { groupSize: '16', lr: ' 0.01', zScore: 'true', loss: 'ppo', model: 'x/y' });
    expect(r.ok).toBe(true);
    expect(r.config).toEqual({ groupSize: 16, lr: 0.01, zScore: true, loss: 'ppo', model: 'x/y' });
    expect(validateConfig(schema, { zScore: 'off', groupSize: 2 }).config).toMatchObject({
      zScore: false,
      groupSize: 2,
    });
  });

  it('reports every invalid field with its allowed range, keeping defaults for them', () => {
    const r = validateConfig(schema, { groupSize: 1, lr: 'fast', zScore: 'maybe', loss: 'dpo', model: ' ', extra: 3 });
    expect(r.ok).toBe(false);
    expect(r.errors.groupSize).toBe('field "groupSize" must be an integer in [2, 64], got 1');
    expect(r.errors.lr).toBe('field "lr" must be a number in [0, 1], got "fast"');
    expect(r.errors.zScore).toMatch(/"zScore" must be true or false/);
    expect(r.errors.loss).toBe('field "loss" must be one of importance_sampling, ppo, got "dpo"');
    expect(r.errors.model).toMatch(/non-empty string/);
    expect(r.errors.extra).toMatch(/unknown field "extra" \(fields: groupSize, lr, zScore, loss, model\)/);
    expect(r.config.groupSize).toBe(8);
    expect(validateConfig(schema, { groupSize: 2.5 }).errors.groupSize).toMatch(/integer/);
    expect(validateConfig(schema, { lr: Number.NaN }).ok).toBe(false);
    expect(validateConfig(schema, { lr: Infinity }).ok).toBe(false);
    expect(validateConfig(schema, { lr: '' }).ok).toBe(false);
  });

  it('parseConfig throws a ConfigError naming the fields', () => {
    expect(() => parseConfig(schema, { groupSize: 100 }, 'recipe redteam')).toThrow(ConfigError);
    expect(() => parseConfig(schema, { groupSize: 100 }, 'recipe redteam')).toThrow(
      'recipe redteam: field "groupSize" must be an integer in [2, 64], got 100',
    );
    try {
      parseConfig(schema, { groupSize: 100, loss: 'x' });
    } catch (e) {
      expect(Object.keys((e as ConfigError).errors)).toEqual(['groupSize', 'loss']);
    }
  });

  it('schemas are JSON-safe and describe themselves', () => {
    expect(JSON.parse(JSON.stringify(schema))).toEqual(schema);
    const lines = describeSchema(schema);
    expect(lines).toHaveLength(5);
    expect(lines[0]).toMatch(/^groupSize\s+integer = 8 {2}\(an integer in \[2, 64\]\) {2}G$/);
  });
});
