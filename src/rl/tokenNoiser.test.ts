import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { tokenNoiserHeadTerms, tokenNoiserLoss, tokenNoiserLossFromHidden, tokenNoiseWeights } from './tokenNoiser';
import { expectAllClose } from '../../dev/test/rlHelpers';

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
    const loss = tokenNoiserLoss(logp, tf.tensor2d([[0]], [1, 1], 'int32'), tf.ones([1, 1]), {
      raw: tf.tensor3d([[[0.3, 0.1, 0.3]]]),
    });
    expect(num(loss)).toBeCloseTo(0.7543664, 5);
  });
  it('flat noise and e = 0 reduces to the NLL; masked tokens do not count', () => {
    // tokens: p(target) 0.5 and 0.25 (masked). e = 0: ln 2.
    const logp = tf.log(
      tf.tensor3d([
        [
          [0.5, 0.25, 0.25],
          [0.25, 0.5, 0.25],
        ],
      ]),
    );
    const targets = tf.tensor2d([[0, 0]], [1, 2], 'int32');
    const mask = tf.tensor2d([[1, 0]]);
    expect(num(tokenNoiserLoss(logp, targets, mask, { epsilon: 0, kind: 'flat' }))).toBeCloseTo(Math.LN2, 6);
    // flat n = [0, 0.5, 0.5]: 0.9 ln 2 + 0.1 x ln 4 = 0.6238325 + 0.1386294
    expect(num(tokenNoiserLoss(logp, targets, mask, { kind: 'flat' }))).toBeCloseTo(0.7624619, 5);
  });
  it('gradient wrt logp is -w / (masked tokens)', () => {
    const logp = tf.log(tf.tensor3d([[[0.5, 0.2, 0.3]]]));
    const g = tf.grad((l: tf.Tensor) =>
      tokenNoiserLoss(l, tf.tensor2d([[0]], [1, 1], 'int32'), tf.ones([1, 1]), {
        raw: tf.tensor3d([[[0.3, 0.1, 0.3]]]),
      }),
    )(logp);
    // w = 0.9 onehot + 0.1 [0, 0.25, 0.75] = [0.9, 0.025, 0.075]
    expectAllClose(g.dataSync(), [-0.9, -0.025, -0.075], 6);
  });
  it('gradient through log_softmax matches central finite differences', () => {
    // B = 2, T = 2, V = 4; one token masked.
    const logits0 = [0.3, -1.2, 0.8, 0.1, 1.5, 0.2, -0.4, 0.0, -0.7, 0.9, 0.4, -0.2, 0.6, 0.6, -1.0, 0.3];
    const targets = tf.tensor2d(
      [
        [2, 0],
        [1, 3],
      ],
      [2, 2],
      'int32',
    );
    const mask = tf.tensor2d([
      [1, 1],
      [0, 1],
    ]);
    const raw = tf.randomUniform([2, 2, 4], 0, 1, 'float32', 11);
    const f = (z: tf.Tensor) => tokenNoiserLoss(tf.logSoftmax(z, -1), targets, mask, { raw, epsilon: 0.3 });
    const analytic = tf
      .grad(f)(tf.tensor3d(logits0, [2, 2, 4]))
      .dataSync();
    const h = 1e-2;
    for (let i = 0; i < logits0.length; i++) {
      const plus = logits0.slice();
      const minus = logits0.slice();
      plus[i] += h;
      minus[i] -= h;
      const fd =
        (tf.tidy(() => num(f(tf.tensor3d(plus, [2, 2, 4])))) - tf.tidy(() => num(f(tf.tensor3d(minus, [2, 2, 4]))))) /
        (2 * h);
      expect(Math.abs(analytic[i] - fd), `logit ${i}: analytic ${analytic[i]} vs fd ${fd}`).toBeLessThan(2e-3);
    }
    // the masked token (b 1, t 0 = logits 8..11) gets exactly no gradient
    expect(Array.from(analytic.slice(8, 12)).every((x) => x === 0)).toBe(true);
  });
  it('rejects epsilon outside [0, 1]', () => {
    expect(() =>
      tokenNoiserLoss(tf.zeros([1, 1, 2]), tf.tensor2d([[0]], [1, 1], 'int32'), tf.ones([1, 1]), { epsilon: 2 }),
    ).toThrow(/epsilon/);
  });
});

describe('TokenNoiser in hidden-row form (the planned step): -log p_t + e h.(W_t - n W) + e (b_t - n.b)', () => {
  // Two tokens, V = 4, H = 3: a hand-made head W [V, H], bias b, hidden rows h, targets 2 and 0,
  // raw noise rows (the target entry zeroed, then renormalised), e = 0.3; only token 0 masked in
  // for the value, both for the gradient.
  const W = [
    [0.5, -1.0, 0.2],
    [1.5, 0.3, -0.7],
    [-0.4, 0.8, 1.1],
    [0.0, -0.6, 0.9],
  ];
  const b = [0.1, -0.2, 0.05, 0.3];
  const h = [
    [0.7, -0.3, 1.2],
    [-1.1, 0.4, 0.6],
  ];
  const tgt = [2, 0];
  const raw = [
    [0.2, 0.5, 0.9, 0.3],
    [0.6, 0.1, 0.4, 0.8],
  ];
  const e = 0.3;

  /** float64: the TokenNoiser loss per token from the full log-softmax (the definition). */
  function reference64(): number[] {
    return h.map((hr, i) => {
      const z = W.map((w, v) => w.reduce((a, x, k) => a + x * hr[k], b[v]));
      const m = Math.max(...z);
      const lse = m + Math.log(z.reduce((a, x) => a + Math.exp(x - m), 0));
      const logp = z.map((x) => x - lse);
      const nr = raw[i].map((x, v) => (v === tgt[i] ? 0 : x));
      const s = nr.reduce((a, x) => a + x, 0);
      const n = nr.map((x) => x / s);
      return (1 - e) * -logp[tgt[i]] + e * n.reduce((a, nv, v) => a + nv * -logp[v], 0);
    });
  }

  const head = {
    weight: { matmul: (x: tf.Tensor2D) => tf.matMul(x, tf.tensor2d(W), false, true) as tf.Tensor2D, inFeatures: 3 },
    bias: tf.tensor1d(b),
  };
  const targets = tf.tensor2d([tgt], [1, 2], 'int32');
  const n = tokenNoiseWeights(targets, 4, { raw: tf.tensor3d([raw]) });
  const logpOf = (hh: tf.Tensor) =>
    tf.logSoftmax(tf.add(tf.matMul(tf.reshape(hh, [2, 3]), tf.tensor2d(W), false, true), tf.tensor1d(b)));

  it('equals the definition in float64 per token (a dropped n.z or bias term fails)', () => {
    const ref = reference64();
    expect(ref[0]).not.toBeCloseTo(ref[1], 2);
    const terms = tokenNoiserHeadTerms(head, targets, n);
    const hT = tf.tensor3d([h]);
    const logpT = tf.reshape(tf.sum(tf.mul(logpOf(hT), tf.oneHot(tf.tensor1d(tgt, 'int32'), 4)), -1), [1, 2]);
    for (const [mask, want] of [
      [[1, 0], ref[0]],
      [[0, 1], ref[1]],
      [[1, 1], (ref[0] + ref[1]) / 2],
    ] as const) {
      const got = num(
        tokenNoiserLossFromHidden(logpT, hT, terms, tf.tensor2d([mask as unknown as number[]]), { epsilon: e }),
      );
      expect(Math.abs(got - want)).toBeLessThan(1e-5);
    }
  });

  it("its gradient in h equals the full-vocabulary loss's (tfjs autodiff through log_softmax)", () => {
    const terms = tokenNoiserHeadTerms(head, targets, n);
    const mask = tf.tensor2d([[1, 1]]);
    const full = tf.grad((hh: tf.Tensor) =>
      tokenNoiserLoss(tf.reshape(logpOf(hh), [1, 2, 4]), targets, mask, { epsilon: e, weights: n }),
    )(tf.tensor3d([h]));
    const viaRows = tf.grad((hh: tf.Tensor) => {
      const logpT = tf.reshape(tf.sum(tf.mul(logpOf(hh), tf.oneHot(tf.tensor1d(tgt, 'int32'), 4)), -1), [1, 2]);
      return tokenNoiserLossFromHidden(logpT, hh, terms, mask, { epsilon: e });
    })(tf.tensor3d([h]));
    expect(Math.max(...Array.from(full.dataSync()).map(Math.abs))).toBeGreaterThan(1e-2);
    expectAllClose(viaRows.dataSync(), full.dataSync(), 5);
  });
});
