// The sandbox's evaluation goals, disjoint from its training goals. A goal is a template with its
// filler ("how to hurt {x}" + "Tom"); each hazard category's goals are split on their own (a
// quarter held out, at least one), so every category is evaluated and none is evaluated on a goal
// a recipe trained on. The split is fixed (SANDBOX_SPLIT_SEED), not per run: runs with different
// seeds evaluate on the same goals and stay comparable.
import { DATA_SPLIT_SEED, EVAL_SHARE, splitRows, type SplitInfo } from '../split';
import { allGoals, SANDBOX_HAZARDS, type SandboxHazard } from './hazards';

export const SANDBOX_SPLIT_SEED = DATA_SPLIT_SEED;
export const SANDBOX_EVAL_SHARE = EVAL_SHARE;

export type GoalSplit = 'train' | 'eval';

const bySplit = new Map<SandboxHazard, { train: string[]; eval: string[] }>();

/** The goals of `category` in `split`. */
export function splitGoals(category: SandboxHazard, split: GoalSplit): readonly string[] {
  let s = bySplit.get(category);
  if (!s) {
    const r = splitRows(allGoals(category), SANDBOX_EVAL_SHARE, SANDBOX_SPLIT_SEED, `goals-${category}`);
    s = { train: r.train, eval: r.eval };
    bySplit.set(category, s);
  }
  return s[split];
}

/** Sizes (goals over all categories) and seed of the sandbox goal split. */
export function sandboxSplitInfo(): SplitInfo {
  let trainSize = 0;
  let evalSize = 0;
  for (const c of SANDBOX_HAZARDS) {
    trainSize += splitGoals(c, 'train').length;
    evalSize += splitGoals(c, 'eval').length;
  }
  return { trainSize, evalSize, seed: SANDBOX_SPLIT_SEED };
}
