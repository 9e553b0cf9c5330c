// Token Buncher's TokenNoiser loss for its SFT-on-own-rollouts phase:
//   L_t = (1 - e) (-log p_target) + e sum_v n_v (-log p_v),
// n = noise over the vocabulary with the target zeroed and renormalised to sum 1, e = 0.1.
// It spreads a little probability mass off the target so the defended model's confident
// (low-entropy) answers are not trivially re-sharpened by a harmful fine-tune. Written with tfjs
// ops so it differentiates through log-probs (and through log_softmax to the logits).
import * as tf from '@tensorflow/tfjs';
import { aggLoss } from './aggregate';
import type { LossAggMode } from './types';

export const TOKEN_NOISER_EPSILON = 0.1;

export interface NoiseOptions {
  /** `random` (Token Buncher: uniform U(0,1) per vocabulary entry) or `flat` (1 / (V - 1) each). */
  kind?: 'random' | 'flat';
  /** Seed of the uniform draw, from the run's seed (same seed, same noise). */
  seed?: number;
  /** Raw noise [B, T, V] to use instead of drawing (target still zeroed, then renormalised). */
  raw?: tf.Tensor;
}

/**
 * Noise weights n [B, T, V]: raw noise, target entries zeroed, each row renormalised to sum 1.
 * targets: int32 [B, T] token ids.
 */
export function tokenNoiseWeights(targets: tf.Tensor, vocabSize: number, opts: NoiseOptions = {}): tf.Tensor {
  return tf.tidy(() => {
    const shape = [...targets.shape, vocabSize];
    const raw =
      opts.raw ?? (opts.kind === 'flat' ? tf.ones(shape) : tf.randomUniform(shape, 0, 1, 'float32', opts.seed));
    const notTarget = tf.sub(1, tf.oneHot(tf.cast(targets, 'int32'), vocabSize));
    const n = tf.mul(raw, notTarget);
    // max(., tiny) keeps a V = 1 vocabulary (no off-target entry) at zeros instead of NaN.
    return tf.div(n, tf.maximum(tf.sum(n, -1, true), 1e-12));
  });
}

export interface TokenNoiserOptions extends NoiseOptions {
  /** e, the share of the loss on the noise distribution. Default 0.1. */
  epsilon?: number;
  /** Default token-mean over the mask. */
  lossAggMode?: LossAggMode;
  /** Precomputed weights from tokenNoiseWeights (e.g. to reuse across micro-batches). */
  weights?: tf.Tensor;
}

/**
 * TokenNoiser loss. logp: [B, T, V] log-probabilities (log_softmax of the logits), targets: int32
 * [B, T], mask: [B, T] (Token Buncher: response mask x [advantage >= 0], see positiveAdvantageMask).
 * Returns the aggregated scalar; per token it is -sum_v w_v logp_v with w = (1 - e) onehot + e n.
 */
export function tokenNoiserLoss(
  logp: tf.Tensor,
  targets: tf.Tensor,
  mask: tf.Tensor,
  opts: TokenNoiserOptions = {},
): tf.Scalar {
  const e = opts.epsilon ?? TOKEN_NOISER_EPSILON;
  if (!(e >= 0 && e <= 1)) throw new Error(`TokenNoiser epsilon must be in [0, 1] (got ${e})`);
  const V = logp.shape[logp.rank - 1];
  return tf.tidy(() => {
    const n = opts.weights ?? tokenNoiseWeights(targets, V, opts);
    const onehot = tf.oneHot(tf.cast(targets, 'int32'), V);
    const w = tf.add(tf.mul(1 - e, onehot), tf.mul(e, n));
    const perToken = tf.neg(tf.sum(tf.mul(w, logp), -1));
    return aggLoss(perToken, mask, opts.lossAggMode ?? 'token-mean');
  });
}

/** The LM head as TokenNoiser's hidden-row form reads it: z = h W^T (+ b), W [V, H]. */
export interface HeadWeight {
  weight: { matmul(x: tf.Tensor2D): tf.Tensor2D; inFeatures: number };
  bias: tf.Tensor1D | null;
}

/**
 * TokenNoiser through the final hidden rows, for a pass that gives log p_t and h but no logits
 * (the planned learning step). With z = h W^T + b the logits at temperature 1, sum_v n_v = 1 and
 * lse(z) = z_t - log p_t:
 *   (1 - e)(-log p_t) + e sum_v n_v (-log p_v) = -log p_t + e (z_t - n.z),
 *   z_t - n.z = h.(W_t - n W) + (b_t - n.b)
 * (linear in h). Returns rows = W_t - n W [B, T, H] and offset = b_t - n.b [B, T] (constants).
 * n W comes from the head's own product (the gradient of sum((x W^T) * w) in x is w W), so a
 * quantised head is never densified. targets: int32 [B, T]; n: tokenNoiseWeights [B, T, V].
 */
export function tokenNoiserHeadTerms(
  head: HeadWeight,
  targets: tf.Tensor,
  n: tf.Tensor,
): { rows: tf.Tensor3D; offset: tf.Tensor2D } {
  const [B, T, V] = n.shape;
  const H = head.weight.inFeatures;
  return tf.tidy(() => {
    const w = tf.sub(
      tf.oneHot(tf.reshape(tf.cast(targets, 'int32'), [B * T]), V),
      tf.reshape(n, [B * T, V]),
    ) as tf.Tensor2D;
    const rows = tf.grad((x: tf.Tensor) => tf.sum(tf.mul(head.weight.matmul(x as tf.Tensor2D), w)))(
      tf.zeros([B * T, H]),
    );
    const offset = head.bias ? tf.reshape(tf.matMul(w, tf.reshape(head.bias, [V, 1])), [B, T]) : tf.zeros([B, T]);
    return { rows: tf.reshape(rows, [B, T, H]) as tf.Tensor3D, offset: offset as tf.Tensor2D };
  });
}

/**
 * The TokenNoiser loss of tokenNoiserLoss from log p_t [B, T] and the final hidden rows h [B, T, H]
 * (see tokenNoiserHeadTerms): per token -log p_t + e (h.rows + offset), aggregated as there.
 */
export function tokenNoiserLossFromHidden(
  logp: tf.Tensor,
  hidden: tf.Tensor,
  terms: { rows: tf.Tensor; offset: tf.Tensor },
  mask: tf.Tensor,
  opts: { epsilon?: number; lossAggMode?: LossAggMode } = {},
): tf.Scalar {
  const e = opts.epsilon ?? TOKEN_NOISER_EPSILON;
  if (!(e >= 0 && e <= 1)) throw new Error(`TokenNoiser epsilon must be in [0, 1] (got ${e})`);
  return tf.tidy(() => {
    const noise = tf.add(tf.sum(tf.mul(hidden, terms.rows), -1), terms.offset);
    const perToken = tf.add(tf.neg(logp), tf.mul(e, noise));
    return aggLoss(perToken, mask, opts.lossAggMode ?? 'token-mean');
  });
}
