import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { rmsNorm } from './rmsNorm';
import { rope } from '../rope/rope';
import { NORM_EPS, normCaseData, rmsNormF64, ropeF64, type NormCaseSpec } from './fusedNormReference';

const worst = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let m = 0;
  for (let i = 0; i < b.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};

describe('rmsNorm and rope (stock path, CPU backend) against float64 closed forms', () => {
  const c: NormCaseSpec = { rows: 5, hidden: 37, batch: 2, heads: 3, len: 4, headDim: 6, seed: 3 };
  const d = normCaseData(c);

  it('rmsNorm forward and both gradients', async () => {
    const ref = rmsNormF64(c, d);
    const x = tf.tensor2d(d.x, [c.rows, c.hidden]);
    const w = tf.tensor1d(d.w);
    const dy = tf.tensor2d(d.dy, [c.rows, c.hidden]);
    expect(worst(await rmsNorm(x, w, NORM_EPS).data(), ref.y)).toBeLessThan(1e-5);
    const [gx, gw] = tf.grads((a: tf.Tensor, b: tf.Tensor) =>
      tf.sum(tf.mul(rmsNorm(a, b as tf.Tensor1D, NORM_EPS), dy)),
    )([x, w]);
    expect(worst(await gx.data(), ref.dx)).toBeLessThan(1e-5);
    expect(worst(await gw.data(), ref.dw)).toBeLessThan(1e-4);
  });

  it('rope forward and gradient', async () => {
    const ref = ropeF64(c, d);
    const shape: [number, number, number, number] = [c.batch, c.heads, c.len, c.headDim];
    const pos: [number, number, number, number] = [c.batch, 1, c.len, c.headDim];
    const q = tf.tensor4d(d.q, shape);
    const cos = tf.tensor4d(d.cos, pos);
    const sin = tf.tensor4d(d.sin, pos);
    expect(worst(await rope(q, cos, sin).data(), ref.y)).toBeLessThan(1e-6);
    const dq = tf.tensor4d(d.dq, shape);
    const g = tf.grad((a: tf.Tensor) => tf.sum(tf.mul(rope(a as tf.Tensor4D, cos, sin), dq)))(q);
    expect(worst(await g.data(), ref.dx)).toBeLessThan(1e-6);
  });

  it('names a mismatched weight or position table', () => {
    expect(() => rmsNorm(tf.zeros([2, 4]), tf.zeros([5]) as tf.Tensor1D, 1e-5)).toThrow(
      /weight \[5\] does not match the last axis of x \[2,4\]/,
    );
    const q = tf.zeros([1, 2, 3, 4]) as tf.Tensor4D;
    expect(() => rope(q, tf.zeros([1, 1, 2, 4]) as tf.Tensor4D, tf.zeros([1, 1, 3, 4]) as tf.Tensor4D)).toThrow(
      /cos and sin must be \[1,1,3,4\]/,
    );
  });
});
