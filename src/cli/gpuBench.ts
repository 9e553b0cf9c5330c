// The kernel and whole-model benchmarks in Node on a real GPU, through Dawn (the `webgpu` npm
// package) instead of Chromium: the figures for machines with a GPU and no browser. Run by
// `npm run bench:gpu [-- --quick] [-- --kernels | --models]`, which bundles this file (src/cli/build-gpu-bench.ts) so tfjs and the WGSL
// sources travel as one script. Needs the `webgpu` package (`npm install --no-save webgpu`, or
// SPARRING_WEBGPU_MODULE=/path/to/webgpu/index.js) and a Vulkan driver.
import * as tf from '@tensorflow/tfjs';
import { setCustomKernels } from '../engine/kernels/wgslProgram';
import { registerWebGPUBackend } from '../engine/kernels/gpuFeatures';
import { profileDecode } from '../model/profile';
import { SMOLLM2_135M_CONFIG, syntheticModel } from '../model/synthetic';
import { measureThroughput, type ThroughputCase, type ThroughputResult } from '../model/throughput';
import { benchKernels, benchWholeSteps } from '../worker/bench';
import { kernelTable } from './kernelTable';
import { formatTable } from './table';

interface DawnModule {
  create(flags: string[]): GPU;
  globals: Record<string, unknown>;
}

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const kernelsOnly = args.includes('--kernels');
const modelsOnly = args.includes('--models');
const reps = quick ? 3 : 9;

async function startWebGPU(): Promise<string> {
  const spec = process.env.SPARRING_WEBGPU_MODULE ?? 'webgpu';
  const dawn = (await import(/* @vite-ignore */ spec)) as DawnModule;
  Object.assign(globalThis, dawn.globals);
  // tfjs-backend-webgpu registers itself on import only where navigator.gpu exists.
  // Dawn rounds timestamps to 100 us by default (a browser anti-fingerprinting measure).
  Object.defineProperty(globalThis, 'navigator', { value: { gpu: dawn.create(['disable-dawn-features=timestamp_quantization']) }, configurable: true, writable: true });
  const adapter = await navigator.gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) throw new Error('Dawn found no GPU adapter (is a Vulkan driver installed? VK_DRIVER_FILES may need to name its ICD json)');
  registerWebGPUBackend(await import('@tensorflow/tfjs-backend-webgpu'));
  if (!(await tf.setBackend('webgpu'))) throw new Error('tf.setBackend("webgpu") failed on this adapter');
  await tf.ready();
  const device = (tf.backend() as unknown as { device: GPUDevice }).device;
  device.addEventListener('uncapturederror', (e) => console.error(`uncaptured WebGPU error: ${(e as GPUUncapturedErrorEvent).error.message}`));
  const i = adapter.info;
  return `${i.vendor} ${i.architecture} ${i.description}`.replace(/\s+/g, ' ').trim();
}

const THROUGHPUT_HEADER = ['model', 'kernels', 'batch', 'prompt', 'prefill tok/s', 'decode tok/s (KV cache)', 'decode tok/s (no cache)'];
const row = (name: string, kernels: string, r: ThroughputResult) => [name, kernels, r.batch, r.promptLen, r.prefillTokPerS, r.decodeTokPerS, r.noCacheTokPerS];

const adapter = await startWebGPU();
console.log(`\n== Node + Dawn, tfjs webgpu backend (adapter: ${adapter})`);
if (!modelsOnly) {
  console.log(`\n== Node + Dawn: kernels (medians of ${reps})\n`);
  console.log(kernelTable(await benchKernels(reps)));
}
if (kernelsOnly) process.exit(0);

console.log(`\n== Node + Dawn: SmolLM2-135M shape (random weights), custom kernels on vs off (medians)\n`);
const smol = await syntheticModel(SMOLLM2_135M_CONFIG);
const rows: (string | number)[][] = [];
for (const batch of [1, 8]) {
  const c: ThroughputCase = { batch, promptLen: 64, decodeSteps: quick ? 8 : 32, reps: quick ? 2 : 5 };
  for (const on of [true, false]) {
    setCustomKernels(on);
    rows.push(row('SmolLM2-135M shape', on ? 'ours' : 'stock', await measureThroughput(smol, c)));
  }
  setCustomKernels(true);
}
console.log(formatTable(THROUGHPUT_HEADER, rows));

console.log(`\n== Node + Dawn: one cached decode step of the SmolLM2-135M shape, batch 1, by kernel (tf.profile)\n`);
const prof = await profileDecode(smol, Array.from({ length: 64 }, (_, i) => (7 * i + 3) % 49152));
console.log(`wall ${prof.wallMs.toFixed(1)} ms; ${prof.kernels.reduce((a, k) => a + k.count, 0)} tfjs kernels (the fused WGSL kernels are not listed)`);
console.log(formatTable(['kernel', 'count', 'GPU ms'], prof.kernels.slice(0, 12).map((k) => [k.name, k.count, k.ms])));

console.log(`\n== Node + Dawn: whole steps on the SmolLM2-135M shape, custom kernels on vs off (medians)\n`);
const steps = await benchWholeSteps(smol, quick ? 2 : 5);
console.log(
  formatTable(
    ['step', 'shape', 'kernels ms', 'stock ms', 'speed-up'],
    steps.map((k) => [k.name, k.shape, k.oursMs, k.stockMs, `${(k.stockMs / k.oursMs).toFixed(2)}x`]),
  ),
);
process.exit(0);
