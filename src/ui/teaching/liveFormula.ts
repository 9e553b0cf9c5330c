// The reward formula with live values: a rollout's reward terms (as the recipe reported them,
// weights already applied) plugged into the lesson's combination rule, next to the reward the
// recipe reported for it. They agree when the lesson describes the recipe correctly.
import type { RolloutSample } from '../../contract/report';
import type { RunSeries } from '../../store/runStore';
import { ringAt } from '../../store/runStoreSeries';
import type { Lesson } from '../../contract/lesson';

export interface PluggedTerm {
  key: string;
  name: string;
  value: number;
  /** The value as the expression shows it (the same decimals as every other number there). */
  shown: string;
}

export interface PluggedFormula {
  terms: PluggedTerm[];
  /** The terms combined by the lesson's rule (null when the lesson has no such rule). */
  combined: number | null;
  /** The reward the recipe reported for the rollout. */
  reported: number;
  /** "0.800 + 0.200 − 0.004 = 0.996": the arithmetic as shown. */
  expression: string;
  /** Decimals of every number in the expression. */
  decimals: number;
}

const MAX_DECIMALS = 6;

/** `x` with `d` decimals (exponent form past 1000 or below what 6 decimals show); never "-0.000". */
export function fixed(x: number, d: number): string {
  if (x !== 0 && (Math.abs(x) >= 1000 || Math.abs(x) < 0.5 * 10 ** -MAX_DECIMALS)) return x.toExponential(2);
  const s = x.toFixed(d);
  return /^-0\.?0*$/.test(s) ? s.slice(1) : s;
}

/**
 * The fewest decimals (3 or more) at which the numbers on screen add up: each term rounded as
 * shown, combined by the lesson's rule, must show the result. At 3 decimals -0.0424 - 0.0013
 * read "-0.042 - 0.001 = -0.044"; at 4 it reads "-0.0424 - 0.0013 = -0.0437". A nonzero term
 * that would read as zero also asks for more. Past 6 decimals the expression shows the result of
 * the rounded terms (so it still adds up on screen).
 */
export function decimalsFor(values: number[], combine: (xs: number[]) => number): number {
  const truth = combine(values);
  for (let d = 3; d < MAX_DECIMALS; d++) {
    const shown = values.map((x) => Number(fixed(x, d)));
    const hidesTerm = values.some((x, i) => x !== 0 && shown[i] === 0);
    if (!hidesTerm && fixed(combine(shown), d) === fixed(truth, d)) return d;
  }
  return MAX_DECIMALS;
}

const clip01 = (x: number) => Math.min(1, Math.max(0, x));
const sumOf = (xs: number[]) => xs.reduce((s, x) => s + x, 0);

/** The lesson's combination rule plugged with a rollout's terms; null when the rollout has no terms (SFT). */
export function plugFormula(lesson: Lesson, sample: RolloutSample): PluggedFormula | null {
  const raw = Object.entries(sample.terms).filter(
    (e): e is [string, number] => typeof e[1] === 'number' && Number.isFinite(e[1]),
  );
  if (raw.length === 0) return null;
  const values = raw.map(([, v]) => v);
  const rule =
    lesson.combine === 'sum' ? sumOf : lesson.combine === 'clip01' ? (xs: number[]) => clip01(sumOf(xs)) : null;
  const d = rule ? decimalsFor(values, rule) : 3;
  const terms: PluggedTerm[] = raw.map(([key, value]) => ({
    key,
    name: lesson.termNames[key] ?? key,
    value,
    shown: fixed(value, d),
  }));
  const combined = rule ? rule(values) : null;
  const parts = terms
    .map((t, i) => (i === 0 ? t.shown : `${t.value < 0 ? '−' : '+'} ${fixed(Math.abs(t.value), d)}`))
    .join(' ');
  const expression =
    combined === null
      ? `${terms.map((t) => `${t.name} ${t.shown}`).join(', ')} → reward ${fixed(sample.reward, d)}`
      : // The result of the numbers as shown: at the 6-decimal cap they may differ from the exact sum in the last digit.
        `${lesson.combine === 'clip01' ? `clip(${parts}, 0, 1)` : parts} = ${fixed(rule!(terms.map((t) => Number(t.shown))), d)}`;
  return { terms, combined, reported: sample.reward, expression, decimals: d };
}

/**
 * Why a KL value on screen is below zero, or null when it is not. The lab's KL is the sampled k1
 * estimate, log π(token) − log π_ref(token) summed over the tokens of one answer: a single sample
 * can come out negative although the KL itself cannot; its mean over many rollouts is >= 0.
 */
export function negativeKlNote(kl: number, term?: PluggedTerm): string | null {
  if (!(kl < 0)) return null;
  // Name the number on screen: the term is −β · KL, so a positive term is the negative estimate
  // (issue 41: "kl 1.51e-7" read as a positive KL under this note).
  const which = term ? `the ${term.name} term is +${term.shown}, so this rollout's KL estimate is below zero. ` : '';
  return (
    `KL below zero: ${which}The lab estimates KL from the sampled tokens (k1: log π − log π_ref per token), ` +
    'which for one rollout can be negative when the tokens drawn are likelier under the reference; ' +
    'the true KL, and the mean of the estimate over many rollouts, is never negative.'
  );
}

/** The latest value of each metric of a run (with its step: some metrics skip steps), and the latest step. */
export function latestMetrics(s: RunSeries | undefined): {
  step: number | null;
  metrics: Record<string, { value: number; step: number }>;
} {
  const metrics: Record<string, { value: number; step: number }> = {};
  let step: number | null = null;
  if (!s) return { step, metrics };
  for (const [name, ring] of Object.entries(s.metrics)) {
    if (ring.length === 0) continue;
    const p = ringAt(ring, ring.length - 1);
    metrics[name] = { value: p.y, step: p.x };
    if (step === null || p.x > step) step = p.x;
  }
  return { step, metrics };
}
