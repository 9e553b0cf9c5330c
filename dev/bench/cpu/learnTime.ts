// The learning step 8 x (32 + 32) of the sandbox defender on tfjs-wasm alone, CPU and wall time
// over N repeats after 3 warm-ups (medians and minima: on a shared machine the minimum is the
// steadier figure), for profiling it: `node --cpu-prof --cpu-prof-interval 100 --import tsx
// --import ./src/cli/node/wgsl-register.mjs dev/bench/cpu/learnTime.ts [--reps N] [--dir D]`
// (BENCHMARKS.md, issue 42's fourth pass), or with --single-threaded-gc beside it.
import { resolve } from 'node:path';
import { benchLearnStep, wasmBenchLearner } from './learnWork';

const argv = process.argv.slice(2);
const flag = (name: string, dflt: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const dir = resolve(flag('--dir', 'public/models/defender'));
const reps = Number(flag('--reps', '10'));
const { cfg, model, lora, optimizer } = await wasmBenchLearner(dir);
for (let i = 0; i < 3; i++) await benchLearnStep({ model, lora, optimizer }, 8, 32, 32, cfg.vocabSize);
const cpu: number[] = [];
const wall: number[] = [];
for (let i = 0; i < reps; i++) {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await benchLearnStep({ model, lora, optimizer }, 8, 32, 32, cfg.vocabSize);
  wall.push(performance.now() - t0);
  const c = process.cpuUsage(c0);
  cpu.push((c.user + c.system) / 1000);
}
const med = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1].toFixed(1);
const min = (a: number[]) => Math.min(...a).toFixed(1);
console.log(
  `learn: CPU median ${med(cpu)} min ${min(cpu)} ms, wall median ${med(wall)} min ${min(wall)} ms (${reps} reps)`,
);
process.exit(0);
