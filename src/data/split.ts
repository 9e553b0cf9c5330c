// Evaluation sets disjoint from training: a seeded split of a list of rows. The same rows, share
// and seed give the same split on every machine, so a resumed run and a re-run evaluate on the
// same rows, and no evaluation row is ever drawn for training.
import { rngFor } from './sandbox/rng';

/** The seed of every evaluation split (fixed, not per run: runs with different seeds stay comparable). */
export const DATA_SPLIT_SEED = 20261124;
/** The share of rows (or sandbox goals) held out for evaluation. */
export const EVAL_SHARE = 0.25;

export interface RowSplit<T> {
  train: T[];
  eval: T[];
  /** What the report states: sizes and the seed of the split. */
  info: SplitInfo;
}

export interface SplitInfo {
  trainSize: number;
  evalSize: number;
  seed: number;
}

/**
 * `evalShare` of the rows (rounded up, at least one when there are two or more, and never all) held
 * out for evaluation, chosen by a Fisher-Yates shuffle seeded by `seed` and `label`; both parts
 * keep the rows' original order.
 */
export function splitRows<T>(rows: readonly T[], evalShare: number, seed: number, label = 'rows'): RowSplit<T> {
  if (!(evalShare > 0 && evalShare < 1)) throw new Error(`splitRows: evalShare must be in (0, 1), got ${evalShare}`);
  const n = rows.length;
  const nEval = n < 2 ? 0 : Math.min(n - 1, Math.max(1, Math.ceil(evalShare * n)));
  const held = new Set(
    rngFor(seed, 'split', label)
      .shuffle(Array.from({ length: n }, (_, i) => i))
      .slice(0, nEval),
  );
  const train: T[] = [];
  const evalRows: T[] = [];
  rows.forEach((r, i) => (held.has(i) ? evalRows : train).push(r));
  return { train, eval: evalRows, info: { trainSize: train.length, evalSize: evalRows.length, seed } };
}

/** The split's sizes and seed as report metrics (`split/train`, `split/eval`, `split/seed`). */
export function splitMetrics(info: SplitInfo, prefix = 'split'): Record<string, number> {
  return { [`${prefix}/train`]: info.trainSize, [`${prefix}/eval`]: info.evalSize, [`${prefix}/seed`]: info.seed };
}
