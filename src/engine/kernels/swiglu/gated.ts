// A gated MLP's elementwise gate act(g) * u, shared by SwiGLU and GeGLU: one WGSL kernel on WebGPU
// (its body in shaders/swiglu/), stock ops elsewhere; differentiable through a closed-form gradient
// in stock ops (it is on the training path).
import * as tf from '@tensorflow/tfjs';
import { customKernelsActive, runKernel } from '../../webgpu/wgslProgram';
import { wasmTape } from '../wasmTape';

export interface GatedOp {
  /** Name in errors and the kernel key (sparring_<name>). */
  name: string;
  /** The kernel body (bindings g, u, uniforms.size). */
  wgsl: string;
  /** act(g) * u in stock ops. */
  stock: (g: tf.Tensor, u: tf.Tensor) => tf.Tensor;
  /** [d/dg, d/du] of sum(dy * act(g) * u), in stock ops. */
  grad: (dy: tf.Tensor, g: tf.Tensor, u: tf.Tensor) => [tf.Tensor, tf.Tensor];
  /** The forward and `grad` as one kernel of ours on tfjs-wasm (engine/kernels/wasmGemm.ts), or null there. */
  wasm?: (g: tf.Tensor, u: tf.Tensor) => tf.Tensor | null;
  wasmGrad?: (dy: tf.Tensor, g: tf.Tensor, u: tf.Tensor) => [tf.Tensor, tf.Tensor] | null;
}

/** The op as a function of (g, u): the kernel where the custom kernels run, else the stock ops. */
export function gatedOp(op: GatedOp): (g: tf.Tensor, u: tf.Tensor) => tf.Tensor {
  const webgpu = (g: tf.Tensor, u: tf.Tensor) =>
    runKernel(
      {
        key: `sparring_${op.name}`,
        source: op.wgsl,
        inputs: ['g', 'u'],
        outputShape: g.shape,
        workgroupSize: [64, 1, 1],
        dispatch: [Math.ceil(g.size / 64), 1, 1],
        size: true,
      },
      [g, u],
    );
  return (g, u) => {
    if (g.shape.length !== u.shape.length || g.shape.some((s, i) => s !== u.shape[i]))
      throw new Error(`${op.name}: gate [${g.shape}] and up [${u.shape}] differ`);
    if (wasmTape()) {
      // The stock forward as one taped op with the closed-form backward (see wasmTape).
      const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
        const [gi, ui, save] = args as [tf.Tensor, tf.Tensor, tf.GradSaveFunc];
        save([gi, ui]);
        return {
          value: op.wasm?.(gi, ui) ?? op.stock(gi, ui),
          gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) =>
            op.wasmGrad?.(dy, saved[0], saved[1]) ?? op.grad(dy, saved[0], saved[1]),
        };
      });
      return f(g, u);
    }
    const ours = tf.getBackend() === 'wasm' ? op.wasm?.(g, u) : null;
    if (ours) return ours;
    if (!customKernelsActive()) return op.stock(g, u);
    const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
      const [gi, ui, save] = args as [tf.Tensor, tf.Tensor, tf.GradSaveFunc];
      save([gi, ui]);
      return {
        value: webgpu(gi, ui),
        gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.tidy(() => op.grad(dy, saved[0], saved[1])),
      };
    });
    return f(g, u);
  };
}
