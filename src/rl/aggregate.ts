// Loss aggregation over a [B, T] per-token loss with a response mask: veRL `agg_loss` modes and
// TRL GRPOTrainer `loss_type`s. Differentiable (tfjs ops).
import * as tf from '@tensorflow/tfjs';
import type { LossAggMode, TrlLossType } from './types';

/** Guards divisions by an empty mask, as veRL masked_mean's + 1e-8: an all-masked batch gives 0. */
const EPS = 1e-8;

export interface AggOptions {
  /** Divisor of `seq-mean-token-sum-norm` (veRL loss_scale_factor); default T. */
  normLength?: number;
}

/**
 * veRL agg_loss. loss, mask: [B, T] -> scalar.
 * - `token-mean`: sum(L m) / sum(m)  (veRL default; long answers weigh more)
 * - `seq-mean-token-sum`: mean over non-empty rows of sum_t L m
 * - `seq-mean-token-mean`: mean over non-empty rows of (sum_t L m / sum_t m)  (original GRPO)
 * - `seq-mean-token-sum-norm`: sum(L m) / normLength (Dr. GRPO; note: not divided by B)
 * - `token-sum`: sum(L m)  (Tinker importance_sampling: no normalisation)
 * Fully masked rows are left out of the seq-mean modes (newer veRL), so they cannot dilute the mean.
 */
export function aggLoss(loss: tf.Tensor, mask: tf.Tensor, mode: LossAggMode, opts: AggOptions = {}): tf.Scalar {
  return tf.tidy(() => {
    const lm = tf.mul(loss, mask);
    switch (mode) {
      case 'token-mean':
        return tf.div(tf.sum(lm), tf.add(tf.sum(mask), EPS)) as tf.Scalar;
      case 'token-sum':
        return tf.sum(lm) as tf.Scalar;
      case 'seq-mean-token-sum':
      case 'seq-mean-token-mean': {
        const count = tf.sum(mask, -1);
        let seq = tf.sum(lm, -1);
        if (mode === 'seq-mean-token-mean') seq = tf.div(seq, tf.add(count, EPS));
        const nonEmpty = tf.cast(tf.greater(count, 0), 'float32');
        return tf.div(tf.sum(tf.mul(seq, nonEmpty)), tf.add(tf.sum(nonEmpty), EPS)) as tf.Scalar;
      }
      case 'seq-mean-token-sum-norm':
        return tf.div(tf.sum(lm), opts.normLength ?? loss.shape[loss.rank - 1]) as tf.Scalar;
      default:
        throw new Error(`unknown loss_agg_mode "${String(mode)}"`);
    }
  });
}

/**
 * TRL GRPOTrainer loss_type. perTokenLoss, mask: [B, T] -> scalar.
 * - `grpo`: mean over ALL rows of sum_t(L m) / max(sum_t m, 1) (an empty row counts as 0: TRL)
 * - `bnpo`: sum(L m) / max(sum m, 1)
 * - `dr_grpo`: sum(L m) / (B x maxCompletionLength)  (maxCompletionLength defaults to T)
 * - `dapo`: sum(L m) / active tokens; on one device this equals bnpo (TRL normalises by the
 *   tokens of the whole global batch across processes).
 */
export function trlLoss(
  perTokenLoss: tf.Tensor,
  mask: tf.Tensor,
  lossType: TrlLossType,
  maxCompletionLength?: number,
): tf.Scalar {
  return tf.tidy(() => {
    const lm = tf.mul(perTokenLoss, mask);
    switch (lossType) {
      case 'grpo':
        return tf.mean(tf.div(tf.sum(lm, -1), tf.maximum(tf.sum(mask, -1), 1))) as tf.Scalar;
      case 'bnpo':
      case 'dapo':
        return tf.div(tf.sum(lm), tf.maximum(tf.sum(mask), 1)) as tf.Scalar;
      case 'dr_grpo': {
        const B = perTokenLoss.shape[0];
        const L = maxCompletionLength ?? perTokenLoss.shape[perTokenLoss.rank - 1];
        return tf.div(tf.sum(lm), B * L) as tf.Scalar;
      }
      default:
        throw new Error(`unknown TRL loss_type "${String(lossType)}"`);
    }
  });
}

/** Masked token mean sum(x m) / sum(m) (0 on an empty mask), for metrics such as clipfrac. */
export function maskedMeanTensor(x: tf.Tensor, mask: tf.Tensor): tf.Scalar {
  return aggLoss(x, mask, 'token-mean');
}
