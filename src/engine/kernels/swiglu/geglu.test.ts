import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { geglu } from './geglu';
import { gegluCase } from './gegluReference';

describe('geglu (stock path, CPU backend) against float64', () => {
  it('forward and both gradients, large gates included', async () => {
    const d = gegluCase(257, 3);
    const g = tf.tensor1d(d.g);
    const u = tf.tensor1d(d.u);
    const dy = tf.tensor1d(d.dy);
    const worst = (a: ArrayLike<number>, b: ArrayLike<number>) =>
      Math.max(...Array.from(b, (v, i) => Math.abs(a[i] - v) / Math.max(1, Math.abs(v))));
    expect(worst(await geglu(g, u).data(), d.y)).toBeLessThan(1e-5);
    const [dg, du] = tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.mul(geglu(a, b), dy)))([g, u]);
    expect(worst(await dg.data(), d.dg)).toBeLessThan(1e-5);
    expect(worst(await du.data(), d.du)).toBeLessThan(1e-5);
    expect(() => geglu(g, u.slice(0, 3))).toThrow(/gate \[257\] and up \[3\] differ/);
  });
});
