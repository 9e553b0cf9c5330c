import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseModelConfig } from '../contract/modelConfig';
import { DenseWeight, TransposedWeight, weightLayout } from './linear';
import { disposeLlama, forward, loadLlama, type LlamaModel } from './llama';
import {
  attachLora,
  loadPeftTensors,
  mergeLora,
  mergeLoraInPlace,
  peftTensorName,
  peftTensors,
  withAdaptersDisabled,
  type LoraSet,
} from './lora';
import { hash3, mulberry32 } from './random';
import { parseSafetensors, writeSafetensors } from './safetensors';
import { fromPeftTensors, peftAdapterConfigJson } from '../storage/peft';

const FIXTURES = pathToFileURL(resolve('dev/fixtures') + '/');
const DIR = 'tiny-llama-f32';
const config = parseModelConfig(readFileSync(new URL(`${DIR}/config.json`, FIXTURES), 'utf8'));
const weights = parseSafetensors(new Uint8Array(readFileSync(new URL(`${DIR}/model.safetensors`, FIXTURES))));
const golden = JSON.parse(readFileSync(new URL(`${DIR}/golden.json`, FIXTURES), 'utf8')) as {
  input_ids: number[];
  logits: number[][];
};
const IDS = golden.input_ids;

let model: LlamaModel;
beforeEach(() => {
  model = loadLlama(config, weights);
});
afterEach(() => disposeLlama(model));

const logitsOf = (m: LlamaModel, ids: number[] = IDS) =>
  tf.tidy(() => forward(m, [ids]).dataSync().slice() as Float32Array);
const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);

/** Mean next-token NLL of the sequence: the training loss of the tests. */
const nll = (m: LlamaModel, ids: number[] = IDS) => {
  const logits = forward(m, [ids.slice(0, -1)]);
  const lp = tf.logSoftmax(logits, -1).reshape([ids.length - 1, m.config.vocabSize]);
  return lp
    .mul(tf.oneHot(ids.slice(1), m.config.vocabSize))
    .sum()
    .div(-(ids.length - 1)) as tf.Scalar;
};

/** Fills every B with small seeded values so the adapters do something. */
function randomizeB(set: LoraSet, seed = 5, scale = 0.05) {
  const r = mulberry32(seed);
  for (const a of set.adapters) {
    const v = Float32Array.from({ length: a.B.size }, () => (2 * r() - 1) * scale);
    a.B.assign(tf.tensor2d(v, a.B.shape as [number, number]));
  }
}

describe('LoRA', () => {
  it('a fresh adapter (B = 0) leaves the logits exactly equal to the base', () => {
    const base = logitsOf(model);
    const set = attachLora(model, { r: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 1 });
    expect(set.adapters).toHaveLength(14);
    expect(Array.from(logitsOf(model))).toEqual(Array.from(base));
    set.dispose();
  });

  it('initialises A kaiming-uniform within 1/sqrt(in), seeded; B zero; scale alpha/r or alpha/sqrt(r)', () => {
    const s1 = attachLora(model, { r: 4, alpha: 8, targets: ['q', 'down'], seed: 7 });
    const q = s1.adapters[0];
    const down = s1.adapters[1];
    expect(q.module).toBe('model.layers.0.self_attn.q_proj');
    expect(q.A.shape).toEqual([4, 32]);
    expect(q.B.shape).toEqual([32, 4]);
    expect(down.A.shape).toEqual([4, 64]);
    const a = q.A.dataSync();
    expect(Math.max(...Array.from(a, Math.abs))).toBeLessThanOrEqual(1 / Math.sqrt(32));
    expect(Math.max(...Array.from(down.A.dataSync(), Math.abs))).toBeLessThanOrEqual(1 / Math.sqrt(64));
    expect(Math.max(...Array.from(a, Math.abs))).toBeGreaterThan(0.5 / Math.sqrt(32)); // spread over the range
    expect(Array.from(q.B.dataSync()).every((v) => v === 0)).toBe(true);
    expect(s1.scale).toBe(2);
    const first = Array.from(a);
    s1.dispose();
    const s2 = attachLora(model, { r: 4, alpha: 8, targets: ['q', 'down'], seed: 7, useRslora: true });
    expect(Array.from(s2.adapters[0].A.dataSync())).toEqual(first); // same seed, same A
    expect(s2.scale).toBe(4); // 8 / sqrt(4)
    s2.dispose();
    const s3 = attachLora(model, { r: 4, alpha: 8, targets: ['q'], seed: 8 });
    expect(Array.from(s3.adapters[0].A.dataSync())).not.toEqual(first);
    s3.dispose();
  });

  it('a hand-sized adapter adds s * (x A^T) B^T to the projection', () => {
    const set = attachLora(model, { r: 1, alpha: 2, targets: ['q'], layers: [0] });
    const ad = set.adapters[0];
    // A = e_0^T (reads x[0]), B = e_1 (writes output 1): delta[n, 1] = 2 * x[n, 0], zero elsewhere.
    ad.A.assign(tf.oneHot([0], 32).toFloat() as tf.Tensor2D);
    ad.B.assign(tf.oneHot([1], 32).toFloat().reshape([32, 1]) as tf.Tensor2D);
    const x = tf.tensor2d([
      [3, 1, ...Array(30).fill(0)],
      [-1, 0, ...Array(30).fill(0)],
    ]);
    const lin = model.layers[0].q;
    const withAd = lin.forward(x);
    const without = withAdaptersDisabled(set, () => lin.forward(x));
    const d = withAd.sub(without).arraySync() as number[][];
    expect(d[0][1]).toBeCloseTo(6, 5);
    expect(d[1][1]).toBeCloseTo(-2, 5);
    expect(d[0][0]).toBe(0);
    tf.dispose([x, withAd, without]);
    set.dispose();
  });

  it('gradients of A and B match central finite differences', () => {
    const set = attachLora(model, { r: 2, alpha: 4, targets: ['q', 'v', 'up', 'down'], seed: 3 });
    randomizeB(set, 11, 0.2);
    const { grads } = tf.variableGrads(() => nll(model), set.variables());
    // Check, for a few variables, the 3 largest-gradient entries plus one more.
    const picks = [set.adapters[0].A, set.adapters[0].B, set.adapters[3].A, set.adapters[5].B, set.adapters[7].A];
    const eps = 1e-2;
    for (const v of picks) {
      const g = grads[v.name].dataSync();
      const order = Array.from(g.keys()).sort((i, j) => Math.abs(g[j]) - Math.abs(g[i]));
      for (const idx of [order[0], order[1], order[2], order[Math.floor(order.length / 2)]]) {
        const orig = v.dataSync().slice();
        const at = (delta: number) => {
          const w = orig.slice();
          w[idx] += delta;
          v.assign(tf.tensor(w, v.shape));
          return tf.tidy(() => nll(model).dataSync()[0]);
        };
        const fd = (at(eps) - at(-eps)) / (2 * eps);
        v.assign(tf.tensor(orig, v.shape));
        expect(Math.abs(fd - g[idx])).toBeLessThan(2e-3 + 0.01 * Math.abs(g[idx]));
      }
    }
    expect(Math.max(...Array.from(grads[picks[0].name].dataSync(), Math.abs))).toBeGreaterThan(1e-3); // not vacuous
    tf.dispose(Object.values(grads));
    set.dispose();
  });

  it('after training steps the adapters change the model, and switching them off gives the base back exactly', () => {
    const base = logitsOf(model);
    const baseLoss = tf.tidy(() => nll(model).dataSync()[0]);
    const set = attachLora(model, {
      r: 4,
      alpha: 8,
      targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'],
      dropout: 0.1,
      seed: 2,
    });
    set.training = true;
    const opt = tf.train.adam(0.02);
    for (let step = 0; step < 5; step++) {
      tf.tidy(() => {
        opt.minimize(() => nll(model), false, set.variables());
      });
    }
    set.training = false;
    const trainedLoss = tf.tidy(() => nll(model).dataSync()[0]);
    expect(trainedLoss).toBeLessThan(baseLoss - 0.05);
    const tuned = logitsOf(model);
    expect(maxDiff(tuned, base)).toBeGreaterThan(1e-2);
    set.enabled = false;
    expect(Array.from(logitsOf(model))).toEqual(Array.from(base));
    set.enabled = true;
    expect(withAdaptersDisabled(set, () => Array.from(logitsOf(model)))).toEqual(Array.from(base));
    expect(Array.from(logitsOf(model))).toEqual(Array.from(tuned)); // switch restored
    opt.dispose();
    set.dispose();
  });

  it("an adapter's dropout multiplier is tf.dropout's mask for its seed and call counter (what the planned step binds)", () => {
    const set = attachLora(model, { r: 2, alpha: 4, targets: ['q', 'v'], dropout: 0.3, seed: 7 });
    const a = set.adapters[1];
    expect(a.dropoutMultiplier([5, 8])).toBeNull(); // not training
    set.training = true;
    a.calls = 4;
    const x = tf.tensor2d(
      Float32Array.from({ length: 40 }, (_, i) => 1 + i),
      [5, 8],
    );
    const m = a.dropoutMultiplier([5, 8])!;
    expect(a.calls).toBe(5);
    const want = tf.dropout(x, 0.3, undefined, hash3(7, 1, 5));
    expect(Array.from(x.mul(m).dataSync())).toEqual(Array.from(want.dataSync()));
    // Values 0 or 1 / 0.7, about 30% zeros.
    const vals = Array.from(m.dataSync());
    expect(vals.every((v) => v === 0 || Math.abs(v - 1 / 0.7) < 1e-6)).toBe(true);
    expect(vals.filter((v) => v === 0).length).toBeGreaterThan(3);
    tf.dispose([x, m, want]);
    set.dispose();
  });

  it('dropout is seeded, per call, and only while training', () => {
    const set = attachLora(model, { r: 4, alpha: 8, targets: ['q'], dropout: 0.5, seed: 4 });
    randomizeB(set, 1, 0.5);
    const evalA = logitsOf(model);
    expect(Array.from(logitsOf(model))).toEqual(Array.from(evalA)); // no dropout in eval
    set.training = true;
    const t1 = logitsOf(model);
    const t2 = logitsOf(model);
    expect(maxDiff(t1, t2)).toBeGreaterThan(0); // a new mask each call
    set.dispose();
    // The same seed replays the same masks.
    const again = attachLora(model, { r: 4, alpha: 8, targets: ['q'], dropout: 0.5, seed: 4 });
    randomizeB(again, 1, 0.5);
    again.training = true;
    expect(Array.from(logitsOf(model))).toEqual(Array.from(t1));
    again.dispose();
  });

  it('merged weights reproduce the adapted model', () => {
    const set = attachLora(model, { r: 3, alpha: 6, targets: ['q', 'o', 'gate', 'down'], seed: 9 });
    randomizeB(set, 2, 0.3);
    const adapted = logitsOf(model);
    const merged = mergeLora(model, set);
    expect([...merged.keys()]).toContain('model.layers.1.mlp.down_proj.weight');
    expect(merged.size).toBe(8);
    tf.dispose([...merged.values()]);
    mergeLoraInPlace(model, set);
    expect(model.layers[0].q.adapter).toBeNull();
    expect(model.layers[0].q.weight).toBeInstanceOf(weightLayout() === 'inOut' ? TransposedWeight : DenseWeight);
    expect(maxDiff(logitsOf(model), adapted)).toBeLessThan(1e-5);
  });

  it('exports PEFT names and config, and loads them back', async () => {
    const set = attachLora(model, { r: 2, alpha: 16, targets: ['q', 'v'], seed: 1, useRslora: true });
    randomizeB(set, 3, 0.1);
    const before = logitsOf(model);
    const tensors = await peftTensors(set);
    expect(Object.keys(tensors)).toContain('base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight');
    expect(tensors[peftTensorName('model.layers.0.self_attn.q_proj', 'A')].shape).toEqual([2, 32]);
    expect(
      peftAdapterConfigJson(fromPeftTensors(tensors, set.config), 'HuggingFaceTB/SmolLM2-135M-Instruct', model.config),
    ).toMatchObject({
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      r: 2,
      lora_alpha: 16,
      target_modules: ['q_proj', 'v_proj'],
      use_rslora: true,
      bias: 'none',
      fan_in_fan_out: false,
    });
    const file = parseSafetensors(writeSafetensors(tensors), 'adapter_model.safetensors');
    set.dispose();
    const fresh = attachLora(model, { r: 2, alpha: 16, targets: ['q', 'v'], seed: 99, useRslora: true });
    loadPeftTensors(fresh, file);
    expect(maxDiff(logitsOf(model), before)).toBe(0);
    fresh.dispose();
    const wrong = attachLora(model, { r: 3, alpha: 16, targets: ['q', 'v'] });
    expect(() => loadPeftTensors(wrong, file)).toThrow(
      /adapter_model\.safetensors: tensor ".*q_proj\.lora_A\.weight" has shape \[2, 32\], the adapter needs \[3, 32\]/,
    );
    wrong.dispose();
  });

  it('rejects bad settings', () => {
    expect(() => attachLora(model, { r: 0, alpha: 1, targets: ['q'] })).toThrow(/r must be/);
    expect(() => attachLora(model, { r: 2, alpha: 1, targets: ['qkv' as 'q'] })).toThrow(/unknown target "qkv"/);
    expect(() => attachLora(model, { r: 2, alpha: 1, targets: ['q'], layers: [5] })).toThrow(/layer 5/);
    const s = attachLora(model, { r: 2, alpha: 1, targets: ['q'] });
    expect(() => attachLora(model, { r: 2, alpha: 1, targets: ['q'] })).toThrow(/already has an adapter/);
    s.dispose();
  });
});
