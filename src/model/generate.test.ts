import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { parseModelConfig } from '../contract/modelConfig';
import { entropyFromLogits, generate, type GenerateOptions } from './generate';
import { disposeLlama, forward, loadLlama, type LlamaModel } from './llama';
import { mix32, mulberry32 } from './random';
import { parseSafetensors } from './safetensors';

const FIXTURES = pathToFileURL(resolve('dev/fixtures') + '/');
interface Golden {
  input_ids: number[];
  greedy_continuation: number[];
}
function load(dir: string): { model: LlamaModel; golden: Golden } {
  const config = parseModelConfig(readFileSync(new URL(`${dir}/config.json`, FIXTURES), 'utf8'));
  const st = parseSafetensors(new Uint8Array(readFileSync(new URL(`${dir}/model.safetensors`, FIXTURES))));
  return {
    model: loadLlama(config, st),
    golden: JSON.parse(readFileSync(new URL(`${dir}/golden.json`, FIXTURES), 'utf8')),
  };
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
