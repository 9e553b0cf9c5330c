import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { swiglu } from './swiglu';
import { kvWrite } from '../kv-cache/kvWrite';
import { blockCaseData, kvWriteF64, swigluF64, type BlockCaseSpec } from './fusedBlockReference';

const worst = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let m = 0;
  for (let i = 0; i < b.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};

describe('swiglu and kvWrite (stock path, CPU backend) against float64', () => {
  const c: BlockCaseSpec = { n: 101, batch: 2, heads: 3, capacity: 9, headDim: 5, len: 2, start: 4, seed: 5 };
  const d = blockCaseData(c);

  it('swiglu forward and both gradients', async () => {
    const ref = swigluF64(d);
    const g = tf.tensor1d(d.g);
    const u = tf.tensor1d(d.u);
    const dy = tf.tensor1d(d.dy);
    expect(worst(await swiglu(g, u).data(), ref.y)).toBeLessThan(1e-5);
    const [dg, du] = tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.mul(swiglu(a, b), dy)))([g, u]);
    expect(worst(await dg.data(), ref.dg)).toBeLessThan(1e-5);
    expect(worst(await du.data(), ref.du)).toBeLessThan(1e-5);
  });

  it('kvWrite replaces exactly the new slots', async () => {
    const cache = tf.tensor4d(d.cache, [c.batch, c.heads, c.capacity, c.headDim]);
    const fresh = tf.tensor4d(d.fresh, [c.batch, c.heads, c.len, c.headDim]);
    expect(worst(await kvWrite(cache, fresh, c.start).data(), kvWriteF64(c, d))).toBe(0);
    expect(() => kvWrite(cache, fresh, 8)).toThrow(/slots 8\.\.10 do not fit the cache capacity 9/);
  });
});
