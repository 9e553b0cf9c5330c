// Qwen3 and Gemma 3 repositories served the way the hub serves one and loaded by hub id through
// the recipe env, running a GRPO and an SFT recipe end to end (generation, rewards, the LoRA learn
// step on tfjs) in int8 and int4 (about 10 s a case on a shared 2-core machine).
// The repositories reuse the generated Qwen2 repository's tokenizer files (byte-level BPE, ChatML,
// two eos ids) with a config.json of the family and random weights of every tensor the family's
// block description names; the logits themselves are checked against the float64 NumPy reference
// in src/model/families.test.ts.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveHubRepos, type HubServer } from '../../dev/servers/hubServer';
import { ENDOFTEXT, IM_END, writeQwen2Fixture } from '../../dev/test/testdata/qwen2Fixture';
import { nodeRecipeEnv } from '../cli/recipe-env';
import { parseModelConfig } from '../contract/modelConfig';
import { describeModel, layerNormWeights } from '../contract/blockDescription';
import { mulberry32 } from '../engine/index';
import { writeSafetensors } from '../model/safetensors';
import { createRun } from './registry';

/** The generated tokenizer's size (its ids 0..274): sampling a padded id (the Qwen2 repository's 320) would fail to decode. */
const TOKENIZER_SIZE = 275;
const COMMON = {
  vocab_size: TOKENIZER_SIZE,
  hidden_size: 64,
  intermediate_size: 128,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  max_position_embeddings: 512,
  rms_norm_eps: 1e-6,
  bos_token_id: ENDOFTEXT,
  eos_token_id: IM_END,
  torch_dtype: 'float32',
};
const REPOS: Record<string, Record<string, unknown>> = {
  'test-org/qwen3-tiny': {
    ...COMMON,
    architectures: ['Qwen3ForCausalLM'],
    model_type: 'qwen3',
    head_dim: 24, // 4 x 24 = 96 over hidden 64
    num_hidden_layers: 2,
    attention_bias: true,
    tie_word_embeddings: false,
    rope_theta: 1e6,
  },
  'test-org/gemma3-tiny': {
    ...COMMON,
    architectures: ['Gemma3ForCausalLM'],
    model_type: 'gemma3_text',
    head_dim: 8, // 4 x 8 = 32 under hidden 64
    num_hidden_layers: 2,
    hidden_activation: 'gelu_pytorch_tanh',
    query_pre_attn_scalar: 16,
    sliding_window: 4,
    sliding_window_pattern: 2,
    rope_theta: 1e6,
    rope_local_base_freq: 10000,
  },
};

/** Every tensor the family's description names, random (seeded), float32. */
function weightsOf(configJson: Record<string, unknown>, seed: number): Uint8Array {
  const c = parseModelConfig(configJson);
  const d = describeModel(c);
  const rand = mulberry32(seed);
  const normal = (n: number, std: number, mean = 0) =>
    Float32Array.from(
      { length: n },
      () => mean + std * Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand()),
    );
  const t: Record<string, { dtype: 'F32'; shape: number[]; data: Float32Array }> = {};
  const put = (name: string, shape: number[], std: number, mean = 0) =>
    (t[name] = {
      dtype: 'F32',
      shape,
      data: normal(
        shape.reduce((a, b) => a * b, 1),
        std,
        mean,
      ),
    });
  const H = c.hiddenSize;
  const Q = c.numHeads * c.headDim;
  const KV = c.numKvHeads * c.headDim;
  const normMean = d.norm === 'rmsOffset' ? 0 : 1;
  put('model.embed_tokens.weight', [c.vocabSize, H], 0.5);
  for (let i = 0; i < c.numLayers; i++) {
    const p = `model.layers.${i}.`;
    for (const n of layerNormWeights(d.layers[i], c)) put(`${p}${n.weight}.weight`, [n.size], 0.1, normMean);
    for (const [m, out, inp] of [
      ['self_attn.q_proj', Q, H],
      ['self_attn.k_proj', KV, H],
      ['self_attn.v_proj', KV, H],
      ['self_attn.o_proj', H, Q],
      ['mlp.gate_proj', c.intermediateSize, H],
      ['mlp.up_proj', c.intermediateSize, H],
      ['mlp.down_proj', H, c.intermediateSize],
    ] as const) {
      put(`${p}${m}.weight`, [out, inp], 1 / Math.sqrt(inp));
      if (
        (m.startsWith('self_attn.') && m !== 'self_attn.o_proj' && c.qkvBias) ||
        (m === 'self_attn.o_proj' && c.oBias)
      )
        put(`${p}${m}.bias`, [out], 0.1);
    }
  }
  put('model.norm.weight', [H], 0.1, normMean);
  if (!c.tieWordEmbeddings) put('lm_head.weight', [c.vocabSize, H], 1 / Math.sqrt(H));
  return writeSafetensors(t);
}

let hub: HubServer;
beforeAll(async () => {
  const dirs: Record<string, string> = {};
  Object.entries(REPOS).forEach(([id, config], k) => {
    const dir = mkdtempSync(join(tmpdir(), 'family-tiny-'));
    writeQwen2Fixture(dir); // tokenizer.json, tokenizer_config.json, generation_config.json
    writeFileSync(join(dir, 'config.json'), JSON.stringify(config, null, 2));
    writeFileSync(join(dir, 'model.safetensors'), weightsOf(config, 100 + k));
    dirs[id] = dir;
  });
  hub = await serveHubRepos(dirs);
});
afterAll(() => hub?.close());

describe.each(Object.keys(REPOS))('%s by hub id', (ID) => {
  const cases: [string, Record<string, unknown>][] = [
    [
      'redteam',
      {
        defender: ID,
        defenderWeights: 'int8',
        prompts: 2,
        groupSize: 2,
        maxNewTokens: 4,
        promptPool: 8,
        samples: 1,
      },
    ],
    [
      'attacker-sft',
      { attacker: ID, attackerWeights: 'int4-g32', dataSize: 16, batchSize: 2, sampleGoals: 2, sampleMaxTokens: 4 },
    ],
  ];
  it.each(cases)(
    '%s runs two steps, every metric a number, the learn step finite',
    async (recipe, config) => {
      const { run } = await createRun(nodeRecipeEnv({ hubEndpoint: hub.endpoint }), recipe, config, 1);
      try {
        const reps = [await run.step(), await run.step()];
        expect(reps.map((r) => r.step)).toEqual([0, 1]);
        for (const r of reps)
          for (const [k, v] of Object.entries(r.metrics)) expect(Number.isNaN(v), `${recipe} ${k}`).toBe(false);
        // the learn step ran on the family's block: its loss or gradient norm is a finite number
        const learn = Object.keys(reps[1].metrics).filter((k) => k.startsWith('loss/') || k === 'grad/norm');
        expect(learn.length, 'a learn-step metric is reported').toBeGreaterThan(0);
        for (const k of learn) expect(Number.isFinite(reps[1].metrics[k]), k).toBe(true);
      } finally {
        run.dispose();
      }
    },
    120_000,
  );
});
