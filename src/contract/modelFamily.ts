// The model families the lab loads, each declared once: how its config.json names it, and the
// static facts of its block (norm kind, the block's residual branches in order, q/k norms, the
// MLP's activation, the embedding and attention scaling rules, which projections carry a bias).
// Everything per layer or per checkpoint (window, RoPE base, sizes) comes from the config; the
// whole block as a sequence of operations is blockDescription.ts's describeModel.
//
// Semantics, read from transformers (huggingface/transformers; modeling_qwen3.py at 000c33fd,
// modeling_gemma3.py at 0018aa64, configuration_gemma3.py at 008f5c8c), each point recorded with
// the symbol and the statement it comes from in docs/guides/add-a-model-family.md.
// No imports: modelConfig.ts reads this table while parsing.

export type ModelFamily = 'llama' | 'qwen2' | 'qwen3' | 'gemma3';

/**
 * RMSNorm's weight rule: 'rms' y = x / rms(x) * w (Llama, Qwen); 'rmsOffset' y = x / rms(x) * (1 + w)
 * (Gemma3RMSNorm.forward: `output * (1.0 + self.weight.float())`, weights initialised at 0).
 */
export type NormKind = 'rms' | 'rmsOffset';

/** The gated MLP's activation on the gate: SiLU (SwiGLU) or tanh-approximated GELU (GeGLU). */
export type MlpActivation = 'silu' | 'gelu_pytorch_tanh';

/**
 * One residual branch of the block: x += post(body(pre(x))), `post` only where the family has a
 * norm on the branch's output (Gemma 3's post_attention_layernorm / post_feedforward_layernorm).
 * Names are the HF module names under `model.layers.{i}.`.
 */
export interface BranchDeclaration {
  pre: string;
  body: 'attention' | 'mlp';
  post: string | null;
}

export interface FamilyDeclaration {
  /** architectures[0] values (the first is written when only model_type is given). */
  architectures: readonly string[];
  /** model_type values. */
  modelTypes: readonly string[];
  norm: NormKind;
  /** The block's residual branches in order. */
  branches: readonly BranchDeclaration[];
  /** Per-head RMSNorm over head_dim on queries and keys before RoPE (self_attn.q_norm / k_norm). */
  qkNorm: boolean;
  /** The config field naming the activation, and its default. */
  activationField: 'hidden_act' | 'hidden_activation';
  defaultActivation: MlpActivation;
  /** Embedding rows multiplied by sqrt(hidden_size) (Gemma3TextScaledWordEmbedding). */
  embedScaledBySqrtHidden: boolean;
  /** Attention scores scaled by query_pre_attn_scalar^-0.5 instead of head_dim^-0.5. */
  queryPreAttnScalar: boolean;
  /** Sliding-window layers with their own RoPE base (Gemma 3's layer_types / sliding_window_pattern). */
  slidingLayers: boolean;
  /**
   * Which projections carry a bias: 'llama' attention_bias on q/k/v/o and mlp_bias on the MLP;
   * 'qwen2' q/k/v always, o and MLP never; 'attentionBias' attention_bias on q/k/v/o, MLP never.
   */
  bias: 'llama' | 'qwen2' | 'attentionBias';
  defaults: { maxPositionEmbeddings: number; tieWordEmbeddings: boolean; ropeTheta: number; rmsNormEps: number };
}

/** Llama's pre-norm block: x += attn(input_layernorm x); x += mlp(post_attention_layernorm x). */
const PRE_NORM: readonly BranchDeclaration[] = [
  { pre: 'input_layernorm', body: 'attention', post: null },
  { pre: 'post_attention_layernorm', body: 'mlp', post: null },
];

/** The Llama block's facts (Llama, Qwen2 and Qwen3 share them but for bias and q/k norms). */
const LLAMA_BLOCK = {
  norm: 'rms',
  branches: PRE_NORM,
  qkNorm: false,
  activationField: 'hidden_act',
  defaultActivation: 'silu',
  embedScaledBySqrtHidden: false,
  queryPreAttnScalar: false,
  slidingLayers: false,
} as const;

export const FAMILIES: Readonly<Record<ModelFamily, FamilyDeclaration>> = {
  llama: {
    ...LLAMA_BLOCK,
    architectures: ['LlamaForCausalLM'],
    modelTypes: ['llama'],
    bias: 'llama',
    defaults: { maxPositionEmbeddings: 2048, tieWordEmbeddings: false, ropeTheta: 10000, rmsNormEps: 1e-6 },
  },
  qwen2: {
    ...LLAMA_BLOCK,
    architectures: ['Qwen2ForCausalLM'],
    modelTypes: ['qwen2'],
    bias: 'qwen2',
    defaults: { maxPositionEmbeddings: 32768, tieWordEmbeddings: false, ropeTheta: 10000, rmsNormEps: 1e-6 },
  },
  // Qwen3Attention: q_norm / k_norm (Qwen3RMSNorm over head_dim) on the projected heads before
  // apply_rotary_pos_emb; bias=config.attention_bias on all four projections; scaling head_dim**-0.5.
  qwen3: {
    ...LLAMA_BLOCK,
    architectures: ['Qwen3ForCausalLM'],
    modelTypes: ['qwen3'],
    qkNorm: true,
    bias: 'attentionBias',
    defaults: { maxPositionEmbeddings: 32768, tieWordEmbeddings: false, ropeTheta: 10000, rmsNormEps: 1e-6 },
  },
  // Gemma3DecoderLayer.forward: four norms, the attention and MLP outputs normed before the residual
  // add; Gemma3TextConfig defaults (tie_word_embeddings True, rope_theta 1e6, rms_norm_eps 1e-6,
  // max_position_embeddings 131072, hidden_activation gelu_pytorch_tanh).
  gemma3: {
    architectures: ['Gemma3ForCausalLM'],
    modelTypes: ['gemma3_text'],
    norm: 'rmsOffset',
    branches: [
      { pre: 'input_layernorm', body: 'attention', post: 'post_attention_layernorm' },
      { pre: 'pre_feedforward_layernorm', body: 'mlp', post: 'post_feedforward_layernorm' },
    ],
    qkNorm: true,
    activationField: 'hidden_activation',
    defaultActivation: 'gelu_pytorch_tanh',
    embedScaledBySqrtHidden: true,
    queryPreAttnScalar: true,
    slidingLayers: true,
    bias: 'attentionBias',
    defaults: { maxPositionEmbeddings: 131072, tieWordEmbeddings: true, ropeTheta: 1e6, rmsNormEps: 1e-6 },
  },
};

export const MODEL_FAMILIES = Object.keys(FAMILIES) as ModelFamily[];

/** The family an architectures[0] string names, or null. */
export function familyOfArchitecture(arch: string): ModelFamily | null {
  return MODEL_FAMILIES.find((f) => FAMILIES[f].architectures.includes(arch)) ?? null;
}

/** The family a model_type names, or null. */
export function familyOfModelType(modelType: string): ModelFamily | null {
  return MODEL_FAMILIES.find((f) => FAMILIES[f].modelTypes.includes(modelType)) ?? null;
}

/**
 * Values of one layer's norm weights: the branch norms [hidden] and the q/k norms [head_dim]
 * (a config without a family counts as Llama).
 */
export function layerNormValues(c: { family?: ModelFamily; hiddenSize: number; headDim: number }): number {
  const family = c.family ?? 'llama';
  return layerNormNames(family).length * c.hiddenSize + (FAMILIES[family].qkNorm ? 2 * c.headDim : 0);
}

/** Norm weights per layer: the branches' pre and post norms (q/k norms are per head, counted apart). */
export function layerNormNames(family: ModelFamily): string[] {
  return FAMILIES[family].branches.flatMap((b) => (b.post ? [b.pre, b.post] : [b.pre]));
}
