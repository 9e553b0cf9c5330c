import * as tf from '@tensorflow/tfjs';
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { parseModelConfig } from './config.ts';
import { entropyFromLogits, generate, sampleFromLogits, type GenerateOptions } from './generate.ts';
import { disposeLlama, forward, loadLlama, type LlamaModel } from './llama.ts';
import { mix32, mulberry32, uniformAt } from './random.ts';
import { parseSafetensors } from './safetensors.ts';

const FIXTURES = new URL('../../../shared/fixtures/', import.meta.url);
interface Golden {
  input_ids: number[];
  greedy_continuation: number[];
}
function load(dir: string): { model: LlamaModel; golden: Golden } {
  const config = parseModelConfig(readFileSync(new URL(`${dir}/config.json`, FIXTURES), 'utf8'));
  const st = parseSafetensors(new Uint8Array(readFileSync(new URL(`${dir}/model.safetensors`, FIXTURES))));
  return { model: loadLlama(config, st), golden: JSON.parse(readFileSync(new URL(`${dir}/golden.json`, FIXTURES), 'utf8')) };
}
const bf16 = load('tiny-llama');
const f32 = load('tiny-llama-f32');
afterAll(() => [bf16, f32].forEach((f) => disposeLlama(f.model)));

describe('random', () => {
  it('mix32 is the murmur3 finaliser (values worked in Python)', () => {
    expect([mix32(0), mix32(1), mix32(0xdeadbeef)]).toEqual([0, 0x514e28b7, 0x0de5c6a9]);
  });
  it('mulberry32 matches a Python transcription of the reference', () => {
    const r = mulberry32(42);
    expect([r(), r(), r()]).toEqual([0.6011037519201636, 0.44829055899754167, 0.8524657934904099]);
  });
  it('uniformAt is deterministic, in [0, 1), roughly uniform, and streams differ', () => {
    expect(uniformAt(7, 3, 11)).toBe(uniformAt(7, 3, 11));
    const buckets = new Array(10).fill(0);
    let inRange = true;
    for (let i = 0; i < 20000; i++) {
      const u = uniformAt(1, 0, i);
      inRange &&= u >= 0 && u < 1;
      buckets[Math.floor(u * 10)]++;
    }
    expect(inRange).toBe(true);
    for (const c of buckets) expect(Math.abs(c - 2000)).toBeLessThan(200); // ~4.7 sigma
    expect(uniformAt(1, 0, 5)).not.toBe(uniformAt(1, 1, 5));
    expect(uniformAt(1, 0, 5)).not.toBe(uniformAt(2, 0, 5));
  });
});

describe('sampleFromLogits (hand-computed distributions)', () => {
  const run = (logits: number[][], u: number[], o: Parameters<typeof sampleFromLogits>[2]) => {
    const r = sampleFromLogits(tf.tensor2d(logits), u, o);
    const out = { ids: Array.from(r.ids.dataSync()), lp: Array.from(r.logprob.dataSync()), ent: Array.from(r.entropy.dataSync()) };
    tf.dispose([r.ids, r.logprob, r.entropy]);
    return out;
  };

  it('inverse-CDF sampling of p = [1/4, 3/4], with its log-prob and entropy', () => {
    const r = run([[0, Math.log(3)], [0, Math.log(3)]], [0.2, 0.3], {});
    expect(r.ids).toEqual([0, 1]);
    expect(r.lp[0]).toBeCloseTo(Math.log(0.25), 5);
    expect(r.lp[1]).toBeCloseTo(Math.log(0.75), 5);
    const h = -(0.25 * Math.log(0.25) + 0.75 * Math.log(0.75));
    expect(r.ent[0]).toBeCloseTo(h, 5);
  });

  it('greedy picks the argmax and reports temperature-1 statistics', () => {
    const r = run([[1, 3, 2]], [0.99], { greedy: true, temperature: 0.5 });
    expect(r.ids).toEqual([1]);
    const z = Math.exp(1) + Math.exp(3) + Math.exp(2);
    expect(r.lp[0]).toBeCloseTo(3 - Math.log(z), 5);
  });

  it('temperature divides the logits', () => {
    // logits [0, 2ln3] at T = 2 -> [0, ln 3] -> p = [1/4, 3/4]
    const r = run([[0, 2 * Math.log(3)]], [0.2], { temperature: 2 });
    expect(r.ids).toEqual([0]);
    expect(r.lp[0]).toBeCloseTo(Math.log(0.25), 5);
  });

  it('top-k keeps the k best; top-p keeps the smallest set reaching p', () => {
    const l = [Math.log(0.5), Math.log(0.3), Math.log(0.2)];
    // top-k 1: always token 0, whatever u; log-prob still from the full distribution.
    expect(run([l], [0.99], { topK: 1 }).ids).toEqual([0]);
    const k1 = run([l], [0.99], { topK: 1 });
    expect(k1.lp[0]).toBeCloseTo(Math.log(0.5), 5);
    // top-k 2: renormalised [0.625, 0.375]: u 0.6 -> 0, u 0.7 -> 1, never 2.
    expect(run([l, l, l], [0.6, 0.7, 0.999], { topK: 2 }).ids).toEqual([0, 1, 1]);
    // top-p 0.6: mass before token 1 is 0.5 < 0.6 (kept), before token 2 is 0.8 (cut) -> same as top-k 2.
    expect(run([l, l, l], [0.6, 0.7, 0.999], { topP: 0.6 }).ids).toEqual([0, 1, 1]);
    // top-p 0.4: only token 0.
    expect(run([l], [0.999], { topP: 0.4 }).ids).toEqual([0]);
  });

  it('sample frequencies follow the distribution over a grid of uniforms', () => {
    const p = [0.1, 0.2, 0.3, 0.4];
    const n = 1000;
    const u = Array.from({ length: n }, (_, i) => (i + 0.5) / n);
    const r = run(Array(n).fill(p.map(Math.log)), u, {});
    const counts = [0, 0, 0, 0];
    for (const id of r.ids) counts[id]++;
    expect(counts).toEqual([100, 200, 300, 400]);
  });

  it('rejects bad settings', () => {
    expect(() => run([[0, 1]], [0.5], { temperature: -1 })).toThrow(/temperature/);
    expect(() => run([[0, 1]], [0.5], { topP: 0 })).toThrow(/topP/);
  });
});

describe('generate', () => {
  it('greedy generation reproduces the golden continuations (no stop tokens)', async () => {
    for (const { model, golden } of [bf16, f32]) {
      const r = await generate(model, [golden.input_ids], { maxNewTokens: 10, greedy: true });
      expect(r.tokens[0]).toEqual(golden.greedy_continuation);
      expect(r.mask[0]).toEqual(Array(10).fill(1));
    }
  });

  it('KV-cache decoding gives the full-forward log-probs and entropies', async () => {
    const { model, golden } = f32;
    const prompt = golden.input_ids.slice(0, 6);
    const opts: GenerateOptions = { maxNewTokens: 8, temperature: 0.7, seed: 3 };
    const r = await generate(model, [prompt], opts);
    // Recompute every step from one full forward over prompt + generated tokens.
    const seq = [...prompt, ...r.tokens[0]];
    const logits = forward(model, [seq]).div(0.7);
    const lp = tf.logSoftmax(logits, -1).arraySync() as number[][][];
    const ent = entropyFromLogits(logits).arraySync() as number[][];
    for (let t = 0; t < 8; t++) {
      const pos = prompt.length - 1 + t;
      expect(r.logprobs[0][t]).toBeCloseTo(lp[0][pos][r.tokens[0][t]], 4);
      expect(r.entropy[0][t]).toBeCloseTo(ent[0][pos], 4);
    }
    logits.dispose();
  });

  it('batched left-padded generation equals one-by-one generation', async () => {
    const { model, golden } = bf16;
    const prompts = [golden.input_ids, golden.input_ids.slice(0, 3), [1, 7, 8, 9, 20, 33]];
    const opts: GenerateOptions = { maxNewTokens: 12, temperature: 0.9, topK: 20, topP: 0.95, seed: 1234 };
    const batched = await generate(model, prompts, opts);
    for (let b = 0; b < prompts.length; b++) {
      const alone = await generate(model, [prompts[b]], { ...opts, streams: [b] });
      expect(batched.tokens[b]).toEqual(alone.tokens[0]);
      for (let t = 0; t < 12; t++) {
        expect(batched.logprobs[b][t]).toBeCloseTo(alone.logprobs[0][t], 4);
        expect(batched.entropy[b][t]).toBeCloseTo(alone.entropy[0][t], 4);
      }
    }
    // Greedy too, against the golden continuation for the full-length row.
    const g = await generate(model, prompts, { maxNewTokens: 10, greedy: true });
    expect(g.tokens[0]).toEqual(golden.greedy_continuation);
  });

  it('same seed gives the same output; another seed gives another', async () => {
    const { model, golden } = f32;
    const opts: GenerateOptions = { maxNewTokens: 16, temperature: 1.5, seed: 99 };
    const a = await generate(model, [golden.input_ids, golden.input_ids], opts);
    const b = await generate(model, [golden.input_ids, golden.input_ids], opts);
    expect(a).toEqual(b);
    expect(a.tokens[0]).not.toEqual(a.tokens[1]); // two streams of the same prompt differ
    const c = await generate(model, [golden.input_ids, golden.input_ids], { ...opts, seed: 100 });
    expect(c.tokens).not.toEqual(a.tokens);
  });

  it('stops a row at a stop token, masks and pads after it, and ends when all rows stop', async () => {
    const { model, golden } = f32;
    // Greedy on this prompt gives 31, 49, 49, 2, ... (golden); stop on 2 (eos).
    const r = await generate(model, [golden.input_ids, golden.input_ids.slice(0, 4)], {
      maxNewTokens: 10,
      greedy: true,
      stopTokens: [2],
      padTokenId: 0,
    });
    expect(r.tokens[0].slice(0, 4)).toEqual([31, 49, 49, 2]);
    expect(r.tokens[0].slice(4)).toEqual(Array(6).fill(0));
    expect(r.mask[0]).toEqual([1, 1, 1, 1, 0, 0, 0, 0, 0, 0]);
    expect(r.logprobs[0][5]).toBe(0);
    expect(r.lengths[0]).toBe(4);
    const alone = await generate(model, [golden.input_ids], { maxNewTokens: 10, greedy: true, stopTokens: [2] });
    expect(alone.tokens[0]).toEqual([31, 49, 49, 2]); // every row stopped: no wasted steps
    expect(alone.lengths).toEqual([4]);
  });

  it('leaks no tensors', async () => {
    const before = tf.memory().numTensors;
    await generate(bf16.model, [[1, 2, 3], [4]], { maxNewTokens: 5, seed: 1 });
    expect(tf.memory().numTensors).toBe(before);
  });
});
