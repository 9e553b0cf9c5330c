// The test harness's worker API: the product's EngineApi plus the checks, benchmarks and A/B
// switches the browser tests and `npm run bench` drive (dev/harness/harness.worker.ts). The lab
// never loads it; the harness page (dev/harness/index.html) puts it on window.sparring.
import type * as Comlink from 'comlink';
import type {
  AttentionCaseSpec,
  BlockCaseSpec,
  NormCaseSpec,
  SamplingOptions,
  SubgroupStatus,
} from '../../src/engine/index';
import type { Roofline } from '../bench/roofline';
import type { GenerateOptions, GenerateResult } from '../../src/model/generate';
import type { DecodePath } from '../../src/model/planned/decode';
import type { OptimizerPath } from '../../src/rl/plannedOptim';
import type { LearnPath } from '../../src/rl/plannedLearn';
import type { EngineApi, WasmKernelStatus } from '../../src/contract/workerApi';
import type { QuantCaseSpec } from '../test/quantCase';
import type { WeightKind } from '../../src/contract/weightFormat';
import type { ThroughputCase, ThroughputResult } from '../bench/throughput';
import type { DecodeBenchCase, DecodeBenchResult, RolloutBenchCase, RolloutBenchResult } from '../bench/decodeBench';
import type { LearnBenchRow, LearnCheckResult, StepBenchRow } from '../bench/learnBench';
import type { StepProfileCase } from '../bench/stepProfile';
import type { GradCheckCase, GradCheckResult, LearnRunCase } from './learnGradCheck';
import type { CheckpointCheckResult } from './learnCheckpointCheck';

export interface Pong {
  nonce: number;
  /** performance.now() inside the worker when it answered. */
  at: number;
  inWorker: boolean;
}

/** The token-stats kernel run on seeded logits, for checks against an independent reference. */
export interface KernelCheck {
  backend: string;
  path: 'wgsl' | 'stock';
  /** The WGSL path's row reduction: 'tree' (workgroup memory) or 'sg<levels>x<size>' (subgroups). */
  reduce: string | null;
  rows: number;
  vocab: number;
  seed: number;
  logp: number[];
  entropy: number[];
  /** With a reference: log-prob of the same ids under the second logits (seededLogits(seed + 1)). */
  refLogp?: number[];
  ms: number;
}

/** Gradient of sum(dy * tokenStats(logits)) w.r.t. logits, for checks against a reference. */
export interface KernelGradCheck {
  backend: string;
  rows: number;
  vocab: number;
  seed: number;
  grad: Float32Array;
}

/** Where a Hugging Face-layout model folder lives. */
export type ModelRef = { kind: 'url'; baseUrl: string } | { kind: 'hub'; id: string; endpoint?: string };

/** A format to quantise the frozen projections to on load: its WeightKind, with int4's group size (or int8's, where set). */
export interface QuantizeSpec {
  kind: Exclude<WeightKind, 'f32'>;
  groupSize?: number;
}

export interface LoadModelOptions {
  /** Weight-only quantisation of the frozen projections, applied on load (a WeightKind; groupSize: int4's groups, or int8's where set). */
  quantize?: QuantizeSpec;
}

export interface ModelInfo {
  name: string;
  label: string;
  family: string;
  layers: number;
  hidden: number;
  vocab: number;
}

export interface KernelBenchRow {
  name: string;
  shape: string;
  /** Median ms of the custom kernel (WGSL on webgpu; the fallback elsewhere). */
  oursMs: number;
  /** Median ms of the same work with stock tfjs ops (or the obvious readback path). */
  stockMs: number;
  /** Bytes the kernel must at least read, for GB/s. */
  bytes: number;
  /** Floating-point operations of the work, for GFLOP/s (0: a memory-bound row). */
  flops?: number;
  /** Median GPU time of each side from timestamp queries (tf.time kernelMs), where the adapter has them. */
  oursGpuMs?: number;
  stockGpuMs?: number;
  /** A roofline probe rather than a kernel: the achievable GB/s (stream) or GFLOP/s (matmul) of this adapter. */
  roofline?: 'stream' | 'matmul';
}

/** The product API and the harness's own methods, on one worker. */
export interface HarnessApi extends EngineApi {
  ping(nonce: number): Promise<Pong>;
  /**
   * Blocks the worker's thread for `ms` (a step that never yields), for the watchdog's tests. With
   * `holdRunStore`, first issues a write to the run log's store, so the worker hangs with that
   * IndexedDB transaction open (as when a step's log write is in flight).
   */
  hangFor(ms: number, holdRunStore?: boolean): Promise<void>;
  /** withRef: also the log-prob under reference logits seededLogits(rows, vocab, seed + 1), same pass. */
  tokenStatsCheck(rows: number, vocab: number, seed: number, withRef?: boolean): Promise<KernelCheck>;
  /** Pretend the GPU allows only this many bytes per storage binding (null: the real limit). */
  setBindingLimit(bytes: number | null): Promise<void>;
  /** withRef: through tokenStats(x, ids, refLogits) with a nonzero upstream on the reference column. */
  tokenStatsGradCheck(rows: number, vocab: number, seed: number, withRef?: boolean): Promise<KernelGradCheck>;
  loadModel(name: string, ref: ModelRef, options?: LoadModelOptions): Promise<ModelInfo>;
  /** y = x W^T through the quantised-matmul op and dx = d sum(y * dy) / dx, on the active backend. */
  /** blocks: row blocks the weight was held in (more than one above the storage-binding limit). */
  quantMatmulCheck(c: QuantCaseSpec): Promise<{ backend: string; y: number[]; dx: number[]; blocks: number }>;
  unloadModel(name: string): Promise<void>;
  /** Logits of every position (one row each) and next-token entropy, for one id sequence. */
  logits(name: string, ids: number[]): Promise<{ logits: number[][]; entropy: number[] }>;
  generate(name: string, prompts: number[][], options: GenerateOptions): Promise<GenerateResult>;
  /** Sets a tfjs environment flag in the worker (e.g. WEBGPU_MATMUL_PROGRAM_TYPE), for tuning. */
  setTfjsFlag(name: string, value: number | boolean | string): Promise<void>;
  /** tf.profile of one decode step after a prefill of `ids`: kernel names, counts and ms. */
  profileDecodeStep(
    name: string,
    ids: number[],
  ): Promise<{ wallMs: number; kernels: { name: string; count: number; ms: number }[] }>;
  /** Builds a random-weight model with a real model's shapes ('smollm2-135m'). */
  loadSyntheticModel(name: string, shape: 'smollm2-135m'): Promise<ModelInfo>;
  benchKernels(reps: number): Promise<KernelBenchRow[]>;
  benchModel(name: string, c: ThroughputCase): Promise<ThroughputResult>;
  /** Whole decode and GRPO steps on a loaded model, custom kernels on vs off. */
  benchWholeSteps(name: string, reps: number): Promise<KernelBenchRow[]>;
  /** One GRPO step with LoRA on a loaded model; its metrics (checks the training path end to end). */
  rlSmokeStep(name: string): Promise<Record<string, number>>;
  /** On wasm: Sparring's kernels (src/engine/kernels/wasmGemm.ts) off or back on; which kernels then run. */
  setWasmKernels(enabled: boolean): Promise<WasmKernelStatus | null>;
  /** Switch the custom WGSL kernels off (stock tfjs ops) or back on. */
  setCustomKernels(enabled: boolean): Promise<void>;
  /** generate() on WebGPU: the planned decode path (default) or tfjs op by op (A/B, triage). */
  setDecodePath(path: DecodePath): Promise<void>;
  /** learnStep's update on WebGPU: the planned GPU AdamW (default) or tfjs's AdamW (A/B, triage). */
  setOptimizerPath(path: OptimizerPath): Promise<void>;
  /** Decode on both paths in the same run on a loaded model: [planned, tfjs]. */
  benchDecode(name: string, c: DecodeBenchCase): Promise<[DecodeBenchResult, DecodeBenchResult]>;
  /** Whole rollouts on a loaded model: tfjs, planned after a tfjs prefill, planned throughout. */
  benchRollout(name: string, c: RolloutBenchCase): Promise<RolloutBenchResult[]>;
  /** One learnStep on both paths in the same run on a loaded model (LoRA r c.rank on every projection): [planned, tfjs]. */
  benchLearn(name: string, c: StepProfileCase, reps: number): Promise<LearnBenchRow[]>;
  /** One learnStep on `path` on case c's fixed batch from seeded adapters: metrics and each adapter value's change. */
  learnCheck(name: string, path: LearnPath, c: StepProfileCase): Promise<LearnCheckResult>;
  /** Each case's learnStep gradients on tfjs and on the planned path from the same seeded adapters (e2e tests). */
  learnGradCheck(name: string, cases: GradCheckCase[]): Promise<GradCheckResult[]>;
  /** rlStep on the planned paths with a first-token reward: the mean reward per step. */
  learnRunCheck(name: string, c: LearnRunCase): Promise<{ curve: number[]; plannedMicroBatches: number }>;
  /** rlStep x 3 straight vs x 2, checkpoint, restore into a fresh run, step 3, on the planned path. */
  learnCheckpointCheck(name: string): Promise<CheckpointCheckResult>;
  /** A whole GRPO step on a loaded model on both paths (everything planned, everything tfjs): [planned, tfjs]. */
  benchGrpoStep(name: string, c: StepProfileCase, reps: number): Promise<StepBenchRow[]>;
  /** The adapter's matmul roofline (both GEMMs on an n^3 f32 product) and stream roofline, measured now. */
  benchRoofline(n: number, reps: number): Promise<Roofline>;
  /** Allow or forbid the subgroup kernel variants; returns the device's layout and whether they are now used. */
  setSubgroups(enabled: boolean): Promise<SubgroupStatus>;
  /** Sample ids from seeded logits (logitsSeed) with the given options, on the active backend. */
  sampleCheck(
    rows: number,
    vocab: number,
    logitsSeed: number,
    options: SamplingOptions,
  ): Promise<{ backend: string; ids: number[] }>;
  /** One decode step of GQA attention on seeded inputs (decodeAttentionReference.ts), on the active backend. */
  attentionCheck(c: AttentionCaseSpec): Promise<{ backend: string; path: 'wgsl' | 'stock'; out: number[] }>;
  /** SwiGLU gate (forward, gradients) and KV-cache write on seeded inputs (fusedBlockReference.ts), on the active backend. */
  fusedBlockCheck(
    c: BlockCaseSpec,
  ): Promise<{ backend: string; y: number[]; dg: number[]; du: number[]; kv: number[] }>;
  /** RMSNorm and RoPE forward and gradients on seeded inputs (fusedNormReference.ts), on the active backend. */
  fusedNormCheck(c: NormCaseSpec): Promise<{
    backend: string;
    rms: { y: number[]; dx: number[]; dw: number[] };
    rope: { y: number[]; dx: number[] };
  }>;
}

/** What a test reaches as window.sparring.engine on the harness page. */
export type HarnessEngine = Comlink.Remote<HarnessApi>;
