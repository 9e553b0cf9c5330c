// The engine's settings in one typed record, in place of one module-level switch per setting: a
// reader (or a test's reset) can list them all, and a change names the field it sets. The product
// runs with the defaults; tests, benchmarks and triage change them with setEngineOptions and put
// them back with resetEngineOptions.

/** Where a step runs on WebGPU: the planned command stream, or tfjs op by op (the reference). */
export type ExecutionPath = 'planned' | 'tfjs';
/** The tfjs quantised GEMV: one thread per output, or split-K workgroups. */
export type GemvVariant = 'thread' | 'splitk';
/** The planned decode GEMV layout: split-K workgroups (GPUs) or one thread per output. */
export type GemvShape = 'split' | 'thread';
/** The planned decode attention: flash-decoding segments and a combine, or one pass per (head, row). */
export type DecodeAttention = 'whole' | 'splitk';
/**
 * Which kernel variants run where a kernel has a GPU and a software-adapter form (the tfjs
 * quantised GEMV, the planned decode GEMV and attention): 'auto' picks by adapter, 'gpu' /
 * 'software' force one family on any adapter (the GPU kernels on lavapipe or SwiftShader in CI).
 */
export type KernelVariants = 'auto' | 'gpu' | 'software';
/** Whether the planned learning step recomputes each layer's activations in its backward. */
export type LearnRecompute = 'auto' | 'on' | 'off';

export interface EngineOptions {
  /** The project's WGSL kernels on the webgpu backend; off: stock tfjs ops everywhere (A/B, triage). */
  customKernels: boolean;
  /** Subgroup kernel variants where the device has a usable layout; off: the workgroup-memory path. */
  subgroups: boolean;
  /** Pretend the device allows only this many bytes per storage binding (>= 4); null: the device's limit. */
  bindingLimit: number | null;
  /** The kernel family where there is a GPU and a software-adapter variant; gemvVariant / plannedGemv override it. */
  kernelVariants: KernelVariants;
  /** Force the tfjs quantised GEMV variant; null picks by kernelVariants (thread on software, split-K on GPUs). */
  gemvVariant: GemvVariant | null;
  /**
   * Force the planned GEMV layout: 'split' (GPUs), 'thread' (software adapters, never tiled),
   * 'tile' (software adapters, every GEMV tiled); null picks by adapter (software adapters tile
   * GEMVs of TILE_MIN_ROWS rows or more).
   */
  plannedGemv: GemvShape | 'tile' | null;
  /** Force the planned decode attention; null lets the planner pick (split-K on GPUs for long caches). */
  plannedAttention: DecodeAttention | null;
  /** The decode path of generate() on WebGPU; other backends always run tfjs. */
  decodePath: ExecutionPath;
  /** Where the planned path's prefill runs: on the plan, or op by op on tfjs with its caches copied in. */
  prefillPath: ExecutionPath;
  /** Tokens the planned decode runs between readbacks, an integer in [1, 256] (a stopped row decodes on, masked). */
  tokensPerRun: number;
  /** The path of learnStep's forward and backward on WebGPU; other backends always run tfjs. */
  learnPath: ExecutionPath;
  /** The optimiser update of learnStep on WebGPU; other backends always run tfjs. */
  optimizerPath: ExecutionPath;
  /**
   * The planned learning step's GEMM: 'tiled' (workgroup tiles in workgroup memory) or 'direct'
   * (each thread reads its operands from memory); null picks by adapter (tiled on GPUs, direct on
   * software adapters, where workgroup memory buys nothing and a barrier is a thread switch).
   */
  learnGemm: 'tiled' | 'direct' | null;
  /**
   * The planned prefill's and decode's projections of many rows (GEMM_MIN_ROWS or more: a prefill
   * chunk, a large batch): 'tiled', the learn GEMM's workgroup tiles (each weight read once per 32
   * rows of x), or 'gemv', the GEMV layouts (plannedGemv); null picks by adapter as learnGemm does
   * (tiled on GPUs, the GEMVs on software adapters).
   */
  plannedGemm: 'tiled' | 'gemv' | null;
  /** 'auto': as the learn-memory planner chooses; 'on' / 'off' forced (tests, benchmarks). */
  learnRecompute: LearnRecompute;
  /**
   * GPU bytes the planned learning step may hold per plan (model/learnMemory's LEARN_PLAN_BUDGET by
   * default): micro-batches are sized to fit it; a shape over it runs on tfjs.
   */
  learnMemoryBudget: number;
  /**
   * GPU bytes a decode plan's own buffers (KV caches, logits, activations; not the weights) may
   * hold; a plan over it is refused before any GPU work, naming its largest buffer. null: only the
   * device's buffer limits bound it.
   */
  decodeMemoryBudget: number | null;
  /**
   * The longest a planned prefill or learning pass may keep the GPU busy in one submit, in ms:
   * longer passes are cut into several submits (Windows resets a GPU whose work runs ~2 s, and
   * Chrome then loses the device). Work is estimated in FLOPs at submitAssumedGflops.
   */
  submitBudgetMs: number;
  /**
   * The f32 rate, GFLOP/s, at which submitBudgetMs is turned into FLOPs per submit: 100 is the slow
   * end of WebGPU devices (an integrated GPU's sustained GEMM); a faster GPU only makes more,
   * shorter submits than it needs (a submit costs tens of microseconds).
   */
  submitAssumedGflops: number;
  /** Bytes of f32 dropout multipliers drawn before each packing into the learn plan (tests: 1 packs each alone). */
  dropoutMaskGroupBytes: number;
}

const DEFAULTS: Readonly<EngineOptions> = Object.freeze({
  customKernels: true,
  subgroups: true,
  bindingLimit: null,
  kernelVariants: 'auto',
  gemvVariant: null,
  plannedGemv: null,
  plannedAttention: null,
  decodePath: 'planned',
  prefillPath: 'planned',
  tokensPerRun: 8,
  learnPath: 'planned',
  optimizerPath: 'planned',
  learnGemm: null,
  plannedGemm: null,
  learnRecompute: 'auto',
  learnMemoryBudget: 2 ** 31,
  decodeMemoryBudget: null,
  dropoutMaskGroupBytes: 64 * 2 ** 20,
  submitBudgetMs: 1000,
  submitAssumedGflops: 100,
});

let current: Readonly<EngineOptions> = DEFAULTS;

/** The settings in force (a frozen record: change them with setEngineOptions). */
export function engineOptions(): Readonly<EngineOptions> {
  return current;
}

const isPath = (p: unknown) => p === 'planned' || p === 'tfjs';

/** Changes the named settings, leaving the others; throws (changing nothing) on an invalid value. */
export function setEngineOptions(partial: Partial<EngineOptions>): void {
  const next = { ...current, ...partial };
  if (next.bindingLimit !== null && !(next.bindingLimit >= 4))
    throw new Error(`binding limit override must be >= 4 bytes, got ${next.bindingLimit}`);
  if (!Number.isInteger(next.tokensPerRun) || next.tokensPerRun < 1 || next.tokensPerRun > 256)
    throw new Error(`tokens per run must be an integer in [1, 256], got ${next.tokensPerRun}`);
  if (next.decodeMemoryBudget !== null && !(next.decodeMemoryBudget > 0))
    throw new Error(`decode memory budget must be a positive number of bytes or null, got ${next.decodeMemoryBudget}`);
  if (!(next.submitBudgetMs > 0) || !(next.submitAssumedGflops > 0))
    throw new Error(
      `submit budget and assumed rate must be positive, got ${next.submitBudgetMs} ms at ${next.submitAssumedGflops} GFLOP/s`,
    );
  if (!['auto', 'gpu', 'software'].includes(next.kernelVariants))
    throw new Error(`kernel variants must be auto, gpu or software, got ${String(next.kernelVariants)}`);
  if (!isPath(next.optimizerPath))
    throw new Error(`optimizer path must be planned or tfjs, got ${String(next.optimizerPath)}`);
  current = Object.freeze(next);
}

/** FLOPs a planned pass may put in one submit (submitBudgetMs at submitAssumedGflops). */
export function submitFlopBudget(): number {
  return current.submitBudgetMs * current.submitAssumedGflops * 1e6;
}

/** Puts every setting back to its default. */
export function resetEngineOptions(): void {
  current = DEFAULTS;
}
