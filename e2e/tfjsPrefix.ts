// The tfjs references of the planned-path tests: last-position logits, teacher-forced decoding
// in one forward instead of one per prefix, and the draws a generation makes from such logits.
import { forward, type LlamaModel } from '../src/model/llama';
import { expect } from 'vitest';
import { generate, type GenerateOptions, type GenerateResult } from '../src/model/generate';
import { plannedDecodeFor, plannedForcedLogits, plannedPrefillLogits } from '../src/model/planned/decode';
import { maxAbs } from '../dev/test/maxAbs';
import { decodeSetup } from '../src/model/planned/decodeSteps';
import { sampleReference } from '../src/engine/kernels/sample/sampleReference';

/**
 * The tfjs path's last-position logits after each prefix of the teacher-forced tokens, [B * V] each:
 * [0] after the left-padded prompts, [t + 1] after forced[0..t] (forced[t][b] is row b's token t).
 * One causal forward over the whole sequence gives them all: position p attends to positions <= p
 * only, and every row keeps the same left pads in every prefix. Measured on tiny-llama-f32 with
 * LoRA (Dawn on SwiftShader): within 6e-6 of a forward per prefix, ~10 from the neighbouring
 * prefix's, and 1.4 s against 11.8 s for 7 prefixes (tfjs compiles its shaders for each new
 * sequence length; over 600-token prompts each forward cost ~20 s).
 */
export async function tfjsPrefixLogits(
  model: LlamaModel,
  prompts: number[][],
  forced: number[][],
): Promise<Float32Array[]> {
  const rows = prompts.map((p, b) => [...p, ...forced.map((f) => f[b])]);
  const P = Math.max(...rows.map((r) => r.length));
  const ids = rows.map((r) => [...Array(P - r.length).fill(0), ...r]);
  const attn = rows.map((r) => [...Array(P - r.length).fill(0), ...Array(r.length).fill(1)]);
  const t = forward(model, ids, { attentionMask: attn });
  const v = (await t.data()) as Float32Array;
  t.dispose();
  const B = rows.length;
  const V = model.config.vocabSize;
  return Array.from({ length: forced.length + 1 }, (_, k) => {
    const pos = P - 1 - forced.length + k;
    const out = new Float32Array(B * V);
    for (let b = 0; b < B; b++) out.set(v.subarray((b * P + pos) * V, (b * P + pos + 1) * V), b * V);
    return out;
  });
}

/** Last-position logits of the tfjs path over each row's full sequence (left-padded), [B * V]. */
export async function tfjsLogits(model: LlamaModel, rows: number[][]): Promise<Float32Array> {
  const P = Math.max(...rows.map((r) => r.length));
  const ids = rows.map((r) => [...Array(P - r.length).fill(0), ...r]);
  const attn = rows.map((r) => [...Array(P - r.length).fill(0), ...Array(r.length).fill(1)]);
  const t = forward(model, ids, { attentionMask: attn, lastOnly: true });
  const v = (await t.data()) as Float32Array;
  t.dispose();
  return v;
}

/**
 * What a generation draws from the given logits, step by step (ref[t]: [R * V], e.g. tfjsPrefixLogits
 * over the prompts and the generation's own draws, so each step's prefix is the previous steps'
 * draws): the CPU sampler reference (the GPU sampler's, Philox stream = the row's index in its
 * generation), log-probs under softmax(logits / temperature) in float64 (temperature 1 when
 * greedy), and a row's mask 0 after its stop token.
 * Equal draw for draw to generate() on logits within float error of ref, without the tfjs decode's
 * shader compiles for every new cache length (~3 s a token with LoRA on SwiftShader).
 */
export function drawsFromLogits(
  ref: Float32Array[],
  B: number,
  V: number,
  opts: GenerateOptions,
  steps: number,
): Pick<GenerateResult, 'tokens' | 'logprobs' | 'mask'> {
  const s = decodeSetup(
    Array.from({ length: B }, () => [0]),
    opts,
  );
  const out = { tokens: [] as number[][], logprobs: [] as number[][], mask: [] as number[][] };
  for (let b = 0; b < B; b++) {
    const stream = s.streams[b];
    let done = false;
    const tokens: number[] = [];
    const logprobs: number[] = [];
    const mask: number[] = [];
    for (let t = 0; t < steps; t++) {
      if (done) {
        tokens.push(s.pad);
        logprobs.push(0);
        mask.push(0);
        continue;
      }
      const row = ref[t].subarray(b * V, (b + 1) * V);
      const o = { temperature: s.temperature, topK: s.topK, topP: s.topP, seed: s.seed, step: t };
      const tok = sampleReference(row, 1, V, o, [stream])[0];
      const temp = s.temperature > 0 ? s.temperature : 1;
      let m = -Infinity;
      for (const x of row) m = Math.max(m, x / temp);
      let z = 0;
      for (const x of row) z += Math.exp(x / temp - m);
      tokens.push(tok);
      logprobs.push(row[tok] / temp - m - Math.log(z));
      mask.push(1);
      done = s.stop.has(tok);
    }
    out.tokens.push(tokens);
    out.logprobs.push(logprobs);
    out.mask.push(mask);
  }
  return out;
}

/**
 * A planned generation against the tfjs path's logits: one teacher-forced tfjs forward over the
 * prompts and the generation's own draws gives every step's logits; the planned prefill's and every
 * teacher-forced step's logits are within 1e-4 of them, and the draws, masks and log-probs are those
 * drawsFromLogits makes from them (a tfjs generation's, draw for draw, without its decode). Returns
 * the planned generation.
 */
export async function generationAgainstTfjs(
  model: LlamaModel,
  prompts: number[][],
  opts: GenerateOptions,
): Promise<GenerateResult> {
  expect(plannedDecodeFor(model), 'the planned decode takes this model').not.toBeNull();
  const got = await generate(model, prompts, opts);
  const T = got.tokens[0].length;
  const forced = Array.from({ length: T - 1 }, (_, t) => got.tokens.map((r) => r[t]));
  const ref = await tfjsPrefixLogits(model, prompts, forced);
  const want = drawsFromLogits(ref, prompts.length, model.config.vocabSize, opts, T);
  expect(got.tokens).toEqual(want.tokens);
  expect(got.mask).toEqual(want.mask);
  expect(maxAbs(got.logprobs.flat(), want.logprobs.flat())).toBeLessThan(1e-4);
  expect(maxAbs(await plannedPrefillLogits(model, prompts), ref[0])).toBeLessThan(1e-4);
  const planned = await plannedForcedLogits(model, prompts, forced);
  expect(Math.max(0, ...planned.map((p, t) => maxAbs(p, ref[t + 1])))).toBeLessThan(1e-4);
  return got;
}
