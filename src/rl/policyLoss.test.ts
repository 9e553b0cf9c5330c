import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { actorLoss, computePolicyLoss, entropyFromLogits, importanceRatio, ppoClipLoss, valueLoss } from './policyLoss';
import { expectAllClose } from '../../dev/test/rlHelpers';

const num = (t: tf.Tensor) => t.dataSync()[0];

// Five tokens, old logp 0, logp = ln(ratio): ratio [1.5, 0.5, 0.5, 1.5, 5], A [1, -1, 1, -1, -1], eps 0.2, c 3.
// t0 A=+1 r=1.5: max(-1.5, -1.2) = -1.2 (clipped)
// t1 A=-1 r=0.5: max(0.5, 0.8) = 0.8 (clipped); dual min(0.8, 3) = 0.8
// t2 A=+1 r=0.5: max(-0.5, -0.8) = -0.5 (unclipped: pessimistic)
// t3 A=-1 r=1.5: max(1.5, 1.2) = 1.5; dual min(1.5, 3) = 1.5
// t4 A=-1 r=5:   max(5, 1.2) = 5; dual min(5, 3) = 3
const ratios = [1.5, 0.5, 0.5, 1.5, 5];
const adv = [1, -1, 1, -1, -1];
const input = () => ({
  logp: tf.tensor2d([ratios.map(Math.log)]),
  oldLogp: tf.zeros([1, 5]),
  advantages: tf.tensor2d([adv]),
  mask: tf.ones([1, 5]),
});

describe('ratio', () => {
  it('exp(clamp(logp - old, -20, 20))', () => {
    const r = importanceRatio(tf.tensor1d([Math.log(2), 50, -50]), tf.zeros([3]));
    expectAllClose(
      Array.from(r.dataSync()).map((x, i) => (i === 0 ? x : Math.log(x))),
      [2, 20, -20],
      4,
    );
  });
});

describe('PPO clipped surrogate (vanilla)', () => {
  it('per-token losses, token-mean, clipfrac and dual-clip fraction', () => {
    const out = ppoClipLoss(input());
    expectAllClose(out.perToken.dataSync(), [-1.2, 0.8, -0.5, 1.5, 3], 5);
    // (-1.2 + 0.8 - 0.5 + 1.5 + 3) / 5 = 3.6 / 5
    expect(num(out.loss)).toBeCloseTo(0.72, 5);
    // l2 > l1 at t0 (-1.2 > -1.5) and t1 (0.8 > 0.5): 2/5. Dual clip bound only t4: 1/5.
    expect(num(out.clipFrac)).toBeCloseTo(0.4, 6);
    expect(num(out.clipFracLower)).toBeCloseTo(0.2, 6);
    // ppo_kl = mean(old - logp) = -(ln1.5 + ln.5 + ln.5 + ln1.5 + ln5)/5 = -(0.81093 - 1.38629 + 1.60944)/5 = -0.206816
    expect(num(out.approxKl)).toBeCloseTo(-0.206816, 5);
  });

  it('clip-higher: eps_high 0.28 lets t0 rise to 1.28', () => {
    const out = ppoClipLoss(input(), { clipRatioHigh: 0.28 });
    expect(out.perToken.dataSync()[0]).toBeCloseTo(-1.28, 5);
  });

  it('gradient flows only through unclipped tokens', () => {
    const i = input();
    const g = tf.grad((l: tf.Tensor) => ppoClipLoss({ ...i, logp: l }).loss)(i.logp);
    // unclipped L = -A r, dL/dlogp = -A r, / 5 tokens: t2 -0.5/5 = -0.1, t3 1.5/5 = 0.3; clipped ones 0.
    expectAllClose(g.dataSync(), [0, 0, -0.1, 0.3, 0], 6);
  });

  it('ratios far outside the clip range stay finite with zero gradient', () => {
    const logp = tf.tensor2d([[60, 60, -60]]);
    const i = { logp, oldLogp: tf.zeros([1, 3]), advantages: tf.tensor2d([[1, -1, 1]]), mask: tf.ones([1, 3]) };
    const out = ppoClipLoss(i);
    // A=+1, r=e^20: max(-4.85e8, -1.2) = -1.2. A=-1, r=e^20: min(4.85e8, 3) = 3. A=+1, r=e^-20: max(-2e-9, -0.8) ~ 0.
    expectAllClose(out.perToken.dataSync(), [-1.2, 3, 0], 5);
    const g = tf.grad((l: tf.Tensor) => ppoClipLoss({ ...i, logp: l }).loss)(logp);
    expect(Array.from(g.dataSync()).every((x) => Number.isFinite(x) && Math.abs(x) < 1e-6)).toBe(true);
  });

  it('rejects c <= 1', () => expect(() => ppoClipLoss(input(), { clipRatioC: 1 })).toThrow(/> 1/));
});

describe('importance_sampling (Tinker)', () => {
  it('-sum r A with no clip and no normalisation', () => {
    const out = computePolicyLoss('importance_sampling', input());
    // -(1.5 - 0.5 + 0.5 - 1.5 - 5) = 5
    expect(num(out.loss)).toBeCloseTo(5, 5);
    expectAllClose(out.perToken.dataSync(), [-1.5, 0.5, -0.5, 1.5, 5], 5);
  });
  it('on-policy (old = logp as a constant) the gradient is -A per token', () => {
    const logp = tf.tensor2d([[-1, -2]]);
    const old = tf.tensor2d([[-1, -2]]); // a separate constant: passing logp itself would cancel the gradient
    const g = tf.grad(
      (l: tf.Tensor) =>
        computePolicyLoss('importance_sampling', {
          logp: l,
          oldLogp: old,
          advantages: tf.tensor2d([[2, -3]]),
          mask: tf.tensor2d([[1, 0]]),
        }).loss,
    )(logp);
    // ratio 1, d(-rA)/dlogp = -A; masked token 0.
    expectAllClose(g.dataSync(), [-2, 0], 6);
  });
});

describe('value loss', () => {
  it('0.5 x token-mean of max(unclipped, clipped) squared errors', () => {
    // (V, V_old, R): (1.0, 0.0, 0.5): clip 0.5 -> max(0.25, 0) = 0.25
    //                (2.0, 1.8, 1.0): clip 2.0 -> max(1, 1) = 1
    //                (0.2, 1.0, 0.0): clip 0.5 -> max(0.04, 0.25) = 0.25 (clipped term larger)
    const { loss, clipFrac } = valueLoss(
      tf.tensor2d([[1, 2, 0.2]]),
      tf.tensor2d([[0.5, 1, 0]]),
      tf.tensor2d([[0, 1.8, 1]]),
      tf.ones([1, 3]),
    );
    expect(num(loss)).toBeCloseTo(0.5 * (1.5 / 3), 6);
    expect(num(clipFrac)).toBeCloseTo(1 / 3, 6);
  });
});

describe('entropy', () => {
  it('logits [0, ln 3] -> p = [1/4, 3/4], H = 0.25 ln 4 + 0.75 ln(4/3); uniform over 4 -> ln 4', () => {
    const h = entropyFromLogits(
      tf.tensor2d([
        [0, Math.log(3), -1e9, -1e9],
        [1, 1, 1, 1],
      ]),
    );
    expectAllClose(h.dataSync(), [0.25 * Math.log(4) + 0.75 * Math.log(4 / 3), Math.log(4)], 5);
  });

  it('actor loss = pg - coeff agg(H) + klLossCoef agg(kl)', () => {
    const mask = tf.tensor2d([[1, 1, 0]]);
    const loss = actorLoss({
      pgLoss: tf.scalar(1),
      mask,
      entropy: tf.tensor2d([[2, 4, 100]]),
      entropyCoeff: 0.01,
      kl: tf.tensor2d([[0.5, 1.5, 100]]),
      klLossCoef: 0.1,
    });
    // 1 - 0.01 x 3 + 0.1 x 1 = 1.07
    expect(num(loss)).toBeCloseTo(1.07, 6);
  });
});
