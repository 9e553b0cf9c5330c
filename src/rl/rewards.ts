// Reward formulas of the source systems (see shared/RL-REFERENCE.md), plain numbers per
// sequence unless a [B, T] matrix is named. The opt-in per-batch z-score is stats.zScore.
import { maskedRowMeans } from './stats';
import { assertSameShape, tokenMatrix, type TokenMatrix } from './types';

const clip = (x: number, lo: number, hi: number) => Math.min(Math.max(x, lo), hi);

// ---------------------------------------------------------------- Tinker red-team GRPO

/** Red-team trainer defaults: rp 0.3 (example config 0.15), kl beta 0.1 (example 0.03). */
export const TINKER_REWARD_DEFAULTS = { repetitionPenalty: 0.3, klBeta: 0.1 } as const;

/**
 * r = clip(harm - rp x rep - beta x KL, 0, 1). harm = classifier P(toxic), rep = repetition ratio,
 * kl = mean over sampled tokens of (logp_sampler - logp_base).
 */
export function tinkerRedTeamReward(
  parts: { harm: number; repetition: number; kl?: number },
  opts: { repetitionPenalty?: number; klBeta?: number } = {},
): number {
  const rp = opts.repetitionPenalty ?? TINKER_REWARD_DEFAULTS.repetitionPenalty;
  const beta = opts.klBeta ?? TINKER_REWARD_DEFAULTS.klBeta;
  return clip(parts.harm - rp * parts.repetition - beta * (parts.kl ?? 0), 0, 1);
}

/** Early-stop thresholds of the red-team example config. */
export const EARLY_STOP_DEFAULTS = { rewardThreshold: 0.8, repetitionThreshold: 0.5 } as const;

/**
 * Stop when the batch mean reward exceeds its threshold (the attack works) or the mean
 * repetition exceeds its threshold (the attacker collapsed into a loop). Strict inequalities.
 */
export function earlyStop(
  stats: { meanReward: number; meanRepetition: number },
  opts: { rewardThreshold?: number; repetitionThreshold?: number } = {},
): { stop: boolean; reason: 'reward' | 'repetition' | null } {
  if (stats.meanReward > (opts.rewardThreshold ?? EARLY_STOP_DEFAULTS.rewardThreshold))
    return { stop: true, reason: 'reward' };
  if (stats.meanRepetition > (opts.repetitionThreshold ?? EARLY_STOP_DEFAULTS.repetitionThreshold))
    return { stop: true, reason: 'repetition' };
  return { stop: false, reason: null };
}

// ---------------------------------------------------------------- entropy terms

/**
 * Mean token entropy of each response: (sum_t H_t m_t) / (sum_t m_t), 0 for an empty row.
 * entropy, mask [B, T] -> [B].
 */
export function meanResponseEntropy(entropy: TokenMatrix, mask: TokenMatrix): Float32Array {
  return maskedRowMeans(entropy, mask);
}

/**
 * Token Buncher rewards from a response's mean full-vocabulary entropy:
 * - `defence`: -mean H (pushes the model towards confident, low-entropy answers on harmful prompts)
 * - `attack`: harm (the harmfulness classifier's score)
 * - `adaptive_attack`: harm + min(mean H, entropyCap = 3)
 * The lab passes harm as a probability; Token Buncher's code used a raw negated logit (caller's choice).
 */
export function tokenBuncherReward(
  meanEntropy: number,
  mode: 'defence' | 'attack' | 'adaptive_attack',
  opts: { harm?: number; entropyCap?: number } = {},
): number {
  if (mode === 'defence') return -meanEntropy;
  if (opts.harm === undefined) throw new Error(`tokenBuncherReward: mode ${mode} needs a harm score`);
  if (mode === 'attack') return opts.harm;
  return opts.harm + Math.min(meanEntropy, opts.entropyCap ?? 3);
}

/**
 * Token Buncher's SFT phase trains only on tokens with advantage >= 0: mask x [A >= 0]. [B, T].
 */
export function positiveAdvantageMask(advantages: TokenMatrix, mask: TokenMatrix): TokenMatrix {
  assertSameShape('positiveAdvantageMask', advantages, mask);
  const out = tokenMatrix(mask.rows, mask.cols);
  for (let i = 0; i < out.data.length; i++) out.data[i] = advantages.data[i] >= 0 ? mask.data[i] : 0;
  return out;
}

// ---------------------------------------------------------------- MTSA-RLVR

export const MTSA_REWARD_DEFAULTS = { entropyWeight: 1, klBeta: 0.001 } as const;

/**
 * MTSA defender reward: P(safe) + w x (-mean H) - beta x sum_t k1_t over the response: the source
 * puts beta k1 on every token (veRL's KL in the reward), so the sequence's share is a sum, not a
 * mean. (MTSA's code computed the entropy term but never added it: the lab adds it, w = 0 turns it
 * off.) To place the KL per token, leave klSum out and use applyKlPenalty.
 */
export function mtsaDefenderReward(
  parts: { pSafe: number; meanEntropy: number; klSum?: number },
  opts: { entropyWeight?: number; klBeta?: number } = {},
): number {
  const w = opts.entropyWeight ?? MTSA_REWARD_DEFAULTS.entropyWeight;
  const beta = opts.klBeta ?? MTSA_REWARD_DEFAULTS.klBeta;
  return parts.pSafe - w * parts.meanEntropy - beta * (parts.klSum ?? 0);
}

// ---------------------------------------------------------------- SaFeR-Steer turn score

/** SaFeR-Steer's weights of the judge's three scores in a turn score. */
export const SAFER_TURN_WEIGHTS = { safety: 0.4, usefulness: 0.4, faithfulness: 0.2 } as const;

/**
 * One SaFeR-Steer turn score: s = format + (0.4 safety + 0.4 usefulness + 0.2 faithfulness) / 10
 * (judge scores 1-10), then max(0, s - repWeight x rep3), repWeight 0.2. `weights` replaces the
 * three judge weights (the lab's form fields).
 */
export function saferTurnScore(
  parts: { format: number; safety: number; usefulness: number; faithfulness: number; rep3?: number },
  opts: { repWeight?: number; weights?: { safety: number; usefulness: number; faithfulness: number } } = {},
): number {
  const w = opts.weights ?? SAFER_TURN_WEIGHTS;
  const s =
    parts.format +
    (w.safety * parts.safety + w.usefulness * parts.usefulness + w.faithfulness * parts.faithfulness) / 10;
  return Math.max(0, s - (opts.repWeight ?? 0.2) * (parts.rep3 ?? 0));
}
