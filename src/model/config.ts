// Hugging Face config.json -> a plain model record.
//
// Supported: LlamaForCausalLM (Llama 2/3, SmolLM/SmolLM2, TinyLlama) and Qwen2ForCausalLM
// (Qwen2 / Qwen2.5), which share one forward pass (src/model/llama.ts) and differ only in which
// projections carry a bias. Anything this code does not implement (another architecture, an
// activation other than SiLU, a RoPE scaling scheme, sliding-window attention) is refused with a
// ConfigError naming the file and the field, rather than loaded and silently computed wrong.

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export type ModelFamily = 'llama' | 'qwen2';

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
  /** Bias on o_proj (Llama: attention_bias; Qwen2: never). */
  oBias: boolean;
  /** Bias on gate/up/down (Llama: mlp_bias). */
  mlpBias: boolean;
  bosTokenId: number | null;
  /** eos_token_id as a list (config may give one id or several). */
  eosTokenIds: number[];
  padTokenId: number | null;
  /** torch_dtype as written (informational: weights are decoded to float32). */
  torchDtype: string | null;
}

const ARCHITECTURES: Record<string, ModelFamily> = {
  LlamaForCausalLM: 'llama',
  Qwen2ForCausalLM: 'qwen2',
};
const MODEL_TYPES: Record<string, ModelFamily> = { llama: 'llama', qwen2: 'qwen2' };

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
  const c = json as Record<string, unknown>;
  const fail = (field: string, msg: string): never => {
    throw new ConfigError(`${fileName}: field "${field}" ${msg}`);
  };

  // --- which family
  let architecture: string;
  let family: ModelFamily;
  const archs = c.architectures;
  if (archs !== undefined && archs !== null) {
    if (!Array.isArray(archs) || archs.length === 0 || typeof archs[0] !== 'string') {
      fail('architectures', 'must be a non-empty list of strings');
    }
    architecture = (archs as string[])[0];
    const fam = ARCHITECTURES[architecture];
    if (!fam) {
      fail('architectures', `names unsupported architecture "${architecture}" (supported: ${Object.keys(ARCHITECTURES).join(', ')})`);
    }
    family = fam;
  } else {
    const mt = c.model_type;
    if (typeof mt !== 'string' || !MODEL_TYPES[mt]) {
      fail('model_type', `"${String(mt)}" is not a supported model type (supported: ${Object.keys(MODEL_TYPES).join(', ')})`);
    }
    family = MODEL_TYPES[mt as string];
    architecture = family === 'llama' ? 'LlamaForCausalLM' : 'Qwen2ForCausalLM';
  }
  const modelType = typeof c.model_type === 'string' ? c.model_type : family;
  if (MODEL_TYPES[modelType] && MODEL_TYPES[modelType] !== family) {
    fail('model_type', `"${modelType}" contradicts architectures "${architecture}"`);
  }

  // --- field readers
  const posInt = (field: string, dflt?: number): number => {
    const v = c[field];
    if (v === undefined || v === null) {
      if (dflt === undefined) fail(field, 'is required');
      return dflt as number;
    }
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) fail(field, `must be a positive integer, got ${JSON.stringify(v)}`);
    return v as number;
  };
  const posNum = (field: string, dflt: number): number => {
    const v = c[field];
    if (v === undefined || v === null) return dflt;
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) fail(field, `must be a positive number, got ${JSON.stringify(v)}`);
    return v as number;
  };
  const bool = (field: string, dflt: boolean): boolean => {
    const v = c[field];
    if (v === undefined || v === null) return dflt;
    if (typeof v !== 'boolean') fail(field, `must be true or false, got ${JSON.stringify(v)}`);
    return v as boolean;
  };
  const tokenId = (field: string): number | null => {
    const v = c[field];
    if (v === undefined || v === null) return null;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) fail(field, `must be a token id, got ${JSON.stringify(v)}`);
    return v as number;
  };

  const hiddenSize = posInt('hidden_size');
  const numHeads = posInt('num_attention_heads');
  const numKvHeads = posInt('num_key_value_heads', numHeads);
  if (numHeads % numKvHeads !== 0) {
    fail('num_key_value_heads', `(${numKvHeads}) must divide num_attention_heads (${numHeads})`);
  }
  if (c.head_dim === undefined || c.head_dim === null) {
    if (hiddenSize % numHeads !== 0) fail('hidden_size', `(${hiddenSize}) is not divisible by num_attention_heads (${numHeads}) and no head_dim is given`);
  }
  const headDim = posInt('head_dim', hiddenSize / numHeads);
  if (headDim % 2 !== 0) fail('head_dim', `(${headDim}) must be even for rotary embeddings`);

  // --- things we do not implement
  const act = c.hidden_act ?? 'silu';
  if (act !== 'silu') fail('hidden_act', `"${String(act)}" is not supported (only "silu")`);
  if (family === 'qwen2' && c.use_sliding_window === true) {
    fail('use_sliding_window', 'true is not supported (sliding-window attention is not implemented)');
  }
  const partial = c.partial_rotary_factor;
  if (partial !== undefined && partial !== null && partial !== 1 && partial !== 1.0) {
    fail('partial_rotary_factor', `${JSON.stringify(partial)} is not supported (only 1)`);
  }
  const ropeScaling = parseRopeScaling(c.rope_scaling, fail);

  // eos_token_id: one id or a list of ids.
  let eosTokenIds: number[] = [];
  const eos = c.eos_token_id;
  if (eos !== undefined && eos !== null) {
    const list = Array.isArray(eos) ? eos : [eos];
    for (const v of list) {
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) fail('eos_token_id', `must be a token id or a list of ids, got ${JSON.stringify(eos)}`);
    }
    eosTokenIds = list as number[];
  }

  const attentionBias = bool('attention_bias', false);
  const cfg: ModelConfig = {
    family,
    architecture,
    modelType,
    vocabSize: posInt('vocab_size'),
    hiddenSize,
    intermediateSize: posInt('intermediate_size'),
    numLayers: posInt('num_hidden_layers'),
    numHeads,
    numKvHeads,
    headDim,
    rmsNormEps: posNum('rms_norm_eps', 1e-6),
    ropeTheta: posNum('rope_theta', 10000),
    ropeScaling,
    maxPositionEmbeddings: posInt('max_position_embeddings', family === 'qwen2' ? 32768 : 2048),
    tieWordEmbeddings: bool('tie_word_embeddings', false),
    // Qwen2's attention always has q/k/v biases and never an o_proj bias; Llama puts
    // attention_bias on all four projections.
    qkvBias: family === 'qwen2' ? true : attentionBias,
    oBias: family === 'qwen2' ? false : attentionBias,
    mlpBias: family === 'llama' ? bool('mlp_bias', false) : false,
    bosTokenId: tokenId('bos_token_id'),
    eosTokenIds,
    padTokenId: tokenId('pad_token_id'),
    torchDtype: typeof c.torch_dtype === 'string' ? c.torch_dtype : typeof c.dtype === 'string' ? (c.dtype as string) : null,
  };
  return cfg;
}

function parseRopeScaling(v: unknown, fail: (field: string, msg: string) => never): RopeScaling {
  if (v === undefined || v === null) return { type: 'default' };
  if (typeof v !== 'object' || Array.isArray(v)) fail('rope_scaling', 'must be an object or null');
  const r = v as Record<string, unknown>;
  const type = r.rope_type ?? r.type ?? 'default';
  const num = (k: string): number => {
    const x = r[k];
    if (typeof x !== 'number' || !Number.isFinite(x) || x <= 0) fail(`rope_scaling.${k}`, `must be a positive number, got ${JSON.stringify(x)}`);
    return x as number;
  };
  switch (type) {
    case 'default':
      return { type: 'default' };
    case 'linear':
      return { type: 'linear', factor: num('factor') };
    case 'llama3':
      return {
        type: 'llama3',
        factor: num('factor'),
        lowFreqFactor: num('low_freq_factor'),
        highFreqFactor: num('high_freq_factor'),
        originalMaxPositionEmbeddings: num('original_max_position_embeddings'),
      };
    default:
      return fail('rope_scaling', `type "${String(type)}" is not supported (supported: default, linear, llama3)`);
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
        const smooth = (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
        inv[i] = (1 - smooth) * (inv[i] / s.factor) + smooth * inv[i];
      }
    }
  }
  return inv;
}
