import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { strFromU8, strToU8, unzipSync, zipSync } from 'fflate';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseModelConfig } from '../contract/modelConfig';
import { disposeLlama, loadLlama } from '../model/llama';
import { attachLora, loadPeftTensors, peftTensorName, peftTensors } from '../model/lora';
import { parseSafetensors, writeSafetensors, type TensorToWrite } from '../model/safetensors';
import {
  adapterTensorSource,
  exportMergedSafetensors,
  exportPeftZip,
  fromPeftTensors,
  hfWeightName,
  importPeftZip,
  importPeftZipAsync,
  PeftError,
  parsePeftKey,
  peftKey,
  toLoraConfig,
  validateAdapter,
  type BaseDims,
  type PlainLoraAdapter,
} from './peft';
import { zip64Claiming } from '../../dev/test/testZips';

// Toy 2-layer base: q out = heads x head_dim = 6 (not hidden 8) and kv out = 3, so a swapped
// dimension anywhere shows up as a wrong shape.
const DIMS: BaseDims = { hiddenSize: 8, intermediateSize: 12, numHeads: 2, numKvHeads: 1, headDim: 3, numLayers: 2 };
const BASE = 'HuggingFaceTB/SmolLM2-135M-Instruct';
const R = 2;

// Hand-written [in, out] per projection for DIMS.
const IO = { q: [8, 6], k: [8, 3], v: [8, 3], o: [6, 8], gate: [8, 12], up: [8, 12], down: [12, 8] } as const;
type P = keyof typeof IO;

function toyAdapter(projs: P[] = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], layers = [0, 1]): PlainLoraAdapter {
  const a: PlainLoraAdapter = { r: R, alpha: 16, dropout: 0.05, useRslora: false, layers: new Map() };
  let seed = 1;
  for (const l of layers) {
    const entry: PlainLoraAdapter['layers'] extends Map<number, infer V> ? V : never = {};
    for (const p of projs) {
      const [inn, out] = IO[p];
      const s = seed++;
      entry[p] = {
        A: Float32Array.from({ length: R * inn }, (_, i) => Math.fround(Math.sin(s * 100 + i))),
        B: Float32Array.from({ length: out * R }, (_, i) => Math.fround(Math.cos(s * 100 + i) * 1e-3)),
      };
    }
    a.layers.set(l, entry);
  }
  return a;
}

const zipOf = (files: Record<string, Uint8Array>) => zipSync(files);
const cfgBytes = (c: Record<string, unknown>) => strToU8(JSON.stringify(c));
const errorOf = (fn: () => unknown): Error => {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a throw');
};

/** The zip's config and tensors, edited by `edit`, zipped again. */
function tamper(
  zip: Uint8Array,
  edit: (cfg: Record<string, unknown>, t: Map<string, TensorToWrite>) => void,
): Uint8Array {
  const files = unzipSync(zip);
  const cfg = JSON.parse(strFromU8(files['adapter_config.json'])) as Record<string, unknown>;
  const st = parseSafetensors(files['adapter_model.safetensors']);
  const t = new Map<string, TensorToWrite>(
    st.names().map((n) => [n, { dtype: 'F32', shape: st.info(n).shape, data: st.getFloat32(n) }]),
  );
  edit(cfg, t);
  return zipOf({ 'adapter_config.json': cfgBytes(cfg), 'adapter_model.safetensors': writeSafetensors(t) });
}

describe('PEFT export', () => {
  it('writes adapter_config.json and PEFT-named F32 tensors with [r, in] / [out, r] shapes', () => {
    const a = toyAdapter();
    const files = unzipSync(exportPeftZip(a, { baseModel: BASE, dims: DIMS }));
    expect(Object.keys(files).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    expect(JSON.parse(strFromU8(files['adapter_config.json']))).toEqual({
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      base_model_name_or_path: BASE,
      revision: null,
      r: 2,
      lora_alpha: 16,
      lora_dropout: 0.05,
      target_modules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
      bias: 'none',
      fan_in_fan_out: false,
      use_rslora: false,
      use_dora: false,
      inference_mode: true,
      init_lora_weights: true,
      modules_to_save: null,
      layers_to_transform: null,
      layers_pattern: null,
      rank_pattern: {},
      alpha_pattern: {},
    });
    const st = parseSafetensors(files['adapter_model.safetensors'], 'adapter_model.safetensors');
    expect(st.metadata).toEqual({ format: 'pt' });
    const expected: [string, number[]][] = [];
    for (const l of [0, 1]) {
      const pre = `base_model.model.model.layers.${l}`;
      expected.push(
        [`${pre}.self_attn.q_proj.lora_A.weight`, [2, 8]],
        [`${pre}.self_attn.q_proj.lora_B.weight`, [6, 2]],
        [`${pre}.self_attn.k_proj.lora_A.weight`, [2, 8]],
        [`${pre}.self_attn.k_proj.lora_B.weight`, [3, 2]],
        [`${pre}.self_attn.v_proj.lora_A.weight`, [2, 8]],
        [`${pre}.self_attn.v_proj.lora_B.weight`, [3, 2]],
        [`${pre}.self_attn.o_proj.lora_A.weight`, [2, 6]],
        [`${pre}.self_attn.o_proj.lora_B.weight`, [8, 2]],
        [`${pre}.mlp.gate_proj.lora_A.weight`, [2, 8]],
        [`${pre}.mlp.gate_proj.lora_B.weight`, [12, 2]],
        [`${pre}.mlp.up_proj.lora_A.weight`, [2, 8]],
        [`${pre}.mlp.up_proj.lora_B.weight`, [12, 2]],
        [`${pre}.mlp.down_proj.lora_A.weight`, [2, 12]],
        [`${pre}.mlp.down_proj.lora_B.weight`, [8, 2]],
      );
    }
    expect(st.names().map((n) => [n, st.info(n).shape])).toEqual(expected);
    expect(st.names().every((n) => st.info(n).dtype === 'F32')).toBe(true);
    expect(st.getFloat32('base_model.model.model.layers.1.mlp.down_proj.lora_B.weight')).toEqual(
      a.layers.get(1)!.down!.B,
    );
  });

  it('writes layers_to_transform and a subset of targets, optionally inside a folder', () => {
    const a = toyAdapter(['v', 'q'], [1]);
    const files = unzipSync(exportPeftZip(a, { baseModel: BASE, dims: DIMS, folder: 'my-adapter/' }));
    // fflate adds the folder's own entry, as zip tools do.
    expect(Object.keys(files).sort()).toEqual([
      'my-adapter/',
      'my-adapter/adapter_config.json',
      'my-adapter/adapter_model.safetensors',
    ]);
    const cfg = JSON.parse(strFromU8(files['my-adapter/adapter_config.json']));
    expect(cfg.target_modules).toEqual(['q_proj', 'v_proj']);
    expect(cfg.layers_to_transform).toEqual([1]);
    expect(parseSafetensors(files['my-adapter/adapter_model.safetensors']).names()).toEqual([
      'base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight',
      'base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight',
      'base_model.model.model.layers.1.self_attn.v_proj.lora_A.weight',
      'base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight',
    ]);
  });

  it('refuses an adapter that does not fit the base or has no PEFT form', () => {
    const ragged = toyAdapter(['q', 'v']);
    delete ragged.layers.get(1)!.v;
    expect(() => validateAdapter(ragged, DIMS)).toThrow(
      'layer 1 adapts [q_proj] but other layers adapt [q_proj,v_proj]',
    );
    const wrong = toyAdapter(['k']);
    wrong.layers.get(0)!.k!.B = new Float32Array(6 * R);
    expect(() => exportPeftZip(wrong, { baseModel: BASE, dims: DIMS })).toThrow(
      'model.layers.0.self_attn.k_proj B has 12 values, expected out x r = 3 x 2 = 6',
    );
    expect(() => validateAdapter(toyAdapter(['q'], [2]), DIMS)).toThrow(
      'layer 2 does not exist (the base model has 2 layers)',
    );
  });

  it('parses PEFT keys and rejects near misses', () => {
    expect(parsePeftKey('base_model.model.model.layers.12.mlp.up_proj.lora_B.weight')).toEqual({
      layer: 12,
      proj: 'up',
      which: 'B',
    });
    expect(peftKey(3, 'o', 'A')).toBe('base_model.model.model.layers.3.self_attn.o_proj.lora_A.weight');
    expect(parsePeftKey('base_model.model.model.layers.0.mlp.q_proj.lora_A.weight')).toBeNull(); // q_proj is not in mlp
    expect(parsePeftKey('base_model.model.model.layers.01.self_attn.q_proj.lora_A.weight')).toBeNull();
    expect(parsePeftKey('base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight')).toBeNull();
    expect(parsePeftKey('base_model.model.lm_head.weight')).toBeNull();
  });
});

describe('PEFT import', () => {
  const zip = exportPeftZip(toyAdapter(), { baseModel: BASE, dims: DIMS });

  it('round-trips every value, r, alpha, dropout and rsLoRA', () => {
    const a = { ...toyAdapter(['q', 'k', 'down'], [0]), useRslora: true };
    const back = importPeftZip(exportPeftZip(a, { baseModel: BASE, dims: DIMS, folder: 'x' }), {
      dims: DIMS,
      expectedBase: BASE,
    });
    expect(back.adapter).toEqual(a);
    expect(back.baseModel).toBe(BASE);
    expect(back.baseMismatch).toBe(false);
    expect(importPeftZip(zip, { dims: DIMS }).adapter).toEqual(toyAdapter());
  });

  it('rejects another base unless a mismatch is allowed (case and trailing slash do not count)', () => {
    const e = errorOf(() =>
      importPeftZip(zip, { dims: DIMS, expectedBase: 'Qwen/Qwen2.5-0.5B-Instruct', fileName: 'a.zip' }),
    );
    expect(e.message).toBe(
      `a.zip/adapter_config.json: field "base_model_name_or_path" is "${BASE}"; this adapter was trained on another base than "Qwen/Qwen2.5-0.5B-Instruct" (allow a base mismatch to import it anyway)`,
    );
    expect(
      importPeftZip(zip, { dims: DIMS, expectedBase: 'Qwen/Qwen2.5-0.5B-Instruct', allowBaseMismatch: true })
        .baseMismatch,
    ).toBe(true);
    expect(importPeftZip(zip, { dims: DIMS, expectedBase: 'huggingfacetb/smollm2-135m-instruct/' }).baseMismatch).toBe(
      false,
    );
  });

  it('rejects a tensor whose shape disagrees with the base dims, naming the key', () => {
    // The same adapter against a base with 2 kv heads: k_proj's B must then be [6, 2].
    const e = errorOf(() => importPeftZip(zip, { dims: { ...DIMS, numKvHeads: 2 }, fileName: 'a.zip' }));
    expect(e.message).toContain(
      'a.zip/adapter_model.safetensors: tensor "base_model.model.model.layers.0.self_attn.k_proj.lora_B.weight" has shape [3, 2], expected [6, 2]',
    );
    // r in the config disagrees with the tensors.
    const r4 = tamper(zip, (c) => {
      c.r = 4;
    });
    expect(errorOf(() => importPeftZip(r4, { dims: DIMS })).message).toContain(
      'tensor "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight" has shape [2, 8], expected [4, 8] = [r, in] with r = 4',
    );
    // A transposed A (as a fan_in_fan_out writer would leave it).
    const tr = tamper(zip, (_, t) => {
      const k = 'base_model.model.model.layers.1.mlp.down_proj.lora_A.weight';
      t.set(k, { ...t.get(k)!, shape: [12, 2] });
    });
    expect(errorOf(() => importPeftZip(tr, { dims: DIMS })).message).toContain(
      '"base_model.model.model.layers.1.mlp.down_proj.lora_A.weight" has shape [12, 2], expected [2, 12]',
    );
    expect(errorOf(() => importPeftZip(zip, { dims: { ...DIMS, numLayers: 1 } })).message).toContain(
      'tensor "base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight": layer 1 does not exist (the base model has 1 layers)',
    );
  });

  it.each([
    [
      'peft_type',
      (c: Record<string, unknown>) => {
        c.peft_type = 'IA3';
      },
      'adapter.zip/adapter_config.json: field "peft_type" is "IA3"; only "LORA" adapters can be imported',
    ],
    [
      'task_type',
      (c: Record<string, unknown>) => {
        c.task_type = 'SEQ_CLS';
      },
      'field "task_type" is "SEQ_CLS"; expected "CAUSAL_LM"',
    ],
    [
      'target_modules',
      (c: Record<string, unknown>) => {
        c.target_modules = 'all-linear';
      },
      'field "target_modules" is "all-linear"',
    ],
    [
      'target_modules entry',
      (c: Record<string, unknown>) => {
        c.target_modules = ['q_proj', 'qkv_proj'];
      },
      'field "target_modules" is ["q_proj","qkv_proj"]; "qkv_proj" is not one of',
    ],
    [
      'use_dora',
      (c: Record<string, unknown>) => {
        c.use_dora = true;
      },
      'field "use_dora" is true; DoRA adapters are not supported',
    ],
    [
      'bias',
      (c: Record<string, unknown>) => {
        c.bias = 'all';
      },
      'field "bias" is "all"',
    ],
    [
      'rank_pattern',
      (c: Record<string, unknown>) => {
        c.rank_pattern = { q_proj: 4 };
      },
      'field "rank_pattern" is {"q_proj":4}',
    ],
    [
      'layers_to_transform',
      (c: Record<string, unknown>) => {
        c.layers_to_transform = [0, 7];
      },
      'field "layers_to_transform" is [0,7]',
    ],
    [
      'r',
      (c: Record<string, unknown>) => {
        c.r = 0;
      },
      'field "r" is 0; expected a positive integer',
    ],
  ])('rejects a bad %s field', (_, edit, msg) => {
    expect(errorOf(() => importPeftZip(tamper(zip, edit), { dims: DIMS })).message).toContain(msg);
  });

  it('rejects unknown, stray and missing tensors by name', () => {
    const extra = tamper(zip, (_, t) =>
      t.set('base_model.model.lm_head.weight', { dtype: 'F32', shape: [1], data: [0] }),
    );
    expect(errorOf(() => importPeftZip(extra, { dims: DIMS })).message).toContain(
      'tensor "base_model.model.lm_head.weight" is not a LoRA weight',
    );
    const notTargeted = tamper(zip, (c) => {
      c.target_modules = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj'];
    });
    expect(errorOf(() => importPeftZip(notTargeted, { dims: DIMS })).message).toContain(
      'tensor "base_model.model.model.layers.0.mlp.down_proj.lora_A.weight": down_proj is not in target_modules',
    );
    const missing = tamper(zip, (_, t) => t.delete('base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight'));
    expect(errorOf(() => importPeftZip(missing, { dims: DIMS })).message).toBe(
      'adapter.zip/adapter_model.safetensors: missing tensor "base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight" (adapter.zip/adapter_config.json targets v_proj on layer 1)',
    );
  });

  it('names a missing file, a .bin adapter, and a file that is not a zip', () => {
    const st = unzipSync(zip)['adapter_model.safetensors'];
    expect(errorOf(() => importPeftZip(zipOf({ 'adapter_model.safetensors': st }), { dims: DIMS })).message).toContain(
      'adapter.zip: no adapter_config.json',
    );
    const bin = zipOf({
      'a/adapter_config.json': unzipSync(zip)['adapter_config.json'],
      'a/adapter_model.bin': new Uint8Array(4),
    });
    expect(errorOf(() => importPeftZip(bin, { dims: DIMS })).message).toContain(
      'adapter.zip: no a/adapter_model.safetensors (adapter_model.bin is a PyTorch pickle',
    );
    expect(errorOf(() => importPeftZip(strToU8('hello'), { dims: DIMS, fileName: 'x.zip' })).message).toMatch(
      /^x\.zip: not a readable zip archive/,
    );
    const badJson = zipOf({ 'adapter_config.json': strToU8('{"r": '), 'adapter_model.safetensors': st });
    expect(errorOf(() => importPeftZip(badJson, { dims: DIMS })).message).toMatch(
      /^adapter\.zip\/adapter_config\.json: not valid JSON/,
    );
  });
});

describe('PEFT import of hostile zips (issue 24)', () => {
  const zip = exportPeftZip(toyAdapter(), { baseModel: BASE, dims: DIMS });

  it('a 56 KB zip whose end record claims 4 billion entries is refused at once (it froze unzipSync)', () => {
    const t0 = performance.now();
    const e = errorOf(() => importPeftZip(zip64Claiming(0xffffffffn), { dims: DIMS, fileName: 'bomb.zip' }));
    expect(performance.now() - t0).toBeLessThan(200);
    expect(e).toBeInstanceOf(PeftError);
    expect(e.message).toBe(
      "bomb.zip: the zip's end record claims 4294967295 entries; at most 1000 are read (corrupt, or not an adapter folder)",
    );
  });

  it('an end record claiming 65,535 entries is refused before anything is read', () => {
    // A 56 KB zip: the adapter after 56 KB of junk, its end record claiming 0xFFFF entries.
    const z = new Uint8Array(56 * 1024 + zip.length);
    z.set(zip, 56 * 1024);
    new DataView(z.buffer).setUint16(z.length - 22 + 10, 0xffff, true);
    new DataView(z.buffer).setUint16(z.length - 22 + 8, 0xffff, true);
    const t0 = performance.now();
    const e = errorOf(() => importPeftZip(z, { dims: DIMS, fileName: 'bomb.zip' }));
    expect(performance.now() - t0).toBeLessThan(200);
    expect(e).toBeInstanceOf(PeftError);
    expect(e.message).toMatch(/^bomb\.zip: the zip's end record claims 65535 entries; at most 1000 are read/);
  });

  it('an adapter_model.safetensors larger than any adapter of its rank can be is refused before it is inflated', () => {
    const cfg = strFromU8(unzipSync(zip)['adapter_config.json']);
    // 8 MiB of zeros deflate to a few KB; an adapter of rank 2 for DIMS holds at most ~1 MiB.
    const big = zipSync({
      'adapter_config.json': strToU8(cfg),
      'adapter_model.safetensors': new Uint8Array(8 * 2 ** 20),
    });
    const e = errorOf(() => importPeftZip(big, { dims: DIMS, fileName: 'big.zip' }));
    expect(e).toBeInstanceOf(PeftError);
    expect(e.message).toBe(
      `big.zip/adapter_model.safetensors: declares ${8 * 2 ** 20} bytes, more than an adapter of this rank can hold for this base model (at most ${2 * 2 * (14 + 11 + 11 + 14 + 20 + 20 + 20) * 8 + 2 ** 20}); not inflated`,
    );
  });

  it('a corrupted stored byte in the weights fails the CRC instead of importing changed weights', () => {
    const files = unzipSync(zip);
    const st = files['adapter_model.safetensors'];
    const at = zip.length - 22 - 2 * 46 - 'adapter_config.json'.length - 'adapter_model.safetensors'.length; // after the stored data
    // Find the stored safetensors bytes in the zip and flip one bit of the last weight.
    const start = indexOf(zip, st.subarray(0, 64));
    expect(start).toBeGreaterThan(0);
    expect(start + st.length).toBeLessThanOrEqual(at);
    const bad = zip.slice();
    bad[start + st.length - 2] ^= 0x01;
    const e = errorOf(() => importPeftZip(bad, { dims: DIMS, fileName: 'flip.zip' }));
    expect(e).toBeInstanceOf(PeftError);
    expect(e.message).toMatch(
      /^flip\.zip\/adapter_model\.safetensors: CRC-32 is 0x[0-9a-f]+ but the zip records 0x[0-9a-f]+; the archive is corrupt$/,
    );
  });

  it('only the two adapter files are inflated: a broken unrelated entry does not matter', () => {
    const files = unzipSync(zip);
    const z = zipSync({
      'adapter_config.json': files['adapter_config.json'],
      'adapter_model.safetensors': [files['adapter_model.safetensors'], { level: 0 }],
      'README.md': strToU8('x'.repeat(5000)),
    });
    const readme = indexOf(z, strToU8('README.md')) + 'README.md'.length;
    const broken = z.slice();
    broken.fill(0xff, readme, readme + 20); // the deflate stream of README.md is now garbage
    expect(() => unzipSync(broken)).toThrow();
    expect(importPeftZip(broken, { dims: DIMS }).adapter).toEqual(toyAdapter());
  });

  it('NaN or Infinity in an adapter tensor is refused naming the tensor and index', () => {
    const key = 'base_model.model.model.layers.1.mlp.up_proj.lora_B.weight';
    for (const [v, shown] of [
      [NaN, 'NaN'],
      [-Infinity, '-Infinity'],
    ] as const) {
      const bad = tamper(zip, (_, t) => {
        const d = Float32Array.from(t.get(key)!.data);
        d[5] = v; // [out 12, r 2]: index 5 = [2, 1]
        t.set(key, { ...t.get(key)!, data: d });
      });
      const e = errorOf(() => importPeftZip(bad, { dims: DIMS }));
      expect(e).toBeInstanceOf(PeftError);
      expect(e.message).toBe(
        `adapter.zip/adapter_model.safetensors: tensor "${key}" holds ${shown} at index 5 = [2, 1]; weights must be finite numbers`,
      );
    }
  });

  it('an adapter_config.json over 1 MiB is refused before it is inflated', () => {
    const files = unzipSync(zip);
    const big = zipOf({
      'adapter_config.json': strToU8(' '.repeat(2 << 20)),
      'adapter_model.safetensors': files['adapter_model.safetensors'],
    });
    expect(errorOf(() => importPeftZip(big, { dims: DIMS })).message).toBe(
      'adapter.zip/adapter_config.json: 2097152 bytes, over the 1048576-byte limit for an adapter config',
    );
  });

  it('the yielding import gives the same adapter', async () => {
    expect((await importPeftZipAsync(zip, { dims: DIMS })).adapter).toEqual(toyAdapter());
    await expect(importPeftZipAsync(strToU8('hello'), { dims: DIMS, fileName: 'x.zip' })).rejects.toThrow(
      /^x\.zip: not a readable zip archive/,
    );
  });
});

function indexOf(hay: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

describe('merged weights', () => {
  it('writes HF names with format pt, checks names and projection shapes', () => {
    const q = hfWeightName(1, 'q');
    expect(q).toBe('model.layers.1.self_attn.q_proj.weight');
    expect(hfWeightName(0, 'down')).toBe('model.layers.0.mlp.down_proj.weight');
    const w = Float32Array.from({ length: 48 }, (_, i) => i / 7);
    const bytes = exportMergedSafetensors(
      {
        [q]: { shape: [6, 8], data: w },
        'model.norm.weight': { shape: [8], data: new Float32Array(8).fill(1), dtype: 'BF16' },
      },
      { dims: DIMS },
    );
    const st = parseSafetensors(bytes);
    expect(st.metadata).toEqual({ format: 'pt' });
    expect(st.info(q)).toMatchObject({ dtype: 'F32', shape: [6, 8] });
    expect(st.getFloat32(q)).toEqual(w);
    expect(st.info('model.norm.weight').dtype).toBe('BF16');
    expect(() =>
      exportMergedSafetensors({
        'base_model.model.model.layers.0.self_attn.q_proj.weight': { shape: [6, 8], data: w },
      }),
    ).toThrow(
      'tensor "base_model.model.model.layers.0.self_attn.q_proj.weight" is not a Hugging Face Llama/Qwen2 parameter name, e.g. model.layers.0.self_attn.q_proj.weight (strip the PEFT prefix "base_model.model.")',
    );
    expect(() => exportMergedSafetensors({ 'model.layers.0.self_attn.q_proj': { shape: [6, 8], data: w } })).toThrow(
      'is not a Hugging Face',
    );
    expect(() => exportMergedSafetensors({ [q]: { shape: [8, 6], data: w } }, { dims: DIMS })).toThrow(
      `tensor "${q}" has shape [8, 6], expected [6, 8]`,
    );
    expect(() => exportMergedSafetensors({ [q]: { shape: [6, 8], data: new Uint16Array(48) } })).toThrow(
      'needs dtype F16 or BF16',
    );
  });
});

describe('converters to src/model/lora.ts', () => {
  it('a trained LoraSet goes out as a PEFT zip and back into a fresh set unchanged', async () => {
    const dir = pathToFileURL(resolve('dev/fixtures/tiny-llama-f32') + '/');
    const config = parseModelConfig(readFileSync(new URL('config.json', dir), 'utf8'));
    const weights = parseSafetensors(new Uint8Array(readFileSync(new URL('model.safetensors', dir))));
    // Two copies: a projection carries one adapter, and the fresh set needs its own.
    const model = loadLlama(config, weights);
    const model2 = loadLlama(config, weights);
    try {
      const set = attachLora(model, { r: 2, alpha: 4, targets: ['q', 'v', 'down'], layers: [1], dropout: 0.1 });
      // Stand-in for training: B is zero at init, so give every B values a bug would disturb.
      set.adapters.forEach((a, i) => a.B.assign(tf.randomUniform(a.B.shape, -1, 1, 'float32', 7 + i)));
      const plain = fromPeftTensors(await peftTensors(set), set.config);
      const zip = exportPeftZip(plain, { baseModel: 'fixtures/tiny-llama-f32', dims: config });
      const back = importPeftZip(zip, { dims: config, expectedBase: 'fixtures/tiny-llama-f32' });
      expect(toLoraConfig(back.adapter, 3)).toEqual({
        r: 2,
        alpha: 4,
        targets: ['q', 'v', 'down'],
        dropout: 0.1,
        useRslora: false,
        seed: 3,
        layers: [1],
      });
      const fresh = attachLora(model2, toLoraConfig(back.adapter));
      loadPeftTensors(fresh, adapterTensorSource(back.adapter, config));
      expect(fresh.adapters.map((a) => a.module)).toEqual(set.adapters.map((a) => a.module));
      for (let i = 0; i < set.adapters.length; i++) {
        expect(peftTensorName(set.adapters[i].module, 'A')).toBe(peftKey(1, (['q', 'v', 'down'] as const)[i], 'A'));
        expect(await fresh.adapters[i].A.data()).toEqual(await set.adapters[i].A.data());
        expect(await fresh.adapters[i].B.data()).toEqual(await set.adapters[i].B.data());
      }
      fresh.dispose();
      set.dispose();
    } finally {
      disposeLlama(model);
      disposeLlama(model2);
    }
  });
});
