// One stderr line saying what a command ran on: the tfjs backend and, on WebGPU, the adapter Dawn
// gave (a hardware GPU, or a software one: SwiftShader, lavapipe). A figure from the CLI is only
// read right beside it (issue 41: `logits --backend webgpu` never said which adapter it ran on).
import * as tf from '@tensorflow/tfjs';

/** `backend wasm`, or `backend webgpu on <adapter> (software: SwiftShader)`. */
export async function backendLine(): Promise<string> {
  const backend = tf.getBackend();
  if (backend !== 'webgpu') return `backend ${backend}`;
  const { dawnAdapter } = await import('./node/dawn');
  const a = dawnAdapter();
  if (!a) return 'backend webgpu on an adapter Dawn did not describe';
  return `backend webgpu on ${a.description}${a.software ? ` (software: ${a.software})` : ''}`;
}
