// The learning step 8 x (32 + 32) of the sandbox defender on tfjs-wasm alone, CPU and wall time
// over N repeats after 3 warm-ups (medians and minima: on a shared machine the minimum is the
// steadier figure), for profiling it: `node --cpu-prof --cpu-prof-interval 100 --import tsx
// --import ./src/cli/node/wgsl-register.mjs dev/bench/cpu/learnTime.ts [--reps N] [--dir D]`
// (BENCHMARKS.md, issue 42's fourth pass), or with --single-threaded-gc beside it.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseModelConfig } from '../../../src/contract/modelConfig';
import { useTrainingBackend } from '../../../src/cli/nodeBackend';
import { loadLlama, PROJ_NAMES } from '../../../src/model/llama';
import { attachLora } from '../../../src/model/lora';
import { parseSafetensors } from '../../../src/model/safetensors';
import { AdamW } from '../../../src/rl/optim';
import { benchLearnStep } from './learnWork';

const argv = process.argv.slice(2);
const flag = (name: string, dflt: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const dir = resolve(flag('--dir', 'public/models/defender'));
const reps = Number(flag('--reps', '10'));
await useTrainingBackend('wasm');
const cfg = parseModelConfig(readFileSync(`${dir}/config.json`, 'utf8'), 'config.json');
const model = loadLlama(
  cfg,
  parseSafetensors(new Uint8Array(readFileSync(`${dir}/model.safetensors`)), 'model.safetensors'),
);
const lora = attachLora(model, { r: 16, alpha: 32, targets: [...PROJ_NAMES], seed: 1 });
const optimizer = new AdamW({ lr: 1e-3 });
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
