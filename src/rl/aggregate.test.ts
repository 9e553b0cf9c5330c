import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { aggLoss, trlLoss } from './aggregate';
import { LOSS_AGG_MODES, TRL_LOSS_TYPES } from './types';

// L = [[1,2,3],[4,5,6],[7,8,9]], mask = [[1,1,1],[1,0,0],[0,0,0]]:
// masked sum 1+2+3+4 = 10, 4 tokens; row sums [6, 4, 0]; row means [2, 4, (empty)].
const L = [
  [1, 2, 3],
  [4, 5, 6],
  [7, 8, 9],
];
const M = [
  [1, 1, 1],
  [1, 0, 0],
  [0, 0, 0],
];
const value = (f: (l: tf.Tensor, m: tf.Tensor) => tf.Scalar, l = L, m = M) =>
  tf.tidy(() => f(tf.tensor2d(l), tf.tensor2d(m)).dataSync()[0]);

describe('veRL loss_agg_mode', () => {
  it('token-mean = sum / tokens = 10/4', () =>
    expect(value((l, m) => aggLoss(l, m, 'token-mean'))).toBeCloseTo(2.5, 6));
  it('seq-mean-token-sum = mean of row sums over non-empty rows = (6+4)/2', () =>
    expect(value((l, m) => aggLoss(l, m, 'seq-mean-token-sum'))).toBeCloseTo(5, 6));
  it('seq-mean-token-mean = mean of row means over non-empty rows = (2+4)/2', () =>
    expect(value((l, m) => aggLoss(l, m, 'seq-mean-token-mean'))).toBeCloseTo(3, 6));
  it('seq-mean-token-sum-norm = sum / T = 10/3, or sum / normLength', () => {
    expect(value((l, m) => aggLoss(l, m, 'seq-mean-token-sum-norm'))).toBeCloseTo(10 / 3, 5);
    expect(value((l, m) => aggLoss(l, m, 'seq-mean-token-sum-norm', { normLength: 8 }))).toBeCloseTo(1.25, 6);
  });
  it('token-sum = 10', () => expect(value((l, m) => aggLoss(l, m, 'token-sum'))).toBeCloseTo(10, 6));
  it('an all-masked batch gives 0 in every mode, not NaN', () => {
    const zero = [
      [0, 0, 0],
      [0, 0, 0],
      [0, 0, 0],
    ];
    for (const mode of LOSS_AGG_MODES) expect(value((l, m) => aggLoss(l, m, mode), L, zero)).toBe(0);
    for (const t of TRL_LOSS_TYPES) expect(value((l, m) => trlLoss(l, m, t), L, zero)).toBe(0);
  });
});

describe('TRL loss_type', () => {
  it('grpo = mean over all rows of row means = (2+4+0)/3 (empty row counts, unlike veRL)', () =>
    expect(value((l, m) => trlLoss(l, m, 'grpo'))).toBeCloseTo(2, 6));
  it('bnpo and dapo = 10/4', () => {
    expect(value((l, m) => trlLoss(l, m, 'bnpo'))).toBeCloseTo(2.5, 6);
    expect(value((l, m) => trlLoss(l, m, 'dapo'))).toBeCloseTo(2.5, 6);
  });
  it('dr_grpo = sum / (B x max_completion_length) = 10/9, or 10/(3x5)', () => {
    expect(value((l, m) => trlLoss(l, m, 'dr_grpo'))).toBeCloseTo(10 / 9, 5);
    expect(value((l, m) => trlLoss(l, m, 'dr_grpo', 5))).toBeCloseTo(10 / 15, 5);
  });
  it('gradient of token-mean is m / sum(m)', () => {
    const g = tf.grad((l: tf.Tensor) => aggLoss(l, tf.tensor2d(M), 'token-mean'))(tf.tensor2d(L));
    expect(Array.from(g.dataSync()).map((x) => +x.toFixed(6))).toEqual([0.25, 0.25, 0.25, 0.25, 0, 0, 0, 0, 0]);
  });
});
