// The planned learning step (src/engine/plan/learnPlan.ts, src/model/planned/learn.ts) in Node +
// Dawn on SwiftShader's Vulkan driver: per-token statistics and LoRA gradients against tfjs
// autodiff of the same loss on the same batch (src/rl's formulas through tf.variableGrads over the
// op-by-op path), against finite differences, on f32 / f16 / int8 / int4 bases, LoRA subsets and a
// left-padded GQA batch; no GPU buffer made after warm-up; no uncaptured WebGPU error; the same
// with activations recomputed per layer (equal to the kept plan's, and the planner's bytes).
import * as tf from '@tensorflow/tfjs';
import { afterEach, describe, expect, it } from 'vitest';
import { webgpuDevice } from '../src/engine/webgpu/wgslProgram';
import { disposeLlama, linearLayers, type LlamaModel, type LoadOptions, type ProjName } from '../src/model/llama';
import { attachLora, type LoraSet } from '../src/model/lora';
import { learnShapeBlocker, plannedLearnForward } from '../src/model/planned/learn';
import { learnStepBuffers, learnStepRows, planLearnMemory } from '../src/contract/learnMemory';
import { AdamWPlan } from '../src/engine/plan/adamwPlan';
import { f16Quantizer, int4Quantizer, int8Quantizer } from '../src/model/quant';
import { syntheticModel } from '../dev/bench/synthetic';
import { mulberry32 } from '../src/model/random';
import { packSequences, policyAndReferenceStats, policyStats, referenceStats, ValueHead } from '../src/rl/policy';
import { actorLoss, ppoClipLoss } from '../src/rl/policyLoss';
import { klPenalty } from '../src/rl/kl';
import { lossGradsAt, plannedGrads, plannedReferenceLogp, plannedRolloutStats } from '../src/rl/plannedLearn';
import { plannedMicroBatches, type StatTensors } from '../src/model/planned/learnStep';
import { learnStep, type LearnBatch, type TrainerConfig } from '../src/rl/trainer';
import { AdamW } from '../src/rl/optim';
import { fromRows } from '../src/rl/types';
import { rlStep, type RlLoopConfig } from '../src/rl/loop';
import { learnMicroBatchRows, type LearnRecompute } from '../src/model/planned/learn';
import type { LearnLoraShape } from '../src/contract/learnMemory';
import { ADV, adapters, B, BATCH, fixture, OLD, T, TEMP } from './learnFixture';
import { useDawn } from './dawnSetup';
import { setEngineOptions } from '../src/engine/options';

useDawn(() => {
  setEngineOptions({ learnPath: 'planned' });
});

const ALL: ProjName[] = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'];
const bytesOf = (bs: { bytes: number; count: number }[]) => bs.reduce((a, b) => a + b.bytes * b.count, 0);

/** The planned forward, which must not be refused here. */
async function plannedForward(...a: Parameters<typeof plannedLearnForward>) {
  const f = await plannedLearnForward(...a);
  if (!f) throw new Error('the planned forward was refused');
  return f;
}

/** GRPO's default: PPO clip, token-mean; with an entropy bonus and a k3 KL term to the reference. */
function grpoLoss(s: StatTensors, refLogp: tf.Tensor2D, withTerms: boolean): tf.Scalar {
  const mask = tf.tensor2d(BATCH.mask);
  const pg = ppoClipLoss({ logp: s.logp, oldLogp: tf.tensor2d(OLD), advantages: tf.tensor2d(ADV), mask }).loss;
  if (!withTerms) return pg;
  return actorLoss({
    pgLoss: pg,
    mask,
    entropy: s.entropy,
    entropyCoeff: 0.01,
    kl: klPenalty(s.logp, refLogp, 'k3'),
    klLossCoef: 0.05,
  });
}

interface Compared {
  stats: number;
  loss: [number, number];
  /** Per variable: max |planned - tfjs| / max |tfjs|. */
  rel: number[];
  gradNorm: number;
}

/** A small Qwen2-style model (q/k/v biases, an untied LM head, 4 query heads over 2 KV heads). */
async function qwen2Model(layers: number, seed: number, opts: LoadOptions = {}): Promise<LlamaModel> {
  const model = await syntheticModel(
    {
      architectures: ['Qwen2ForCausalLM'],
      model_type: 'qwen2',
      hidden_size: 32,
      intermediate_size: 64,
      num_hidden_layers: layers,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      vocab_size: 64,
      rms_norm_eps: 1e-6,
      rope_theta: 10000,
      max_position_embeddings: 256,
      tie_word_embeddings: false,
      hidden_act: 'silu',
      bos_token_id: 1,
      eos_token_id: 2,
    },
    seed,
    opts,
  );
  // The synthetic biases are zero: draw them, so a path that ignored them would differ.
  const rand = mulberry32(9);
  for (const l of model.layers) {
    for (const p of ['q', 'k', 'v'] as const) {
      const old = l[p].bias!;
      l[p].bias = tf.tensor1d(Float32Array.from({ length: old.shape[0] }, () => rand() * 2 - 1));
      old.dispose();
    }
  }
  return model;
}

/** The learn plan's GPU buffers created by a third planned step (plannedGrads) after two. */
async function learnBuffersAfterWarmUp(model: LlamaModel, set: LoraSet): Promise<string[]> {
  const loss = (s: StatTensors) => grpoLoss(s, tf.tensor2d(OLD), true);
  const run = async () =>
    tf.dispose(Object.values((await plannedGrads(model, set, BATCH, { temperature: TEMP }, loss))!.grads));
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
  return made.filter((l) => l.startsWith('learn'));
}

/** tfjs autodiff of the loss on BATCH: the statistics (reference pass too), the loss and every LoRA gradient. */
interface TfjsSide {
  logp: Float32Array;
  entropy: Float32Array;
  refLogp: Float32Array;
  refShape: [number, number];
  loss: number;
  grads: Float32Array[];
}

async function tfjsSide(model: LlamaModel, set: LoraSet, withTerms: boolean): Promise<TfjsSide> {
  const ref = policyAndReferenceStats(model, set, BATCH, { temperature: TEMP });
  const vars = set.variables();
  const { value, grads } = tf.variableGrads(
    () => grpoLoss(policyStats(model, BATCH, { temperature: TEMP }), ref.refLogp, withTerms),
    vars,
  );
  const side: TfjsSide = {
    logp: (await ref.logp.data()) as Float32Array,
    entropy: (await ref.entropy.data()) as Float32Array,
    refLogp: (await ref.refLogp.data()) as Float32Array,
    refShape: ref.refLogp.shape as [number, number],
    loss: (await value.data())[0],
    grads: await Promise.all(vars.map(async (v) => (await grads[v.name].data()) as Float32Array)),
  };
  tf.dispose([ref.logp, ref.entropy, ref.refLogp, value, ...Object.values(grads)]);
  return side;
}

/**
 * The tfjs side once per key: a key names the weights, the adapters and the loss, and the cases
 * that share one (a kept plan's and the recomputing plan's, on the same base) compare their planned
 * paths with the same autodiff, which reads no plan option (a recompute case took 10.8-11.3 s with
 * its own, 0.5-1.1 s reusing it, on the shared 2-core machine).
 */
const tfjsSides = new Map<string, Promise<TfjsSide>>();

/** Statistics, loss and every LoRA gradient of the planned path against tfjs autodiff. */
async function compare(model: LlamaModel, set: LoraSet, withTerms = true, reuse?: string): Promise<Compared> {
  const key = reuse && `${reuse}, adapters ${JSON.stringify(set.config)}, ${withTerms ? 'grpo + terms' : 'pg only'}`;
  let pending = key ? tfjsSides.get(key) : undefined;
  if (!pending) {
    pending = tfjsSide(model, set, withTerms);
    if (key)
      tfjsSides.set(
        key,
        pending.catch((e: unknown) => (tfjsSides.delete(key), Promise.reject(e))),
      );
  }
  const want = await pending;
  const refLogp = tf.tensor2d(want.refLogp, want.refShape);
  const vars = set.variables();
  const tfLoss = want.loss;

  const packed = packSequences(BATCH);
  const got = await plannedForward(model, set, packed, TEMP, true);
  let stats = 0;
  for (let i = 0; i < B * T; i++) {
    stats = Math.max(
      stats,
      Math.abs(got.logp[i] - want.logp[i]),
      Math.abs(got.entropy[i] - want.entropy[i]),
      Math.abs(got.refLogp![i] - want.refLogp[i]),
    );
  }
  const lg = await lossGradsAt(got.logp, got.entropy, B, T, (s) => grpoLoss(s, refLogp, withTerms));
  got.plan.backward(lg.dlogp, lg.dentropy);
  const flat = await got.plan.readGrads();
  const rel: number[] = [];
  let sq = 0;
  let at = 0;
  for (const [k, v] of vars.entries()) {
    const g = want.grads[k];
    expect(g.length).toBe(v.size);
    let num = 0;
    let den = 0;
    for (let i = 0; i < g.length; i++) {
      num = Math.max(num, Math.abs(flat[at + i] - g[i]));
      den = Math.max(den, Math.abs(g[i]));
      sq += flat[at + i] ** 2;
    }
    rel.push(num / den);
    at += g.length;
  }
  expect(at).toBe(got.plan.paramCount);
  refLogp.dispose();
  return { stats, loss: [lg.loss, tfLoss], rel, gradNorm: Math.sqrt(sq) };
}

describe('planned LoRA learning step on Dawn (SwiftShader): against tfjs autodiff', () => {
  it('f32 base, LoRA on all projections, GRPO loss with entropy bonus and KL: statistics, loss and gradients', async () => {
    const model = fixture('tiny-llama-f32');
    try {
      const set = adapters(model);
      const c = await compare(model, set, true, 'tiny-llama-f32');
      expect(c.stats).toBeLessThan(1e-4);
      expect(Math.abs(c.loss[0] - c.loss[1])).toBeLessThan(1e-5 * Math.max(1, Math.abs(c.loss[1])));
      // rlStep's reference log-probs from the plan's reference pass alone (adapters off)
      const ref = referenceStats(model, set, BATCH, { temperature: TEMP });
      const want = await ref.logp.data();
      tf.dispose([ref.logp, ref.entropy]);
      const got = (await plannedReferenceLogp(model, set, BATCH, { temperature: TEMP }))!;
      expect(got.rows * got.cols).toBe(B * T);
      let worst = 0;
      for (let i = 0; i < B * T; i++) worst = Math.max(worst, Math.abs(got.data[i] - want[i]));
      expect(worst).toBeLessThan(1e-4);
      expect(c.gradNorm).toBeGreaterThan(1e-3);
      expect(Math.max(...c.rel)).toBeLessThan(1e-4);
    } finally {
      disposeLlama(model);
    }
  });
});

describe('planned LoRA learning step on Dawn (SwiftShader): quantised bases and LoRA subsets', () => {
  for (const [name, quantize, reuse] of [
    ['int8 (groups of 16)', int8Quantizer({ groupSize: 16 })],
    ['int8 (one scale per output channel)', int8Quantizer()],
    ['int8 (groups of 2: the per-element decode loop)', int8Quantizer({ groupSize: 2 })],
    ['int4 (groups of 16)', int4Quantizer(16)],
    ['int4 (groups of 32, the default)', int4Quantizer(32), 'tiny-llama-f32 in int4 (groups of 32)'],
    ['f16 (packed halves)', f16Quantizer(), 'tiny-llama-f32 in f16'],
  ] as const) {
    it(`${name} base: dx through the packed words, gradients within 1e-4 of tfjs`, async () => {
      const model = fixture('tiny-llama-f32', { quantize });
      try {
        const c = await compare(model, adapters(model), true, reuse);
        expect(c.stats).toBeLessThan(1e-4);
        expect(Math.max(...c.rel)).toBeLessThan(1e-4);
      } finally {
        disposeLlama(model);
      }
    });
  }

  // The family fixtures' blocks (q/k norms, head_dim x heads != hidden, biases; Gemma's four norms,
  // GeGLU, windows) on packed bases, each format once (every family x format took 108 s here, 15-22
  // s a case on the shared 2-core machine; the formats' decode is one WGSL file each, the block's
  // ops the same in every format). Gemma's hidden 24 takes int4 groups of 8 only.
  for (const [name, quantize] of [
    ['qwen3-bias, int8', int8Quantizer()],
    ['gemma3-untied, f16', f16Quantizer()],
    ['gemma3-tied, int4 (groups of 8)', int4Quantizer(8)],
  ] as const) {
    it(`${name} base: statistics and gradients within 1e-4 of tfjs`, async () => {
      const model = fixture(`families/${name.split(',')[0]}`, { quantize });
      try {
        expect(model.layers[0].down.weight.kind).not.toBe('f32');
        const c = await compare(model, adapters(model));
        expect(c.stats).toBeLessThan(1e-4);
        expect(Math.max(...c.rel)).toBeLessThan(1e-4);
      } finally {
        disposeLlama(model);
      }
    });
  }

  it('f16 base: the planner sizes the packed halves and the step to the byte (model scope = the weights held, micro-batch = plan.bytes)', async () => {
    const model = fixture('tiny-llama-f32', { quantize: f16Quantizer() });
    try {
      const set = adapters(model);
      const f = await plannedForward(model, set, packSequences(BATCH), TEMP);
      const plan = planLearnMemory(
        model.config,
        'f16',
        { r: 4, targets: ALL },
        { rows: B, promptLen: 8, responseLen: T },
        { maxBufferSize: 2 ** 30, maxStorageBufferBindingSize: 2 ** 30, budgetBytes: 2 ** 30 },
      );
      expect(plan.bytesByScope['micro-batch']).toBe(f.plan.plan.bytes);
      const held = linearLayers(model).reduce((a, l) => a + l.weight.bytes, 0);
      expect(bytesOf(plan.buffers.filter((b) => b.name.endsWith('(f16)')))).toBe(held);
      // hidden 32 and intermediate 64: 16 (32) words + one unit scale per output row
      expect(model.layers[0].q.weight.bytes).toBe(32 * (16 * 4 + 4));
    } finally {
      disposeLlama(model);
    }
  });

  it('a Qwen2-style model (q/k/v biases, an untied LM head) with LoRA on every projection', async () => {
    const model = await qwen2Model(2, 3);
    try {
      const c = await compare(model, adapters(model));
      expect(c.stats).toBeLessThan(1e-4);
      expect(Math.max(...c.rel)).toBeLessThan(1e-4);
    } finally {
      disposeLlama(model);
    }
  });

  it('a Qwen2-style model in f16 (its untied LM head too): statistics and gradients within 1e-4 of tfjs', async () => {
    const model = await qwen2Model(2, 4, { quantize: f16Quantizer() });
    try {
      expect(model.lmHead.weight.kind).toBe('f16');
      const c = await compare(model, adapters(model));
      expect(c.stats).toBeLessThan(1e-4);
      expect(Math.max(...c.rel)).toBeLessThan(1e-4);
    } finally {
      disposeLlama(model);
    }
  });

  it('f16 with an odd intermediate size (65: down_proj rows end in a half-empty word, decoded half by half): gradients within 1e-4 of tfjs', async () => {
    const config = {
      architectures: ['LlamaForCausalLM'],
      model_type: 'llama',
      hidden_size: 32,
      intermediate_size: 65,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      vocab_size: 64,
      rms_norm_eps: 1e-6,
      rope_theta: 10000,
      max_position_embeddings: 256,
      tie_word_embeddings: true,
      hidden_act: 'silu',
      bos_token_id: 1,
      eos_token_id: 2,
    };
    const model = await syntheticModel(config, 5, { quantize: f16Quantizer() });
    try {
      const c = await compare(model, adapters(model));
      expect(c.stats).toBeLessThan(1e-4);
      expect(Math.max(...c.rel)).toBeLessThan(1e-4);
    } finally {
      disposeLlama(model);
    }
  });

  it('LoRA on q and v of layer 1 only, rank 2 (pg loss only)', async () => {
    const model = fixture('tiny-llama-f32');
    try {
      const set = adapters(model, { r: 2, alpha: 4, targets: ['q', 'v'], layers: [1] });
      const c = await compare(model, set, false);
      expect(c.rel.length).toBe(4);
      expect(Math.max(...c.rel)).toBeLessThan(1e-4);
    } finally {
      disposeLlama(model);
    }
  });
});

describe('planned LoRA learning step on Dawn (SwiftShader): finite differences, buffers, learnStep', () => {
  it('the planned gradient agrees with central differences of the planned loss on the largest coordinates', async () => {
    const model = fixture('tiny-llama-f32');
    try {
      const set = adapters(model);
      const packed = packSequences(BATCH);
      const refLogp = tf.tensor2d(OLD); // any constant reference: the KL term only needs to be fixed
      const lossAt = async () => {
        const f = await plannedForward(model, set, packed, TEMP, false);
        return { f, lg: await lossGradsAt(f.logp, f.entropy, B, T, (s) => grpoLoss(s, refLogp, true)) };
      };
      const { f, lg } = await lossAt();
      f.plan.backward(lg.dlogp, lg.dentropy);
      const grads = await f.plan.readGrads();
      // The three largest gradient coordinates of the first adapter's A and the last adapter's B.
      const picks: { v: tf.Variable; i: number; g: number }[] = [];
      for (const [slot, which] of [
        [f.plan.slots[0], 'A'],
        [f.plan.slots[f.plan.slots.length - 1], 'B'],
      ] as const) {
        const off = which === 'A' ? slot.aOff : slot.bOff;
        const n = which === 'A' ? slot.r * slot.inF : slot.outF * slot.r;
        const order = Array.from({ length: n }, (_, i) => i).sort(
          (a, b) => Math.abs(grads[off + b]) - Math.abs(grads[off + a]),
        );
        const a = set.adapters[f.plan.slots.indexOf(slot)];
        for (const i of order.slice(0, 3)) picks.push({ v: which === 'A' ? a.A : a.B, i, g: grads[off + i] });
      }
      // Small enough not to step over the loss's kinks (the clip, the k3 clamp at 10) on this batch.
      const eps = 5e-4;
      for (const p of picks) {
        const base = (await p.v.data()) as Float32Array;
        const at = async (d: number) => {
          const x = base.slice();
          x[p.i] += d;
          p.v.assign(tf.tensor(x, p.v.shape));
          return (await lossAt()).lg.loss;
        };
        const fd = ((await at(eps)) - (await at(-eps))) / (2 * eps);
        p.v.assign(tf.tensor(base, p.v.shape));
        expect(Math.abs(p.g)).toBeGreaterThan(1e-3);
        expect(Math.abs(fd - p.g)).toBeLessThan(5e-3 * Math.abs(p.g));
      }
      refLogp.dispose();
    } finally {
      disposeLlama(model);
    }
  });

  it('no GPU buffer is created by the planned pass after warm-up', async () => {
    const model = fixture('tiny-llama-f32');
    try {
      const set = adapters(model);
      const loss = (s: StatTensors) => grpoLoss(s, tf.tensor2d(OLD), true);
      expect(await learnBuffersAfterWarmUp(model, set)).toEqual([]);
      // The learn-memory planner lists, to the byte, the buffers the plan created (prompt columns
      // 5 rounded up to 8), and over the budget a micro-batch is handed back to tfjs.
      const f = await plannedForward(model, set, packSequences(BATCH), TEMP);
      expect(f.plan.P).toBe(8);
      const est = bytesOf(learnStepBuffers(model.config, { r: 4, targets: ALL }, { promptLen: 8, responseLen: T }, B));
      expect(est).toBe(f.plan.plan.bytes);
      // (a byte under the recompute layout, the smaller one, so neither fits)
      setEngineOptions({
        learnMemoryBudget:
          bytesOf(learnStepBuffers(model.config, { r: 4, targets: ALL }, { promptLen: 8, responseLen: T }, B, true)) -
          1,
      });
      try {
        expect(learnShapeBlocker(model, B, 5, T)).toMatch(/over the budget/);
        expect(await plannedGrads(model, set, BATCH, { temperature: TEMP }, loss)).toBeNull();
      } finally {
        setEngineOptions({ learnMemoryBudget: 2 ** 31 });
      }
      expect(learnShapeBlocker(model, B, 5, T)).toBeNull();
      // And the planned AdamW over the same adapters allocates what the planner's optimizer scope says.
      const opt = new AdamWPlan(
        webgpuDevice(),
        set.variables().map((v) => ({ name: v.name, shape: v.shape })),
        { lr: 1e-3 },
      );
      try {
        const plan = planLearnMemory(
          model.config,
          'f32',
          { r: 4, targets: ALL },
          { rows: B, promptLen: 8, responseLen: T },
          { maxBufferSize: 2 ** 30, maxStorageBufferBindingSize: 2 ** 30, budgetBytes: 2 ** 30 },
        );
        expect(plan.bytesByScope.optimizer).toBe(opt.bytes);
        expect(plan.bytesByScope['micro-batch']).toBe(est);
      } finally {
        opt.dispose();
      }
    } finally {
      disposeLlama(model);
    }
  });

  it("the planner lists the buffers of a LoRA subset's plan (q and v of layer 1, rank 2) to the byte", async () => {
    const model = fixture('tiny-llama-f32');
    try {
      const set = adapters(model, { r: 2, alpha: 4, targets: ['q', 'v'], layers: [1] });
      const f = await plannedForward(model, set, packSequences(BATCH), TEMP);
      expect(
        bytesOf(
          learnStepBuffers(
            model.config,
            { r: 2, targets: ['q', 'v'], layers: [1] },
            { promptLen: 8, responseLen: T },
            B,
          ),
        ),
      ).toBe(f.plan.plan.bytes);
    } finally {
      disposeLlama(model);
    }
  });

  it("learnStep without a micro-batch size takes the planner's micro-batches: a budget of one row gives 3, the same update as one pass", async () => {
    const batch: LearnBatch = {
      ...BATCH,
      oldLogp: fromRows(OLD),
      advantages: fromRows(ADV),
      refLogp: fromRows(OLD.map((r) => r.map((x) => x - 0.3))),
    };
    const config: TrainerConfig = { kl: { estimator: 'k3', coef: 0.05 }, entropyCoeff: 0.01, temperature: TEMP };
    const results: { passes: number; metrics: Record<string, number>; params: Float32Array[] }[] = [];
    for (const budget of [2 ** 31, 'one row'] as const) {
      const model = fixture('tiny-llama-f32');
      try {
        const set = adapters(model);
        const lora = { r: 4, targets: ALL };
        const oneRow = bytesOf(learnStepBuffers(model.config, lora, { promptLen: 8, responseLen: T }, 1));
        const bytes = budget === 'one row' ? oneRow : budget;
        // The planner, asked directly: one row per micro-batch under that budget, 3 passes.
        const limits = webgpuDevice().limits;
        const want = learnStepRows(
          model.config,
          lora,
          { rows: B, promptLen: 8, responseLen: T },
          {
            maxBufferSize: limits.maxBufferSize,
            maxStorageBufferBindingSize: limits.maxStorageBufferBindingSize,
            budgetBytes: bytes,
          },
        );
        expect(want.microBatchRows).toBe(budget === 'one row' ? 1 : B);
        setEngineOptions({ learnMemoryBudget: bytes });
        const n0 = plannedMicroBatches();
        const metrics = await learnStep(
          { model, lora: set, optimizer: new AdamW({ lr: 1e-3, eps: 1e-4 }) },
          batch,
          config,
        );
        const passes = plannedMicroBatches() - n0;
        expect(passes).toBe(want.accumulationSteps);
        results.push({
          passes,
          metrics,
          params: await Promise.all(set.variables().map(async (v) => (await v.data()) as Float32Array)),
        });
      } finally {
        setEngineOptions({ learnMemoryBudget: 2 ** 31 });
        disposeLlama(model);
      }
    }
    const [one, three] = results;
    expect([one.passes, three.passes]).toEqual([1, 3]);
    for (const k of Object.keys(one.metrics))
      expect(Math.abs(three.metrics[k] - one.metrics[k]), k).toBeLessThan(1e-5 * Math.max(1, Math.abs(one.metrics[k])));
    expect(one.metrics['grad/norm']).toBeGreaterThan(1e-3);
    let worst = 0;
    let moved = 0;
    const before = adaptersBefore();
    three.params.forEach((p, i) => {
      for (let j = 0; j < p.length; j++) {
        worst = Math.max(worst, Math.abs(p[j] - one.params[i][j]));
        moved = Math.max(moved, Math.abs(one.params[i][j] - before[i][j]));
      }
    });
    expect(moved).toBeGreaterThan(5e-4);
    expect(worst).toBeLessThan(1e-5);
  });

  const CONFIGS: [string, TrainerConfig, number][] = [
    [
      'GRPO clip, token-mean, k3 KL loss and entropy bonus, micro-batches of 2',
      { kl: { estimator: 'k3', coef: 0.05 }, entropyCoeff: 0.01, microBatchSize: 2, temperature: TEMP },
      2,
    ],
    ['importance sampling, token-sum', { policyLoss: 'importance_sampling', temperature: TEMP }, 1],
    [
      'clip-higher, seq-mean-token-mean, k1 KL loss',
      {
        clipRatioHigh: 0.28,
        lossAggMode: 'seq-mean-token-mean',
        kl: { estimator: 'k1', coef: 0.1 },
        temperature: TEMP,
      },
      1,
    ],
    [
      'TRL dr_grpo loss type with an entropy bonus',
      { trlLossType: 'dr_grpo', entropyCoeff: 0.02, temperature: TEMP },
      1,
    ],
  ];
  for (const [name, config, microBatches] of CONFIGS) {
    it(`learnStep on the planned path, ${name}: the same metrics and update as on tfjs`, async () => {
      const batch: LearnBatch = {
        ...BATCH,
        oldLogp: fromRows(OLD),
        advantages: fromRows(ADV),
        refLogp: fromRows(OLD.map((r) => r.map((x) => x - 0.3))),
      };
      const results: { metrics: Record<string, number>; params: Float32Array[] }[] = [];
      for (const path of ['tfjs', 'planned'] as const) {
        const model = fixture('tiny-llama-f32');
        try {
          const set = adapters(model);
          setEngineOptions({ learnPath: path });
          const n0 = plannedMicroBatches();
          const metrics = await learnStep(
            { model, lora: set, optimizer: new AdamW({ lr: 1e-3, eps: 1e-4 }) },
            batch,
            config,
          );
          expect(plannedMicroBatches() - n0).toBe(path === 'planned' ? microBatches : 0);
          results.push({
            metrics,
            params: await Promise.all(set.variables().map(async (v) => (await v.data()) as Float32Array)),
          });
        } finally {
          setEngineOptions({ learnPath: 'planned' });
          disposeLlama(model);
        }
      }
      const [want, got] = results;
      expect(Object.keys(got.metrics).sort()).toEqual(Object.keys(want.metrics).sort());
      for (const k of Object.keys(want.metrics)) {
        expect(Math.abs(got.metrics[k] - want.metrics[k]), k).toBeLessThan(
          1e-5 * Math.max(1, Math.abs(want.metrics[k])),
        );
      }
      expect(want.metrics['grad/norm']).toBeGreaterThan(1e-3);
      let worst = 0;
      let moved = 0;
      const before = adaptersBefore();
      got.params.forEach((p, i) => {
        for (let j = 0; j < p.length; j++) {
          worst = Math.max(worst, Math.abs(p[j] - want.params[i][j]));
          moved = Math.max(moved, Math.abs(p[j] - before[i][j]));
        }
      });
      expect(moved).toBeGreaterThan(5e-4); // the step did move the adapters (lr 1e-3)
      expect(worst).toBeLessThan(2e-6);
    });
  }
});

describe('planned LoRA learning step on Dawn (SwiftShader): PPO with a value head', () => {
  it("rlStep's critic values and reference log-probs from the plan equal the tfjs statistics", async () => {
    const model = fixture('tiny-llama-f32');
    const head = new ValueHead(model.config.hiddenSize);
    try {
      const set = adapters(model);
      const rand = mulberry32(5);
      head.w.assign(
        tf.tensor2d(
          Float32Array.from({ length: model.config.hiddenSize }, () => rand() * 2 - 1),
          [model.config.hiddenSize, 1],
        ),
      );
      const s = policyAndReferenceStats(model, set, BATCH, { temperature: TEMP, withHidden: true });
      const v = head.forward(s.hidden!);
      const [wantV, wantRef] = [await v.data(), await s.refLogp.data()];
      tf.dispose([s.logp, s.entropy, s.refLogp, s.hidden!, v]);
      const got = (await plannedRolloutStats(
        model,
        set,
        BATCH,
        { temperature: TEMP },
        { reference: true, valueHead: head },
      ))!;
      let worst = 0;
      for (let i = 0; i < B * T; i++)
        worst = Math.max(worst, Math.abs(got.values!.data[i] - wantV[i]), Math.abs(got.refLogp!.data[i] - wantRef[i]));
      expect(Math.max(...Array.from(wantV).map(Math.abs))).toBeGreaterThan(0.1);
      expect(worst).toBeLessThan(1e-4);
    } finally {
      head.dispose();
      disposeLlama(model);
    }
  });

  it('learnStep with a value head (hidden state as a constant): the same losses and update of adapters and head as on tfjs', async () => {
    const batch: LearnBatch = {
      ...BATCH,
      oldLogp: fromRows(OLD),
      advantages: fromRows(ADV),
      values: fromRows([
        [0.1, 0.2, 0.3, 0.1],
        [0.0, -0.2, 0, 0],
        [0.4, 0.1, 0.2, 0.3],
      ]),
      returns: fromRows([
        [0.9, 0.7, 0.5, 0.4],
        [-0.8, -0.6, 0, 0],
        [0.2, 0.6, 0.3, 0.1],
      ]),
    };
    const results: { metrics: Record<string, number>; params: Float32Array[] }[] = [];
    for (const path of ['tfjs', 'planned'] as const) {
      const model = fixture('tiny-llama-f32');
      const head = new ValueHead(model.config.hiddenSize);
      try {
        const set = adapters(model);
        setEngineOptions({ learnPath: path });
        const n0 = plannedMicroBatches();
        const metrics = await learnStep(
          { model, lora: set, optimizer: new AdamW({ lr: 1e-3, eps: 1e-4 }), valueHead: head },
          batch,
          { temperature: TEMP, vfCoef: 0.5 },
        );
        expect(plannedMicroBatches() - n0).toBe(path === 'planned' ? 1 : 0);
        results.push({
          metrics,
          params: await Promise.all(
            [...set.variables(), ...head.variables()].map(async (v) => (await v.data()) as Float32Array),
          ),
        });
      } finally {
        setEngineOptions({ learnPath: 'planned' });
        head.dispose();
        disposeLlama(model);
      }
    }
    const [want, got] = results;
    for (const k of ['loss/total', 'loss/policy', 'loss/value', 'value/mean', 'value/clipfrac', 'grad/norm']) {
      expect(Math.abs(got.metrics[k] - want.metrics[k]), k).toBeLessThan(1e-5 * Math.max(1, Math.abs(want.metrics[k])));
    }
    expect(want.metrics['loss/value']).toBeGreaterThan(0.01);
    let worst = 0;
    got.params.forEach((p, i) => p.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - want.params[i][j])))));
    // The head's weights moved (w starts at 0: AdamW's first step is about lr per coordinate).
    expect(Math.max(...Array.from(got.params[got.params.length - 2]).map(Math.abs))).toBeGreaterThan(5e-4);
    // eps 1e-4: AdamW's first step lr g / (|g| + eps) is then smooth in g where |g| is tiny (with
    // 1e-8 float error there flips whole steps); a wrong gradient moves it by up to 2 lr.
    expect(worst).toBeLessThan(2e-6);
  });
});

/** The adapters' factors as `adapters()` draws them, before any step. */
function adaptersBefore(): Float32Array[] {
  const model = fixture('tiny-llama-f32');
  try {
    const set = adapters(model);
    return set.variables().map((v) => v.dataSync() as Float32Array);
  } finally {
    disposeLlama(model);
  }
}

describe('planned LoRA learning step on Dawn (SwiftShader): runs learn', () => {
  // loop.test.ts's setups: reward 1 when the first sampled token is 23; 4 prompts x G 8, 2 new tokens.
  const RUNS: [string, RlLoopConfig, boolean][] = [
    [
      'GRPO (k3 KL loss)',
      {
        groupSize: 8,
        maxNewTokens: 2,
        temperature: 1,
        seed: 1234,
        advantage: 'grpo',
        trainer: { policyLoss: 'ppo', kl: { estimator: 'k3', coef: 0.001 } },
      },
      false,
    ],
    [
      'PPO + GAE (value head)',
      {
        groupSize: 8,
        maxNewTokens: 2,
        temperature: 1,
        seed: 1234,
        advantage: 'gae',
        trainer: { policyLoss: 'ppo', vfCoef: 0.5 },
      },
      true,
    ],
  ];
  for (const [name, config, withHead] of RUNS) {
    it(`${name} on the tiny fixture with the planned learning step raises the mean reward above 0.9 (src/rl/loop.test.ts's task)`, async () => {
      const TARGET = 23;
      const PROMPTS = [
        [1, 14, 5, 29],
        [1, 22, 58, 55],
        [1, 22, 29, 56],
        [1, 35, 37, 42],
      ];
      const model = fixture('tiny-llama-f32');
      const lora = attachLora(model, { r: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 7 });
      const valueHead = withHead ? new ValueHead(model.config.hiddenSize) : undefined;
      const optimizer = new AdamW({ lr: 1e-2, weightDecay: 0 });
      const before = plannedMicroBatches();
      try {
        const curve: number[] = [];
        for (let step = 0; step < 6; step++) {
          const rep = await rlStep(
            {
              learner: { model, lora, optimizer, valueHead },
              rewardFn: ({ response }) => (response[0] === TARGET ? 1 : 0),
            },
            PROMPTS,
            step,
            config,
          );
          curve.push(rep.metrics['reward/mean']);
          if (curve[curve.length - 1] > 0.9) break;
        }
        expect(curve[0]).toBeLessThan(0.3);
        expect(curve[curve.length - 1]).toBeGreaterThan(0.9);
        expect(plannedMicroBatches() - before).toBe(curve.length); // every update took the planned pass
      } finally {
        optimizer.dispose();
        valueHead?.dispose();
        disposeLlama(model);
      }
    });
  }
});

describe('planned LoRA learning step on Dawn (SwiftShader): activations recomputed per layer', () => {
  // learnPlan.ts `recompute`: each layer keeps its input, the backward rebuilds the layer's other
  // activations into one shared set just before the layer's backward.
  afterEach(() => {
    setEngineOptions({ learnRecompute: 'auto', learnMemoryBudget: 2 ** 31, learnPath: 'planned' });
  });

  /** One planned forward (with the reference pass) and backward under a recompute setting: raw statistics and gradients. */
  async function planned(model: LlamaModel, set: LoraSet, mode: LearnRecompute) {
    setEngineOptions({ learnRecompute: mode });
    const f = await plannedForward(model, set, packSequences(BATCH), TEMP, true);
    const refLogp = tf.tensor2d(OLD); // any fixed reference for the KL term
    const lg = await lossGradsAt(f.logp, f.entropy, B, T, (s) => grpoLoss(s, refLogp, true));
    refLogp.dispose();
    f.plan.backward(lg.dlogp, lg.dentropy);
    return {
      recompute: !!f.plan.opts.recompute,
      bytes: f.plan.plan.bytes,
      stats: [f.logp, f.entropy, f.refLogp!],
      grads: await f.plan.readGrads(),
    };
  }

  /** max |a - b| / max |b| */
  const rel = (a: ArrayLike<number>, b: ArrayLike<number>) => {
    let num = 0;
    let den = 0;
    for (let i = 0; i < b.length; i++) {
      num = Math.max(num, Math.abs(a[i] - b[i]));
      den = Math.max(den, Math.abs(b[i]));
    }
    return num / den;
  };

  /** Recompute forced on: equal to the kept plan, within 1e-4 of tfjs autodiff, its bytes the planner's and fewer. */
  async function check(model: LlamaModel, set: LoraSet, lora: LearnLoraShape, reuse?: string) {
    const keep = await planned(model, set, 'off');
    const again = await planned(model, set, 'on');
    expect([keep.recompute, again.recompute]).toEqual([false, true]);
    // The same kernels on the same inputs: the kept plan's values (measured: bit for bit).
    for (let i = 0; i < 3; i++) expect(rel(again.stats[i], keep.stats[i])).toBeLessThanOrEqual(1e-6);
    expect(Math.max(...again.grads.map(Math.abs))).toBeGreaterThan(1e-3);
    expect(rel(again.grads, keep.grads)).toBeLessThanOrEqual(1e-6);
    const c = await compare(model, set, true, reuse);
    expect(c.stats).toBeLessThan(1e-4);
    expect(Math.abs(c.loss[0] - c.loss[1])).toBeLessThan(1e-5 * Math.max(1, Math.abs(c.loss[1])));
    expect(Math.max(...c.rel)).toBeLessThan(1e-4);
    const shape = { promptLen: 8, responseLen: T };
    expect(bytesOf(learnStepBuffers(model.config, lora, shape, B, true))).toBe(again.bytes);
    expect(bytesOf(learnStepBuffers(model.config, lora, shape, B, false))).toBe(keep.bytes);
    expect(again.bytes).toBeLessThan(keep.bytes);
  }

  // The same bases and adapters as the kept plan's cases above: their tfjs side is reused.
  for (const [name, opts, reuse] of [
    ['f32', {}, 'tiny-llama-f32'],
    ['int4 (groups of 32)', { quantize: int4Quantizer(32) }, 'tiny-llama-f32 in int4 (groups of 32)'],
    ['f16', { quantize: f16Quantizer() }, 'tiny-llama-f32 in f16'],
  ] as const) {
    it(`${name} base, LoRA on every projection, left-padded GQA batch: the kept plan's statistics and gradients, tfjs's within 1e-4, the planner's bytes`, async () => {
      const model = fixture('tiny-llama-f32', opts);
      try {
        await check(model, adapters(model), { r: 4, targets: ALL }, reuse);
      } finally {
        disposeLlama(model);
      }
    });
  }

  it('a LoRA subset (q and v of layer 1, rank 2): layer 0 is rebuilt without adapters', async () => {
    const model = fixture('tiny-llama-f32');
    try {
      await check(model, adapters(model, { r: 2, alpha: 4, targets: ['q', 'v'], layers: [1] }), {
        r: 2,
        targets: ['q', 'v'],
        layers: [1],
      });
    } finally {
      disposeLlama(model);
    }
  });

  // The family fixtures (dev/fixtures/families). Qwen3: per-head q/k norms before RoPE, head_dim 12
  // x 4 heads over hidden 32, q/k/v/o biases. Gemma 3: its scaled embedding, four norms a layer, q/k
  // norms, GeGLU, query_pre_attn_scalar, 4-slot windows (shorter than the 9-column batch) with their
  // own RoPE base, linearly scaled global layers; tied and untied. Forward and backward on the plan.
  for (const name of ['qwen3-bias', 'qwen3-tied', 'gemma3-tied', 'gemma3-untied']) {
    it(`${name}: kept and rebuilt: tfjs's statistics and gradients within 1e-4, the planner's bytes`, async () => {
      const model = fixture(`families/${name}`);
      try {
        await check(model, adapters(model), { r: 4, targets: ALL });
      } finally {
        disposeLlama(model);
      }
    });
  }

  it('a 3-layer Qwen2-style model (q/k/v biases, untied head): two layers rebuilt into the same set', async () => {
    const model = await qwen2Model(3, 5);
    try {
      await check(model, adapters(model), { r: 4, targets: ALL });
    } finally {
      disposeLlama(model);
    }
  });

  it('under a budget the kept batch exceeds, auto recomputes: one micro-batch where kept needs more, learnStep equal to tfjs', async () => {
    const lora = { r: 4, targets: ALL };
    const batch: LearnBatch = {
      ...BATCH,
      oldLogp: fromRows(OLD),
      advantages: fromRows(ADV),
      refLogp: fromRows(OLD.map((r) => r.map((x) => x - 0.3))),
    };
    const config: TrainerConfig = { kl: { estimator: 'k3', coef: 0.05 }, entropyCoeff: 0.01, temperature: TEMP };
    const results: { metrics: Record<string, number>; params: Float32Array[] }[] = [];
    for (const path of ['tfjs', 'planned'] as const) {
      const model = fixture('tiny-llama-f32');
      try {
        const set = adapters(model);
        const shape = { promptLen: 8, responseLen: T };
        const budget = bytesOf(learnStepBuffers(model.config, lora, shape, B, true));
        expect(bytesOf(learnStepBuffers(model.config, lora, shape, B, false))).toBeGreaterThan(budget);
        setEngineOptions({ learnMemoryBudget: budget, learnPath: path });
        // Kept: fewer rows a micro-batch; auto: all 3 rows in one, recomputed.
        setEngineOptions({ learnRecompute: 'off' });
        expect(learnMicroBatchRows(model, B, 5, T)).toBeLessThan(B);
        setEngineOptions({ learnRecompute: 'auto' });
        expect(learnMicroBatchRows(model, B, 5, T)).toBe(B);
        const n0 = plannedMicroBatches();
        const metrics = await learnStep(
          { model, lora: set, optimizer: new AdamW({ lr: 1e-3, eps: 1e-4 }) },
          batch,
          config,
        );
        expect(plannedMicroBatches() - n0).toBe(path === 'planned' ? 1 : 0);
        if (path === 'planned') {
          // The plan that step ran (cached for this shape) is the recompute one.
          const f = await plannedForward(model, set, packSequences(BATCH), TEMP);
          expect([f.plan.opts.recompute, f.plan.plan.bytes]).toEqual([true, budget]);
        }
        results.push({
          metrics,
          params: await Promise.all(set.variables().map(async (v) => (await v.data()) as Float32Array)),
        });
      } finally {
        disposeLlama(model);
      }
    }
    const [want, got] = results;
    expect(want.metrics['grad/norm']).toBeGreaterThan(1e-3);
    for (const k of Object.keys(want.metrics))
      expect(Math.abs(got.metrics[k] - want.metrics[k]), k).toBeLessThan(1e-5 * Math.max(1, Math.abs(want.metrics[k])));
    let worst = 0;
    got.params.forEach((p, i) => p.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - want.params[i][j])))));
    expect(worst).toBeLessThan(2e-6);
  });

  it('no GPU buffer is created by recomputing steps after warm-up', async () => {
    const model = fixture('tiny-llama-f32');
    try {
      const set = adapters(model);
      setEngineOptions({ learnRecompute: 'on' });
      expect(await learnBuffersAfterWarmUp(model, set)).toEqual([]);
      expect((await plannedForward(model, set, packSequences(BATCH), TEMP)).plan.opts.recompute).toBe(true);
    } finally {
      disposeLlama(model);
    }
  });
});
