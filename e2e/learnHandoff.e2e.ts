// The planned learning step without round trips, in Node + Dawn on SwiftShader: the per-token
// statistics and d loss / d stats stay on the GPU, the LoRA gradients stay in the plans' flat
// buffer (accumulated there over micro-batches) and the planned AdamW reads it in place, and a
// value loss sends its gradient into the adapters through the plan's backward. Counted per
// learnStep (readbacks, copies of gradients) and checked against tfjs autodiff and tfjs's learnStep.
import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { disposeLlama, type LlamaModel } from '../src/model/llama';
import { mulberry32 } from '../src/model/random';
import { policyStats, ValueHead } from '../src/rl/policy';
import { ppoClipLoss, valueLoss } from '../src/rl/policyLoss';
import { plannedGrads } from '../src/rl/plannedLearn';
import { plannedMicroBatches, type StatTensors } from '../src/model/planned/learnStep';
import { learnStep, type LearnBatch, type TrainerConfig } from '../src/rl/trainer';
import { AdamW } from '../src/rl/optim';
import { fromRows } from '../src/rl/types';
import { ADV, adapters, BATCH, OLD, TEMP, fixture as load } from './learnFixture';
import { useDawn } from './dawnSetup';
import { setEngineOptions } from '../src/engine/options';

const fixture = () => load('tiny-llama-f32');

useDawn(() => {
  setEngineOptions({ learnPath: 'planned', optimizerPath: 'planned' });
});

/** A value head with drawn weights (w = 0 would send no gradient into the hidden state). */
function head(model: LlamaModel): ValueHead {
  const h = new ValueHead(model.config.hiddenSize);
  const rand = mulberry32(5);
  h.w.assign(
    tf.tensor2d(
      Float32Array.from({ length: model.config.hiddenSize }, () => rand() * 2 - 1),
      [model.config.hiddenSize, 1],
    ),
  );
  return h;
}

const VALUES = [
  [0.1, 0.2, 0.3, 0.1],
  [0.0, -0.2, 0, 0],
  [0.4, 0.1, 0.2, 0.3],
];
const RETURNS = [
  [0.9, 0.7, 0.5, 0.4],
  [-0.8, -0.6, 0, 0],
  [0.2, 0.6, 0.3, 0.1],
];
const LEARN_BATCH: LearnBatch = {
  ...BATCH,
  oldLogp: fromRows(OLD),
  advantages: fromRows(ADV),
  refLogp: fromRows(OLD.map((r) => r.map((x) => x - 0.3))),
};

/** What one piece of work asks of WebGPU: readbacks, and copies into or out of a gradient buffer. */
async function countTransfers<T>(fn: () => Promise<T>): Promise<{ result: T; readbacks: number; gradCopies: number }> {
  const buf = GPUBuffer.prototype;
  const enc = GPUCommandEncoder.prototype;
  const map = buf.mapAsync;
  const copy = enc.copyBufferToBuffer;
  let readbacks = 0;
  let gradCopies = 0;
  // The learn plans' flat gradients ('learn:lora grads') and the planned AdamW's ('adamw:grads').
  const isGrads = (b: GPUBuffer) => b.label === 'learn:lora grads' || b.label === 'adamw:grads';
  buf.mapAsync = function (this: GPUBuffer, ...a: Parameters<typeof map>) {
    readbacks++;
    return map.apply(this, a);
  };
  enc.copyBufferToBuffer = function (this: GPUCommandEncoder, ...a: unknown[]) {
    if (isGrads(a[0] as GPUBuffer) || isGrads(a[2] as GPUBuffer)) gradCopies++;
    return (copy as (...x: unknown[]) => void).apply(this, a);
  } as typeof copy;
  try {
    return { result: await fn(), readbacks, gradCopies };
  } finally {
    buf.mapAsync = map;
    enc.copyBufferToBuffer = copy;
  }
}

describe('the planned learning step keeps its gradients on the GPU (Dawn, SwiftShader)', () => {
  for (const [name, config, passes] of [
    ['one micro-batch', { kl: { estimator: 'k3', coef: 0.05 }, entropyCoeff: 0.01, temperature: TEMP }, 1],
    [
      'micro-batches of 2 rows (2 + 1: two plans, one gradient buffer)',
      { kl: { estimator: 'k3', coef: 0.05 }, entropyCoeff: 0.01, microBatchSize: 2, temperature: TEMP },
      2,
    ],
    [
      'micro-batches of 1 row',
      { kl: { estimator: 'k3', coef: 0.05 }, entropyCoeff: 0.01, microBatchSize: 1, temperature: TEMP },
      3,
    ],
  ] as [string, TrainerConfig, number][]) {
    it(`${name}: per learnStep with the planned optimiser, 2 readbacks (metrics, the norm) and no copy of a gradient`, async () => {
      const model = fixture();
      const optimizer = new AdamW({ lr: 1e-3, eps: 1e-4 });
      try {
        const set = adapters(model);
        const step = () => learnStep({ model, lora: set, optimizer }, LEARN_BATCH, config);
        await step(); // warm-up: plans, the optimiser's flat state
        const n0 = plannedMicroBatches();
        const c = await countTransfers(step);
        expect(plannedMicroBatches() - n0).toBe(passes);
        expect(c.result['grad/skipped']).toBe(0);
        expect(c.result['grad/norm']).toBeGreaterThan(1e-3);
        // Was 4 readbacks per micro-batch (statistics; loss, d logp, d entropy) + 2, and a copy of
        // each of the 28 LoRA tensors' gradients per micro-batch (split out to tfjs) + 28 (gathered
        // back by the optimiser).
        expect(c.readbacks).toBe(2);
        expect(c.gradCopies).toBe(0);
      } finally {
        optimizer.dispose();
        disposeLlama(model);
      }
    });
  }

  it('with the tfjs optimiser (or a critic optimiser) the gradients come out once per step, one tensor per variable', async () => {
    const model = fixture();
    const optimizer = new AdamW({ lr: 1e-3, eps: 1e-4 });
    setEngineOptions({ optimizerPath: 'tfjs' });
    try {
      const set = adapters(model);
      const step = () =>
        learnStep({ model, lora: set, optimizer }, LEARN_BATCH, { temperature: TEMP, microBatchSize: 1 });
      await step();
      const c = await countTransfers(step);
      // One copy out per LoRA variable for the whole step (3 micro-batches accumulated on the GPU).
      expect(c.gradCopies).toBe(set.variables().length);
      // The metrics and tfjs's clip norm.
      expect(c.readbacks).toBe(2);
    } finally {
      setEngineOptions({ optimizerPath: 'planned' });
      optimizer.dispose();
      disposeLlama(model);
    }
  });
});

describe('learnStep on the planned path equals tfjs (Dawn, SwiftShader)', () => {
  const CASES: [string, TrainerConfig, 'planned' | 'tfjs', boolean, number][] = [
    [
      'micro-batches of 1 row, the tfjs optimiser',
      { kl: { estimator: 'k3', coef: 0.05 }, entropyCoeff: 0.01, microBatchSize: 1, temperature: TEMP },
      'tfjs',
      false,
      3,
    ],
    [
      'a value loss into the adapters (shared actor-critic), the planned optimiser',
      { temperature: TEMP, vfCoef: 0.5, valueGradToAdapters: true },
      'planned',
      true,
      1,
    ],
    [
      'a value loss into the adapters, micro-batches of 2 rows',
      { temperature: TEMP, vfCoef: 0.5, valueGradToAdapters: true, microBatchSize: 2 },
      'planned',
      true,
      2,
    ],
  ];
  for (const [name, config, optimizerPath, withHead, passes] of CASES) {
    it(`${name}: the same metrics and update of adapters${withHead ? ' and head' : ''} as tfjs's learnStep`, async () => {
      const batch: LearnBatch = withHead
        ? { ...LEARN_BATCH, values: fromRows(VALUES), returns: fromRows(RETURNS) }
        : LEARN_BATCH;
      const results: { metrics: Record<string, number>; params: Float32Array[]; before: Float32Array[] }[] = [];
      for (const path of ['tfjs', 'planned'] as const) {
        const model = fixture();
        const valueHead = withHead ? head(model) : undefined;
        const optimizer = new AdamW({ lr: 1e-3, eps: 1e-4 });
        try {
          const set = adapters(model);
          const trained = () =>
            Promise.all(
              [...set.variables(), ...(valueHead?.variables() ?? [])].map(async (v) =>
                Float32Array.from(await v.data()),
              ),
            );
          const before = await trained();
          setEngineOptions({ learnPath: path, optimizerPath: path === 'tfjs' ? 'tfjs' : optimizerPath });
          const n0 = plannedMicroBatches();
          const metrics = await learnStep({ model, lora: set, optimizer, valueHead }, batch, config);
          expect(plannedMicroBatches() - n0).toBe(path === 'planned' ? passes : 0);
          results.push({ metrics, params: await trained(), before });
        } finally {
          setEngineOptions({ learnPath: 'planned', optimizerPath: 'planned' });
          optimizer.dispose();
          valueHead?.dispose();
          disposeLlama(model);
        }
      }
      const [want, got] = results;
      expect(Object.keys(got.metrics).sort()).toEqual(Object.keys(want.metrics).sort());
      for (const k of Object.keys(want.metrics))
        expect(Math.abs(got.metrics[k] - want.metrics[k]), k).toBeLessThan(
          1e-5 * Math.max(1, Math.abs(want.metrics[k])),
        );
      if (withHead) expect(want.metrics['loss/value']).toBeGreaterThan(0.01);
      let worst = 0;
      let moved = 0;
      got.params.forEach((p, i) => {
        for (let j = 0; j < p.length; j++) {
          worst = Math.max(worst, Math.abs(p[j] - want.params[i][j]));
          moved = Math.max(moved, Math.abs(p[j] - got.before[i][j]));
        }
      });
      expect(moved).toBeGreaterThan(5e-4); // the step did move them (lr 1e-3)
      // eps 1e-4 (see learn.e2e.ts): AdamW's first step is smooth in g; a wrong gradient moves it by up to 2 lr.
      expect(worst).toBeLessThan(2e-6);
    });
  }
});

describe('a value loss into the adapters on the planned path (Dawn, SwiftShader)', () => {
  it('LoRA and value-head gradients of PPO clip + value loss within 1e-4 (relative) of tfjs autodiff, and the value term does reach the adapters', async () => {
    const model = fixture();
    const valueHead = head(model);
    try {
      const set = adapters(model);
      const mask = tf.tensor2d(BATCH.mask);
      const consts = {
        old: tf.tensor2d(OLD),
        adv: tf.tensor2d(ADV),
        ret: tf.tensor2d(RETURNS),
        vOld: tf.tensor2d(VALUES),
      };
      const loss = (s: StatTensors, vf: number): tf.Scalar => {
        const pg = ppoClipLoss({ logp: s.logp, oldLogp: consts.old, advantages: consts.adv, mask }).loss;
        const vl = valueLoss(valueHead.forward(s.hidden!), consts.ret, consts.vOld, mask, 0.5, 'token-mean');
        return tf.add(pg, tf.mul(vl.loss, vf));
      };
      const vars = [...set.variables(), ...valueHead.variables()];
      const tfjsGrads = async (vf: number) => {
        const { value, grads } = tf.variableGrads(
          () => loss(policyStats(model, BATCH, { temperature: TEMP, withHidden: true }), vf),
          vars,
        );
        value.dispose();
        const out = new Map<string, Float32Array>();
        for (const v of vars) out.set(v.name, (await grads[v.name].data()) as Float32Array);
        tf.dispose(Object.values(grads));
        return out;
      };
      const want = await tfjsGrads(2);
      const without = await tfjsGrads(0);
      const got = (await plannedGrads(
        model,
        set,
        BATCH,
        { temperature: TEMP, valueHead, valueGradToAdapters: true },
        (s) => loss(s, 2),
      ))!;
      expect(got).not.toBeNull();
      let worst = 0;
      let valueShare = 0;
      for (const v of vars) {
        const g = (await got.grads[v.name].data()) as Float32Array;
        const w = want.get(v.name)!;
        const wo = without.get(v.name)!;
        let num = 0;
        let den = 0;
        let diff = 0;
        for (let i = 0; i < w.length; i++) {
          num = Math.max(num, Math.abs(g[i] - w[i]));
          den = Math.max(den, Math.abs(w[i]));
          diff = Math.max(diff, Math.abs(w[i] - wo[i]));
        }
        worst = Math.max(worst, num / den);
        if (set.variables().includes(v as tf.Variable)) valueShare = Math.max(valueShare, diff / den);
      }
      tf.dispose([mask, ...Object.values(consts), ...Object.values(got.grads)]);
      // The value loss changes the adapters' gradients visibly (a plan ignoring d hidden would be off by that).
      expect(valueShare).toBeGreaterThan(1e-2);
      expect(worst).toBeLessThan(1e-4);
    } finally {
      valueHead.dispose();
      disposeLlama(model);
    }
  });
});
