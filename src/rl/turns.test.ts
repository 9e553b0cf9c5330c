import { describe, expect, it } from 'vitest';
import { aggregateTurnScores } from './turns';

// Scores [0.2, 0.8, 0.5]: mean 0.5, min 0.2.
const s = [0.2, 0.8, 0.5];

describe('turn aggregation', () => {
  it('mean', () => expect(aggregateTurnScores(s, 'mean')).toBeCloseTo(0.5, 10));
  it('min_mean = 0.3 min + 0.7 mean = 0.06 + 0.35 (the default mode)', () => {
    expect(aggregateTurnScores(s, 'min_mean')).toBeCloseTo(0.41, 10);
    expect(aggregateTurnScores(s)).toBeCloseTo(0.41, 10);
    expect(aggregateTurnScores(s, 'min_mean', { minMeanAlpha: 0.5 })).toBeCloseTo(0.35, 10); // 0.1 + 0.25
  });
  it('soft_linear: w = [1, 1.1, 1.2] -> (0.2 + 0.88 + 0.6) / 3.3', () =>
    expect(aggregateTurnScores(s, 'soft_linear')).toBeCloseTo(1.68 / 3.3, 10));
  it('harmonic = 3 / (5 + 1.25 + 2) and floors scores at 0.01', () => {
    expect(aggregateTurnScores(s, 'harmonic')).toBeCloseTo(3 / 8.25, 10);
    // [0, 1]: 0 -> 0.01 -> 2 / (100 + 1)
    expect(aggregateTurnScores([0, 1], 'harmonic')).toBeCloseTo(2 / 101, 10);
  });
  it('last', () => expect(aggregateTurnScores(s, 'last')).toBe(0.5));
  it('missing scores are dropped before aggregating', () => {
    // [0.2, -, 0.8, -] -> [0.2, 0.8]: soft_linear weights [1, 1.1] -> (0.2 + 0.88) / 2.1
    expect(aggregateTurnScores([0.2, null, 0.8, Number.NaN], 'soft_linear')).toBeCloseTo(1.08 / 2.1, 10);
    expect(aggregateTurnScores([0.2, undefined, 0.8], 'last')).toBe(0.8);
  });
  it('a single score passes through in every mode; none gives 0', () => {
    for (const mode of ['mean', 'min_mean', 'soft_linear', 'harmonic', 'last'] as const) {
      expect(aggregateTurnScores([null, 0.003], mode)).toBe(0.003); // harmonic does not floor it
    }
    expect(aggregateTurnScores([], 'mean')).toBe(0);
  });
  it('unknown mode throws', () =>
    expect(() => aggregateTurnScores(s, 'max' as 'mean')).toThrow(/unknown turn aggregation "max"/));
});
