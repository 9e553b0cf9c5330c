// GeGLU's gate gelu_tanh(g) * u (Gemma 3's MLP: ACT2FN["gelu_pytorch_tanh"]), with
// gelu_tanh(x) = x / 2 (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))): one WGSL kernel on WebGPU
// (shaders/swiglu/op_geglu.wgsl), stock ops elsewhere; differentiable (it is on the training path).
// The planned paths do not run Gemma 3 yet (blockDescription.ts plannedBlockMismatch).
import * as tf from '@tensorflow/tfjs';
import gegluWgsl from '../../../../shaders/swiglu/op_geglu.wgsl?raw';
import { customKernelsActive, runKernel } from '../../webgpu/wgslProgram';

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

function gegluWebGPU(g: tf.Tensor, u: tf.Tensor): tf.Tensor {
  return runKernel(
    {
      key: 'sparring_geglu',
      source: gegluWgsl,
      inputs: ['g', 'u'],
      outputShape: g.shape,
      workgroupSize: [64, 1, 1],
      dispatch: [Math.ceil(g.size / 64), 1, 1],
      size: true,
    },
    [g, u],
  );
}

/**
 * gelu_tanh(g) * u; d/du = gelu_tanh(g), d/dg = u (0.5 (1 + t) + 0.5 g (1 - t^2) sqrt(2 / pi) (1 + 3 * 0.044715 g^2)),
 * t = tanh(sqrt(2 / pi) (g + 0.044715 g^3)).
 */
export function geglu(g: tf.Tensor, u: tf.Tensor): tf.Tensor {
  if (g.shape.length !== u.shape.length || g.shape.some((s, i) => s !== u.shape[i]))
    throw new Error(`geglu: gate [${g.shape}] and up [${u.shape}] differ`);
  if (!customKernelsActive()) return gegluStock(g, u);
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [gi, ui, save] = args as [tf.Tensor, tf.Tensor, tf.GradSaveFunc];
    save([gi, ui]);
    return {
      value: gegluWebGPU(gi, ui),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) =>
        tf.tidy(() => {
          const [gs, us] = saved;
          const t = tf.tanh(gs.add(gs.pow(3).mul(A)).mul(C));
          const gelu = gs.mul(0.5).mul(t.add(1));
          const dGelu = t
            .add(1)
            .mul(0.5)
            .add(
              gs
                .mul(0.5)
                .mul(tf.scalar(1).sub(t.square()))
                .mul(
                  gs
                    .square()
                    .mul(3 * A)
                    .add(1)
                    .mul(C),
                ),
            );
          return [dy.mul(us).mul(dGelu), dy.mul(gelu)];
        }),
    };
  });
  return f(g, u);
}
