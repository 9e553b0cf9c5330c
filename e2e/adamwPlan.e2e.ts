// The planned AdamW (src/engine/plan/adamwPlan.ts) in Node + Dawn on SwiftShader, step for step
// against src/rl/optim.ts's tfjs AdamW with learnStep's clipping and skip rule, on the same
// parameters and gradients: clipping on and off, weight decay, an lr warm-up, NaN and Inf
// gradients (skips), and a checkpoint at step k reproducing step k + 1 exactly.
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { startDawn } from '../src/cli/node/dawn';
import { webgpuDevice } from '../src/engine/webgpu/wgslProgram';
import { AdamWPlan } from '../src/engine/plan/adamwPlan';
import { mulberry32 } from '../src/model/random';
import { AdamW, clipByGlobalNorm } from '../src/rl/optim';

const gpuErrors: string[] = [];
beforeAll(async () => {
  await startDawn({ swiftshader: true });
  webgpuDevice().addEventListener('uncapturederror', (e) =>
    gpuErrors.push((e as GPUUncapturedErrorEvent).error.message),
  );
});

// c has more elements than the norm's 256 x 256 threads: its first pass strides twice.
const TENSORS = [
  { name: 'a', shape: [8, 37] },
  { name: 'b', shape: [300, 8] },
  { name: 'c', shape: [70_000] },
];
const size = (shape: number[]) => shape.reduce((x, y) => x * y, 1);
const N = TENSORS.reduce((s, t) => s + size(t.shape), 0);

function randoms(seed: number, n: number, scale: number): Float32Array {
  const r = mulberry32(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (2 * r() - 1) * scale;
  return out;
}

/** Gradients of step k, flat: scale picks clipping on (large) or off (small); `bad` plants one NaN / Inf. */
function gradsOf(k: number, scale: number, bad?: number): Float32Array {
  const g = randoms(1000 + k, N, scale);
  if (bad !== undefined) g[300 + 17 * k] = bad;
  return g;
}

const split = (flat: Float32Array) => {
  let at = 0;
  const out: Record<string, Float32Array> = {};
  for (const t of TENSORS) {
    out[t.name] = flat.slice(at, at + size(t.shape));
    at += size(t.shape);
  }
  return out;
};

/** The tfjs reference: clipByGlobalNorm, the skip on a non-finite norm, AdamW.applyGradients (as learnStep). */
class Reference {
  readonly opt: AdamW;
  readonly vars: Record<string, tf.Variable> = {};
  constructor(params: Float32Array, cfg: { lr: number; weightDecay: number; beta2?: number }) {
    this.opt = new AdamW(cfg);
    const p = split(params);
    for (const t of TENSORS)
      this.vars[t.name] = tf.variable(tf.tensor(p[t.name], t.shape), true, `ref/${t.name}/${Math.random()}`);
  }
  async step(flatGrads: Float32Array, lr: number, maxNorm: number): Promise<{ norm: number; skipped: boolean }> {
    const g = split(flatGrads);
    const grads: tf.NamedTensorMap = {};
    for (const t of TENSORS) grads[t.name] = tf.tensor(g[t.name], t.shape);
    const clipped = clipByGlobalNorm(grads, maxNorm);
    const norm = (await clipped.norm.data())[0];
    const skipped = !Number.isFinite(norm);
    if (!skipped) this.opt.applyGradients(this.vars, clipped.grads, lr);
    tf.dispose([...Object.values(grads), ...Object.values(clipped.grads), clipped.norm]);
    return { norm, skipped };
  }
  async params(): Promise<Float32Array> {
    const parts = await Promise.all(TENSORS.map((t) => this.vars[t.name].data() as Promise<Float32Array>));
    const out = new Float32Array(N);
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
  dispose(): void {
    this.opt.dispose();
    tf.dispose(Object.values(this.vars));
  }
}

/** Largest |got - want| relative to max(|want|, floor): the floor keeps entries that are ~0 from dividing by nothing. */
function relErr(got: Float32Array, want: Float32Array, floor: number): number {
  let worst = 0;
  for (let i = 0; i < want.length; i++)
    worst = Math.max(worst, Math.abs(got[i] - want[i]) / Math.max(Math.abs(want[i]), floor));
  return worst;
}

// Six steps: lr warm-up over three, clipping off then on, a NaN step and an Inf step (skipped).
const SCHEDULE = [
  { lr: 1e-3 / 3, scale: 1e-4 }, // norm ~0.015: no clipping
  { lr: 2e-3 / 3, scale: 0.05 }, // norm ~7.5: clipped to 1
  { lr: 1e-3, scale: 0.05, bad: NaN },
  { lr: 1e-3, scale: 1e-4 },
  { lr: 1e-3, scale: 0.05, bad: Infinity },
  { lr: 1e-3, scale: 0.02 },
];
const MAX_NORM = 1;
const CFG = { lr: 1e-3, weightDecay: 0.1, beta2: 0.95 };

describe('planned AdamW on Dawn (SwiftShader) against the tfjs AdamW', () => {
  it('matches step for step within 1e-6 relative: warm-up, clipping on and off, weight decay, NaN / Inf skips', async () => {
    const device = webgpuDevice();
    const init = randoms(7, N, 0.1);
    const plan = new AdamWPlan(device, TENSORS, CFG);
    const ref = new Reference(init, CFG);
    try {
      plan.write('params', init);
      expect(plan.dispatches).toBe(3);
      const norms: number[] = [];
      for (const [k, s] of SCHEDULE.entries()) {
        const g = gradsOf(k, s.scale, s.bad);
        plan.write('grads', g);
        const got = await plan.stepOnce(s.lr, MAX_NORM);
        const want = await ref.step(g, s.lr, MAX_NORM);
        expect(got.skipped, `step ${k}`).toBe(want.skipped);
        expect(got.skipped, `step ${k}`).toBe(s.bad !== undefined);
        norms.push(want.norm);
        if (!want.skipped) expect(Math.abs(got.norm - want.norm) / want.norm, `norm of step ${k}`).toBeLessThan(1e-6);
        else expect(Number.isFinite(got.norm)).toBe(false);
        expect(plan.step, `step count after step ${k}`).toBe(ref.opt.step);
        expect(relErr(await plan.read('params'), await ref.params(), 1e-3), `params after step ${k}`).toBeLessThan(
          1e-6,
        );
      }
      // Clipping was both off and on.
      expect(norms.filter((x) => x < MAX_NORM).length).toBe(2);
      expect(norms.filter((x) => Number.isFinite(x) && x > MAX_NORM).length).toBe(2);
      expect(plan.step).toBe(4);
      const mine = await plan.exportState();
      const theirs = await ref.opt.exportState();
      expect(mine.step).toBe(theirs.step);
      for (const t of TENSORS) {
        expect(relErr(mine.moments[t.name].m, theirs.moments[t.name].m, 1e-6), `m of ${t.name}`).toBeLessThan(1e-6);
        expect(relErr(mine.moments[t.name].v, theirs.moments[t.name].v, 1e-9), `v of ${t.name}`).toBeLessThan(1e-6);
      }
      expect(gpuErrors).toEqual([]);
    } finally {
      plan.dispose();
      ref.dispose();
    }
  });

  it('a skipped step changes nothing: parameters, moments and step count are bit for bit as before', async () => {
    const device = webgpuDevice();
    const plan = new AdamWPlan(device, TENSORS, CFG);
    try {
      plan.write('params', randoms(3, N, 0.1));
      plan.write('grads', gradsOf(0, 0.05));
      await plan.stepOnce(1e-3, MAX_NORM);
      const before = { p: await plan.read('params'), m: await plan.read('m'), v: await plan.read('v') };
      plan.write('grads', gradsOf(1, 0.05, NaN));
      expect((await plan.stepOnce(1e-3, MAX_NORM)).skipped).toBe(true);
      // A finite gradient with a skip asked for (learnStep's non-finite loss) is skipped too.
      plan.write('grads', gradsOf(2, 0.05));
      const forced = await plan.stepOnce(1e-3, MAX_NORM, true);
      expect(forced.skipped).toBe(true);
      expect(Number.isFinite(forced.norm)).toBe(true);
      expect(plan.step).toBe(1);
      expect(await plan.read('params')).toEqual(before.p);
      expect(await plan.read('m')).toEqual(before.m);
      expect(await plan.read('v')).toEqual(before.v);
    } finally {
      plan.dispose();
    }
  });

  it('a checkpoint at step k reproduces step k + 1 exactly; the tfjs optimiser state imports too', async () => {
    const device = webgpuDevice();
    const a = new AdamWPlan(device, TENSORS, CFG);
    const b = new AdamWPlan(device, TENSORS, CFG);
    const c = new AdamWPlan(device, TENSORS, CFG);
    const ref = new Reference(randoms(11, N, 0.1), CFG);
    try {
      a.write('params', randoms(11, N, 0.1));
      for (let k = 0; k < 3; k++) {
        a.write('grads', gradsOf(k, 0.05));
        await a.stepOnce(1e-3, MAX_NORM);
        await ref.step(gradsOf(k, 0.05), 1e-3, MAX_NORM);
      }
      // Round-trip through the checkpoint's plain-data form (structured clone, as IndexedDB stores it).
      const saved = structuredClone(await a.exportState());
      b.importState(saved);
      b.write('params', await a.read('params'));
      const g = gradsOf(3, 0.05);
      for (const p of [a, b]) {
        p.write('grads', g);
        await p.stepOnce(1e-3, MAX_NORM);
      }
      expect(b.step).toBe(4);
      expect(await b.read('params')).toEqual(await a.read('params'));
      expect(await b.read('m')).toEqual(await a.read('m'));
      expect(await b.read('v')).toEqual(await a.read('v'));
      // The tfjs optimiser's export is the same format: continue its run on the GPU.
      c.importState(await ref.opt.exportState());
      c.write('params', await ref.params());
      c.write('grads', g);
      await c.stepOnce(1e-3, MAX_NORM);
      await ref.step(g, 1e-3, MAX_NORM);
      expect(c.step).toBe(ref.opt.step);
      expect(relErr(await c.read('params'), await ref.params(), 1e-3)).toBeLessThan(1e-6);
    } finally {
      a.dispose();
      b.dispose();
      c.dispose();
      ref.dispose();
    }
  });

  it('the norm of 4 million gradients is within 1e-6 of a float64 sum (compensated per thread, then a tree)', async () => {
    const n = 1 << 22;
    const g = randoms(5, n, 1e-2);
    g[12345] = 3; // one large entry among many small ones
    let sq = 0;
    for (let i = 0; i < n; i++) sq += g[i] * g[i];
    const plan = new AdamWPlan(webgpuDevice(), [{ name: 'big', shape: [n] }], CFG);
    try {
      plan.write('grads', g);
      const r = await plan.stepOnce(1e-3, MAX_NORM);
      expect(r.skipped).toBe(false);
      expect(Math.abs(r.norm - Math.sqrt(sq)) / Math.sqrt(sq)).toBeLessThan(1e-6);
    } finally {
      plan.dispose();
    }
  });

  it('reads a gradient buffer another plan owns in place, with the same result as its own', async () => {
    const device = webgpuDevice();
    const ext = device.createBuffer({
      size: N * 4,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
    });
    const own = new AdamWPlan(device, TENSORS, CFG);
    const shared = new AdamWPlan(device, TENSORS, CFG, { grads: ext });
    try {
      expect(shared.grads).toBe(ext);
      const init = randoms(9, N, 0.1);
      own.write('params', init);
      shared.write('params', init);
      for (let k = 0; k < 2; k++) {
        own.write('grads', gradsOf(k, 0.05));
        device.queue.writeBuffer(ext, 0, gradsOf(k, 0.05));
        await own.stepOnce(1e-3, MAX_NORM);
        await shared.stepOnce(1e-3, MAX_NORM);
      }
      expect(await shared.read('params')).toEqual(await own.read('params'));
      const small = device.createBuffer({ size: 64, usage: GPUBufferUsage.STORAGE });
      expect(() => new AdamWPlan(device, TENSORS, CFG, { grads: small })).toThrow(
        /has 64 bytes, 72696 parameters need 290784/,
      );
      small.destroy();
    } finally {
      own.dispose();
      shared.dispose();
      ext.destroy();
    }
  });

  it('refuses a state that does not fit, leaving its own unchanged', async () => {
    const plan = new AdamWPlan(webgpuDevice(), TENSORS, CFG);
    try {
      const bad = { step: 2, moments: { a: { shape: [8, 36], m: new Float32Array(288), v: new Float32Array(288) } } };
      expect(() => plan.importState(bad)).toThrow(/moments of "a" have shape \[8,36\], the tensor is \[8,37\]/);
      expect(() =>
        plan.importState({ step: 1, moments: { zz: { shape: [1], m: new Float32Array(1), v: new Float32Array(1) } } }),
      ).toThrow(/"zz"/);
      expect(plan.step).toBe(0);
    } finally {
      plan.dispose();
    }
  });

  it('creates no GPU buffer after construction: steps, skips and state exports reuse its own', async () => {
    const device = webgpuDevice();
    const plan = new AdamWPlan(device, TENSORS, CFG);
    const create = device.createBuffer.bind(device);
    let made = 0;
    device.createBuffer = (d: GPUBufferDescriptor) => {
      made++;
      return create(d);
    };
    try {
      for (const [k, s] of SCHEDULE.entries()) {
        plan.write('grads', gradsOf(k, s.scale, s.bad));
        await plan.stepOnce(s.lr, MAX_NORM);
      }
      await plan.exportState();
      expect(made).toBe(0);
    } finally {
      device.createBuffer = create;
      plan.dispose();
    }
  });
});
