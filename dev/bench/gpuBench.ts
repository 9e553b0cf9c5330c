// The kernel and whole-model benchmarks in Node on a GPU, through Dawn (the `webgpu` npm package)
// instead of Chromium: the figures for machines with a GPU and no browser. Run by
// `npm run bench:gpu [-- --quick] [-- --kernel-table | --models | --decode | --profile-step | --learn [--recompute] | --all] [-- --no-smol]
// [-- --vulkan swiftshader|lavapipe|system] [-- --kernels auto|gpu|software] [-- --out DIR]` (`--help` lists every
// flag), which bundles this file (dev/bench/build-gpu-bench.ts) so tfjs and the WGSL sources travel as
// one script. Needs a Vulkan driver; a software adapter (SwiftShader, lavapipe) is refused unless asked
// for by --vulkan or --allow-software. Before it times anything it checks the planned path against
// tfjs on the adapter (dev/bench/benchCheck.ts) and stops on a mismatch. SPARRING_WEBGPU_MODULE names
// a carried copy of the `webgpu` package where node_modules is absent.
import { profileDecode } from './profile';
import { SMOLLM2_135M_CONFIG, syntheticModel } from './synthetic';
import { measureThroughput, type ThroughputCase, type ThroughputResult } from './throughput';
import { benchKernels, benchWholeSteps } from './kernelBench';
import {
  benchDecodePaths,
  benchPlannedGemm,
  benchRollouts,
  plannedGemmRows,
  PLANNED_GEMM_HEADER,
  decodeBenchRows,
  DECODE_BENCH_HEADER,
  rolloutBenchRows,
  ROLLOUT_BENCH_HEADER,
} from './decodeBench';
import { disposeLlama } from '../../src/model/llama';
import { loadModel } from '../../src/model/load';
import { f16Quantizer, int4Quantizer, int8Quantizer } from '../../src/model/quant';
import { folderSource } from '../../src/cli/fs-source';
import { profileGrpoStep, profileOptimizerUpdate, type StepProfileCase } from './stepProfile';
import { benchLearnPaths, LEARN_BENCH_CASE, LEARN_BENCH_HEADER, learnBenchRows, learnBenchTitle } from './learnBench';
import { kernelTable } from './kernelTable';
import { BenchReport, flagValue } from './benchReport';
import { setEngineOptions } from '../../src/engine';
import { measureRoofline, peakNote, ROOFLINE_HEADER, rooflineRows, type Roofline } from './roofline';
import { attentionBenchRows, ATTENTION_BENCH_HEADER, benchPlannedAttention } from './decodeBench';
import { benchGrpoStepPaths, parseLearnCase, STEP_BENCH_HEADER, stepBenchRows, stepBenchTitle } from './learnBench';
import {
  dawnAdapter,
  parseKernelVariants,
  parseVulkanDriver,
  startDawn,
  useKernelVariants,
} from '../../src/cli/node/dawn';
import { CHECK_SMALL_CONFIG, checkModel, type CheckLine } from './benchCheck';
import { formatTable } from './table';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
// --kernels X picks the kernel variants; a bare --kernels (no variant after it) is the old name of --kernel-table.
const kernelsValue = args[args.indexOf('--kernels') + 1];
const kernelVariants =
  args.includes('--kernels') && kernelsValue !== undefined && !kernelsValue.startsWith('--')
    ? parseKernelVariants(kernelsValue)
    : 'auto';
const kernelsOnly =
  args.includes('--kernel-table') || (args.includes('--kernels') && (kernelsValue ?? '--').startsWith('--'));
const modelsOnly = args.includes('--models');
const decodeOnly = args.includes('--decode');
const gemmAbOnly = args.includes('--gemm-ab');
/** With --decode: only the whole-rollout table. */
const rolloutOnly = args.includes('--rollout');
const profileOnly = args.includes('--profile-step');
const learnOnly = args.includes('--learn');
const reps = quick ? 3 : 9;
/** Every table for BENCHMARKS.md in one run: roofline, decode, split-K attention, rollouts, learn step, whole GRPO step. */
const all = args.includes('--all');

if (args.includes('--help')) {
  console.log(`npm run bench:gpu -- [flags]   (Node + Dawn; tables of medians, planned path vs tfjs in the same run)
  --kernel-table        the custom-kernel table only (a bare --kernels too)
  --models              the SmolLM2-135M throughput, decode profile and whole-step tables only
  --decode              the planned-vs-tfjs decode table (per token, batch 1/8/64, and 256 without --quick) and the rollout table
  --rollout             with --decode: the rollout table only
  --learn               the learning step, planned vs tfjs (learn ms, tok/s, GFLOP/s against the measured matmul roofline,
                        peak GPU memory), then the whole GRPO step on each path; --no-step leaves the whole step out
  --recompute           with --learn: the planned step recomputes activations per layer (A/B against the planner's choice)
  --profile-step        where one GRPO step's time goes (phases, WebGPU work, tfjs kernels), both optimisers
  --all                 the open targets' rows first (decode b1/b64/b256 and the learn step and whole GRPO step of the
                        SmolLM2-135M shape, int4), then the rest of the decode, learn and step tables, split-K
                        attention at long caches, rollouts; every table written row by row
  --out DIR             also write the tables to DIR/bench.md and DIR/bench.json (rewritten after every row)
  --budget-s N          skip the tables not yet started once N seconds have passed (--all on a 10-minute machine)
  --quick               fewer reps and tokens
  --vulkan D            Dawn's Vulkan driver: system (default, the machine's GPU), swiftshader or lavapipe (CPU drivers)
  --swiftshader         short for --vulkan swiftshader
  --kernels K           kernel variants: auto (by adapter, default), gpu or software (either family on any adapter)
  --allow-software      time a software adapter the system driver gave (refused otherwise: CPU figures are not GPU ones)
  --no-check            skip the planned-vs-tfjs check before timing (software adapters only)
  --no-smol             leave the SmolLM2-135M shape out everywhere
  --smol                the SmolLM2-135M shape in --learn / --all on a software adapter too (by default only on a GPU:
                        at the full 8 x 8 x (64 + 64) case a SwiftShader learn step of it takes hours)
  --learn-shape PxGxN+T the learn / whole-step case, prompts x group x prompt tokens + new tokens (default 8x8x64+64)
  --attention whole|splitk   force the planned decode attention in the decode table (default: the planner's choice,
                        split-K on GPUs for caches over 1024 slots)
  --gemm-ab             only the planned GEMM A/B: prefill and batch-64 decode (--batches N: batch N) of the sandbox
                        defender (f32, int4), projections of 32 rows or more on the tiled GEMM vs the GEMVs, alternated
  --planned-gemm tiled|gemv  force the planned path's projections of 32 rows or more (prefill chunks, large
                        batches) onto the tiled GEMM or the GEMVs (default: by kernel family, tiled with the GPU kernels)
  --cache N[,N...]      the split-K table's cache lengths (default 2048,4096 on a GPU; none on a software adapter)
  --batches N[,N...]    the decode table's batch sizes (default 1,8,64,256; --quick 1,8,64 for the defender, 1,8 for the 135M shape)
  --skip ID[,ID...]     with --all: leave out tables by id (decode, attention, rollout, learn, step)
  --roofline N          the matmul roofline's size N^3 (default 4096 on a GPU, 512 on a software adapter, 256 with --quick)`);
  process.exit(0);
}
const outDir = flagValue(args, '--out');
const skipped = new Set((flagValue(args, '--skip') ?? '').split(',').filter(Boolean));
const batchesArg = flagValue(args, '--batches')
  ?.split(',')
  .map((x) => {
    const n = Number(x);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--batches: batch sizes are positive integers, got "${x}"`);
    return n;
  });
const budgetArg = flagValue(args, '--budget-s');
const learnCase = flagValue(args, '--learn-shape')
  ? parseLearnCase(flagValue(args, '--learn-shape')!)
  : LEARN_BENCH_CASE;
const attentionFlag = flagValue(args, '--attention');
if (attentionFlag !== null && attentionFlag !== 'whole' && attentionFlag !== 'splitk')
  throw new Error(`--attention must be whole or splitk, got "${attentionFlag}"`);
const attentionArg = attentionFlag as 'whole' | 'splitk' | null;
const plannedGemmFlag = flagValue(args, '--planned-gemm');
if (plannedGemmFlag !== null && plannedGemmFlag !== 'tiled' && plannedGemmFlag !== 'gemv')
  throw new Error(`--planned-gemm must be tiled or gemv, got "${plannedGemmFlag}"`);
const cacheArg = flagValue(args, '--cache');
const caches =
  cacheArg === null
    ? null
    : cacheArg.split(',').map((x) => {
        const n = Number(x);
        if (!Number.isInteger(n) || n < 64)
          throw new Error(`--cache: cache lengths are integers of at least 64, got "${x}"`);
        return n;
      });

const THROUGHPUT_HEADER = [
  'model',
  'kernels',
  'batch',
  'prompt',
  'prefill tok/s',
  'decode tok/s (KV cache)',
  'decode tok/s (no cache)',
];
const row = (name: string, kernels: string, r: ThroughputResult) => [
  name,
  kernels,
  r.batch,
  r.promptLen,
  r.prefillTokPerS,
  r.decodeTokPerS,
  r.noCacheTokPerS,
];

const vulkanArg = flagValue(args, '--vulkan');
const vulkan =
  vulkanArg !== null ? parseVulkanDriver(vulkanArg) : args.includes('--swiftshader') ? 'swiftshader' : 'system';
const adapter = await startDawn({ vulkan, module: process.env.SPARRING_WEBGPU_MODULE });
useKernelVariants(kernelVariants);
if (plannedGemmFlag) setEngineOptions({ plannedGemm: plannedGemmFlag });
console.log(
  `\n== Node + Dawn, tfjs webgpu backend (adapter: ${adapter}; kernels: ${kernelVariants}${plannedGemmFlag ? `; planned GEMM: ${plannedGemmFlag}` : ''})`,
);
/** A CPU adapter: sizes and the SmolLM2-135M learn case are cut to what finishes in minutes there. */
const softwareName = dawnAdapter()?.software ?? null;
const software = softwareName !== null;
if (software && vulkan === 'system' && !args.includes('--allow-software')) {
  // The GPU's driver did not load and the loader fell back to a CPU one: its figures would pass for GPU ones.
  console.error(
    `gpu-bench: refusing to time a software adapter (${softwareName}: ${adapter}); --allow-software times it anyway`,
  );
  process.exit(3);
}
if (args.includes('--no-check') && !software)
  throw new Error('--no-check: a GPU is always checked before it is timed (the flag is for software adapters)');
const report = new BenchReport(
  outDir,
  {
    title: 'Node + Dawn benchmarks (npm run bench:gpu)',
    adapter,
    kernels: kernelVariants,
    date: new Date().toISOString(),
    command: `npm run bench:gpu -- ${args.join(' ')}`,
  },
  budgetArg === null ? null : Number(budgetArg),
);

/**
 * The planned path against tfjs on this adapter before anything is timed: a small model in f32 and
 * int4, and on a GPU the SmolLM2-135M shape in int4 (the timed one); prompts over 256 and 1024 tokens.
 */
async function checkBeforeTiming(): Promise<void> {
  if (args.includes('--no-check')) return;
  const t0 = Date.now();
  // On a software adapter (timed only for ratios) the small model in int4 alone keeps the check to minutes.
  const models: [string, Loader][] = [
    ['small int4', () => syntheticModel(CHECK_SMALL_CONFIG, 1, { quantize: int4Quantizer(32) })],
  ];
  if (!software) models.unshift(['small f32', () => syntheticModel(CHECK_SMALL_CONFIG)]);
  if (!software && !noSmol)
    models.push([
      'SmolLM2-135M shape int4',
      () => syntheticModel(SMOLLM2_135M_CONFIG, 1, { quantize: int4Quantizer(32) }),
    ]);
  const lines: CheckLine[] = [];
  for (const [name, load] of models) {
    const model = await load();
    try {
      lines.push(
        ...(await checkModel(model, name, true, (l) =>
          console.error(`  check ${l.ok ? 'ok' : 'MISMATCH'}: ${l.what}: ${l.detail}`),
        )),
      );
    } finally {
      disposeLlama(model);
    }
  }
  const bad = lines.filter((l) => !l.ok);
  report.note(
    'check',
    `== Node + Dawn: planned path vs tfjs on this adapter before timing (${kernelVariants} kernels; ${((Date.now() - t0) / 1000).toFixed(0)} s)`,
    lines.map((l) => `- ${l.ok ? 'ok' : 'MISMATCH'}: ${l.what}: ${l.detail}`),
  );
  if (bad.length > 0) {
    console.error(
      `gpu-bench: the planned path disagrees with tfjs on this adapter, nothing timed: ${bad[0].what}: ${bad[0].detail}${bad.length > 1 ? ` (and ${bad.length - 1} more)` : ''}`,
    );
    process.exit(1);
  }
}
const noSmol = args.includes('--no-smol');
const smolLearn = !noSmol && (!software || args.includes('--smol'));

let roofline: Roofline | null = null;
/** The roofline, measured once per run before the first table that is read against it. */
async function rooflineOnce(): Promise<Roofline> {
  if (roofline) return roofline;
  const n = Number(flagValue(args, '--roofline') ?? (software ? (quick ? 256 : 512) : 4096));
  roofline = await measureRoofline(n, quick ? 3 : 5);
  report.table(
    'roofline',
    `== Node + Dawn: measured roofline (medians of ${quick ? 3 : 5} after a warm-up)`,
    ROOFLINE_HEADER,
    rooflineRows(roofline),
    [
      "matmul: C = A B of n x n f32 by the learning plan's GEMM kernel and by tfjs matMul (2 n^3 FLOPs); the faster is the matmul roofline.",
      'stream: x * 2 over 16M floats by tfjs (64 MiB read + 64 MiB written). clock GPU: timestamp queries around the pass; wall: submit to onSubmittedWorkDone.',
      peakNote(roofline),
    ],
  );
  return roofline;
}

type Loader = () => Promise<import('../../src/model/llama').LlamaModel>;
const defenderF32: Loader = () => loadModel(folderSource('public/models/defender'));
const defenderInt4: Loader = () => loadModel(folderSource('public/models/defender'), { quantize: int4Quantizer(32) });

const smolInt4: Loader = () => syntheticModel(SMOLLM2_135M_CONFIG, 1, { quantize: int4Quantizer(32) });
const smolF32: Loader = () => syntheticModel(SMOLLM2_135M_CONFIG);

/** One model's rows of issue 21's learn table: planned vs tfjs learnStep, GFLOP/s, % roofline, peak memory. */
async function learnRows(name: string, fmt: string, load: Loader): Promise<void> {
  if (skipped.has('learn') || !report.due(`learn ${name} ${fmt}`)) return;
  const rf = await rooflineOnce();
  const c = learnCase;
  // --recompute: the planned step recomputes activations per layer (else the planner's choice).
  if (args.includes('--recompute')) setEngineOptions({ learnRecompute: 'on' });
  const model = await load();
  try {
    const r = await benchLearnPaths(model, c, quick ? 1 : 3);
    for (const x of r) console.error(`  ${name} ${fmt} ${x.path}: ${x.ms.toFixed(0)} ms, ${x.dispatches} dispatches`);
    report.rows(
      'learn',
      `${learnBenchTitle('Node + Dawn', c)}${args.includes('--recompute') ? ', activations recomputed per layer' : ''}`,
      LEARN_BENCH_HEADER,
      learnBenchRows(name, fmt, r, rf.matmulGflops, rf.peak?.f32Gflops),
      [
        `GFLOP/s: the step's matrix-product FLOPs (dev/bench/learnFlops.ts) / learn ms; % of the measured matmul roofline (${rf.matmulGflops.toPrecision(4)} GFLOP/s above).`,
        "peak MiB: GPU buffers the warm-up step created outside tfjs's pool and still holds (learn plans, the planned AdamW state) + tfjs's in-use high-water mark in the timed steps above its start (dev/bench/gpuMemory.ts); the model's weights and adapters are not counted.",
        ...(smolLearn || noSmol ? [] : ['SmolLM2-135M shape: left out on a software adapter (pass --smol to run it).']),
      ],
    );
  } finally {
    disposeLlama(model);
  }
}

/** One model's rows of the whole GRPO step beside the learn table: everything planned vs everything tfjs. */
async function stepRows(name: string, fmt: string, load: Loader): Promise<void> {
  if (args.includes('--no-step') || skipped.has('step') || !report.due(`step ${name} ${fmt}`)) return;
  const c = learnCase;
  const model = await load();
  try {
    const r = await benchGrpoStepPaths(model, c, quick ? 1 : 2);
    for (const x of r)
      console.error(
        `  step ${name} ${fmt} ${x.path}: ${x.totalMs.toFixed(0)} ms (rollout ${x.rolloutMs.toFixed(0)}, learn ${x.learnMs.toFixed(0)})`,
      );
    report.rows('step', stepBenchTitle('Node + Dawn', c), STEP_BENCH_HEADER, stepBenchRows(name, fmt, r), [
      'planned: prefill, decode, learn step and AdamW on the plans; tfjs: all four op by op. Rollouts run the full number of new tokens (no stop token).',
    ]);
  } finally {
    disposeLlama(model);
  }
}

async function learnSection(): Promise<void> {
  await learnRows('sandbox defender', 'f32', defenderF32);
  await learnRows('sandbox defender', 'int4', defenderInt4);
  if (smolLearn) {
    await learnRows('SmolLM2-135M shape', 'f32', smolF32);
    await learnRows('SmolLM2-135M shape', 'int4', smolInt4);
  }
  report.close('learn');
}

async function stepSection(): Promise<void> {
  await stepRows('sandbox defender', 'f32', defenderF32);
  await stepRows('sandbox defender', 'int4', defenderInt4);
  if (smolLearn) await stepRows('SmolLM2-135M shape', 'int4', smolInt4);
  report.close('step');
}

await checkBeforeTiming();

if (learnOnly) {
  await learnSection();
  await stepSection();
  process.exit(0);
}
if (profileOnly) {
  // Where one GRPO step's time goes (rollout and learn planned, the update on either optimiser): phases, WebGPU
  // work and tfjs's kernels. The sandbox defender, and the SmolLM2-135M shape unless --no-smol.
  const models: [string, () => Promise<import('../../src/model/llama').LlamaModel>, StepProfileCase][] = [
    [
      'sandbox defender',
      () => loadModel(folderSource('public/models/defender')),
      { prompts: 2, groupSize: 8, promptLen: 16, newTokens: 8, rank: 16 },
    ],
  ];
  if (!args.includes('--no-smol'))
    models.push([
      'SmolLM2-135M shape',
      () => syntheticModel(SMOLLM2_135M_CONFIG),
      { prompts: 2, groupSize: 8, promptLen: 16, newTokens: 8, rank: 16 },
    ]);
  for (const [name, load, c] of models) {
    const model = await load();
    // The optimiser update alone on both paths (issue 21 step 3): the planned GPU AdamW vs tfjs.
    const optRows: (string | number)[][] = [];
    for (const path of ['tfjs', 'planned'] as const) {
      const o = await profileOptimizerUpdate(model, c.rank, path);
      optRows.push([path, o.params, o.dispatches, o.submits, o.buffersCreated, o.readbacks, o.hostMs, o.ms]);
    }
    for (const path of ['tfjs', 'planned'] as const) {
      setEngineOptions({ optimizerPath: path });
      const p = await profileGrpoStep(model, c);
      console.log(
        `\n== Node + Dawn: one GRPO step of the ${name}, ${c.prompts} prompts x G ${c.groupSize} x ${c.newTokens} new tokens, LoRA r ${c.rank} on every projection (after a warm-up step), optimiser: ${path}\n`,
      );
      console.log(
        formatTable(
          ['phase', 'ms'],
          Object.entries(p.phases).map(([k, v]) => [k, v]),
        ),
      );
      if (p.gpu) {
        const g = p.gpu;
        console.log(
          `\nWebGPU: ${g.dispatches} dispatches, ${g.submits} submits, ${g.buffersCreated} buffers created (${(g.bytesCreated / 2 ** 20).toFixed(1)} MiB), ${g.readbacks} readbacks waiting ${g.readbackWaitMs.toFixed(0)} ms; host ${g.hostMs.toFixed(0)} ms of ${g.ms.toFixed(0)} ms wall`,
        );
      }
      console.log(
        `tfjs: ${p.tfjsKernels} kernels, ${p.newTensors} new tensors, peak ${(p.peakBytes / 2 ** 20).toFixed(1)} MiB\n`,
      );
      console.log(
        formatTable(
          ['tfjs kernel', 'count', 'GPU ms', 'MiB allocated'],
          p.kernels.slice(0, 15).map((k) => [k.name, k.count, k.gpuMs, k.bytes / 2 ** 20]),
        ),
      );
    }
    setEngineOptions({ optimizerPath: 'planned' });
    console.log(
      `\n== Node + Dawn: the optimiser update alone (clip + skip check + AdamW) of the ${name}, LoRA r ${c.rank} on every projection, per update (mean of 5 after 2 warm-up)\n`,
    );
    console.log(
      formatTable(
        ['optimiser', 'parameters', 'dispatches', 'submits', 'buffers created', 'readbacks', 'host ms', 'wall ms'],
        optRows,
      ),
    );
    disposeLlama(model);
  }
  process.exit(0);
}
if (!modelsOnly && !decodeOnly && !all && !gemmAbOnly) {
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
const DECODE_TITLE = `== Node + Dawn: decode, planned path vs tfjs op by op (same run, same weights; medians)${attentionArg ? `, planned attention forced to ${attentionArg}` : ''}`;
/** Issue 20's decode table, one model and format at the given batches: planned vs tfjs per token, weight GB/s against the measured stream roofline. */
async function decodeRows(name: string, fmt: string, load: Loader, batches: number[]): Promise<void> {
  if (skipped.has('decode') || batches.length === 0) return;
  const smol = name.startsWith('SmolLM2');
  let model: import('../../src/model/llama').LlamaModel | null = null;
  try {
    for (const batch of batches) {
      if (!report.due(`decode ${name} ${fmt} batch ${batch}`)) return;
      const rf = await rooflineOnce();
      if (attentionArg) setEngineOptions({ plannedAttention: attentionArg });
      model ??= await load();
      // --all keeps the whole grid with fewer tokens and reps, so the learn tables fit the same 10-minute command.
      const r = await benchDecodePaths(model, {
        batch,
        promptLen: smol ? 64 : 16,
        steps: quick ? (smol ? 4 : 8) : all ? 16 : 32,
        reps: quick ? (smol ? 2 : 3) : all ? 3 : 5,
      });
      console.error(
        `  ${name} ${fmt} batch ${r[0].batch}: planned ${r[0].tokPerS.toFixed(1)} tok/s, host ${r[0].hostMsPerToken.toFixed(2)} ms/token; tfjs ${r[1].tokPerS.toFixed(1)} tok/s, host ${r[1].hostMsPerToken.toFixed(2)} ms/token`,
      );
      report.rows(
        'decode',
        DECODE_TITLE,
        DECODE_BENCH_HEADER,
        decodeBenchRows(name, fmt, r, rf.streamGBps, rf.peak?.bandwidthGBps),
        [
          `host ms/token: wall less readback waits; GPU ms/token: the planned passes by timestamp queries; weight GB/s: projection and head bytes per decode step / ms per token; % stream: of the measured stream roofline (${rf.streamGBps.toPrecision(4)} GB/s).`,
        ],
      );
    }
  } finally {
    setEngineOptions({ plannedAttention: null });
    if (model) disposeLlama(model);
  }
}

// On a CPU adapter the SmolLM2-135M shape at large batches takes minutes per path: --quick keeps the
// sandbox defender's grid to batch 64 and the 135M shape at batch 1 and 8.
const smolBatches = noSmol ? [] : (batchesArg ?? (quick ? [1, 8] : [1, 8, 64, 256]));
const defenderBatches = batchesArg ?? (quick ? [1, 8, 64] : [1, 8, 64, 256]);
const formatLoaders = (opts: (typeof formats)[number][1]): [Loader, Loader] => [
  () => loadModel(folderSource('public/models/defender'), opts),
  () => syntheticModel(SMOLLM2_135M_CONFIG, 1, opts),
];

async function decodeSection(): Promise<void> {
  for (const [fmt, opts] of formats) {
    const [defender, smol] = formatLoaders(opts);
    await decodeRows('sandbox defender', fmt, defender, defenderBatches);
    await decodeRows('SmolLM2-135M shape', fmt, smol, smolBatches);
  }
  report.close('decode');
}

/** Split-K (flash-decoding) attention against the whole-cache kernel on the planned path at long caches. */
async function attentionSection(): Promise<void> {
  const cs = caches ?? (software ? [] : [2048, 4096]);
  if (cs.length === 0 || skipped.has('attention') || !report.due('attention')) return;
  const [name, load]: [string, Loader] = noSmol
    ? ['sandbox defender', defenderInt4]
    : ['SmolLM2-135M shape', () => syntheticModel(SMOLLM2_135M_CONFIG, 1, { quantize: int4Quantizer(32) })];
  const model = await load();
  const rows: (string | number)[][] = [];
  const steps = quick ? 8 : 32;
  for (const cache of cs) {
    for (const batch of quick ? [1] : [1, 8]) {
      if (!report.due(`attention ${cache} ${batch}`)) break;
      const promptLen = Math.max(1, cache - steps - 1);
      const r = await benchPlannedAttention(model, { batch, promptLen, steps, reps: quick ? 2 : 3 });
      for (const x of r)
        console.error(`  ${name} cache ${cache} batch ${batch} ${x.attention}: ${x.r.tokPerS.toFixed(1)} tok/s`);
      rows.push(...attentionBenchRows(name, 'int4', r));
    }
  }
  disposeLlama(model);
  report.table(
    'attention',
    '== Node + Dawn: planned decode attention at long caches, whole-cache kernel vs split-K (flash-decoding, 256-slot segments + combine); medians',
    ATTENTION_BENCH_HEADER,
    rows,
    [
      'cache: slots filled at the last token (prompt + 1 + decoded); the planner picks split-K by itself on GPUs for caches over 1024 slots.',
    ],
  );
}

/** Whole sandbox rollouts (issue 20's Chromium target shape) three ways. */
async function rolloutSection(): Promise<void> {
  if (skipped.has('rollout') || !report.due('rollout')) return;
  const rows: (string | number)[][] = [];
  for (const [fmt, opts] of formats) {
    const defender = await loadModel(folderSource('public/models/defender'), opts);
    rows.push(
      ...rolloutBenchRows(
        'sandbox defender',
        fmt,
        await benchRollouts(defender, { batch: 64, promptLen: 16, newTokens: 16, reps: quick ? 2 : 3 }),
      ),
    );
    disposeLlama(defender);
  }
  report.table(
    'rollout',
    '== Node + Dawn: whole sandbox rollouts, 64 rows x (16 prompt + 16 new) tokens (medians)',
    ROLLOUT_BENCH_HEADER,
    rows,
  );
}

if (all) {
  // The open targets first, so a run cut short (--budget-s, a 10-minute command) still has them:
  // decode at batch 1 / 64 / 256, the learn step and the whole GRPO step of the SmolLM2-135M shape
  // in int4. Then the rest of each table, split-K attention and rollouts.
  const TARGET_BATCHES = [1, 64, 256];
  const targetBatches = noSmol ? [] : (batchesArg ?? TARGET_BATCHES);
  await decodeRows('SmolLM2-135M shape', 'int4', smolInt4, targetBatches);
  if (smolLearn) {
    await learnRows('SmolLM2-135M shape', 'int4', smolInt4);
    await stepRows('SmolLM2-135M shape', 'int4', smolInt4);
  }
  await decodeRows(
    'SmolLM2-135M shape',
    'int4',
    smolInt4,
    smolBatches.filter((b) => !targetBatches.includes(b)),
  );
  for (const [fmt, opts] of formats) {
    const [defender, smol] = formatLoaders(opts);
    await decodeRows('sandbox defender', fmt, defender, defenderBatches);
    if (fmt !== 'int4') await decodeRows('SmolLM2-135M shape', fmt, smol, smolBatches);
  }
  report.close('decode');
  await learnRows('sandbox defender', 'f32', defenderF32);
  await learnRows('sandbox defender', 'int4', defenderInt4);
  if (smolLearn) await learnRows('SmolLM2-135M shape', 'f32', smolF32);
  report.close('learn');
  await stepRows('sandbox defender', 'f32', defenderF32);
  await stepRows('sandbox defender', 'int4', defenderInt4);
  report.close('step');
  await attentionSection();
  await rolloutSection();
  console.log(
    `\n(all tables in ${report.elapsedS().toFixed(0)} s${outDir ? `; written to ${outDir}/bench.md and bench.json` : ''})`,
  );
  process.exit(0);
}
if (gemmAbOnly) {
  const rows: (string | number)[][] = [];
  for (const [fmt, opts] of formats.filter(([f]) => f === 'f32' || f === 'int4')) {
    const model = await loadModel(folderSource('public/models/defender'), opts);
    // 16+ decode steps: per-token time is a difference of two rollouts that both carry a 1024-row prefill
    const c = { batch: batchesArg?.[0] ?? 64, promptLen: 16, steps: quick ? 16 : 32, reps: quick ? 2 : 3 };
    const r = await benchPlannedGemm(model, c);
    console.error(`  defender ${fmt}: ${JSON.stringify(r.map((x) => [x.gemm, x.prefillMs, x.msPerToken]))}`);
    rows.push(...plannedGemmRows('sandbox defender', fmt, r));
    disposeLlama(model);
  }
  report.table(
    'gemm-ab',
    '== Node + Dawn: the planned path, projections of 32+ rows on the tiled GEMM vs the GEMVs (wall ms, medians)',
    PLANNED_GEMM_HEADER,
    rows,
  );
  process.exit(0);
}
if (!rolloutOnly) {
  await decodeSection();
  if (decodeOnly) await attentionSection();
}
if (decodeOnly) {
  await rolloutSection();
  process.exit(0);
}

console.log(`\n== Node + Dawn: SmolLM2-135M shape (random weights), custom kernels on vs off (medians)\n`);
const smol = await syntheticModel(SMOLLM2_135M_CONFIG);
const rows: (string | number)[][] = [];
for (const batch of [1, 8]) {
  const c: ThroughputCase = { batch, promptLen: 64, decodeSteps: quick ? 8 : 32, reps: quick ? 2 : 5 };
  for (const on of [true, false]) {
    setEngineOptions({ customKernels: on });
    rows.push(row('SmolLM2-135M shape', on ? 'ours' : 'stock', await measureThroughput(smol, c)));
  }
  setEngineOptions({ customKernels: true });
}
console.log(formatTable(THROUGHPUT_HEADER, rows));

console.log(`\n== Node + Dawn: one cached decode step of the SmolLM2-135M shape, batch 1, by kernel (tf.profile)\n`);
const prof = await profileDecode(
  smol,
  Array.from({ length: 64 }, (_, i) => (7 * i + 3) % 49152),
);
console.log(
  `wall ${prof.wallMs.toFixed(1)} ms; ${prof.kernels.reduce((a, k) => a + k.count, 0)} tfjs kernels (the fused WGSL kernels are not listed)`,
);
console.log(
  formatTable(
    ['kernel', 'count', 'GPU ms'],
    prof.kernels.slice(0, 12).map((k) => [k.name, k.count, k.ms]),
  ),
);

console.log(`\n== Node + Dawn: whole steps on the SmolLM2-135M shape, custom kernels on vs off (medians)\n`);
const steps = await benchWholeSteps(smol, quick ? 2 : 5);
console.log(
  formatTable(
    ['step', 'shape', 'kernels ms', 'stock ms', 'speed-up'],
    steps.map((k) => [k.name, k.shape, k.oursMs, k.stockMs, `${(k.stockMs / k.oursMs).toFixed(2)}x`]),
  ),
);
process.exit(0);
