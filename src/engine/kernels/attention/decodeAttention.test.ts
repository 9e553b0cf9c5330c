import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { decodeAttention, decodeAttentionStock } from './decodeAttention';
import { attentionCaseData, decodeAttentionF64, type AttentionCaseSpec } from './decodeAttentionReference';

function tensors(c: AttentionCaseSpec) {
  const d = attentionCaseData(c);
  return {
    d,
    q: tf.tensor3d(d.q, [c.batch, c.heads, c.headDim]),
    k: tf.tensor4d(d.k, [c.batch, c.kvHeads, c.capacity, c.headDim]),
    v: tf.tensor4d(d.v, [c.batch, c.kvHeads, c.capacity, c.headDim]),
    bias: tf.tensor2d(d.bias, [c.batch, c.capacity]),
  };
}

describe('decodeAttention (stock path, CPU backend)', () => {
  const cases: AttentionCaseSpec[] = [
    { batch: 1, heads: 1, kvHeads: 1, capacity: 1, headDim: 4, len: 1, seed: 1 },
    { batch: 3, heads: 4, kvHeads: 2, capacity: 37, headDim: 24, len: 20, seed: 2 },
    { batch: 2, heads: 9, kvHeads: 3, capacity: 64, headDim: 64, len: 64, seed: 3 },
  ];
  for (const c of cases) {
    it(`matches the float64 loops for B${c.batch} H${c.heads}/${c.kvHeads} C${c.capacity} D${c.headDim} len ${c.len}`, async () => {
      const t = tensors(c);
      const out = decodeAttention(t.q, t.k, t.v, t.bias, c.len);
      expect(out.shape).toEqual([c.batch, c.heads, c.headDim]);
      const got = await out.data();
      const ref = decodeAttentionF64(c, t.d);
      let worst = 0;
      for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs(got[i] - ref[i]));
      expect(worst).toBeLessThan(1e-5);
      tf.dispose([t.q, t.k, t.v, t.bias, out]);
    });
  }

  it('a single real slot returns its value row exactly (softmax of one score is 1)', async () => {
    const q = tf.tensor3d([[[3, -2]]]);
    const k = tf.tensor4d([
      [
        [
          [1, 1],
          [5, 5],
        ],
      ],
    ]);
    const v = tf.tensor4d([
      [
        [
          [0.25, -4],
          [9, 9],
        ],
      ],
    ]);
    const bias = tf.tensor2d([[0, 0]]);
    // len 1: slot 1 holds data but is past the fill level, so it must not count.
    expect(Array.from(await decodeAttentionStock(q, k, v, bias, 1).data())).toEqual([0.25, -4]);
  });

  it('names the bad argument', () => {
    const q = tf.zeros([1, 3, 4]) as tf.Tensor3D;
    const k = tf.zeros([1, 2, 5, 4]) as tf.Tensor4D;
    expect(() => decodeAttention(q, k, k, tf.zeros([1, 5]) as tf.Tensor2D, 1)).toThrow(
      /3 query heads are not a multiple of 2/,
    );
    const q2 = tf.zeros([1, 2, 4]) as tf.Tensor3D;
    expect(() => decodeAttention(q2, k, k, tf.zeros([1, 5]) as tf.Tensor2D, 6)).toThrow(
      /len must be an integer in \[1, 5\]/,
    );
    expect(() => decodeAttention(q2, k, k, tf.zeros([1, 4]) as tf.Tensor2D, 1)).toThrow(/bias must be \[1, 5\]/);
  });
});
