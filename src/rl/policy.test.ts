import * as tf from '@tensorflow/tfjs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { folderSource } from '../cli/fs-source';
import { generate } from '../model/generate';
import { disposeLlama, forward, type LlamaModel } from '../model/llama';
import { loadModel } from '../model/load';
import { attachLora, type LoraSet } from '../model/lora';
import { mulberry32 } from '../model/random';
import { packSequences, policyAndReferenceStats, policyStats, referenceStats, stopGradient, ValueHead } from './policy';
import { maxAbs } from '../../dev/test/maxAbs';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');

let model: LlamaModel;
let lora: LoraSet;
beforeAll(async () => {
  model = await loadModel(folderSource(FIXTURE));
  lora = attachLora(model, { r: 4, alpha: 8, targets: ['q', 'v', 'o', 'up'], seed: 3 });
  // Non-zero B so the adapted policy differs from the reference.
  const r = mulberry32(11);
  for (const a of lora.adapters)
    a.B.assign(
      tf.tensor2d(
        Float32Array.from({ length: a.B.size }, () => (2 * r() - 1) * 0.3),
        a.B.shape as [number, number],
      ),
    );
});
afterAll(() => {
  lora.dispose();
  disposeLlama(model);
});

const PROMPTS = [
  [1, 17, 33, 8, 41],
  [1, 5, 9],
  [1, 60, 2, 44, 12, 7, 30],
];

describe('packSequences', () => {
  it('left-pads prompts and appends responses; attention follows the masks', () => {
    const p = packSequences(
      {
        prompts: [[1, 2, 3], [4]],
        responses: [
          [5, 6],
          [7, 0],
        ],
        mask: [
          [1, 1],
          [1, 0],
        ],
      },
      9,
    );
    expect(p.promptLength).toBe(3);
    expect(p.responseLength).toBe(2);
    expect(p.ids).toEqual([
      [1, 2, 3, 5, 6],
      [9, 9, 4, 7, 0],
    ]);
    expect(p.attentionMask).toEqual([
      [1, 1, 1, 1, 1],
      [0, 0, 1, 1, 0],
    ]);
  });
  it('names the row whose response length differs', () => {
    expect(() => packSequences({ prompts: [[1], [2]], responses: [[1, 2], [3]], mask: [[1, 1], [1]] })).toThrow(
      /row 1/,
    );
    expect(() => packSequences({ prompts: [[1], []], responses: [[1], [3]], mask: [[1], [1]] })).toThrow(
      /prompt 1 is empty/,
    );
  });
});

describe('policyStats on the tiny fixture', () => {
  it("T = 1: response log-prob under the current weights equals generate's (1e-4)", async () => {
    for (const temperature of [1, 0.7]) {
      const g = await generate(model, PROMPTS, { maxNewTokens: 1, temperature, seed: 5 });
      const s = policyStats(model, { prompts: PROMPTS, responses: g.tokens, mask: g.mask }, { temperature });
      expect(s.logp.shape).toEqual([3, 1]);
      const err = maxAbs(s.logp.dataSync(), g.logprobs.flat());
      const errH = maxAbs(s.entropy.dataSync(), g.entropy.flat());
      console.log(
        `T=1, temperature ${temperature}: max |logp - generate| = ${err.toExponential(2)}, entropy ${errH.toExponential(2)}`,
      );
      expect(err).toBeLessThan(1e-4);
      expect(errH).toBeLessThan(1e-4);
      tf.dispose([s.logp, s.entropy]);
    }
  });

  it('T = 6 with a stop token: every unmasked position matches generate (1e-4)', async () => {
    const g = await generate(model, PROMPTS, {
      maxNewTokens: 6,
      temperature: 1,
      seed: 9,
      stopTokens: [2, 3, 4, 5, 6, 7, 8, 9, 10],
    });
    expect(g.mask.flat().some((m) => m === 0)).toBe(true); // at least one row stopped early
    const s = policyStats(model, { prompts: PROMPTS, responses: g.tokens, mask: g.mask }, { withHidden: true });
    const lp = s.logp.dataSync();
    const T = g.tokens[0].length;
    let err = 0;
    for (let b = 0; b < 3; b++)
      for (let t = 0; t < T; t++) if (g.mask[b][t]) err = Math.max(err, Math.abs(lp[b * T + t] - g.logprobs[b][t]));
    expect(err).toBeLessThan(1e-4);
    expect(s.hidden!.shape).toEqual([3, T, model.config.hiddenSize]);
    // Chunked LM head gives the same numbers.
    const c = policyStats(model, { prompts: PROMPTS, responses: g.tokens, mask: g.mask }, { chunkRows: 4 });
    expect(maxAbs(c.logp.dataSync(), lp)).toBeLessThan(1e-6);
    tf.dispose([s.logp, s.entropy, s.hidden!, c.logp, c.entropy]);
  });

  it('reference = the base model (adapters off), switch restored, and it differs from the policy', async () => {
    const g = await generate(model, PROMPTS, { maxNewTokens: 3, seed: 2 });
    const batch = { prompts: PROMPTS, responses: g.tokens, mask: g.mask };
    const ref = referenceStats(model, lora, batch);
    expect(lora.enabled).toBe(true);
    const cur = policyStats(model, batch);
    // Reference by hand: full forward with adapters off over each unpadded row.
    lora.enabled = false;
    const want: number[] = [];
    for (let b = 0; b < 3; b++) {
      const seq = [...PROMPTS[b], ...g.tokens[b]];
      const lsm = tf.tidy(() => tf.logSoftmax(forward(model, [seq])).arraySync() as number[][][]);
      for (let t = 0; t < 3; t++) want.push(lsm[0][PROMPTS[b].length - 1 + t][g.tokens[b][t]]);
    }
    lora.enabled = true;
    expect(maxAbs(ref.logp.dataSync(), want)).toBeLessThan(1e-4);
    expect(maxAbs(ref.logp.dataSync(), cur.logp.dataSync())).toBeGreaterThan(1e-3);
    tf.dispose([ref.logp, ref.entropy, cur.logp, cur.entropy]);
  });

  it('policy and reference together (one fused stats pass) equal the two computed apart, chunked or not', async () => {
    const g = await generate(model, PROMPTS, { maxNewTokens: 4, seed: 6 });
    const batch = { prompts: PROMPTS, responses: g.tokens, mask: g.mask };
    const opts = { temperature: 0.7, withHidden: true };
    const cur = policyStats(model, batch, opts);
    const ref = referenceStats(model, lora, batch, opts);
    for (const chunkRows of [undefined, 5]) {
      const both = policyAndReferenceStats(model, lora, batch, { ...opts, chunkRows });
      expect(lora.enabled).toBe(true);
      expect(both.logp.shape).toEqual([3, 4]);
      expect(maxAbs(both.logp.dataSync(), cur.logp.dataSync())).toBeLessThan(1e-5);
      expect(maxAbs(both.entropy.dataSync(), cur.entropy.dataSync())).toBeLessThan(1e-5);
      expect(maxAbs(both.refLogp.dataSync(), ref.logp.dataSync())).toBeLessThan(1e-5);
      expect(maxAbs(both.hidden!.dataSync(), cur.hidden!.dataSync())).toBeLessThan(1e-6);
      // The two columns really are different policies.
      expect(maxAbs(both.refLogp.dataSync(), both.logp.dataSync())).toBeGreaterThan(1e-3);
      tf.dispose([both.logp, both.entropy, both.refLogp, both.hidden!]);
    }
    tf.dispose([cur.logp, cur.entropy, cur.hidden!, ref.logp, ref.entropy]);
  });

  it('is differentiable w.r.t. the LoRA variables; the reference is not', async () => {
    const g = await generate(model, PROMPTS, { maxNewTokens: 2, seed: 4 });
    const batch = { prompts: PROMPTS, responses: g.tokens, mask: g.mask };
    const vars = lora.variables();
    const { value, grads } = tf.variableGrads(() => {
      const s = policyStats(model, batch);
      return s.logp.sum().add(s.entropy.sum()) as tf.Scalar;
    }, vars);
    const norms = Object.values(grads).map((x) => x.norm().dataSync()[0]);
    expect(Object.keys(grads)).toHaveLength(vars.length);
    expect(norms.every((n) => Number.isFinite(n))).toBe(true);
    expect(Math.max(...norms)).toBeGreaterThan(0);
    tf.dispose([value, ...Object.values(grads)]);
    expect(() => tf.variableGrads(() => referenceStats(model, lora, batch).logp.sum() as tf.Scalar, vars)).toThrow(
      /connection/,
    );
  });
});

describe('value head and stopGradient', () => {
  it('ValueHead maps [B, T, H] to [B, T], starts at 0, trains w and b', () => {
    const head = new ValueHead(4);
    const h = tf.tensor3d([1, 2, 3, 4, 0, 1, 0, 1], [1, 2, 4]);
    expect(Array.from(head.forward(h).dataSync())).toEqual([0, 0]);
    const { grads, value } = tf.variableGrads(() => head.forward(h).sum() as tf.Scalar, head.variables());
    expect(Array.from(grads[head.w.name].dataSync())).toEqual([1, 3, 3, 5]);
    expect(Array.from(grads[head.b.name].dataSync())).toEqual([2]);
    tf.dispose([h, value, ...Object.values(grads)]);
    head.dispose();
  });
  it('stopGradient passes values and blocks gradients', () => {
    const x = tf.tensor1d([1, 2, 3]);
    const g = tf.grad((v: tf.Tensor) =>
      v
        .mul(v)
        .sum()
        .add(stopGradient(v.mul(v)).sum()),
    )(x);
    expect(Array.from(g.dataSync())).toEqual([2, 4, 6]);
    expect(Array.from(stopGradient(x).dataSync())).toEqual([1, 2, 3]);
    tf.dispose([x, g]);
  });
});
