import { describe, expect, it } from 'vitest';
import { ConfigError, parseModelConfig, ropeInvFreq } from './modelConfig';
import { describeModel, layerNormWeights, plannedMismatch } from './blockDescription';
import { layerNormNames } from './modelFamily';

// The config.json fields of Qwen/Qwen3-0.6B and google/gemma-3-1b-it as published on the hub.
const QWEN3_06B = {
  architectures: ['Qwen3ForCausalLM'],
  attention_bias: false,
  bos_token_id: 151643,
  eos_token_id: 151645,
  head_dim: 128,
  hidden_act: 'silu',
  hidden_size: 1024,
  intermediate_size: 3072,
  max_position_embeddings: 40960,
  max_window_layers: 28,
  model_type: 'qwen3',
  num_attention_heads: 16,
  num_hidden_layers: 28,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-6,
  rope_scaling: null,
  rope_theta: 1000000,
  sliding_window: null,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  use_sliding_window: false,
  vocab_size: 151936,
};
const GEMMA3_1B = {
  architectures: ['Gemma3ForCausalLM'],
  attention_bias: false,
  attn_logit_softcapping: null,
  bos_token_id: 2,
  eos_token_id: [1, 106],
  final_logit_softcapping: null,
  head_dim: 256,
  hidden_activation: 'gelu_pytorch_tanh',
  hidden_size: 1152,
  intermediate_size: 6912,
  max_position_embeddings: 32768,
  model_type: 'gemma3_text',
  num_attention_heads: 4,
  num_hidden_layers: 26,
  num_key_value_heads: 1,
  pad_token_id: 0,
  query_pre_attn_scalar: 256,
  rms_norm_eps: 1e-6,
  rope_local_base_freq: 10000,
  rope_scaling: null,
  rope_theta: 1000000,
  sliding_window: 512,
  sliding_window_pattern: 6,
  torch_dtype: 'bfloat16',
  vocab_size: 262144,
};
const err = (c: object) => {
  try {
    parseModelConfig(c, 'x/config.json');
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('parsed');
};

describe('Qwen3 config', () => {
  it('parses Qwen3-0.6B: head_dim 128 with 16 heads over hidden 1024, q/k norms, no biases, tied', () => {
    const cfg = parseModelConfig(QWEN3_06B);
    expect(cfg).toMatchObject({
      family: 'qwen3',
      headDim: 128,
      numHeads: 16,
      hiddenSize: 1024,
      qkNorm: true,
      qkvBias: false,
      oBias: false,
      activation: 'silu',
      tieWordEmbeddings: true,
      queryPreAttnScalar: null,
      ropeLocalTheta: null,
    });
    expect(cfg.numHeads * cfg.headDim).not.toBe(cfg.hiddenSize);
    expect(cfg.layerWindows.every((w) => w === null)).toBe(true);
  });

  it('puts attention_bias on all four projections (Qwen3Attention: bias=config.attention_bias)', () => {
    const cfg = parseModelConfig({ ...QWEN3_06B, attention_bias: true });
    expect([cfg.qkvBias, cfg.oBias, cfg.mlpBias]).toEqual([true, true, false]);
  });

  it('refuses its sliding window, which the lab does not implement for Qwen', () => {
    expect(err({ ...QWEN3_06B, use_sliding_window: true })).toMatch(/field "use_sliding_window" true is not supported/);
  });

  it('describes the Llama block plus per-head q/k norms, which both planned paths run', () => {
    const cfg = parseModelConfig(QWEN3_06B);
    const d = describeModel(cfg);
    expect(d.layers[0].map((o) => o.op)).toEqual(['norm', 'attention', 'add', 'norm', 'mlp', 'add']);
    const attn = d.layers[0][1];
    expect(attn).toMatchObject({ qkNorm: { q: 'self_attn.q_norm', k: 'self_attn.k_norm' }, window: null });
    expect(attn.op === 'attention' && attn.scale).toBeCloseTo(128 ** -0.5, 12);
    expect(layerNormWeights(d.layers[0], cfg).map((n) => `${n.weight}:${n.size}`)).toEqual([
      'input_layernorm:1024',
      'self_attn.q_norm:128',
      'self_attn.k_norm:128',
      'post_attention_layernorm:1024',
    ]);
    expect(plannedMismatch(d)).toBeNull();
  });
});

describe('Gemma 3 config', () => {
  it('parses gemma-3-1b: GeGLU, q/k norms, query_pre_attn_scalar, tied by default, 5 sliding : 1 full', () => {
    const { tie_word_embeddings: _, ...noTie } = { ...GEMMA3_1B, tie_word_embeddings: undefined };
    const cfg = parseModelConfig(noTie);
    expect(cfg).toMatchObject({
      family: 'gemma3',
      modelType: 'gemma3_text',
      activation: 'gelu_pytorch_tanh',
      qkNorm: true,
      queryPreAttnScalar: 256,
      tieWordEmbeddings: true,
      ropeTheta: 1e6,
      ropeLocalTheta: 10000,
      eosTokenIds: [1, 106],
    });
    // Layer i is full iff (i + 1) % 6 == 0: layers 5, 11, 17, 23.
    const full = cfg.layerWindows.flatMap((w, i) => (w === null ? [i] : []));
    expect(full).toEqual([5, 11, 17, 23]);
    expect(cfg.layerWindows[0]).toBe(512);
  });

  it('reads layer_types where given, and rope_parameters per layer type (transformers 5 configs)', () => {
    const { rope_theta: _a, rope_local_base_freq: _b, sliding_window_pattern: _c, ...rest } = GEMMA3_1B;
    const cfg = parseModelConfig({
      ...rest,
      num_hidden_layers: 3,
      layer_types: ['full_attention', 'sliding_attention', 'full_attention'],
      rope_parameters: {
        full_attention: { rope_type: 'linear', rope_theta: 1e6, factor: 8 },
        sliding_attention: { rope_type: 'default', rope_theta: 10000 },
      },
    });
    expect(cfg.layerWindows).toEqual([null, 512, null]);
    expect(cfg.ropeScaling).toEqual({ type: 'linear', factor: 8 });
    expect([cfg.ropeTheta, cfg.ropeLocalTheta]).toEqual([1e6, 10000]);
    const d = describeModel(cfg);
    const ropeOf = (l: number) => d.layers[l].flatMap((o) => (o.op === 'attention' ? [d.ropes[o.rope]] : []))[0];
    // Full layers: rope_theta with the scaling; sliding layers: the local base, plain.
    expect(ropeOf(0)).toEqual({ theta: 1e6, scaling: { type: 'linear', factor: 8 } });
    expect(ropeOf(1)).toEqual({ theta: 10000, scaling: { type: 'default' } });
    const inv = ropeInvFreq({ headDim: 256, ropeTheta: 1e6, ropeScaling: { type: 'linear', factor: 8 } });
    expect(inv[1]).toBeCloseTo(1e6 ** (-2 / 256) / 8, 15);
  });

  it('describes four norms per layer around both branches, the scaled embedding and the scalar', () => {
    const cfg = parseModelConfig(GEMMA3_1B);
    const d = describeModel(cfg);
    expect(d.layers[0].map((o) => (o.op === 'norm' ? `${o.of}:${o.weight}` : o.op))).toEqual([
      'residual:input_layernorm',
      'attention',
      'branch:post_attention_layernorm',
      'add',
      'residual:pre_feedforward_layernorm',
      'mlp',
      'branch:post_feedforward_layernorm',
      'add',
    ]);
    expect(layerNormNames('gemma3')).toHaveLength(4);
    expect(d.norm).toBe('rmsOffset');
    expect(d.embedScale).toBe(Math.fround(Math.sqrt(1152)));
    const attn = d.layers[5][1];
    expect(attn).toMatchObject({ op: 'attention', window: null, rope: 0, scale: 1 / 16 });
    expect(d.layers[0][1]).toMatchObject({ window: 512, rope: 1 });
    expect(d.tiedHead).toBe(true);
    expect(plannedMismatch(d)).toBeNull();
  });

  it('refuses what Gemma 3 text checkpoints never use, naming the field', () => {
    expect(err({ ...GEMMA3_1B, final_logit_softcapping: 30 })).toMatch(
      /field "final_logit_softcapping" 30 is not supported/,
    );
    expect(err({ ...GEMMA3_1B, hidden_activation: 'gelu' })).toMatch(
      /field "hidden_activation" "gelu" is not supported/,
    );
    expect(err({ ...GEMMA3_1B, layer_types: ['full_attention'] })).toMatch(
      /field "layer_types" must list one type per layer \(26\)/,
    );
    expect(err({ ...GEMMA3_1B, architectures: ['Gemma3ForConditionalGeneration'] })).toMatch(
      /unsupported architecture "Gemma3ForConditionalGeneration".*text-only/,
    );
  });
});

describe('the existing families through the description', () => {
  it('Llama and Qwen2 are the block the planned paths run', () => {
    for (const c of [
      {
        model_type: 'llama',
        hidden_size: 64,
        num_attention_heads: 4,
        intermediate_size: 128,
        num_hidden_layers: 2,
        vocab_size: 10,
      },
      {
        model_type: 'qwen2',
        hidden_size: 64,
        num_attention_heads: 4,
        intermediate_size: 128,
        num_hidden_layers: 2,
        vocab_size: 10,
      },
    ]) {
      const cfg = parseModelConfig(c);
      const d = describeModel(cfg);
      expect(plannedMismatch(d)).toBeNull();
      expect(d.embedScale).toBe(1);
      expect(d.ropes).toHaveLength(1);
    }
  });
});
