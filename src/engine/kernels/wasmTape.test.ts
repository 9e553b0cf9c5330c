import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { afterAll, describe, expect, it } from 'vitest';
import { geglu, rmsNorm, rope, ropeHeads, swiglu } from '../index';
import { shareWasmIdentity } from '../wasmIdentity';
import { installWasmKernels, wasmLoraTaped } from './wasmGemm';
import { reachedByVariables, untaped, wasmTape } from './wasmTape';

// The taped ops of tfjs-wasm (closed-form backwards, the swap as a product) against the stock ops'
// autodiff on tfjs-cpu: values and every input's gradient, under a weighted sum so that no
// gradient is uniform.
shareWasmIdentity();
installWasmKernels();

const draw = (shape: number[], seed: number) => Array.from(tf.randomNormal(shape, 0, 1, 'float32', seed).dataSync());

/** The value and the gradients of the first `n` inputs (RoPE's cos and sin are constants of the model). */
function valueAndGrads(f: (...xs: tf.Tensor[]) => tf.Tensor, inputs: { shape: number[]; data: number[] }[], n: number) {
  return tf.tidy(() => {
    const xs = inputs.map((i) => tf.tensor(i.data, i.shape));
    const y0 = f(...xs);
    const w = tf.tensor(draw(y0.shape, 99), y0.shape);
    const rest = xs.slice(n);
    const { value, grads } = tf.valueAndGrads((...a: tf.Tensor[]) => tf.sum(tf.mul(f(...a, ...rest), w)))(
      xs.slice(0, n),
    );
    return [y0, value, ...grads].map((t) => Array.from(t.dataSync()));
  });
}

const cases: [string, (...xs: tf.Tensor[]) => tf.Tensor, number[][], number][] = [
  ['rmsNorm, rank 3', (x, w) => rmsNorm(x, w as tf.Tensor1D, 1e-5), [[2, 5, 16], [16]], 2],
  ['rmsNorm, rank 4 (q/k norms)', (x, w) => rmsNorm(x, w as tf.Tensor1D, 1e-6), [[2, 3, 5, 8], [8]], 2],
  [
    'rope',
    (x, c, s) => rope(x as tf.Tensor4D, c as tf.Tensor4D, s as tf.Tensor4D),
    [
      [2, 3, 5, 8],
      [2, 1, 5, 8],
      [2, 1, 5, 8],
    ],
    1,
  ],
  [
    'ropeHeads (a projection rows [B, L, n D], the heads split as they rotate)',
    (x, c, s) => ropeHeads(x, c as tf.Tensor4D, s as tf.Tensor4D, 3),
    [
      [2, 5, 24],
      [2, 1, 5, 8],
      [2, 1, 5, 8],
    ],
    1,
  ],
  [
    'swiglu',
    (g, u) => swiglu(g, u),
    [
      [2, 5, 12],
      [2, 5, 12],
    ],
    2,
  ],
  [
    'geglu',
    (g, u) => geglu(g, u),
    [
      [2, 5, 12],
      [2, 5, 12],
    ],
    2,
  ],
];

describe('taped ops on tfjs-wasm match the stock ops on tfjs-cpu', () => {
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  it.each(cases)('%s: value and gradients', async (_, f, shapes, n) => {
    await tf.setBackend('cpu');
    const inputs = shapes.map((shape, i) => ({ shape, data: draw(shape, 10 + i) }));
    const ref = valueAndGrads(f, inputs, n);
    await tf.setBackend('wasm');
    expect(tf.engine().state.gradientDepth).toBe(0);
    const got = valueAndGrads(f, inputs, n);
    expect(got).toHaveLength(ref.length);
    got.forEach((g, i) =>
      g.forEach((v, j) => expect(Math.abs(v - ref[i][j])).toBeLessThan(2e-5 * (1 + Math.abs(ref[i][j])))),
    );
  });

  it('ropeHeads: the heads split and rope in one kernel each way, bit for bit those of the transpose and rope', async () => {
    await tf.setBackend('wasm');
    const [B, L, n, D] = [2, 7, 3, 8];
    const inputs = [
      [B, L, n * D],
      [B, 1, L, D],
      [B, 1, L, D],
    ].map((shape, i) => ({ shape, data: draw(shape, 20 + i) }));
    const split = (x: tf.Tensor, c: tf.Tensor, s: tf.Tensor) =>
      rope(x.reshape([B, L, n, D]).transpose([0, 2, 1, 3]) as tf.Tensor4D, c as tf.Tensor4D, s as tf.Tensor4D);
    const fused = (x: tf.Tensor, c: tf.Tensor, s: tf.Tensor) => ropeHeads(x, c as tf.Tensor4D, s as tf.Tensor4D, n);
    const ref = valueAndGrads(split, inputs, 1);
    expect(valueAndGrads(fused, inputs, 1)).toEqual(ref);
    // outside a tape too, and as one kernel under it (no Reshape or Transpose either way)
    const [x, c, s] = inputs.map((i) => tf.tensor(i.data, i.shape));
    expect(Array.from(fused(x, c, s).dataSync())).toEqual(ref[0]);
    const names = async (f: typeof fused) =>
      (await tf.profile(() => tf.grad((v: tf.Tensor) => tf.sum(f(v, c, s)))(x))).kernels.map((k) => k.name);
    const [one, apart] = [await names(fused), await names(split)];
    expect(one.filter((k) => k === 'SparringWasmRope')).toHaveLength(2);
    expect(one.filter((k) => k === 'Transpose')).toEqual([]);
    const moves = (ks: string[]) => ks.filter((k) => k === 'Reshape' || k === 'Transpose').length;
    expect(moves(apart) - moves(one)).toBe(4); // the Reshape and Transpose each way (one Reshape is the sum's)
    tf.dispose([x, c, s]);
  });

  it('reachedByVariables: a variable and what a taped op makes of it, not a constant; true outside a tape', async () => {
    await tf.setBackend('wasm');
    const v = tf.variable(tf.ones([3]));
    const c = tf.ones([3]);
    expect(reachedByVariables(c)).toBe(true);
    const seen: boolean[] = [];
    tf.variableGrads(() => {
      const k = tf.mul(c, 2);
      const y = tf.add(k, v);
      seen.push(reachedByVariables(c), reachedByVariables(k), reachedByVariables(v), reachedByVariables(y));
      seen.push(reachedByVariables(tf.exp(y)), reachedByVariables(tf.exp(k)));
      return tf.sum(y);
    });
    expect(seen).toEqual([false, false, true, true, true, false]);
    tf.dispose([v, c]);
  });

  it('the taped LoRA projection on an x no variable reaches: dA and dB bit for bit, no input gradient', async () => {
    await tf.setBackend('wasm');
    const [N, inp, out, r] = [37, 24, 40, 4];
    const x = tf.tensor(draw([N, inp], 30), [N, inp]);
    const wt = tf.tensor2d(draw([inp, out], 31), [inp, out]);
    const a = tf.variable(tf.tensor2d(draw([r, inp], 32), [r, inp]));
    const b = tf.variable(tf.tensor2d(draw([out, r], 33), [out, r]));
    const w = tf.tensor(draw([N, out], 34), [N, out]);
    const zero = tf.variable(tf.zeros([inp]));
    // x + 0 v (the same values) makes x one that a variable reaches: the input gradient is computed
    const grads = async (reached: boolean) => {
      let bwd: tf.TensorInfo[] = [];
      const prof = await tf.profile(() => {
        const { value, grads } = tf.variableGrads(
          () => tf.sum(tf.mul(wasmLoraTaped(reached ? tf.add(x, tf.mul(zero, 0)) : x, wt, a, b, 2)!, w)),
          [a, b, zero],
        );
        bwd = [value, grads[a.name], grads[b.name]];
        return [];
      });
      const outs = prof.kernels.filter((k) => k.name === 'SparringWasmLoraBwd').map((k) => k.outputShapes.length);
      return { values: bwd.map((t) => Array.from((t as tf.Tensor).dataSync())), outs };
    };
    const [skip, full] = [await grads(false), await grads(true)];
    expect(skip.values).toEqual(full.values);
    expect(full.outs).toEqual([3]); // dx, dA, dB
    expect(skip.outs).toEqual([2]); // dA, dB
    tf.dispose([x, wt, a, b, w, zero]);
  });

  it('untaped: the same values, no tape node and no saved clone; the taped ops around it still differentiate', async () => {
    await tf.setBackend('wasm');
    const v = tf.variable(tf.tensor1d([0.5, -2, 3]));
    const tape = () => (tf.engine().state as unknown as { activeTape: unknown[] }).activeTape.length;
    let counts: number[] = [];
    let metric = 0;
    const { value, grads } = tf.variableGrads(() => {
      const y = tf.mul(v, v);
      const before = tape();
      const m = untaped(() => tf.sum(tf.exp(tf.mul(y, 0.5))));
      counts = [before, tape()];
      metric = m.dataSync()[0];
      return tf.sum(y) as tf.Scalar;
    });
    expect(counts[1]).toBe(counts[0]);
    expect(metric).toBeCloseTo(Math.exp(0.125) + Math.exp(2) + Math.exp(4.5), 4);
    expect(value.dataSync()[0]).toBeCloseTo(13.25, 5);
    expect(Array.from(grads[v.name].dataSync())).toEqual([1, -4, 6]);
    const { kernels } = await tf.profile(() =>
      untaped(() => tf.variableGrads(() => tf.sum(tf.mul(v, v)) as tf.Scalar)),
    );
    expect(kernels.map((k) => k.name)).toContain('Multiply'); // a gradient inside untaped still records
    tf.dispose([v, value, ...Object.values(grads)]);
  });

  it('runs only where a tape records on wasm', async () => {
    await tf.setBackend('wasm');
    expect(wasmTape()).toBe(false);
    let inside = false;
    tf.grad((x: tf.Tensor) => ((inside = wasmTape()), tf.sum(x)))(tf.scalar(1));
    expect(inside).toBe(true);
  });
});
