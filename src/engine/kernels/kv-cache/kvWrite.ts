// The KV-cache write as one WGSL kernel on WebGPU (stock ops elsewhere): decoding only, never
// differentiated.
import * as tf from '@tensorflow/tfjs';
import kvWriteWgsl from '../../../../shaders/kv-cache/op_write.wgsl?raw';
import { customKernelsActive, runKernel } from '../../webgpu/wgslProgram';

/** The cache [B, H, C, D] with slots [start, start + L) set to fresh [B, H, L, D], the obvious way. */
export function kvWriteStock(cache: tf.Tensor4D, fresh: tf.Tensor4D, start: number): tf.Tensor4D {
  const C = cache.shape[2];
  const L = fresh.shape[2];
  // Slots >= start are still zero (the cache only grows), so the write is an add of a padded copy.
  return tf.tidy(() =>
    cache.add(
      fresh.pad([
        [0, 0],
        [0, 0],
        [start, C - start - L],
        [0, 0],
      ]),
    ),
  );
}

export function kvWrite(cache: tf.Tensor4D, fresh: tf.Tensor4D, start: number): tf.Tensor4D {
  const [B, H, C, D] = cache.shape;
  const [fb, fh, L, fd] = fresh.shape;
  if (fb !== B || fh !== H || fd !== D)
    throw new Error(`kvWrite: new entries [${fresh.shape}] do not match the cache [${cache.shape}]`);
  if (!Number.isInteger(start) || start < 0 || start + L > C)
    throw new Error(`kvWrite: slots ${start}..${start + L} do not fit the cache capacity ${C}`);
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
