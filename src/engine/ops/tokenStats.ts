// tokenStats(logits [rows, vocab], ids [rows]) -> [rows, 2] = (log-prob of ids, entropy).
// On WebGPU it is one fused WGSL pass (shaders/token_stats.wgsl); elsewhere, stock tfjs ops.
import * as tf from '@tensorflow/tfjs';
import tokenStatsWgsl from '../../../shaders/token_stats.wgsl?raw';
import { isWebGPUBackend, runKernel } from '../kernels/wgslProgram';

const WG = 256;

function checkShapes(logits: tf.Tensor, ids: tf.Tensor): void {
  if (logits.rank !== 2) throw new Error(`tokenStats: logits must be [rows, vocab], got shape [${logits.shape}]`);
  if (ids.rank !== 1 || ids.shape[0] !== logits.shape[0]) {
    throw new Error(`tokenStats: ids must be [${logits.shape[0]}], got shape [${ids.shape}]`);
  }
  if (ids.dtype !== 'int32') throw new Error(`tokenStats: ids must be int32, got ${ids.dtype}`);
}

/** The obvious way with stock ops: materialises the [rows, vocab] log-softmax. */
export function tokenStatsStock(logits: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D {
  checkShapes(logits, ids);
  return tf.tidy(() => {
    const logSm = tf.logSoftmax(logits);
    // Gather, not a one-hot product: 0 * -inf at masked ids would poison the sum with NaN.
    const chosen = tf.reshape(tf.gather(logSm, tf.reshape(ids, [-1, 1]), 1, 1), [-1]);
    // p log p with p = 0 is 0; exp(-inf) * -inf would be NaN, so mask non-finite log-probs.
    const plogp = tf.where(tf.isFinite(logSm), tf.mul(tf.exp(logSm), logSm), tf.zerosLike(logSm));
    const entropy = tf.neg(tf.sum(plogp, 1));
    return tf.stack([chosen, entropy], 1) as tf.Tensor2D;
  });
}

export function tokenStatsWebGPU(logits: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D {
  checkShapes(logits, ids);
  const rows = logits.shape[0];
  return runKernel(
    {
      key: `sparring_token_stats_wg${WG}`,
      source: `const WG : i32 = ${WG};\n${tokenStatsWgsl}`,
      inputs: ['logits', 'ids'],
      outputShape: [rows, 2],
      workgroupSize: [WG, 1, 1],
      dispatch: [rows, 1, 1],
    },
    [logits, ids],
  ) as tf.Tensor2D;
}

export function tokenStats(logits: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D {
  return isWebGPUBackend() ? tokenStatsWebGPU(logits, ids) : tokenStatsStock(logits, ids);
}
