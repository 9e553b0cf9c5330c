// Hugging Face config.json -> a plain model record.
//
// Supported: the families of modelFamily.ts: LlamaForCausalLM (Llama 2/3, SmolLM/SmolLM2,
// TinyLlama), Qwen2ForCausalLM (Qwen2 / Qwen2.5), Qwen3ForCausalLM (Qwen3) and Gemma3ForCausalLM
// (Gemma 3 text: 270M, 1B), one forward pass driven by the block description (blockDescription.ts).
// Anything this code does not implement (another architecture, another activation, a RoPE scaling
// scheme, Qwen's sliding window, logit soft-capping) is refused with a ConfigError naming the file
// and the field, rather than loaded and silently computed wrong.
// Sizes are bounded (CONFIG_LIMITS) so that a config can only describe a model this code can
// allocate and compute: a head_dim of 1e15 or a hidden_size of 2^32 is refused here, not
// discovered minutes into an allocation.

import { brief, briefText, clampMessage } from './brief';
import {
  FAMILIES,
  familyOfArchitecture,
  familyOfModelType,
  MODEL_FAMILIES,
  type MlpActivation,
  type ModelFamily,
} from './modelFamily';

export type { ModelFamily } from './modelFamily';

export class ConfigError extends Error {
  constructor(message: string) {
    super(clampMessage(message));
    this.name = 'ConfigError';
  }
}

/** RoPE frequency scaling. 'default' is plain RoPE. */
export type RopeScaling =
  | { type: 'default' }
  | { type: 'linear'; factor: number }
  | {
      type: 'llama3';
      factor: number;
      lowFreqFactor: number;
      highFreqFactor: number;
      originalMaxPositionEmbeddings: number;
    };

export interface ModelConfig {
  family: ModelFamily;
  /** The architectures[0] string, e.g. "LlamaForCausalLM". */
  architecture: string;
  modelType: string;
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: RopeScaling;
  maxPositionEmbeddings: number;
  tieWordEmbeddings: boolean;
  /** Bias on q_proj, k_proj, v_proj (Qwen2: always; Llama: attention_bias). */
  qkvBias: boolean;
  /** Bias on o_proj (Llama, Qwen3, Gemma 3: attention_bias; Qwen2: never). */
  oBias: boolean;
  /** Bias on gate/up/down (Llama: mlp_bias). */
  mlpBias: boolean;
  /** The gated MLP's activation (hidden_act; Gemma 3: hidden_activation). */
  activation: MlpActivation;
  /** Per-head RMSNorm on queries and keys before RoPE (Qwen3, Gemma 3). */
  qkNorm: boolean;
  /** Gemma 3's query_pre_attn_scalar (scores scaled by its -1/2 power); null: head_dim^-1/2. */
  queryPreAttnScalar: number | null;
  /** Per layer: the attention window in key slots (a query sees itself and the window - 1 before it), null for full attention. */
  layerWindows: (number | null)[];
  /** RoPE base of the sliding-window layers (Gemma 3's rope_local_base_freq, plain RoPE); null: every layer uses ropeTheta / ropeScaling. */
  ropeLocalTheta: number | null;
  bosTokenId: number | null;
  /** eos_token_id as a list (config may give one id or several). */
  eosTokenIds: number[];
  padTokenId: number | null;
  /** torch_dtype as written (informational: weights are decoded to float32). */
  torchDtype: string | null;
}

/**
 * Upper bounds on config sizes, each well above every released Llama / Qwen2 model (Llama 3.1
 * 405B: hidden 16384, 126 layers, 128 heads, intermediate 53248; Gemma's 256k vocabulary).
 */
export const CONFIG_LIMITS = {
  vocab_size: 1 << 20,
  hidden_size: 1 << 16,
  intermediate_size: 1 << 18,
  num_hidden_layers: 1024,
  num_attention_heads: 1024,
  head_dim: 1024,
  max_position_embeddings: 1 << 24,
  /** Values in one weight matrix (embedding, MLP, projections): 2^31 - 1, the WebGPU/typed-array ceiling in practice. */
  matrix_values: 2 ** 31 - 1,
} as const;

/** Parses config.json (text or already-parsed object). */
export function parseModelConfig(input: unknown, fileName = 'config.json'): ModelConfig {
  let json = input;
  if (typeof json === 'string') {
    try {
      json = JSON.parse(json);
    } catch (e) {
      throw new ConfigError(`${fileName}: not valid JSON: ${(e as Error).message}`);
    }
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new ConfigError(`${fileName}: must be a JSON object`);
  }
  const c = legacyRopeFields(json as Record<string, unknown>, fileName);
  const fail = (field: string, msg: string): never => {
    throw new ConfigError(`${fileName}: field "${field}" ${msg}`);
  };

  // --- which family
  let architecture: string;
  let family: ModelFamily;
  const supported = MODEL_FAMILIES.flatMap((f) => FAMILIES[f].architectures).join(', ');
  const archs = c.architectures;
  if (archs !== undefined && archs !== null) {
    if (!Array.isArray(archs) || archs.length === 0 || typeof archs[0] !== 'string') {
      fail('architectures', `must be a non-empty list of strings, got ${brief(archs)}`);
    }
    architecture = (archs as string[])[0];
    const fam = familyOfArchitecture(architecture);
    if (!fam) {
      const hint =
        architecture === 'Gemma3ForConditionalGeneration'
          ? ' (the multimodal Gemma 3 checkpoints, 4B and up, nest the text model; the text-only ones, gemma-3-270m and gemma-3-1b, load)'
          : '';
      fail('architectures', `names unsupported architecture ${brief(architecture)} (supported: ${supported})${hint}`);
    }
    family = fam as ModelFamily;
  } else {
    const mt = c.model_type;
    const fam = typeof mt === 'string' ? familyOfModelType(mt) : null;
    if (!fam) {
      fail(
        'model_type',
        `is ${brief(mt)}, not a supported model type (supported: ${MODEL_FAMILIES.flatMap((f) => FAMILIES[f].modelTypes).join(', ')})`,
      );
    }
    family = fam as ModelFamily;
    architecture = FAMILIES[family].architectures[0];
  }
  const decl = FAMILIES[family];
  const modelType = typeof c.model_type === 'string' ? c.model_type : decl.modelTypes[0];
  const typeFamily = familyOfModelType(modelType);
  if (typeFamily && typeFamily !== family) {
    fail('model_type', `${brief(modelType)} contradicts architectures ${brief(architecture)}`);
  }

  // --- field readers
  /** A positive integer up to `max` (CONFIG_LIMITS unless given). */
  const posInt = (
    field: string,
    dflt?: number,
    max: number = (CONFIG_LIMITS as Record<string, number>)[field] ?? Number.MAX_SAFE_INTEGER,
  ): number => {
    const v = c[field];
    if (v === undefined || v === null) {
      if (dflt === undefined) fail(field, 'is required');
      return dflt as number;
    }
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0 || v > max)
      fail(field, `must be a positive integer up to ${max}, got ${brief(v)}`);
    return v as number;
  };
  /** A finite number in (lo, hi). */
  const numIn = (field: string, dflt: number, lo: number, hi: number): number => {
    const v = c[field];
    if (v === undefined || v === null) return dflt;
    if (typeof v !== 'number' || !(v > lo && v < hi))
      fail(field, `must be a number above ${lo} and below ${hi}, got ${brief(v)}`);
    return v as number;
  };
  const bool = (field: string, dflt: boolean): boolean => {
    const v = c[field];
    if (v === undefined || v === null) return dflt;
    if (typeof v !== 'boolean') fail(field, `must be true or false, got ${brief(v)}`);
    return v as boolean;
  };
  const vocabSize = posInt('vocab_size');
  const tokenId = (field: string): number | null => {
    const v = c[field];
    if (v === undefined || v === null) return null;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v >= vocabSize)
      fail(field, `must be a token id below vocab_size (${vocabSize}), got ${brief(v)}`);
    return v as number;
  };

  const hiddenSize = posInt('hidden_size');
  const numHeads = posInt('num_attention_heads');
  const numKvHeads = posInt('num_key_value_heads', numHeads, numHeads);
  if (numHeads % numKvHeads !== 0) {
    fail('num_key_value_heads', `(${numKvHeads}) must divide num_attention_heads (${numHeads})`);
  }
  if (c.head_dim === undefined || c.head_dim === null) {
    if (hiddenSize % numHeads !== 0)
      fail(
        'hidden_size',
        `(${hiddenSize}) is not divisible by num_attention_heads (${numHeads}) and no head_dim is given`,
      );
  }
  const headDim = posInt('head_dim', hiddenSize / numHeads);
  if (headDim % 2 !== 0) fail('head_dim', `(${headDim}) must be even for rotary embeddings`);
  if (headDim > CONFIG_LIMITS.head_dim)
    fail(
      c.head_dim === undefined || c.head_dim === null ? 'hidden_size' : 'head_dim',
      `gives head_dim ${headDim}, over the limit of ${CONFIG_LIMITS.head_dim}`,
    );
  const intermediateSize = posInt('intermediate_size');
  // Every weight matrix must fit one buffer: embedding [vocab, hidden], MLP [inter, hidden],
  // attention [heads x head_dim, hidden].
  for (const [field, what, n] of [
    ['vocab_size', 'vocab_size x hidden_size', vocabSize * hiddenSize],
    ['intermediate_size', 'intermediate_size x hidden_size', intermediateSize * hiddenSize],
    ['num_attention_heads', 'num_attention_heads x head_dim x hidden_size', numHeads * headDim * hiddenSize],
  ] as const) {
    if (n > CONFIG_LIMITS.matrix_values)
      fail(
        field,
        `makes a weight matrix of ${what} = ${n} values, over the ${CONFIG_LIMITS.matrix_values} one buffer holds`,
      );
  }

  // --- things we do not implement
  const act = c[decl.activationField] ?? c.hidden_act ?? decl.defaultActivation;
  if (act !== decl.defaultActivation)
    fail(decl.activationField, `${brief(act)} is not supported (only ${brief(decl.defaultActivation)})`);
  if (!decl.slidingLayers && c.use_sliding_window === true) {
    fail('use_sliding_window', 'true is not supported (sliding-window attention is not implemented for this family)');
  }
  for (const field of ['attn_logit_softcapping', 'final_logit_softcapping']) {
    if (c[field] !== undefined && c[field] !== null)
      fail(field, `${brief(c[field])} is not supported (only null: Gemma 3 has no soft-capping)`);
  }
  if (c.use_bidirectional_attention === true)
    fail('use_bidirectional_attention', 'true is not supported (the lab runs causal decoders)');
  const partial = c.partial_rotary_factor;
  if (partial !== undefined && partial !== null && partial !== 1 && partial !== 1.0) {
    fail('partial_rotary_factor', `${brief(partial)} is not supported (only 1)`);
  }
  const ropeScaling = parseRopeScaling(c.rope_scaling, fail);
  const numLayers = posInt('num_hidden_layers');
  const windows = decl.slidingLayers ? parseLayerWindows(c, numLayers, posInt, fail) : null;

  // eos_token_id: one id or a list of ids.
  let eosTokenIds: number[] = [];
  const eos = c.eos_token_id;
  if (eos !== undefined && eos !== null) {
    const list = Array.isArray(eos) ? eos : [eos];
    for (const v of list) {
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v >= vocabSize) {
        fail('eos_token_id', `must be a token id below vocab_size (${vocabSize}) or a list of them, got ${brief(eos)}`);
      }
    }
    eosTokenIds = list as number[];
  }

  const attentionBias = bool('attention_bias', false);
  const cfg: ModelConfig = {
    family,
    architecture,
    modelType,
    vocabSize,
    hiddenSize,
    intermediateSize,
    numLayers,
    numHeads,
    numKvHeads,
    headDim,
    rmsNormEps: numIn('rms_norm_eps', decl.defaults.rmsNormEps, 0, 1),
    ropeTheta: numIn('rope_theta', decl.defaults.ropeTheta, 0, Infinity),
    ropeScaling,
    maxPositionEmbeddings: posInt('max_position_embeddings', decl.defaults.maxPositionEmbeddings),
    tieWordEmbeddings: bool('tie_word_embeddings', decl.defaults.tieWordEmbeddings),
    // Qwen2's attention always has q/k/v biases and never an o_proj bias; the others put
    // attention_bias on all four projections; only Llama reads mlp_bias.
    qkvBias: decl.bias === 'qwen2' ? true : attentionBias,
    oBias: decl.bias === 'qwen2' ? false : attentionBias,
    mlpBias: decl.bias === 'llama' ? bool('mlp_bias', false) : false,
    activation: decl.defaultActivation,
    qkNorm: decl.qkNorm,
    // Gemma3TextConfig default query_pre_attn_scalar=256.
    queryPreAttnScalar: decl.queryPreAttnScalar ? numIn('query_pre_attn_scalar', 256, 0, Infinity) : null,
    layerWindows: windows ?? new Array<number | null>(numLayers).fill(null),
    // Gemma3TextConfig default rope_local_base_freq=10000.
    ropeLocalTheta: decl.slidingLayers ? numIn('rope_local_base_freq', 10000, 0, Infinity) : null,
    bosTokenId: tokenId('bos_token_id'),
    eosTokenIds,
    padTokenId: tokenId('pad_token_id'),
    torchDtype:
      typeof c.torch_dtype === 'string'
        ? briefText(c.torch_dtype)
        : typeof c.dtype === 'string'
          ? briefText(c.dtype as string)
          : null,
  };
  // The rotary frequencies must come out as finite, non-zero float32 numbers: a rope_scaling
  // factor of 1e-310 or a rope_theta of 1e-300 passes every range above and gives Infinity here.
  if (cfg.ropeLocalTheta !== null) {
    const local = ropeInvFreq({ headDim, ropeTheta: cfg.ropeLocalTheta, ropeScaling: { type: 'default' } });
    if (!local.every((f) => Number.isFinite(Math.fround(f)) && Math.fround(f) > 0))
      fail(
        'rope_local_base_freq',
        `${cfg.ropeLocalTheta} gives a rotary frequency that is not a finite positive float32`,
      );
  }
  const inv = ropeInvFreq(cfg);
  for (let i = 0; i < inv.length; i++) {
    const f = Math.fround(inv[i]);
    if (!(Number.isFinite(f) && f > 0)) {
      const field = ropeScaling.type === 'default' ? 'rope_theta' : 'rope_scaling';
      fail(
        field,
        `gives rotary frequency ${i} = ${inv[i]}, not a finite positive float32 (rope_theta ${cfg.ropeTheta}${ropeScaling.type === 'default' ? '' : `, rope_scaling ${brief(c.rope_scaling)}`})`,
      );
    }
  }
  return cfg;
}

/**
 * Configs saved by transformers 5 give RoPE as `rope_parameters` ({rope_type, rope_theta, ...}, or
 * per layer type for Gemma 3: {full_attention: {...}, sliding_attention: {...}}) instead of
 * rope_theta / rope_scaling / rope_local_base_freq: mapped onto those fields, which win if both.
 */
function legacyRopeFields(c: Record<string, unknown>, fileName: string): Record<string, unknown> {
  const rp = c.rope_parameters;
  if (rp === null || typeof rp !== 'object' || Array.isArray(rp)) return c;
  const r = rp as Record<string, unknown>;
  const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
  const full = isObj(r.full_attention) ? r.full_attention : r;
  const out: Record<string, unknown> = { ...c };
  out.rope_theta ??= full.rope_theta;
  if (
    (out.rope_scaling === undefined || out.rope_scaling === null) &&
    full.rope_type !== undefined &&
    full.rope_type !== 'default'
  ) {
    const { rope_theta: _theta, ...scaling } = full;
    out.rope_scaling = scaling;
  }
  if (isObj(r.sliding_attention)) {
    if (r.sliding_attention.rope_type !== undefined && r.sliding_attention.rope_type !== 'default')
      throw new ConfigError(
        `${fileName}: field "rope_parameters.sliding_attention.rope_type" ${brief(r.sliding_attention.rope_type)} is not supported (only "default")`,
      );
    out.rope_local_base_freq ??= r.sliding_attention.rope_theta;
  }
  return out;
}

/**
 * Gemma 3's per-layer attention: `layer_types` ("sliding_attention" | "full_attention" per layer)
 * or, in older configs, `sliding_window_pattern` p (layer i is full iff (i + 1) % p == 0:
 * Gemma3TextConfig's default layer_types, p = 6); sliding layers see `sliding_window` key slots
 * (create_sliding_window_causal_mask: kv_idx > q_idx - sliding_window). Default window 4096.
 */
function parseLayerWindows(
  c: Record<string, unknown>,
  numLayers: number,
  posInt: (field: string, dflt?: number, max?: number) => number,
  fail: (field: string, msg: string) => never,
): (number | null)[] {
  const window = posInt('sliding_window', 4096, CONFIG_LIMITS.max_position_embeddings);
  const types = c.layer_types;
  if (types !== undefined && types !== null) {
    if (!Array.isArray(types) || types.length !== numLayers)
      fail('layer_types', `must list one type per layer (${numLayers}), got ${brief(types)}`);
    return (types as unknown[]).map((t, i) => {
      if (t === 'sliding_attention') return window;
      if (t === 'full_attention') return null;
      return fail(`layer_types[${i}]`, `is ${brief(t)}, not "sliding_attention" or "full_attention"`);
    });
  }
  const p = posInt('sliding_window_pattern', 6, 1024);
  return Array.from({ length: numLayers }, (_, i) => ((i + 1) % p === 0 ? null : window));
}

function parseRopeScaling(v: unknown, fail: (field: string, msg: string) => never): RopeScaling {
  if (v === undefined || v === null) return { type: 'default' };
  if (typeof v !== 'object' || Array.isArray(v)) fail('rope_scaling', `must be an object or null, got ${brief(v)}`);
  const r = v as Record<string, unknown>;
  const type = r.rope_type ?? r.type ?? 'default';
  const num = (k: string): number => {
    const x = r[k];
    if (typeof x !== 'number' || !Number.isFinite(x) || x <= 0)
      fail(`rope_scaling.${k}`, `must be a positive number, got ${brief(x)}`);
    return x as number;
  };
  switch (type) {
    case 'default':
      return { type: 'default' };
    case 'linear':
      return { type: 'linear', factor: num('factor') };
    case 'llama3': {
      const s = {
        type: 'llama3' as const,
        factor: num('factor'),
        lowFreqFactor: num('low_freq_factor'),
        highFreqFactor: num('high_freq_factor'),
        originalMaxPositionEmbeddings: num('original_max_position_embeddings'),
      };
      // The blend divides by high - low: equal factors would make the mid band NaN.
      if (!(s.highFreqFactor > s.lowFreqFactor))
        fail(
          'rope_scaling.high_freq_factor',
          `(${s.highFreqFactor}) must be above low_freq_factor (${s.lowFreqFactor})`,
        );
      return s;
    }
    default:
      return fail('rope_scaling', `type ${brief(type)} is not supported (supported: default, linear, llama3)`);
  }
}

/**
 * RoPE inverse frequencies (length headDim/2), in float64: inv_freq[i] = theta^(-2i/d), then the
 * configured scaling. Computed on the host in double precision; angles are rounded to float32
 * only after cos/sin.
 */
export function ropeInvFreq(cfg: Pick<ModelConfig, 'headDim' | 'ropeTheta' | 'ropeScaling'>): Float64Array {
  const half = cfg.headDim / 2;
  const inv = new Float64Array(half);
  for (let i = 0; i < half; i++) inv[i] = 1 / cfg.ropeTheta ** ((2 * i) / cfg.headDim);
  const s = cfg.ropeScaling;
  if (s.type === 'linear') {
    for (let i = 0; i < half; i++) inv[i] /= s.factor;
  } else if (s.type === 'llama3') {
    // Llama 3.1 scheme: long wavelengths slowed by `factor`, short ones kept, a smooth blend between.
    const lowWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
    const highWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
    for (let i = 0; i < half; i++) {
      const wavelen = (2 * Math.PI) / inv[i];
      if (wavelen > lowWavelen) {
        inv[i] /= s.factor;
      } else if (wavelen >= highWavelen) {
        const smooth =
          (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
        inv[i] = (1 - smooth) * (inv[i] / s.factor) + smooth * inv[i];
      }
    }
  }
  return inv;
}
