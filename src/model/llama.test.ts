import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { parseModelConfig } from '../contract/modelConfig';
import { entropyFromLogits } from './generate';
import { createKVCache, disposeKVCache, disposeLlama, forward, loadLlama, type LlamaModel } from './llama';
import { parseSafetensors, writeSafetensors } from './safetensors';
import { BlockedDenseWeight } from './linear';
import { setEngineOptions } from '../engine/index';

const FIXTURES = pathToFileURL(resolve('dev/fixtures') + '/');

interface Golden {
  input_ids: number[];
  logits: number[][];
  log_softmax_entropy: number[];
  greedy_continuation: number[];
}

function loadFixture(dir: string): { model: LlamaModel; golden: Golden } {
  const config = parseModelConfig(readFileSync(new URL(`${dir}/config.json`, FIXTURES), 'utf8'), `${dir}/config.json`);
  const st = parseSafetensors(
    new Uint8Array(readFileSync(new URL(`${dir}/model.safetensors`, FIXTURES))),
    `${dir}/model.safetensors`,
  );
  const golden = JSON.parse(readFileSync(new URL(`${dir}/golden.json`, FIXTURES), 'utf8')) as Golden;
  return { model: loadLlama(config, st), golden };
}

const maxAbsDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};

const fixtures = ['tiny-llama', 'tiny-llama-f32'].map((dir) => ({ dir, ...loadFixture(dir) }));
afterAll(() => fixtures.forEach((f) => disposeLlama(f.model)));

describe.each(fixtures)('Llama forward on $dir', ({ dir, model, golden }) => {
  it('matches the float64 golden logits (1e-3) and entropies (1e-3) at every position', () => {
    const logits = forward(model, [golden.input_ids]);
    expect(logits.shape).toEqual([1, golden.input_ids.length, 64]);
    const err = maxAbsDiff(logits.dataSync(), golden.logits.flat());
    const ent = entropyFromLogits(logits);
    const entErr = maxAbsDiff(ent.dataSync(), golden.log_softmax_entropy);
    console.log(
      `${dir}: max |logit - golden| = ${err.toExponential(3)}, max |entropy - golden| = ${entErr.toExponential(3)}`,
    );
    expect(err).toBeLessThan(1e-3);
    expect(entErr).toBeLessThan(1e-3);
    tf.dispose([logits, ent]);
  });

  it('greedy continuation with full re-forward equals the golden one', () => {
    const ids = [...golden.input_ids];
    for (let t = 0; t < golden.greedy_continuation.length; t++) {
      const next = tf.tidy(() => forward(model, [ids], { lastOnly: true }).argMax(-1).dataSync()[0]);
      ids.push(next);
    }
    expect(ids.slice(golden.input_ids.length)).toEqual(golden.greedy_continuation);
  });

  it('left padding with an attention mask leaves the logits of real tokens unchanged', () => {
    const n = golden.input_ids.length;
    const pad = 3;
    const padded = [...Array(pad).fill(0), ...golden.input_ids];
    const shorter = golden.input_ids.slice(0, 7);
    const batch = [padded, [...Array(pad + n - 7).fill(5), ...shorter]];
    const mask = [
      [...Array(pad).fill(0), ...Array(n).fill(1)],
      [...Array(pad + n - 7).fill(0), ...Array(7).fill(1)],
    ];
    const logits = forward(model, batch, { attentionMask: mask });
    const row0 = logits.slice([0, pad, 0], [1, n, 64]).dataSync();
    expect(maxAbsDiff(row0, golden.logits.flat())).toBeLessThan(1e-3);
    const row1 = logits.slice([1, pad + n - 7, 0], [1, 7, 64]).dataSync();
    expect(maxAbsDiff(row1, golden.logits.slice(0, 7).flat())).toBeLessThan(1e-3);
    logits.dispose();
  });

  it('KV-cache prefill + one-token steps reproduce the full-forward logits', () => {
    const full = forward(model, [golden.input_ids]);
    const cache = createKVCache(model, 1, 16);
    const pre = forward(model, [golden.input_ids.slice(0, 5)], { cache });
    const parts = [pre];
    for (let i = 5; i < golden.input_ids.length; i++) parts.push(forward(model, [[golden.input_ids[i]]], { cache }));
    const stitched = tf.concat(parts, 1);
    expect(maxAbsDiff(stitched.dataSync(), full.dataSync())).toBeLessThan(1e-5);
    expect(cache.length).toBe(golden.input_ids.length);
    tf.dispose([full, stitched, ...parts]);
    disposeKVCache(cache);
  });

  it("output 'hidden' returns the normed hidden state the LM head reads (full and lastOnly)", () => {
    const ids = [golden.input_ids];
    const n = golden.input_ids.length;
    const logits = forward(model, ids);
    const hidden = forward(model, ids, { output: 'hidden' });
    expect(hidden.shape).toEqual([1, n, model.config.hiddenSize]);
    const head = model.lmHead.forward(hidden);
    expect(maxAbsDiff(head.dataSync(), logits.dataSync())).toBe(0);
    const last = forward(model, ids, { output: 'hidden', lastOnly: true });
    expect(last.shape).toEqual([1, 1, model.config.hiddenSize]);
    const lastRow = hidden.slice([0, n - 1, 0], [1, 1, model.config.hiddenSize]);
    expect(maxAbsDiff(last.dataSync(), lastRow.dataSync())).toBeLessThan(1e-6);
    tf.dispose([logits, hidden, head, last, lastRow]);
  });
});

describe('loadLlama errors', () => {
  const dir = 'tiny-llama';
  const config = parseModelConfig(readFileSync(new URL(`${dir}/config.json`, FIXTURES), 'utf8'));
  const st = parseSafetensors(
    new Uint8Array(readFileSync(new URL(`${dir}/model.safetensors`, FIXTURES))),
    'tiny.safetensors',
  );

  it('names a missing tensor', () => {
    const tensors: Record<string, { dtype: 'F32'; shape: number[]; data: Float32Array }> = {};
    for (const n of st.names())
      if (n !== 'model.layers.1.mlp.up_proj.weight')
        tensors[n] = { dtype: 'F32', shape: st.info(n).shape, data: st.getFloat32(n) };
    const broken = parseSafetensors(writeSafetensors(tensors), 'broken.safetensors');
    const before = tf.memory().numTensors;
    expect(() => loadLlama(config, broken)).toThrow(
      /broken\.safetensors: missing tensor "model\.layers\.1\.mlp\.up_proj\.weight"/,
    );
    expect(tf.memory().numTensors).toBe(before); // nothing leaked
  });

  it('names a tensor whose shape disagrees with config.json', () => {
    expect(() => loadLlama({ ...config, intermediateSize: 48 }, st)).toThrow(
      /tiny\.safetensors: tensor "model\.layers\.0\.mlp\.gate_proj\.weight" has shape \[64, 32\], config\.json implies \[48, 32\]/,
    );
  });

  it('asks for lm_head.weight when embeddings are not tied', () => {
    expect(() => loadLlama({ ...config, tieWordEmbeddings: false }, st)).toThrow(/missing tensor "lm_head\.weight"/);
  });

  it('rejects token ids outside the vocabulary', () => {
    const model = loadLlama(config, st);
    expect(() => forward(model, [[1, 64]])).toThrow(/token id 64 .* outside the vocabulary/);
    disposeLlama(model);
  });
});

describe('biases (Qwen2 layout) and the Linear module', () => {
  const dir = 'tiny-llama-f32';
  const llamaCfg = parseModelConfig(readFileSync(new URL(`${dir}/config.json`, FIXTURES), 'utf8'));
  const st = parseSafetensors(new Uint8Array(readFileSync(new URL(`${dir}/model.safetensors`, FIXTURES))));
  const golden = JSON.parse(readFileSync(new URL(`${dir}/golden.json`, FIXTURES), 'utf8')) as Golden;
  const qwenCfg = parseModelConfig({
    ...JSON.parse(readFileSync(new URL(`${dir}/config.json`, FIXTURES), 'utf8')),
    architectures: ['Qwen2ForCausalLM'],
    model_type: 'qwen2',
  });

  /** The fixture's weights plus q/k/v biases (zeros, or `vBias` on v_proj of layer 0). */
  function withBiases(vBias?: number[]) {
    const tensors: Record<string, { dtype: 'F32'; shape: number[]; data: ArrayLike<number> }> = {};
    for (const n of st.names()) tensors[n] = { dtype: 'F32', shape: st.info(n).shape, data: st.getFloat32(n) };
    for (let i = 0; i < 2; i++) {
      tensors[`model.layers.${i}.self_attn.q_proj.bias`] = { dtype: 'F32', shape: [32], data: new Float32Array(32) };
      tensors[`model.layers.${i}.self_attn.k_proj.bias`] = { dtype: 'F32', shape: [16], data: new Float32Array(16) };
      tensors[`model.layers.${i}.self_attn.v_proj.bias`] = {
        dtype: 'F32',
        shape: [16],
        data: i === 0 && vBias ? vBias : new Float32Array(16),
      };
    }
    return parseSafetensors(writeSafetensors(tensors), 'qwen.safetensors');
  }

  it('Qwen2 loads q/k/v biases by their HF names; zero biases reproduce the golden logits', () => {
    expect(() => loadLlama(qwenCfg, st)).toThrow(/missing tensor "model\.layers\.0\.self_attn\.q_proj\.bias"/);
    const model = loadLlama(qwenCfg, withBiases());
    expect(model.layers[1].k.bias?.shape).toEqual([16]);
    expect(model.layers[0].o.bias).toBeNull();
    const logits = forward(model, [golden.input_ids]);
    expect(maxAbsDiff(logits.dataSync(), golden.logits.flat())).toBeLessThan(1e-3);
    logits.dispose();
    disposeLlama(model);
  });

  it('a loaded bias is added to every row of the projection output', () => {
    const model = loadLlama(qwenCfg, withBiases(Array.from({ length: 16 }, (_, i) => (i % 3) - 1)));
    const base = loadLlama(llamaCfg, st);
    const x = tf.randomNormal([3, 32], 0, 1, 'float32', 7) as tf.Tensor2D;
    const d = model.layers[0].v.forward(x).sub(base.layers[0].v.forward(x));
    const want = Array.from({ length: 16 }, (_, i) => (i % 3) - 1);
    for (const row of d.arraySync() as number[][]) row.forEach((v, i) => expect(v).toBeCloseTo(want[i], 5));
    tf.dispose([x, d]);
    disposeLlama(model);
    disposeLlama(base);
  });
});

describe('embedding and LM head over the storage-binding limit', () => {
  it('are held in row blocks; logits match the golden ones and the unsplit model', async () => {
    // 256 B = 2 rows of the 32-wide f32 embedding: the tied [64, 32] table becomes 32 blocks, the
    // projections ([32..64, 32..64]) 4-8 blocks each.
    setEngineOptions({ bindingLimit: 256 });
    let blocked: LlamaModel;
    try {
      blocked = loadFixture('tiny-llama-f32').model;
    } finally {
      setEngineOptions({ bindingLimit: null });
    }
    const { model: whole, golden } = fixtures.find((f) => f.dir === 'tiny-llama-f32')!;
    expect(blocked.embed).toBeInstanceOf(BlockedDenseWeight);
    expect((blocked.embed as BlockedDenseWeight).blocks).toHaveLength(32);
    expect(blocked.lmHead.weight).toBe(blocked.embed); // still tied: one set of blocks
    const a = forward(blocked, [golden.input_ids]);
    const b = forward(whole, [golden.input_ids]);
    expect(maxAbsDiff(a.dataSync(), b.dataSync())).toBeLessThan(1e-5);
    expect(maxAbsDiff(a.dataSync(), golden.logits.flat())).toBeLessThan(1e-3);
    // Every id, at block boundaries included, gathers its own row.
    const ids = tf.tensor2d([Array.from({ length: 64 }, (_, i) => i)], [1, 64], 'int32');
    const rows = (blocked.embed as BlockedDenseWeight).gather(ids);
    expect(rows.shape).toEqual([1, 64, 32]);
    const table = whole.embed instanceof tf.Tensor ? whole.embed.clone() : whole.embed.toDense();
    expect(maxAbsDiff(rows.dataSync(), table.dataSync())).toBe(0);
    table.dispose();
    tf.dispose([a, b, ids, rows]);
    disposeLlama(blocked);
  });
});
