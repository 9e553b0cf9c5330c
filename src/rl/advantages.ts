// Advantage estimators, one pure function each, registered under veRL's names
// (verl/trainer/ppo/core_algos.py: compute_*_advantage*). CPU [B, T] math: advantages are
// constants of the policy loss, so nothing here needs a gradient.
import { broadcastToTokens, maskRows, sequenceScores } from './placement';
import { maskedWhiten, mean, std } from './stats';
import {
  assertSameShape,
  tokenMatrix,
  type AdvantageEstimatorName,
  type GroupIndex,
  type ScaleRewards,
  type TokenMatrix,
} from './types';

/** veRL GRPO epsilon in (s - mean) / (std + eps). */
export const GRPO_EPS_VERL = 1e-6;
/** TRL GRPOTrainer epsilon (hard-coded 1e-4 there). */
export const GRPO_EPS_TRL = 1e-4;

export interface AdvantageInput {
  /** [B, T] token rewards (outcome score on the last response token, KL penalties, turn rewards). */
  tokenLevelRewards: TokenMatrix;
  /** [B, T] 1 on response tokens that count, 0 elsewhere. */
  responseMask: TokenMatrix;
  /** [B] group id per sequence (same prompt => same id). Needed by grpo, rloo, *_baseline. */
  index?: GroupIndex;
  /** [B, T] critic values V_t (gae only). */
  values?: TokenMatrix;
  /** [B] reward of the greedy rollout per prompt (remax only). */
  rewardBaselines?: ArrayLike<number>;
}

export interface AdvantageConfig {
  /** Discount (reinforce_plus_plus, gae). Default 1. */
  gamma?: number;
  /** GAE lambda. Default 1. */
  lam?: number;
  /** GRPO std epsilon: GRPO_EPS_VERL (default) or GRPO_EPS_TRL. */
  epsilon?: number;
  /** veRL `norm_adv_by_std_in_grpo`; false = Dr. GRPO (s - mean). Default true. */
  normAdvByStd?: boolean;
  /** TRL `scale_rewards` for grpo: std per `group` (default), over the `batch`, or `none`. */
  scaleRewards?: ScaleRewards;
  /** Whiten GAE advantages over the batch (veRL always does). Default true. */
  whiten?: boolean;
  /**
   * Zero the response mask of every row whose group has all-zero advantages, so those rows add
   * nothing to the loss or its token count (the Tinker red-team trainer skips such groups).
   */
  skipZeroAdvantageGroups?: boolean;
}

export interface AdvantageOutput {
  /** [B, T] advantages, 0 on masked positions. */
  advantages: TokenMatrix;
  /** [B, T] returns (value targets for gae; veRL returns the advantages again for outcome estimators). */
  returns: TokenMatrix;
  /** [B, T] the response mask to use in the loss (rows of skipped groups zeroed). */
  mask: TokenMatrix;
  /** [B] 1 where the row belongs to a group whose advantages are all zero. */
  zeroAdvantageRows: Uint8Array;
}

type Estimator = (input: AdvantageInput, config: AdvantageConfig) => { advantages: TokenMatrix; returns: TokenMatrix };

// ---------------------------------------------------------------- groups

/** Row indices per group id, in first-seen order. */
export function groupRows(index: GroupIndex): Map<string | number, number[]> {
  const groups = new Map<string | number, number[]>();
  for (let i = 0; i < index.length; i++) {
    const rows = groups.get(index[i]);
    if (rows) rows.push(i);
    else groups.set(index[i], [i]);
  }
  return groups;
}

function requireIndex(name: string, input: AdvantageInput): GroupIndex {
  if (!input.index) throw new Error(`advantage estimator ${name} needs a group index (one id per sequence)`);
  if (input.index.length !== input.responseMask.rows) {
    throw new Error(
      `advantage estimator ${name}: index has ${input.index.length} ids for ${input.responseMask.rows} rows`,
    );
  }
  return input.index;
}

/**
 * Group mean and Bessel std per row. A group of one gets mean 0, std 1 (veRL rule: a lone sample
 * keeps its raw score as advantage rather than collapsing to 0).
 */
export function groupMeanStd(scores: ArrayLike<number>, index: GroupIndex): { mean: Float64Array; std: Float64Array } {
  const m = new Float64Array(scores.length);
  const s = new Float64Array(scores.length);
  for (const rows of groupRows(index).values()) {
    const vals = rows.map((r) => scores[r]);
    const gm = rows.length > 1 ? mean(vals) : 0;
    const gs = rows.length > 1 ? std(vals) : 1;
    for (const r of rows) {
      m[r] = gm;
      s[r] = gs;
    }
  }
  return { mean: m, std: s };
}

// ---------------------------------------------------------------- scalar (per-sequence) forms

export interface GrpoScalarOptions {
  epsilon?: number;
  normAdvByStd?: boolean;
  scaleRewards?: ScaleRewards;
}

/**
 * GRPO sequence advantages. scores [B], index [B] -> [B].
 * `group` (veRL/TRL default): (s - mean_g) / (std_g + eps). `batch` (TRL): group mean, but one
 * Bessel std over the whole batch. `none` or normAdvByStd=false: s - mean_g (Dr. GRPO; the
 * Tinker red-team trainer). Identical rewards in a group give exactly 0, never NaN.
 */
export function grpoSequenceAdvantages(
  scores: ArrayLike<number>,
  index: GroupIndex,
  opts: GrpoScalarOptions = {},
): Float32Array {
  const eps = opts.epsilon ?? GRPO_EPS_VERL;
  const scale: ScaleRewards = opts.normAdvByStd === false ? 'none' : (opts.scaleRewards ?? 'group');
  const g = groupMeanStd(scores, index);
  const batchStd = scores.length > 1 ? std(scores) : 1;
  const out = new Float32Array(scores.length);
  for (let i = 0; i < scores.length; i++) {
    const centred = scores[i] - g.mean[i];
    out[i] = scale === 'none' ? centred : centred / ((scale === 'batch' ? batchStd : g.std[i]) + eps);
  }
  return out;
}

/**
 * RLOO sequence advantages: n/(n-1) (s_i - mean_g) = s_i - mean of the other n-1 samples.
 * A group of one keeps its raw score (veRL). scores [B], index [B] -> [B].
 */
export function rlooSequenceAdvantages(scores: ArrayLike<number>, index: GroupIndex): Float32Array {
  const out = new Float32Array(scores.length);
  for (const rows of groupRows(index).values()) {
    const n = rows.length;
    const gm = mean(rows.map((r) => scores[r]));
    for (const r of rows) out[r] = n > 1 ? (n / (n - 1)) * (scores[r] - gm) : scores[r];
  }
  return out;
}

// ---------------------------------------------------------------- token-level estimators

/** `grpo`: sequence score = sum of token rewards; GRPO advantage broadcast over the mask. */
export const grpoAdvantage: Estimator = (input, config) => {
  const index = requireIndex('grpo', input);
  const seq = grpoSequenceAdvantages(sequenceScores(input.tokenLevelRewards), index, config);
  const advantages = broadcastToTokens(seq, input.responseMask);
  return { advantages, returns: advantages };
};

/** `rloo`: leave-one-out baseline, broadcast over the mask. */
export const rlooAdvantage: Estimator = (input) => {
  const index = requireIndex('rloo', input);
  const advantages = broadcastToTokens(
    rlooSequenceAdvantages(sequenceScores(input.tokenLevelRewards), index),
    input.responseMask,
  );
  return { advantages, returns: advantages };
};

/**
 * Discounted return G_t = r_t + gamma G_{t+1}, reset to 0 after every masked position so padding
 * (or a masked user turn) never leaks reward into earlier tokens (veRL REINFORCE++ loop).
 */
export function discountedReturns(rewards: TokenMatrix, mask: TokenMatrix, gamma: number): TokenMatrix {
  assertSameShape('discountedReturns', rewards, mask);
  const { rows: B, cols: T } = rewards;
  const out = tokenMatrix(B, T);
  for (let b = 0; b < B; b++) {
    let running = 0;
    for (let t = T - 1; t >= 0; t--) {
      const i = b * T + t;
      running = rewards.data[i] + gamma * running;
      out.data[i] = running;
      running *= mask.data[i];
    }
  }
  return out;
}

/** `reinforce_plus_plus`: discounted returns, whitened over the whole batch, x mask. */
export const reinforcePlusPlusAdvantage: Estimator = (input, config) => {
  const returns = discountedReturns(input.tokenLevelRewards, input.responseMask, config.gamma ?? 1);
  return { advantages: maskedWhiten(returns, input.responseMask), returns };
};

/** `reinforce_plus_plus_baseline`: (s - mean_g) tiled over tokens, then batch-whitened. */
export const reinforcePlusPlusBaselineAdvantage: Estimator = (input) => {
  const index = requireIndex('reinforce_plus_plus_baseline', input);
  const scores = sequenceScores(input.tokenLevelRewards);
  const g = groupMeanStd(scores, index);
  const centred = Array.from(scores, (s, i) => s - g.mean[i]);
  const advantages = maskedWhiten(broadcastToTokens(centred, input.responseMask), input.responseMask);
  return { advantages, returns: advantages };
};

/**
 * `remax`: A_t = sum_{t' >= t} r_t' m_t' - b, b = greedy-rollout reward of the prompt; returns are
 * the reverse cumulative sums. rewardBaselines [B].
 */
export const remaxAdvantage: Estimator = (input) => {
  const { tokenLevelRewards: r, responseMask: m } = input;
  const base = input.rewardBaselines;
  if (!base || base.length !== m.rows)
    throw new Error('advantage estimator remax needs rewardBaselines: one greedy-rollout reward per row');
  const returns = tokenMatrix(m.rows, m.cols);
  const advantages = tokenMatrix(m.rows, m.cols);
  for (let b = 0; b < m.rows; b++) {
    let acc = 0;
    for (let t = m.cols - 1; t >= 0; t--) {
      const i = b * m.cols + t;
      acc += r.data[i] * m.data[i];
      returns.data[i] = acc;
      advantages.data[i] = acc - base[b] * m.data[i];
    }
  }
  return { advantages, returns };
};

/**
 * `gae` (veRL compute_gae_advantage_return): delta_t = r_t + gamma V_next - V_t;
 * A_t = delta_t + gamma lam A_next, where masked positions are skipped (V_next and A_next carry
 * over them). returns = A + V (before whitening); A then batch-whitened. values [B, T].
 */
export const gaeAdvantage: Estimator = (input, config) => {
  const { tokenLevelRewards: r, responseMask: m, values: v } = input;
  if (!v) throw new Error('advantage estimator gae needs values [B, T] from the critic');
  assertSameShape('gae values', v, m);
  const gamma = config.gamma ?? 1;
  const lam = config.lam ?? 1;
  const raw = tokenMatrix(m.rows, m.cols);
  const returns = tokenMatrix(m.rows, m.cols);
  for (let b = 0; b < m.rows; b++) {
    let nextValue = 0;
    let lastGae = 0;
    for (let t = m.cols - 1; t >= 0; t--) {
      const i = b * m.cols + t;
      const mt = m.data[i];
      const delta = r.data[i] + gamma * nextValue - v.data[i];
      const gae = delta + gamma * lam * lastGae;
      nextValue = v.data[i] * mt + (1 - mt) * nextValue;
      lastGae = gae * mt + (1 - mt) * lastGae;
      raw.data[i] = lastGae;
      returns.data[i] = lastGae + v.data[i];
    }
  }
  const advantages = config.whiten === false ? maskAll(raw, m) : maskedWhiten(raw, m);
  return { advantages, returns };
};

function maskAll(x: TokenMatrix, m: TokenMatrix): TokenMatrix {
  const out = tokenMatrix(x.rows, x.cols);
  for (let i = 0; i < x.data.length; i++) out.data[i] = x.data[i] * m.data[i];
  return out;
}

/** Registry keyed by veRL `algorithm.adv_estimator`. */
export const ADVANTAGE_ESTIMATORS: Record<AdvantageEstimatorName, Estimator> = {
  grpo: grpoAdvantage,
  rloo: rlooAdvantage,
  reinforce_plus_plus: reinforcePlusPlusAdvantage,
  reinforce_plus_plus_baseline: reinforcePlusPlusBaselineAdvantage,
  remax: remaxAdvantage,
  gae: gaeAdvantage,
};

/**
 * Flag rows whose whole group has zero advantage on every unmasked token (|A| <= tol).
 * With no index every row is its own group. advantages, mask [B, T] -> [B] flags.
 */
export function zeroAdvantageRows(advantages: TokenMatrix, mask: TokenMatrix, index?: GroupIndex, tol = 0): Uint8Array {
  const B = advantages.rows;
  const T = advantages.cols;
  const rowZero = new Uint8Array(B);
  for (let b = 0; b < B; b++) {
    let zero = 1;
    for (let t = 0; t < T; t++) {
      const i = b * T + t;
      if (mask.data[i] > 0 && Math.abs(advantages.data[i]) > tol) {
        zero = 0;
        break;
      }
    }
    rowZero[b] = zero;
  }
  if (!index) return rowZero;
  const out = new Uint8Array(B);
  for (const rows of groupRows(index).values()) {
    const all = rows.every((r) => rowZero[r] === 1) ? 1 : 0;
    for (const r of rows) out[r] = all;
  }
  return out;
}

/**
 * Run the named estimator, then (optionally) drop all-zero groups from the mask.
 * Throws with the list of names on an unknown estimator.
 */
export function computeAdvantages(
  name: AdvantageEstimatorName,
  input: AdvantageInput,
  config: AdvantageConfig = {},
): AdvantageOutput {
  const estimator = ADVANTAGE_ESTIMATORS[name];
  if (!estimator)
    throw new Error(
      `unknown advantage estimator "${name}"; expected one of ${Object.keys(ADVANTAGE_ESTIMATORS).join(', ')}`,
    );
  assertSameShape(`advantage estimator ${name}`, input.tokenLevelRewards, input.responseMask);
  const { advantages, returns } = estimator(input, config);
  const zeroRows = zeroAdvantageRows(advantages, input.responseMask, input.index);
  const mask = config.skipZeroAdvantageGroups
    ? maskRows(input.responseMask, (b) => zeroRows[b] === 0)
    : input.responseMask;
  return { advantages, returns, mask, zeroAdvantageRows: zeroRows };
}
