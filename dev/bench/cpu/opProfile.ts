// Where the wasm path's time goes, by tfjs kernel: `npx tsx --import ./src/cli/node/wgsl-register.mjs
// dev/bench/cpu/opProfile.ts [--dir public/models/defender] [--work learn|decode] [--shapes
// [--by-count]]`. Counts every kernel that a learning step 8 x (32 + 32) with LoRA r16 everywhere
// (or one decoded token at batch 1 after a 16-token prefill) runs on tfjs-wasm, with the CPU time
// spent in each kind (process.cpuUsage around every kernel: tf.profile's wall times are inflated
// several times on a shared machine), and the total CPU time, kernels and the rest (tfjs's engine
// and tape, host code). Run after a warm-up of the same work.
import * as tf from '@tensorflow/tfjs';
import { resolve } from 'node:path';
import { createKVCache, disposeKVCache, forward } from '../../../src/model/llama';
import { benchLearnStep, wasmBenchLearner } from './learnWork';
import { benchPrompts } from './work';

const argv = process.argv.slice(2);
const flag = (name: string, dflt: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const work = flag('--work', 'learn');
const dir = resolve(flag('--dir', 'public/models/defender'));
const { cfg, model, lora, optimizer } = await wasmBenchLearner(dir);
const V = cfg.vocabSize;
const [B, P, T] = [8, 32, 32];

let counting = true;
const withShapes = argv.includes('--shapes');

async function once(): Promise<void> {
  if (work === 'learn') {
    await benchLearnStep({ model, lora, optimizer }, B, P, T, V);
  } else {
    const ids = benchPrompts(1, 16, V);
    const cache = createKVCache(model, 1, 18);
    counting = false; // the prefill is not counted: one decoded token is
    forward(model, ids, { cache, lastOnly: true }).dispose();
    counting = true;
    const out = forward(model, [[ids[0][0]]], { cache });
    await out.data();
    out.dispose();
    disposeKVCache(cache);
  }
}
await once();
// CPU time per kernel (process.cpuUsage around each wasm kernel; tf.profile's times are wall
// times, which a shared machine inflates several times): every kernel of the backend wrapped.
const stats = new Map<string, { count: number; us: number }>();
for (const k of tf.getKernelsForBackend('wasm')) {
  const inner = k.kernelFunc;
  tf.unregisterKernel(k.kernelName, 'wasm');
  tf.registerKernel({
    ...k,
    kernelFunc: (args) => {
      const c0 = process.cpuUsage();
      const out = inner(args);
      const c = process.cpuUsage(c0);
      if (!counting) return out;
      const keys = [k.kernelName];
      if (withShapes) {
        const shapes = Object.values(args.inputs)
          .map((t) => `[${(t as tf.TensorInfo).shape}]`)
          .join(' ');
        const t = args.attrs as { transposeA?: boolean; transposeB?: boolean };
        const flags = k.kernelName === 'BatchMatMul' ? ` ${t.transposeA ? 'T' : 'N'}${t.transposeB ? 'T' : 'N'}` : '';
        keys.push(`${k.kernelName} ${shapes}${flags}`);
      }
      for (const key of keys) {
        const a = stats.get(key) ?? { count: 0, us: 0 };
        a.count++;
        a.us += c.user + c.system;
        stats.set(key, a);
      }
      return out;
    },
  });
}
const c0 = process.cpuUsage();
await once();
const c = process.cpuUsage(c0);
const kinds = [...stats].filter(([key]) => !key.includes(' ')).sort((a, b) => b[1].us - a[1].us);
const total = kinds.reduce((s, [, a]) => s + a.count, 0);
const inKernels = kinds.reduce((s, [, a]) => s + a.us, 0) / 1000;
console.log(
  `${work}: ${total} kernels, ${inKernels.toFixed(0)} ms CPU in kernels of ${((c.user + c.system) / 1000).toFixed(0)} ms CPU`,
);
for (const [name, a] of kinds)
  console.log(`${name.padEnd(24)} ${String(a.count).padStart(5)} ${(a.us / 1000).toFixed(2).padStart(9)} ms`);
if (withShapes) {
  const shaped = [...stats].filter(([key]) => key.includes(' ')).sort((a, b) => b[1].us - a[1].us);
  const by = argv.includes('--by-count') ? shaped.sort((a, b) => b[1].count - a[1].count) : shaped;
  for (const [key, a] of by.slice(0, 40))
    console.log(`${String(a.count).padStart(5)} ${(a.us / 1000).toFixed(2).padStart(9)} ms  ${key}`);
}
process.exit(0);
