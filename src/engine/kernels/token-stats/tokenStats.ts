// tokenStats(logits [rows, vocab], ids [rows]) -> [rows, 2] = (log-prob of ids, entropy), and with
// a second logits tensor (the reference policy's) -> [rows, 3] with its log-prob of ids for KL.
// On WebGPU it is one fused WGSL pass (shaders/token-stats/op.wgsl); elsewhere, stock tfjs ops.
import * as tf from '@tensorflow/tfjs';
import tokenStatsWgsl from '../../../../shaders/token-stats/op.wgsl?raw';
import tokenStatsGradWgsl from '../../../../shaders/token-stats/op_grad.wgsl?raw';
import tokenStatsRefWgsl from '../../../../shaders/token-stats/ref.wgsl?raw';
import { rowChunks, rowWorkgroupSize } from '../../webgpu/limits';
import { rowReduce } from '../row-reduce/rowReduce';
import { customKernelsActive, runKernel } from '../../webgpu/wgslProgram';
import { wasmTokenStats } from '../wasmGemm';

function checkShapes(logits: tf.Tensor, ids: tf.Tensor, refLogits?: tf.Tensor): void {
  if (logits.rank !== 2) throw new Error(`tokenStats: logits must be [rows, vocab], got shape [${logits.shape}]`);
  if (ids.rank !== 1 || ids.shape[0] !== logits.shape[0]) {
    throw new Error(`tokenStats: ids must be [${logits.shape[0]}], got shape [${ids.shape}]`);
  }
  if (ids.dtype !== 'int32') throw new Error(`tokenStats: ids must be int32, got ${ids.dtype}`);
  if (
    refLogits &&
    (refLogits.rank !== 2 || refLogits.shape[0] !== logits.shape[0] || refLogits.shape[1] !== logits.shape[1])
  ) {
    throw new Error(`tokenStats: refLogits must be [${logits.shape}] like logits, got shape [${refLogits.shape}]`);
  }
}

/** log softmax(x)[ids] per row with stock ops (masked -inf logits clamped; see tokenStatsStock). */
function chosenLogp(logSm: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor1D {
  // A one-hot product rather than a batched gather (tfjs-wasm 4.22's GatherV2 with batchDims
  // reads out of bounds); safe because every log-prob is finite after the clamp.
  return tf.sum(tf.mul(logSm, tf.oneHot(ids, logSm.shape[1])), 1) as tf.Tensor1D;
}

/** The obvious way with stock ops: materialises the [rows, vocab] log-softmax (of both tensors). */
export function tokenStatsStock(logits: tf.Tensor2D, ids: tf.Tensor1D, refLogits?: tf.Tensor2D): tf.Tensor2D {
  checkShapes(logits, ids, refLogits);
  return tf.tidy(() => {
    // Masked (-inf) logits become a huge finite negative: p = 0 and p log p = 0 both ways, and
    // autograd never meets 0 * inf.
    const logSm = tf.logSoftmax(tf.maximum(logits, -1e30)) as tf.Tensor2D;
    const entropy = tf.neg(tf.sum(tf.mul(tf.exp(logSm), logSm), 1));
    const cols: tf.Tensor[] = [chosenLogp(logSm, ids), entropy];
    if (refLogits) cols.push(chosenLogp(tf.logSoftmax(tf.maximum(refLogits, -1e30)) as tf.Tensor2D, ids));
    return tf.stack(cols, 1) as tf.Tensor2D;
  });
}

const REF_STUB = 'fn refLogp(row : i32, tid : i32, vocab : i32) -> f32 {\n  return 0.0;\n}\n';

/** The row reduction tokenStats' WGSL path uses for rows of `vocab` logits ('tree' or 'sg<levels>x<size>'). */
export function tokenStatsReduceKey(vocab: number): string {
  return rowReduce(rowWorkgroupSize(vocab)).key;
}

export function tokenStatsWebGPU(logits: tf.Tensor2D, ids: tf.Tensor1D, refLogits?: tf.Tensor2D): tf.Tensor2D {
  checkShapes(logits, ids, refLogits);
  const WG = rowWorkgroupSize(logits.shape[1]);
  const rows = logits.shape[0];
  const out = refLogits ? 3 : 2;
  const reduce = rowReduce(WG);
  return runKernel(
    {
      key: `sparring_token_stats_wg${WG}_out${out}_${reduce.key}`,
      source: `const WG : i32 = ${WG};\nconst OUT : i32 = ${out};\n${reduce.source}\n${tokenStatsWgsl}\n${refLogits ? tokenStatsRefWgsl : REF_STUB}`,
      inputs: refLogits ? ['logits', 'ids', 'refLogits'] : ['logits', 'ids'],
      outputShape: [rows, out],
      workgroupSize: [WG, 1, 1],
      dispatch: [rows, 1, 1],
    },
    refLogits ? [logits, ids, refLogits] : [logits, ids],
  ) as tf.Tensor2D;
}

/** d(sum(dy * stats)) / d logits from the saved forward output, one WGSL thread per logit. */
export function tokenStatsGradWebGPU(
  logits: tf.Tensor2D,
  ids: tf.Tensor1D,
  stats: tf.Tensor2D,
  dy: tf.Tensor2D,
): tf.Tensor2D {
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
 * Log-prob of `ids` and entropy per row, differentiable in `logits`; with `refLogits` (same shape:
 * the reference policy's logits for the same rows) a third column, the log-prob of `ids` under
 * them, computed in the same pass. The reference is a constant: the fused path sends it no
 * gradient (the stock path would, so do not differentiate through column 2). ids must lie in
 * [0, vocab) (the WGSL path returns NaN for an id outside it rather than reading past the row).
 */
export function tokenStats(logits: tf.Tensor2D, ids: tf.Tensor1D, refLogits?: tf.Tensor2D): tf.Tensor2D {
  if (!customKernelsActive()) {
    // tfjs-wasm: one kernel of ours each way (engine/kernels/wasmGemm.ts), where it serves
    const ours =
      !refLogits && tf.getBackend() === 'wasm' ? (checkShapes(logits, ids), wasmTokenStats(logits, ids)) : null;
    return ours ?? tokenStatsStock(logits, ids, refLogits);
  }
  checkShapes(logits, ids, refLogits);
  // Logits of a 150k vocabulary are 0.6 MB a row: keep each kernel's bindings under the limit.
  const chunks = rowChunks(logits.shape[0], logits.shape[1] * 4);
  if (chunks.length > 1) {
    return tf.tidy(() => {
      const parts = tf.split(logits, chunks, 0);
      const idParts = tf.split(ids, chunks, 0);
      const refParts = refLogits ? tf.split(refLogits, chunks, 0) : undefined;
      return tf.concat(
        parts.map((p, i) =>
          tokenStats(p as tf.Tensor2D, idParts[i] as tf.Tensor1D, refParts?.[i] as tf.Tensor2D | undefined),
        ),
        0,
      ) as tf.Tensor2D;
    });
  }
  const cols = refLogits ? 3 : 2;
  // ids and refLogits are closed over, not arguments (no gradient), and ids is saved for the
  // backward pass so it outlives a tidy scope that created it.
  const fused = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [x, save] = args as [tf.Tensor2D, tf.GradSaveFunc];
    const stats = tokenStatsWebGPU(x, ids, refLogits);
    save([x, stats, ids]);
    return {
      value: stats,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [x0, st, id0] = saved as [tf.Tensor2D, tf.Tensor2D, tf.Tensor1D];
        if (cols === 2) return tokenStatsGradWebGPU(x0, id0, st, dy as tf.Tensor2D);
        // The gradient kernel reads (logp, H) pairs: drop the reference column of both.
        return tf.tidy(() =>
          tokenStatsGradWebGPU(x0, id0, st.slice([0, 0], [-1, 2]), (dy as tf.Tensor2D).slice([0, 0], [-1, 2])),
        );
      },
    };
  });
  return fused(logits) as tf.Tensor2D;
}
