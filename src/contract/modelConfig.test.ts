import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseModelConfig, ropeInvFreq } from './modelConfig';

const FIXTURES = pathToFileURL(resolve('dev/fixtures') + '/');

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
    expect(cfg).toMatchObject({
      family: 'llama',
      hiddenSize: 576,
      numHeads: 9,
      numKvHeads: 3,
      headDim: 64,
      ropeTheta: 100000,
      tieWordEmbeddings: true,
      qkvBias: false,
      padTokenId: 2,
    });
  });

  it('parses Qwen2.5-0.5B: q/k/v biases always, no o_proj bias', () => {
    const cfg = parseModelConfig(QWEN25);
    expect(cfg).toMatchObject({
      family: 'qwen2',
      hiddenSize: 896,
      numHeads: 14,
      numKvHeads: 2,
      headDim: 64,
      ropeTheta: 1e6,
      rmsNormEps: 1e-6,
      qkvBias: true,
      oBias: false,
      mlpBias: false,
      eosTokenIds: [151645],
    });
  });

  it('applies defaults: kv heads = heads, head_dim = hidden / heads, untied', () => {
    const cfg = parseModelConfig({
      model_type: 'llama',
      hidden_size: 64,
      num_attention_heads: 4,
      intermediate_size: 128,
      num_hidden_layers: 1,
      vocab_size: 10,
    });
    expect(cfg).toMatchObject({
      architecture: 'LlamaForCausalLM',
      numKvHeads: 4,
      headDim: 16,
      tieWordEmbeddings: false,
      ropeTheta: 10000,
      eosTokenIds: [],
      bosTokenId: null,
    });
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
    expect(err({ architectures: ['GPT2LMHeadModel'] })).toMatch(
      /models\/x\/config\.json.*"architectures".*GPT2LMHeadModel/,
    );
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

describe('config.json ranges that keep the model computable (issue 24)', () => {
  const err = (over: Record<string, unknown>, base: object = SMOLLM2) => {
    try {
      parseModelConfig({ ...base, ...over }, 'x/config.json');
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as Error).message.length).toBeLessThan(400);
      return (e as Error).message;
    }
    throw new Error('expected a ConfigError');
  };

  it('a denormal rope_scaling.factor or a tiny rope_theta, whose frequencies would be Infinity, is refused', () => {
    // 1 / 1e-310 overflows float64 and float32 alike.
    expect(err({ rope_scaling: { rope_type: 'linear', factor: 1e-310 } })).toMatch(
      /^x\/config\.json: field "rope_scaling" gives rotary frequency 0 = Infinity, not a finite positive float32/,
    );
    // theta = 1e-300, head_dim 64: inv_freq[i] = 10^(300 * 2i / 64); i = 4 gives 10^37.5 (fits
    // float32, max 3.4e38), i = 5 gives 10^46.875 = 7.4989e46 (does not).
    expect(err({ rope_theta: 1e-300 })).toMatch(
      /field "rope_theta" gives rotary frequency 5 = 7\.4989\d*e\+46, not a finite positive float32/,
    );
    expect(err({ rope_theta: 0 })).toMatch(/field "rope_theta" must be a number above 0/);
    expect(
      err({
        rope_scaling: {
          rope_type: 'llama3',
          factor: 8,
          low_freq_factor: 4,
          high_freq_factor: 4,
          original_max_position_embeddings: 8192,
        },
      }),
    ).toMatch(/"rope_scaling\.high_freq_factor" \(4\) must be above low_freq_factor \(4\)/);
    // A real llama3 block is fine (Llama 3.2's).
    expect(
      parseModelConfig({
        ...SMOLLM2,
        rope_theta: 500000,
        rope_scaling: {
          rope_type: 'llama3',
          factor: 32,
          low_freq_factor: 1,
          high_freq_factor: 4,
          original_max_position_embeddings: 8192,
        },
      }).ropeScaling.type,
    ).toBe('llama3');
  });

  it('head_dim 1e15, hidden_size 2^32 and friends are refused before anything is allocated', () => {
    expect(err({ head_dim: 1e15 })).toBe(
      'x/config.json: field "head_dim" must be a positive integer up to 1024, got 1000000000000000',
    );
    expect(err({ hidden_size: 2 ** 32 })).toBe(
      'x/config.json: field "hidden_size" must be a positive integer up to 65536, got 4294967296',
    );
    expect(err({ num_hidden_layers: 1.5 })).toMatch(
      /"num_hidden_layers" must be a positive integer up to 1024, got 1\.5/,
    );
    expect(err({ num_key_value_heads: 18 })).toMatch(
      /"num_key_value_heads" must be a positive integer up to 9, got 18/,
    );
    expect(err({ hidden_size: 9 * 2048, head_dim: undefined })).toMatch(
      /"hidden_size" gives head_dim 2048, over the limit of 1024/,
    );
    expect(err({ vocab_size: 1 << 20, hidden_size: 4096, num_attention_heads: 32, num_key_value_heads: 8 })).toMatch(
      /"vocab_size" makes a weight matrix of vocab_size x hidden_size = 4294967296 values/,
    );
    expect(err({ rms_norm_eps: 2 })).toMatch(/"rms_norm_eps" must be a number above 0 and below 1, got 2/);
  });

  it('bos, eos and pad ids at or above vocab_size are refused (lists included)', () => {
    expect(err({ bos_token_id: 49152 })).toBe(
      'x/config.json: field "bos_token_id" must be a token id below vocab_size (49152), got 49152',
    );
    expect(err({ pad_token_id: 1e9 })).toMatch(/"pad_token_id" must be a token id below vocab_size/);
    expect(err({ eos_token_id: [2, 49152] })).toMatch(
      /"eos_token_id" must be a token id below vocab_size \(49152\) or a list of them, got \[2,49152\]/,
    );
    expect(parseModelConfig({ ...SMOLLM2, eos_token_id: [2, 49151] }).eosTokenIds).toEqual([2, 49151]);
  });

  it('says what the value was, never "[object Object]" or "undefined"', () => {
    expect(err({ hidden_act: { name: 'silu' } })).toBe(
      'x/config.json: field "hidden_act" {"name":"silu"} is not supported (only "silu")',
    );
    expect(err({ rope_scaling: { rope_type: ['linear'] } })).toBe(
      'x/config.json: field "rope_scaling" type ["linear"] is not supported (supported: default, linear, llama3)',
    );
    expect(err({ architectures: undefined, model_type: undefined })).toMatch(
      /^x\/config\.json: field "model_type" is missing, not a supported model type/,
    );
  });

  it('a 5,000-level nested or million-character value gives a short message', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 5000; i++) deep = [deep];
    expect(err({ eos_token_id: deep })).toMatch(/"eos_token_id" must be a token id.*got \[\[\[… 1 items\]\]\]$/);
    expect(err({ hidden_act: 'g'.repeat(1_000_000) })).toMatch(/"hidden_act" "g+"… \(1000000 chars\) is not supported/);
    expect(err({ rope_scaling: deep })).toMatch(/"rope_scaling" must be an object or null/);
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
      ropeScaling: {
        type: 'llama3',
        factor: 8,
        lowFreqFactor: 1,
        highFreqFactor: 4,
        originalMaxPositionEmbeddings: 8192,
      },
    });
    expect(l3[0]).toBe(1); // wavelength 2*pi
    expect(l3[2]).toBeCloseTo(0.01, 15); // wavelength 628
    // inv 0.001 -> wavelength 6283 (between 2048 and 8192): smooth = (8192/6283.19 - 1) / 3 = 0.10127
    const smooth = (8192 / (2 * Math.PI * 1000) - 1) / 3;
    expect(l3[3]).toBeCloseTo((1 - smooth) * 0.000125 + smooth * 0.001, 12);
  });
});
