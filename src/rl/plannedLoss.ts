// The loss side of the planned learning step. The formulas are src/rl's own (policyLoss.ts,
// aggregate.ts, kl.ts: the reference, defined once): the planned forward's per-token log-probs
// and entropies become small constant tensors, the caller's loss is built on them with those
// functions, and tf.grads gives d loss / d log-prob and d loss / d entropy per token, which the
// planned backward carries through the model. Every loss type, aggregation mode, KL term and
// entropy bonus therefore has its planned counterpart by construction.
import * as tf from '@tensorflow/tfjs';

export interface StatTensors {
  /** [B, T] */
  logp: tf.Tensor2D;
  entropy: tf.Tensor2D;
}

export interface LossGrads {
  loss: number;
  /** [B T] d loss / d log-prob and d loss / d entropy. */
  dlogp: Float32Array;
  dentropy: Float32Array;
}

/** d loss / d (log-prob, entropy) of `lossFn` at the given per-token statistics [B T]. */
export async function lossGradsAt(logp: Float32Array, entropy: Float32Array, B: number, T: number, lossFn: (s: StatTensors) => tf.Scalar): Promise<LossGrads> {
  const lp = tf.tensor2d(logp, [B, T]);
  const ent = tf.tensor2d(entropy, [B, T]);
  try {
    const f = (a: tf.Tensor, b: tf.Tensor) => {
      const s = { logp: a as tf.Tensor2D, entropy: b as tf.Tensor2D };
      // 0 x sum keeps both inputs on the tape when the loss reads only one of them.
      return tf.add(lossFn(s), tf.mul(0, tf.add(tf.sum(a), tf.sum(b)))) as tf.Scalar;
    };
    const { value, grads } = tf.valueAndGrads(f)([lp, ent]);
    const [loss, dlogp, dentropy] = await Promise.all([value.data(), grads[0].data(), grads[1].data()]);
    tf.dispose([value, ...grads]);
    return { loss: loss[0], dlogp: dlogp as Float32Array, dentropy: dentropy as Float32Array };
  } finally {
    tf.dispose([lp, ent]);
  }
}
