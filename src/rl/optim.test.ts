import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { describe, expect, it } from 'vitest';
import { installWasmKernels } from '../engine';
import { AdamW, adamwOnHost, clipByGlobalNorm } from './optim';
import { expectAllClose } from '../../dev/test/rlHelpers';

describe('global grad-norm clipping', () => {
  it('norm sqrt(3^2 + 4^2) = 5; max 1 scales by 1/5', () => {
    const { grads, norm } = clipByGlobalNorm({ a: tf.tensor1d([3]), b: tf.tensor2d([[0, 4]]) }, 1);
    expect(norm.dataSync()[0]).toBeCloseTo(5, 6);
    expectAllClose(grads.a.dataSync(), [0.6], 5);
    expectAllClose(grads.b.dataSync(), [0, 0.8], 5);
  });
  it('below the limit the gradients are unchanged', () => {
    const { grads } = clipByGlobalNorm({ a: tf.tensor1d([3]), b: tf.tensor1d([4]) }, 10);
    expectAllClose([grads.a.dataSync()[0], grads.b.dataSync()[0]], [3, 4], 5);
  });
});

describe('global grad-norm clipping on the host (the CPU backends)', () => {
  it('gives the op-by-op norm and gradients on tfjs-cpu bit for bit, NaN included', () => {
    const grads = { a: tf.randomNormal([6, 7], 0, 1, 'float32', 3), b: tf.scalar(-2.5) };
    for (const max of [1, 100]) {
      const ops = clipByGlobalNorm(grads, max, false);
      const host = clipByGlobalNorm(grads, max, true);
      // Bit for bit on tfjs-cpu (the recipes' byte-identical reports depend on it).
      expect(host.norm.dataSync()[0]).toBe(ops.norm.dataSync()[0]);
      for (const n of ['a', 'b'] as const) expect(host.grads[n].dataSync()).toEqual(ops.grads[n].dataSync());
    }
    const bad = clipByGlobalNorm({ a: tf.tensor1d([1, NaN]) }, 1, true);
    expect(bad.norm.dataSync()[0]).toBeNaN();
  });
  it("on tfjs-wasm reads the gradients in place and scales them in kernels of ours, tfjs-cpu's values bit for bit", async () => {
    const draw = () => ({ a: tf.randomNormal([6, 7], 0, 1, 'float32', 3), b: tf.scalar(-2.5) });
    const read = (c: { grads: tf.NamedTensorMap; norm: tf.Scalar }) => [
      c.norm.dataSync()[0],
      ...['a', 'b'].map((n) => Array.from(c.grads[n].dataSync())),
    ];
    const want = [1, 100].map((max) => read(clipByGlobalNorm(draw(), max, false)));
    installWasmKernels();
    await tf.setBackend('wasm');
    try {
      const p = await tf.profile(() => {
        clipByGlobalNorm(draw(), 1, true);
        return [];
      });
      expect(p.kernels.filter((k) => k.name === 'SparringWasmScale')).toHaveLength(2);
      expect([1, 100].map((max) => read(clipByGlobalNorm(draw(), max, true)))).toEqual(want);
      expect(clipByGlobalNorm({ a: tf.tensor1d([1, NaN]) }, 1, true).norm.dataSync()[0]).toBeNaN();
    } finally {
      await tf.setBackend('cpu');
    }
  });
});

describe('AdamW', () => {
  const cfg = { lr: 0.1, weightDecay: 0.1 };
  it('two steps worked by hand (torch AdamW)', () => {
    const p = tf.variable(tf.scalar(1));
    const opt = new AdamW(cfg);
    // step 1, g 0.5: decay 1 x (1 - 0.01) = 0.99; m 0.05, v 0.00025; m^ 0.5, v^ 0.25 -> 0.99 - 0.1 x 0.5/0.5 = 0.89
    opt.applyGradients({ p }, { p: tf.scalar(0.5) });
    expect(p.dataSync()[0]).toBeCloseTo(0.89, 6);
    // step 2, g -0.5: decay 0.89 x 0.99 = 0.8811; m = 0.045 - 0.05 = -0.005, m^ = -0.005/0.19 = -0.0263158;
    // v = 0.00024975 + 0.00025 = 0.00049975, v^ = /0.001999 = 0.25 -> + 0.1 x 0.0263158/0.5 = 0.0052632 -> 0.8863632
    opt.applyGradients({ p }, { p: tf.scalar(-0.5) });
    expect(p.dataSync()[0]).toBeCloseTo(0.8863632, 5);
    expect(opt.step).toBe(2);
  });

  // tfjs variable names must be globally unique, so the record key (not Variable.name) is the identity.
  it('state saved and restored by name continues exactly, whatever the variable order', async () => {
    const make = () => ({ a: tf.variable(tf.tensor1d([1, -2])), b: tf.variable(tf.scalar(3)) });
    const g1 = { a: tf.tensor1d([0.1, 0.2]), b: tf.scalar(-0.3) };
    const g2 = { a: tf.tensor1d([-0.4, 0.5]), b: tf.scalar(0.6) };

    const ref = make();
    const o1 = new AdamW(cfg);
    o1.applyGradients(ref, g1);
    const saved = await o1.exportState();
    const snapshot = { a: Array.from(ref.a.dataSync()), b: Array.from(ref.b.dataSync()) };
    o1.applyGradients(ref, g2);

    // a fresh optimiser, variables at the step-1 values, passed in the other order
    const copy = make();
    copy.a.assign(tf.tensor1d(snapshot.a));
    copy.b.assign(tf.scalar(snapshot.b[0]));
    const o2 = new AdamW(cfg);
    o2.importState(saved);
    o2.applyGradients({ b: copy.b, a: copy.a }, { b: g2.b, a: g2.a });

    expect(Array.from(copy.a.dataSync())).toEqual(Array.from(ref.a.dataSync()));
    expect(Array.from(copy.b.dataSync())).toEqual(Array.from(ref.b.dataSync()));
    expect(o2.step).toBe(2);
    // and a restart without the state would have differed (bias correction restarts at t = 1)
    const fresh = make();
    fresh.a.assign(tf.tensor1d(snapshot.a));
    new AdamW(cfg).applyGradients({ a: fresh.a }, { a: g2.a });
    expect(Array.from(fresh.a.dataSync())).not.toEqual(Array.from(ref.a.dataSync()));
  });

  it('names a gradient with no variable, and a shape change', () => {
    const opt = new AdamW(cfg);
    expect(() => opt.applyGradients({}, { ghost: tf.scalar(1) })).toThrow(/"ghost"/);
    opt.applyGradients({ w: tf.variable(tf.zeros([2])) }, { w: tf.ones([2]) });
    expect(() => opt.applyGradients({ w: tf.variable(tf.zeros([3])) }, { w: tf.ones([3]) })).toThrow(/changed shape/);
  });

  it('importState of a bad state throws and keeps the moments it had (built first, old ones disposed after)', async () => {
    const opt = new AdamW(cfg);
    opt.applyGradients({ w: tf.variable(tf.zeros([2])) }, { w: tf.tensor1d([1, -2]) });
    const before = await opt.exportState();
    // m = (1 - 0.9) g = [0.1, -0.2]: the hand-worked first moment.
    expectAllClose(before.moments.w.m, [0.1, -0.2], 6);
    const bad = {
      step: 3,
      moments: {
        w: { shape: [2], m: new Float32Array(2), v: new Float32Array(2) },
        u: { shape: [2, 2], m: new Float32Array(3), v: new Float32Array(4) },
      },
    };
    expect(() => opt.importState(bad)).toThrow(/moments of "u" hold 3 and 4 values, shape \[2,2\] needs 4/);
    expect(() => opt.importState({ step: -1, moments: {} })).toThrow(/step must be a non-negative integer, got -1/);
    expect(await opt.exportState()).toEqual(before);
    expect(opt.step).toBe(1);
  });
});

describe('AdamW on the host (the CPU backends)', () => {
  // Four steps of three variables with drawn gradients, op by op and on the host, same backend.
  const run = (onHost: boolean) => {
    const vars = { a: tf.variable(tf.randomNormal([4, 5], 0, 1, 'float32', 1)), b: tf.variable(tf.scalar(0.3)) };
    const opt = new AdamW({ lr: 0.05, weightDecay: 0.1 });
    for (let s = 0; s < 4; s++) {
      const grads = { a: tf.randomNormal([4, 5], 0, 1, 'float32', 10 + s), b: tf.scalar(s % 2 ? -0.2 : 0.7) };
      opt.applyGradients(vars, grads, 0.05 * (1 + s), onHost);
      tf.dispose(Object.values(grads));
    }
    const out = [vars.a, vars.b].map((v) => Array.from(v.dataSync()));
    tf.dispose([vars.a, vars.b]);
    opt.dispose();
    return out;
  };

  it('is the default there and gives the op-by-op values bit for bit on tfjs-cpu', () => {
    expect(tf.getBackend()).toBe('cpu');
    expect(adamwOnHost()).toBe(true);
    expect(adamwOnHost('webgpu')).toBe(false);
    const ops = run(false);
    expect(run(true)).toEqual(ops);
    expect(ops[1][0]).not.toBeCloseTo(0.3, 2); // it moved
  });
  it("on tfjs-wasm runs one kernel of ours per variable, tfjs-cpu's op-by-op values bit for bit", async () => {
    const ops = run(false);
    installWasmKernels();
    await tf.setBackend('wasm');
    try {
      const p = await tf.profile(() => {
        run(true);
        return [];
      });
      expect(p.kernels.filter((k) => k.name === 'SparringWasmAdamW')).toHaveLength(8); // 4 steps, 2 variables
      expect(run(true)).toEqual(ops);
    } finally {
      await tf.setBackend('cpu');
    }
  });
});

describe("AdamW moments held elsewhere (the planned GPU optimiser's hook)", () => {
  it('hands over only the named moments, exports both parts, takes them back for a tfjs update', async () => {
    const opt = new AdamW({ lr: 0.1, weightDecay: 0 });
    const a = tf.variable(tf.tensor1d([1, 2]), true, 'held/a');
    const b = tf.variable(tf.tensor1d([3]), true, 'held/b');
    try {
      opt.applyGradients({ 'held/a': a, 'held/b': b }, { 'held/a': tf.tensor1d([1, 1]), 'held/b': tf.tensor1d([2]) });
      // After one step m = 0.1 g, v = 0.001 g^2.
      let disposed = 0;
      const holder = {
        exportMoments: async () => ({
          'held/a': { shape: [2], m: Float32Array.from([7, 7]), v: Float32Array.from([8, 8]) },
        }),
        takeBack: () => ({ 'held/a': { m: tf.tensor1d([7, 7]), v: tf.tensor1d([8, 8]) } }),
        dispose: () => void disposed++,
      };
      const given = opt.handOver(holder, new Set(['held/a']));
      expect([...given.keys()]).toEqual(['held/a']);
      expectAllClose(given.get('held/a')!.m.dataSync(), [0.1, 0.1], 6);
      tf.dispose([given.get('held/a')!.m, given.get('held/a')!.v]);
      opt.countStep();
      const st = await opt.exportState();
      expect(st.step).toBe(2);
      expect(Object.keys(st.moments).sort()).toEqual(['held/a', 'held/b']);
      expect(Array.from(st.moments['held/a'].m)).toEqual([7, 7]);
      expectAllClose(st.moments['held/b'].m, [0.2], 6);
      // A tfjs update takes the moments back first: m_a = 0.9 x 7 + 0.1 x 0 = 6.3.
      opt.applyGradients({ 'held/a': a }, { 'held/a': tf.tensor1d([0, 0]) });
      expect(opt.momentHolder).toBeNull();
      expect(disposed).toBe(1);
      expectAllClose((await opt.exportState()).moments['held/a'].m, [6.3, 6.3], 5);
      expect(() => opt.countStep()).toThrow(/moment holder/);
    } finally {
      opt.dispose();
      tf.dispose([a, b]);
    }
  });
});
