// The tfjs backend the Node entry points train on: wasm when it starts (with the one kernel its
// gradients lack), else cpu. Shared by the recipe runner, the exporter and the sandbox builder.
import * as tf from '@tensorflow/tfjs';
import { availableParallelism } from 'node:os';
import { describeWasmThreads, wasmThreadRequest, type WasmThreadEnv } from '../contract/wasmThreads';
import { installWasmKernels, shareWasmIdentity } from '../engine/index';

const nodeThreads = (): WasmThreadEnv => ({ node: true, isolated: false, cores: availableParallelism() });

/** The wasm backend's threads in Node and why (after it started): shown in the run's first line. */
export async function wasmThreadsNote(): Promise<string | null> {
  const wasm = await import('@tensorflow/tfjs-backend-wasm');
  try {
    return describeWasmThreads(nodeThreads(), wasm.getThreadsCount(), false).why;
  } catch {
    return null; // not started here (a test's injected env)
  }
}

/**
 * The wasm backend of tfjs 4.22 has no UnsortedSegmentSum kernel, which the gradient of
 * tf.gather (the embedding lookup) needs. This registers one written in plain JS over the wasm
 * heap: out[seg[i], :] += x[i, :]. Idempotent.
 */
export function registerWasmSegmentSum(): void {
  if (tf.getKernel('UnsortedSegmentSum', 'wasm')) return;
  tf.registerKernel({
    kernelName: 'UnsortedSegmentSum',
    backendName: 'wasm',
    kernelFunc: ({ inputs, attrs, backend }) => {
      const { x, segmentIds } = inputs as { x: tf.TensorInfo; segmentIds: tf.TensorInfo };
      const numSegments = (attrs as unknown as { numSegments: number }).numSegments;
      const be = backend as unknown as {
        typedArrayFromHeap(t: tf.TensorInfo): Float32Array | Int32Array;
        makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
      };
      const inner = x.shape.slice(segmentIds.shape.length).reduce((a, b) => a * b, 1);
      const n = segmentIds.shape.reduce((a, b) => a * b, 1);
      const out = be.makeOutput([numSegments, ...x.shape.slice(segmentIds.shape.length)], x.dtype);
      const o = be.typedArrayFromHeap(out);
      o.fill(0);
      const xs = be.typedArrayFromHeap(x);
      const ids = be.typedArrayFromHeap(segmentIds);
      for (let i = 0; i < n; i++) {
        const s = ids[i];
        if (s < 0 || s >= numSegments) continue;
        const src = i * inner;
        const dst = s * inner;
        for (let j = 0; j < inner; j++) o[dst + j] += xs[src + j];
      }
      return out;
    },
  });
}

/** Picks the tfjs backend for training in Node: wasm when it starts, else cpu. */
export async function useTrainingBackend(prefer: 'wasm' | 'cpu' = 'wasm'): Promise<string> {
  if (prefer === 'wasm') {
    try {
      const wasm = await import('@tensorflow/tfjs-backend-wasm');
      // The page's rule (src/contract/wasmThreads.ts); in Node it asks for 1 while tfjs-wasm has no threads there.
      wasm.setThreadsCount(wasmThreadRequest(nodeThreads()));
      registerWasmSegmentSum();
      shareWasmIdentity();
      installWasmKernels();
      if (await tf.setBackend('wasm')) {
        await tf.ready();
        return 'wasm';
      }
    } catch {
      // fall through to cpu
    }
  }
  await tf.setBackend('cpu');
  await tf.ready();
  return 'cpu';
}
