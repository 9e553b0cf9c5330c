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
}

export interface PluggedFormula {
  terms: PluggedTerm[];
  /** The terms combined by the lesson's rule (null when the lesson has no such rule). */
  combined: number | null;
  /** The reward the recipe reported for the rollout. */
  reported: number;
  /** "0.800 + 0.200 − 0.004 = 0.996": the arithmetic as shown. */
  expression: string;
}

const fmt = (x: number) => (Math.abs(x) >= 1000 || (x !== 0 && Math.abs(x) < 1e-3) ? x.toExponential(2) : x.toFixed(3));

export function plugFormula(lesson: Lesson, sample: RolloutSample): PluggedFormula {
  const terms: PluggedTerm[] = Object.entries(sample.terms)
    .filter((e): e is [string, number] => typeof e[1] === 'number' && Number.isFinite(e[1]))
    .map(([key, value]) => ({ key, name: lesson.termNames[key] ?? key, value }));
  const sum = terms.reduce((s, t) => s + t.value, 0);
  const combined = lesson.combine === 'sum' ? sum : lesson.combine === 'clip01' ? Math.min(1, Math.max(0, sum)) : null;
  const parts = terms
    .map((t, i) => (i === 0 ? fmt(t.value) : `${t.value < 0 ? '−' : '+'} ${fmt(Math.abs(t.value))}`))
    .join(' ');
  const expression =
    combined === null
      ? `${terms.map((t) => `${t.key} ${fmt(t.value)}`).join(', ')} → reward ${fmt(sample.reward)}`
      : `${lesson.combine === 'clip01' ? `clip(${parts}, 0, 1)` : parts} = ${fmt(combined)}`;
  return { terms, combined, reported: sample.reward, expression };
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
