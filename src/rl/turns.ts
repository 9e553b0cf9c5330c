// SaFeR-Steer aggregation of per-turn scores s_0..s_{n-1} into one episode score (placed on the
// last valid response token by placeOutcomeRewards).
import type { TurnAggregation } from './types';

export interface TurnAggregationOptions {
  /** min_mean weight a: a min + (1 - a) mean. Default 0.3. */
  minMeanAlpha?: number;
  /** soft_linear slope: w_i = 1 + slope x i. Default 0.1. */
  softLinearSlope?: number;
  /** harmonic floor: each score is max(s, floor) before inverting. Default 0.01. */
  harmonicFloor?: number;
}

/**
 * Aggregate turn scores. Missing scores (null, undefined, NaN) are dropped first; a single score
 * passes through unchanged; no scores at all give 0.
 * - `mean`; `min_mean` = a min + (1 - a) mean (SaFeR default, a = 0.3)
 * - `soft_linear` = sum(w s) / sum(w), w_i = 1 + 0.1 i over the kept scores (later turns weigh more)
 * - `harmonic` = n / sum(1 / max(s_i, 0.01)); `last` = the last kept score
 */
export function aggregateTurnScores(
  scores: ArrayLike<number | null | undefined>,
  mode: TurnAggregation = 'min_mean',
  opts: TurnAggregationOptions = {},
): number {
  const s: number[] = [];
  for (let i = 0; i < scores.length; i++) {
    const v = scores[i];
    if (v !== null && v !== undefined && !Number.isNaN(v)) s.push(v);
  }
  if (s.length === 0) return 0;
  if (s.length === 1) return s[0];
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  switch (mode) {
    case 'mean':
      return mean;
    case 'min_mean': {
      const a = opts.minMeanAlpha ?? 0.3;
      return a * Math.min(...s) + (1 - a) * mean;
    }
    case 'soft_linear': {
      const slope = opts.softLinearSlope ?? 0.1;
      let num = 0;
      let den = 0;
      s.forEach((v, i) => {
        const w = 1 + slope * i;
        num += w * v;
        den += w;
      });
      return num / den;
    }
    case 'harmonic': {
      const floor = opts.harmonicFloor ?? 0.01;
      return s.length / s.reduce((acc, v) => acc + 1 / Math.max(v, floor), 0);
    }
    case 'last':
      return s[s.length - 1];
    default:
      throw new Error(
        `unknown turn aggregation "${String(mode)}"; expected mean, min_mean, soft_linear, harmonic or last`,
      );
  }
}
