import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { afterAll, describe, expect, it } from 'vitest';
import { shareWasmIdentity } from './wasmIdentity';

describe('the wasm Identity shares its input (shareWasmIdentity)', () => {
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  // A product, a norm-like chain and a softmax: every op saves inputs or outputs for its backward.
  const lossAndGrads = () => {
    const x = tf.randomNormal([6, 8], 0, 1, 'float32', 1);
    const w = tf.variable(tf.randomNormal([8, 5], 0, 1, 'float32', 2), true, `w${Math.random()}`);
    const { value, grads } = tf.variableGrads(() => {
      const h = tf.matMul(x, w);
      const n = h.mul(h.square().mean(-1, true).add(1e-5).rsqrt());
      return tf.logSoftmax(n).mul(tf.sigmoid(n)).sum() as tf.Scalar;
    }, [w]);
    const out = [value.dataSync()[0], Array.from(grads[w.name].dataSync())] as const;
    tf.dispose([x, w, value, grads[w.name]]);
    return out;
  };

  it('gives the stock kernels gradients, copies no data, and a clone outlives its source', async () => {
    await tf.setBackend('wasm');
    const [v0, g0] = lossAndGrads();
    shareWasmIdentity();
    shareWasmIdentity(); // idempotent
    const [v1, g1] = lossAndGrads();
    expect(v1).toBe(v0);
    expect(g1).toEqual(g0);
    const be = tf.backend() as unknown as { refCount(id: object): number };
    const a = tf.tensor1d([1, 2, 3]);
    const b = tf.clone(a);
    expect(b.dataId).toBe(a.dataId);
    expect(be.refCount(a.dataId)).toBe(2);
    a.dispose();
    expect(Array.from(b.dataSync())).toEqual([1, 2, 3]);
    b.dispose();
  });
});
