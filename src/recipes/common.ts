// Pieces several recipes share: token traces, verdicts and row choices for the report, the
// non-finite reward check, the outcome-reward learning step, seeded batch draws, freeing a run.
// (Schema fields the recipes share: commonFields.ts; sampled rollouts: rollout.ts.)
import type { JudgeVerdict } from '../judges/types.ts';
import type { LlamaModel } from '../model/llama.ts';
import type { LoraSet } from '../model/lora.ts';
import { computeAdvantages, type AdvantageOutput } from '../rl/advantages.ts';
import type { AdamW } from '../rl/optim.ts';
import { placeOutcomeRewards } from '../rl/placement.ts';
import { learnStep } from '../rl/trainer.ts';
import { fromRows, type AdvantageEstimatorName, type KlEstimatorName, type TokenMatrix } from '../rl/types.ts';
import type { Metrics, TokenTrace, Verdict } from './report.ts';
import type { ChatCodec } from './types.ts';

/** The per-token trace of generated ids, for the report's entropy heatmaps. */
export function tokenTrace(codec: ChatCodec, ids: number[], logp: number[], entropy: number[]): TokenTrace {
  return { ids, pieces: codec.pieces(ids), logp, entropy };
}

export const meanOf = (xs: ArrayLike<number>): number => {
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += xs[i];
  return xs.length ? s / xs.length : 0;
};

/** The report's verdict of a harm judgement: the attack succeeded when the judge calls the answer unsafe (>= 0.5). */
export function harmVerdict(v: JudgeVerdict): Verdict {
  return { label: v.label, unsafe: v.unsafe, refused: v.refused, success: v.unsafe >= 0.5, category: v.category };
}

/** Rows to show in a report: the first row of each group first, then the rest; n of them. */
export function spreadRows(groups: number, groupSize: number, n: number): number[] {
  const B = groups * groupSize;
  const firsts = Array.from({ length: groups }, (_, i) => i * groupSize);
  const rest = Array.from({ length: B }, (_, r) => r).filter((r) => r % groupSize !== 0);
  return [...firsts, ...rest].slice(0, Math.min(n, B));
}

/** What a GRPO-style recipe needs to learn from one score per rollout. */
export interface OutcomeLearning {
  advantage: AdvantageEstimatorName;
  normAdvByStd: boolean;
  policyLoss: 'importance_sampling' | 'ppo';
  clipRatio: number;
  maxGradNorm: number;
  lr: number;
  /** Sampling temperature of the rollout (the policy's log-probs are taken at it). */
  temperature: number;
  /** KL to the reference as a loss term (SaFeR-Steer: k3, 0.001). Default none (k1, coef 0: metric only). */
  kl?: { estimator: KlEstimatorName; coef: number };
}

/** The rollout a learning step reads: prompts, sampled responses and their rollout log-probs. */
export interface LearnRollout {
  prompts: number[][];
  responses: number[][];
  mask: number[][];
  logprobs: number[][];
  /** Tokens the policy wrote, when not all of `mask` (multi-turn rows attend to user turns that must not learn). */
  policyMask?: number[][];
}

/**
 * Scores -> outcome rewards on each response's last token -> group advantages (all-zero groups
 * skipped) -> one learnStep on the LoRA. The rollout's log-probs are the old policy's.
 */
export async function learnFromOutcomes(
  learner: { model: LlamaModel; lora: LoraSet; optimizer: AdamW },
  rollout: LearnRollout,
  refLogp: TokenMatrix | undefined,
  scores: number[],
  groupIndex: number[],
  c: OutcomeLearning,
  padTokenId: number,
): Promise<{ advantages: AdvantageOutput; learn: Metrics }> {
  const mask = fromRows(rollout.policyMask ?? rollout.mask);
  return learnFromTokenRewards(learner, rollout, refLogp, placeOutcomeRewards(scores, mask), groupIndex, c, padTokenId);
}

/** learnFromOutcomes with the rewards already placed on the token grid ([B, T], e.g. one per turn). */
export async function learnFromTokenRewards(
  learner: { model: LlamaModel; lora: LoraSet; optimizer: AdamW },
  rollout: LearnRollout,
  refLogp: TokenMatrix | undefined,
  tokenLevelRewards: TokenMatrix,
  groupIndex: number[],
  c: OutcomeLearning,
  padTokenId: number,
): Promise<{ advantages: AdvantageOutput; learn: Metrics }> {
  const mask = fromRows(rollout.policyMask ?? rollout.mask);
  const advantages = computeAdvantages(
    c.advantage,
    { tokenLevelRewards, responseMask: mask, index: groupIndex },
    { normAdvByStd: c.normAdvByStd, skipZeroAdvantageGroups: true },
  );
  const learn = await learnStep(
    learner,
    {
      prompts: rollout.prompts,
      responses: rollout.responses,
      mask: rollout.mask,
      oldLogp: fromRows(rollout.logprobs),
      refLogp,
      advantages: advantages.advantages,
      lossMask: advantages.mask,
    },
    {
      policyLoss: c.policyLoss,
      clipRatioLow: c.clipRatio,
      clipRatioHigh: c.clipRatio,
      maxGradNorm: c.maxGradNorm,
      temperature: c.temperature,
      padTokenId,
      kl: c.kl ?? { estimator: 'k1', coef: 0 },
    },
    c.lr,
  );
  return { advantages, learn };
}

/**
 * `size` items of `pool` for one step: a seeded partial Fisher-Yates draw (distinct while the
 * pool allows), topped up by cycling through the pool when it is smaller than `size`.
 */
export function drawBatch<T>(pool: readonly T[], size: number, rng: { int(n: number): number }): T[] {
  const N = pool.length;
  const n = Math.min(size, N);
  const idx = Array.from({ length: N }, (_, i) => i);
  for (let i = 0; i < n; i++) {
    const j = i + rng.int(N - i);
    [idx[i], idx[j]] = [idx[j], idx[i]];
  }
  const out = idx.slice(0, n).map((i) => pool[i]);
  while (out.length < size) out.push(pool[out.length % N]);
  return out;
}

/**
 * Frees a run: each adapter's optimiser state and adapter, then what else it holds, in order
 * (judge, models; an absent one or one without dispose is skipped).
 */
export function disposeRun(adapters: readonly { optimizer: AdamW; lora: LoraSet }[], ...held: ({ dispose?: () => void } | null | undefined)[]): void {
  for (const a of adapters) {
    a.optimizer.dispose();
    a.lora.dispose();
  }
  for (const h of held) h?.dispose?.();
}

/** Throws on the first row whose reward is not finite: `<recipe>: reward of row b is x (<detail(b)>)`. */
export function checkFiniteRewards(recipe: string, rewards: readonly number[], detail: (b: number) => string): void {
  rewards.forEach((x, b) => {
    if (!Number.isFinite(x)) throw new Error(`${recipe}: reward of row ${b} is ${x} (${detail(b)})`);
  });
}
