// Policy and value losses (veRL core_algos compute_policy_loss_vanilla / compute_value_loss,
// Tinker `importance_sampling`), entropy from logits and the entropy bonus. tfjs ops throughout
// so gradients flow to logp (and through it to the LoRA variables).
import * as tf from '@tensorflow/tfjs';
import { untaped } from '../engine';
import { aggLoss, maskedMeanTensor, type AggOptions } from './aggregate';
import type { LossAggMode, PolicyLossName } from './types';

/** |logp - old| is clamped to this before exp (veRL), so a stale batch cannot overflow the ratio. */
export const LOG_RATIO_CLAMP = 20;

/** ratio = exp(clamp(logp - old, -20, 20)). logp, old: [B, T] -> [B, T]. */
export function importanceRatio(logp: tf.Tensor, oldLogp: tf.Tensor): tf.Tensor {
  return tf.tidy(() => tf.exp(tf.clipByValue(tf.sub(logp, oldLogp), -LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)));
}

export interface PolicyLossInput {
  /** [B, T] log-probs of the sampled tokens under the current policy (differentiable). */
  logp: tf.Tensor;
  /**
   * [B, T] log-probs under the rollout policy: a constant tensor recorded at rollout time (tfjs has
   * no detach; a tensor computed from logp inside the gradient function would cancel the gradient).
   */
  oldLogp: tf.Tensor;
  /** [B, T] advantages (constants). */
  advantages: tf.Tensor;
  /** [B, T] response mask. */
  mask: tf.Tensor;
}

export interface PolicyLossConfig {
  /** eps_low in clip(ratio, 1 - eps_low, 1 + eps_high). Default 0.2. */
  clipRatioLow?: number;
  /** eps_high; raise it for DAPO "clip-higher". Default 0.2. */
  clipRatioHigh?: number;
  /** Dual-clip constant c > 1, applied only where A < 0. Default 3. Infinity disables it. */
  clipRatioC?: number;
  /** Default: `token-mean` for vanilla, `token-sum` for importance_sampling. */
  lossAggMode?: LossAggMode;
  aggOptions?: AggOptions;
}

export interface PolicyLossOutput {
  /** Scalar loss to minimise. */
  loss: tf.Scalar;
  /** [B, T] per-token loss before aggregation. */
  perToken: tf.Tensor;
  /** Share of masked tokens where the clipped branch was taken (veRL pg_clipfrac). */
  clipFrac: tf.Scalar;
  /** Share of masked tokens where dual-clip bound the loss (A < 0 and ratio beyond c). */
  clipFracLower: tf.Scalar;
  /** Masked mean of old - logp (veRL ppo_kl). */
  approxKl: tf.Scalar;
  // The three statistics are computed with the tape paused (untaped): no gradient flows from them.
}

export const PPO_DEFAULTS = { clipRatioLow: 0.2, clipRatioHigh: 0.2, clipRatioC: 3 } as const;

/**
 * PPO clipped surrogate with dual clip (veRL `vanilla`):
 * L = max(-A r, -A clip(r, 1 - eps_low, 1 + eps_high)); where A < 0, L = min(L, -c A).
 * Shapes [B, T]; loss aggregated by lossAggMode (default token-mean).
 */
export function ppoClipLoss(input: PolicyLossInput, config: PolicyLossConfig = {}): PolicyLossOutput {
  const low = config.clipRatioLow ?? PPO_DEFAULTS.clipRatioLow;
  const high = config.clipRatioHigh ?? PPO_DEFAULTS.clipRatioHigh;
  const c = config.clipRatioC ?? PPO_DEFAULTS.clipRatioC;
  if (!(c > 1)) throw new Error(`dual-clip constant clipRatioC must be > 1 (got ${c})`);
  return tf.tidy(() => {
    const { logp, oldLogp, advantages: A, mask } = input;
    const ratio = importanceRatio(logp, oldLogp);
    const negA = tf.neg(A);
    const l1 = tf.mul(negA, ratio);
    const l2 = tf.mul(negA, tf.clipByValue(ratio, 1 - low, 1 + high));
    const clipped = tf.maximum(l1, l2);
    const l3 = tf.mul(negA, c);
    const dual = tf.minimum(clipped, l3);
    const isNeg = tf.less(A, 0);
    const perToken = tf.where(isNeg, dual, clipped);
    const loss = aggLoss(perToken, mask, config.lossAggMode ?? 'token-mean', config.aggOptions);
    return untaped(() => ({
      loss,
      perToken,
      clipFrac: maskedMeanTensor(tf.cast(tf.greater(l2, l1), 'float32'), mask),
      clipFracLower: maskedMeanTensor(tf.cast(tf.logicalAnd(tf.greater(clipped, l3), isNeg), 'float32'), mask),
      approxKl: maskedMeanTensor(tf.sub(oldLogp, logp), mask),
    }));
  });
}

/**
 * Tinker `importance_sampling`: L_t = -r_t A_t, no clip; summed over tokens by default
 * (`token-sum`: no normalisation). Shapes [B, T].
 */
export function importanceSamplingLoss(input: PolicyLossInput, config: PolicyLossConfig = {}): PolicyLossOutput {
  return tf.tidy(() => {
    const { logp, oldLogp, advantages: A, mask } = input;
    const perToken = tf.neg(tf.mul(importanceRatio(logp, oldLogp), A));
    const loss = aggLoss(perToken, mask, config.lossAggMode ?? 'token-sum', config.aggOptions);
    return {
      loss,
      perToken,
      clipFrac: tf.scalar(0),
      clipFracLower: tf.scalar(0),
      approxKl: untaped(() => maskedMeanTensor(tf.sub(oldLogp, logp), mask)),
    };
  });
}

/** Registry keyed by veRL `policy_loss.loss_mode` (vanilla) and Tinker's loss name. */
export const POLICY_LOSSES: Record<
  PolicyLossName,
  (input: PolicyLossInput, config?: PolicyLossConfig) => PolicyLossOutput
> = {
  vanilla: ppoClipLoss,
  importance_sampling: importanceSamplingLoss,
};

export function computePolicyLoss(
  name: PolicyLossName,
  input: PolicyLossInput,
  config: PolicyLossConfig = {},
): PolicyLossOutput {
  const fn = POLICY_LOSSES[name];
  if (!fn) throw new Error(`unknown policy loss "${name}"; expected one of ${Object.keys(POLICY_LOSSES).join(', ')}`);
  return fn(input, config);
}

/**
 * Clipped value loss (veRL compute_value_loss):
 * 0.5 agg(max((V - R)^2, (clip(V, V_old - c, V_old + c) - R)^2)), c = cliprangeValue (0.5).
 * vpreds, returns, oldValues, mask: [B, T]. clipFrac = share where the clipped term is larger.
 */
export function valueLoss(
  vpreds: tf.Tensor,
  returns: tf.Tensor,
  oldValues: tf.Tensor,
  mask: tf.Tensor,
  cliprangeValue = 0.5,
  lossAggMode: LossAggMode = 'token-mean',
): { loss: tf.Scalar; clipFrac: tf.Scalar } {
  return tf.tidy(() => {
    const vClipped = tf.add(oldValues, tf.clipByValue(tf.sub(vpreds, oldValues), -cliprangeValue, cliprangeValue));
    const l1 = tf.square(tf.sub(vpreds, returns));
    const l2 = tf.square(tf.sub(vClipped, returns));
    const loss = tf.mul(0.5, aggLoss(tf.maximum(l1, l2), mask, lossAggMode)) as tf.Scalar;
    return { loss, clipFrac: maskedMeanTensor(tf.cast(tf.greater(l2, l1), 'float32'), mask) };
  });
}

/**
 * Full-vocabulary entropy per position: H = logsumexp(z) - sum softmax(z) z.
 * logits [..., V] -> [...]. Differentiable (the entropy bonus needs its gradient).
 */
export function entropyFromLogits(logits: tf.Tensor): tf.Tensor {
  return tf.tidy(() => {
    const lse = tf.logSumExp(logits, -1);
    const p = tf.softmax(logits, -1);
    return tf.sub(lse, tf.sum(tf.mul(p, logits), -1));
  });
}

export interface ActorLossTerms {
  /** Aggregated policy-gradient loss. */
  pgLoss: tf.Scalar;
  mask: tf.Tensor;
  lossAggMode?: LossAggMode;
  /** [B, T] entropy; with entropyCoeff > 0 the loss gets - coeff agg(H) (veRL entropy_coeff, 0 default). */
  entropy?: tf.Tensor;
  entropyCoeff?: number;
  /** [B, T] KL estimate to the reference; the loss gets + klLossCoef agg(kl) (veRL kl_loss_coef with use_kl_loss / TRL beta). */
  kl?: tf.Tensor;
  klLossCoef?: number;
}

/** Actor objective = pg - entropyCoeff agg(H) + klLossCoef agg(kl), same aggregation for all terms. */
export function actorLoss(terms: ActorLossTerms): tf.Scalar {
  return tf.tidy(() => {
    const mode = terms.lossAggMode ?? 'token-mean';
    let loss: tf.Scalar = terms.pgLoss;
    if (terms.entropy && terms.entropyCoeff)
      loss = tf.sub(loss, tf.mul(terms.entropyCoeff, aggLoss(terms.entropy, terms.mask, mode)));
    if (terms.kl && terms.klLossCoef)
      loss = tf.add(loss, tf.mul(terms.klLossCoef, aggLoss(terms.kl, terms.mask, mode)));
    return loss;
  });
}
