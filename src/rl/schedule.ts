// Learning-rate schedules as pure functions of the optimiser step (Hugging Face / veRL
// get_constant_schedule_with_warmup and get_cosine_schedule_with_warmup).

export interface LrSchedule {
  baseLr: number;
  /** Linear warm-up steps: lr = base x step / warmup for step < warmup (step 0 -> 0, as HF). */
  warmupSteps?: number;
  kind?: 'constant' | 'cosine';
  /** Cosine horizon (total optimiser steps, warm-up included). Required for cosine. */
  totalSteps?: number;
  /** Cosine floor as a share of baseLr (veRL min_lr_ratio). Default 0. */
  minLrRatio?: number;
  /** Cosine cycles (HF num_cycles); 0.5 = one half-cosine from base to floor. */
  numCycles?: number;
}

/**
 * LR at a 0-based step. Cosine: base x (r + (1 - r) x 0.5 (1 + cos(2 pi c p))), p = progress after
 * warm-up, clamped to [0, 1] so the LR stays at the floor past totalSteps.
 */
export function lrAt(step: number, s: LrSchedule): number {
  const warm = s.warmupSteps ?? 0;
  if (step < warm) return (s.baseLr * step) / Math.max(1, warm);
  if ((s.kind ?? 'constant') === 'constant') return s.baseLr;
  if (s.totalSteps === undefined) throw new Error('cosine LR schedule needs totalSteps');
  const r = s.minLrRatio ?? 0;
  const p = Math.min(Math.max((step - warm) / Math.max(1, s.totalSteps - warm), 0), 1);
  const cos = 0.5 * (1 + Math.cos(Math.PI * 2 * (s.numCycles ?? 0.5) * p));
  return s.baseLr * Math.max(0, r + (1 - r) * cos);
}
