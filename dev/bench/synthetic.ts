// Random-weight models with the shapes of real ones, for benchmarks: the same tensors, names and
// dtypes a hub checkpoint has, built in memory and loaded through the ordinary loader.
import { parseModelConfig } from '../../src/contract/modelConfig';
import { describeModel, layerNormWeights } from '../../src/contract/blockDescription';
import { HF_NAMES } from '../../src/model/llama';
import { loadModel } from '../../src/model/load';
import { mapSource } from '../../src/model/sources';
import { writeSafetensors, type TensorToWrite } from '../../src/model/safetensors';
import type { LlamaModel, LoadOptions } from '../../src/model/llama';
import { mulberry32 } from '../../src/model/random';

/** config.json of HuggingFaceTB/SmolLM2-135M-Instruct (shapes only matter here). */
export const SMOLLM2_135M_CONFIG = {
  architectures: ['LlamaForCausalLM'],
  model_type: 'llama',
  hidden_size: 576,
  intermediate_size: 1536,
  num_hidden_layers: 30,
  num_attention_heads: 9,
  num_key_value_heads: 3,
  head_dim: 64,
  vocab_size: 49152,
  rms_norm_eps: 1e-5,
  rope_theta: 100000,
  max_position_embeddings: 8192,
  tie_word_embeddings: true,
  hidden_act: 'silu',
  bos_token_id: 1,
  eos_token_id: 2,
};

/** A safetensors file of BF16 N(0, std^2)-ish weights (uniform with that std) for a config. */
export function syntheticWeights(configJson: Record<string, unknown>, seed = 1, std = 0.02): Uint8Array {
  const cfg = parseModelConfig(configJson, 'synthetic config.json');
  const rand = mulberry32(seed);
  const half = std * Math.sqrt(3);
  const tensors = new Map<string, TensorToWrite>();
  const add = (name: string, shape: number[], fill?: number) => {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = fill ?? (rand() * 2 - 1) * half;
    tensors.set(name, { dtype: 'BF16', shape, data });
  };
  const H = cfg.hiddenSize;
  const q = cfg.numHeads * cfg.headDim;
  const kv = cfg.numKvHeads * cfg.headDim;
  // Every norm the family's block names (Qwen3 / Gemma 3 q/k norms, Gemma's four a layer), at the
  // identity: a weight of 1, or 0 under Gemma's (1 + w) rule.
  const d = describeModel(cfg);
  const unit = d.norm === 'rmsOffset' ? 0 : 1;
  add(HF_NAMES.embed, [cfg.vocabSize, H]);
  for (let i = 0; i < cfg.numLayers; i++) {
    const n = HF_NAMES.layer(i);
    for (const w of layerNormWeights(d.layers[i], cfg)) add(`model.layers.${i}.${w.weight}.weight`, [w.size], unit);
    const out: Record<'q' | 'k' | 'v' | 'o' | 'gate' | 'up' | 'down', [number, number]> = {
      q: [q, H],
      k: [kv, H],
      v: [kv, H],
      o: [H, q],
      gate: [cfg.intermediateSize, H],
      up: [cfg.intermediateSize, H],
      down: [H, cfg.intermediateSize],
    };
    for (const [proj, shape] of Object.entries(out) as [keyof typeof out, [number, number]][]) {
      add(`${n[proj]}.weight`, shape);
      if (cfg.qkvBias && (proj === 'q' || proj === 'k' || proj === 'v')) add(`${n[proj]}.bias`, [shape[0]], 0);
      if (cfg.oBias && proj === 'o') add(`${n[proj]}.bias`, [shape[0]], 0);
      if (cfg.mlpBias && (proj === 'gate' || proj === 'up' || proj === 'down')) add(`${n[proj]}.bias`, [shape[0]], 0);
    }
  }
  add(HF_NAMES.norm, [H], unit);
  if (!cfg.tieWordEmbeddings) add(HF_NAMES.lmHead, [cfg.vocabSize, H]);
  return writeSafetensors(tensors);
}

export async function syntheticModel(
  configJson: Record<string, unknown>,
  seed = 1,
  opts: LoadOptions = {},
): Promise<LlamaModel> {
  const weights = syntheticWeights(configJson, seed);
  return loadModel(
    mapSource({ 'config.json': JSON.stringify(configJson), 'model.safetensors': weights }, { label: 'synthetic' }),
    opts,
  );
}
