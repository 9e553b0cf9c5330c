// GeGLU's gate gelu_tanh(g) * u (Gemma 3's MLP: ACT2FN["gelu_pytorch_tanh"]), with
// gelu_tanh(x) = x / 2 (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))): one WGSL kernel on WebGPU
// (shaders/swiglu/op_geglu.wgsl), stock ops elsewhere; differentiable (it is on the training path).
// The planned paths run the same formula: the decode in its gate/up epilogue (decodeKernels.ts
// gateActFn), the learning step in swiglu/learn_geglu.wgsl and its gradient kernel.
import * as tf from '@tensorflow/tfjs';
import gegluWgsl from '../../../../shaders/swiglu/op_geglu.wgsl?raw';
import { gatedOp } from './gated';

const C = Math.sqrt(2 / Math.PI);
const A = 0.044715;

export function gegluStock(g: tf.Tensor, u: tf.Tensor): tf.Tensor {
  return tf.tidy(() =>
    g
      .mul(0.5)
      .mul(tf.tanh(g.add(g.pow(3).mul(A)).mul(C)).add(1))
      .mul(u),
  );
}

/**
 * gelu_tanh(g) * u; d/du = gelu_tanh(g), d/dg = u (0.5 (1 + t) + 0.5 g (1 - t^2) sqrt(2 / pi) (1 + 3 * 0.044715 g^2)),
 * t = tanh(sqrt(2 / pi) (g + 0.044715 g^3)).
 */
export const geglu = gatedOp({
  name: 'geglu',
  wgsl: gegluWgsl,
  stock: gegluStock,
  grad: (dy, g, u) => {
    const t = tf.tanh(g.add(g.pow(3).mul(A)).mul(C));
    const gelu = g.mul(0.5).mul(t.add(1));
    const dGelu = t
      .add(1)
      .mul(0.5)
      .add(
        g
          .mul(0.5)
          .mul(tf.scalar(1).sub(t.square()))
          .mul(
            g
              .square()
              .mul(3 * A)
              .add(1)
              .mul(C),
          ),
      );
    return [dy.mul(u).mul(dGelu), dy.mul(gelu)];
  },
});
