import { describe, expect, it } from 'vitest';
import type { RolloutSample } from '../../contract/report';
import { initialRunData, appendReport } from '../../store/runStore';
import { recipeListing } from '../../../dev/test/recipeListings';
import { mulberry32 } from '../../contract/mulberry32';
import { latestMetrics, negativeKlNote, plugFormula } from './liveFormula';

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
    const p = plugFormula(recipeListing('arena').lesson!, sample({ harm: 0.9, diversity: 0.1, kl: -0.02 }, 0.98))!;
    expect(p.combined).toBeCloseTo(0.98, 12);
    expect(p.reported).toBe(0.98);
    expect(p.expression).toBe('0.900 + 0.100 − 0.020 = 0.980');
    expect(p.terms.map((t) => t.name)).toEqual(['harm', 'diversityCoef · diversity', '− β · KL']);
  });

  it('clips redteam to [0, 1]: harm 1, rep -0.3 x 0.1, kl -0.1 x 0.2 -> 0.95; all-negative -> 0', () => {
    const l = recipeListing('redteam').lesson!;
    expect(plugFormula(l, sample({ harm: 1, repetition: -0.03, kl: -0.02 }, 0.95))!.combined).toBeCloseTo(0.95, 12);
    const zero = plugFormula(l, sample({ harm: 0, repetition: -0.3, kl: -0.01 }, 0))!;
    expect(zero.combined).toBe(0);
    expect(zero.expression).toBe('clip(0.000 − 0.300 − 0.010, 0, 1) = 0.000');
  });

  it('shows terms without a sum where the recipe aggregates differently', () => {
    const p = plugFormula(
      recipeListing('multiturn').lesson!,
      sample({ safety: 1, utility: 0.5, format: 1, repetition: -0.02 }, 0.71),
    )!;
    expect(p.combined).toBeNull();
    // Named as the lesson's formula names them (the list above the expression uses the same names).
    expect(p.expression).toBe(
      'mean safety 1.000, mean usefulness 0.500, mean format 1.000, − rp · mean rep3 -0.020 → reward 0.710',
    );
  });

  it('shows enough decimals for the shown numbers to add up (-0.042 - 0.001 = -0.044 read wrong)', () => {
    const arena = recipeListing('arena').lesson!;
    // At 3 decimals: -0.042 + -0.001 = -0.043, but the sum -0.0438 shows as -0.044. At 4 it adds up.
    const p = plugFormula(arena, sample({ harm: -0.0424, kl: -0.0014 }, -0.0438))!;
    expect(p.expression).toBe('-0.0424 − 0.0014 = -0.0438');
    expect(p.terms.map((t) => t.shown)).toEqual(['-0.0424', '-0.0014']);
    // A nonzero term never reads as zero: -0.00002 needs 5 decimals.
    expect(plugFormula(arena, sample({ harm: 0.5, kl: -0.00002 }, 0.49998))!.expression).toBe(
      '0.50000 − 0.00002 = 0.49998',
    );
    // Already adding up at 3 decimals: 3 stay.
    expect(plugFormula(arena, sample({ harm: 0.25, kl: -0.125 }, 0.125))!.decimals).toBe(3);
  });

  it('the numbers shown add up, for 2,000 random rollouts of sums and clipped sums', () => {
    const rand = mulberry32(31);
    for (const recipe of ['arena', 'redteam']) {
      const lesson = recipeListing(recipe).lesson!;
      for (let n = 0; n < 1000; n++) {
        const terms = { harm: rand() * 1.2 - 0.1, repetition: -rand() * 0.05, kl: (rand() - 0.7) * 0.01 };
        const p = plugFormula(lesson, sample(terms, 0))!;
        const shownSum = p.terms.reduce((s, t) => s + Number(t.shown), 0);
        const shownResult = lesson.combine === 'clip01' ? Math.min(1, Math.max(0, shownSum)) : shownSum;
        const written = p.expression.split(' = ')[1];
        expect(Number(written), p.expression).toBeCloseTo(shownResult, p.decimals - 1);
        expect(shownResult.toFixed(p.decimals).replace(/^-(0\.0*)$/, '$1'), p.expression).toBe(written);
      }
    }
  });

  it('has nothing to plug in for a recipe without reward terms (attacker-sft: no "R = → reward 0.000")', () => {
    expect(plugFormula(recipeListing('attacker-sft').lesson!, sample({}, 0))).toBeNull();
  });

  it('says why a sampled KL estimate can be negative, and only when it is', () => {
    expect(negativeKlNote(-0.003)).toMatch(/k1: log π − log π_ref per token.*never negative/);
    expect(negativeKlNote(0.003)).toBeNull();
    expect(negativeKlNote(0)).toBeNull();
  });

  it("names rlhf's terms as the formula does: a positive −β·KL term reads as the negative KL estimate it is", () => {
    const p = plugFormula(recipeListing('rlhf').lesson!, sample({ rm: 0.4, judge: 2.5, kl: 1.51e-7 }, 2.9))!;
    expect(p.expression).toBe('0.5 · clamp(RM) 0.400, J (monitor verdict) 2.500, − β · KL 1.51e-7 → reward 2.900');
    const kl = p.terms.find((t) => t.key === 'kl')!;
    expect(negativeKlNote(-kl.value, kl)).toMatch(
      /^KL below zero: the − β · KL term is \+1\.51e-7, so this rollout's KL estimate is below zero\. /,
    );
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
