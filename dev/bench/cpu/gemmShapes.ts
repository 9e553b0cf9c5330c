// Our wasm GEMM (src/engine/kernels/wasmGemm.ts) against tfjs-wasm's stock BatchMatMul on the
// learning step's product shapes, CPU time per call: `npx tsx dev/bench/cpu/gemmShapes.ts`.
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { installWasmKernels } from '../../../src/engine/kernels/wasmGemm';

await tf.setBackend('wasm');
await tf.ready();
const stockKernel = tf.getKernel('BatchMatMul', 'wasm')!;
installWasmKernels();
const stockMatMul = (a: tf.Tensor, b: tf.Tensor) =>
  tf.engine().makeTensorFromTensorInfo(
    stockKernel.kernelFunc({
      inputs: { a, b },
      backend: tf.backend(),
      attrs: { transposeA: false, transposeB: false },
    }) as tf.TensorInfo,
  );
const shapes: [number, number, number][] = [
  [504, 96, 384],
  [504, 384, 96],
  [16, 504, 384],
  [16, 504, 96],
  [504, 16, 384],
  [504, 16, 96],
  [504, 96, 16],
  [504, 384, 16],
  [504, 96, 96],
  [256, 512, 96],
  [1, 96, 384],
  [64, 96, 384],
  // the SmolLM2-135M shape: an MLP product, the LM head at decode and over a 64-token forward
  [64, 576, 1536],
  [1, 576, 49152],
  [64, 576, 49152],
];
const only = process.argv.includes('--big') ? shapes.slice(-3) : shapes;
for (const [m, k, n] of only) {
  const a = tf.randomNormal([m, k]);
  const b = tf.randomNormal([k, n]);
  const reps = Math.max(3, Math.round(2e8 / (m * n * k)));
  const time = (f: () => tf.Tensor) => {
    f().dispose();
    const c0 = process.cpuUsage();
    for (let i = 0; i < reps; i++) f().dispose();
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / 1000 / reps;
  };
  // A fresh b each call is what the tape's activations are: the stock kernel packs it each time.
  const stock = time(() => tf.tidy(() => stockMatMul(a, tf.add(b, 0))));
  const ours = time(() => tf.tidy(() => tf.matMul(a, tf.add(b, 0))));
  // A weight: the same b every call, packed once by the stock kernel.
  const stockKept = time(() => stockMatMul(a, b));
  const oursKept = time(() => tf.matMul(a, b));
  const add = time(() => tf.tidy(() => tf.add(b, 0)));
  console.log(
    `${m} x ${k} x ${n}: stock ${(stock - add).toFixed(3)} ms, ours ${(ours - add).toFixed(3)} ms (${((m * k * n) / (ours - add) / 1e6).toFixed(1)} GMAC/s); a kept b: stock ${stockKept.toFixed(3)}, ours ${oursKept.toFixed(3)} ms`,
  );
}
