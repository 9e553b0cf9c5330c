// One stderr line saying what a command ran on: the tfjs backend; on wasm whether it has SIMD and
// how many threads it runs and why; on WebGPU the adapter Dawn gave (a hardware GPU, or a software
// one: SwiftShader, lavapipe). A figure from the CLI is only read right beside it.
import * as tf from '@tensorflow/tfjs';
import { wasmKernelStatus } from '../engine/index';
import { wasmThreadsNote } from './nodeBackend';

/**
 * `backend cpu`, `backend wasm (SIMD, 1 thread: tfjs-wasm's Node build is single-threaded ...; tfjs-wasm +
 * Sparring's SIMD kernels)`, or
 * `backend webgpu on <adapter> (software: SwiftShader)`.
 */
export async function backendLine(): Promise<string> {
  const backend = tf.getBackend();
  if (backend === 'wasm') {
    const { getThreadsCount } = await import('@tensorflow/tfjs-backend-wasm');
    const simd = await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT');
    const n = getThreadsCount();
    // The note starts with the count itself ("1 thread: why").
    const threads = (await wasmThreadsNote()) ?? `${n} thread${n === 1 ? '' : 's'}`;
    const ours = wasmKernelStatus()?.ours ? "; tfjs-wasm + Sparring's SIMD kernels" : '';
    return `backend wasm (${simd ? 'SIMD, ' : ''}${threads}${ours})`;
  }
  if (backend !== 'webgpu') return `backend ${backend}`;
  const { dawnAdapter } = await import('./node/dawn');
  const a = dawnAdapter();
  if (!a) return 'backend webgpu on an adapter Dawn did not describe';
  return `backend webgpu on ${a.description}${a.software ? ` (software: ${a.software})` : ''}`;
}
