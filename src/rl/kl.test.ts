import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import {
  adaptiveKlController,
  applyKlPenalty,
  fixedKlController,
  klPenalty,
  klPenaltyValue,
  updateKlController,
} from './kl';
import { expectAllClose } from '../../dev/test/rlHelpers';
import { fromRows, KL_ESTIMATOR_NAMES } from './types';

// logp = [-1, -2], ref = [-1.5, -1] -> x = logp - ref = [0.5, -1].
const logp = [-1, -2];
const ref = [-1.5, -1];

describe('KL estimators', () => {
  const run = (name: (typeof KL_ESTIMATOR_NAMES)[number]) =>
    tf.tidy(() => Array.from(klPenalty(tf.tensor1d(logp), tf.tensor1d(ref), name).dataSync()));

  it('k1 / kl = x', () => {
    expectAllClose(run('k1'), [0.5, -1], 6);
    expectAllClose(run('kl'), [0.5, -1], 6);
  });
  it('abs = |x|', () => expectAllClose(run('abs'), [0.5, 1], 6));
  it('k2 / mse = x^2 / 2', () => {
    expectAllClose(run('k2'), [0.125, 0.5], 6);
    expectAllClose(run('mse'), [0.125, 0.5], 6);
  });
  it('k3 / low_var_kl = e^k - k - 1 with k = ref - logp', () => {
    // k = -0.5: e^-0.5 + 0.5 - 1 = 0.6065307 - 0.5 = 0.1065307; k = 1: e - 2 = 0.7182818.
    expectAllClose(run('k3'), [0.1065307, 0.7182818], 5);
    expectAllClose(run('low_var_kl'), [0.1065307, 0.7182818], 5);
  });
  it('k3 clamps the exponent to +-20 and the result to +-10', () => {
    // x = -30: k = 30 -> 20, e^20 - 21 = 4.85e8 -> 10. x = 30: k = -20, e^-20 + 19 = 19.0 -> 10.
    const out = tf.tidy(() => Array.from(klPenalty(tf.tensor1d([-30, 30]), tf.tensor1d([0, 0]), 'k3').dataSync()));
    expectAllClose(out, [10, 10], 6);
  });
  it('number form agrees with the tensor form for every name', () => {
    for (const name of KL_ESTIMATOR_NAMES) {
      const t = run(name);
      expectAllClose([klPenaltyValue(logp[0], ref[0], name), klPenaltyValue(logp[1], ref[1], name)], t, 5);
    }
    expect(() => klPenalty(tf.scalar(0), tf.scalar(0), 'k9' as 'k1')).toThrow(/unknown KL estimator "k9"/);
  });
  it('k3 gradient wrt logp is 1 - e^(ref - logp)', () => {
    // d/dlogp [e^(ref-logp) - (ref-logp) - 1] = -e^(ref-logp) + 1; at x = 0.5: 1 - e^-0.5 = 0.3934693.
    const g = tf.grad((l: tf.Tensor) => tf.sum(klPenalty(l, tf.tensor1d([-1.5]), 'k3')))(tf.tensor1d([-1]));
    expectAllClose(g.dataSync(), [0.3934693], 5);
  });
});

describe('KL in the reward', () => {
  it('subtracts beta kl on unmasked tokens and reports the mean of row means', () => {
    const scores = fromRows([
      [0, 0, 1],
      [0, 2, 0],
    ]);
    const kl = fromRows([
      [0.2, 0.4, 0.6],
      [1.0, 3.0, 7.0],
    ]);
    const mask = fromRows([
      [1, 1, 1],
      [1, 1, 0],
    ]);
    const { rewards, currentKl } = applyKlPenalty(scores, kl, mask, 0.1);
    // row 0: [-0.02, -0.04, 1 - 0.06]; row 1: [-0.1, 2 - 0.3, 0 (masked, kl ignored)].
    expectAllClose(rewards.data, [-0.02, -0.04, 0.94, -0.1, 1.7, 0], 6);
    // row means: 1.2/3 = 0.4 and 4/2 = 2 -> batch 1.2.
    expect(currentKl).toBeCloseTo(1.2, 6);
  });
});

describe('KL controllers', () => {
  it('fixed never moves', () => {
    expect(updateKlController(fixedKlController(0.05), 100, 1000).value).toBe(0.05);
  });
  it('adaptive: beta x (1 + clip(KL/target - 1, -0.2, 0.2) n / horizon)', () => {
    const c = adaptiveKlController(0.1, 0.1, 10000);
    // KL 0.15: error 0.5 clipped to 0.2 -> x (1 + 0.2 x 100/10000) = 0.1002
    expect(updateKlController(c, 0.15, 100).value).toBeCloseTo(0.1002, 10);
    // KL 0.05: error -0.5 -> -0.2 -> 0.0998
    expect(updateKlController(c, 0.05, 100).value).toBeCloseTo(0.0998, 10);
    // KL 0.11: error 0.1 (inside the clip) -> 0.1 x 1.001 = 0.1001
    expect(updateKlController(c, 0.11, 100).value).toBeCloseTo(0.1001, 10);
    expect(c.value).toBe(0.1); // pure: the input state is unchanged
  });
  it('rejects a non-positive target', () => {
    expect(() => adaptiveKlController(0.1, 0, 10)).toThrow(/target > 0/);
  });
});
