// SwiGLU's gate silu(g) * u as one WGSL kernel on WebGPU (stock ops elsewhere); differentiable: it
// is on the training path.
import * as tf from '@tensorflow/tfjs';
import swigluWgsl from '../../../../shaders/swiglu/op.wgsl?raw';
import { customKernelsActive, runKernel } from '../../webgpu/wgslProgram';

export function swigluStock(g: tf.Tensor, u: tf.Tensor): tf.Tensor {
  return tf.tidy(() => tf.mul(g.mul(tf.sigmoid(g)), u));
}

function swigluWebGPU(g: tf.Tensor, u: tf.Tensor): tf.Tensor {
  return runKernel(
    {
      key: 'sparring_swiglu',
      source: swigluWgsl,
      inputs: ['g', 'u'],
      outputShape: g.shape,
      workgroupSize: [64, 1, 1],
      dispatch: [Math.ceil(g.size / 64), 1, 1],
      size: true,
    },
    [g, u],
  );
}

/** silu(g) * u; d/dg = u s (1 + g (1 - s)), d/du = g s, with s = sigmoid(g). */
export function swiglu(g: tf.Tensor, u: tf.Tensor): tf.Tensor {
  if (g.shape.length !== u.shape.length || g.shape.some((s, i) => s !== u.shape[i]))
    throw new Error(`swiglu: gate [${g.shape}] and up [${u.shape}] differ`);
  if (!customKernelsActive()) return swigluStock(g, u);
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [gi, ui, save] = args as [tf.Tensor, tf.Tensor, tf.GradSaveFunc];
    save([gi, ui]);
    return {
      value: swigluWebGPU(gi, ui),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) =>
        tf.tidy(() => {
          const [gs, us] = saved;
          const s = tf.sigmoid(gs);
          const dg = dy
            .mul(us)
            .mul(s)
            .mul(tf.scalar(1).add(gs.mul(tf.scalar(1).sub(s))));
          return [dg, dy.mul(gs).mul(s)];
        }),
    };
  });
  return f(g, u);
}
