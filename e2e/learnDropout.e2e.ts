// LoRA dropout on the planned learning step (src/engine/plan/learnPlan.ts), Node + Dawn on
// SwiftShader: the plan takes each adapter's mask as the tfjs path draws it (LoraAdapter's seeded
// stream and call counter), so its statistics and LoRA gradients equal tfjs autodiff with the same
// masks, learnStep gives the same update on both paths, and the counters advance alike.
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { startDawn } from '../src/cli/node/dawn';
import { webgpuDevice } from '../src/engine/kernels/wgslProgram';
import { parseModelConfig } from '../src/model/config';
import { disposeLlama, loadLlama, type LlamaModel, type LoadOptions, type ProjName } from '../src/model/llama';
import { attachLora, type LoraConfig, type LoraSet } from '../src/model/lora';
import { plannedLearnForward } from '../src/model/plannedLearn';
import { learnStepBuffers } from '../src/model/learnMemory';
import { int4Quantizer } from '../src/model/quant';
import { parseSafetensors } from '../src/model/safetensors';
import { mulberry32 } from '../src/model/random';
import { packSequences, policyStats, type ResponseBatch } from '../src/rl/policy';
import { ppoClipLoss } from '../src/rl/policyLoss';
import { lossGradsAt, plannedMicroBatches, setLearnPath, type StatTensors } from '../src/rl/plannedLearn';
import { learnStep, type LearnBatch } from '../src/rl/trainer';
import { AdamW } from '../src/rl/optim';
import { fromRows } from '../src/rl/types';

const gpuErrors: string[] = [];
beforeAll(async () => {
  await startDawn({ swiftshader: true });
  webgpuDevice().addEventListener('uncapturederror', (e) => gpuErrors.push((e as GPUUncapturedErrorEvent).error.message));
});
afterAll(() => {
  setLearnPath('planned');
  expect(gpuErrors).toEqual([]);
});

const ALL: ProjName[] = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'];

function fixture(opts: LoadOptions = {}): LlamaModel {
  const dir = resolve('..', 'shared', 'fixtures', 'tiny-llama-f32');
  return loadLlama(parseModelConfig(readFileSync(resolve(dir, 'config.json'), 'utf8')), parseSafetensors(new Uint8Array(readFileSync(resolve(dir, 'model.safetensors')))), opts);
}

/** Adapters with B drawn too (B = 0 would make dA vanish and hide a wrong mask in it). */
function adapters(model: LlamaModel, cfg: Partial<LoraConfig> = {}): LoraSet {
  const set = attachLora(model, { r: 4, alpha: 8, targets: ALL, seed: 3, dropout: 0.1, ...cfg });
  const rand = mulberry32(11);
  for (const a of set.adapters) a.B.assign(tf.tensor2d(Float32Array.from({ length: a.B.size }, () => (rand() * 2 - 1) * 0.2), a.B.shape as [number, number]));
  return set;
}

// Prompts of 3, 5 and 2 tokens (left padding; the plan pads to 8 columns), 4 response tokens.
const BATCH: ResponseBatch = {
  prompts: [[5, 9, 17], [3, 44, 12, 8, 30], [61, 2]],
  responses: [[7, 21, 33, 4], [50, 6, 0, 0], [13, 13, 40, 9]],
  mask: [[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 1]],
};
const B = 3;
const T = 4;
const TEMP = 0.7;
const OLD = [[-3.1, -2.0, -4.2, -3.3], [-2.5, -3.9, 0, 0], [-4.0, -1.2, -3.0, -2.2]];
const ADV = [[0.8, 0.8, 0.8, 0.8], [-1.1, -1.1, -1.1, -1.1], [0.3, 0.3, 0.3, 0.3]];

const loss = (s: StatTensors): tf.Scalar => ppoClipLoss({ logp: s.logp, oldLogp: tf.tensor2d(OLD), advantages: tf.tensor2d(ADV), mask: tf.tensor2d(BATCH.mask) }).loss;
const counters = (set: LoraSet) => set.adapters.map((a) => a.calls);
const setCounters = (set: LoraSet, c: number[]) => set.adapters.forEach((a, i) => (a.calls = c[i]));

/** max |a - b| / max |b| per variable. */
function relErrors(flat: Float32Array, want: Float32Array[]): number[] {
  let at = 0;
  return want.map((g) => {
    let num = 0;
    let den = 0;
    for (let i = 0; i < g.length; i++) {
      num = Math.max(num, Math.abs(flat[at + i] - g[i]));
      den = Math.max(den, Math.abs(g[i]));
    }
    at += g.length;
    return num / den;
  });
}

/**
 * tfjs autodiff of the loss with the adapters' next masks, then the planned forward and backward
 * with the counters wound back (so it draws the same masks); the statistics' and gradients' errors.
 */
async function compareWithDropout(model: LlamaModel, set: LoraSet): Promise<{ stats: number; rel: number[]; calls: number[][]; tfGrads: Float32Array[]; flat: Float32Array }> {
  set.training = true;
  const c0 = counters(set);
  const vars = set.variables();
  let kept: tf.Tensor[] = [];
  const { value, grads } = tf.variableGrads(() => {
    const s = policyStats(model, BATCH, { temperature: TEMP });
    kept = [tf.keep(s.logp), tf.keep(s.entropy)];
    return loss(s);
  }, vars);
  const want = { logp: (await kept[0].data()) as Float32Array, entropy: (await kept[1].data()) as Float32Array };
  tf.dispose(kept);
  const tfGrads = await Promise.all(vars.map(async (v) => (await grads[v.name].data()) as Float32Array));
  const cTf = counters(set);
  setCounters(set, c0);
  const got = await plannedLearnForward(model, set, packSequences(BATCH), TEMP);
  if (!got) throw new Error('the planned forward was refused');
  const cPlan = counters(set);
  set.training = false;
  let stats = 0;
  for (let i = 0; i < B * T; i++) stats = Math.max(stats, Math.abs(got.logp[i] - want.logp[i]), Math.abs(got.entropy[i] - want.entropy[i]));
  const lg = await lossGradsAt(got.logp, got.entropy, B, T, loss);
  got.plan.backward(lg.dlogp, lg.dentropy);
  const flat = await got.plan.readGrads();
  tf.dispose([value, ...Object.values(grads)]);
  return { stats, rel: relErrors(flat, tfGrads), calls: [c0, cTf, cPlan], tfGrads, flat };
}

describe('LoRA dropout on the planned learning step (Dawn, SwiftShader)', () => {
  for (const [name, opts] of [['f32', {}], ['int4', { quantize: int4Quantizer(16) }]] as const) {
    it(`${name} base, dropout 0.1 on every projection: statistics and gradients equal tfjs autodiff with the same masks, counters advance alike`, async () => {
      const model = fixture(opts);
      try {
        const set = adapters(model);
        // Past zero, as after some steps of a resumed run.
        setCounters(set, set.adapters.map((_, i) => 3 + i));
        const c = await compareWithDropout(model, set);
        const [c0, cTf, cPlan] = c.calls;
        expect(cTf).toEqual(c0.map((n) => n + 1));
        expect(cPlan).toEqual(cTf);
        expect(c.stats).toBeLessThan(1e-4);
        expect(Math.max(...c.rel)).toBeLessThan(1e-4);
        // The masks matter: without dropout (not training) the planned gradient is far from these.
        const plain = await plannedLearnForward(model, set, packSequences(BATCH), TEMP);
        const lg = await lossGradsAt(plain!.logp, plain!.entropy, B, T, loss);
        plain!.plan.backward(lg.dlogp, lg.dentropy);
        expect(counters(set)).toEqual(cPlan);
        expect(Math.max(...relErrors(await plain!.plan.readGrads(), c.tfGrads))).toBeGreaterThan(1e-2);
      } finally {
        disposeLlama(model);
      }
    });
  }

  it('the learn-memory planner lists a dropout plan\'s buffers to the byte (q and v of layer 1)', async () => {
    const model = fixture();
    try {
      const set = adapters(model, { targets: ['q', 'v', 'down'], layers: [1] });
      set.training = true;
      const f = await plannedLearnForward(model, set, packSequences(BATCH), TEMP);
      expect(f!.plan.dropout).toBe(true);
      const shape = { promptLen: 8, responseLen: T };
      const lora = { r: 4, targets: ['q', 'v', 'down'] as ProjName[], layers: [1] };
      expect(learnStepBuffers(model.config, { ...lora, dropout: true }, shape, B).reduce((a, b) => a + b.bytes * b.count, 0)).toBe(f!.plan.plan.bytes);
      expect(learnStepBuffers(model.config, lora, shape, B).reduce((a, b) => a + b.bytes * b.count, 0)).toBeLessThan(f!.plan.plan.bytes);
    } finally {
      disposeLlama(model);
    }
  });

  it('learnStep with dropout 0.1 in micro-batches of 2: the same metrics, update and dropout counters on the planned path as on tfjs', async () => {
    const batch: LearnBatch = { ...BATCH, oldLogp: fromRows(OLD), advantages: fromRows(ADV), refLogp: fromRows(OLD.map((r) => r.map((x) => x - 0.3))) };
    const results: { metrics: Record<string, number>; params: Float32Array[]; calls: number[]; passes: number }[] = [];
    for (const path of ['tfjs', 'planned'] as const) {
      const model = fixture();
      try {
        const set = adapters(model);
        setLearnPath(path);
        const n0 = plannedMicroBatches();
        const opt = new AdamW({ lr: 1e-3, eps: 1e-4 });
        const metrics: Record<string, number>[] = [];
        // Two steps: the second draws from counters the first advanced.
        for (let k = 0; k < 2; k++) metrics.push(await learnStep({ model, lora: set, optimizer: opt }, batch, { kl: { estimator: 'k3', coef: 0.05 }, entropyCoeff: 0.01, microBatchSize: 2, temperature: TEMP }));
        results.push({ metrics: metrics[1], params: await Promise.all(set.variables().map(async (v) => (await v.data()) as Float32Array)), calls: counters(set), passes: plannedMicroBatches() - n0 });
      } finally {
        setLearnPath('planned');
        disposeLlama(model);
      }
    }
    const [want, got] = results;
    expect([want.passes, got.passes]).toEqual([0, 4]);
    expect(want.calls).toEqual(want.calls.map(() => 4));
    expect(got.calls).toEqual(want.calls);
    for (const k of Object.keys(want.metrics)) expect(Math.abs(got.metrics[k] - want.metrics[k]), k).toBeLessThan(1e-5 * Math.max(1, Math.abs(want.metrics[k])));
    expect(want.metrics['grad/norm']).toBeGreaterThan(1e-3);
    let worst = 0;
    got.params.forEach((p, i) => p.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - want.params[i][j])))));
    expect(worst).toBeLessThan(2e-6);
  });
});
