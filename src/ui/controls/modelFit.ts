// Will a model fit? An estimate made before loading it, from its config.json alone: weights in the
// recipe's weight format (the loader decodes every dtype to f32, then packs projections for f16 / int8 / int4), the KV cache of a rollout batch, and the
// learn step: as the learn-memory planner lays it out for this device when the recipe trains LoRA
// (withLearnPlan: the planned WebGPU step's micro-batches, LoRA + AdamW, every buffer), else the activations a
// training step keeps for backprop by a per-token rule; checked against the largest buffer the GPU
// adapter allows and a memory budget (what the backend can address, less what tfjs holds now).
import type { ModelConfig } from '../../contract/modelConfig';
import { FAMILIES, layerNormNames, layerNormValues } from '../../contract/modelFamily';
import {
  LEARN_PLAN_BUDGET,
  planLearnMemory,
  type LearnLoraShape,
  type LearnMemoryPlan,
} from '../../contract/learnMemory';
import { projectionBytes, type WeightFormat } from '../../contract/weightFormat';
import { LORA_TARGET_SETS, loraTargets, type LoraTargetSet } from '../../contract/loraTargets';
import type { PromptTokenCount } from '../../contract/workerApi';

const F32 = 4;

export interface FitWorkload {
  /** Sequences in one forward pass (prompts x group size). */
  batch: number;
  /** Tokens per sequence (prompt + generated). */
  seqLen: number;
  /** Its two parts (the learn planner needs them apart); default seqLen - 64 and 64. */
  promptLen?: number;
  responseLen?: number;
}

export interface MemoryEstimate {
  params: number;
  weightBytes: number;
  /** The largest single weight (embedding or lm_head): it must fit in one GPU buffer. */
  largestTensorBytes: number;
  kvCacheBytes: number;
  activationBytes: number;
  /** LoRA parameters, gradients and AdamW moments (when the learn planner sized the step). */
  optimizerBytes?: number;
  totalBytes: number;
  /** The learn step as planned for this device, when the recipe trains LoRA adapters. */
  learn?: LearnMemoryPlan;
}

type Shape = Pick<
  ModelConfig,
  | 'vocabSize'
  | 'hiddenSize'
  | 'intermediateSize'
  | 'numLayers'
  | 'numHeads'
  | 'numKvHeads'
  | 'headDim'
  | 'tieWordEmbeddings'
  | 'qkvBias'
  | 'oBias'
  | 'mlpBias'
> &
  Partial<Pick<ModelConfig, 'family'>>;

/** Parameter count of a decoder (embeddings, per-layer projections and norms, q/k norms, final norm, lm_head unless tied). */
export function paramCount(c: Shape): number {
  const H = c.hiddenSize;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const attn = H * q + 2 * H * kv + q * H + (c.qkvBias ? q + 2 * kv : 0) + (c.oBias ? H : 0);
  const mlp = 3 * H * c.intermediateSize + (c.mlpBias ? 2 * c.intermediateSize + H : 0);
  const perLayer = attn + mlp + layerNormValues(c);
  const embed = c.vocabSize * H;
  return embed + c.numLayers * perLayer + H + (c.tieWordEmbeddings ? 0 : embed);
}

/**
 * Bytes of the weights when the projections (and an untied LM head) are stored in `format`;
 * embeddings, norms and biases stay float32.
 */
export function weightBytesOf(c: Shape, format: WeightFormat): number {
  const H = c.hiddenSize;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const I = c.intermediateSize;
  const proj = (out: number, inp: number) => projectionBytes(format, out, inp);
  const projections = proj(q, H) + 2 * proj(kv, H) + proj(H, q) + 2 * proj(I, H) + proj(H, I);
  const dense =
    paramCount(c) -
    c.numLayers * (H * q + 2 * H * kv + q * H + 3 * H * I) -
    (c.tieWordEmbeddings ? 0 : c.vocabSize * H);
  return dense * F32 + c.numLayers * projections + (c.tieWordEmbeddings ? 0 : proj(c.vocabSize, H));
}

export function estimateMemory(c: Shape, w: FitWorkload, format: WeightFormat = 'f32'): MemoryEstimate {
  const params = paramCount(c);
  const weightBytes = weightBytesOf(c, format);
  // The embedding stays float32 in every format; the projections shrink.
  const largestTensorBytes = Math.max(
    c.vocabSize * c.hiddenSize * F32,
    projectionBytes(format, c.intermediateSize, c.hiddenSize),
    projectionBytes(format, c.numHeads * c.headDim, c.hiddenSize),
  );
  const tokens = w.batch * w.seqLen;
  const kvCacheBytes = 2 * c.numLayers * c.numKvHeads * c.headDim * tokens * F32;
  // Kept per token and layer for backprop: ~7 hidden-wide tensors (norm in/out, residuals, o/down
  // outputs), q/k/v before and after RoPE plus the attention output, 4 MLP-wide ones (gate, up,
  // act, product), and the attention scores and probabilities over the sequence; a family's extra
  // norms (Gemma 3's post-branch norms) one more hidden-wide output each, q/k norms their outputs.
  const family = FAMILIES[c.family ?? 'llama'];
  const perTokenLayer =
    (7 + layerNormNames(c.family ?? 'llama').length - 2) * c.hiddenSize +
    (family.qkNorm ? (c.numHeads + c.numKvHeads) * c.headDim : 0) +
    3 * c.numHeads * c.headDim +
    3 * c.numKvHeads * c.headDim +
    4 * c.intermediateSize +
    2 * c.numHeads * w.seqLen;
  // Logits, their log-softmax and its gradient over the vocabulary.
  const activationBytes = (c.numLayers * perTokenLayer + 3 * c.vocabSize) * tokens * F32;
  return {
    params,
    weightBytes,
    largestTensorBytes,
    kvCacheBytes,
    activationBytes,
    totalBytes: weightBytes + kvCacheBytes + activationBytes,
  };
}

export interface DeviceBudget {
  backend: string;
  /** Adapter limits (WebGPU only). */
  maxBufferSize?: number;
  maxStorageBufferBindingSize?: number;
  /** Bytes the backend can use in all, and where the figure comes from. */
  budgetBytes: number;
  budgetSource: string;
  /** Bytes tfjs holds now (models already loaded, a run's tensors). */
  inUseBytes: number;
}

export interface FitVerdict {
  fits: boolean;
  /** Reasons it will not fit (empty when it fits). */
  problems: string[];
  /** Things worth knowing that do not stop it. */
  notes: string[];
  /** Budget left after the estimate (negative: short by that much). */
  headroomBytes: number;
}

const GiB = 2 ** 30;
const MiB = 2 ** 20;
const fmt = (n: number) => (Math.abs(n) >= GiB ? `${(n / GiB).toFixed(2)} GiB` : `${(n / MiB).toFixed(1)} MiB`);

export function checkFit(e: MemoryEstimate, d: DeviceBudget): FitVerdict {
  const problems: string[] = [];
  const notes: string[] = [];
  if (
    d.backend === 'webgpu' &&
    d.maxBufferSize !== undefined &&
    d.maxBufferSize > 0 &&
    e.largestTensorBytes > d.maxBufferSize
  ) {
    problems.push(
      `its largest weight is ${fmt(e.largestTensorBytes)}, over this GPU's maxBufferSize of ${fmt(d.maxBufferSize)}`,
    );
  }
  if (
    d.backend === 'webgpu' &&
    d.maxStorageBufferBindingSize !== undefined &&
    d.maxStorageBufferBindingSize > 0 &&
    e.largestTensorBytes > d.maxStorageBufferBindingSize
  ) {
    notes.push(
      `its largest weight (${fmt(e.largestTensorBytes)}) is over maxStorageBufferBindingSize (${fmt(d.maxStorageBufferBindingSize)}): kernels read it in slices, slower`,
    );
  }
  const available = d.budgetBytes - d.inUseBytes;
  const headroomBytes = available - e.totalBytes;
  if (e.learn) problems.push(...e.learn.problems.filter((p) => !/over the .* budget$/.test(p)));
  if (headroomBytes < 0) {
    const lora = e.optimizerBytes !== undefined ? ` + LoRA and AdamW ${fmt(e.optimizerBytes)}` : '';
    problems.push(
      `it needs about ${fmt(e.totalBytes)} (weights ${fmt(e.weightBytes)} + KV cache ${fmt(e.kvCacheBytes)}${lora} + activations ${fmt(e.activationBytes)}), ` +
        `more than the ${fmt(available)} left of ${fmt(d.budgetBytes)} (${d.budgetSource}; tfjs holds ${fmt(d.inUseBytes)} now)`,
    );
  }
  return { fits: problems.length === 0, problems, notes, headroomBytes };
}

/**
 * The memory budget of a backend. WebGPU does not tell a page how much GPU memory there is: the
 * budget is half the device memory the browser reports (navigator.deviceMemory, GiB, capped at 8
 * by Chrome), or 4 GiB when it reports none. wasm addresses at most 4 GiB; cpu is bounded by the
 * JS heap limit where the browser gives one.
 */
export function backendBudget(
  backend: string,
  env: { deviceMemoryGiB?: number; jsHeapLimit?: number },
): { bytes: number; source: string } {
  if (backend === 'wasm') return { bytes: 4 * GiB, source: 'the wasm backend addresses at most 4 GiB' };
  if (backend === 'cpu' && env.jsHeapLimit) return { bytes: env.jsHeapLimit, source: 'the JS heap limit' };
  if (env.deviceMemoryGiB)
    return {
      bytes: (env.deviceMemoryGiB / 2) * GiB,
      source: `half the ${env.deviceMemoryGiB} GiB of device memory the browser reports`,
    };
  return { bytes: 4 * GiB, source: 'an assumed 4 GiB (the browser reports no device memory)' };
}

/** Rollout shape from a recipe config: prompts/goals x group size sequences of prompt + answer tokens. */
/** Characters a token covers at least in the estimate of an upload's prompt tokens (English BPE: ~4). */
export const CHARS_PER_TOKEN = 3;
/** Tokens the chat template adds around a prompt. */
const TEMPLATE_TOKENS = 32;

/**
 * The prompt tokens of the longest prompt of the uploads a config names (`upload:` values whose
 * stored record counted its longest prompt), estimated at CHARS_PER_TOKEN characters a token plus
 * the template; null when the config names none.
 */
export function dataPromptTokens(
  config: Record<string, unknown>,
  uploads: readonly { ref: string; longestPrompt?: number }[],
): { tokens: number; chars: number; ref: string } | null {
  let best: { tokens: number; chars: number; ref: string } | null = null;
  for (const v of Object.values(config)) {
    const u = typeof v === 'string' ? uploads.find((d) => d.ref === v) : undefined;
    if (u?.longestPrompt === undefined) continue;
    const tokens = Math.ceil(u.longestPrompt / CHARS_PER_TOKEN) + TEMPLATE_TOKENS;
    if (!best || tokens > best.tokens) best = { tokens, chars: u.longestPrompt, ref: u.ref };
  }
  return best;
}

/** How long the fit check waits for the worker to count with the model's tokenizer before it estimates. */
export const COUNT_TIMEOUT_MS = 10_000;

export interface DataPromptLength {
  tokens: number;
  ref: string;
  /** The fit check's line on how it got `tokens`: counted with the tokenizer, or estimated and why. */
  how: string;
}

/**
 * The longest prompt's tokens: the worker's count with the model's tokenizer when it came back,
 * else the estimate (dataPromptTokens), saying which was used and why.
 */
export function dataPromptLength(
  estimate: { tokens: number; chars: number; ref: string },
  counted: PromptTokenCount | { error: string },
): DataPromptLength {
  const n = (x: number) => x.toLocaleString('en-US');
  if ('tokens' in counted)
    return {
      tokens: counted.tokens,
      ref: estimate.ref,
      how:
        `prompt length: counted with the model's tokenizer and chat template (${counted.tokenizer}): the longest prompt of ` +
        `${estimate.ref} is ${n(counted.tokens)} tokens (line ${counted.line}; the ${n(counted.counted)} longest of ${n(counted.rows)} prompts counted)`,
    };
  return {
    tokens: estimate.tokens,
    ref: estimate.ref,
    how:
      `prompt length: estimated at ${CHARS_PER_TOKEN} characters a token plus ${TEMPLATE_TOKENS} for the template ` +
      `(${n(estimate.chars)} characters, about ${n(estimate.tokens)} tokens): the tokenizer was not used (${counted.error.slice(0, 200)})`,
  };
}

export function workloadOf(config: Record<string, unknown>, dataPrompt: number | null = null): FitWorkload {
  const n = (k: string) => (typeof config[k] === 'number' ? (config[k] as number) : Number(config[k]));
  const pick = (...keys: string[]) => keys.map(n).find((v) => Number.isFinite(v) && v > 0);
  const prompts = pick('prompts', 'goals', 'episodes', 'batchSize') ?? 1;
  const group = pick('groupSize') ?? 1;
  const answer =
    Math.max(
      pick('maxNewTokens') ?? 0,
      pick('defenderMaxTokens') ?? 0,
      pick('attackerMaxTokens') ?? 0,
      pick('maxTokens') ?? 0,
    ) || 64;
  // Prompts of the sandbox and of chat templates run to ~100 tokens; an upload's longest counts when
  // known, at most the prompt budget when the rollout cuts to it (truncation left / right / middle).
  const cut = ['left', 'right', 'middle'].includes(String(config.truncation)) ? pick('maxPromptLength') : undefined;
  const promptLen = Math.max(128, Math.min(dataPrompt ?? 0, cut ?? Infinity));
  return { batch: prompts * group, seqLen: answer + promptLen, promptLen, responseLen: answer };
}

/** The LoRA a recipe config trains (loraRank, loraTargets, loraDropout's masks), or null when it has none. */
export function loraOf(config: Record<string, unknown>): LearnLoraShape | null {
  const r = Number(config.loraRank);
  if (!Number.isInteger(r) || r <= 0) return null;
  const set = (LORA_TARGET_SETS as readonly string[]).includes(String(config.loraTargets))
    ? (String(config.loraTargets) as LoraTargetSet)
    : 'all';
  return { r, targets: loraTargets(set), ...(Number(config.loraDropout) > 0 ? { dropout: true } : {}) };
}

const NO_LIMIT = Number.MAX_SAFE_INTEGER;

/**
 * The estimate with the learn step as the planner lays it out for this device
 * (src/contract/learnMemory.ts: the planned WebGPU step's micro-batch rows, accumulation and every
 * buffer, within the per-plan budget learnStep uses, LEARN_PLAN_BUDGET), in place of
 * estimateMemory's heuristic of all rows' activations at once (~7 hidden-wide, 4 MLP-wide and the
 * attention tensors per token and layer, 3 vocabulary rows per token). The rollout's KV cache is
 * counted beside it (the decode plan keeps it between steps), so the planner gets what is left.
 */
export function withLearnPlan(
  e: MemoryEstimate,
  c: Shape,
  w: FitWorkload,
  format: WeightFormat,
  lora: LearnLoraShape,
  d: DeviceBudget,
): MemoryEstimate {
  const responseLen = w.responseLen ?? Math.min(64, w.seqLen - 1);
  const promptLen = w.promptLen ?? w.seqLen - responseLen;
  const limits = {
    maxBufferSize: d.backend === 'webgpu' && d.maxBufferSize ? d.maxBufferSize : NO_LIMIT,
    maxStorageBufferBindingSize:
      d.backend === 'webgpu' && d.maxStorageBufferBindingSize ? d.maxStorageBufferBindingSize : NO_LIMIT,
    budgetBytes: Math.max(1, d.budgetBytes - d.inUseBytes - e.kvCacheBytes),
    planBudgetBytes: LEARN_PLAN_BUDGET,
  };
  const learn = planLearnMemory(c, format, lora, { rows: w.batch, promptLen, responseLen }, limits);
  const optimizerBytes = learn.bytesByScope.optimizer;
  const activationBytes = learn.bytesByScope['micro-batch'];
  return {
    ...e,
    activationBytes,
    optimizerBytes,
    learn,
    totalBytes: e.weightBytes + e.kvCacheBytes + optimizerBytes + activationBytes,
  };
}
