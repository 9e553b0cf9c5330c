// LoRA targets of Qwen3 and Gemma 3 against their own checkpoints: the module names the adapters
// carry (PEFT keys, adapter_config.json target_modules, veRL's target_modules) are modules the
// checkpoint has, of the shapes the adapters assume; and a merged export keeps every tensor.
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { parseModelConfig } from '../../contract/modelConfig';
import { hfTargetModules, LORA_TARGET_SETS, loraTargets } from '../../contract/loraTargets';
import { disposeLlama, loadLlama } from '../../model/llama';
import { attachLora, peftTensors } from '../../model/lora';
import { parseSafetensors } from '../../model/safetensors';
import { fromPeftTensors, hfModule, peftKey, projDims, PROJS } from '../../storage/peft';
import { exportMergedModel } from '../../storage/merge';
import { verlTargetModules } from './verlConfig';

const CASES = ['qwen3-bias', 'qwen3-tied', 'gemma3-tied', 'gemma3-untied'];

/**
 * Where transformers names each module PEFT targets, read in huggingface/transformers through the
 * search tool's code index (lines counted in the stored text). A module's path is the chain of
 * attributes from the CausalLM: `model` (the decoder), `layers` (ModuleList index), the decoder
 * layer's `self_attn` / `mlp`, the projection.
 */
const HF_SOURCE = {
  qwen3: {
    file: 'src/transformers/models/qwen3/modeling_qwen3.py@000c33fdfde12e1ffafbfcdb3c926df5727a00b6',
    lines: {
      'Qwen3ForCausalLM.model': 464,
      'Qwen3Model.layers': 373,
      'Qwen3DecoderLayer.self_attn': 305,
      'Qwen3DecoderLayer.mlp': 307,
      'Qwen3Attention.q_proj': 239,
      'Qwen3Attention.k_proj': 242,
      'Qwen3Attention.v_proj': 245,
      'Qwen3Attention.o_proj': 248,
      'Qwen3MLP.gate_proj': 76,
      'Qwen3MLP.up_proj': 77,
      'Qwen3MLP.down_proj': 78,
    },
  },
  gemma3: {
    file: 'src/transformers/models/gemma3/modeling_gemma3.py@f14d0cbc824e447ef294d8cdc0f8ad4222f3dfee',
    lines: {
      'Gemma3ForCausalLM.model': 611,
      'Gemma3TextModel.layers': 468,
      'Gemma3DecoderLayer.self_attn': 351,
      'Gemma3DecoderLayer.mlp': 352,
      'Gemma3Attention.q_proj': 277,
      'Gemma3Attention.k_proj': 280,
      'Gemma3Attention.v_proj': 283,
      'Gemma3Attention.o_proj': 286,
      'Gemma3MLP.gate_proj': 116,
      'Gemma3MLP.up_proj': 117,
      'Gemma3MLP.down_proj': 118,
    },
  },
} as const;

describe.each(Object.values(HF_SOURCE))('transformers $file', (src) => {
  it("the PEFT modules are transformers' attribute paths: model.layers.{i}.self_attn.{q,k,v,o}_proj, .mlp.{gate,up,down}_proj", () => {
    const keys = Object.keys(src.lines);
    /** The attributes the classes ending in `suffix` declare. */
    const at = (suffix: string) => keys.filter((k) => k.split('.')[0].endsWith(suffix)).map((k) => k.split('.')[1]);
    const [model] = at('ForCausalLM');
    const [layers] = at('Model');
    const [attn, mlp] = at('DecoderLayer');
    const paths = [
      ...at('Attention').map((p) => `${model}.${layers}.1.${attn}.${p}`),
      ...at('MLP').map((p) => `${model}.${layers}.1.${mlp}.${p}`),
    ];
    expect(paths.length).toBe(PROJS.length);
    expect(PROJS.map((p) => hfModule(1, p)).sort()).toEqual(paths.sort());
  });
});

const dirOf = (c: string) => pathToFileURL(resolve(`dev/fixtures/families/${c}`) + '/');

describe.each(CASES)('%s', (name) => {
  const dir = dirOf(name);
  const config = parseModelConfig(readFileSync(new URL('config.json', dir), 'utf8'));
  const st = parseSafetensors(new Uint8Array(readFileSync(new URL('model.safetensors', dir))), name);
  // PEFT's all-linear: every nn.Linear but the output layer; in the checkpoint, the 2-D weights
  // under model.layers (norms are 1-D, the embedding is not a Linear, lm_head is the output).
  const linears = st
    .names()
    .filter((n) => n.startsWith('model.layers.') && st.info(n).shape.length === 2)
    .map((n) => n.replace(/\.weight$/, ''));

  it("every projection's PEFT module is a Linear of the checkpoint, of the shape the adapter assumes", () => {
    const ours = [];
    for (let l = 0; l < config.numLayers; l++)
      for (const p of PROJS) {
        const m = hfModule(l, p);
        ours.push(m);
        const d = projDims(config, p);
        expect(st.info(`${m}.weight`).shape).toEqual([d.out, d.in]);
        expect(peftKey(l, p, 'A')).toBe(`base_model.model.${m}.lora_A.weight`);
      }
    expect(ours.sort()).toEqual([...linears].sort());
  });

  it("veRL's target_modules select exactly the set's modules (all-linear = every Linear; regexes full-matched as PEFT does)", () => {
    expect(verlTargetModules('all')).toBe('all-linear');
    const suffixes = [...new Set(linears.map((m) => m.split('.').pop()))].sort();
    expect(hfTargetModules('all').sort()).toEqual(suffixes);
    for (const set of LORA_TARGET_SETS.filter((s) => s !== 'all')) {
      const re = new RegExp(`^(?:${verlTargetModules(set)})$`);
      const want = linears.filter((m) => hfTargetModules(set).includes(m.split('.').pop()!));
      expect(linears.filter((m) => re.test(m))).toEqual(want);
      expect(want.length).toBe(config.numLayers * loraTargets(set).length);
    }
  });

  it('a trained adapter merges into the checkpoint: every tensor kept (q/k norms, four norms), adapted ones changed', async () => {
    const model = loadLlama(config, st);
    try {
      const set = attachLora(model, { r: 2, alpha: 4, targets: ['q', 'down'], dropout: 0 });
      set.adapters.forEach((a, i) => a.B.assign(tf.randomUniform(a.B.shape, -1, 1, 'float32', 3 + i)));
      const plain = fromPeftTensors(await peftTensors(set), set.config);
      const merged = parseSafetensors(exportMergedModel(st, plain, config, `fixtures/${name}`), 'merged');
      expect(merged.names().sort()).toEqual(st.names().sort());
      const q0 = 'model.layers.0.self_attn.q_proj.weight';
      const qn = 'model.layers.0.self_attn.q_norm.weight';
      expect(merged.getFloat32(qn)).toEqual(st.getFloat32(qn)); // the checkpoint's w, not the folded 1 + w
      expect(merged.getFloat32(q0)).not.toEqual(st.getFloat32(q0));
      set.dispose();
    } finally {
      disposeLlama(model);
    }
  });
});
