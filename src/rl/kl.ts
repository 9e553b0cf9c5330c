// KL estimators between the current policy and the reference (LoRA off), veRL `kl_penalty`
// names, and the fixed / adaptive KL coefficient controllers (veRL core_algos, from Ziegler et al.).
import * as tf from '@tensorflow/tfjs';
import { assertSameShape, tokenMatrix, type KlEstimatorName, type TokenMatrix } from './types';

/** Clamp range of the k3 exponent and of its result (veRL `low_var_kl`). */
export const K3_EXP_CLAMP = 20;
export const K3_OUT_CLAMP = 10;

type KlFn = (logp: tf.Tensor, ref: tf.Tensor) => tf.Tensor;

/** k1 (`kl`): logp - ref. Unbiased, high variance, can be negative per token. */
const k1: KlFn = (logp, ref) => tf.sub(logp, ref);
/** `abs`: |logp - ref|. */
const absKl: KlFn = (logp, ref) => tf.abs(tf.sub(logp, ref));
/** k2 (`mse`): (logp - ref)^2 / 2. */
const k2: KlFn = (logp, ref) => tf.mul(0.5, tf.square(tf.sub(logp, ref)));
/**
 * k3 (`low_var_kl`, Schulman's estimator): k = clamp(ref - logp, -20, 20);
 * exp(k) - k - 1, clamped to [-10, 10]. Non-negative, low variance.
 */
const k3: KlFn = (logp, ref) =>
  tf.tidy(() => {
    const k = tf.clipByValue(tf.sub(ref, logp), -K3_EXP_CLAMP, K3_EXP_CLAMP);
    return tf.clipByValue(tf.sub(tf.sub(tf.exp(k), k), 1), -K3_OUT_CLAMP, K3_OUT_CLAMP);
  });

/** Registry keyed by veRL `kl_penalty` / `kl_loss_type`, aliases included. */
export const KL_ESTIMATORS: Record<KlEstimatorName, KlFn> = {
  k1,
  kl: k1,
  abs: absKl,
  k2,
  mse: k2,
  k3,
  low_var_kl: k3,
};

/**
 * Per-token KL estimate, differentiable in logp. logp, ref: [B, T] (any equal shapes) -> same shape.
 * Throws naming the valid estimators on an unknown name.
 */
export function klPenalty(logp: tf.Tensor, ref: tf.Tensor, name: KlEstimatorName): tf.Tensor {
  const fn = KL_ESTIMATORS[name];
  if (!fn) throw new Error(`unknown KL estimator "${name}"; expected one of ${Object.keys(KL_ESTIMATORS).join(', ')}`);
  return fn(logp, ref);
}

/** The same estimators on plain numbers (for rewards built on the CPU). */
export function klPenaltyValue(logp: number, ref: number, name: KlEstimatorName): number {
  const x = logp - ref;
  switch (name) {
    case 'k1':
    case 'kl':
      return x;
    case 'abs':
      return Math.abs(x);
    case 'k2':
    case 'mse':
      return 0.5 * x * x;
    case 'k3':
    case 'low_var_kl': {
      const k = Math.min(Math.max(-x, -K3_EXP_CLAMP), K3_EXP_CLAMP);
      return Math.min(Math.max(Math.exp(k) - k - 1, -K3_OUT_CLAMP), K3_OUT_CLAMP);
    }
    default:
      throw new Error(`unknown KL estimator "${String(name)}"`);
  }
}

/**
 * KL in the reward (veRL apply_kl_penalty): r_t = score_t - beta kl_t m_t.
 * Also returns the batch KL the adaptive controller reads: mean over rows of each row's masked
 * token mean (rows with no tokens count as 0). tokenScores, kl, mask: [B, T].
 */
export function applyKlPenalty(
  tokenScores: TokenMatrix,
  kl: TokenMatrix,
  mask: TokenMatrix,
  beta: number,
): { rewards: TokenMatrix; currentKl: number } {
  assertSameShape('applyKlPenalty', tokenScores, kl);
  assertSameShape('applyKlPenalty', tokenScores, mask);
  const { rows: B, cols: T } = mask;
  const rewards = tokenMatrix(B, T);
  let sumOfRowMeans = 0;
  for (let b = 0; b < B; b++) {
    let s = 0;
    let n = 0;
    for (let t = 0; t < T; t++) {
      const i = b * T + t;
      const kld = kl.data[i] * mask.data[i];
      rewards.data[i] = tokenScores.data[i] - beta * kld;
      s += kld;
      n += mask.data[i];
    }
    sumOfRowMeans += n > 0 ? s / n : 0;
  }
  return { rewards, currentKl: B > 0 ? sumOfRowMeans / B : 0 };
}

// ---------------------------------------------------------------- controllers

/** veRL FixedKLController / AdaptiveKLController state, as a plain record. */
export type KlController =
  { kind: 'fixed'; value: number } | { kind: 'adaptive'; value: number; target: number; horizon: number };

/** Defaults of veRL `algorithm.kl_ctrl`: coef 0.001, target 0.1, horizon 10000. */
export const KL_CTRL_DEFAULTS = { klCoef: 0.001, targetKl: 0.1, horizon: 10000 } as const;

export function fixedKlController(value: number = KL_CTRL_DEFAULTS.klCoef): KlController {
  return { kind: 'fixed', value };
}

export function adaptiveKlController(
  value: number = KL_CTRL_DEFAULTS.klCoef,
  target: number = KL_CTRL_DEFAULTS.targetKl,
  horizon: number = KL_CTRL_DEFAULTS.horizon,
): KlController {
  if (!(target > 0) || !(horizon > 0))
    throw new Error(`adaptive KL controller needs target > 0 and horizon > 0 (got ${target}, ${horizon})`);
  return { kind: 'adaptive', value, target, horizon };
}

/**
 * One controller update (pure): adaptive beta <- beta (1 + clip(KL/target - 1, -0.2, 0.2) n / horizon);
 * fixed returns itself. nSteps = samples (veRL passes the batch size) since the last update.
 */
export function updateKlController(ctrl: KlController, currentKl: number, nSteps: number): KlController {
  if (ctrl.kind === 'fixed') return ctrl;
  const err = Math.min(Math.max(currentKl / ctrl.target - 1, -0.2), 0.2);
  return { ...ctrl, value: ctrl.value * (1 + (err * nSteps) / ctrl.horizon) };
}
