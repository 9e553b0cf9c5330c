// Runs one WGSL compute kernel from shaders/ on the tfjs WebGPU backend's own device, so the
// result is an ordinary tfjs tensor that stays on the GPU and joins the rest of the graph.
import * as tf from '@tensorflow/tfjs';
import type { WebGPUBackend, WebGPUProgram } from '@tensorflow/tfjs-backend-webgpu';
import { engineOptions } from '../options';

export interface KernelSpec {
  /** Unique per distinct source: tfjs caches compiled pipelines by it (plus input ranks/dtypes). */
  key: string;
  /** WGSL body: may define `fn main(index: i32)` for a flat dispatch; tfjs adds the header. */
  source: string;
  /** Input names in binding order (at most 7; `result` and WGSL keywords are reserved). */
  inputs: string[];
  outputShape: number[];
  workgroupSize: [number, number, number];
  /** Workgroups to launch; tfjs folds counts above 65,535 into y/z (use getGlobalIndex). */
  dispatch: [number, number, number];
  /** Extra uniform struct fields, e.g. 'temperature : f32,'. */
  uniforms?: string;
  /** Adds `uniforms.size` (output element count) for bounds checks in over-launched dispatches. */
  size?: boolean;
}

export function isWebGPUBackend(): boolean {
  return tf.getBackend() === 'webgpu';
}

/** Whether ops take their WGSL path: on the webgpu backend, unless switched off (EngineOptions.customKernels). */
export function customKernelsActive(): boolean {
  return engineOptions().customKernels && isWebGPUBackend();
}

export function webgpuBackend(): WebGPUBackend {
  if (!isWebGPUBackend()) throw new Error(`WGSL kernels need the webgpu backend; tfjs runs on ${tf.getBackend()}`);
  return tf.backend() as unknown as WebGPUBackend;
}

/** The GPUDevice tfjs created, for kernels and limits checks. */
export function webgpuDevice(): GPUDevice {
  return (webgpuBackend() as unknown as { device: GPUDevice }).device;
}

export function runKernel(
  spec: KernelSpec,
  inputs: tf.Tensor[],
  dtype: 'float32' | 'int32' = 'float32',
  uniformValues?: { type: 'float32' | 'int32' | 'uint32'; data: number[] }[],
): tf.Tensor {
  if (inputs.length !== spec.inputs.length) {
    throw new Error(`kernel ${spec.key}: expects inputs ${spec.inputs.join(', ')}, got ${inputs.length} tensors`);
  }
  if (inputs.length > 7) throw new Error(`kernel ${spec.key}: at most 7 inputs fit the default binding limit`);
  // A fresh program object per call: tfjs mutates dispatch and shaderKey while running it.
  const program: WebGPUProgram = {
    variableNames: spec.inputs,
    outputShape: spec.outputShape,
    shaderKey: spec.key,
    dispatchLayout: { x: spec.outputShape.map((_, i) => i) },
    dispatch: [...spec.dispatch],
    workgroupSize: spec.workgroupSize,
    uniforms: spec.uniforms,
    size: spec.size ?? false,
    getUserCode: () => spec.source,
  };
  const backend = webgpuBackend();
  const info = backend.runWebGPUProgram(program, inputs, dtype, uniformValues);
  return tf.engine().makeTensorFromTensorInfo(info);
}
