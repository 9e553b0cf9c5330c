// LoRA dropout on the planned learning step (src/engine/plan/learnPlan.ts), Node + Dawn on
// SwiftShader: the plan takes each adapter's mask as the tfjs path draws it (LoraAdapter's seeded
// stream and call counter), so its statistics and LoRA gradients equal tfjs autodiff with the same
// masks, learnStep gives the same update on both paths, and the counters advance alike.
import { describe, expect, it } from 'vitest';
import { resolve } from 'node:path';
import { disposeLlama, type LlamaModel, type LoadOptions, type ProjName } from '../src/model/llama';
import type { LoraConfig, LoraSet } from '../src/model/lora';
import { plannedLearnForward } from '../src/model/planned/learn';
import { learnStepBuffers } from '../src/contract/learnMemory';
import { int4Quantizer } from '../src/model/quant';
import { packSequences } from '../src/rl/policy';
import { plannedMicroBatches } from '../src/model/planned/learnStep';
import { learnStep, type LearnBatch } from '../src/rl/trainer';
import { AdamW } from '../src/rl/optim';
import { fromRows } from '../src/rl/types';
import { nodeRecipeEnv } from '../src/cli/recipe-env';
import { createRun } from '../src/recipes/registry';
import { letterJudge, loadWithCharCodec, stableReport } from '../dev/test/recipeTesting';
import {
  ADV,
  B,
  BATCH,
  adapters as drawnAdapters,
  maxAbs,
  OLD,
  plannedPgGrads,
  relErrors,
  T,
  TEMP,
  tfjsPgGrads,
  fixture as load,
} from './learnFixture';
import { useDawn } from './dawnSetup';
import { setEngineOptions } from '../src/engine/options';

useDawn(() => {
  setEngineOptions({ learnPath: 'planned' });
});

/** Adapters with dropout 0.1 unless asked otherwise. */
const adapters = (model: LlamaModel, cfg: Partial<LoraConfig> = {}): LoraSet =>
  drawnAdapters(model, { dropout: 0.1, ...cfg });
const fixture = (opts: LoadOptions = {}) => load('tiny-llama-f32', opts);

const counters = (set: LoraSet) => set.adapters.map((a) => a.calls);
const setCounters = (set: LoraSet, c: number[]) => set.adapters.forEach((a, i) => (a.calls = c[i]));

/**
 * tfjs autodiff of the loss with the adapters' next masks, then the planned forward and backward
 * with the counters wound back (so it draws the same masks); the statistics' and gradients' errors.
 */
async function compareWithDropout(
  model: LlamaModel,
  set: LoraSet,
): Promise<{ stats: number; rel: number[]; calls: number[][]; tfGrads: Float32Array[] }> {
  set.training = true;
  const c0 = counters(set);
  const want = await tfjsPgGrads(model, set);
  const cTf = counters(set);
  setCounters(set, c0);
  const got = await plannedPgGrads(model, set);
  const cPlan = counters(set);
  set.training = false;
  return {
    stats: Math.max(maxAbs(got.logp, want.logp), maxAbs(got.entropy, want.entropy)),
    rel: relErrors(got.flat, want.grads),
    calls: [c0, cTf, cPlan],
    tfGrads: want.grads,
  };
}

describe('LoRA dropout on the planned learning step (Dawn, SwiftShader)', () => {
  for (const [name, opts, groupBytes] of [
    ['f32', {}, 64 * 2 ** 20],
    ['int4 (each mask drawn and packed alone)', { quantize: int4Quantizer(16) }, 1],
  ] as const) {
    it(`${name} base, dropout 0.1 on every projection: statistics and gradients equal tfjs autodiff with the same masks, counters advance alike`, async () => {
      const model = fixture(opts);
      setEngineOptions({ dropoutMaskGroupBytes: groupBytes });
      try {
        const set = adapters(model);
        // Past zero, as after some steps of a resumed run.
        setCounters(
          set,
          set.adapters.map((_, i) => 3 + i),
        );
        const c = await compareWithDropout(model, set);
        const [c0, cTf, cPlan] = c.calls;
        expect(cTf).toEqual(c0.map((n) => n + 1));
        expect(cPlan).toEqual(cTf);
        expect(c.stats).toBeLessThan(1e-4);
        expect(Math.max(...c.rel)).toBeLessThan(1e-4);
        // The masks matter: without dropout (not training) the planned gradient is far from these.
        const plain = await plannedPgGrads(model, set);
        expect(counters(set)).toEqual(cPlan);
        expect(Math.max(...relErrors(plain.flat, c.tfGrads))).toBeGreaterThan(1e-2);
      } finally {
        setEngineOptions({ dropoutMaskGroupBytes: 64 * 2 ** 20 });
        disposeLlama(model);
      }
    });
  }

  it("activations recomputed: the rebuilt layers apply the forward's masks again (gradients equal tfjs autodiff), the planner counts their dispatches to the byte", async () => {
    const model = fixture();
    setEngineOptions({ learnRecompute: 'on' });
    try {
      const set = adapters(model);
      // The bytes before any gradient is read back (readGrads, a test's, adds a buffer).
      set.training = true;
      const f = await plannedLearnForward(model, set, packSequences(BATCH), TEMP);
      set.training = false;
      const lora = { r: 4, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] as ProjName[], dropout: true };
      expect(
        learnStepBuffers(model.config, lora, { promptLen: 8, responseLen: T }, B, true).reduce(
          (a, b) => a + b.bytes * b.count,
          0,
        ),
      ).toBe(f!.plan.plan.bytes);
      const c = await compareWithDropout(model, set);
      expect(c.stats).toBeLessThan(1e-4);
      expect(Math.max(...c.rel)).toBeLessThan(1e-4);
    } finally {
      setEngineOptions({ learnRecompute: 'auto' });
      disposeLlama(model);
    }
  });

  it("the learn-memory planner lists a dropout plan's buffers to the byte (q, v and down of layer 1)", async () => {
    const model = fixture();
    try {
      const set = adapters(model, { targets: ['q', 'v', 'down'], layers: [1] });
      set.training = true;
      const f = await plannedLearnForward(model, set, packSequences(BATCH), TEMP);
      expect(f!.plan.dropout).toBe(true);
      const shape = { promptLen: 8, responseLen: T };
      const lora = { r: 4, targets: ['q', 'v', 'down'] as ProjName[], layers: [1] };
      expect(
        learnStepBuffers(model.config, { ...lora, dropout: true }, shape, B).reduce((a, b) => a + b.bytes * b.count, 0),
      ).toBe(f!.plan.plan.bytes);
      expect(learnStepBuffers(model.config, lora, shape, B).reduce((a, b) => a + b.bytes * b.count, 0)).toBeLessThan(
        f!.plan.plan.bytes,
      );
    } finally {
      disposeLlama(model);
    }
  });

  it('learnStep with dropout 0.1 in micro-batches of 2: the same metrics, update and dropout counters on the planned path as on tfjs', async () => {
    const batch: LearnBatch = {
      ...BATCH,
      oldLogp: fromRows(OLD),
      advantages: fromRows(ADV),
      refLogp: fromRows(OLD.map((r) => r.map((x) => x - 0.3))),
    };
    const results: { metrics: Record<string, number>; params: Float32Array[]; calls: number[]; passes: number }[] = [];
    for (const path of ['tfjs', 'planned'] as const) {
      const model = fixture();
      try {
        const set = adapters(model);
        setEngineOptions({ learnPath: path });
        const n0 = plannedMicroBatches();
        const opt = new AdamW({ lr: 1e-3, eps: 1e-4 });
        const metrics: Record<string, number>[] = [];
        // Two steps: the second draws from counters the first advanced.
        for (let k = 0; k < 2; k++)
          metrics.push(
            await learnStep({ model, lora: set, optimizer: opt }, batch, {
              kl: { estimator: 'k3', coef: 0.05 },
              entropyCoeff: 0.01,
              microBatchSize: 2,
              temperature: TEMP,
            }),
          );
        results.push({
          metrics: metrics[1],
          params: await Promise.all(set.variables().map(async (v) => (await v.data()) as Float32Array)),
          calls: counters(set),
          passes: plannedMicroBatches() - n0,
        });
      } finally {
        setEngineOptions({ learnPath: 'planned' });
        disposeLlama(model);
      }
    }
    const [want, got] = results;
    expect([want.passes, got.passes]).toEqual([0, 4]);
    expect(want.calls).toEqual(want.calls.map(() => 4));
    expect(got.calls).toEqual(want.calls);
    for (const k of Object.keys(want.metrics))
      expect(Math.abs(got.metrics[k] - want.metrics[k]), k).toBeLessThan(1e-5 * Math.max(1, Math.abs(want.metrics[k])));
    expect(want.metrics['grad/norm']).toBeGreaterThan(1e-3);
    let worst = 0;
    got.params.forEach((p, i) => p.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - want.params[i][j])))));
    expect(worst).toBeLessThan(2e-6);
  });

  it('a redteam run with dropout 0.05 on the planned path resumes exactly: step k + 1 from the checkpoint at k equals the uninterrupted one', async () => {
    const env = nodeRecipeEnv({
      modelsDir: resolve('dev', 'fixtures'),
      load: loadWithCharCodec,
      judges: { letters: letterJudge },
    });
    const config = {
      defender: 'tiny-llama-f32',
      judge: 'letters',
      prompts: 1,
      groupSize: 2,
      maxNewTokens: 3,
      promptPool: 4,
      samples: 2,
      loraDropout: 0.05,
      lr: 1e-2,
      entropyCoeff: 0.01,
    };
    const n0 = plannedMicroBatches();
    const a = await createRun(env, 'redteam', config, 4);
    let payload;
    let next;
    try {
      await a.run.step();
      payload = await a.run.state();
      next = await a.run.step();
    } finally {
      a.run.dispose();
    }
    expect(plannedMicroBatches() - n0).toBe(2);
    // The dropout counters were saved, and moved (one draw per adapter per micro-batch; the entropy bonus makes every step learn).
    expect(
      Object.entries(payload.rng).filter(([k, v]) => k.startsWith('lora_dropout_calls_') && v === 1).length,
    ).toBeGreaterThan(0);
    const b = await createRun(env, 'redteam', config, 4);
    try {
      await b.run.restore(payload);
      expect(stableReport(await b.run.step())).toEqual(stableReport(next));
    } finally {
      b.run.dispose();
    }
    expect(plannedMicroBatches() - n0).toBe(3);
  });
});
