// SwiGLU's gate silu(g) * u as one WGSL kernel on WebGPU (stock ops elsewhere); differentiable: it
// is on the training path.
import * as tf from '@tensorflow/tfjs';
import swigluWgsl from '../../../../shaders/swiglu/op.wgsl?raw';
import { gatedOp } from './gated';
import { wasmSwiglu, wasmSwigluGrad } from '../wasmGemm';

export function swigluStock(g: tf.Tensor, u: tf.Tensor): tf.Tensor {
  return tf.tidy(() => tf.mul(g.mul(tf.sigmoid(g)), u));
}

/** silu(g) * u; d/dg = u s (1 + g (1 - s)), d/du = g s, with s = sigmoid(g). */
export const swiglu = gatedOp({
  name: 'swiglu',
  wgsl: swigluWgsl,
  stock: swigluStock,
  grad: (dy, g, u) => {
    const s = tf.sigmoid(g);
    const dg = dy
      .mul(u)
      .mul(s)
      .mul(tf.scalar(1).add(g.mul(tf.scalar(1).sub(s))));
    return [dg, dy.mul(g).mul(s)];
  },
  // One kernel each way on wasm where the stock ops took 3 forward and 9 backward.
  wasm: wasmSwiglu,
  wasmGrad: wasmSwigluGrad,
});
