// rmsNorm(x [..., hidden], w [hidden], eps): one WGSL kernel on WebGPU (shaders/rms-norm/op.wgsl),
// stock tfjs ops elsewhere. On the training path: its gradient is its closed form in stock ops
// (small beside the matmuls).
import * as tf from '@tensorflow/tfjs';
import rmsNormWgsl from '../../../../shaders/rms-norm/op.wgsl?raw';
import { rowWorkgroupSize } from '../../webgpu/limits';
import { customKernelsActive, runKernel } from '../../webgpu/wgslProgram';
import { wasmTape } from '../wasmTape';
import { wasmRmsNorm, wasmRmsNormTaped } from '../wasmGemm';

/** x / sqrt(mean(x^2) + eps) * w over the last axis, the obvious way. */
export function rmsNormStock(x: tf.Tensor, w: tf.Tensor1D, eps: number): tf.Tensor {
  return tf.tidy(() => {
    const ms = x.square().mean(-1, true);
    return x.mul(ms.add(eps).rsqrt()).mul(w);
  });
}

function rmsNormWebGPU(x: tf.Tensor, w: tf.Tensor1D, eps: number): tf.Tensor {
  const hidden = x.shape[x.rank - 1];
  const rows = x.size / hidden;
  const WG = rowWorkgroupSize(hidden, 8);
  const x2 = x.reshape([rows, hidden]);
  const out = runKernel(
    {
      key: `sparring_rms_norm_wg${WG}`,
      source: `const WG : i32 = ${WG};\n${rmsNormWgsl}`,
      inputs: ['x', 'w'],
      outputShape: [rows, hidden],
      workgroupSize: [WG, 1, 1],
      dispatch: [rows, 1, 1],
      uniforms: 'eps : f32,',
    },
    [x2, w],
    'float32',
    [{ type: 'float32', data: [eps] }],
  );
  x2.dispose();
  const shaped = out.reshape(x.shape);
  out.dispose();
  return shaped;
}

/**
 * Closed-form backward with stock ops (a nested tf.grads cannot run inside a gradient function):
 * r = (mean x^2 + eps)^-1/2, dx = r w dy - x r^3 / H sum(dy w x), dw = sum over rows of dy x r.
 */
function rmsNormGrad(x: tf.Tensor, w: tf.Tensor1D, dy: tf.Tensor, eps: number): tf.Tensor[] {
  return tf.tidy(() => {
    const H = x.shape[x.rank - 1];
    const r = x.square().mean(-1, true).add(eps).rsqrt();
    const dyw = dy.mul(w);
    const dot = dyw.mul(x).sum(-1, true);
    const dx = dyw.mul(r).sub(x.mul(r.pow(3)).mul(dot).div(H));
    const dw = dy.mul(x).mul(r).reshape([-1, H]).sum(0);
    return [dx, dw];
  });
}

/**
 * The stock forward as one taped op (tfjs-wasm under a tape, see wasmTape): it saves n = x r and r,
 * so the backward is dn = dy w, dx = r (dn - n mean(dn n)), dw = sum over rows of dy n.
 */
function rmsNormTaped(x: tf.Tensor, w: tf.Tensor1D, eps: number): tf.Tensor {
  const H = x.shape[x.rank - 1];
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [xi, wi, save] = args as [tf.Tensor, tf.Tensor1D, tf.GradSaveFunc];
    const r = tf.rsqrt(tf.add(tf.mean(tf.square(xi), -1, true), eps));
    const n = tf.mul(xi, r);
    save([n, r]);
    return {
      value: tf.mul(n, wi),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [ns, rs] = saved;
        const dn = tf.mul(dy, wi);
        const dx = tf.mul(rs, tf.sub(dn, tf.mul(ns, tf.mean(tf.mul(dn, ns), -1, true))));
        return [dx, tf.sum(tf.reshape(tf.mul(dy, ns), [-1, H]), 0)];
      },
    };
  });
  return f(x, w);
}

export function rmsNorm(x: tf.Tensor, w: tf.Tensor1D, eps: number): tf.Tensor {
  if (w.rank !== 1 || w.shape[0] !== x.shape[x.rank - 1])
    throw new Error(`rmsNorm: weight [${w.shape}] does not match the last axis of x [${x.shape}]`);
  // Under a tape on wasm: one kernel of ours each way where it serves, else the taped stock ops.
  if (wasmTape()) return wasmRmsNormTaped(x, w, eps) ?? rmsNormTaped(x, w, eps);
  // Outside a tape on wasm: one kernel of ours (engine/kernels/wasmGemm.ts) where 6 stock ones ran.
  const ours = tf.getBackend() === 'wasm' ? wasmRmsNorm(x, w, eps) : null;
  if (ours) return ours;
  if (!customKernelsActive()) return rmsNormStock(x, w, eps);
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [xi, wi, save] = args as [tf.Tensor, tf.Tensor1D, tf.GradSaveFunc];
    save([xi, wi]);
    return {
      value: rmsNormWebGPU(xi, wi, eps),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => rmsNormGrad(saved[0], saved[1] as tf.Tensor1D, dy, eps),
    };
  });
  return f(x, w);
}
