// tokenStats(logits [rows, vocab], ids [rows]) -> [rows, 2] = (log-prob of ids, entropy).
// On WebGPU it is one fused WGSL pass (shaders/token_stats.wgsl); elsewhere, stock tfjs ops.
import * as tf from '@tensorflow/tfjs';
import tokenStatsWgsl from '../../../shaders/token_stats.wgsl?raw';
import tokenStatsGradWgsl from '../../../shaders/token_stats_grad.wgsl?raw';
import { rowChunks, rowWorkgroupSize } from '../kernels/limits';
import { customKernelsActive, runKernel } from '../kernels/wgslProgram';


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
    // Masked (-inf) logits become a huge finite negative: p = 0 and p log p = 0 both ways, and
    // autograd never meets 0 * inf.
    const logSm = tf.logSoftmax(tf.maximum(logits, -1e30));
    // A one-hot product rather than a batched gather (tfjs-wasm 4.22's GatherV2 with batchDims
    // reads out of bounds); safe because every log-prob above is finite.
    const chosen = tf.sum(tf.mul(logSm, tf.oneHot(ids, logits.shape[1])), 1);
    const entropy = tf.neg(tf.sum(tf.mul(tf.exp(logSm), logSm), 1));
    return tf.stack([chosen, entropy], 1) as tf.Tensor2D;
  });
}

export function tokenStatsWebGPU(logits: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D {
  checkShapes(logits, ids);
  const WG = rowWorkgroupSize(logits.shape[1]);
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

/** d(sum(dy * stats)) / d logits from the saved forward output, one WGSL thread per logit. */
export function tokenStatsGradWebGPU(logits: tf.Tensor2D, ids: tf.Tensor1D, stats: tf.Tensor2D, dy: tf.Tensor2D): tf.Tensor2D {
  const [rows, vocab] = logits.shape;
  return runKernel(
    {
      key: 'sparring_token_stats_grad',
      source: tokenStatsGradWgsl,
      inputs: ['logits', 'ids', 'stats', 'dy'],
      outputShape: [rows, vocab],
      workgroupSize: [256, 1, 1],
      dispatch: [Math.ceil((rows * vocab) / 256), 1, 1],
      size: true,
    },
    [logits, ids, stats, dy],
  ) as tf.Tensor2D;
}

/**
 * Log-prob of `ids` and entropy per row, differentiable in `logits`. ids must lie in [0, vocab)
 * (the WGSL path returns NaN for an id outside it rather than reading past the row).
 */
export function tokenStats(logits: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D {
  if (!customKernelsActive()) return tokenStatsStock(logits, ids);
  checkShapes(logits, ids);
  // Logits of a 150k vocabulary are 0.6 MB a row: keep each kernel's bindings under the limit.
  const chunks = rowChunks(logits.shape[0], logits.shape[1] * 4);
  if (chunks.length > 1) {
    return tf.tidy(() => {
      const parts = tf.split(logits, chunks, 0);
      const idParts = tf.split(ids, chunks, 0);
      return tf.concat(parts.map((p, i) => tokenStats(p as tf.Tensor2D, idParts[i] as tf.Tensor1D)), 0) as tf.Tensor2D;
    });
  }
  // ids is closed over, not an argument (integer data, no gradient), and saved for the backward
  // pass so it outlives a tidy scope that created it.
  const fused = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [x, save] = args as [tf.Tensor2D, tf.GradSaveFunc];
    const stats = tokenStatsWebGPU(x, ids);
    save([x, stats, ids]);
    return {
      value: stats,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) =>
        tokenStatsGradWebGPU(saved[0] as tf.Tensor2D, saved[2] as tf.Tensor1D, saved[1] as tf.Tensor2D, dy as tf.Tensor2D),
    };
  });
  return fused(logits) as tf.Tensor2D;
}
