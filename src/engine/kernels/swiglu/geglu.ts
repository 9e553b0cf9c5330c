// GeGLU's gate gelu_tanh(g) * u (Gemma 3's MLP: ACT2FN["gelu_pytorch_tanh"]), in stock tfjs ops so
// tfjs differentiates it: gelu_tanh(x) = x / 2 (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
// No WGSL kernel yet: the planned paths do not run Gemma 3 (blockDescription.ts plannedBlockMismatch).
import * as tf from '@tensorflow/tfjs';

const SQRT_2_OVER_PI = Math.sqrt(2 / Math.PI);

export function geglu(g: tf.Tensor, u: tf.Tensor): tf.Tensor {
  if (g.shape.length !== u.shape.length || g.shape.some((s, i) => s !== u.shape[i]))
    throw new Error(`geglu: gate [${g.shape}] and up [${u.shape}] differ`);
  return tf.tidy(() => {
    const inner = g.add(g.pow(3).mul(0.044715)).mul(SQRT_2_OVER_PI);
    return g.mul(0.5).mul(tf.tanh(inner).add(1)).mul(u);
  });
}
