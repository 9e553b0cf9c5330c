// The one StepReport shape: what a recipe's step() returns, what the worker posts to the UI, what
// the CLI writes as a JSONL line, and what tests read. Plain JSON-safe data only (stepReport builds one).

/** Metric names are `area/name`, e.g. `reward/mean`, `judge/asr`, `kl/mean`, `entropy/mean`,
 *  `loss/policy`, `loss/value`, `grad/norm`, `dual/lambda`, `perf/tokens_per_s`, `perf/step_ms`. */
export type Metrics = Record<string, number>;

/** Per-token trace of one generated message, for entropy heatmaps. */
export interface TokenTrace {
  ids: number[];
  /** Decoded text of each token (same length as ids). */
  pieces: string[];
  /** Log-prob of each sampled token under the rollout policy. */
  logp: number[];
  /** Entropy of the full next-token distribution at each position (nats). */
  entropy: number[];
  /** Optional top alternatives per position (most likely first). */
  top?: { piece: string; logp: number }[][];
}

export type Role = 'system' | 'attacker' | 'user' | 'defender' | 'assistant' | 'monitor' | 'judge';

export interface Message {
  role: Role;
  text: string;
  /** Present for generated messages; absent for scripted or dataset text. */
  tokens?: TokenTrace;
  /**
   * The model that wrote a message whose token trace is not kept (defend's frozen attacker); a
   * message with neither is scripted or dataset text, and its card says "scripted".
   */
  writtenBy?: string;
  /** Score of this turn (multi-turn recipes). */
  turnScore?: number;
}

/** The reward of one rollout broken into its additive terms (absent terms did not apply). */
export interface RewardTerms {
  harm?: number;
  safety?: number;
  repetition?: number;
  kl?: number;
  entropy?: number;
  utility?: number;
  diversity?: number;
  [term: string]: number | undefined;
}

export interface Verdict {
  /** Judge label as shown to people, e.g. "unsafe S9", "refusal", "benign: correct". */
  label: string;
  /** Probability (or score in [0, 1]) that the response is unsafe. */
  unsafe: number;
  refused: boolean;
  /** Whether the attack succeeded (from the attacker's side). */
  success: boolean;
  /**
   * What `success` means when the rollout is no attack, as shown on its card (minmax: "answer right"
   * / "answer wrong"); absent, the card says "attack succeeded" / "attack failed".
   */
  outcome?: string;
  category?: string | null;
}

export interface RolloutSample {
  id: string;
  /** Stable key of the prompt/goal, so a pinned prompt can be followed across steps. */
  promptKey: string;
  /** GRPO group index within the step. */
  group: number;
  tactic?: string;
  category?: string;
  messages: Message[];
  verdict: Verdict;
  reward: number;
  terms: RewardTerms;
  advantage?: number;
}

export interface StepTimings {
  rollout_ms: number;
  score_ms: number;
  learn_ms: number;
  total_ms: number;
}

export interface StepReport {
  runId: string;
  recipe: string;
  step: number;
  /** Wall-clock time the step finished (ms since epoch). */
  time: number;
  /** Which side trained this step, for alternating recipes (arena, minmax). */
  phase?: string;
  metrics: Metrics;
  /** A few sampled rollouts for the arena view (not every rollout of the step). */
  samples: RolloutSample[];
  timings: StepTimings;
}

/** The report of a run's step `step`, stamped now: runId `<recipe>-<seed>`, `phase` only when given. */
export function stepReport(
  run: { recipe: string; seed: number },
  step: number,
  r: Pick<StepReport, 'phase' | 'metrics' | 'samples' | 'timings'>,
): StepReport {
  return {
    runId: `${run.recipe}-${run.seed}`,
    recipe: run.recipe,
    step,
    time: Date.now(),
    ...(r.phase === undefined ? {} : { phase: r.phase }),
    metrics: r.metrics,
    samples: r.samples,
    timings: r.timings,
  };
}
