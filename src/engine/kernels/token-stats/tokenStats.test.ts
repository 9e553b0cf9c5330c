import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { seededLogits, seededUpstream } from '../../../../dev/test/seededLogits';
import { tokenStats, tokenStatsStock } from './tokenStats';
import { tokenStatsF64, tokenStatsGradF64 } from './tokenStatsReference';

describe('token statistics', () => {
  it('matches hand-worked values for a two-token vocabulary', () => {
    // logits [0, ln 3] -> p = [1/4, 3/4]; log p(1) = ln 0.75;
    // H = -(0.25 ln 0.25 + 0.75 ln 0.75) = 0.3465736 + 0.2157616 = 0.5623351.
    const ref = tokenStatsF64([0, Math.log(3)], 1, 2, [1]);
    expect(ref.logp[0]).toBeCloseTo(Math.log(0.75), 12);
    expect(ref.entropy[0]).toBeCloseTo(0.5623351446, 9);
    const out = tokenStats(tf.tensor2d([[0, Math.log(3)]]), tf.tensor1d([1], 'int32')).arraySync();
    expect(out[0][0]).toBeCloseTo(Math.log(0.75), 6);
    expect(out[0][1]).toBeCloseTo(0.5623351446, 6);
  });

  it('gives zero entropy for a one-hot row and ignores masked (-inf) logits', () => {
    // [-inf, 0, -inf]: all mass on id 1, so log p(1) = 0 and H = 0 (no NaN from 0 * -inf).
    const out = tokenStatsStock(tf.tensor2d([[-Infinity, 0, -Infinity]]), tf.tensor1d([1], 'int32')).arraySync();
    expect(out[0][0]).toBeCloseTo(0, 7);
    expect(out[0][1]).toBeCloseTo(0, 7);
  });

  it('stock ops agree with the float64 reference on odd shapes', () => {
    for (const [rows, vocab] of [
      [1, 7],
      [5, 1000],
      [3, 4099],
    ]) {
      const c = seededLogits(rows, vocab, 1234 + vocab);
      const ref = tokenStatsF64(c.logits, rows, vocab, c.ids);
      const out = tokenStatsStock(tf.tensor2d(c.logits, [rows, vocab]), tf.tensor1d(c.ids, 'int32')).arraySync();
      for (let r = 0; r < rows; r++) {
        expect(Math.abs(out[r][0] - ref.logp[r])).toBeLessThan(1e-4);
        expect(Math.abs(out[r][1] - ref.entropy[r])).toBeLessThan(1e-4);
      }
    }
  });

  it('rejects mismatched shapes with a message naming them', () => {
    expect(() => tokenStats(tf.zeros([2, 3]) as tf.Tensor2D, tf.tensor1d([0], 'int32'))).toThrow(/ids must be \[2\]/);
    expect(() =>
      tokenStats(tf.zeros([2, 3]) as tf.Tensor2D, tf.tensor1d([0, 1], 'int32'), tf.zeros([2, 4]) as tf.Tensor2D),
    ).toThrow(/refLogits must be \[2,3\]/);
  });

  it('with reference logits adds their log-prob of the same ids as a third column', () => {
    // Hand-worked: reference logits [ln 3, 0] -> q = [3/4, 1/4]; id 1 -> log q = ln 0.25, while the
    // policy row [0, ln 3] gives log p = ln 0.75 and H = 0.5623351 as above.
    const out = tokenStats(
      tf.tensor2d([[0, Math.log(3)]]),
      tf.tensor1d([1], 'int32'),
      tf.tensor2d([[Math.log(3), 0]]),
    ).arraySync();
    expect(out[0]).toHaveLength(3);
    expect(out[0][0]).toBeCloseTo(Math.log(0.75), 6);
    expect(out[0][1]).toBeCloseTo(0.5623351446, 6);
    expect(out[0][2]).toBeCloseTo(Math.log(0.25), 6);
    for (const [rows, vocab] of [
      [3, 1000],
      [2, 4099],
    ]) {
      const c = seededLogits(rows, vocab, 99 + vocab);
      const r = seededLogits(rows, vocab, 100 + vocab);
      const own = tokenStatsF64(c.logits, rows, vocab, c.ids);
      const ref = tokenStatsF64(r.logits, rows, vocab, c.ids);
      const got = tokenStatsStock(
        tf.tensor2d(c.logits, [rows, vocab]),
        tf.tensor1d(c.ids, 'int32'),
        tf.tensor2d(r.logits, [rows, vocab]),
      ).arraySync();
      for (let i = 0; i < rows; i++) {
        expect(Math.abs(got[i][0] - own.logp[i])).toBeLessThan(1e-4);
        expect(Math.abs(got[i][1] - own.entropy[i])).toBeLessThan(1e-4);
        expect(Math.abs(got[i][2] - ref.logp[i])).toBeLessThan(1e-4);
      }
    }
  });
});

describe('token statistics gradient', () => {
  it('closed-form reference agrees with central finite differences', () => {
    const c = seededLogits(2, 9, 77, 2);
    const dy = [0.7, -0.3, -1.2, 0.5];
    const grad = tokenStatsGradF64(c.logits, 2, 9, c.ids, dy);
    const x = Float64Array.from(c.logits);
    const objective = (xs: Float64Array) => {
      const s = tokenStatsF64(xs, 2, 9, c.ids);
      return dy[0] * s.logp[0] + dy[1] * s.entropy[0] + dy[2] * s.logp[1] + dy[3] * s.entropy[1];
    };
    const h = 1e-6;
    for (let i = 0; i < x.length; i++) {
      if (!Number.isFinite(x[i])) continue;
      const plus = Float64Array.from(x);
      const minus = Float64Array.from(x);
      plus[i] += h;
      minus[i] -= h;
      expect(grad[i]).toBeCloseTo((objective(plus) - objective(minus)) / (2 * h), 6);
    }
  });

  it('stock-op autograd matches the closed form', () => {
    const rows = 3;
    const vocab = 300;
    const c = seededLogits(rows, vocab, 5);
    const dy = seededUpstream(rows, 5);
    const ref = tokenStatsGradF64(c.logits, rows, vocab, c.ids, dy);
    const ids = tf.tensor1d(c.ids, 'int32');
    const g = tf.grad((x: tf.Tensor) => tf.sum(tf.mul(tokenStats(x as tf.Tensor2D, ids), tf.tensor2d(dy, [rows, 2]))));
    const got = g(tf.tensor2d(c.logits, [rows, vocab])).dataSync();
    for (let i = 0; i < got.length; i++) {
      if (!Number.isFinite(c.logits[i])) continue;
      expect(Math.abs(got[i] - ref[i])).toBeLessThan(1e-5);
    }
  });
});
