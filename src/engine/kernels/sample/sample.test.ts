import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { samplerUniform } from '../../rng/philox';
import { sampleTokens } from './sample';
import { orderKey, sampleReference, type SamplingOptions } from './sampleReference';

const opts = (o: Partial<SamplingOptions>): SamplingOptions => ({
  temperature: 1,
  topK: 0,
  topP: 1,
  seed: 7,
  step: 0,
  ...o,
});

function frequencies(logits: number[], o: Partial<SamplingOptions>, n: number): number[] {
  const counts = new Array(logits.length).fill(0);
  for (let step = 0; step < n; step++) counts[sampleReference(logits, 1, logits.length, opts({ ...o, step }))[0]]++;
  return counts.map((c) => c / n);
}

describe('sampler reference', () => {
  it('orders float keys like the floats', () => {
    const xs = [-Infinity, -3.5, -1e-30, -0, 0, 1e-30, 2, Infinity];
    for (let i = 1; i < xs.length; i++) expect(orderKey(xs[i])).toBeGreaterThanOrEqual(orderKey(xs[i - 1]));
    expect(orderKey(-3.5)).toBeLessThan(orderKey(2));
  });

  it('greedy takes the first of tied maxima', () => {
    expect(Array.from(sampleReference([1, 3, 3, 2], 1, 4, opts({ temperature: 0 })))).toEqual([1]);
  });

  it('top-k = 1 and a tiny top-p are both greedy, and masked ids are never drawn', () => {
    const row = [0.1, -Infinity, 2.5, 2.4, -1];
    for (let step = 0; step < 50; step++) {
      expect(sampleReference(row, 1, 5, opts({ topK: 1, step }))[0]).toBe(2);
      expect(sampleReference(row, 1, 5, opts({ topP: 0.01, step }))[0]).toBe(2);
      expect(sampleReference(row, 1, 5, opts({ step }))[0]).not.toBe(1);
    }
  });

  it('top-k = 2 keeps the two largest and splits them by the Philox uniform', () => {
    // logits [0, ln 2, ln 3, -inf]: keep ids 1 and 2 with weights 2 : 3, so scanning in vocab
    // order picks id 1 exactly when the uniform is below 2/5.
    const row = [0, Math.log(2), Math.log(3), -Infinity];
    for (let step = 0; step < 200; step++) {
      const expected = samplerUniform(7, 0, step) < 0.4 ? 1 : 2;
      expect(sampleReference(row, 1, 4, opts({ topK: 2, step }))[0]).toBe(expected);
    }
  });

  it('top-p keeps the smallest head reaching the mass', () => {
    // p = [0.5, 0.3, 0.15, 0.05], top-p 0.75: {0} has 0.5 < 0.75, {0, 1} has 0.8 -> keep ids 0, 1;
    // renormalised 0.625 / 0.375.
    const f = frequencies([0.5, 0.3, 0.15, 0.05].map(Math.log), { topP: 0.75 }, 4000);
    expect(f[2] + f[3]).toBe(0);
    expect(Math.abs(f[0] - 0.625)).toBeLessThan(0.03); // 4 standard errors at n = 4000
  });

  it('temperature 2 flattens [0, ln 4] to probabilities 1/3, 2/3', () => {
    const f = frequencies([0, Math.log(4)], { temperature: 2 }, 4000);
    expect(Math.abs(f[1] - 2 / 3)).toBeLessThan(0.03);
  });

  it('rejects invalid options by name', () => {
    expect(() => sampleReference([0, 1], 1, 2, opts({ topP: 0 }))).toThrow(/topP/);
    expect(() => sampleReference([0, 1], 1, 2, opts({ temperature: -1 }))).toThrow(/temperature/);
    expect(() => sampleReference([0, 1], 1, 2, opts({ topK: 1.5 }))).toThrow(/topK/);
  });

  it('sampleTokens on the CPU backend is the reference, row by row', async () => {
    const logits = [0.2, 1.5, -0.3, 0.9, 0.9, 0.1, -2, 3];
    const ids = await sampleTokens(tf.tensor2d(logits, [2, 4]), opts({ seed: 99, step: 3 }));
    expect(Array.from(ids.dataSync())).toEqual(Array.from(sampleReference(logits, 2, 4, opts({ seed: 99, step: 3 }))));
  });
});
