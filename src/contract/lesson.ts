// A recipe's teaching-mode lesson, as the worker lists it to the page: what the source system does,
// its reward formula (and how a rollout's reward terms combine into it, so the panel can plug the
// latest values in), the weights that appear in it, and what to watch for, each tied to a metric
// where there is one. Each recipe writes its own in src/recipes/<name>/lesson.ts.

/** How a rollout's `terms` (StepReport samples) make its reward. */
export type Combine = 'sum' | 'clip01' | 'none';

export interface Watch {
  text: string;
  /** A metric whose latest value is shown beside the text. */
  metric?: string;
}

export interface Lesson {
  recipe: string;
  title: string;
  /** What the source system does, in two or three sentences. */
  what: string;
  /** The reward, symbolically. */
  formula: string;
  combine: Combine;
  /** True for a recipe trained without a reward (attacker-sft: supervised): no formula to plug values into. */
  noReward?: boolean;
  /** Symbols of the terms the panel plugs in (term key -> what it is). */
  termNames: Record<string, string>;
  /** Config fields that appear in the formula as weights. */
  weights: string[];
  watch: Watch[];
}
