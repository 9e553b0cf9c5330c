// The planned path borrows tfjs tensors' GPU buffers (weights, the prefill's caches and logits)
// instead of copying them, on the device tfjs created.
import type * as tf from '@tensorflow/tfjs';
import { webgpuBackend } from '../kernels/wgslProgram';

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
