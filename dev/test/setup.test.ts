import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';

describe('unit-test harness', () => {
  it('runs on the tfjs CPU backend', () => {
    expect(tf.getBackend()).toBe('cpu');
    // log-sum-exp of [0, ln 3] is ln 4, worked by hand.
    const lse = tf.logSumExp(tf.tensor1d([0, Math.log(3)])).dataSync()[0];
    expect(lse).toBeCloseTo(Math.log(4), 6);
  });
});
