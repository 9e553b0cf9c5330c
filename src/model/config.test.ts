import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseModelConfig, ropeInvFreq } from './config.ts';

const FIXTURES = new URL('../../../shared/fixtures/', import.meta.url);

// SmolLM2-135M-Instruct's config.json (the fields that matter), as published on the hub.
const SMOLLM2 = {
  architectures: ['LlamaForCausalLM'],
  attention_bias: false,
  bos_token_id: 1,
  eos_token_id: 2,
  hidden_act: 'silu',
  hidden_size: 576,
  intermediate_size: 1536,
  max_position_embeddings: 8192,
  mlp_bias: false,
  model_type: 'llama',
  num_attention_heads: 9,
  num_hidden_layers: 30,
  num_key_value_heads: 3,
  pad_token_id: 2,
  pretraining_tp: 1,
  rms_norm_eps: 1e-5,
  rope_scaling: null,
  rope_theta: 100000,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  vocab_size: 49152,
};

// Qwen2.5-0.5B-Instruct's config.json.
const QWEN25 = {
  architectures: ['Qwen2ForCausalLM'],
  attention_dropout: 0.0,
  bos_token_id: 151643,
  eos_token_id: 151645,
  hidden_act: 'silu',
  hidden_size: 896,
  intermediate_size: 4864,
  max_position_embeddings: 32768,
  max_window_layers: 21,
  model_type: 'qwen2',
  num_attention_heads: 14,
  num_hidden_layers: 24,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000.0,
  sliding_window: 32768,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  use_cache: true,
  use_sliding_window: false,
  vocab_size: 151936,
};

describe('parseModelConfig', () => {
  it('parses the tiny-llama fixture', () => {
    const cfg = parseModelConfig(readFileSync(new URL('tiny-llama/config.json', FIXTURES), 'utf8'));
    expect(cfg).toMatchObject({
      family: 'llama',
      architecture: 'LlamaForCausalLM',
      hiddenSize: 32,
      intermediateSize: 64,
      numLayers: 2,
      numHeads: 4,
      numKvHeads: 2,
      headDim: 8,
      vocabSize: 64,
      rmsNormEps: 1e-5,
      ropeTheta: 10000,
      maxPositionEmbeddings: 256,
      tieWordEmbeddings: true,
      qkvBias: false,
      oBias: false,
      bosTokenId: 1,
      eosTokenIds: [2],
      torchDtype: 'bfloat16',
    });
  });

  it('parses SmolLM2-135M', () => {
    const cfg = parseModelConfig(SMOLLM2);
    expect(cfg).toMatchObject({ family: 'llama', hiddenSize: 576, numHeads: 9, numKvHeads: 3, headDim: 64, ropeTheta: 100000, tieWordEmbeddings: true, qkvBias: false, padTokenId: 2 });
  });

  it('parses Qwen2.5-0.5B: q/k/v biases always, no o_proj bias', () => {
    const cfg = parseModelConfig(QWEN25);
    expect(cfg).toMatchObject({ family: 'qwen2', hiddenSize: 896, numHeads: 14, numKvHeads: 2, headDim: 64, ropeTheta: 1e6, rmsNormEps: 1e-6, qkvBias: true, oBias: false, mlpBias: false, eosTokenIds: [151645] });
  });

  it('applies defaults: kv heads = heads, head_dim = hidden / heads, untied', () => {
    const cfg = parseModelConfig({ model_type: 'llama', hidden_size: 64, num_attention_heads: 4, intermediate_size: 128, num_hidden_layers: 1, vocab_size: 10 });
    expect(cfg).toMatchObject({ architecture: 'LlamaForCausalLM', numKvHeads: 4, headDim: 16, tieWordEmbeddings: false, ropeTheta: 10000, eosTokenIds: [], bosTokenId: null });
  });

  it('takes an explicit head_dim, a list of eos ids, and Llama attention_bias on all four projections', () => {
    const cfg = parseModelConfig({ ...SMOLLM2, head_dim: 32, eos_token_id: [2, 7], attention_bias: true });
    expect(cfg.headDim).toBe(32);
    expect(cfg.eosTokenIds).toEqual([2, 7]);
    expect(cfg.qkvBias && cfg.oBias).toBe(true);
  });

  it('refuses what it does not implement, naming the file and field', () => {
    const err = (over: Record<string, unknown>, base: object = SMOLLM2) => {
      try {
        parseModelConfig({ ...base, ...over }, 'models/x/config.json');
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        return (e as Error).message;
      }
      throw new Error('expected a ConfigError');
    };
    expect(err({ architectures: ['GPT2LMHeadModel'] })).toMatch(/models\/x\/config\.json.*"architectures".*GPT2LMHeadModel/);
    expect(err({ hidden_act: 'gelu' })).toMatch(/"hidden_act".*"gelu"/);
    expect(err({ rope_scaling: { rope_type: 'yarn', factor: 4 } })).toMatch(/"rope_scaling".*"yarn"/);
    expect(err({ rope_scaling: { type: 'dynamic', factor: 2 } })).toMatch(/"rope_scaling".*"dynamic"/);
    expect(err({ rope_scaling: { rope_type: 'llama3', factor: 8 } })).toMatch(/"rope_scaling\.low_freq_factor"/);
    expect(err({ use_sliding_window: true }, QWEN25)).toMatch(/"use_sliding_window"/);
    expect(err({ num_key_value_heads: 4 })).toMatch(/"num_key_value_heads".*must divide/);
    expect(err({ hidden_size: undefined })).toMatch(/"hidden_size" is required/);
    expect(err({ vocab_size: -3 })).toMatch(/"vocab_size" must be a positive integer/);
    expect(err({ eos_token_id: 'x' })).toMatch(/"eos_token_id"/);
    expect(err({ architectures: undefined, model_type: 'mistral' })).toMatch(/"model_type".*"mistral"/);
    expect(() => parseModelConfig('{nope', 'c.json')).toThrow(/c\.json: not valid JSON/);
  });
});

describe('ropeInvFreq', () => {
  it('is theta^(-2i/d), worked by hand for d = 8, theta = 10000', () => {
    const inv = ropeInvFreq({ headDim: 8, ropeTheta: 10000, ropeScaling: { type: 'default' } });
    expect(Array.from(inv)).toEqual([1, 0.1, 0.01, 0.001].map((x, i) => (i === 0 ? 1 : expect.closeTo(x, 15))));
  });

  it('linear scaling divides every frequency; llama3 keeps short wavelengths and slows long ones', () => {
    const lin = ropeInvFreq({ headDim: 8, ropeTheta: 10000, ropeScaling: { type: 'linear', factor: 4 } });
    expect(lin[1]).toBeCloseTo(0.025, 15);
    // original 8192, low 1, high 4: wavelengths < 2048 unchanged, > 8192 divided by 8, between blended.
    const l3 = ropeInvFreq({
      headDim: 8,
      ropeTheta: 10000,
      ropeScaling: { type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 },
    });
    expect(l3[0]).toBe(1); // wavelength 2*pi
    expect(l3[2]).toBeCloseTo(0.01, 15); // wavelength 628
    // inv 0.001 -> wavelength 6283 (between 2048 and 8192): smooth = (8192/6283.19 - 1) / 3 = 0.10127
    const smooth = (8192 / (2 * Math.PI * 1000) - 1) / 3;
    expect(l3[3]).toBeCloseTo((1 - smooth) * 0.000125 + smooth * 0.001, 12);
  });
});
