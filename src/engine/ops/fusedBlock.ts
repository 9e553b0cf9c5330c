// Two more of a decode step's small stock-kernel chains as one WGSL kernel each (WebGPU only;
// stock ops elsewhere): SwiGLU's gate silu(g) * u (differentiable: it is on the training path),
// and the KV-cache write (decoding only, never differentiated).
import * as tf from '@tensorflow/tfjs';
import kvWriteWgsl from '../../../shaders/kv-cache/op_write.wgsl?raw';
import swigluWgsl from '../../../shaders/swiglu/op.wgsl?raw';
import { customKernelsActive, runKernel } from '../kernels/wgslProgram';

export function swigluStock(g: tf.Tensor, u: tf.Tensor): tf.Tensor {
  return tf.tidy(() => tf.mul(g.mul(tf.sigmoid(g)), u));
}

function swigluWebGPU(g: tf.Tensor, u: tf.Tensor): tf.Tensor {
  return runKernel(
    { key: 'sparring_swiglu', source: swigluWgsl, inputs: ['g', 'u'], outputShape: g.shape, workgroupSize: [64, 1, 1], dispatch: [Math.ceil(g.size / 64), 1, 1], size: true },
    [g, u],
  );
}

/** silu(g) * u; d/dg = u s (1 + g (1 - s)), d/du = g s, with s = sigmoid(g). */
export function swiglu(g: tf.Tensor, u: tf.Tensor): tf.Tensor {
  if (g.shape.length !== u.shape.length || g.shape.some((s, i) => s !== u.shape[i])) throw new Error(`swiglu: gate [${g.shape}] and up [${u.shape}] differ`);
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
          const dg = dy.mul(us).mul(s).mul(tf.scalar(1).add(gs.mul(tf.scalar(1).sub(s))));
          return [dg, dy.mul(gs).mul(s)];
        }),
    };
  });
  return f(g, u);
}

/** The cache [B, H, C, D] with slots [start, start + L) set to fresh [B, H, L, D], the obvious way. */
export function kvWriteStock(cache: tf.Tensor4D, fresh: tf.Tensor4D, start: number): tf.Tensor4D {
  const C = cache.shape[2];
  const L = fresh.shape[2];
  // Slots >= start are still zero (the cache only grows), so the write is an add of a padded copy.
  return tf.tidy(() => cache.add(fresh.pad([[0, 0], [0, 0], [start, C - start - L], [0, 0]])));
}

export function kvWrite(cache: tf.Tensor4D, fresh: tf.Tensor4D, start: number): tf.Tensor4D {
  const [B, H, C, D] = cache.shape;
  const [fb, fh, L, fd] = fresh.shape;
  if (fb !== B || fh !== H || fd !== D) throw new Error(`kvWrite: new entries [${fresh.shape}] do not match the cache [${cache.shape}]`);
  if (!Number.isInteger(start) || start < 0 || start + L > C) throw new Error(`kvWrite: slots ${start}..${start + L} do not fit the cache capacity ${C}`);
  if (!customKernelsActive()) return kvWriteStock(cache, fresh, start);
  return runKernel(
    {
      key: 'sparring_kv_write',
      source: kvWriteWgsl,
      inputs: ['cache', 'fresh'],
      outputShape: cache.shape,
      workgroupSize: [64, 1, 1],
      dispatch: [Math.ceil(cache.size / 64), 1, 1],
      uniforms: 'start : i32,',
      size: true,
    },
    [cache, fresh],
    'float32',
    [{ type: 'int32', data: [start] }],
  ) as tf.Tensor4D;
}
