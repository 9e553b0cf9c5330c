// The shared vocabulary of the RL formula layer: names researchers type (veRL / TRL spelling)
// and one row-major [B, T] matrix type for token-level bookkeeping done on the CPU.
import * as tf from '@tensorflow/tfjs';

/**
 * A [B, T] float matrix, row-major: element (b, t) is data[b * T + t].
 * Used for token rewards, response masks, values and advantages. These are constants of the
 * loss (veRL computes them under no_grad), they arrive on the CPU (judge scores, sampled ids)
 * and the reverse scans of REINFORCE++ / GAE are sequential, so a T-step loop on the CPU beats
 * T tiny GPU dispatches. Convert with `toTensor2D` where the loss needs them.
 */
export interface TokenMatrix {
  readonly data: Float32Array;
  readonly rows: number; // B
  readonly cols: number; // T
}

/** veRL `AdvantageEstimator` names. */
export const ADVANTAGE_ESTIMATOR_NAMES = [
  'grpo',
  'rloo',
  'reinforce_plus_plus',
  'reinforce_plus_plus_baseline',
  'remax',
  'gae',
] as const;
export type AdvantageEstimatorName = (typeof ADVANTAGE_ESTIMATOR_NAMES)[number];

/** veRL `kl_penalty` names; `k1`/`kl`, `k2`/`mse`, `k3`/`low_var_kl` are aliases. */
export const KL_ESTIMATOR_NAMES = ['k1', 'kl', 'abs', 'k2', 'mse', 'k3', 'low_var_kl'] as const;
export type KlEstimatorName = (typeof KL_ESTIMATOR_NAMES)[number];

/**
 * veRL `loss_agg_mode` names, plus `token-sum` (the lab's name for the Tinker
 * `importance_sampling` loss, which sums over tokens with no normalisation).
 */
export const LOSS_AGG_MODES = [
  'token-mean',
  'seq-mean-token-sum',
  'seq-mean-token-mean',
  'seq-mean-token-sum-norm',
  'token-sum',
] as const;
export type LossAggMode = (typeof LOSS_AGG_MODES)[number];

/** TRL `GRPOConfig.loss_type` names. */
export const TRL_LOSS_TYPES = ['grpo', 'bnpo', 'dr_grpo', 'dapo'] as const;
export type TrlLossType = (typeof TRL_LOSS_TYPES)[number];

/** TRL `GRPOConfig.scale_rewards`. */
export type ScaleRewards = 'group' | 'batch' | 'none';

/** Policy-loss names: veRL `vanilla` (PPO clip, dual-clip) and Tinker `importance_sampling`. */
export const POLICY_LOSS_NAMES = ['vanilla', 'importance_sampling'] as const;
export type PolicyLossName = (typeof POLICY_LOSS_NAMES)[number];

/** SaFeR-Steer turn aggregation names (plus `last`). */
export const TURN_AGGREGATIONS = ['mean', 'min_mean', 'soft_linear', 'harmonic', 'last'] as const;
export type TurnAggregation = (typeof TURN_AGGREGATIONS)[number];

/** Repetition metrics: Tinker red-team ratio and SaFeR-Steer rep3. */
export const REPETITION_METRICS = ['tinker', 'safer_rep3'] as const;
export type RepetitionMetric = (typeof REPETITION_METRICS)[number];

/** Group id of each sequence (veRL `index` / TRL consecutive blocks of num_generations). */
export type GroupIndex = ArrayLike<string | number>;

// ---------------------------------------------------------------- TokenMatrix helpers

/** A [rows, cols] matrix filled with `fill`. */
export function tokenMatrix(rows: number, cols: number, fill = 0): TokenMatrix {
  const data = new Float32Array(rows * cols);
  if (fill !== 0) data.fill(fill);
  return { data, rows, cols };
}

/** Build from nested rows; every row must have the same length. */
export function fromRows(rows: ArrayLike<number>[]): TokenMatrix {
  const B = rows.length;
  const T = B === 0 ? 0 : rows[0].length;
  const m = tokenMatrix(B, T);
  for (let b = 0; b < B; b++) {
    if (rows[b].length !== T) throw new Error(`fromRows: row ${b} has length ${rows[b].length}, expected ${T}`);
    for (let t = 0; t < T; t++) m.data[b * T + t] = rows[b][t];
  }
  return m;
}

/** Nested plain arrays (for tests, logs and the UI). */
export function toRows(m: TokenMatrix): number[][] {
  const out: number[][] = [];
  for (let b = 0; b < m.rows; b++) out.push(Array.from(m.data.subarray(b * m.cols, (b + 1) * m.cols)));
  return out;
}

/** Upload as a float32 [B, T] tensor (caller disposes). */
export function toTensor2D(m: TokenMatrix): tf.Tensor2D {
  return tf.tensor2d(m.data, [m.rows, m.cols], 'float32');
}

/**
 * Read a [B, T] tensor back. Asynchronous on purpose: tfjs-webgpu's synchronous readback goes
 * through an OffscreenCanvas and lost the device in Chromium here (SwiftShader, in a worker).
 */
export async function fromTensor2D(t: tf.Tensor): Promise<TokenMatrix> {
  if (t.rank !== 2) throw new Error(`fromTensor2D: expected rank 2, got shape [${t.shape.join(', ')}]`);
  const [rows, cols] = t.shape as [number, number];
  return { data: Float32Array.from(await t.data()), rows, cols };
}

/** Throws unless a and b have the same [B, T]. */
export function assertSameShape(what: string, a: TokenMatrix, b: TokenMatrix): void {
  if (a.rows !== b.rows || a.cols !== b.cols) {
    throw new Error(`${what}: shape [${a.rows}, ${a.cols}] does not match [${b.rows}, ${b.cols}]`);
  }
}
