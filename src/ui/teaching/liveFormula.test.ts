import { describe, expect, it } from 'vitest';
import type { RolloutSample } from '../../contract/report';
import { initialRunData, appendReport } from '../../store/runStore';
import { recipeListing } from '../../../dev/test/recipeListings';
import { latestMetrics, plugFormula } from './liveFormula';

const sample = (terms: RolloutSample['terms'], reward: number): RolloutSample => ({
  id: 's',
  promptKey: 'k',
  group: 0,
  messages: [],
  verdict: { label: 'x', unsafe: 0, refused: false, success: false },
  reward,
  terms,
});

describe('reward formula with live values', () => {
  it('sums arena attacker terms: 0.9 + 0.2 x 0.5 - 0.05 x 0.4', () => {
    const p = plugFormula(recipeListing('arena').lesson!, sample({ harm: 0.9, diversity: 0.1, kl: -0.02 }, 0.98));
    expect(p.combined).toBeCloseTo(0.98, 12);
    expect(p.reported).toBe(0.98);
    expect(p.expression).toBe('0.900 + 0.100 − 0.020 = 0.980');
    expect(p.terms.map((t) => t.name)).toEqual(['harm', 'diversityCoef · diversity', '− β · KL']);
  });

  it('clips redteam to [0, 1]: harm 1, rep -0.3 x 0.1, kl -0.1 x 0.2 -> 0.95; all-negative -> 0', () => {
    const l = recipeListing('redteam').lesson!;
    expect(plugFormula(l, sample({ harm: 1, repetition: -0.03, kl: -0.02 }, 0.95)).combined).toBeCloseTo(0.95, 12);
    const zero = plugFormula(l, sample({ harm: 0, repetition: -0.3, kl: -0.01 }, 0));
    expect(zero.combined).toBe(0);
    expect(zero.expression).toBe('clip(0.000 − 0.300 − 0.010, 0, 1) = 0.000');
  });

  it('shows terms without a sum where the recipe aggregates differently', () => {
    const p = plugFormula(
      recipeListing('multiturn').lesson!,
      sample({ safety: 1, utility: 0.5, format: 1, repetition: -0.02 }, 0.71),
    );
    expect(p.combined).toBeNull();
    expect(p.expression).toBe('safety 1.000, utility 0.500, format 1.000, repetition -0.020 → reward 0.710');
  });

  it('reads the latest value of each metric with its own step', () => {
    const rep = (step: number, metrics: Record<string, number>) => ({
      runId: 'r',
      recipe: 'arena',
      step,
      time: 0,
      metrics,
      samples: [],
      timings: { rollout_ms: 0, score_ms: 0, learn_ms: 0, total_ms: 0 },
    });
    let d = initialRunData();
    d = appendReport(d, rep(0, { 'judge/asr': 0.25, 'attacker/diversity_mean': 0.5 }));
    d = appendReport(d, rep(1, { 'judge/asr': 0.75 }));
    const m = latestMetrics(d.runs.r);
    expect(m.step).toBe(1);
    expect(m.metrics['judge/asr']).toEqual({ value: 0.75, step: 1 });
    expect(m.metrics['attacker/diversity_mean']).toEqual({ value: 0.5, step: 0 });
  });
});
