import * as tf from '@tensorflow/tfjs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { folderSource } from '../cli/fs-source';
import { generate, type GenerateResult } from '../model/generate';
import { disposeLlama, type LlamaModel } from '../model/llama';
import { loadModel } from '../model/load';
import { attachLora, type LoraSet } from '../model/lora';
import { mulberry32 } from '../model/random';
import { AdamW } from './optim';
import { policyStats, referenceStats, ValueHead } from './policy';
import { learnEpochs, learnStep, type LearnBatch, type TrainerConfig } from './trainer';
import { klPenaltyValue } from './kl';
import { fromRows, fromTensor2D, type TokenMatrix } from './types';
import { maxAbs } from '../../dev/test/maxAbs';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');

let model: LlamaModel;
let lora: LoraSet;
let head: ValueHead;
let initial: Map<string, Float32Array>;
beforeAll(async () => {
  model = await loadModel(folderSource(FIXTURE));
  lora = attachLora(model, { r: 4, alpha: 8, targets: ['q', 'v', 'o', 'up', 'down'], seed: 3 });
  const r = mulberry32(7);
  for (const a of lora.adapters)
    a.B.assign(
      tf.tensor2d(
        Float32Array.from({ length: a.B.size }, () => (2 * r() - 1) * 0.1),
        a.B.shape as [number, number],
      ),
    );
  head = new ValueHead(model.config.hiddenSize);
  head.w.assign(
    tf.tensor2d(
      Float32Array.from({ length: head.w.size }, () => (2 * r() - 1) * 0.1),
      head.w.shape as [number, number],
    ),
  );
  initial = new Map([...lora.variables(), ...head.variables()].map((v) => [v.name, Float32Array.from(v.dataSync())]));
});
afterAll(() => {
  lora.dispose();
  head.dispose();
  disposeLlama(model);
});

/** Puts every trainable variable back to its initial value. */
function restore(): void {
  for (const v of [...lora.variables(), ...head.variables()]) v.assign(tf.tensor(initial.get(v.name)!, v.shape));
}
const snapshot = () => [...lora.variables(), ...head.variables()].map((v) => Float32Array.from(v.dataSync()));

const PROMPTS = [
  [1, 17, 33, 8, 41],
  [1, 5, 9],
  [1, 60, 2, 44, 12, 7, 30],
  [1, 22],
];

/** A scored batch from a real rollout: advantages, values and returns are arbitrary but fixed. */
async function makeBatch(g: GenerateResult, withValues: boolean): Promise<LearnBatch> {
  const batch = { prompts: PROMPTS, responses: g.tokens, mask: g.mask };
  const ref = referenceStats(model, lora, batch);
  const refLogp = await fromTensor2D(ref.logp);
  tf.dispose([ref.logp, ref.entropy]);
  const T = g.tokens[0].length;
  const r = mulberry32(99);
  const adv = fromRows(g.mask.map((row) => row.map((m) => m * (2 * r() - 1))));
  const out: LearnBatch = { ...batch, oldLogp: fromRows(g.logprobs), refLogp, advantages: adv };
  if (withValues) {
    const s = policyStats(model, batch, { withHidden: true });
    const values = await fromTensor2D(head.forward(s.hidden!));
    tf.dispose([s.logp, s.entropy, s.hidden!]);
    const returns: TokenMatrix = { data: values.data.map((v, i) => v + adv.data[i]), rows: PROMPTS.length, cols: T };
    out.values = values;
    out.returns = returns;
  }
  return out;
}

const PPO: TrainerConfig = {
  policyLoss: 'ppo',
  kl: { estimator: 'k3', coef: 0.05 },
  entropyCoeff: 0.01,
  vfCoef: 0.5,
  maxGradNorm: 1,
};

describe('learnStep', () => {
  let g: GenerateResult;
  beforeAll(async () => {
    g = await generate(model, PROMPTS, { maxNewTokens: 4, seed: 12, stopTokens: [2, 3, 4, 5, 6, 7] });
  });

  it('on-policy PPO + value head: ratio 1, no clipping, all metrics finite, and the variables move', async () => {
    restore();
    const batch = await makeBatch(g, true);
    const before = snapshot();
    const opt = new AdamW({ lr: 1e-2, weightDecay: 0 });
    const m = await learnStep({ model, lora, optimizer: opt, valueHead: head }, batch, PPO);
    for (const k of [
      'loss/total',
      'loss/policy',
      'loss/value',
      'loss/kl',
      'loss/entropy',
      'kl/mean',
      'entropy/mean',
      'grad/norm',
      'ppo/clipfrac',
      'ppo/approx_kl',
      'ppo/ratio_mean',
      'value/clipfrac',
      'value/mean',
    ]) {
      expect(Number.isFinite(m[k]), k).toBe(true);
    }
    expect(m['ppo/clipfrac']).toBe(0);
    expect(Math.abs(m['ppo/ratio_mean'] - 1)).toBeLessThan(1e-5);
    expect(Math.abs(m['ppo/approx_kl'])).toBeLessThan(1e-5);
    expect(m['kl/mean']).toBeGreaterThan(0); // the adapters start non-zero, so the policy differs from the reference
    expect(m['grad/norm']).toBeGreaterThan(0);
    expect(m['grad/skipped']).toBe(0);
    const after = snapshot();
    expect(after.every((a, i) => maxAbs(a, before[i]) > 0)).toBe(true); // LoRA A, B and the value head all updated
    opt.dispose();
  });

  it('micro-batch accumulation gives the full-batch update and metrics (every aggregation)', async () => {
    const configs: TrainerConfig[] = [
      PPO,
      { ...PPO, lossAggMode: 'seq-mean-token-mean' },
      { ...PPO, trlLossType: 'grpo' },
      { ...PPO, trlLossType: 'dr_grpo' },
      { policyLoss: 'importance_sampling', kl: { estimator: 'k1', coef: 0.01 } },
    ];
    for (const cfg of configs) {
      const run = async (microBatchSize?: number) => {
        restore();
        const batch = await makeBatch(g, true);
        const opt = new AdamW({ lr: 1e-2, weightDecay: 0 });
        // maxGradNorm large so nothing is clipped. Adam's first step is ~lr sign(g), so the variables
        // check the direction; grad/norm (compared with the other metrics) checks the scale.
        const m = await learnStep({ model, lora, optimizer: opt, valueHead: head }, batch, {
          ...cfg,
          maxGradNorm: 1e6,
          microBatchSize,
        });
        opt.dispose();
        return { m, vars: snapshot() };
      };
      const full = await run();
      const micro = await run(1);
      const what = JSON.stringify(cfg.trlLossType ?? cfg.lossAggMode ?? cfg.policyLoss);
      expect(Math.max(...full.vars.map((v, i) => maxAbs(v, micro.vars[i]))), what).toBeLessThan(1e-5);
      for (const k of Object.keys(full.m))
        expect(Math.abs(full.m[k] - micro.m[k]), `${what} ${k}`).toBeLessThan(1e-4 * Math.max(1, Math.abs(full.m[k])));
    }
  });

  it("gae: the actor's and the critic's gradients are clipped each on its own (veRL), or under one norm (joint)", async () => {
    // A critic far off its targets (returns = values + 1000): its gradient norm is in the hundreds.
    class Recording extends AdamW {
      norm = NaN;
      override applyGradients(vars: Record<string, tf.Variable>, grads: tf.NamedTensorMap, lr?: number): void {
        this.norm = Math.sqrt(
          tf.tidy(() => Object.values(grads).reduce((s, t) => s + tf.sum(tf.square(t)).dataSync()[0], 0)),
        );
        super.applyGradients(vars, grads, lr);
      }
    }
    const run = async (criticGradClip: 'separate' | 'joint') => {
      restore();
      const batch = await makeBatch(g, true);
      batch.returns = { ...batch.returns!, data: batch.values!.data.map((v) => v + 1000) };
      const actor = new Recording({ lr: 1e-3, weightDecay: 0 });
      const critic = new Recording({ lr: 1e-3, weightDecay: 0 });
      const m = await learnStep({ model, lora, optimizer: actor, valueHead: head, valueOptimizer: critic }, batch, {
        ...PPO,
        criticGradClip,
      });
      actor.dispose();
      critic.dispose();
      return { m, actor: actor.norm, critic: critic.norm };
    };
    const sep = await run('separate');
    const actorRaw = sep.m['grad/norm'];
    const criticRaw = sep.m['grad/critic_norm'];
    expect(criticRaw).toBeGreaterThan(100);
    // Each part clipped to maxGradNorm 1 by its own norm.
    expect(sep.actor).toBeCloseTo(Math.min(1, actorRaw), 4);
    expect(sep.critic).toBeCloseTo(1, 4);
    const joint = await run('joint');
    // One global norm G = sqrt(a^2 + c^2): the actor's gradient shrinks to a / G (the departure).
    const G = Math.hypot(actorRaw, criticRaw);
    expect(joint.m['grad/norm']).toBeCloseTo(G, 0);
    expect(joint.m['grad/critic_norm']).toBeUndefined();
    expect(joint.actor).toBeCloseTo(actorRaw / G, 5);
    expect(joint.actor).toBeLessThan(sep.actor / 50);
  });

  it('a positive advantage on a token raises its log-prob (importance sampling, no value head)', async () => {
    restore();
    const batch = await makeBatch(g, false);
    const adv = fromRows(g.mask.map((row, b) => row.map((_m, t) => (b === 0 && t === 0 ? 1 : 0))));
    const before = policyStats(model, batch);
    const lp0 = before.logp.dataSync()[0];
    const opt = new AdamW({ lr: 5e-3, weightDecay: 0 });
    await learnStep(
      { model, lora, optimizer: opt },
      { ...batch, advantages: adv },
      { policyLoss: 'importance_sampling' },
    );
    const after = policyStats(model, batch);
    expect(after.logp.dataSync()[0]).toBeGreaterThan(lp0);
    tf.dispose([before.logp, before.entropy, after.logp, after.entropy]);
    opt.dispose();
  });

  it('a non-finite gradient skips the update and says so', async () => {
    restore();
    const batch = await makeBatch(g, false);
    batch.advantages.data[0] = NaN;
    const before = snapshot();
    const opt = new AdamW({ lr: 1e-2 });
    const m = await learnStep({ model, lora, optimizer: opt }, batch, { policyLoss: 'ppo' });
    expect(m['grad/skipped']).toBe(1);
    expect(snapshot().every((a, i) => maxAbs(a, before[i]) === 0)).toBe(true);
    opt.dispose();
  });

  it('takes no optimiser step when nothing contributes (every group skipped, no KL or entropy term)', async () => {
    restore();
    const batch = await makeBatch(g, false);
    const opt = new AdamW({ lr: 1e-2, weightDecay: 0.1 });
    await learnStep({ model, lora, optimizer: opt }, batch, { policyLoss: 'ppo' }); // momentum now non-zero
    const before = snapshot();
    const empty = fromRows(g.mask.map((row) => row.map(() => 0)));
    const m = await learnStep({ model, lora, optimizer: opt }, { ...batch, lossMask: empty }, { policyLoss: 'ppo' });
    expect(m['optim/no_update']).toBe(1);
    expect(opt.step).toBe(1);
    expect(snapshot().every((a, i) => maxAbs(a, before[i]) === 0)).toBe(true);
    // With a KL loss the skipped rows still pull towards the reference: a step is taken.
    const k = await learnStep(
      { model, lora, optimizer: opt },
      { ...batch, lossMask: empty, regMask: fromRows(g.mask) },
      { policyLoss: 'ppo', kl: { estimator: 'k3', coef: 0.05 } },
    );
    expect(k['optim/no_update']).toBeUndefined();
    expect(opt.step).toBe(2);
    opt.dispose();
  });

  it("the KL loss covers the rows of skipped groups (regMask), not only the policy term's rows", async () => {
    restore();
    const batch = await makeBatch(g, false);
    const lossMask = fromRows(g.mask.map((row, b) => row.map((m) => (b < 2 ? 0 : m))));
    const s = policyStats(model, batch);
    const logp = s.logp.dataSync();
    tf.dispose([s.logp, s.entropy]);
    // float64 reference: coef x token-mean of k3 over every generated token
    let sum = 0;
    let n = 0;
    g.mask.flat().forEach((m, i) => {
      if (m > 0) {
        sum += klPenaltyValue(logp[i], batch.refLogp!.data[i], 'k3');
        n++;
      }
    });
    const opt = new AdamW({ lr: 0 });
    const m = await learnStep(
      { model, lora, optimizer: opt },
      { ...batch, lossMask, regMask: fromRows(g.mask) },
      { policyLoss: 'ppo', kl: { estimator: 'k3', coef: 0.05 } },
    );
    expect(m['loss/kl']).toBeCloseTo((0.05 * sum) / n, 6);
    opt.dispose();
  });

  it('PPO epochs: from the second update on the ratio differs from 1 and the clip binds', async () => {
    restore();
    const batch = await makeBatch(g, false);
    const opt = new AdamW({ lr: 5e-2, weightDecay: 0 });
    const one = await learnEpochs(
      { model, lora, optimizer: opt },
      batch,
      { policyLoss: 'ppo', clipRatioLow: 0.05, clipRatioHigh: 0.05 },
      { epochs: 1 },
    );
    expect(one['ppo/clipfrac']).toBe(0);
    restore();
    const opt2 = new AdamW({ lr: 5e-2, weightDecay: 0 });
    const two = await learnEpochs(
      { model, lora, optimizer: opt2 },
      batch,
      { policyLoss: 'ppo', clipRatioLow: 0.05, clipRatioHigh: 0.05 },
      { epochs: 2, miniBatches: 2 },
    );
    expect(two['optim/updates']).toBe(4);
    expect(opt2.step).toBe(4);
    expect(two['ppo/clipfrac_last']).toBeGreaterThan(0);
    expect(Math.abs(two['ppo/ratio_mean'] - 1)).toBeGreaterThan(1e-4);
    opt.dispose();
    opt2.dispose();
  });

  it('tells what is missing: KL without reference, returns without a value head', async () => {
    restore();
    const batch = await makeBatch(g, true);
    const opt = new AdamW({ lr: 1e-2 });
    await expect(learnStep({ model, lora, optimizer: opt }, { ...batch, refLogp: undefined }, PPO)).rejects.toThrow(
      /refLogp/,
    );
    await expect(learnStep({ model, lora, optimizer: opt }, batch, {})).rejects.toThrow(/value head/);
    opt.dispose();
  });

  it('leaks no tensors: tf.memory().numTensors is flat over steps (PPO, value head, KL, micro-batches)', async () => {
    restore();
    const batch = await makeBatch(g, true);
    const opt = new AdamW({ lr: 1e-3 });
    const learner = { model, lora, optimizer: opt, valueHead: head };
    await learnStep(learner, batch, { ...PPO, microBatchSize: 3 }); // creates the Adam moments
    const n0 = tf.memory().numTensors;
    for (let i = 0; i < 3; i++) await learnStep(learner, batch, { ...PPO, microBatchSize: 3 });
    await learnStep(learner, batch, {
      policyLoss: 'importance_sampling',
      trlLossType: 'dapo',
      kl: { estimator: 'k1', coef: 0.1 },
    });
    expect(tf.memory().numTensors).toBe(n0);
    opt.dispose();
  });
});
