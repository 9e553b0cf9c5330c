// The fit check's weight figure (src/ui/controls/modelFit.ts weightBytesOf) and the learn-memory
// planner's model scope (src/contract/learnMemory.ts) for Qwen3 and Gemma 3 in every weight format,
// against the bytes the loader really holds (tfjs's own count across loadModel): q/k norms, four
// norms a layer, head_dim x heads != hidden, biases, tied and untied heads. Here, not beside
// modelFit.ts: the page's folder may not import the model. The fixtures' sizes (24, 48) take no
// int4 group of 32: int4-g32 on family configs of the sizes the released checkpoints share
// (multiples of 32), random weights.
import * as tf from '@tensorflow/tfjs';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { planLearnMemory } from '../../src/contract/learnMemory';
import { parseModelConfig, type ModelConfig } from '../../src/contract/modelConfig';
import type { WeightFormat } from '../../src/contract/weightFormat';
import { mapSource } from '../../src/model/sources';
import { loadModel } from '../../src/model/load';
import { disposeLlama } from '../../src/model/llama';
import { weightQuantizer } from '../../src/model/quant';
import { estimateMemory } from '../../src/ui/controls/modelFit';
import { syntheticWeights } from '../bench/synthetic';

/** Bytes tfjs holds for the model loaded from `files` in `format`. */
async function heldBytes(files: Record<string, string | Uint8Array>, format: WeightFormat): Promise<number> {
  const before = tf.memory().numBytes;
  const m = await loadModel(mapSource(files, { label: 'fit' }), { quantize: weightQuantizer(format, 'fit') });
  const held = tf.memory().numBytes - before;
  disposeLlama(m);
  expect(tf.memory().numBytes).toBe(before);
  return held;
}

function figures(c: ModelConfig, format: WeightFormat) {
  const limits = { maxBufferSize: 2 ** 40, maxStorageBufferBindingSize: 2 ** 40, budgetBytes: 2 ** 40 };
  const plan = planLearnMemory(
    c,
    format,
    { r: 4, targets: ['q', 'v'] },
    { rows: 1, promptLen: 8, responseLen: 4 },
    limits,
  );
  return { fit: estimateMemory(c, { batch: 1, seqLen: 12 }, format).weightBytes, planner: plan.bytesByScope.model };
}

describe.each(['qwen3-bias', 'qwen3-tied', 'gemma3-tied', 'gemma3-untied'])('%s', (name) => {
  const dir = `dev/fixtures/families/${name}`;
  const files = {
    'config.json': readFileSync(`${dir}/config.json`, 'utf8'),
    'model.safetensors': new Uint8Array(readFileSync(`${dir}/model.safetensors`)),
  };
  it.each(['f32', 'f16', 'int8'] as const)(
    '%s: the fit check and the planner count the bytes the loader holds',
    async (format) => {
      const held = await heldBytes(files, format);
      expect(figures(parseModelConfig(files['config.json']), format)).toEqual({ fit: held, planner: held });
    },
  );
});

describe('int4-g32 on Qwen3 and Gemma 3 configs', () => {
  const common = {
    vocab_size: 96,
    hidden_size: 64,
    intermediate_size: 128,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    max_position_embeddings: 128,
  };
  it.each([
    { ...common, architectures: ['Qwen3ForCausalLM'], head_dim: 24, attention_bias: true, tie_word_embeddings: false },
    { ...common, architectures: ['Gemma3ForCausalLM'], head_dim: 8, sliding_window: 4, sliding_window_pattern: 2 },
  ])('$architectures.0: the fit check and the planner count the bytes the loader holds', async (json) => {
    const files = { 'config.json': JSON.stringify(json), 'model.safetensors': syntheticWeights(json, 5) };
    const held = await heldBytes(files, 'int4-g32');
    const c = parseModelConfig(json);
    expect(c.qkNorm).toBe(true);
    expect(figures(c, 'int4-g32')).toEqual({ fit: held, planner: held });
    expect(held).toBeLessThan(figures(c, 'int8').fit); // int4 really packed
  });
});
