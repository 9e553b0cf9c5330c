// The planned learning step's recompute mode (src/engine/plan/learnPlan.ts `recompute`: each
// layer keeps its input only, the backward rebuilds the layer's other activations into one shared
// set) in Node + Dawn on SwiftShader: statistics, reference log-probs and LoRA gradients equal to
// the keep-everything plan and within 1e-4 of tfjs autodiff; the plan's buffers listed to the byte
// by the learn-memory planner and fewer than kept; under a small budget 'auto' recomputes and
// learnStep still matches tfjs; no GPU buffer made after warm-up.
import * as tf from '@tensorflow/tfjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { startDawn } from '../src/cli/node/dawn';
import { webgpuDevice } from '../src/engine/kernels/wgslProgram';
import { parseModelConfig } from '../src/model/config';
import { disposeLlama, loadLlama, type LlamaModel, type LoadOptions, type ProjName } from '../src/model/llama';
import { attachLora, type LoraConfig, type LoraSet } from '../src/model/lora';
import { learnMicroBatchRows, plannedLearnForward, setLearnMemoryBudget, setLearnRecompute, type LearnRecompute } from '../src/model/plannedLearn';
import { learnStepBuffers, type LearnLoraShape } from '../src/model/learnMemory';
import { int4Quantizer } from '../src/model/quant';
import { parseSafetensors } from '../src/model/safetensors';
import { syntheticModel } from '../src/model/synthetic';
import { mulberry32 } from '../src/model/random';
import { packSequences, policyAndReferenceStats, policyStats, type ResponseBatch } from '../src/rl/policy';
import { ppoClipLoss, actorLoss } from '../src/rl/policyLoss';
import { klPenalty } from '../src/rl/kl';
import { lossGradsAt, plannedGrads, plannedMicroBatches, setLearnPath, type StatTensors } from '../src/rl/plannedLearn';
import { learnStep, type LearnBatch, type TrainerConfig } from '../src/rl/trainer';
import { AdamW } from '../src/rl/optim';
import { fromRows } from '../src/rl/types';

const gpuErrors: string[] = [];
beforeAll(async () => {
  await startDawn({ swiftshader: true });
  webgpuDevice().addEventListener('uncapturederror', (e) => gpuErrors.push((e as GPUUncapturedErrorEvent).error.message));
});
afterEach(() => {
  setLearnRecompute('auto');
  setLearnMemoryBudget(2 ** 31);
  setLearnPath('planned');
});
afterAll(() => expect(gpuErrors).toEqual([]));

const ALL: ProjName[] = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'];
const bytesOf = (bs: { bytes: number; count: number }[]) => bs.reduce((a, b) => a + b.bytes * b.count, 0);

function fixture(name: string, opts: LoadOptions = {}): LlamaModel {
  const dir = resolve('..', 'shared', 'fixtures', name);
  return loadLlama(parseModelConfig(readFileSync(resolve(dir, 'config.json'), 'utf8')), parseSafetensors(new Uint8Array(readFileSync(resolve(dir, 'model.safetensors')))), opts);
}

/** Adapters with B drawn too (a fresh B = 0 would leave dA = 0 and hide a wrong dA). */
function adapters(model: LlamaModel, cfg: Partial<LoraConfig> = {}): LoraSet {
  const set = attachLora(model, { r: 4, alpha: 8, targets: ALL, seed: 3, ...cfg });
  const rand = mulberry32(11);
  for (const a of set.adapters) a.B.assign(tf.tensor2d(Float32Array.from({ length: a.B.size }, () => (rand() * 2 - 1) * 0.2), a.B.shape as [number, number]));
  return set;
}

// Left-padded prompts of 3, 5 and 2 tokens (8 prompt columns in the plan), 4 response tokens,
// row 1 stopped after 2; the fixtures have 4 query heads over 2 KV heads (GQA).
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

/** PPO clip, token-mean, an entropy bonus and a k3 KL term to the reference. */
function grpoLoss(s: StatTensors, refLogp: tf.Tensor2D): tf.Scalar {
  const mask = tf.tensor2d(BATCH.mask);
  const pg = ppoClipLoss({ logp: s.logp, oldLogp: tf.tensor2d(OLD), advantages: tf.tensor2d(ADV), mask }).loss;
  return actorLoss({ pgLoss: pg, mask, entropy: s.entropy, entropyCoeff: 0.01, kl: klPenalty(s.logp, refLogp, 'k3'), klCoef: 0.05 });
}

interface Run {
  recompute: boolean;
  bytes: number;
  /** logp, entropy, reference logp, each [B T]. */
  stats: Float32Array[];
  grads: Float32Array;
}

/** One planned forward (with the reference pass) and backward of grpoLoss under a recompute setting. */
async function planned(model: LlamaModel, set: LoraSet, mode: LearnRecompute, refLogp: tf.Tensor2D): Promise<Run> {
  setLearnRecompute(mode);
  const f = await plannedLearnForward(model, set, packSequences(BATCH), TEMP, true);
  if (!f) throw new Error('the planned forward was refused');
  const lg = await lossGradsAt(f.logp, f.entropy, B, T, (s) => grpoLoss(s, refLogp));
  f.plan.backward(lg.dlogp, lg.dentropy);
  return { recompute: !!f.plan.opts.recompute, bytes: f.plan.plan.bytes, stats: [f.logp, f.entropy, f.refLogp!], grads: await f.plan.readGrads() };
}

/** max |a - b| / max |b| */
function rel(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < b.length; i++) {
    num = Math.max(num, Math.abs(a[i] - b[i]));
    den = Math.max(den, Math.abs(b[i]));
  }
  return num / den;
}

/** Recompute forced on against the kept plan and against tfjs autodiff; the plan's bytes against the planner's. */
async function check(model: LlamaModel, set: LoraSet, lora: LearnLoraShape) {
  const ref = policyAndReferenceStats(model, set, BATCH, { temperature: TEMP });
  const vars = set.variables();
  const { grads } = tf.variableGrads(() => grpoLoss(policyStats(model, BATCH, { temperature: TEMP }), ref.refLogp), vars);
  const want = { stats: [await ref.logp.data(), await ref.entropy.data(), await ref.refLogp.data()], grads: await Promise.all(vars.map((v) => grads[v.name].data())) };
  const keep = await planned(model, set, 'off', ref.refLogp);
  const again = await planned(model, set, 'on', ref.refLogp);
  tf.dispose([ref.logp, ref.entropy, ref.refLogp, ...Object.values(grads)]);
  expect([keep.recompute, again.recompute]).toEqual([false, true]);
  // The same kernels on the same inputs: the same values as the kept plan.
  for (let i = 0; i < 3; i++) expect(rel(again.stats[i], keep.stats[i])).toBeLessThanOrEqual(1e-6);
  expect(Math.max(...again.grads.map(Math.abs))).toBeGreaterThan(1e-3);
  expect(rel(again.grads, keep.grads)).toBeLessThanOrEqual(1e-6);
  // And within 1e-4 of tfjs: statistics absolutely, each variable's gradient relatively.
  for (let i = 0; i < 3; i++) for (let j = 0; j < B * T; j++) expect(Math.abs(again.stats[i][j] - want.stats[i][j])).toBeLessThan(1e-4);
  let at = 0;
  want.grads.forEach((g) => {
    expect(rel(again.grads.subarray(at, at + g.length), g)).toBeLessThan(1e-4);
    at += g.length;
  });
  expect(at).toBe(again.grads.length);
  // The learn-memory planner lists the recompute plan to the byte, and it is the smaller one.
  const shape = { promptLen: 8, responseLen: T };
  expect(bytesOf(learnStepBuffers(model.config, lora, shape, B, true))).toBe(again.bytes);
  expect(bytesOf(learnStepBuffers(model.config, lora, shape, B, false))).toBe(keep.bytes);
  expect(again.bytes).toBeLessThan(keep.bytes);
}

describe('planned learning step with activations recomputed per layer (Dawn, SwiftShader)', () => {
  for (const [name, opts] of [
    ['f32', {}],
    ['int4 (groups of 32)', { quantize: int4Quantizer(32) }],
  ] as const) {
    it(`${name} base, LoRA on every projection: the kept plan's statistics and gradients, tfjs's within 1e-4, the planner's bytes`, async () => {
      const model = fixture('tiny-llama-f32', opts);
      try {
        await check(model, adapters(model), { r: 4, targets: ALL });
      } finally {
        disposeLlama(model);
      }
    });
  }

  it('a LoRA subset (q and v of layer 1, rank 2): layer 0 is rebuilt without adapters', async () => {
    const model = fixture('tiny-llama-f32');
    try {
      await check(model, adapters(model, { r: 2, alpha: 4, targets: ['q', 'v'], layers: [1] }), { r: 2, targets: ['q', 'v'], layers: [1] });
    } finally {
      disposeLlama(model);
    }
  });

  it('a 3-layer Qwen2-style model (q/k/v biases, untied head, GQA): two layers share the rebuilt set', async () => {
    const model = await syntheticModel({
      architectures: ['Qwen2ForCausalLM'], model_type: 'qwen2', hidden_size: 32, intermediate_size: 64, num_hidden_layers: 3,
      num_attention_heads: 4, num_key_value_heads: 2, vocab_size: 64, rms_norm_eps: 1e-6, rope_theta: 10000,
      max_position_embeddings: 256, tie_word_embeddings: false, hidden_act: 'silu', bos_token_id: 1, eos_token_id: 2,
    }, 5);
    try {
      const rand = mulberry32(9);
      for (const l of model.layers) {
        for (const p of ['q', 'k', 'v'] as const) {
          const old = l[p].bias!;
          l[p].bias = tf.tensor1d(Float32Array.from({ length: old.shape[0] }, () => rand() * 2 - 1));
          old.dispose();
        }
      }
      await check(model, adapters(model), { r: 4, targets: ALL });
    } finally {
      disposeLlama(model);
    }
  });

  it('under a budget the kept batch exceeds, auto recomputes: one micro-batch where kept needs more, learnStep equal to tfjs', async () => {
    const lora = { r: 4, targets: ALL };
    const batch: LearnBatch = { ...BATCH, oldLogp: fromRows(OLD), advantages: fromRows(ADV), refLogp: fromRows(OLD.map((r) => r.map((x) => x - 0.3))) };
    const config: TrainerConfig = { kl: { estimator: 'k3', coef: 0.05 }, entropyCoeff: 0.01, temperature: TEMP };
    const results: { metrics: Record<string, number>; params: Float32Array[] }[] = [];
    for (const path of ['tfjs', 'planned'] as const) {
      const model = fixture('tiny-llama-f32');
      try {
        const set = adapters(model);
        const shape = { promptLen: 8, responseLen: T };
        const budget = bytesOf(learnStepBuffers(model.config, lora, shape, B, true));
        expect(bytesOf(learnStepBuffers(model.config, lora, shape, B, false))).toBeGreaterThan(budget);
        setLearnMemoryBudget(budget);
        setLearnPath(path);
        // Kept, fewer rows a micro-batch; recomputed (auto), all 3 in one.
        setLearnRecompute('off');
        expect(learnMicroBatchRows(model, B, 5, T)).toBeLessThan(B);
        setLearnRecompute('auto');
        expect(learnMicroBatchRows(model, B, 5, T)).toBe(B);
        const n0 = plannedMicroBatches();
        const metrics = await learnStep({ model, lora: set, optimizer: new AdamW({ lr: 1e-3, eps: 1e-4 }) }, batch, config);
        expect(plannedMicroBatches() - n0).toBe(path === 'planned' ? 1 : 0);
        if (path === 'planned') {
          // The plan that step ran (cached for this shape) is the recompute one.
          const f = await plannedLearnForward(model, set, packSequences(BATCH), TEMP);
          expect(f?.plan.opts.recompute).toBe(true);
          expect(f?.plan.plan.bytes).toBe(budget);
        }
        results.push({ metrics, params: await Promise.all(set.variables().map(async (v) => (await v.data()) as Float32Array)) });
      } finally {
        disposeLlama(model);
      }
    }
    const [want, got] = results;
    expect(want.metrics['grad/norm']).toBeGreaterThan(1e-3);
    for (const k of Object.keys(want.metrics)) expect(Math.abs(got.metrics[k] - want.metrics[k]), k).toBeLessThan(1e-5 * Math.max(1, Math.abs(want.metrics[k])));
    let worst = 0;
    got.params.forEach((p, i) => p.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - want.params[i][j])))));
    expect(worst).toBeLessThan(2e-6);
  });

  it('no GPU buffer is created by recomputing steps after warm-up', async () => {
    const model = fixture('tiny-llama-f32');
    try {
      const set = adapters(model);
      setLearnRecompute('on');
      const loss = (s: StatTensors) => grpoLoss(s, tf.tensor2d(OLD));
      const run = async () => tf.dispose(Object.values((await plannedGrads(model, set, BATCH, { temperature: TEMP }, loss))!.grads));
      await run();
      await run();
      const device = webgpuDevice();
      const create = device.createBuffer.bind(device);
      const made: string[] = [];
      device.createBuffer = (d: GPUBufferDescriptor) => {
        made.push(d.label ?? `${d.size} bytes`);
        return create(d);
      };
      try {
        await run();
      } finally {
        device.createBuffer = create;
      }
      expect(made.filter((l) => l.startsWith('learn'))).toEqual([]);
      const f = await plannedLearnForward(model, set, packSequences(BATCH), TEMP);
      expect(f?.plan.opts.recompute).toBe(true);
    } finally {
      disposeLlama(model);
    }
  });
});
