// The kernel and whole-model benchmarks in Node on a GPU, through Dawn (the `webgpu` npm package)
// instead of Chromium: the figures for machines with a GPU and no browser. Run by
// `npm run bench:gpu [-- --quick] [-- --kernels | --models | --decode | --profile-step | --learn [--recompute]] [-- --no-smol]
// [-- --swiftshader]`, which bundles this
// file (src/cli/build-gpu-bench.ts) so tfjs and the WGSL sources travel as one script. Needs a
// Vulkan driver; `--swiftshader` uses Chromium's CPU one. SPARRING_WEBGPU_MODULE names a carried
// copy of the `webgpu` package where node_modules is absent.
import { setCustomKernels } from '../engine/kernels/wgslProgram';
import { profileDecode } from '../model/profile';
import { SMOLLM2_135M_CONFIG, syntheticModel } from '../model/synthetic';
import { measureThroughput, type ThroughputCase, type ThroughputResult } from '../model/throughput';
import { benchKernels, benchWholeSteps } from '../worker/bench';
import { benchDecodePaths, benchRollouts, decodeBenchRows, DECODE_BENCH_HEADER, rolloutBenchRows, ROLLOUT_BENCH_HEADER } from '../model/decodeBench';
import { disposeLlama } from '../model/llama';
import { loadModel } from '../model/load';
import { f16Quantizer, int4Quantizer, int8Quantizer } from '../model/quant';
import { folderSource } from './fs-source';
import { profileGrpoStep, profileOptimizerUpdate, type StepProfileCase } from '../rl/stepProfile';
import { setOptimizerPath } from '../rl/plannedOptim';
import { setLearnRecompute } from '../model/plannedLearn';
import { benchLearnPaths, LEARN_BENCH_CASE, LEARN_BENCH_HEADER, learnBenchRows, learnBenchTitle } from '../rl/learnBench';
import { kernelTable } from './kernelTable';
import { startDawn } from './node/dawn';
import { formatTable } from './table';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const kernelsOnly = args.includes('--kernels');
const modelsOnly = args.includes('--models');
const decodeOnly = args.includes('--decode');
/** With --decode: only the whole-rollout table. */
const rolloutOnly = args.includes('--rollout');
const profileOnly = args.includes('--profile-step');
const learnOnly = args.includes('--learn');
const reps = quick ? 3 : 9;

const THROUGHPUT_HEADER = ['model', 'kernels', 'batch', 'prompt', 'prefill tok/s', 'decode tok/s (KV cache)', 'decode tok/s (no cache)'];
const row = (name: string, kernels: string, r: ThroughputResult) => [name, kernels, r.batch, r.promptLen, r.prefillTokPerS, r.decodeTokPerS, r.noCacheTokPerS];

const adapter = await startDawn({ swiftshader: args.includes('--swiftshader'), module: process.env.SPARRING_WEBGPU_MODULE });
console.log(`\n== Node + Dawn, tfjs webgpu backend (adapter: ${adapter})`);
if (learnOnly) {
  // The learning step, planned vs tfjs in the same run (issue 21): the sandbox defender in f32 and
  // int4, and the SmolLM2-135M shape unless --no-smol; 2 prompts x G 8 x (16 + 8) tokens, LoRA r 16.
  // --recompute: the planned step recomputes activations per layer (else the planner's choice).
  const c = LEARN_BENCH_CASE;
  if (args.includes('--recompute')) setLearnRecompute('on');
  const cases: [string, string, () => Promise<import('../model/llama').LlamaModel>][] = [
    ['sandbox defender', 'f32', () => loadModel(folderSource('public/models/defender'))],
    ['sandbox defender', 'int4', () => loadModel(folderSource('public/models/defender'), { quantize: int4Quantizer(32) })],
  ];
  if (!args.includes('--no-smol')) cases.push(['SmolLM2-135M shape', 'f32', () => syntheticModel(SMOLLM2_135M_CONFIG)]);
  const rows: (string | number)[][] = [];
  for (const [name, fmt, load] of cases) {
    const model = await load();
    const r = await benchLearnPaths(model, c, quick ? 1 : 3);
    disposeLlama(model);
    for (const x of r) console.error(`  ${name} ${fmt} ${x.path}: ${x.ms.toFixed(0)} ms, ${x.dispatches} dispatches`);
    rows.push(...learnBenchRows(name, fmt, r));
  }
  console.log(`\n${learnBenchTitle('Node + Dawn', c)}${args.includes('--recompute') ? ', activations recomputed per layer' : ''}\n`);
  console.log(formatTable(LEARN_BENCH_HEADER, rows));
  process.exit(0);
}
if (profileOnly) {
  // Where one GRPO step's time goes (rollout and learn planned, the update on either optimiser): phases, WebGPU
  // work and tfjs's kernels. The sandbox defender, and the SmolLM2-135M shape unless --no-smol.
  const models: [string, () => Promise<import('../model/llama').LlamaModel>, StepProfileCase][] = [
    ['sandbox defender', () => loadModel(folderSource('public/models/defender')), { prompts: 2, groupSize: 8, promptLen: 16, newTokens: 8, rank: 16 }],
  ];
  if (!args.includes('--no-smol')) models.push(['SmolLM2-135M shape', () => syntheticModel(SMOLLM2_135M_CONFIG), { prompts: 2, groupSize: 8, promptLen: 16, newTokens: 8, rank: 16 }]);
  for (const [name, load, c] of models) {
    const model = await load();
    // The optimiser update alone on both paths (issue 21 step 3): the planned GPU AdamW vs tfjs.
    const optRows: (string | number)[][] = [];
    for (const path of ['tfjs', 'planned'] as const) {
      const o = await profileOptimizerUpdate(model, c.rank, path);
      optRows.push([path, o.params, o.dispatches, o.submits, o.buffersCreated, o.readbacks, o.hostMs, o.ms]);
    }
    for (const path of ['tfjs', 'planned'] as const) {
      setOptimizerPath(path);
      const p = await profileGrpoStep(model, c);
      console.log(`\n== Node + Dawn: one GRPO step of the ${name}, ${c.prompts} prompts x G ${c.groupSize} x ${c.newTokens} new tokens, LoRA r ${c.rank} on every projection (after a warm-up step), optimiser: ${path}\n`);
      console.log(formatTable(['phase', 'ms'], Object.entries(p.phases).map(([k, v]) => [k, v])));
      if (p.gpu) {
        const g = p.gpu;
        console.log(`\nWebGPU: ${g.dispatches} dispatches, ${g.submits} submits, ${g.buffersCreated} buffers created (${(g.bytesCreated / 2 ** 20).toFixed(1)} MiB), ${g.readbacks} readbacks waiting ${g.readbackWaitMs.toFixed(0)} ms; host ${g.hostMs.toFixed(0)} ms of ${g.ms.toFixed(0)} ms wall`);
      }
      console.log(`tfjs: ${p.tfjsKernels} kernels, ${p.newTensors} new tensors, peak ${(p.peakBytes / 2 ** 20).toFixed(1)} MiB\n`);
      console.log(formatTable(['tfjs kernel', 'count', 'GPU ms', 'MiB allocated'], p.kernels.slice(0, 15).map((k) => [k.name, k.count, k.gpuMs, k.bytes / 2 ** 20])));
    }
    setOptimizerPath('planned');
    console.log(`\n== Node + Dawn: the optimiser update alone (clip + skip check + AdamW) of the ${name}, LoRA r ${c.rank} on every projection, per update (mean of 5 after 2 warm-up)\n`);
    console.log(formatTable(['optimiser', 'parameters', 'dispatches', 'submits', 'buffers created', 'readbacks', 'host ms', 'wall ms'], optRows));
    disposeLlama(model);
  }
  process.exit(0);
}
if (!modelsOnly && !decodeOnly) {
  console.log(`\n== Node + Dawn: kernels (medians of ${reps})\n`);
  console.log(kernelTable(await benchKernels(reps)));
}
if (kernelsOnly) process.exit(0);

const formats = [
  ['f32', {}],
  ['int8', { quantize: int8Quantizer() }],
  ['int4', { quantize: int4Quantizer(32) }],
  ['f16', { quantize: f16Quantizer() }],
] as const;
if (!rolloutOnly) {
  console.log(`\n== Node + Dawn: decode, planned path vs tfjs op by op (same run, same weights; medians)\n`);
  const rows: (string | number)[][] = [];
  // On a CPU adapter the SmolLM2-135M shape at large batches takes minutes per path: --quick
  // keeps the sandbox defender's full grid and the 135M shape at batch 1 and 8.
  const smolBatches = args.includes('--no-smol') ? [] : quick ? [1, 8] : [1, 8, 64, 256];
  const progress = (name: string, fmt: string, r: Awaited<ReturnType<typeof benchDecodePaths>>) => {
    console.error(`  ${name} ${fmt} batch ${r[0].batch}: planned ${r[0].tokPerS.toFixed(1)} tok/s, host ${r[0].hostMsPerToken.toFixed(2)} ms/token; tfjs ${r[1].tokPerS.toFixed(1)} tok/s, host ${r[1].hostMsPerToken.toFixed(2)} ms/token`);
    return decodeBenchRows(name, fmt, r);
  };
  for (const [fmt, opts] of formats) {
    const defender = await loadModel(folderSource('public/models/defender'), opts);
    for (const batch of [1, 8, 64]) {
      rows.push(...progress('sandbox defender', fmt, await benchDecodePaths(defender, { batch, promptLen: 16, steps: quick ? 8 : 32, reps: quick ? 3 : 5 })));
    }
    disposeLlama(defender);
    if (smolBatches.length === 0) continue;
    const model = await syntheticModel(SMOLLM2_135M_CONFIG, 1, opts);
    for (const batch of smolBatches) {
      rows.push(...progress('SmolLM2-135M shape', fmt, await benchDecodePaths(model, { batch, promptLen: 64, steps: quick ? 4 : 32, reps: quick ? 2 : 5 })));
    }
    disposeLlama(model);
  }
  console.log(formatTable(DECODE_BENCH_HEADER, rows));
}
if (decodeOnly) {
  console.log(`\n== Node + Dawn: whole sandbox rollouts, 64 rows x (16 prompt + 16 new) tokens (medians)\n`);
  const rows: (string | number)[][] = [];
  for (const [fmt, opts] of formats) {
    const defender = await loadModel(folderSource('public/models/defender'), opts);
    rows.push(...rolloutBenchRows('sandbox defender', fmt, await benchRollouts(defender, { batch: 64, promptLen: 16, newTokens: 16, reps: quick ? 2 : 3 })));
    disposeLlama(defender);
  }
  console.log(formatTable(ROLLOUT_BENCH_HEADER, rows));
  process.exit(0);
}

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
