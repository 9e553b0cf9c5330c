// The planned path borrows tfjs tensors' GPU buffers (weights, the prefill's caches and logits)
// instead of copying them, on the device tfjs created.
import type * as tf from '@tensorflow/tfjs';
import { engine as tfEngine } from '@tensorflow/tfjs';
import { webgpuBackend } from '../webgpu/wgslProgram';

interface TensorData {
  resource: GPUBuffer | GPUTexture | null;
}
interface BackendInternals {
  tensorMap: { get(dataId: object): TensorData | undefined };
  uploadToGPU(dataId: object): void;
  commandEncoder: GPUCommandEncoder | null;
  endComputePassEncoder(): void;
  submitQueue(): void;
}

function internals(): BackendInternals {
  return webgpuBackend() as unknown as BackendInternals;
}

/** The GPUBuffer holding a tensor on the webgpu backend (uploaded first if its values are on the host). */
export function tensorBuffer(t: tf.Tensor): GPUBuffer {
  const be = internals();
  let d = be.tensorMap.get(t.dataId);
  if (!d) throw new Error('tensorBuffer: the tensor is disposed or not on the webgpu backend');
  if (!d.resource) {
    be.uploadToGPU(t.dataId);
    d = be.tensorMap.get(t.dataId)!;
  }
  if (!(d.resource instanceof GPUBuffer)) throw new Error('tensorBuffer: the tensor lives in a texture, not a buffer');
  return d.resource;
}

/** Submits the work tfjs has encoded but not submitted, so a later submit of ours sees its results. */
export function flushTfjs(): void {
  const be = internals();
  if (be.commandEncoder) {
    be.endComputePassEncoder();
    be.submitQueue();
  }
}

/**
 * A new float32 tensor whose storage is a fresh buffer from tfjs's pool (no values yet): record a
 * copy into `buffer` before tfjs reads the tensor. Writing into a new tensor, never into an
 * existing one, keeps tfjs's bookkeeping true: an existing buffer may be shared by clones, and a
 * tensor read once keeps its values cached on the host, which a GPU-side write would not update.
 */
export function emptyTensor(shape: number[]): { tensor: tf.Tensor; buffer: GPUBuffer } {
  const be = webgpuBackend() as unknown as BackendInternals & {
    makeTensorInfo(shape: number[], dtype: 'float32'): tf.TensorInfo;
  };
  const info = be.makeTensorInfo(shape, 'float32');
  be.uploadToGPU(info.dataId);
  const tensor = tfEngine().makeTensorFromTensorInfo(info);
  return { tensor, buffer: tensorBuffer(tensor) };
}
