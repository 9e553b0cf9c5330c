// The engine's one entry: what the layers above (model, rl, recipes, worker, cli) use of it. Inside
// the engine, modules import each other directly, never through this file (no cycles through it).

// Settings: one typed record in place of module-level switches.
export { engineOptions, resetEngineOptions, setEngineOptions } from './options';
export type {
  DecodeAttention,
  EngineOptions,
  ExecutionPath,
  GemvShape,
  GemvVariant,
  KernelVariants,
  LearnRecompute,
} from './options';

// Backend: choosing and starting tfjs's backend, the WebGPU probe, GPU memory and work counters.
export type { BackendPreference, BackendReport } from '../contract/backends';
export { initBackend } from './initBackend';
export { probeWebGPU } from './probe';
export type { GpuProbe } from '../contract/gpuProbe';
export { variableFrom } from './variables';
export { shareWasmIdentity } from './wasmIdentity';
export {
  installWasmKernels,
  wasmAdamW,
  wasmScale,
  wasmSumSquares,
  wasmAttention,
  wasmGatherColumns,
  wasmGemmServes,
  wasmKernelStatus,
  setWasmKernels,
  wasmLoraLinear,
  wasmLoraTaped,
} from './kernels/wasmGemm';

// The WebGPU device tfjs runs on, its features and binding limits.
export { customKernelsActive, isWebGPUBackend, webgpuDevice } from './webgpu/wgslProgram';
export { registerWebGPUBackend, subgroupStatus, subgroupsActive, type SubgroupStatus } from './webgpu/gpuFeatures';
export { rowChunks } from './webgpu/limits';

// Random streams.
export { mix32, mulberry32 } from '../contract/mulberry32';
export { seedKey } from './rng/philox';

// Ops (tfjs, one WGSL kernel each on WebGPU, stock ops elsewhere) and their CPU references.
export { decodeAttention, decodeAttentionFused, decodeAttentionStock } from './kernels/attention/decodeAttention';
export { attentionCaseData, type AttentionCaseSpec } from './kernels/attention/decodeAttentionReference';
export { kvWrite } from './kernels/kv-cache/kvWrite';
export { dequantizeStock, gemvVariant, quantMatmul, type QuantizedMatrix } from './kernels/matmul/quantMatmul';
export { type PackedWeightKind } from './kernels/matmul/weightDecode';
export { rmsNorm } from './kernels/rms-norm/rmsNorm';
export { NORM_EPS, normCaseData, type NormCaseSpec } from './kernels/rms-norm/fusedNormReference';
export { releaseRopeConstants, rope, ropeHeads } from './kernels/rope/rope';
export { sampleTokens } from './kernels/sample/sample';
export { checkSamplingOptions, sampleReference, type SamplingOptions } from './kernels/sample/sampleReference';
export { swiglu } from './kernels/swiglu/swiglu';
export { geglu } from './kernels/swiglu/geglu';
export { untaped } from './kernels/wasmTape';
export { gegluCase } from './kernels/swiglu/gegluReference';
export { blockCaseData, type BlockCaseSpec } from './kernels/swiglu/fusedBlockReference';
export { tokenStats, tokenStatsReduceKey, tokenStatsStock } from './kernels/token-stats/tokenStats';

// Plans: a decode or learning step (or an AdamW update) as one recorded command stream.
export { alignUp } from './plan/plan';
export { emptyTensor, flushTfjs, tensorBuffer } from './plan/tfjsInterop';
export {
  DecodePlan,
  PROJ_KEYS,
  prefillChunk,
  GEMM_MIN_ROWS,
  type DecodeModelRef,
  type LoraRef,
  type ProjKey,
  type WeightRef,
} from './plan/decodePlan';
export { LearnPlan, type LearnShape } from './plan/learnPlan';
export { STATS_COLS, type GemmLayout } from './plan/learnKernels';
export { AdamWPlan, type AdamWStepResult } from './plan/adamwPlan';
export { plannedAdamWUpdate, type AdamWHost, type FlatGradBuffer, type PlannedMomentHolder } from './plan/adamwStep';
