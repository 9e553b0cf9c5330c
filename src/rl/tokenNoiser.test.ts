import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { tokenNoiserLoss, tokenNoiseWeights } from './tokenNoiser';
import { expectAllClose } from './testHelpers';

const num = (t: tf.Tensor) => t.dataSync()[0];

describe('TokenNoiser weights', () => {
  it('zero the target and renormalise', () => {
    // raw [0.3, 0.1, 0.3], target 0 -> [0, 0.1, 0.3] / 0.4 = [0, 0.25, 0.75]
    const w = tokenNoiseWeights(tf.tensor2d([[0]], [1, 1], 'int32'), 3, { raw: tf.tensor3d([[[0.3, 0.1, 0.3]]]) });
    expectAllClose(w.dataSync(), [0, 0.25, 0.75], 6);
  });
  it('random noise: seeded, rows sum to 1, target entry 0', () => {
    const targets = tf.tensor2d([[2, 0, 4]], [1, 3], 'int32');
    const a = tokenNoiseWeights(targets, 5, { seed: 7 });
    const b = tokenNoiseWeights(targets, 5, { seed: 7 });
    expect(Array.from(a.dataSync())).toEqual(Array.from(b.dataSync()));
    expectAllClose(tf.sum(a, -1).dataSync(), [1, 1, 1], 5);
    const d = a.arraySync() as number[][][];
    expect([d[0][0][2], d[0][1][0], d[0][2][4]]).toEqual([0, 0, 0]);
  });
});

describe('TokenNoiser loss', () => {
  it('(1 - e) NLL + e sum n (-log p), worked by hand', () => {
    // p = [0.5, 0.2, 0.3], target 0, n = [0, 0.25, 0.75], e = 0.1:
    // 0.9 x ln 2 = 0.6238325; 0.1 x (0.25 x 1.6094379 + 0.75 x 1.2039728) = 0.1 x 1.3053391 = 0.1305339
    const logp = tf.log(tf.tensor3d([[[0.5, 0.2, 0.3]]]));
    const loss = tokenNoiserLoss(logp, tf.tensor2d([[0]], [1, 1], 'int32'), tf.ones([1, 1]), { raw: tf.tensor3d([[[0.3, 0.1, 0.3]]]) });
    expect(num(loss)).toBeCloseTo(0.7543664, 5);
  });
  it('flat noise and e = 0 reduces to the NLL; masked tokens do not count', () => {
    // tokens: p(target) 0.5 and 0.25 (masked). e = 0: ln 2.
    const logp = tf.log(tf.tensor3d([[[0.5, 0.25, 0.25], [0.25, 0.5, 0.25]]]));
    const targets = tf.tensor2d([[0, 0]], [1, 2], 'int32');
    const mask = tf.tensor2d([[1, 0]]);
    expect(num(tokenNoiserLoss(logp, targets, mask, { epsilon: 0, kind: 'flat' }))).toBeCloseTo(Math.LN2, 6);
    // flat n = [0, 0.5, 0.5]: 0.9 ln 2 + 0.1 x ln 4 = 0.6238325 + 0.1386294
    expect(num(tokenNoiserLoss(logp, targets, mask, { kind: 'flat' }))).toBeCloseTo(0.7624619, 5);
  });
  it('gradient wrt logp is -w / (masked tokens)', () => {
    const logp = tf.log(tf.tensor3d([[[0.5, 0.2, 0.3]]]));
    const g = tf.grad((l: tf.Tensor) =>
      tokenNoiserLoss(l, tf.tensor2d([[0]], [1, 1], 'int32'), tf.ones([1, 1]), { raw: tf.tensor3d([[[0.3, 0.1, 0.3]]]) }),
    )(logp);
    // w = 0.9 onehot + 0.1 [0, 0.25, 0.75] = [0.9, 0.025, 0.075]
    expectAllClose(g.dataSync(), [-0.9, -0.025, -0.075], 6);
  });
  it('gradient through log_softmax matches central finite differences', () => {
    // B = 2, T = 2, V = 4; one token masked.
    const logits0 = [0.3, -1.2, 0.8, 0.1, 1.5, 0.2, -0.4, 0.0, -0.7, 0.9, 0.4, -0.2, 0.6, 0.6, -1.0, 0.3];
    const targets = tf.tensor2d([[2, 0], [1, 3]], [2, 2], 'int32');
    const mask = tf.tensor2d([[1, 1], [0, 1]]);
    const raw = tf.randomUniform([2, 2, 4], 0, 1, 'float32', 11);
    const f = (z: tf.Tensor) => tokenNoiserLoss(tf.logSoftmax(z, -1), targets, mask, { raw, epsilon: 0.3 });
    const analytic = tf.grad(f)(tf.tensor3d(logits0, [2, 2, 4])).dataSync();
    const h = 1e-2;
    for (let i = 0; i < logits0.length; i++) {
      const plus = logits0.slice();
      const minus = logits0.slice();
      plus[i] += h;
      minus[i] -= h;
      const fd = (tf.tidy(() => num(f(tf.tensor3d(plus, [2, 2, 4])))) - tf.tidy(() => num(f(tf.tensor3d(minus, [2, 2, 4]))))) / (2 * h);
      expect(Math.abs(analytic[i] - fd), `logit ${i}: analytic ${analytic[i]} vs fd ${fd}`).toBeLessThan(2e-3);
    }
    // the masked token (b 1, t 0 = logits 8..11) gets exactly no gradient
    expect(Array.from(analytic.slice(8, 12)).every((x) => x === 0)).toBe(true);
  });
  it('rejects epsilon outside [0, 1]', () => {
    expect(() => tokenNoiserLoss(tf.zeros([1, 1, 2]), tf.tensor2d([[0]], [1, 1], 'int32'), tf.ones([1, 1]), { epsilon: 2 })).toThrow(/epsilon/);
  });
});
