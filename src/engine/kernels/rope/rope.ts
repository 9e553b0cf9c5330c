// rope(x [B, H, L, D], cos, sinSigned [B, 1, L, D]): one WGSL kernel on WebGPU
// (shaders/rope/op.wgsl), stock tfjs ops elsewhere. On the training path: its gradient is the same
// kernel with the rotation transposed.
import * as tf from '@tensorflow/tfjs';
import ropeWgsl from '../../../../shaders/rope/op.wgsl?raw';
import { customKernelsActive, runKernel } from '../../webgpu/wgslProgram';
import { wasmGemmServes, wasmRope } from '../wasmGemm';

/** HF rotate-half RoPE with the sign folded into sinSigned, the obvious way. */
export function ropeStock(x: tf.Tensor4D, cos: tf.Tensor4D, sinSigned: tf.Tensor4D): tf.Tensor4D {
  const half = x.shape[3] / 2;
  return tf.tidy(() => {
    const [x1, x2] = tf.split(x, [half, half], 3);
    return x.mul(cos).add(tf.concat([x2, x1], 3).mul(sinSigned));
  });
}

function ropeWebGPU(x: tf.Tensor4D, cos: tf.Tensor4D, sinSigned: tf.Tensor4D): tf.Tensor4D {
  return runKernel(
    {
      key: 'sparring_rope',
      source: ropeWgsl,
      inputs: ['x', 'cos', 'sinS'],
      outputShape: x.shape,
      workgroupSize: [64, 1, 1],
      dispatch: [Math.ceil(x.size / 64), 1, 1],
      size: true,
    },
    [x, cos, sinSigned],
  ) as tf.Tensor4D;
}

/** The half swap [x2, x1] as a [D, D] permutation, one per head dim (kept until released). */
const swaps = new Map<number, tf.Tensor2D>();

/**
 * Frees the kept permutations (a model's disposal calls it: a stopped run leaves no tensor behind);
 * the next RoPE on wasm builds its own again, so a model still in use loses nothing.
 */
export function releaseRopeConstants(): void {
  for (const p of swaps.values()) p.dispose();
  swaps.clear();
}

/**
 * [x2, x1] of x [..., D] as one untransposed product with a permutation (exact for finite x):
 * on tfjs-wasm the stock split and inner-axis concat ran their slow generic loops, 1.4 ms CPU
 * against ~0.1 ms for the product (XNNPACK) on the defender's [8, 2, 63, 24] keys.
 */
function swapHalves(x: tf.Tensor): tf.Tensor {
  const D = x.shape[x.rank - 1];
  let p = swaps.get(D);
  if (!p) {
    const m = new Float32Array(D * D);
    for (let j = 0; j < D; j++) m[((j + D / 2) % D) * D + j] = 1; // out_j = x_{(j + D/2) mod D}
    p = tf.keep(tf.tensor2d(m, [D, D]));
    swaps.set(D, p);
  }
  return tf.reshape(tf.matMul(tf.reshape(x, [-1, D]) as tf.Tensor2D, p), x.shape);
}

/**
 * RoPE on tfjs-wasm for more than one position: the swap as a product (swapHalves), and under a
 * tape one taped op whose backward is dy cos + swap(dy sinSigned) (the swap is its own transpose;
 * cos and sin are constants): 10 kernels where the stock ops' autodiff took 26.
 */
function ropeWasm(x: tf.Tensor4D, cos: tf.Tensor4D, sinSigned: tf.Tensor4D): tf.Tensor4D {
  const value = (xi: tf.Tensor) => tf.add(tf.mul(xi, cos), tf.mul(swapHalves(xi), sinSigned));
  if (tf.engine().state.gradientDepth === 0) return tf.tidy(() => value(x)) as tf.Tensor4D;
  // cos and sin are saved (shared, not copied: engine/wasmIdentity.ts): the forward's scope frees them.
  const f = tf.customGrad((xi, save) => {
    (save as tf.GradSaveFunc)([cos, sinSigned]);
    return {
      value: value(xi as tf.Tensor),
      gradFunc: (dy, [c, s]) => tf.add(tf.mul(dy as tf.Tensor, c), swapHalves(tf.mul(dy as tf.Tensor, s))),
    };
  });
  return f(x) as tf.Tensor4D;
}

/**
 * RoPE on tfjs-wasm as one kernel of ours (engine/kernels/wasmGemm.ts), forward and, under a tape,
 * backward (dy cos + swap(dy sinSigned)): 1 kernel each way where ropeWasm takes 6 and 4.
 */
function ropeOurs(x: tf.Tensor4D, cos: tf.Tensor4D, sinSigned: tf.Tensor4D): tf.Tensor4D {
  if (tf.engine().state.gradientDepth === 0) return wasmRope(x, cos, sinSigned) as tf.Tensor4D;
  const f = tf.customGrad((xi, save) => {
    (save as tf.GradSaveFunc)([cos, sinSigned]);
    return {
      value: wasmRope(xi as tf.Tensor, cos, sinSigned) as tf.Tensor4D,
      gradFunc: (dy, [c, s]) => wasmRope(dy as tf.Tensor, c, s, true) as tf.Tensor4D,
    };
  });
  return f(x) as tf.Tensor4D;
}

/**
 * RoPE on a projection's rows: x [B, L, n D] -> [B, n, L, D], the heads split and rotated. On
 * tfjs-wasm one kernel of ours each way (the heads' transposes folded into the rotation's pass,
 * the same values): the Reshape and Transpose before rope, and the Transpose and Reshape after its
 * backward, were 4 of a learning step's kernels per q and per k (24 of 572 on the sandbox
 * defender); elsewhere the reshape, transpose and rope.
 */
export function ropeHeads(x: tf.Tensor, cos: tf.Tensor4D, sinSigned: tf.Tensor4D, n: number): tf.Tensor4D {
  const [B, , L, D] = cos.shape;
  if (x.size !== B * L * n * D) throw new Error(`ropeHeads: x [${x.shape}] is not [${B}, ${L}, ${n} * ${D}]`);
  if (!(tf.getBackend() === 'wasm' && wasmGemmServes() && L > 1 && x.dtype === 'float32')) {
    // one token: [B, 1, n, D] and [B, n, 1, D] are the same memory (no transpose kernel)
    const heads = L === 1 ? x.reshape([B, n, 1, D]) : x.reshape([B, L, n, D]).transpose([0, 2, 1, 3]);
    return rope(heads as tf.Tensor4D, cos, sinSigned);
  }
  checkTables(B, L, D, cos, sinSigned);
  const x3 = x.rank === 3 && x.shape[1] === L ? x : x.reshape([B, L, n * D]);
  if (tf.engine().state.gradientDepth === 0) return wasmRope(x3, cos, sinSigned, false, true) as tf.Tensor4D;
  const f = tf.customGrad((xi, save) => {
    (save as tf.GradSaveFunc)([cos, sinSigned]);
    return {
      value: wasmRope(xi as tf.Tensor, cos, sinSigned, false, true) as tf.Tensor4D,
      gradFunc: (dy, [c, s]) => wasmRope(dy as tf.Tensor, c, s, true, true) as tf.Tensor4D,
    };
  });
  return f(x3) as tf.Tensor4D;
}

function checkTables(B: number, L: number, D: number, cos: tf.Tensor4D, sinSigned: tf.Tensor4D): void {
  const want = [B, 1, L, D];
  if (D % 2 !== 0) throw new Error(`rope: head dim ${D} must be even`);
  if (cos.shape.some((s, i) => s !== want[i]) || sinSigned.shape.some((s, i) => s !== want[i])) {
    throw new Error(`rope: cos and sin must be [${want}], got [${cos.shape}] and [${sinSigned.shape}]`);
  }
}

export function rope(x: tf.Tensor4D, cos: tf.Tensor4D, sinSigned: tf.Tensor4D): tf.Tensor4D {
  const [B, , L, D] = x.shape;
  checkTables(B, L, D, cos, sinSigned);
  if (tf.getBackend() === 'wasm' && wasmGemmServes()) return ropeOurs(x, cos, sinSigned);
  if (tf.getBackend() === 'wasm' && L > 1) return ropeWasm(x, cos, sinSigned);
  if (!customKernelsActive()) return ropeStock(x, cos, sinSigned);
  // cos and sin go in as inputs so save() keeps them past the forward pass's tidy scope (a
  // closed-over tensor would be disposed before the backward pass); they get zero gradients.
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [xi, c, sn, save] = args as [tf.Tensor4D, tf.Tensor4D, tf.Tensor4D, tf.GradSaveFunc];
    save([c, sn]);
    return {
      value: ropeWebGPU(xi, c, sn),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [cs, ss] = saved as tf.Tensor4D[];
        const dx = tf.tidy(() => ropeWebGPU(dy as tf.Tensor4D, cs, tf.neg(ss) as tf.Tensor4D));
        return [dx, tf.zerosLike(cs), tf.zerosLike(ss)];
      },
    };
  });
  return f(x, cos, sinSigned) as tf.Tensor4D;
}
